"""Actions of the statecharts in test_worker.py (harel resolves them by dotted path)."""

import threading
import time

calls = []
_lock = threading.Lock()
#: What each call does, by its number (1-based): "fail" raises, a float sleeps that long.
plan = {}


class Transient(Exception):
    """A failure the model retries (its `on error` transition backs off, then tries again)."""


def reset(new_plan):
    with _lock:
        calls.clear()
        plan.clear()
        plan.update(new_plan)


def work(ctx, event, **_):
    with _lock:
        calls.append(threading.current_thread().name)
        n = len(calls)
    step = plan.get(n)
    if step == "fail":
        raise Transient(f"try {n} fails")
    if isinstance(step, float):
        time.sleep(step)
