"""Experiment configs: :class:`ExperimentConfig` (everything that determines one run, as plain,
hashable data with a stable store key) and :func:`grid` (the product of axes over a base).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import itertools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from . import algorithms, participation
from .data import check_run_inputs
from .participation import Schedule
from .partition import builder as partition_builder
from .problems import Problem
from .problems import build as build_problem
from .problems import builder as problems_builder

__all__ = ['ExperimentConfig', 'grid']


_ARG_FIELDS = ("problem_args", "participation_args", "algorithm_args")


def _freeze(v: Any) -> Any:
    """A hashable, canonical form of an argument value: mappings become sorted (name, value)
    pairs, sequences and arrays tuples, numpy scalars Python numbers."""
    if isinstance(v, dict):
        return tuple(sorted((str(k), _freeze(x)) for k, x in v.items()))
    if isinstance(v, torch.Tensor):
        v = v.detach().cpu().numpy()
    if isinstance(v, np.ndarray):
        return _freeze(v.tolist())
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.generic):
        return v.item()
    return v


def _is_pairs(v: Any) -> bool:
    return isinstance(v, tuple) and len(v) > 0 and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in v)


def _thaw(v: Any) -> Any:
    """Inverse of :func:`_freeze` for building: (name, value) pairs become dicts, tuples lists."""
    if _is_pairs(v):
        return {k: _thaw(x) for k, x in v}
    if isinstance(v, tuple):
        return [_thaw(x) for x in v]
    return v


def _args(field_name: str, value: Any) -> tuple:
    if value is None:
        return ()
    if isinstance(value, dict):
        return _freeze(value)
    if isinstance(value, (tuple, list)) and all(isinstance(p, (tuple, list)) and len(p) == 2
                                                 and isinstance(p[0], str) for p in value):
        return _freeze(dict(value))
    raise ValueError(f"{field_name}: expected a dict or (name, value) pairs, got {value!r}")


def _parameters(fn, skip: tuple = ()) -> dict[str, inspect.Parameter]:
    """``fn``'s named parameters, without ``skip``."""
    return {k: v for k, v in inspect.signature(fn).parameters.items()
            if k not in skip and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)}


def _takes_any_keyword(fn) -> bool:
    return any(v.kind is v.VAR_KEYWORD for v in inspect.signature(fn).parameters.values())


def _check_arguments(args: dict, allowed: dict | None, what: str, where: str) -> None:
    """Every argument is a parameter of ``what``, and one annotated ``int`` gets an integer; else
    one ValueError naming ``<where>.<argument>``."""
    if allowed is None:
        return
    for name, value in args.items():
        if name not in allowed:
            raise ValueError(f"{where}.{name}: not an argument of {what}; its arguments: "
                             f"{', '.join(allowed)}")
        note = str(allowed[name].annotation).replace(" ", "")
        if note in ("int", "int|None") and value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise ValueError(f"{where}.{name}: must be an integer, got {value!r}")


#: problem arguments that count something (at least 1 when given), and the allowed range of real
#: ones (low, high, whether low itself is allowed)
_COUNTS = ("num_clients", "batch_size", "train_eval_per_client", "test_eval_size", "min_size")
_REALS = {"alpha": (0.0, math.inf, False), "similarity": (0.0, 1.0, True)}


def _check_values(args: dict, where: str) -> None:
    """The values of known problem arguments (:data:`_COUNTS`, :data:`_REALS`): numbers in their
    range, never a bool or a string; else one ValueError naming ``<where>.<argument>``."""
    for name in _COUNTS:
        v = args.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise ValueError(f"{where}.{name}: must be an integer >= 1, got {v!r}")
    for name, (low, high, closed) in _REALS.items():
        if name not in args:
            continue
        v = args[name]
        ok = (not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))
              and math.isfinite(v) and (v >= low if closed else v > low) and v <= high)
        if not ok:
            rng = f"in {'[' if closed else '('}{low:g}, {high:g}]" if math.isfinite(high) else f"> {low:g}"
            raise ValueError(f"{where}.{name}: must be a real number {rng}, got {v!r}")


#: participation arguments that are text (a file, a format, a rule); every other one is numbers
_TEXT_ARGS = ("trace", "path", "format", "rule", "sha256")


def _has_text_or_bool(value: Any) -> bool:
    """Whether ``value`` is, or (nested in lists / tuples) holds, a string or a bool."""
    if isinstance(value, (str, bytes, bool, np.bool_)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_text_or_bool(v) for v in value)
    return False


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that determines one run, as plain data (hashable, JSON-serialisable).

    Attributes:
        algorithm: algorithm name (:func:`fedlib.algorithms.available`).
        problem: problem builder name (:func:`fedlib.problems.available`).
        participation: participation kind (:func:`fedlib.participation.available`).
        rounds: T.
        problem_args, participation_args, algorithm_args: arguments of the builder, the kind and
            the algorithm; give a dict or (name, value) pairs; stored as sorted pairs (nested
            dicts too), so equal settings give equal configs.
        local_steps, lr_local, lr_global, lr_schedule, eval_every, seed: as in :func:`run`.
        init_from: a warm-up phase: another config (or its dict) whose final model this run
            starts from. The warm-up must have the same problem and participation (kind,
            arguments, local steps): the participation schedule continues where the warm-up's
            ended (rounds warm.rounds .. warm.rounds + rounds - 1 of the same pattern, with
            minibatch keys continuing too), while the algorithm, its rates and its state (e.g.
            the amplification clock, a wait baseline's waiting cost) start afresh. The history
            counts this phase's rounds from 0. The run's ``seed`` may differ from the warm-up's:
            the phase then follows its own seed's participation pattern from round warm.rounds on
            (several schedule seeds after one shared warm-up); the split, the model and the
            minibatch streams, keyed by the problem's own seed in ``problem_args``, stay the
            warm-up's. Runs with ``init_from`` go
            through a store (:func:`fedlib.sweep` computes warm-ups first and keeps their final
            model), so a warm-up shared by many methods runs once.

    The store key (:meth:`key`) hashes the fields that differ from their defaults (and the
    required ones), so adding a new defaulted field later keeps every existing key.
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
    init_from: tuple = ()

    def __post_init__(self) -> None:
        for name in _ARG_FIELDS:
            object.__setattr__(self, name, _args(name, getattr(self, name)))
        warm = self.init_from
        if isinstance(warm, ExperimentConfig):
            warm = warm.to_dict()
        if warm is None or (isinstance(warm, (tuple, list, dict)) and len(warm) == 0):
            object.__setattr__(self, "init_from", ())
        elif isinstance(warm, dict):
            ExperimentConfig.from_dict(warm)                   # must itself be a valid config
            object.__setattr__(self, "init_from", _freeze(warm))
        elif isinstance(warm, (tuple, list)) and _is_pairs(tuple(warm)):
            object.__setattr__(self, "init_from", tuple(warm))
        else:
            raise ValueError(f"init_from: expected an ExperimentConfig or its dict, got {warm!r}")
        for name in ("lr_local", "lr_global"):
            v = getattr(self, name)
            if isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool):
                object.__setattr__(self, name, float(v))
        for name in ("rounds", "local_steps", "eval_every", "seed"):
            v = getattr(self, name)
            if isinstance(v, np.integer):
                object.__setattr__(self, name, int(v))

    # -- plain data ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-ready dict (argument pairs as dicts)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "init_from":
                out[f.name] = self.warmup().to_dict() if v else None
            elif f.name in _ARG_FIELDS:
                out[f.name] = _thaw(v) if v else {}
            else:
                out[f.name] = v
        return out

    def arguments(self, name: str) -> dict:
        """The arguments of ``name`` (``problem_args``, ``participation_args`` or
        ``algorithm_args``) as a plain dict, ready to pass to the builder."""
        if name not in _ARG_FIELDS:
            raise ValueError(f"name: must be one of {', '.join(_ARG_FIELDS)}; got {name!r}")
        value = getattr(self, name)
        return _thaw(value) if value else {}

    def warmup(self) -> ExperimentConfig | None:
        """The warm-up phase this run starts from (``init_from``), or None."""
        if not self.init_from:
            return None
        d = _thaw(self.init_from)
        for name in (*_ARG_FIELDS,):
            if isinstance(d.get(name), list) and not d[name]:
                d[name] = {}
        return ExperimentConfig.from_dict(d)

    @classmethod
    def from_dict(cls, d: dict) -> ExperimentConfig:
        """Inverse of :meth:`to_dict`; unknown fields are an error naming them."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"{unknown[0]}: not a field of ExperimentConfig; fields: "
                             f"{', '.join(sorted(known))}")
        return cls(**d)

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A copy with some fields changed; ``name.arg=value`` style keys are not accepted here,
        see :func:`fedlib.grid` for that.

        Raises:
            ValueError: a name that is not a field, naming the fields.
        """
        names = [f.name for f in fields(self)]
        unknown = [k for k in changes if k not in names]
        if unknown:
            raise ValueError(f"{unknown[0]}: not a field of ExperimentConfig (its fields: "
                             f"{', '.join(names)})")
        return dataclasses.replace(self, **changes)

    def key(self) -> str:
        """Store key: ``<algorithm>-<16 hex digits>``, a hash of the non-default fields (a trace
        of participation kind ``trace`` by its content: :func:`fedlib.participation.trace_digest`;
        the file of kind ``recorded`` by its SHA-256 -- the ``sha256`` the config gives, else the
        file's --, never its path, so that a store moves between machines)."""
        d = self.to_dict()
        defaults = {f.name: f.default for f in fields(self) if f.default is not dataclasses.MISSING}
        defaults["init_from"] = None
        core = {k: v for k, v in d.items()
                if k not in defaults or (v != ({} if k in _ARG_FIELDS else defaults[k]))}
        if self.participation == "trace" and "trace" in core.get("participation_args", {}):
            # a trace is keyed by its content, not by the form or the path it came in
            core["participation_args"] = {**core["participation_args"],
                                          "trace": {"digest": participation.trace_digest(
                                              core["participation_args"]["trace"])}}
        if self.participation == "recorded" and "path" in core.get("participation_args", {}):
            from .traces import file_sha256
            args = dict(core["participation_args"])
            path = args.pop("path")
            args["sha256"] = str(args.get("sha256") or file_sha256(path)).lower()
            core["participation_args"] = args
        blob = json.dumps(core, sort_keys=True, default=str)
        return f"{self.algorithm}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"

    # -- checks and building -------------------------------------------------------------------
    def validate(self, where: str = "config", inputs: bool = True) -> None:
        """Check names and values before anything runs; errors name ``where`` and the field.

        ``inputs=False`` (reading stored runs): a recorded trace whose file is not here, named by
        its ``sha256``, is not read -- its values were checked when the run was computed, and a
        store is read without the trace file."""
        def bad(field_name: str, msg: str) -> ValueError:
            return ValueError(f"{where}.{field_name}: {msg}")
        known_algorithm = self.algorithm in algorithms.available()
        if not known_algorithm and inputs:         # reading a stored run needs no class: its results are data
            raise bad("algorithm", f"unknown algorithm {self.algorithm!r}; known: "
                                   f"{', '.join(algorithms.available())} (a user's Algorithm class must be "
                                   "imported and registered (fedlib.algorithms.register) before its runs "
                                   "are computed; its stored runs read without it)")
        from .problems import available as problems_available
        if self.problem not in problems_available():
            raise bad("problem", f"unknown problem {self.problem!r}; known: "
                                 f"{', '.join(problems_available())}")
        if self.participation not in participation.available():
            raise bad("participation", f"unknown participation kind {self.participation!r}; known: "
                                       f"{', '.join(participation.available())}")
        if self.lr_schedule not in algorithms.lr_schedules:
            raise bad("lr_schedule", f"unknown schedule {self.lr_schedule!r}; known: "
                                     f"{', '.join(algorithms.lr_schedules)}")
        for name, low in (("rounds", 1), ("local_steps", 1), ("eval_every", 1), ("seed", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise bad(name, f"must be an int >= {low}, got {v!r}")
        for name in ("lr_local", "lr_global"):
            v = getattr(self, name)
            if not isinstance(v, float) or not math.isfinite(v) or v <= 0:
                raise bad(name, f"must be a positive finite number, got {v!r}")
        warm = self.warmup()
        if warm is not None:
            warm.validate(where=f"{where}.init_from", inputs=inputs)
            for name in ("problem", "problem_args", "participation", "participation_args", "local_steps"):
                if getattr(warm, name) != getattr(self, name):
                    raise bad("init_from", f"the warm-up must have the same {name} as the run it "
                                           f"starts (the schedule continues); got {getattr(warm, name)!r} "
                                           f"and {getattr(self, name)!r}")
        try:                                       # its options, typed (the algorithm's Options)
            if known_algorithm:
                algorithms.get(self.algorithm).check_options(self.arguments("algorithm_args"))
        except ValueError as e:
            name, _, rest = str(e).partition(": ")
            raise bad(f"algorithm_args.{name}", rest) from None
        problem_args = self.arguments("problem_args")
        builder = problems_builder(self.problem)
        allowed = _parameters(builder)
        if "partition" in allowed:                              # neural: its partition's arguments too
            split = partition_builder(problem_args.get("partition", "dirichlet"))
            allowed = {**allowed, **_parameters(split, skip=("labels", "num_clients", "seed"))}
        elif _takes_any_keyword(builder):                       # a builder that takes anything
            allowed = None
        if "draws" in problem_args:                             # applied by problems.build
            from .keyed import DRAWS
            if str(inspect.signature(builder).return_annotation) not in ("Neural", "tasks.Neural"):
                raise bad("problem_args.draws", f"problem {self.problem!r} draws no minibatches; draws is "
                                                "for neural problems")
            if problem_args["draws"] not in DRAWS:
                raise bad("problem_args.draws", f"must be one of {', '.join(DRAWS)}; got "
                                                f"{problem_args['draws']!r}")
            problem_args = {k: v for k, v in problem_args.items() if k != "draws"}
        _check_arguments(problem_args, allowed, f"problem {self.problem!r}", f"{where}.problem_args")
        kind = participation.kind_function(self.participation)
        kind_args = {**_parameters(kind, skip=("rng", "rounds", "n")),
                     **_parameters(participation.build, skip=("kind", "num_clients", "rounds"))}
        _check_arguments(self.arguments("participation_args"), kind_args,
                         f"participation kind {self.participation!r}", f"{where}.participation_args")
        _check_values(problem_args, f"{where}.problem_args")
        for name, value in self.participation_args:
            if name not in _TEXT_ARGS and _has_text_or_bool(value):
                raise bad(f"participation_args.{name}",
                          f"must be numbers (not strings or bools), got {value!r}")
        # the participation's values: build the schedule now (no data needed) when its size is
        # known, so that a bad value fails before any run of a sweep, not inside one
        spec = self.arguments("participation_args")
        n = problem_args.get("num_clients", getattr(allowed.get("num_clients") if allowed else None,
                                                    "default", None))
        needs_data = ({"local_epochs", "local_epochs_range"} & set(spec)
                      and not {"client_sizes", "batch_size"} <= set(spec))
        absent = (not inputs and self.participation == "recorded" and spec.get("sha256")
                  and "path" in spec and not self._trace_here(spec["path"]))
        if isinstance(n, (int, np.integer)) and not isinstance(n, bool) and not needs_data and not absent:
            try:
                self.schedule(num_clients=int(n))
            except (ValueError, TypeError, OSError) as e:
                name, sep, rest = str(e).partition(": ")
                if sep and name in spec:                      # the kind names its argument: say where it is
                    raise bad(f"participation_args.{name}", f"{rest} (participation kind "
                                                            f"{self.participation!r})") from None
                if sep and name == "num_clients":             # more clients than the kind can give
                    raise bad("problem_args.num_clients", f"{rest} (participation kind "
                                                          f"{self.participation!r})") from None
                raise bad("participation_args", f"participation kind {self.participation!r}: {e}") from None
        if inputs:                                 # what the run depends on: memory, the dataset's files
            check_run_inputs(self, where)

    @staticmethod
    def _trace_here(path: Any) -> bool:
        from .traces import resolve
        return resolve(path).is_file()

    def build_problem(self, device: str | None = None) -> Problem:
        """The problem of this config (cached per process: the last one built is reused)."""
        args = _thaw(self.problem_args) if self.problem_args else {}
        if device is not None:
            args["device"] = device
        cache_key = json.dumps([self.problem, args], sort_keys=True, default=str)
        if _PROBLEM_CACHE.get("key") != cache_key:
            _PROBLEM_CACHE.clear()
            _PROBLEM_CACHE.update(key=cache_key, problem=build_problem(self.problem, **args))
        return _PROBLEM_CACHE["problem"]

    def schedule(self, num_clients: int | None = None, problem: Problem | None = None) -> Schedule:
        """The participation schedule of this config (the environment, before an algorithm's
        own client selection); ``num_clients`` defaults to the problem's. With
        ``local_epochs`` in ``participation_args`` the clients' sizes and the batch size come
        from the (neural) problem unless given (given both, no problem is built: the schedule
        needs no data), and ``local_steps`` is not used."""
        spec = _thaw(self.participation_args) if self.participation_args else {}
        if "local_epochs" in spec or "local_epochs_range" in spec:
            if "client_sizes" not in spec or "batch_size" not in spec:
                problem = problem if problem is not None else self.build_problem()
            if "client_sizes" not in spec:
                spec["client_sizes"] = [int(v) for v in getattr(problem, "sizes", [])] or None
            if "batch_size" not in spec:
                spec["batch_size"] = getattr(problem, "batch_size", None)
        else:
            spec.setdefault("local_steps", self.local_steps)
        spec.setdefault("seed", self.seed)
        n = (problem or self.build_problem()).num_clients if num_clients is None else num_clients
        return participation.build(self.participation, n, self.rounds, **spec)


_PROBLEM_CACHE: dict[str, Any] = {}


def grid(base: ExperimentConfig, **axes: Iterable) -> list[ExperimentConfig]:
    """The product of ``axes`` over ``base``: ``grid(base, algorithm=[...], seed=[0, 1])``.

    An axis is a config field, or ``<args field>.<name>`` to vary one argument, e.g.
    ``**{"participation_args.p": [0.1, 0.5]}`` or ``{"algorithm_args.clip": [None, 0.5]}``.
    A value of ``None`` for an argument removes it (the builder's default applies). The first
    axis varies slowest. A single value (a string, a number, a dict) is an axis of one value;
    an empty axis is an error.
    """
    names = {f.name for f in fields(ExperimentConfig)}
    for axis in axes:
        head = axis.split(".", 1)[0]
        if head not in names or ("." in axis) != head.endswith("_args"):
            raise ValueError(f"{axis}: not an axis of grid; use a field of ExperimentConfig "
                             f"({', '.join(sorted(names))}) or '<*_args>.<name>'")
    out = []
    values = []
    for axis, v in axes.items():
        one = isinstance(v, (str, bytes, dict)) or not isinstance(v, Iterable)
        values.append([v] if one else list(v))
        if not values[-1]:
            raise ValueError(f"{axis}: an axis of grid needs at least one value")
    for combo in itertools.product(*values):
        d = base.to_dict()
        for axis, v in zip(axes, combo, strict=True):
            if "." in axis:
                head, arg = axis.split(".", 1)
                d[head] = dict(d[head])
                if v is None:
                    d[head].pop(arg, None)
                else:
                    d[head][arg] = v
            else:
                d[axis] = v
        out.append(ExperimentConfig.from_dict(d))
    return out


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
