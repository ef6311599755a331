"""One intra-op thread per piece of torch work, pieces spread over worker threads (the leaf under
:mod:`fedlib.problems` and :mod:`fedlib.engine`): each client's training and every evaluation
batch run in one thread, so a run's bits do not depend on ``torch.get_num_threads()`` of the
process that computes it, while the cores still share the work."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

import torch

from ._validate import InputError

__all__ = ["cpu_threads", "map_single_threaded", "single_threaded_ops", "worker_pool"]

#: the thread count outside the single-threaded blocks now open (innermost last)
_OUTER: list[int] = []
_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


@contextlib.contextmanager
def single_threaded_ops():
    """One intra-op thread for every op inside; the process's setting is restored after.

    A reduction split over threads sums its terms in another order than one thread does, so the
    same forward pass on 1 and on 2 threads may differ in the last bits (measured: a history's
    loss in the 9th digit on an Intel Xeon). Inside this block the thread count cannot matter."""
    before = torch.get_num_threads()
    _OUTER.append(_OUTER[-1] if _OUTER else before)
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        _OUTER.pop()
        if before != 1:
            torch.set_num_threads(before)


def cpu_threads() -> int:
    """Worker threads of the CPU paths: ``$FEDLIB_THREADS`` if set, else the number of intra-op
    threads torch would use outside any single-threaded block (the cores)."""
    env = os.environ.get("FEDLIB_THREADS", "")
    if env:
        if not env.isdigit() or int(env) < 1:
            raise InputError(f"FEDLIB_THREADS: must be a positive integer, got {env!r}")
        return int(env)
    return max(1, _OUTER[-1] if _OUTER else torch.get_num_threads())


def worker_pool(n: int) -> ThreadPoolExecutor:
    """The process's pool of ``n`` worker threads (made on first use, then shared)."""
    with _POOLS_LOCK:
        if n not in _POOLS:
            _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="fedlib-worker")
        return _POOLS[n]


def map_single_threaded(fn: Callable, items: Iterable) -> list:
    """``[fn(i) for i in items]``, each call with one intra-op thread, spread over
    :func:`cpu_threads` worker threads; the results in the order of ``items``. Each call's bits
    are those of a one-thread process, whatever the number of workers or the order they finish in."""
    items = list(items)
    n = min(cpu_threads(), len(items))
    with single_threaded_ops():
        return list(worker_pool(n).map(fn, items)) if n > 1 else [fn(i) for i in items]
