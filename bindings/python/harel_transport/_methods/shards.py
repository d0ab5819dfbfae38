"""A queue sharded over several databases (`Transport.open_shards`): `shard_count`. Which
shard holds a group is the module function `shard_of` (`_library`): it needs no queue."""

from __future__ import annotations

from ctypes import byref, c_size_t

from .._handle import _Handle


class ShardMethods(_Handle):
    """shard_count."""

    @property
    def shard_count(self) -> int:
        """How many databases the queue is sharded over (`Transport.open_shards`); 1 when it
        is not sharded. `TransportClosedError` once closed."""
        n = c_size_t()
        self._call("shard_count", self._lib.harel_transport_shard_count, byref(n), clock=False)
        return n.value
