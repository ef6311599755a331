"""One intra-op thread for a block of torch work (the leaf under :mod:`fedlib.problems` and
:mod:`fedlib.engine`): each client's training and every evaluation run in one thread, so a run's
bits do not depend on ``torch.get_num_threads()`` of the process that computes it."""

from __future__ import annotations

import contextlib

import torch

__all__ = ["single_threaded_ops"]


@contextlib.contextmanager
def single_threaded_ops():
    """One intra-op thread for every op inside; the process's setting is restored after.

    A reduction split over threads sums its terms in another order than one thread does, so the
    same forward pass on 1 and on 2 threads may differ in the last bits (measured: a history's
    loss in the 9th digit on an Intel Xeon). Inside this block the thread count cannot matter."""
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
