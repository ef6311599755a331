r"""Delay metrics of arbitrary client participation (FedSUM Sec. 2.2) and their bounds (App. F).

Definitions (You & Pu 2025, FedSUM, arXiv:2512.18275, eqs. 2-4), for a participation matrix
``active`` [T, N] (round t, client i; any count > 0 means i is in :math:`S_t`):

* last selection :math:`a_{i,t} = \max\{j \le t : i \in S_j\}`, with :math:`a_{i,t} = -1` if
  client i has not participated up to round t (eq. 2; recursively eq. 3 with :math:`a_{i,-1} = -1`);
* per-round delay :math:`\tau_t = \max_i (t - a_{i,t}) \ge 0` (eq. 4);
* :math:`\tau_{\max} = \max_{0 \le t \le T-1} \tau_t` and
  :math:`\tau_{\text{avg}} = \frac{1}{T} \sum_{t=0}^{T-1} \tau_t`.

The bounds of App. F are given as functions. Note: App. F swaps the names of Case 3 and Case 4
relative to Sec. 2.1 (Lemma F.3 calls reshuffled cyclic "Case 3", Lemma F.4 calls deterministic
cyclic "Case 4"). This library uses Sec. 2.1: Case 3 = deterministic cyclic (``cyclic``),
Case 4 = reshuffled cyclic (``reshuffled_cyclic``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._validate import InputError, check_int, check_real

__all__ = [
    "DelayMetrics",
    "bound_bernoulli",
    "bound_cyclic",
    "bound_reshuffled_cyclic",
    "bound_uniform",
    "delay_metrics",
    "last_selection",
    "monte_carlo",
    "per_round_delay",
]


def _as_active(active: np.ndarray) -> np.ndarray:
    """``active`` as a boolean [T, N] array: an array of counts or booleans, or a
    :class:`fedlib.participation.Schedule` (its ``active``)."""
    if hasattr(active, "active") and hasattr(active, "uplink_ok"):     # a Schedule
        active = active.active
    a = np.asarray(active)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise InputError(f"active: expected a non-empty 2-D array [rounds, num_clients], "
                         f"got shape {a.shape}")
    if a.dtype != bool:
        if not np.issubdtype(a.dtype, np.number):
            raise InputError(f"active: expected participation counts (integers >= 0) or booleans, "
                             f"got an array of {a.dtype}")
        bad = ~np.isfinite(a) | (a < 0) | (a != np.round(a))
        if bad.any():
            raise InputError(f"active: expected participation counts (integers >= 0) or booleans, got "
                             f"{a[bad].ravel()[0]!r} at index {tuple(int(i) for i in np.argwhere(bad)[0])}")
    return a > 0


def last_selection(active: np.ndarray) -> np.ndarray:
    """Last-selection times ``a_{i,t}`` (FedSUM eq. 2), vectorized.

    Args:
        active: array [T, N]; entries > 0 mark client i active in round t.

    Returns:
        int array [T, N] with ``a[t, i] = max{j <= t : active[j, i] > 0}`` or -1 if none.
    """
    on = _as_active(active)
    rounds = np.arange(on.shape[0])[:, None]
    return np.maximum.accumulate(np.where(on, rounds, -1), axis=0)


def per_round_delay(active: np.ndarray) -> np.ndarray:
    """Per-round delay ``tau_t = max_i (t - a_{i,t})`` (FedSUM eq. 4), int array [T]."""
    a = last_selection(active)
    return np.arange(a.shape[0]) - a.min(axis=1)


@dataclass(frozen=True)
class DelayMetrics:
    """Delay metrics of one participation sequence.

    Attributes:
        tau: int array [T], per-round delays tau_t.
        tau_max: max_t tau_t.
        tau_avg: mean_t tau_t.
    """

    tau: np.ndarray
    tau_max: int
    tau_avg: float


def delay_metrics(active: np.ndarray) -> DelayMetrics:
    """tau_t, tau_max and tau_avg of a participation matrix (FedSUM Sec. 2.2).

    Args:
        active: array [T, N], entries > 0 mean "participates"; or a
            :class:`~fedlib.participation.Schedule` (its ``active``).

    Returns:
        :class:`DelayMetrics`.
    """
    tau = per_round_delay(active)
    return DelayMetrics(tau=tau, tau_max=int(tau.max()), tau_avg=float(tau.mean()))


# --------------------------------------------------------------------------------------------
# Bounds of FedSUM App. F
# --------------------------------------------------------------------------------------------
def _clients(num_clients: int, per_round: int) -> tuple[int, int]:
    n = check_int("num_clients", num_clients, 1)
    return n, check_int("per_round", per_round, 1, n)


def bound_uniform(num_clients: int, per_round: int, rounds: int) -> float:
    """Lemma F.1 (Case 1, uniform S of N): E[tau_max] <= (4N/S) ln(NT)."""
    num_clients, per_round = _clients(num_clients, per_round)
    check_int("rounds", rounds, 1)
    return 4.0 * num_clients / per_round * math.log(num_clients * rounds)


def bound_bernoulli(num_clients: int, rounds: int, delta: float) -> float:
    """Lemma F.2 (Case 2, independent participation with p_i^t >= delta):
    E[tau_max] <= (4/delta) max{ln(NT), ln(1/delta)}."""
    check_int("num_clients", num_clients, 1)
    check_int("rounds", rounds, 1)
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True)
    return 4.0 / delta * max(math.log(num_clients * rounds), math.log(1.0 / delta))


def bound_cyclic(num_clients: int, per_round: int) -> float:
    """Lemma F.4 (deterministic cyclic; Case 3 in Sec. 2.1, called "Case 4" in App. F):
    tau_max <= 2N/S."""
    num_clients, per_round = _clients(num_clients, per_round)
    return 2.0 * num_clients / per_round


def bound_reshuffled_cyclic(num_clients: int, per_round: int) -> float:
    """Lemma F.3 (reshuffled cyclic; Case 4 in Sec. 2.1, called "Case 3" in App. F):
    E[tau_max] <= 4N/S."""
    num_clients, per_round = _clients(num_clients, per_round)
    return 4.0 * num_clients / per_round


# --------------------------------------------------------------------------------------------
# Monte Carlo
# --------------------------------------------------------------------------------------------
def monte_carlo(kind: str, num_clients: int, rounds: int | Sequence[int],
                seeds: int | Iterable[int] = 100, progress: bool = False,
                **kind_kwargs) -> pd.DataFrame:
    """Monte-Carlo estimate of E[tau_max] and E[tau_avg] of a participation kind.

    One schedule of length max(rounds) is drawn per seed; the metrics for every horizon T in
    ``rounds`` are computed from its first T rounds (prefix max / prefix mean), which has the
    same distribution as drawing a schedule of length T for every kind in this library.

    Args:
        kind: a participation kind (see :func:`fedlib.participation.available`).
        num_clients: N.
        rounds: a horizon T or a sequence of horizons.
        seeds: number of seeds (0..seeds-1) or an iterable of seeds.
        progress: show a tqdm progress bar over seeds.
        **kind_kwargs: arguments of the kind (``per_round``, ``p``, ...).

    Returns:
        A DataFrame with one row per horizon and the columns ``T``, ``tau_max_mean``, ``tau_max_std``,
        ``tau_avg_mean``, ``tau_avg_std``, ``seeds``.
    """
    from tqdm import tqdm

    from . import participation

    given = [rounds] if isinstance(rounds, (int, np.integer)) else rounds
    if isinstance(given, (str, bytes)) or not isinstance(given, (Sequence, np.ndarray)) \
            or np.ndim(given) != 1 or len(given) == 0:
        raise InputError(f"rounds: expected a horizon T >= 1 or a non-empty sequence of them, got {rounds!r}")
    horizons = np.array([check_int(f"rounds[{i}]", t, 1) for i, t in enumerate(given)], dtype=np.int64)
    if isinstance(seeds, (int, np.integer)):
        seed_list = list(range(check_int("seeds", seeds, 1)))
    else:
        seed_list = [check_int(f"seeds[{i}]", s, 0) for i, s in enumerate(seeds)]
        if not seed_list:
            raise InputError("seeds: need at least one seed")
        if len(set(seed_list)) < len(seed_list):
            twice = sorted({s for s in seed_list if seed_list.count(s) > 1})
            raise InputError(f"seeds: each seed once (a repeated seed repeats its run and narrows the "
                             f"spread), got {twice} more than once")
    t_max = int(horizons.max())
    maxes = np.empty((len(seed_list), len(horizons)))
    avgs = np.empty_like(maxes)
    for k, seed in enumerate(tqdm(seed_list, disable=not progress, desc=kind)):
        s = participation.build(kind, num_clients, t_max, seed=seed, **kind_kwargs)
        tau = per_round_delay(s.active)
        maxes[k] = np.maximum.accumulate(tau)[horizons - 1]
        avgs[k] = (np.cumsum(tau) / np.arange(1, t_max + 1))[horizons - 1]
    ddof = 1 if len(seed_list) > 1 else 0
    return pd.DataFrame({
        "T": horizons,
        "tau_max_mean": maxes.mean(0), "tau_max_std": maxes.std(0, ddof=ddof),
        "tau_avg_mean": avgs.mean(0), "tau_avg_std": avgs.std(0, ddof=ddof),
        "seeds": len(seed_list),
    })


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
