"""The two-client problem every algorithm's rule is written out on, by hand, round by round.

Two quadratic clients f_i(x) = 1/2 (x - c_i)^T A_i (x - c_i) (exact gradients), the participation
trace :data:`TRACE` (both, only client 1, only client 0, both), K local steps, rates ETA_L and
ETA_G. A family's test file writes its algorithms' updates out with numpy (``<name>_by_hand``)
and compares every round of ``fedlib.run`` with them on both engines (:func:`assert_by_hand`).
"""

from __future__ import annotations

import numpy as np

import fedlib
from fedlib import participation, problems

A = np.array([[[2.0, 0.5], [0.5, 1.0]], [[1.0, -0.3], [-0.3, 3.0]]])
C = np.array([[1.0, -2.0], [-1.0, 0.5]])
TRACE = np.array([[1, 1], [0, 1], [1, 0], [1, 1]])
K, ETA_L, ETA_G, N = 2, 0.1, 0.7, 2
ENGINES = ("vectorized", "reference")


def hand_problem() -> problems.Quadratic:
    """The two clients as a fedlib problem."""
    return problems.Quadratic(A, C)


def local(i: int, x: np.ndarray, lr: float = ETA_L, corr=0.0, steps: int = K) -> np.ndarray:
    """``steps`` gradient steps of client i from x, with a constant correction added to each
    gradient (SCAFFOLD's c - c_i, FedSUM's y_i)."""
    for _ in range(steps):
        x = x - lr * (A[i] @ (x - C[i]) + corr)
    return x


def rounds():
    """(t, the clients of round t) over :data:`TRACE`."""
    for t, row in enumerate(TRACE):
        yield t, np.flatnonzero(row)


def run_trajectory(name: str, engine: str = "vectorized", trace=TRACE, **options) -> np.ndarray:
    """The model after each round of ``fedlib.run`` on the two clients, [rounds, 2]."""
    sched = participation.build("trace", N, len(trace), trace=trace, local_steps=K)
    traj = []
    fedlib.run(name, hand_problem(), sched, lr_local=ETA_L, lr_global=ETA_G, progress=False,
               engine=engine, callback=lambda t, x: traj.append(x.numpy().copy()), **options)
    return np.array(traj)


def assert_by_hand(name: str, expect: np.ndarray, engine: str, **options) -> None:
    """Every round of ``name`` on ``engine`` equals the hand-written rule to float64 rounding
    (a few operations on O(1) numbers: 1e-12)."""
    got = run_trajectory(name, engine, **options)
    assert got.shape == expect.shape, (name, got.shape, expect.shape)
    for t, (g, e) in enumerate(zip(got, expect, strict=True)):
        assert np.allclose(g, e, rtol=1e-12, atol=1e-12), (name, engine, t, g, e)
