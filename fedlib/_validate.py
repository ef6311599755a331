"""Argument checks shared by fedlib's modules (package-internal): each raises one ValueError
naming the argument and what it allows."""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np

__all__ = ["InputError", "available_memory", "broadcast_rows", "check_int", "check_probs", "check_real",
           "check_run_inputs", "jsonable", "problem_bytes", "prob_matrix"]


class InputError(ValueError):
    """A value fedlib refuses at its public boundary: the message starts with the argument's name
    (``name: ...``), says the value it got and what is allowed. A ValueError, so code that
    catches ValueError keeps working; ``fedlib.InputError`` catches fedlib's refusals alone."""


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name}: must be an integer, got {value!r}")
    rng = f"{low}..{high}" if high is not None else f">= {low}"
    if value < low or (high is not None and value > high):
        raise InputError(f"{name}: must be an integer in {rng}, got {value}")
    return int(value)


def check_real(name: str, value: Any, low: float | None = None, high: float | None = None,
                low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a float if it is a real number (Python or numpy) within the bounds, else one
    ValueError naming ``name`` and the allowed range."""
    lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
    hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
    allowed = " and ".join(x for x in (lo, hi) if x)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name}: must be a real number{' ' + allowed if allowed else ''}, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (low is not None and (v <= low if low_open else v < low)) \
            or (high is not None and (v >= high if high_open else v > high)):
        raise InputError(f"{name}: must be a finite number {allowed or ''}, got {value!r}".replace("  ", " "))
    return v


def check_probs(name: str, p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if not np.all(np.isfinite(p)) or np.any(p <= 0) or np.any(p > 1):
        bad = p[~(np.isfinite(p) & (p > 0) & (p <= 1))].ravel()[:3]
        raise InputError(f"{name}: probabilities must lie in (0, 1], got values such as {bad.tolist()}")
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
    raise InputError(f"{name}: expected {also}shape ({n},) or ({rounds}, {n}); got shape {arr.shape}")


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


def available_memory() -> int:
    """Bytes of memory this machine can give a new allocation now (``MemAvailable`` of
    /proc/meminfo; the free physical pages elsewhere)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2**62                                          # unknown: refuse nothing


def problem_bytes(problem: str, args: dict) -> int | None:
    """Peak bytes that building the built-in ``problem`` with ``args`` allocates, estimated from
    its arrays (None: a problem whose size is not known here). ``quadratic``: N x d x d float64
    matrices, four alive at once while they are built (the Gaussian draw, its QR factor, the
    product and its symmetrised copy); ``focus_toy``: an n x d float64 design, twice."""
    def arg(name: str, default: int) -> Any:
        return args.get(name, default)
    if problem == "quadratic":
        n, d = arg("num_clients", 10), arg("dim", 5)
        if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (n, d)):
            return 4 * 8 * n * d * d
    if problem == "focus_toy":
        n, d = arg("n", 8000), arg("d", 50)
        if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (n, d)):
            return 2 * 8 * n * d
    return None


def check_run_inputs(config: Any, where: str = "config") -> None:
    """What a run of ``config`` depends on beyond its fields' own ranges, checked before it runs
    (from :meth:`ExperimentConfig.validate`), so that a sweep stores no error entry for an input it
    could have refused: a problem whose arrays cannot fit in this machine's memory, and for a
    neural problem its dataset's files (:func:`fedlib.data.check_files`: image shape, one label per
    image, labels in range, pixels 0..255) and a client count the training split can serve (one
    sample each at least). Raises one :class:`InputError` naming ``where`` and the field."""
    from . import data as data_mod

    args = config.arguments("problem_args")
    need = problem_bytes(config.problem, args)
    if need is not None and need > (have := available_memory()):
        raise InputError(f"{where}.problem_args: problem {config.problem!r} with {args} needs about "
                         f"{need / 2**30:,.1f} GiB of memory to build; this machine has "
                         f"{have / 2**30:,.1f} GiB available")
    if config.problem == "digits_cnn":
        dataset, synthetic, sizes, n = "digits", False, None, args.get("num_clients", 20)
    elif config.problem == "neural":
        dataset, synthetic = args.get("dataset", "mnist"), bool(args.get("synthetic", False))
        sizes, n = args.get("synthetic_sizes"), args.get("num_clients", 100)
    else:
        return
    if not isinstance(dataset, str) or dataset not in data_mod.INFO:
        return                                              # named by the problem's own check
    if synthetic:
        first = sizes[0] if isinstance(sizes, (tuple, list)) and sizes else None
        n_train = first if isinstance(first, int) and first > 0 else data_mod.INFO[dataset].n_train
    else:
        try:
            n_train = data_mod.check_files(dataset, args.get("data_root"))["train"]
        except data_mod.DataNotFoundError:
            return                                          # the machine lacks the data: load() says so
        except ValueError as e:
            field = "" if str(e).startswith("data_root:") else "dataset: "
            raise InputError(f"{where}.problem_args.{field}{e}") from None
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool) and not 1 <= n <= n_train:
        raise InputError(f"{where}.problem_args.num_clients: must be an integer in 1..{n_train} (dataset "
                         f"{dataset!r} has {n_train} training samples; a client needs one at least), got {n}")
