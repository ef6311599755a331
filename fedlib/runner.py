"""Running one experiment: :func:`run` (an algorithm, a problem and a participation schedule)
and :func:`run_config` (a frozen :class:`~fedlib.config.ExperimentConfig`).

Three lines::

    prob = fedlib.problems.random_quadratic(num_clients=10, dim=5, seed=0)
    res = fedlib.run("fedsum", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200, local_steps=5)
    res.history.tail()
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import inspect
import json
import math
import numbers
import os
import reprlib
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from . import algorithms, arithmetic, participation
from ._source import source_fingerprint
from ._threads import single_threaded_ops
from ._validate import InputError, check_int, warn
from ._validate import jsonable as _json_value
from .arithmetic import AnchorRecorder
from .config import ExperimentConfig, Planned
from .engine import UnreachableClients, get_engine
from .participation import Schedule
from .problems import Problem
from .problems import available as problems_available
from .problems import build as build_problem

__all__ = ['CheckpointMismatch', 'Result', 'RunCallback', 'RunPlan', 'RunState', 'run', 'run_config']


@dataclass
class Result:
    """Outcome of :func:`run`.

    Attributes:
        history: one row per evaluated round: ``round`` (rounds completed), the problem's
            metrics (``loss``, ``grad_norm_sq``, ``dist_to_opt``, ``rel_dist_to_opt``,
            ``test_acc``, ...), cumulative ``uplink`` / ``downlink`` model units, cumulative
            ``client_steps`` (local steps run by the clients the server asked, whether or not
            their upload arrived: the computation load), ``seconds``.
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

    def __repr__(self) -> str:
        h = self.history
        rounds = int(h["round"].iloc[-1]) if len(h) and "round" in h else 0
        last = h.iloc[-1] if len(h) else {}
        shown = [m for m in ("loss", "test_acc", "rel_dist_to_opt", "grad_norm_sq") if m in h]
        metrics = ", ".join(f"{m}={float(last[m]):.4g}" for m in shown)
        name = self.info.get("algorithm") or self.info.get("config", {}).get("algorithm", "?")
        return (f"Result(algorithm={name!r}, rounds={rounds}, {metrics}{', ' if metrics else ''}"
                f"diverged={self.diverged})")


def _positive(name: str, value: float) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not value > 0 \
            or not math.isfinite(value):
        raise InputError(f"{name}: must be a positive finite number, got {value!r}")
    return float(value)


def _device(device: Any, field: str = "device") -> torch.device:
    """``device`` as a torch.device that exists on this machine, else one clear ValueError naming
    ``field`` (the argument that gave it: ``device``, ``devices``)."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InputError(f"{field}: {device!r} is not a device name (use 'cpu', 'cuda', 'cuda:0', "
                         "'mps')") from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise InputError(f"{field}: {device!r} is not a device fedlib computes on (use 'cpu', 'cuda', "
                         "'cuda:0', 'mps')")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"{field}: {device!r} asked for, but this machine has no CUDA device "
                             "(torch.cuda.is_available() is False); use 'cpu'")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InputError(f"{field}: {device!r} does not exist; this machine has "
                             f"{torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"{field}: {device!r} asked for, but MPS is not available here; use 'cpu'")
    return dev


def _schedule(participation_spec: Any, problem: Problem, rounds: int | None,
              local_steps: int | None, seed: int) -> Schedule:
    if isinstance(participation_spec, Schedule):
        sched = participation_spec
        if sched.num_clients != problem.num_clients:
            raise InputError(f"participation: schedule has {sched.num_clients} clients, the "
                             f"problem {problem.num_clients}")
        if rounds is not None:
            sched = sched.truncate(rounds)
        if local_steps is not None:
            k = check_int("local_steps", local_steps, 1)
            sched = Schedule(sched.active, sched.uplink_ok, np.full(sched.active.shape, k),
                             dict(sched.spec, local_steps=k))
        return sched
    if isinstance(participation_spec, str):
        participation_spec = {"kind": participation_spec}
    if not isinstance(participation_spec, dict) or "kind" not in participation_spec:
        raise InputError("participation: expected a Schedule, a kind name, or a dict with 'kind'")
    if rounds is None:
        raise InputError("rounds: required when participation is a spec rather than a Schedule")
    spec = dict(participation_spec)
    kind = spec.pop("kind")
    work = next((k for k in participation.LOCAL_WORK if k in spec), None)
    if local_steps is not None and work is not None:
        raise InputError(f"local_steps: given both as an argument ({local_steps!r}) and by the participation "
                         f"spec ({work}={spec[work]!r}); give the local work once")
    if "seed" in spec and seed != 0 and spec["seed"] != seed:      # (0 is also run's default: not a conflict)
        raise InputError(f"seed: the argument ({seed!r}) and the participation spec's seed "
                         f"({spec['seed']!r}) differ; give the seed once")
    if work is None:
        spec["local_steps"] = 10 if local_steps is None else local_steps
    spec.setdefault("seed", seed)
    return participation.build(kind, problem.num_clients, rounds, **spec)


@dataclass(frozen=True, eq=False)
class RunPlan:
    """What one run is, checked once: what :func:`run` (or :func:`run_config`, from a config)
    hands on to build the run. Fields as :func:`run`'s arguments, after its checks (frozen; it
    holds a problem, options and maybe a tensor, so two plans compare by identity).

    Attributes:
        algorithm: the algorithm's class (an instance given to :func:`run` gives its class, and
            its options under ``options``).
        options: the algorithm's options (``**algorithm_options``).
        problem: the problem, built (a name given to :func:`run` is built with its defaults).
        participation: a :class:`Schedule` (replayed as is), a kind name, or a dict
            ``{"kind": ..., **kind_arguments}`` built with ``seed`` and ``local_steps``.
        rounds: rounds to run (None: the whole schedule; required for a spec).
        local_steps: K. For a spec: default 10. For a Schedule: None keeps its local_steps
            array, an int replaces it with the constant K.
        lr_local: eta_l (eta_0 for decaying schedules); lr_global: eta_g.
        lr_schedule: a name of :data:`fedlib.algorithms.lr_schedules` (``"constant"``,
            ``"fedsum_sqrt"``: eta_0 / sqrt(t/10 + 1)).
        eval_every: evaluate every this many rounds (and at round 0 and at the end).
        seed: seed of a schedule built from a spec (and of torch's global generator inside the
            run, used only by a user model's plain ``nn.Dropout``; fedlib's models use keyed
            dropout masks).
        device: where the model lives (None: the problem's device).
        engine: ``"vectorized"``, ``"reference"`` (per-client loop, for tests), or an engine object
            with their ``local_sgd`` (:class:`fedlib.flower.FlowerEngine` trains on Flower nodes).
        x0: starting point (None: ``problem.initial_params(seed)``).
        checkpoint: a file where the run saves, atomically and every ``checkpoint_every`` rounds
            (and at the end), what it needs to go on: model, algorithm state, history so far,
            round index. A run started with an existing checkpoint of the same run resumes from
            it (ending bitwise as an uninterrupted run would); a checkpoint of another run is
            refused with a ValueError; an unreadable one is reported and ignored. None: none.
        checkpoint_every: rounds between checkpoints.
        round_offset: the schedule's round t is round t + round_offset of a longer run (a phase
            continuing a warm-up): minibatch and dropout keys and the learning-rate schedule use
            the global round; the history counts from 0.
        checkpoint_code: the fingerprint of the code that computes the run, saved with its
            checkpoint (a store passes :func:`fedlib.fingerprint.config_fingerprint`; None: the
            source of the algorithm's classes, :func:`_code_of`). A checkpoint saved by code
            whose fingerprint differs in a part both record is not resumed: the run starts over,
            with a warning naming the part (resuming would mix two codes' rounds).
    """

    algorithm: type[algorithms.Algorithm]
    options: dict
    problem: Problem
    participation: Schedule | dict | str
    rounds: int | None = None
    local_steps: int | None = None
    lr_local: float = 0.01
    lr_global: float = 1.0
    lr_schedule: str = "constant"
    eval_every: int = 1
    seed: int = 0
    device: str | torch.device | None = None
    engine: str | Any = "vectorized"
    x0: torch.Tensor | None = None
    checkpoint: str | os.PathLike | None = None
    checkpoint_every: int = 50
    round_offset: int = 0
    checkpoint_code: dict | None = None

    @classmethod
    def checked(cls, algorithm: str | type[algorithms.Algorithm] | algorithms.Algorithm,
                problem: Problem | str, participation: Schedule | dict | str, *,
                options: dict | None = None, **run_options: Any) -> RunPlan:
        """The plan of :func:`run`'s arguments (``run_options``: its named ones), after the checks
        that need no schedule: the algorithm's name, the problem, the learning rates and their
        schedule, ``eval_every``, ``checkpoint_every`` and ``checkpoint``, ``round_offset``,
        ``rounds``; a ValueError naming the first argument that fails, as :func:`run` raises."""
        options = dict(options or {})
        if isinstance(algorithm, algorithms.Algorithm):
            options = {**algorithm.settings.changed(), **options}
            algorithm = type(algorithm)
        algorithm_class = algorithms.get(algorithm)
        _check_options(algorithm_class, options)
        if isinstance(problem, str):
            problem = build_problem(problem)
        if not isinstance(problem, Problem):
            raise InputError(f"problem: expected a fedlib.problems.Problem or a problem name "
                             f"({', '.join(problems_available())}), got {type(problem).__name__}")
        plan = cls(algorithm_class, options, problem, participation, **run_options)
        if plan.lr_schedule not in algorithms.lr_schedules:
            raise InputError(f"lr_schedule: unknown schedule {plan.lr_schedule!r}; known: "
                             f"{', '.join(algorithms.lr_schedules)}")
        checked = {"lr_local": _positive("lr_local", plan.lr_local),
                   "lr_global": _positive("lr_global", plan.lr_global)}
        check_int("eval_every", plan.eval_every, 1)
        check_int("checkpoint_every", plan.checkpoint_every, 1)
        if plan.checkpoint is not None and Path(plan.checkpoint).is_dir():
            raise InputError(f"checkpoint: {plan.checkpoint} is a folder; give the path of a file (it need "
                             f"not exist yet), e.g. {Path(plan.checkpoint) / 'run.pt'}")
        checked["round_offset"] = check_int("round_offset", plan.round_offset, 0)
        if plan.rounds is not None:
            checked["rounds"] = check_int("rounds", plan.rounds, 1)
        return dataclasses.replace(plan, **checked)


def _check_options(cls: type[algorithms.Algorithm], options: dict) -> None:
    """The algorithm's check of its options (:meth:`~fedlib.algorithms.Algorithm.check_options`);
    a name that is no option but looks like :func:`run`'s own argument (``lr`` for ``lr_local``)
    gets those arguments named in the message."""
    try:
        cls.check_options(options)
    except InputError as e:
        name, _, rest = str(e).partition(": ")
        if not rest.startswith("not an option of algorithm"):
            raise
        if name == "algorithm_args" and isinstance(options[name], dict):    # a config's field, given to run
            given = ", ".join(f"{k}={v!r}" for k, v in options[name].items())
            raise InputError(f"{e} (fedlib.run takes the algorithm's options as keywords: "
                             f"fedlib.run(..., {given}); a config's algorithm_args is a dict: "
                             "fedlib.run_config(config))") from None
        params = [p for p in inspect.signature(run).parameters
                  if p not in ("algorithm", "problem", "participation", "algorithm_options")]
        near = [p for p in params if p.startswith(name) or name.startswith(p)] if len(name) > 1 else []
        near = near or difflib.get_close_matches(name, params, n=3)
        if not near:
            raise
        raise InputError(f"{e} (fedlib.run takes {', '.join(near)} itself)") from None


def run(algorithm: str | type[algorithms.Algorithm] | algorithms.Algorithm, problem: Problem | str,
        participation: Schedule | dict | str, rounds: int | None = None, local_steps: int | None = None,
        lr_local: float = 0.01, lr_global: float = 1.0, lr_schedule: str = "constant", eval_every: int = 1,
        seed: int = 0, device: str | torch.device | None = None, progress: bool = True,
        engine: str | Any = "vectorized", x0: torch.Tensor | None = None,
        callback: Callable[[int, torch.Tensor], None] | None = None,
        checkpoint: str | os.PathLike | None = None, checkpoint_every: int = 50,
        round_offset: int = 0, callbacks: Sequence[RunCallback] = (),
        **algorithm_options: Any) -> Result:
    """Run one algorithm on one problem under one participation schedule.

    Example, FedSUM on a random quadratic with each client present with probability 0.3::

        prob = fedlib.problems.random_quadratic(num_clients=10, dim=5, seed=0)
        res = fedlib.run("fedsum", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200,
                         local_steps=5, lr_local=0.05)
        res.history[["round", "loss", "uplink"]].tail()

    Args:
        algorithm: a name from :func:`fedlib.algorithms.available`, an
            :class:`~fedlib.algorithms.Algorithm` subclass (registered or not), or an instance
            (its class and options are used; ``algorithm_options`` add to them).
        problem: a :class:`fedlib.problems.Problem`, or a name of
            :func:`fedlib.problems.available` built with its default arguments.
        participation: a :class:`Schedule` (replayed as is), a kind name, or a dict
            ``{"kind": ..., **kind_arguments}`` built with ``seed`` and ``local_steps``.
        rounds: rounds to run (default: the whole schedule; required for a spec).
        local_steps: K (for a spec default 10; for a Schedule an int replaces its local_steps).
        lr_local, lr_global: eta_l (eta_0 for decaying schedules) and eta_g.
        lr_schedule: ``"constant"`` or ``"fedsum_sqrt"`` (eta_0 / sqrt(t/10 + 1)).
        eval_every: evaluate every this many rounds (and at round 0 and at the end).
        seed: seed of a schedule built from a spec (more: :class:`RunPlan`).
        device: where the model lives (default: the problem's device).
        engine: ``"vectorized"`` (default), ``"reference"`` or an engine object (:class:`RunPlan`).
        x0: starting point (default ``problem.initial_params(seed)``).
        checkpoint, checkpoint_every: a file the run saves to every ``checkpoint_every`` rounds
            and resumes from; another run's is refused (:class:`RunPlan`).
        round_offset: the global round of the schedule's round 0 (a phase after a warm-up).
        progress: tqdm progress bar over rounds.
        callback: called as ``callback(t, x)`` after every round t with the new model.
        callbacks: :class:`RunCallback` objects: hooks at the start, after every round (one
            may stop the run: early stopping) and at the end; see :class:`RunCallback`.
        **algorithm_options: options of the algorithm (see its docstring).

    Returns:
        The run's :class:`Result`; its history has a column ``eval_seconds``, the cumulative
        seconds spent evaluating (part of ``seconds``).

    Raises:
        InputError: unknown algorithm, engine or schedule; mismatched sizes; non-positive
            learning rates, steps or eval_every; a checkpoint of another run.
    """
    plan = RunPlan.checked(algorithm, problem, participation, options=algorithm_options, rounds=rounds,
                           local_steps=local_steps, lr_local=lr_local, lr_global=lr_global,
                           lr_schedule=lr_schedule, eval_every=eval_every, seed=seed, device=device,
                           engine=engine, x0=x0, checkpoint=checkpoint, checkpoint_every=checkpoint_every,
                           round_offset=round_offset)
    if not isinstance(progress, (bool, np.bool_)):
        raise InputError(f"progress: must be True or False, got {type(progress).__name__} {progress!r}")
    return _run_plan(plan, progress, callback, callbacks)


def _run_plan(plan: RunPlan, progress: bool = False,
              callback: Callable[[int, torch.Tensor], None] | None = None,
              callbacks: Sequence[RunCallback] = ()) -> Result:
    """Run ``plan``: build the run (:func:`_prepare`), its callbacks in their order (the replay
    anchor, ``callback``, ``callbacks``, the history, the checkpoint, the progress bar), the loop."""
    state = _prepare(plan)
    hooks: list[RunCallback] = [_Anchor()]
    if callback is not None:
        hooks.append(_FunctionCallback(callback))
    hooks += list(callbacks)
    hooks.append(_Record(plan.eval_every))
    if plan.checkpoint is not None:
        hooks.append(_Checkpoint(plan.checkpoint, plan.checkpoint_every, plan.eval_every, _code_of(plan)))
        hooks[-1].restore(state)           # resume from a checkpoint of this run, if there is one
    if progress:
        hooks.append(_Progress())
    _loop(state, hooks)
    return state.result()


@dataclass
class RunState:
    """What :func:`run`'s loop hands its callbacks: the run as it stands.

    Attributes:
        t: rounds done so far (the model ``x`` is the model after them).
        x: the current model.
        algo: the algorithm object (its state included).
        schedule: the schedule the algorithm runs (after its ``prepare_schedule``).
        round_input: the last round's :class:`~fedlib.algorithms.RoundInput` (None before the first).
        history: the history rows so far (dicts: ``round``, the metrics, messages, seconds).
        diverged: the model or a metric became non-finite (the run stops).
        stopped_by: the callback that stopped the run early, if any.
        info: what the run records about itself (algorithm, options, schedule, rates, anchor, ...).
    """

    t: int
    x: torch.Tensor
    algo: algorithms.Algorithm
    schedule: Schedule
    problem: Problem
    info: dict
    seed: int
    lr: Callable[[int], float]
    lr_global: float
    round_offset: int
    remote: bool
    device: torch.device
    round_input: algorithms.RoundInput | None = None
    diverged: bool = False
    stopped_by: str | None = None
    recorder: _History | None = None
    anchor: AnchorRecorder | None = None
    unreachable: dict = field(default_factory=dict)
    _tensors: tuple = ()

    @property
    def history(self) -> list[dict]:
        return self.recorder.rows if self.recorder is not None else []

    @property
    def rounds(self) -> int:
        return self.schedule.num_rounds

    def next_round(self) -> algorithms.RoundInput:
        """The input of round ``t`` (global round ``t + round_offset`` for keys and the rate)."""
        active, uplink, steps = self._tensors
        tg = self.t + self.round_offset
        return algorithms.RoundInput(tg, active[self.t], uplink[self.t], steps[self.t], self.lr(tg),
                                     self.lr_global)

    def result(self) -> Result:
        info = self.info
        info["diverged_at"] = self.history[-1]["round"] if self.diverged else None
        if self.stopped_by is not None:
            info["stopped_by"] = self.stopped_by
        if self.remote:
            info["unreachable"] = {str(t): c for t, c in self.unreachable.items()}
        info["anchor"] = self.anchor.data
        if getattr(self.problem, "data_digests", None):      # after the checkpoint's digest, as resumed_at
            info["data"] = dict(self.problem.data_digests)
        if self.diverged:
            warn(f"{type(self.algo).name}: diverged (non-finite model or metric) at round "
                 f"{self.history[-1]['round']}; the run stopped there")
        return Result(pd.DataFrame(self.history), self.x, self.diverged, info, self.algo, self.schedule)


class RunCallback:
    """A hook of :func:`run`'s loop. Subclass it and pass instances as ``run(...,
    callbacks=[...])``; every method is optional.

    The loop: ``on_start`` of each callback (in order), then per round the algorithm's round and
    ``after_round`` of every callback in order -- one that returns True stops the run after this
    round -- and ``on_end`` of each at the end. fedlib's own parts of a run are callbacks too, in
    this order: the replay anchor, the ``callback`` function, the user's callbacks, the history
    (messages, divergence, evaluations), the checkpoint, the progress bar. So a user's callback
    sees the model before it is evaluated, and an early stop is evaluated and checkpointed like
    the end of the run (``Result.info["stopped_by"]`` names the callback).

    Example, early stopping at an evaluation where the training loss is below a level::

        class StopBelow(fedlib.RunCallback):
            def __init__(self, level):
                self.level = level

            def after_round(self, run):
                return run.history[-1]["loss"] < self.level     # the latest evaluation

    (The history callback runs after the user's, so ``run.history[-1]`` is the evaluation made
    up to the previous round; the stop is evaluated at the round it happens.)
    """

    def on_start(self, run: RunState) -> None:
        """Before the first round (also on a resumed run, after the state is restored)."""

    def after_round(self, run: RunState) -> bool | None:
        """After each round; True stops the run."""
        return None

    def on_end(self, run: RunState) -> None:
        """After the last round, an early stop or a divergence."""


def _prepare(plan: RunPlan) -> RunState:
    """Build ``plan``'s run: the schedule, the engine, the device, the start and the algorithm
    (checking what :meth:`RunPlan.checked` left: the schedule's sizes, the engine, the device,
    ``x0``'s shape)."""
    problem, seed = plan.problem, plan.seed
    sched = _schedule(plan.participation, problem, plan.rounds, plan.local_steps, seed)
    eng = get_engine(plan.engine) if isinstance(plan.engine, str) else plan.engine
    dev = _device(plan.device) if plan.device is not None else problem.device
    x = (problem.initial_params(seed) if plan.x0 is None else torch.as_tensor(plan.x0)).to(dev, problem.dtype)
    if x.shape != (problem.dim,):
        raise InputError(f"x0: expected shape ({problem.dim},), got {tuple(x.shape)}")
    if plan.x0 is not None and not bool(torch.isfinite(x).all()):
        bad = int(torch.nonzero(~torch.isfinite(x))[0, 0])
        raise InputError(f"x0: must be finite (a starting model); entry {bad} is {float(x[bad])}")
    algo = plan.algorithm(problem, eng, **plan.options)
    sched = algo.prepare_schedule(sched, seed, plan.lr_local)
    _warn_idle_clients(sched)       # the schedule the algorithm runs (a wait baseline asks everyone)
    algo.init(x, float(sched.local_steps.mean()))
    unset = [name for name in algo.server_state if not hasattr(algo, name)]
    if unset:
        raise InputError(f"server_state: algorithm {plan.algorithm.name!r} declares {unset[0]!r}, which its "
                         f"init() did not set (server_state names the attributes init creates, "
                         f"self.{unset[0]} = ..., and its rounds change)")
    lr_fn, lr_local = algorithms.lr_schedules[plan.lr_schedule], plan.lr_local
    info = {"algorithm": plan.algorithm.name,
            "options": {k: _jsonable(v) for k, v in plan.options.items()},
            "schedule": sched.spec, "lr_local": lr_local, "lr_global": plan.lr_global,
            "lr_schedule": plan.lr_schedule,
            "engine": plan.engine if isinstance(plan.engine, str) else type(plan.engine).__name__,
            "problem": problem.spec(), "round_offset": plan.round_offset}
    tensors = tuple(torch.tensor(np.array(a), device=dev)
                    for a in (sched.active, sched.uplink_ok, sched.local_steps))
    return RunState(t=0, x=x, algo=algo, schedule=sched, problem=problem, info=info, seed=seed,
                    lr=lambda tg: lr_fn(lr_local, tg), lr_global=plan.lr_global,
                    round_offset=plan.round_offset,
                    remote=bool(getattr(eng, "remote_clients", False)),   # clients may not answer: _round
                    device=dev, anchor=AnchorRecorder(x), _tensors=tensors)


def _loop(run: RunState, callbacks: list[RunCallback]) -> None:
    """Rounds from ``run.t`` to the end of the schedule, the callbacks around each."""
    with torch.random.fork_rng(devices=[] if run.device.type == "cpu" else [run.device]):
        torch.manual_seed(run.seed)   # plain nn.Dropout of user models only; the caller's RNG is restored
        for cb in callbacks:
            cb.on_start(run)
        stop = run.diverged
        while not stop and run.t < run.rounds:
            r = run.round_input = run.next_round()
            run.x = _round(run.algo, run.x, r, run.remote, run.unreachable)
            run.t += 1
            for cb in callbacks:
                if cb.after_round(run) and not stop:
                    stop = True
                    if not run.diverged:
                        run.stopped_by = type(cb).__name__
        for cb in callbacks:
            cb.on_end(run)


class _Anchor(RunCallback):
    """The first rounds' displacement in float64: a replay check across CPUs (fedlib.arithmetic)."""

    def after_round(self, run: RunState) -> None:
        run.anchor.after(run.t, run.x)


class _FunctionCallback(RunCallback):
    """``run(callback=f)``: ``f(t, x)`` after every round t (0-based) with the new model."""

    def __init__(self, fn: Callable[[int, torch.Tensor], None]):
        self.fn = fn

    def after_round(self, run: RunState) -> None:
        self.fn(run.t - 1, run.x)


class _Record(RunCallback):
    """The history: messages per round, evaluations every ``eval_every`` rounds and at the end,
    and divergence (a non-finite model or metric stops the run)."""

    def __init__(self, eval_every: int):
        self.every = eval_every

    def on_start(self, run: RunState) -> None:
        if run.recorder is None:
            run.recorder = _History(run.problem, run.algo, run.schedule)
        if run.t == 0 and not run.recorder.rows and not run.recorder.evaluate(0, run.x):
            run.diverged = True

    def after_round(self, run: RunState) -> bool:
        rec, t = run.recorder, run.t
        rec.count(*run.algo.messages(run.round_input))
        if not bool(torch.isfinite(run.x).all()):
            run.diverged = rec.non_finite(t)
            return True
        if (t % self.every == 0 or t == run.rounds) and not rec.evaluate(t, run.x):
            run.diverged = True
            return True
        return False

    def on_end(self, run: RunState) -> None:
        rec = run.recorder
        if run.stopped_by is not None and not run.diverged and rec.rows[-1]["round"] != run.t:
            if not rec.evaluate(run.t, run.x):         # an early stop is evaluated as an end
                run.diverged = True


def _code_of(plan: RunPlan) -> dict:
    """The fingerprint of the code that computes ``plan``'s run, for its checkpoint:
    :attr:`RunPlan.checkpoint_code` (a store's, behavioural: :mod:`fedlib.fingerprint`, which runs
    its probes through this module, so this module cannot ask it), else, for a direct run, the
    source of its algorithm's classes and of their options' classes (``"algorithm source"``: an
    edit of them, a refactor too, starts the run over; a helper they call is not seen)."""
    if plan.checkpoint_code is not None:
        return dict(plan.checkpoint_code)
    base = (algorithms.Algorithm, algorithms.Options, object)
    classes = [c for c in (*plan.algorithm.__mro__, *plan.algorithm.Options.__mro__) if c not in base]
    return {"algorithm source": source_fingerprint(*classes)}


def changed_parts(saved: dict | None, now: dict) -> list[str]:
    """The parts of a recorded code fingerprint ``saved`` (an entry's ``meta["code"]``, a
    checkpoint's ``code``) that differ from ``now``, in ``saved``'s order: only parts both sides
    hold (not None), so a record made before a part existed, or a part that could not be computed,
    is never compared; ``[]`` for no record."""
    if not saved:
        return []
    return [part for part, fp in saved.items() if fp and now.get(part) and now[part] != fp]


class _Checkpoint(RunCallback):
    """Saves what the run needs to go on every ``every`` rounds and at the end; a run started with
    a checkpoint of itself, saved by the same code (``code``, :func:`_code_of`), resumes from it
    (on_start restores the state)."""

    def __init__(self, path, every: int, eval_every: int, code: dict | None = None):
        self.path, self.every, self.eval_every, self.code = path, every, eval_every, code

    def restore(self, run: RunState) -> None:
        """Before the loop: the state of a checkpoint of this very run, if there is one."""
        digest, parts = _fingerprint(run.info, run.schedule, run.x, self.eval_every)
        self.ckpt = _Checkpointer(self.path, self.every, digest,
                                  checkpoint_arithmetic(run.device, getattr(run.algo, "engine", None),
                                                        run.problem), parts=parts, code=self.code,
                                  data=dict(getattr(run.problem, "data_digests", None) or {}))
        if (state := self.ckpt.load()) is not None:
            run.info["resumed_at"] = int(state["t"])          # after the digest: what a store's entry records
            run.t, run.x = state["t"], state["x"].to(run.device)
            run.recorder = _History(run.problem, run.algo, run.schedule)
            run.recorder.restore(state)
            run.algo.load_state_dict(state["algorithm"])
            run.anchor = AnchorRecorder(run.anchor.x0, recorded=state.get("anchor"))

    def after_round(self, run: RunState) -> None:
        if not run.diverged and self.ckpt.due(run.t, run.rounds):
            self.ckpt.save(run.t, run.x, run.recorder, run.algo, run.anchor)

    def on_end(self, run: RunState) -> None:
        if not run.diverged:
            self.ckpt.save(run.t, run.x, run.recorder, run.algo, run.anchor)


class _Progress(RunCallback):
    """A tqdm bar over the rounds."""

    def on_start(self, run: RunState) -> None:
        self.bar = tqdm(total=run.rounds, initial=run.t, desc=type(run.algo).name, leave=False)

    def after_round(self, run: RunState) -> None:
        self.bar.update(1)

    def on_end(self, run: RunState) -> None:
        self.bar.close()


def _round(algo: algorithms.Algorithm, x: torch.Tensor, r: algorithms.RoundInput, remote: bool,
           unreachable: dict[int, list[int]]) -> torch.Tensor:
    """One round of ``algo``. With remote clients (an engine with ``remote_clients``), a client
    that does not answer is the schedule's failed upload: the round runs again from the state
    before it, with ``uplink_ok`` False for that client (its reply never came; the engine keeps
    the others' answers and does not ask again), and the round is recorded in ``unreachable``."""
    if not remote:
        return _checked(algo, x, r, algo.round(x, r))
    before = copy.deepcopy(algo.state_dict())
    while True:
        try:
            return _checked(algo, x, r, algo.round(x, r))
        except UnreachableClients as e:
            failed = [c for c in e.clients if bool(r.uplink_ok[c])]
            if not failed:
                raise RuntimeError(f"round {r.t}: client(s) {e.clients} did not answer again after their "
                                   "upload was counted as failed") from e
            unreachable.setdefault(r.t, []).extend(failed)
            ok = r.uplink_ok.clone()
            ok[failed] = False
            r = algorithms.RoundInput(r.t, r.active, ok, r.local_steps, r.lr_local, r.lr_global)
            algo.load_state_dict(copy.deepcopy(before))


def _checked(algo: algorithms.Algorithm, x: torch.Tensor, r: algorithms.RoundInput, out) -> torch.Tensor:
    """``out``, the model ``algo.round`` returned, if it is one: a tensor of ``x``'s shape and
    dtype on its device; else a ValueError naming the algorithm, the round, what was expected and
    what came (a user's algorithm otherwise fails later inside torch, far from the cause)."""
    if isinstance(out, torch.Tensor) and out.shape == x.shape and out.dtype == x.dtype \
            and out.device == x.device:
        return out
    got = (f"a tensor of shape {tuple(out.shape)}, dtype {out.dtype} on {out.device}"
           if isinstance(out, torch.Tensor) else f"{type(out).__name__} {out!r:.60}")
    raise InputError(f"algorithm {type(algo).name!r}: round() of round {r.t} returned {got}; expected the "
                     f"new model, a tensor of shape {tuple(x.shape)}, dtype {x.dtype} on {x.device}")


class _History:
    """A run's history rows: evaluations, cumulative messages and local work, wall time."""

    def __init__(self, problem: Problem, algo: algorithms.Algorithm, sched: Schedule):
        self.problem, self.algo = problem, algo
        # local steps computed by the clients the server asked (all of them train, whether or not
        # their upload then arrives), cumulative over rounds: the computation load of FedACS I.3.4
        asked = ((np.asarray(sched.active) > 0) * np.asarray(sched.local_steps)).sum(1)
        self.work = np.concatenate([[0], np.cumsum(asked)])
        self.rows: list[dict] = []
        self.up = self.down = 0
        self.eval_s = 0.0
        self.start = time.perf_counter()

    def count(self, up: int, down: int) -> None:
        """Add a round's messages (model units up and down)."""
        self.up, self.down = self.up + up, self.down + down

    def evaluate(self, t: int, x: torch.Tensor) -> bool:
        """Record the metrics after t rounds; False when one is not finite (divergence). Every
        problem evaluates with one intra-op thread (its bits then do not depend on the thread count)."""
        e0 = time.perf_counter()
        with single_threaded_ops():
            m = self.problem.metrics(self.algo.eval_params(x))
        self.eval_s += time.perf_counter() - e0
        self.rows.append({"round": t, **m, "uplink": self.up, "downlink": self.down,
                          "client_steps": int(self.work[t]), **self.algo.extra_metrics(),
                          "seconds": time.perf_counter() - self.start, "eval_seconds": self.eval_s})
        return all(math.isfinite(v) for v in m.values() if isinstance(v, (int, float)))

    def non_finite(self, t: int) -> bool:
        """Record a model that became non-finite after t rounds (divergence); returns True."""
        self.rows.append({"round": t, "loss": float("nan"), "uplink": self.up, "downlink": self.down,
                          "client_steps": int(self.work[t]), "seconds": time.perf_counter() - self.start,
                          "eval_seconds": self.eval_s})
        return True

    def state(self) -> dict:
        return {"rows": self.rows, "up": self.up, "down": self.down,
                "seconds": time.perf_counter() - self.start, "eval_seconds": self.eval_s}

    def restore(self, state: dict) -> None:
        self.rows, self.up, self.down = state["rows"], state["up"], state["down"]
        self.eval_s = state["eval_seconds"]
        self.start = time.perf_counter() - state["seconds"]


class CheckpointMismatch(InputError):
    """A checkpoint that belongs to another run than the one asked to resume from it: its
    settings, schedule or starting point differ (``differences`` says what, in words)."""

    def __init__(self, path: Path, differences: str):
        super().__init__(f"checkpoint: {path} belongs to another run ({differences}); delete it or pass "
                         "another path")
        self.path, self.differences = path, differences


class _Checkpointer:
    """Saves what a run needs to go on, atomically, every ``every`` rounds; refuses another run's.
    ``arith``: the arithmetic the run computes with (:func:`checkpoint_arithmetic`), saved with
    the state; a checkpoint saved under another one (another CPU or GPU, torch build: a store's
    ``.checkpoints`` moved between machines), or without a record of it, is not resumed, so that a
    run's rounds, and its entry's record, have one arithmetic. ``code``: the fingerprint of the
    code that computes the run (:func:`_code_of`), saved with the state; a checkpoint saved by code
    that differs in a part both record is not resumed either (its run is this one, but its rounds
    were computed by the code before) where its settings are this run's -- the change may have
    moved its schedule or start, not its algorithm, options, problem or rates; with other settings
    it is another run's, and refused. ``data``: the content digests of the data the run computes
    on (:attr:`fedlib.tasks.Neural.data_digests`), saved with the state; a checkpoint of this run
    saved on other data is not resumed (its rounds and the rest would mix two datasets)."""

    def __init__(self, path: str | os.PathLike, every: int, fingerprint: str, arith: tuple | None = None,
                 parts: dict | None = None, code: dict | None = None, data: dict | None = None):
        self.path, self.every, self.fingerprint, self.arith = Path(path), every, fingerprint, arith
        self.parts, self.code, self.data = parts, code, data or {}

    def due(self, t: int, rounds: int) -> bool:
        return t % self.every == 0 and t < rounds

    def load(self) -> dict | None:
        """The saved state of this run, None when there is none (or it is unreadable: reported)."""
        state = _read_checkpoint(self.path) if self.path.exists() else None
        changed = [] if state is None else changed_parts(state.get("code"), self.code or {})
        # this run's (its digest, or its settings where the code moved its schedule or start); another
        # run's is refused below, whatever its code
        same_run = state is not None and (
            state["fingerprint"] == self.fingerprint or self._same_settings(state))
        if changed and same_run:
            warn(f"checkpoint: {self.path} (round {state.get('t')}) was saved by other code (the code "
                 f"of its {' and '.join(changed)} has changed since); starting the run over, so that all "
                 "its rounds are computed by the code as it is now")
            return None
        if state is not None and state["fingerprint"] != self.fingerprint:
            raise CheckpointMismatch(self.path, _differences(state, self.parts))
        if state is not None and self.arith is not None and not _same_arithmetic(state, [self.arith]):
            warn(f"checkpoint: {self.path} (round {state.get('t')}) was saved under another "
                 "arithmetic (device, CPU or torch build), or records none; starting the run over, "
                 "so that all its rounds compute under one")
            return None
        saved = state.get("data") if state is not None else None
        if saved and self.data and saved != self.data:   # one saved before data were recorded: as before
            names = ", ".join(sorted(k for k in set(saved) | set(self.data)
                                     if saved.get(k) != self.data.get(k)))
            warn(f"checkpoint: {self.path} (round {state.get('t')}) was saved on other data (the content of "
                 f"{names} has changed since); starting the run over, so that all its rounds compute on "
                 "the data it records")
            return None
        return state

    def _same_settings(self, state: dict) -> bool:
        """Whether a checkpoint's run has this run's settings (algorithm, options, problem, rates,
        schedule spec), so that a schedule or start that differs comes from the code that drew it."""
        saved = (state.get("parts") or {}).get("settings")
        return saved is not None and self.parts is not None and \
            json.dumps(saved, sort_keys=True) == json.dumps(self.parts["settings"], sort_keys=True)

    def save(self, t: int, x: torch.Tensor, history: _History, algo: algorithms.Algorithm,
             anchor: AnchorRecorder) -> None:
        _write_checkpoint(self.path, {"fingerprint": self.fingerprint, "t": t, "x": x.detach().cpu(),
                                      **history.state(), "algorithm": algo.state_dict(),
                                      "anchor": anchor.data, "parts": self.parts, "code": self.code,
                                      "data": self.data,
                                      "arithmetic": None if self.arith is None else list(self.arith)})


def _warn_idle_clients(sched: Schedule) -> None:
    """One warning, with the counts, when some client (or every client) is never active in the
    rounds a run will see: a pattern may do that on purpose, but it must not be a surprise."""
    act = np.asarray(sched.active) > 0
    rounds, n = act.shape
    kind = sched.kind
    if not act.any():
        warn(f"participation: no client is active in any of the {rounds} rounds of this {kind!r} "
             "schedule: the model will not move")
        return
    never = np.flatnonzero(~act.any(axis=0))
    if len(never):
        shown = ", ".join(str(int(i)) for i in never[:10]) + (", ..." if len(never) > 10 else "")
        warn(f"participation: {len(never)} of {n} clients are never active in the {rounds} rounds "
             f"of this {kind!r} schedule (clients {shown}): their data never reaches the model")


def _fingerprint(info: dict, sched: Schedule, x0: torch.Tensor, eval_every: int) -> tuple[str, dict]:
    """Hash of everything that determines a run's trajectory (for checkpoints), and the same by
    part, so that a refused checkpoint says what differs: the run's settings (as JSON values), and
    digests of its schedule and of its starting point. One pass over the same bytes; the whole
    digest is the one checkpoints have always recorded."""
    settings = json.dumps({**info, "eval_every": eval_every}, sort_keys=True, default=str)
    start = x0.detach().cpu().double().numpy().tobytes()
    h, schedule = hashlib.sha256(settings.encode()), hashlib.sha256()
    for arr in (sched.active, sched.uplink_ok, sched.local_steps):
        b = np.ascontiguousarray(arr).tobytes()
        h.update(b)
        schedule.update(b)
    h.update(start)
    return h.hexdigest(), {"settings": json.loads(settings), "schedule": schedule.hexdigest(),
                           "starting point": hashlib.sha256(start).hexdigest()}


def _differences(state: dict, parts: dict | None) -> str:
    """What differs between a saved checkpoint's run and this one, in words (a checkpoint saved
    before its parts were recorded: the parts that could differ)."""
    saved = state.get("parts")
    if not saved or not parts:
        return "its algorithm, problem, schedule, rates or starting point differ"
    old, new = _flat(saved.get("settings", {})), _flat(parts["settings"])
    same = lambda k: json.dumps(old.get(k), sort_keys=True) == json.dumps(new.get(k), sort_keys=True)  # noqa: E731
    keys = [k for k in sorted(set(old) | set(new)) if not same(k)]            # as JSON: NaN equals NaN
    said = [f"{k}: {reprlib.repr(old.get(k))} saved, {reprlib.repr(new.get(k))} now" for k in keys[:4]] + (
        [f"and {len(keys) - 4} more settings"] if len(keys) > 4 else [])
    said += [f"its {p}" for p in ("schedule", "starting point") if saved.get(p) != parts[p]]
    return "what differs: " + "; ".join(said or ["the run's digest only"])


def _flat(d: dict, prefix: str = "") -> dict:
    """Nested settings as one level, ``{"schedule.rounds": 20, ...}``."""
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def _plain(v: Any) -> Any:
    """Checkpoint payload as types ``torch.load(weights_only=True)`` accepts."""
    if isinstance(v, np.ndarray):
        return {"__ndarray__": torch.from_numpy(np.array(v))}
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_plain(x) for x in v)
    return v


def _unplain(v: Any) -> Any:
    if isinstance(v, dict):
        if set(v) == {"__ndarray__"}:
            return v["__ndarray__"].numpy()
        return {k: _unplain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_unplain(x) for x in v)
    return v


#: how many times a checkpoint's folder is made again when it vanishes before the temporary file is in it
_FOLDER_TRIES = 100


def _write_checkpoint(path: Path, state: dict) -> None:
    """Save ``state`` at ``path`` atomically: a temporary file beside it, renamed into place.

    The folder may be shared: a sweep's workers checkpoint their runs into one store's
    ``.checkpoints/``, and a run that finishes removes that folder when it is empty
    (:meth:`fedlib.store.Store.compute`). So it can vanish between being made here and the
    temporary file being created in it; then it is made again. Once the temporary file is in it,
    the folder is not empty and stays until the rename is done."""
    for attempt in range(_FOLDER_TRIES):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            break
        except FileNotFoundError:           # the folder was removed since mkdir (another run finished)
            if attempt == _FOLDER_TRIES - 1:
                raise
    os.close(fd)
    try:
        torch.save(_plain(state), tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _read_checkpoint(path: Path) -> dict | None:
    try:
        return _unplain(torch.load(path, weights_only=True))
    except Exception as e:  # noqa: BLE001 - an unreadable checkpoint is reported and ignored
        warn(f"checkpoint: cannot read {path} ({type(e).__name__}: {e}); starting the run over")
        return None


def checkpoint_arithmetic(device: Any, engine: Any = None, problem: Any = None) -> tuple:
    """What a checkpoint records of the arithmetic its rounds compute with on ``device``:
    :func:`fedlib.arithmetic.signature` as plain values, without the thread count (a run's bits do
    not depend on it: :mod:`fedlib._threads`) and with deterministic algorithms as on or off (strict
    and warn-only choose the same kernels); and the options of ``engine`` that change the
    arithmetic (``VectorizedEngine.arithmetic``, e.g. ``clients_innermost``: other kernels on
    CUDA), so that a run does not resume across them: with ``problem``, only those it takes
    (``VectorizedEngine.arithmetic_of``; a problem that ignores an option computes as without
    it, so its run resumes across it). The other engine options (graphs, compiled draws) give the
    plain path's bits and are left out."""
    arith = {**arithmetic.current(device), "torch_threads": None}
    if arith.get("deterministic") is not None:
        arith["deterministic"] = bool(arith["deterministic"])
    options = getattr(engine, "arithmetic", ())
    if problem is not None and hasattr(engine, "arithmetic_of"):
        options = engine.arithmetic_of(problem)
    return tuple(v if v is None or isinstance(v, (bool, int, float)) else str(v)   # torch's version is
                 for v in arithmetic.signature(arith)) + tuple(options)


def _same_arithmetic(state: dict, under: Sequence[tuple]) -> bool:
    saved = state.get("arithmetic")
    return saved is not None and tuple(saved) in {tuple(u) for u in under}


def checkpoint_round(path: str | os.PathLike, under: Sequence[tuple] | None = None) -> int:
    """The rounds a run's checkpoint at ``path`` has done (a run resumed from it computes only the
    rest), 0 when there is none or it cannot be read, or (``under``: the
    :func:`checkpoint_arithmetic` of each device the run may compute on) when it was saved under
    another arithmetic: in each case the run starts over."""
    path = Path(path)
    if not path.exists():
        return 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # unreadable: the run itself says so
        state = _read_checkpoint(path)
    t = state.get("t") if isinstance(state, dict) else None
    if not isinstance(t, int) or t < 0 or (under is not None and not _same_arithmetic(state, under)):
        return 0                                           # not a run's checkpoint, or not resumed here
    return t


def _jsonable(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        v = v.detach().cpu().numpy()
    return _json_value(v)


def run_config(config: ExperimentConfig | Planned, device: str | None = None, progress: bool = False,
               rounds: int | None = None, checkpoint: str | os.PathLike | None = None,
               checkpoint_every: int = 50, x0: torch.Tensor | None = None,
               engine: str | Any = "vectorized", checkpoint_code: dict | None = None) -> Result:
    """Run one :class:`ExperimentConfig` (no store). ``rounds`` truncates the run to its first
    rounds on the config's full schedule (what :func:`fedlib.verify` replays). A config
    with ``init_from`` needs ``x0``, the warm-up's final model (a store supplies it). ``engine``
    is :func:`run`'s (e.g. ``fedlib.engine.VectorizedEngine(graphs=True)``: CUDA-graph steps).
    ``checkpoint_code``: :attr:`RunPlan.checkpoint_code` (a store passes the config's code
    fingerprint). The config is validated first, unless it is :class:`~fedlib.config.Planned`
    (a sweep validated it)."""
    if isinstance(config, Planned):
        config = config.config
    else:
        config.validate()
    problem = config.build_problem(device)
    warm = config.warmup()
    offset = 0
    if warm is None:
        sched = config.schedule(problem.num_clients, problem)
    else:
        if x0 is None:
            raise InputError("init_from: a run that continues a warm-up needs the warm-up's final model; "
                             "run it through fedlib.sweep or a Store, which supply it")
        offset = warm.rounds
        sched = config.replace(rounds=warm.rounds + config.rounds, init_from=None).schedule(
            problem.num_clients, problem).window(offset, offset + config.rounds)
    if rounds is not None:
        sched = sched.truncate(rounds)
    plan = RunPlan.checked(config.algorithm, problem, sched, options=config.arguments("algorithm_args"),
                           lr_local=config.lr_local, lr_global=config.lr_global,
                           lr_schedule=config.lr_schedule, eval_every=config.eval_every, seed=config.seed,
                           checkpoint=checkpoint, checkpoint_every=checkpoint_every, device=device, x0=x0,
                           round_offset=offset, engine=engine, checkpoint_code=checkpoint_code)
    return _run_plan(plan, progress)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
