"""Argument checks shared by fedlib's modules (package-internal): each raises one ValueError
naming the argument and what it allows."""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np

__all__ = ["broadcast_rows", "check_int", "check_probs", "check_real", "jsonable", "prob_matrix"]


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name}: must be an integer, got {value!r}")
    rng = f"{low}..{high}" if high is not None else f">= {low}"
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name}: must be an integer in {rng}, got {value}")
    return int(value)


def check_real(name: str, value: Any, low: float | None = None, high: float | None = None,
                low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a float if it is a real number (Python or numpy) within the bounds, else one
    ValueError naming ``name`` and the allowed range."""
    lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
    hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
    allowed = " and ".join(x for x in (lo, hi) if x)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}: must be a real number{' ' + allowed if allowed else ''}, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (low is not None and (v <= low if low_open else v < low)) \
            or (high is not None and (v >= high if high_open else v > high)):
        raise ValueError(f"{name}: must be a finite number {allowed or ''}, got {value!r}".replace("  ", " "))
    return v


def check_probs(name: str, p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if not np.all(np.isfinite(p)) or np.any(p <= 0) or np.any(p > 1):
        bad = p[~(np.isfinite(p) & (p > 0) & (p <= 1))].ravel()[:3]
        raise ValueError(f"{name}: probabilities must lie in (0, 1], got values such as {bad.tolist()}")
    return p


def prob_matrix(name: str, p: Any, rounds: int, n: int) -> np.ndarray:
    """Broadcast a probability spec (scalar, [N], [rounds, N] or callable t -> p) to [rounds, N]."""
    if callable(p):
        rows = [np.broadcast_to(np.asarray(p(t), dtype=float), (n,)) for t in range(rounds)]
        mat = np.stack(rows)
    else:
        mat = broadcast_rows(name, np.asarray(p, dtype=float), rounds, n, "a scalar, a callable t -> p, ")
    return check_probs(name, mat)


def broadcast_rows(name: str, arr: np.ndarray, rounds: int, n: int, also: str = "") -> np.ndarray:
    """Broadcast a scalar, per-client [N] or per-round [rounds, N] array to [rounds, N]."""
    if arr.ndim == 0 or arr.shape == (n,):
        return np.broadcast_to(arr, (rounds, n))
    if arr.shape == (rounds, n):
        return arr
    raise ValueError(f"{name}: expected {also}shape ({n},) or ({rounds}, {n}); got shape {arr.shape}")


def jsonable(value: Any) -> Any:
    if callable(value):
        return f"<callable {getattr(value, '__name__', 'fn')}>"
    if isinstance(value, (np.ndarray, list, tuple)):
        arr = np.asarray(value)
        return arr.tolist() if arr.size <= 64 else f"<array shape {list(arr.shape)}>"
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value
