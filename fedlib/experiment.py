"""Running experiments: :func:`run` (one algorithm, one problem, one schedule) and
:func:`run_cached` (a frozen :class:`ExperimentConfig`, results cached on disk).

Three lines::

    prob = fedlib.problems.random_quadratic(num_clients=10, dim=5, seed=0)
    res = fedlib.run("fedsum", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200, local_steps=5)
    res.history.tail()
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from . import __version__, algorithms, participation
from .engine import get_engine
from .participation import Schedule, _check_int
from .participation import _jsonable as _json_value
from .problems import Problem
from .problems import build as build_problem

__all__ = ["ExperimentConfig", "Result", "run", "run_cached"]


@dataclass
class Result:
    """Outcome of :func:`run`.

    Attributes:
        history: one row per evaluated round: ``round`` (rounds completed), the problem's
            metrics (``loss``, ``grad_norm_sq``, ``dist_to_opt``, ``rel_dist_to_opt``,
            ``test_acc``, ...), cumulative ``uplink`` / ``downlink`` model units, ``seconds``.
        params: final global model, flat tensor [p].
        diverged: True if a NaN/inf appeared; the run stopped at that round.
        info: algorithm, schedule spec and settings.
        algorithm: the algorithm object after the run (its state, e.g. FedAU's interval
            estimates); None for results loaded from the cache.
        schedule: the schedule the algorithm ran on (after its own client selection).
    """

    history: pd.DataFrame
    params: torch.Tensor
    diverged: bool = False
    info: dict = field(default_factory=dict)
    algorithm: Any = None
    schedule: Schedule | None = None


def _positive(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0 \
            or not math.isfinite(value):
        raise ValueError(f"{name}: must be a positive finite number, got {value!r}")
    return float(value)


def _schedule(participation_spec: Any, problem: Problem, rounds: int | None,
              local_steps: int | None, seed: int) -> Schedule:
    if isinstance(participation_spec, Schedule):
        sched = participation_spec
        if sched.num_clients != problem.num_clients:
            raise ValueError(f"participation: schedule has {sched.num_clients} clients, the "
                             f"problem {problem.num_clients}")
        if rounds is not None:
            sched = sched.truncate(rounds)
        if local_steps is not None:
            k = _check_int("local_steps", local_steps, 1)
            sched = Schedule(sched.active, sched.uplink_ok, np.full(sched.active.shape, k),
                             dict(sched.spec, local_steps=k))
        return sched
    if isinstance(participation_spec, str):
        participation_spec = {"kind": participation_spec}
    if not isinstance(participation_spec, dict) or "kind" not in participation_spec:
        raise ValueError("participation: expected a Schedule, a kind name, or a dict with 'kind'")
    if rounds is None:
        raise ValueError("rounds: required when participation is a spec rather than a Schedule")
    spec = dict(participation_spec)
    kind = spec.pop("kind")
    spec.setdefault("local_steps", 10 if local_steps is None else local_steps)
    spec.setdefault("seed", seed)
    return participation.build(kind, problem.num_clients, rounds, **spec)


def run(algorithm: str, problem: Problem, participation: Schedule | dict | str,
        rounds: int | None = None, local_steps: int | None = None, lr_local: float = 0.01,
        lr_global: float = 1.0, lr_schedule: str = "constant", eval_every: int = 1, seed: int = 0,
        device: str | torch.device | None = None, progress: bool = True, engine: str = "vectorized",
        x0: torch.Tensor | None = None, callback: Callable[[int, torch.Tensor], None] | None = None,
        **algorithm_options: Any) -> Result:
    """Run one algorithm on one problem under one participation schedule.

    Args:
        algorithm: a name from :func:`fedlib.algorithms.available`.
        problem: a :class:`fedlib.problems.Problem`.
        participation: a :class:`Schedule` (replayed as is), a kind name, or a dict
            ``{"kind": ..., **kind_arguments}`` built with ``seed`` and ``local_steps``.
        rounds: rounds to run (default: the whole schedule; required for a spec).
        local_steps: K. For a spec: default 10. For a Schedule: None keeps its local_steps
            array, an int replaces it with the constant K.
        lr_local: eta_l (eta_0 for decaying schedules).
        lr_global: eta_g.
        lr_schedule: ``"constant"`` or ``"fedsum_sqrt"`` (eta_0 / sqrt(t/10 + 1)).
        eval_every: evaluate every this many rounds (and at round 0 and at the end).
        seed: seed of a schedule built from a spec and of the torch RNG used by dropout.
        device: where the model lives (default: the problem's device).
        progress: tqdm progress bar over rounds.
        engine: ``"vectorized"`` (default) or ``"reference"`` (per-client loop, for tests).
        x0: starting point (default ``problem.initial_params(seed)``).
        callback: called as ``callback(t, x)`` after every round t with the new model.
        **algorithm_options: options of the algorithm (see its docstring).

    Returns:
        :class:`Result`.

    Raises:
        ValueError: unknown algorithm, engine or schedule; mismatched sizes; non-positive
            learning rates, steps or eval_every.
    """
    cls = algorithms.get(algorithm)
    if lr_schedule not in algorithms.lr_schedules:
        raise ValueError(f"lr_schedule: unknown schedule {lr_schedule!r}; known: "
                         f"{', '.join(algorithms.lr_schedules)}")
    lr_local, lr_global = _positive("lr_local", lr_local), _positive("lr_global", lr_global)
    eval_every = _check_int("eval_every", eval_every, 1)
    if rounds is not None:
        rounds = _check_int("rounds", rounds, 1)
    sched = _schedule(participation, problem, rounds, local_steps, seed)
    eng = get_engine(engine)
    dev = torch.device(device) if device is not None else problem.device
    x = (problem.initial_params(seed) if x0 is None else torch.as_tensor(x0)).to(dev, problem.dtype)
    if x.shape != (problem.dim,):
        raise ValueError(f"x0: expected shape ({problem.dim},), got {tuple(x.shape)}")
    algo = cls(problem, eng, **algorithm_options)
    sched = algo.prepare_schedule(sched, seed, lr_local)
    algo.init(x, float(sched.local_steps.mean()))
    lr_fn = algorithms.lr_schedules[lr_schedule]

    active = torch.tensor(np.array(sched.active), device=dev)
    uplink = torch.tensor(np.array(sched.uplink_ok), device=dev)
    steps = torch.tensor(np.array(sched.local_steps), device=dev)
    rows, up, down, diverged = [], 0, 0, False
    start = time.perf_counter()

    def evaluate(t: int) -> None:
        m = problem.metrics(x)
        rows.append({"round": t, **m, "uplink": up, "downlink": down, **algo.extra_metrics(),
                     "seconds": time.perf_counter() - start})

    with torch.random.fork_rng(devices=[] if dev.type == "cpu" else [dev]):
        torch.manual_seed(seed)   # dropout draws only; the caller's RNG state is restored
        evaluate(0)
        for t in tqdm(range(sched.num_rounds), disable=not progress, desc=algorithm, leave=False):
            r = algorithms.RoundInput(t, active[t], uplink[t], steps[t], lr_fn(lr_local, t), lr_global)
            x = algo.round(x, r)
            if callback is not None:
                callback(t, x)
            u, d = algo.messages(r)
            up, down = up + u, down + d
            if not bool(torch.isfinite(x).all()):
                diverged = True
                rows.append({"round": t + 1, "loss": float("nan"), "uplink": up, "downlink": down,
                             "seconds": time.perf_counter() - start})
                break
            if (t + 1) % eval_every == 0 or t + 1 == sched.num_rounds:
                evaluate(t + 1)
    info = {"algorithm": algorithm, "options": {k: _jsonable(v) for k, v in algorithm_options.items()},
            "schedule": sched.spec, "lr_local": lr_local, "lr_global": lr_global,
            "lr_schedule": lr_schedule, "engine": engine, "problem": problem.spec(),
            "diverged_at": rows[-1]["round"] if diverged else None}
    if diverged:
        warnings.warn(f"{algorithm}: diverged (non-finite model) at round {rows[-1]['round']}; "
                      "the run stopped there", RuntimeWarning, stacklevel=2)
    return Result(pd.DataFrame(rows), x, diverged, info, algo, sched)


def _jsonable(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        v = v.detach().cpu().numpy()
    return _json_value(v)


# --------------------------------------------------------------------------------------------
# Configs and the on-disk cache
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that determines one run, as plain data (hashable, JSON-serialisable).

    Attributes:
        algorithm: algorithm name.
        problem: problem builder name (see :func:`fedlib.problems.available`).
        problem_args: its arguments, as a tuple of (name, value) pairs.
        participation: participation kind; ``participation_args`` its arguments.
        rounds, local_steps, lr_local, lr_global, lr_schedule, eval_every, seed: as in :func:`run`.
        algorithm_args: algorithm options as (name, value) pairs.
    """

    algorithm: str
    problem: str
    participation: str
    rounds: int
    problem_args: tuple = ()
    participation_args: tuple = ()
    local_steps: int = 10
    lr_local: float = 0.01
    lr_global: float = 1.0
    lr_schedule: str = "constant"
    eval_every: int = 1
    seed: int = 0
    algorithm_args: tuple = ()

    def key(self) -> str:
        """Stable hash of the config and the fedlib version."""
        blob = json.dumps({"config": asdict(self), "fedlib": __version__}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _cache_dir(cache_dir: str | os.PathLike | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    from .plotting import project_root
    return project_root() / "results" / "cache"


def run_cached(config: ExperimentConfig, cache_dir: str | os.PathLike | None = None,
               progress: bool = False, device: str | None = None) -> Result:
    """Run ``config`` or load its result from ``cache_dir`` (default ``results/cache`` of the
    project). Entries are written atomically (temp file + rename); an unreadable or
    inconsistent entry is recomputed and replaced."""
    d = _cache_dir(cache_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{config.key()}.pt"
    if path.exists():
        try:
            blob = torch.load(path, weights_only=False)
            if blob.get("key") == config.key() and blob.get("config") == asdict(config):
                return Result(pd.DataFrame(blob["history"]), blob["params"], blob["diverged"],
                              blob["info"])
        except Exception:  # noqa: BLE001 - any unreadable entry is recomputed
            pass
    pargs = dict(config.problem_args)
    if device is not None:
        pargs["device"] = device
    problem = build_problem(config.problem, **pargs)
    res = run(config.algorithm, problem, {"kind": config.participation, **dict(config.participation_args)},
              rounds=config.rounds, local_steps=config.local_steps, lr_local=config.lr_local,
              lr_global=config.lr_global, lr_schedule=config.lr_schedule,
              eval_every=config.eval_every, seed=config.seed, progress=progress,
              **dict(config.algorithm_args))
    blob = {"key": config.key(), "config": asdict(config), "history": res.history.to_dict("list"),
            "params": res.params.cpu(), "diverged": res.diverged, "info": res.info}
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    os.close(fd)
    torch.save(blob, tmp)
    os.replace(tmp, path)
    return res
