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
import os
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from . import algorithms, participation
from . import data as data_mod
from . import problems as problems_mod
from ._validate import InputError
from .participation import Schedule
from .partition import builder as partition_builder
from .problems import Problem, check_run_inputs, get_problem
from .problems import build as build_problem

__all__ = ['ExperimentConfig', 'Planned', 'grid']


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
        for name, v in value.items():
            if type(v).__module__.split(".")[0] == "pandas":      # not plain data: no key, no config.json
                raise InputError(f"{field_name}.{name}: must be plain data (numbers, text, lists, arrays), "
                                 f"got a pandas {type(v).__name__}; give its values (.to_numpy()) or a file")
        return _freeze(value)
    if isinstance(value, (tuple, list)) and all(isinstance(p, (tuple, list)) and len(p) == 2
                                                 and isinstance(p[0], str) for p in value):
        return _freeze(dict(value))
    raise InputError(f"{field_name}: expected a dict or (name, value) pairs, got {value!r}")


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
            raise InputError(f"{where}.{name}: not an argument of {what}; its arguments: "
                             f"{', '.join(allowed)}")
        note = str(allowed[name].annotation).replace(" ", "")
        if note in ("int", "int|None") and value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise InputError(f"{where}.{name}: must be an integer, got {value!r}")


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
            raise InputError(f"{where}.{name}: must be an integer >= 1, got {v!r}")
    for name, (low, high, closed) in _REALS.items():
        if name not in args:
            continue
        v = args[name]
        ok = (not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))
              and math.isfinite(v) and (v >= low if closed else v > low) and v <= high)
        if not ok:
            rng = f"in {'[' if closed else '('}{low:g}, {high:g}]" if math.isfinite(high) else f"> {low:g}"
            raise InputError(f"{where}.{name}: must be a real number {rng}, got {v!r}")


#: problem arguments never counted at their default by :meth:`ExperimentConfig.canonical`: a run may
#: take its device from where it is computed, and its draws apart from the builder
_NOT_CANONICAL = ("device", "draws")


def _at_default(value: Any, default: Any) -> bool:
    """Whether an argument written as ``value`` is its declared ``default``: the same plain value of
    the same type (``1`` is not ``1.0``, nor ``True``; lists, arrays and the like never count)."""
    return (type(value) is type(default) and isinstance(value, (str, int, float, bool, type(None)))
            and value == default)


def declared_defaults(name: str, config: ExperimentConfig) -> dict[str, Any]:
    """The declared defaults of ``config``'s arguments ``name`` (see
    :meth:`ExperimentConfig.canonical`); empty for an algorithm, kind or problem not registered
    in this process."""
    try:
        if name == "algorithm_args":
            return {f.name: f.default for f in fields(algorithms.get(config.algorithm).options_type())
                    if f.default is not dataclasses.MISSING}
        if name == "participation_args":
            spec = participation.get_kind(config.participation)
            common = {a.name: None for a in participation.COMMON_ARGS if a.default is None}
            own = {a.name: a.default for a in spec.args if a.default is not participation.REQUIRED}
            return {**common, **own}
        spec = problems_mod.get_problem(config.problem)
        out: dict[str, Any] = {}
        for fn in (spec.builder, *spec.forwards):
            for p in inspect.signature(fn).parameters.values():
                if p.default is not p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    out.setdefault(p.name, p.default)
        return {k: v for k, v in out.items() if k not in _NOT_CANONICAL}
    except (InputError, TypeError, ValueError):        # not registered here, or no signature to read
        return {}


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
            try:                                               # must itself be a valid config
                ExperimentConfig.from_dict(warm)
            except TypeError:                                  # a required field missing
                raise InputError(f"init_from: must be an ExperimentConfig or its dict (with algorithm, "
                                 f"problem, participation and rounds), got {warm!r}") from None
            except ValueError as e:                            # a field of the warm-up's, named under it
                raise InputError(f"init_from.{e}") from None
            object.__setattr__(self, "init_from", _freeze(warm))
        elif isinstance(warm, (tuple, list)) and _is_pairs(tuple(warm)):
            object.__setattr__(self, "init_from", tuple(warm))
        else:
            raise InputError(f"init_from: expected an ExperimentConfig or its dict, got {warm!r}")
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
            raise InputError(f"name: must be one of {', '.join(_ARG_FIELDS)}; got {name!r}")
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
            raise InputError(f"{unknown[0]}: not a field of ExperimentConfig; fields: "
                             f"{', '.join(sorted(known))}")
        return cls(**d)

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A copy with some fields changed; ``name.arg=value`` style keys are not accepted here,
        see :func:`fedlib.grid` for that.

        Raises:
            InputError: a name that is not a field, naming the fields.
        """
        names = [f.name for f in fields(self)]
        unknown = [k for k in changes if k not in names]
        if unknown:
            raise InputError(f"{unknown[0]}: not a field of ExperimentConfig (its fields: "
                             f"{', '.join(names)})")
        return dataclasses.replace(self, **changes)

    def key(self) -> str:
        """Store key: ``<algorithm>-<16 hex digits>``, a hash of the non-default fields, the
        participation arguments as their kind keys them (:func:`fedlib.participation.key_arguments`:
        a trace of kind ``trace`` by its content, the file of kind ``recorded`` by its SHA-256 --
        the ``sha256`` the config gives, else the file's --, never its path, so that a store moves
        between machines). Arguments are hashed as written: an argument written out at its default
        gives another key than one left out, and a store takes the two for one run
        (:meth:`canonical`)."""
        d = self.to_dict()
        defaults = {f.name: f.default for f in fields(self) if f.default is not dataclasses.MISSING}
        defaults["init_from"] = None
        core = {k: v for k, v in d.items()
                if k not in defaults or (v != ({} if k in _ARG_FIELDS else defaults[k]))}
        if core.get("participation_args"):              # the kind's own keying (a file by its content)
            core["participation_args"] = participation.key_arguments(self.participation,
                                                                     core["participation_args"])
        blob = json.dumps(core, sort_keys=True, default=str)
        return f"{self.algorithm}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"

    def canonical(self) -> ExperimentConfig:
        """The same run with every argument written out at its declared default left out, so that
        two ways of writing one run compare equal (``a.canonical() == b.canonical()``) and a store
        finds either's entry (:meth:`fedlib.store.Store.get`). The keys themselves hash the
        arguments as written (:meth:`key`), so that every stored entry keeps its key.

        Declared defaults: an algorithm's ``Options`` fields, a participation kind's own arguments
        (and the common ones whose default is None), a problem builder's keyword parameters (and
        those of the functions it forwards to), except ``device`` and ``draws``, which a run may
        take from elsewhere. A value counts as its default when it is the same plain value of the
        same type (``1`` is not ``1.0``; lists and arrays always stay). The arguments of an
        algorithm, kind or problem not registered in this process stay as written, and so does
        the warm-up's (``init_from``), recursively."""
        changes: dict[str, Any] = {}
        for name in _ARG_FIELDS:
            args = self.arguments(name)
            defaults = declared_defaults(name, self)
            kept = {k: v for k, v in args.items() if not (k in defaults and _at_default(v, defaults[k]))}
            if len(kept) != len(args):
                changes[name] = kept
        warm = self.warmup()
        if warm is not None and (plain := warm.canonical()) != warm:
            changes["init_from"] = plain.to_dict()
        return dataclasses.replace(self, **changes) if changes else self

    # -- checks and building -------------------------------------------------------------------
    def validate(self, where: str = "config", inputs: bool = True) -> None:
        """Check names and values before anything runs; errors name ``where`` and the field.

        ``inputs=False`` (reading stored runs): a file a participation argument names that is not
        here (a recorded trace named by its ``sha256``) is not read -- its values were checked when
        the run was computed, and a store is read without it."""
        known_algorithm = self._check_names(where, inputs)
        self._check_scalars(where)
        try:
            warm = self.warmup()
        except ValueError as e:                    # a field of the warm-up's dict: named under init_from
            raise InputError(f"{where}.init_from.{e}") from None
        if warm is not None:
            warm.validate(where=f"{where}.init_from", inputs=inputs)
            for name in ("problem", "problem_args", "participation", "participation_args", "local_steps"):
                if getattr(warm, name) != getattr(self, name):
                    raise _bad(where, "init_from", f"the warm-up must have the same {name} as the run it "
                                                   "starts (the schedule continues); got "
                                                   f"{getattr(warm, name)!r} and {getattr(self, name)!r}")
        try:                                       # its options, typed (the algorithm's Options)
            if known_algorithm:
                algorithms.get(self.algorithm).check_options(self.arguments("algorithm_args"))
        except ValueError as e:
            name, _, rest = str(e).partition(": ")
            raise _bad(where, f"algorithm_args.{name}", rest) from None
        n = self._check_problem_args(where)
        self._check_participation(where, n, inputs)
        if inputs:                                 # what the run depends on: memory, the dataset's files
            check_run_inputs(self.problem, self.arguments("problem_args"), where)
            self._check_builds(where)

    def _check_builds(self, where: str) -> None:
        """The problem's own declared check of its arguments (``check`` of
        :func:`fedlib.problems.register_problem`: a rule between arguments, a build of a problem
        small enough to build at once), so that a value only its builder checks (a negative
        ``sigma``, an unknown ``dtype``) is refused before a sweep stores an error entry; each
        distinct problem is checked once per process."""
        from ._validate import InputError
        check = get_problem(self.problem).check
        if check is None:
            return
        args = _thaw(self.problem_args) if self.problem_args else {}
        cache_key = json.dumps([self.problem, id(check), args], sort_keys=True, default=str)
        if cache_key in _BUILT_OK:
            return
        try:
            check(dict(args))
        except Exception as e:                     # noqa: BLE001 (any failure to build is the input's)
            name, sep, rest = str(e).partition(": ")
            if sep and name in args:
                raise InputError(f"{where}.problem_args.{name}: {rest}") from None
            raise InputError(f"{where}.problem_args: problem {self.problem!r} cannot be built with "
                             f"{args}: {type(e).__name__}: {e}") from None
        if len(_BUILT_OK) > 4096:
            _BUILT_OK.clear()
        _BUILT_OK.add(cache_key)

    def _check_names(self, where: str, inputs: bool = True) -> bool:
        """The algorithm, problem, participation kind and learning-rate schedule are known;
        returns whether the algorithm is (reading stored runs, ``inputs=False``, needs no class:
        their results are data)."""
        from .problems import available as problems_available
        known_algorithm = self.algorithm in algorithms.available()
        if not known_algorithm and inputs:
            raise _bad(where, "algorithm", f"unknown algorithm {self.algorithm!r}; known: "
                                           f"{', '.join(algorithms.available())} (a user's Algorithm class "
                                           "must be imported and registered (fedlib.algorithms.register) "
                                           "before its runs are computed; its stored runs read without it)")
        for name, known, what in (("problem", problems_available(), "problem"),
                                  ("participation", participation.available(), "participation kind"),
                                  ("lr_schedule", algorithms.lr_schedules, "schedule")):
            if getattr(self, name) not in known:
                raise _bad(where, name, f"unknown {what} {getattr(self, name)!r}; known: {', '.join(known)}")
        return known_algorithm

    def _check_scalars(self, where: str) -> None:
        for name, low in (("rounds", 1), ("local_steps", 1), ("eval_every", 1), ("seed", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise _bad(where, name, f"must be an int >= {low}, got {v!r}")
        for name in ("lr_local", "lr_global"):
            v = getattr(self, name)
            if not isinstance(v, float) or not math.isfinite(v) or v <= 0:
                raise _bad(where, name, f"must be a positive finite number, got {v!r}")

    def _check_problem_args(self, where: str) -> int | None:
        """The problem's arguments (names, integer types, known values); returns the number of
        clients where it is known without building the problem."""
        problem_args = self.arguments("problem_args")
        spec = get_problem(self.problem)
        builder = spec.builder
        allowed = _parameters(builder)
        if "partition" in allowed:                              # neural: its partition's arguments too
            split = partition_builder(problem_args.get("partition", "dirichlet"))
            allowed = {**allowed, **_parameters(split, skip=("labels", "num_clients", "seed"))}
        elif spec.forwards:                                     # passing **kw on: its targets' (declared)
            for target in spec.forwards:
                allowed = {**allowed, **_parameters(target)}
        elif _takes_any_keyword(builder):                       # a builder that takes anything
            allowed = None
        if "draws" in problem_args:                             # applied by problems.build
            from .keyed import DRAWS
            if not spec.neural:
                raise _bad(where, "problem_args.draws", f"problem {self.problem!r} draws no minibatches; "
                                                        "draws is for neural problems")
            if problem_args["draws"] not in DRAWS:
                raise _bad(where, "problem_args.draws", f"must be one of {', '.join(DRAWS)}; got "
                                                        f"{problem_args['draws']!r}")
            problem_args = {k: v for k, v in problem_args.items() if k != "draws"}
        _check_arguments(problem_args, allowed, f"problem {self.problem!r}", f"{where}.problem_args")
        _check_values(problem_args, f"{where}.problem_args")
        dataset = problem_args.get("dataset")
        if isinstance(dataset, str) and allowed is not None and "dataset" in allowed:
            from . import data
            if dataset not in data.available():
                raise _bad(where, "problem_args.dataset", f"unknown dataset {dataset!r}; known: "
                                                          f"{', '.join(data.available())} (or register one: "
                                                          "fedlib.data.register_dataset)")
        if allowed is not None and "model" in allowed:
            self._check_model(where, problem_args, allowed)
        n = problem_args.get("num_clients", getattr(allowed.get("num_clients") if allowed else None,
                                                    "default", None))
        return int(n) if isinstance(n, (int, np.integer)) and not isinstance(n, bool) else None

    @staticmethod
    def _check_model(where: str, problem_args: dict, allowed: dict) -> None:
        """A neural problem's model is one of :func:`fedlib.models.available` and takes the
        dataset's input shape (:func:`fedlib.data.info`, no data loaded)."""
        from . import data, models
        from ._validate import InputError
        model = problem_args.get("model", getattr(allowed["model"], "default", None))
        if not isinstance(model, str):
            return                                          # typed by _check_values / the builder
        if model not in models.available():
            raise InputError(f"{where}.problem_args.model: must be one of {', '.join(models.available())}; "
                             f"got {model!r}")
        dataset = problem_args.get("dataset", getattr(allowed.get("dataset"), "default", None))
        if isinstance(dataset, str) and dataset in data.available():
            want, have = tuple(models.input_shape(model)), tuple(data.info(dataset).shape)
            if want != have:
                raise InputError(f"{where}.problem_args.model: must take dataset {dataset!r}'s inputs "
                                 f"{have}; got {model!r}, which expects {want}")

    def _check_participation(self, where: str, n: int | None, inputs: bool) -> None:
        """The participation arguments against their kind's declarations, then their values: the
        schedule is built now (no data needed) when its size is known, so that a bad value fails
        before any run of a sweep, not inside one."""
        spec = self.arguments("participation_args")
        for name in ("seed", "local_steps"):                 # the config's own fields, not the kind's
            if name in spec:
                raise _bad(where, f"participation_args.{name}",
                           f"the schedule takes the config's own {name} field ({getattr(self, name)!r}); "
                           f"set {name}={spec[name]!r} there instead (given here it would override it "
                           "unseen by the store key)")
        drawn = next((k for k in participation.LOCAL_WORK if k in spec), None)   # local_steps refused above
        if drawn and self.local_steps != type(self).local_steps:
            raise _bad(where, "local_steps", f"unused where participation_args.{drawn} sets the local work; "
                       f"leave it at its default ({type(self).local_steps}), got {self.local_steps}")
        try:
            participation.check_arguments(self.participation, spec, n)
            if not inputs and not participation.inputs_here(self.participation, spec):
                participation.key_arguments(self.participation, spec)    # keyed without the file: not read
                return
        except (ValueError, TypeError, OSError) as e:
            self._schedule_error(where, e, spec, self.participation)
        needs_data = ({"local_epochs", "local_epochs_range"} & set(spec)
                      and not {"client_sizes", "batch_size"} <= set(spec))
        if needs_data and not get_problem(self.problem).neural:     # analytic: no samples, no batches
            name = min({"local_epochs", "local_epochs_range"} & set(spec))
            raise _bad(where, f"participation_args.{name}",
                       "local work in epochs needs the clients' sample counts and the batch size, which "
                       f"problem {self.problem!r} does not have: give client_sizes and batch_size too, or "
                       "use local_steps")
        if n is None or needs_data:
            return
        try:
            self.schedule(num_clients=n)
        except (ValueError, TypeError, OSError) as e:
            self._schedule_error(where, e, spec, self.participation)

    @staticmethod
    def _schedule_error(where: str, e: Exception, spec: dict, kind_name: str) -> None:
        """Raise ``e`` as one ValueError naming the field: the argument the kind names (given, or
        declared and missing), or the number of clients (more than the kind can give)."""
        name, sep, rest = str(e).partition(": ")
        kind = f"participation kind {kind_name!r}"
        declared = name in spec or participation.get_kind(kind_name).arg(name) is not None
        if sep and declared:                          # the kind names its argument: say where it is
            named = f"kind {kind_name!r}" in rest
            raise _bad(where, f"participation_args.{name}", rest if named else f"{rest} ({kind})") from None
        if sep and name == "num_clients":             # more clients than the kind can give
            raise _bad(where, "problem_args.num_clients", f"{rest} ({kind})") from None
        raise _bad(where, "participation_args", f"{kind}: {e}") from None

    def build_problem(self, device: str | None = None) -> Problem:
        """The problem of this config (cached per process: the last one built is reused, while no
        problem or dataset was registered since and ``FEDLIB_DATA`` names the same folders)."""
        args = _thaw(self.problem_args) if self.problem_args else {}
        if device is not None:
            args["device"] = device
        cache_key = json.dumps([self.problem, args, problems_mod._registrations, data_mod._registrations,
                                os.environ.get("FEDLIB_DATA")], sort_keys=True, default=str)
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
        elif "local_steps_range" not in spec:
            spec["local_steps"] = self.local_steps
        spec["seed"] = self.seed
        n = (problem or self.build_problem()).num_clients if num_clients is None else num_clients
        return participation.build(self.participation, n, self.rounds, **spec)


_BUILT_OK: set = set()
_PROBLEM_CACHE: dict[str, Any] = {}


def _bad(where: str, field_name: str, msg: str) -> ValueError:
    """One error naming ``<where>.<field>``."""
    return InputError(f"{where}.{field_name}: {msg}")


_NONE = object()


def _equal(x: Any, y: Any) -> bool:
    """``x == y`` as one truth value (False where the comparison has none, e.g. two arrays)."""
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return False


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
            raise InputError(f"{axis}: not an axis of grid; use a field of ExperimentConfig "
                             f"({', '.join(sorted(names))}) or '<*_args>.<name>'")
    out = []
    values = []
    for axis, v in axes.items():
        one = isinstance(v, (str, bytes, dict)) or not isinstance(v, Iterable)
        values.append([v] if one else list(v))
        if not values[-1]:
            raise InputError(f"{axis}: an axis of grid needs at least one value")
        vals = values[-1]
        twice = next((x for i, x in enumerate(vals) if any(_equal(x, y) for y in vals[:i])), _NONE)
        if twice is not _NONE:
            raise InputError(f"{axis}: each value of an axis once (a value twice makes the same runs twice), "
                             f"got {twice!r} more than once")
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


@dataclass(frozen=True)
class Planned:
    """A config checked and keyed once, as :func:`fedlib.sweep` hands it to the store and the
    runner: they take its key as it is and do not validate it again (a plain
    :class:`ExperimentConfig` given to them is keyed, and validated before it runs, there).

    Attributes:
        config: the config, validated (its inputs too -- trace and data files -- when it was
            planned to be computed).
        key: its store key (:meth:`ExperimentConfig.key`).
        warmup: its warm-up phase (``init_from``), planned too (validated with the run), or None.
    """

    config: ExperimentConfig
    key: str
    warmup: Planned | None = None

    @classmethod
    def of(cls, config: ExperimentConfig, where: str = "config", inputs: bool = True,
           key: str | None = None, known: dict | None = None) -> Planned:
        """``config`` validated (:meth:`ExperimentConfig.validate` with ``where`` and ``inputs``,
        which checks its warm-up too) and keyed, its warm-up chain keyed. ``key``: its key when the
        caller has it already; ``known``: planned configs by config, reused for equal ones and
        their warm-ups (a sweep plans a shared warm-up once)."""
        config.validate(where=where, inputs=inputs)
        return cls.keyed(config, key, known)

    @classmethod
    def keyed(cls, config: ExperimentConfig, key: str | None = None, known: dict | None = None) -> Planned:
        """``config`` and its warm-up chain keyed, for a config validated already (:meth:`of`);
        ``key`` and ``known`` as there."""
        known = {} if known is None else known
        hit = _known(known, config)
        if hit is not None:
            return hit
        warm = config.warmup()
        planned = cls(config, config.key() if key is None else key,
                      None if warm is None else cls.keyed(warm, None, known))
        try:
            known[config] = planned
        except TypeError:                  # an argument that does not hash: not shared, only keyed
            pass
        return planned


def _known(known: dict, config: ExperimentConfig) -> Planned | None:
    """The planned config equal to ``config`` in ``known``, if any (None for one that does not hash)."""
    try:
        return known.get(config)
    except TypeError:
        return None


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
