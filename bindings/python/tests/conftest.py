"""Shared fixtures. The suite runs against the installed wheel (`make test-python` runs
it from a temporary directory in a venv of its own); nothing here imports the source tree.

Python's sqlite3 never opens a queue file in this process (two SQLite libraries in one
process on one file lose commits: README, "The hazard"). Files are inspected, and harel's
own transports run, in subprocesses (`run_python`, `inspect_db`).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, List, Optional

import pytest

STRICT = os.environ.get("HAREL_PY_STRICT") == "1"


def child_env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("HAREL_TRANSPORT_LIB", None)
    return env


def run_python(script: str, *args: Any, timeout: float = 60, check: bool = True, cwd: Optional[str] = None) -> str:
    """Runs `script` in a new interpreter (this venv's); returns its stdout."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
        cwd=cwd,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"the subprocess failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}")
    return proc.stdout


_INSPECT = """
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute(sys.argv[2], json.loads(sys.argv[3])).fetchall()
c.close()
print(json.dumps([[v.hex() if isinstance(v, bytes) else v for v in r] for r in rows]))
"""


def inspect_db(path: Any, sql: str, params: Optional[list] = None) -> List[list]:
    """The rows of `sql` on `path`, read by sqlite3 in another process (bytes as hex)."""
    return json.loads(run_python(_INSPECT, path, sql, json.dumps(params or [])))


@pytest.fixture
def qpath(tmp_path: Path) -> str:
    """A fresh queue file's path."""
    return str(tmp_path / "queue.db")


class _Clock:
    """A clock a test moves by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> _Clock:
    return _Clock()


class LoopTicker:
    """Counts the running loop's turns every 0.01 s: a test shows the loop kept running while a call waited."""

    def __init__(self) -> None:
        self._ticks = 0
        self._done = False
        self._task = asyncio.create_task(self._tick())

    async def _tick(self) -> None:
        while not self._done:
            self._ticks += 1
            await asyncio.sleep(0.01)

    @property
    def ticks(self) -> int:
        return self._ticks

    async def stop(self) -> int:
        """Ends the ticking and waits for it; returns the ticks counted."""
        self._done = True
        await self._task
        return self._ticks


# -- a run that tests nothing must not pass -----------------------------------------------

_outcomes = {"skipped": 0}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _outcomes["skipped"] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not STRICT:
        return
    if session.testscollected == 0:
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
    elif _outcomes["skipped"]:
        # Every test here can run on the machine `make test` runs on: a skip is a failure.
        print(f"\nHAREL_PY_STRICT: {_outcomes['skipped']} test(s) skipped; every test must run", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
