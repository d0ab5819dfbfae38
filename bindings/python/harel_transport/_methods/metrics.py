"""What this transport counted: `metrics` (`_metrics`)."""

from __future__ import annotations

from ctypes import POINTER

from .. import _native
from .._handle import _Handle
from .._metrics import Metrics, copy_metrics


class MetricsMethods(_Handle):
    """metrics."""

    def metrics(self) -> Metrics:
        """What this transport counted since it was opened: messages published, claimed,
        acked, nacked, parked and dead-lettered, lost leases, busy retries, and a latency
        histogram per operation. Reads memory only: no database access, no lock."""
        out = POINTER(_native.HarelMetrics)()
        lib = self._lib
        return self._call_out("metrics", lib.harel_transport_metrics, lib.harel_metrics_free, out, copy_metrics)
