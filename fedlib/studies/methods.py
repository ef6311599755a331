"""One catalogue of the methods every study runs: name -> :class:`Method` (its algorithm, the options
its paper runs it with, the label figures print, its colour and the paper whose runs these are).

A study picks its methods by name (:func:`specs`) instead of restating them, so that two studies
that run "FedAU as FedSUM App. H runs it" run the same thing; where papers run a method differently
(FedACS's FedAvg averages over the contacted clients, FOCUS's SCAFFOLD uploads two vectors), the
catalogue holds both under their own names and the same label. A user adds a method with
:func:`register_method`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .._validate import InputError

__all__ = ["CATALOGUE", "Method", "algorithms", "method", "register_method", "specs"]


@dataclass(frozen=True)
class Method:
    """A method as one paper runs it.

    Attributes:
        label: how figures and claims name it (several catalogue entries may share a label).
        algorithm: the :mod:`fedlib.algorithms` registry name.
        options: its ``algorithm_args`` (a study may add setup-dependent ones: :meth:`spec`).
        paper: the paper whose runs use these options.
    """

    label: str
    algorithm: str
    options: Mapping[str, Any] = field(default_factory=dict)
    paper: str = ""

    def __post_init__(self):
        for name in ("label", "algorithm"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise InputError(f"{name}: must be a non-empty string, got {getattr(self, name)!r}")
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def spec(self, **extra) -> tuple[str, dict]:
        """(algorithm, options) of a config, ``extra`` options added (a setup's own, e.g. FedACS's
        draws per round)."""
        return self.algorithm, {**self.options, **extra}

    @property
    def colour(self) -> tuple:
        """The colour figures draw it in (:func:`fedlib.plotting.method_palette` of its label)."""
        from ..plotting import method_palette
        return method_palette([self.label])[self.label]


def _of(paper: str, entries: Mapping[str, tuple]) -> dict[str, Method]:
    """The catalogue entries of ``paper``: name -> (algorithm, options), labelled by the name, or
    (algorithm, options, label) where the label is another paper's method's."""
    return {name: Method(e[2] if len(e) > 2 else name, e[0], e[1], paper) for name, e in entries.items()}


#: name -> method. FedSUM App. H's baselines (FedAU's cutoff, FedAWE's clip, SCAFFOLD's one uplink
#: vector) are the plain names; another paper's variant is named after that paper.
CATALOGUE: dict[str, Method] = {
    **_of("FedSUM", {"FedSUM": ("fedsum", {}), "FedSUM-CR": ("fedsum_cr", {"rebuild": "eq11"}),
                     "FedSUM-CR (exact rate sum)": ("fedsum_cr", {"rebuild": "rate_sum"}),
                     "FedSUM-B": ("fedsum_b", {}), "FedAvg": ("fedavg", {}),
                     "FedAU": ("fedau", {"cutoff": 50}),
                     "FedAWE": ("fedawe", {"clip": 0.5, "evaluate": "mean_of_copies"}),
                     "FedVARP": ("fedvarp", {}), "MIFA": ("mifa", {}),
                     "SCAFFOLD": ("scaffold", {"uplink_vectors": 1})}),
    **_of("FOCUS", {"FOCUS": ("focus", {}), "SG-FOCUS": ("sg_focus", {}),
                    "SCAFFOLD (FOCUS)": ("scaffold", {}, "SCAFFOLD"),
                    "FedAU as in the authors' code (= FedAvg)": ("fedavg", {}),
                    "SCAFFOLD as in the authors' code (sum / fixed S)": ("scaffold", {"dy_divisor": 10})}),
    **_of("FedACS", {"FedACS": ("fedacs", {"draws": 10}),
                     "FedAvg (FedACS)": ("fedavg", {"aggregation": "contacted"}, "FedAvg"),
                     "c-a-FedAvg": ("ca_fedavg", {}), "FedNova": ("fednova", {}),
                     "FedAU (FedACS)": ("fedau", {}, "FedAU"), "OS": ("os_sampling", {"budget": 5})}),
    **_of("Wang & Ji 2022", {"amplified FedAvg": ("amplified_fedavg", {}, "Alg. 1"),
                             "wait-minibatch": ("wait_minibatch", {}), "wait-full": ("wait_full", {})}),
}


def register_method(name: str, m: Method, replace: bool = False) -> Method:
    """Add ``m`` to the catalogue under ``name`` (a taken name only with ``replace=True``)."""
    if not isinstance(m, Method):
        raise InputError(f"m: must be a fedlib.studies.methods.Method, got {type(m).__name__}")
    if not isinstance(name, str) or not name:
        raise InputError(f"name: must be a non-empty string, got {name!r}")
    if name in CATALOGUE and not replace:
        raise InputError(f"name: {name!r} is already in the catalogue (pass replace=True to change it)")
    CATALOGUE[name] = m
    return m


def method(name: str) -> Method:
    """The catalogue's method ``name``."""
    if name not in CATALOGUE:
        raise InputError(f"name: must be one of {', '.join(map(repr, CATALOGUE))}; got {name!r}")
    return CATALOGUE[name]


def specs(names: Sequence[str], extra: Mapping[str, Mapping[str, Any]] | None = None
          ) -> dict[str, tuple[str, dict]]:
    """Label -> (algorithm, options) of the methods ``names``, in that order; ``extra`` maps a name
    to options its study adds (``specs(["FedACS"], {"FedACS": {"draws": 4}})``)."""
    extra = dict(extra or {})
    for n in extra:
        if n not in names:
            raise InputError(f"extra: {n!r} is not among the names ({', '.join(names)})")
    found = {n: method(n) for n in names}
    labels = [m.label for m in found.values()]
    twice = sorted({lab for lab in labels if labels.count(lab) > 1})
    if twice:
        raise InputError(f"names: two methods labelled {twice[0]!r}")
    return {m.label: m.spec(**extra.get(n, {})) for n, m in found.items()}


def algorithms(names: Sequence[str], star: bool = False) -> dict[str, str]:
    """Label -> algorithm of the methods ``names`` run with their algorithm's default options (a
    toy problem, an ablation); ``star`` marks each label with ``*`` (not in the paper's figure)."""
    return {method(n).label + ("*" if star else ""): method(n).algorithm for n in names}


from .base import guard_study  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_study(globals())
