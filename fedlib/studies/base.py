"""The one shape of a paper's study, and the registry of studies.

A :class:`Study` names its paper and notebooks, turns a profile into its typed setup
(``study.setup(profile, ...)``: the paper's settings and the configs of its runs), picks its
methods from the one catalogue (:mod:`fedlib.studies.methods`) and checks the paper's headline
claims on any runs of those methods: ``study.headline(frames)`` reads a :class:`Frames` (the
per-run summary and curves of :func:`fedlib.claims.tidy`, the seeds, the evaluation interval)
and returns typed :class:`fedlib.claims.ClaimRow` rows. A study of several papers (notebook 09)
asks each paper's claims through its registered study, never through its internals.

A user adds a study with :func:`register_study` and finds one with :func:`get`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._validate import InputError, check_text
from ..claims import MISSING_WHAT, ClaimRow

__all__ = ["Frames", "Study", "check_accuracies", "get", "names", "register_study"]


def check_accuracies(values: Mapping, what: str) -> Mapping:
    """``values`` (seed -> test accuracy) if each is a fraction in [0, 1] or NaN (a run that failed),
    else one InputError saying ``what`` they are, the seed and its value (an accuracy in percent,
    inf, a text)."""
    for k, v in values.items():
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)) \
                or not (math.isnan(v) or 0 <= v <= 1):
            raise InputError(f"{what}: an accuracy is a fraction in [0, 1] (0.91, not 91) or NaN for a run "
                             f"that failed; seed {k!r} has {v!r}")
    return values


@dataclass(frozen=True)
class Frames:
    """The runs of one comparison as claims read them: seed by seed, method by method.

    Attributes:
        summary: the per-run summary (:func:`fedlib.claims.tidy`), indexed by :meth:`at`.
        curves: the per-run curves, keyed by :meth:`at` (None for a run that failed).
        seeds: the seeds compared.
        eval_every: the runs' evaluation interval (the margin of "rounds to target").
        per_round: clients per round (two rounds' worth of model units is that claim's margin).
        prefix: the index levels before (seed, method) that select these runs (dataset, pattern).
        off_rule: method -> why its runs are outside its own paper's settings (:func:`fedlib.claims.paired`).
        methods: the methods that ran, where a claim compares against "every other" one.
        key: (seed, method) -> index of a run, where the runs are labelled otherwise (default:
            ``(*prefix, seed, method)``).
        missing: how a comparison of these runs names a run with no value (the ``missing`` of
            :func:`fedlib.claims.paired`): ``"failed"``, or ``"failed or set aside"`` once a study
            has set runs aside that did not fail (:func:`fedlib.studies.real.without`).
    """

    summary: pd.DataFrame
    curves: Mapping
    seeds: tuple
    eval_every: int = 1
    per_round: int = 1
    prefix: tuple = ()
    off_rule: Mapping[str, str] | None = None
    methods: tuple = ()
    key: Callable[[int, str], tuple] | None = None
    missing: str = "failed"

    def __post_init__(self):
        from .._validate import InputError
        if not isinstance(self.summary, pd.DataFrame):
            raise InputError(f"summary: must be a pandas DataFrame (fedlib.claims.tidy), got "
                             f"{type(self.summary).__name__}")
        if not isinstance(self.curves, Mapping):
            raise InputError(f"curves: must be a mapping of run index to curve, got "
                             f"{type(self.curves).__name__}")
        for name in ("seeds", "methods", "prefix"):
            v = getattr(self, name)
            if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
                raise InputError(f"{name}: must be a sequence, got {type(v).__name__} {v!r}")
        for name in ("eval_every", "per_round"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InputError(f"{name}: must be an integer >= 1, got {v!r}")
        check_text("missing", self.missing, MISSING_WHAT)
        object.__setattr__(self, "seeds", tuple(self.seeds))
        if not self.seeds:
            raise InputError("seeds: no seed to compare")
        twice = [k for k in dict.fromkeys(self.seeds) if self.seeds.count(k) > 1]
        if twice:
            raise InputError(f"seeds: each seed once (a seed twice would count one run twice in every "
                             f"interval); {', '.join(map(repr, twice))} repeated in {list(self.seeds)!r}")
        object.__setattr__(self, "methods", tuple(self.methods))

    def at(self, seed: int, method: str) -> tuple:
        """The index of ``method``'s run at ``seed`` in :attr:`summary` and :attr:`curves`."""
        return self.key(seed, method) if self.key else (*self.prefix, seed, method)

    def has(self, method: str) -> bool:
        """Whether :attr:`summary` holds a run of ``method`` at every seed (a run that failed counts);
        False for a method :attr:`key` does not label."""
        try:
            return all(self.at(k, method) in self.summary.index for k in self.seeds)
        except KeyError:
            return False

    def values(self, method: str, column: str = "final_acc") -> dict:
        """seed -> ``column`` of ``method``'s run in the summary.

        Raises:
            InputError: ``column`` is not a column of the summary, a seed of :attr:`seeds` has no run
                of ``method`` in it (named, with the runs the summary holds), or an accuracy column
                (``*_acc``) holds a value outside [0, 1] that is not NaN."""
        if column not in self.summary.columns:
            have = ", ".join(map(str, self.summary.columns))
            raise InputError(f"column: must be a column of the summary ({have}); got {column!r}")
        self._check_runs(method, self.summary.index, "summary")
        out = {k: self.summary.loc[self.at(k, method), column] for k in self.seeds}
        if column.endswith("_acc"):                  # an accuracy: a fraction, or NaN for a failed run
            check_accuracies(out, f"summary: {column!r} of {method!r}")
        return out

    def hist(self, method: str) -> dict:
        """seed -> ``method``'s curve.

        Raises:
            InputError: a seed of :attr:`seeds` has no run of ``method`` in :attr:`curves` (named,
                with the runs the curves hold)."""
        self._check_runs(method, self.curves, "curves")
        return {k: self.curves[self.at(k, method)] for k in self.seeds}

    def _check_runs(self, method: str, index: Any, where: str) -> None:
        """One error naming the seeds of :attr:`seeds` with no run of ``method`` in ``index``."""
        try:
            absent = [k for k in self.seeds if self.at(k, method) not in index]
        except (KeyError, TypeError, ValueError) as err:         # a key that cannot label the run
            raise InputError(f"method: {method!r} has no run label at the seeds {list(self.seeds)!r} ({err})"
                             ) from None
        if absent:
            held = list(index)
            shown = ", ".join(map(repr, held[:6])) + (f" ... ({len(held)} in all)" if len(held) > 6 else "")
            raise InputError(f"seeds: the {where} has no run of {method!r} at seed"
                             f"{'s' if len(absent) > 1 else ''} {', '.join(map(repr, absent))} (looked up as "
                             f"{self.at(absent[0], method)!r}); it holds {shown or 'no run'}")

    @property
    def missing_or_never(self) -> str:
        """:attr:`missing` for a comparison of rounds to a target, where a run with no value may also
        be one that never reached it: ``"failed or never"``, ``"failed, set aside or never"``."""
        words = [*self.missing.split(" or "), "never"]
        return f"{', '.join(words[:-1])} or {words[-1]}"


@dataclass(frozen=True)
class Study:
    """One paper's study.

    Attributes:
        name: the registry name (``"fedsum"``).
        paper: the paper as the claims ledger names it.
        notebooks: the notebooks that run it.
        setup: profile (and keywords) -> the study's typed setup at that profile.
        methods: the catalogue names of the methods it compares (:mod:`fedlib.studies.methods`).
        quotes: the paper's words behind its claims.
        headline: :class:`Frames` (runs labelled by seed and method) -> the paper's headline
            claims on them (None: the study has none to ask of other runs).
    """

    name: str
    paper: str
    notebooks: tuple[str, ...]
    setup: Callable[..., Any]
    methods: tuple[str, ...] = ()
    quotes: Mapping[str, Any] = field(default_factory=dict)
    headline: Callable[..., list[ClaimRow]] | None = None

    def claims(self, frames: Frames, **kwargs) -> list[ClaimRow]:
        """The paper's headline claims on ``frames`` (``kwargs`` to :attr:`headline`), each row naming
        the paper."""
        if self.headline is None:
            raise InputError(f"study {self.name!r}: has no headline claims to check on other runs")
        return [_with_paper(r, self.paper) for r in self.headline(frames, **kwargs)]


def _with_paper(row: ClaimRow, paper: str) -> ClaimRow:
    from dataclasses import replace
    return replace(row, paper=paper)


_STUDIES: dict[str, Study] = {}


def register_study(study: Study, replace: bool = False) -> Study:
    """Add ``study`` to the registry under its name (a taken name only with ``replace=True``)."""
    if not isinstance(study, Study):
        raise InputError(f"study: must be a fedlib.studies.Study, got {type(study).__name__}")
    if not study.name or not isinstance(study.name, str):
        raise InputError(f"study.name: must be a non-empty string, got {study.name!r}")
    if study.name in _STUDIES and not replace:
        raise InputError(f"study.name: {study.name!r} is already registered (pass replace=True to change it)")
    _STUDIES[study.name] = study
    return study


def get(name: str) -> Study:
    """The registered study ``name``."""
    if name not in _STUDIES:
        raise InputError(f"name: must be one of {', '.join(map(repr, _STUDIES))}; got {name!r}")
    return _STUDIES[name]


def names() -> tuple[str, ...]:
    """The registered studies' names, in the order they were registered."""
    return tuple(_STUDIES)


def _seeds(name: str, value: Any) -> None:
    from ..notebook import check_seeds
    check_seeds(value, name)


def _accuracy(name: str, value: Any) -> None:
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.number))
            or not (0 < value <= 1) or (name.endswith("target") and value == 1)):
        allowed = "(0, 1)" if name.endswith("target") else "(0, 1]"
        raise InputError(f"{name}: must be an accuracy in {allowed}, a fraction (0.7, not 70); got {value!r}")


def _horizon(name: str, value: Any) -> None:
    from .._validate import check_int
    check_int(name, value, 1)


def _count(name: str, value: Any) -> None:
    from .._validate import check_int
    check_int(name, value, 0)


def _fraction(name: str, value: Any) -> None:
    from .._validate import check_real
    check_real(name, value, 0.0, 1.0, low_open=True)


def _positive(name: str, value: Any) -> None:
    from .._validate import check_real
    check_real(name, value, 0.0, low_open=True)


def check_rate_pair(name: str, value: Any, must: str = "be (eta_0, eta_g), two positive numbers") -> None:
    """``value`` must be a pair (eta_0, eta_g) of positive finite rates, else one InputError
    ``"{name}: must {must}, got {value!r}"``."""
    if not (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(x, (int, float, np.number)) and not isinstance(x, bool) and np.isfinite(x)
                    and x > 0 for x in value)):
        raise InputError(f"{name}: must {must}, got {value!r}")


def _cap(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not value > 0:
        raise InputError(f"{name}: must be a number > 0 (inf: no cap), got {value!r}")


def _chance(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not 0 <= value < 1:
        raise InputError(f"{name}: must be an accuracy in [0, 1) (0.1 for ten classes, not 10), got "
                         f"{value!r}")


#: the studies' argument names with one meaning wherever they appear, checked before the call of any
#: public function or setup method of a study module (:func:`guard_study`): ``seeds`` are the runs'
#: seeds (a non-empty list of distinct integers >= 0: a seed twice would count one run twice in every
#: interval); ``target`` and the plateaus are test accuracies, fractions (0.7, not 70), ``chance``
#: one in [0, 1); ``rounds``, ``horizon``, ``earlier``, ``local_steps``, ``batch_size``,
#: ``num_clients``, ``digits``, ``records`` and ``test_size`` integers >= 1, ``last`` and
#: ``extensions`` integers >= 0; ``window`` the late window's share of the horizon, in (0, 1]; the
#: rates (``lr``, ``eta``, ``eta_0``, ``eta_g``) and ``per_round`` (a mean where the schedules are
#: real) positive numbers, ``max_eta_g`` too or inf (no cap)
ARG_CHECKS: dict[str, Callable[[str, Any], None]] = {
    "seeds": _seeds, "target": _accuracy, "mnist_target": _accuracy, "mnist_plateau": _accuracy,
    "fashion_plateau": _accuracy, "chance": _chance, "window": _fraction,
    **dict.fromkeys(("rounds", "horizon", "earlier", "local_steps", "batch_size", "num_clients", "digits",
                     "records", "test_size"), _horizon),
    **dict.fromkeys(("last", "extensions"), _count),
    **dict.fromkeys(("lr", "eta", "eta_0", "eta_g", "per_round"), _positive), "max_eta_g": _cap}


def guard_study(namespace: dict, checks: dict[str, Callable[[str, Any], None]] | None = None) -> None:
    """A study module's public boundary: its public functions and its setups' public methods
    wrapped by :func:`fedlib._validate.guard_module`, with :data:`ARG_CHECKS` (and the module's own
    ``checks``, for a name with one meaning within the module) on the arguments they name. Called on
    the last line of each study module."""
    guard_module(namespace, methods=True, by_name={**ARG_CHECKS, **(checks or {})})


from .._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_study(globals())
