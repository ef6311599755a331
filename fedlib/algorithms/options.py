"""Typed algorithm options: one frozen dataclass per algorithm, each field with its default, what a
value must be and one line saying what it does.

An algorithm's ``Options`` is built once, when the algorithm is built (``algo.settings``), from the
values given (``ExperimentConfig.algorithm_args``, ``fedlib.run(..., **options)``, the options a
Flower node receives): a name the dataclass lacks or a value its field refuses is a ValueError
``"<name>: ..."`` naming what it must be. A config checks its ``algorithm_args`` the same way
before any run of a sweep (:meth:`fedlib.algorithms.Algorithm.check_options`).

Declaring options::

    @dataclass(frozen=True)
    class MyOptions(Options):
        beta: float = option(0.9, *in_unit_interval(), doc="server momentum")

    @register
    class MyAlgorithm(Algorithm):
        name = "my_algorithm"        # its name in configs (register refuses a class without one)
        Options = MyOptions          # the names (``options``) follow from its fields

        def round(self, x, r):
            beta = self.settings.beta    # typed, with its default: the one way to read an option

A field whose default is None means "not given": the algorithm then uses what its docstring
says (the problem's data weights, the schedule's own probabilities, N, ...).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

import numpy as np

from .._validate import InputError

__all__ = ["Options", "SolverOptions", "any_value", "in_unit_interval", "int_at_least", "non_negative",
           "one_of", "option", "positive"]


def _real(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, numbers.Real) and math.isfinite(float(v))


def int_at_least(low: int) -> tuple[str, Callable[[Any], bool]]:
    """A rule: an integer >= ``low`` (not a bool)."""
    return (f"an integer >= {low}",
            lambda v: not isinstance(v, bool) and isinstance(v, numbers.Integral) and v >= low)


def positive(none: bool = False) -> tuple[str, Callable[[Any], bool]]:
    """A rule: a positive finite number (or None when ``none``)."""
    return ("a positive number" + (" or None" if none else ""),
            lambda v: (none and v is None) or (_real(v) and float(v) > 0))


def non_negative() -> tuple[str, Callable[[Any], bool]]:
    """A rule: a finite real number >= 0."""
    return "a finite real number >= 0", lambda v: _real(v) and float(v) >= 0


def in_unit_interval() -> tuple[str, Callable[[Any], bool]]:
    """A rule: a real number in [0, 1)."""
    return "a real number in [0, 1)", lambda v: _real(v) and 0 <= float(v) < 1


def one_of(*values) -> tuple[str, Callable[[Any], bool]]:
    """A rule: one of ``values`` (of the same type: ``True`` is not ``1``, nor ``1.0``; a numpy
    scalar counts as the Python value it holds: ``np.int64(1)`` is ``1``, ``np.str_("all")`` is
    ``"all"``)."""
    def fits(v) -> bool:
        v = v.item() if isinstance(v, np.generic) else v
        return not isinstance(v, bool) and any(v == x and type(v) is type(x) for x in values)
    return f"one of {', '.join(map(repr, values))}", fits


def any_value(what: str) -> tuple[str, Callable[[Any], bool]]:
    """A rule that accepts every value here (``what`` says what it must be; the algorithm checks
    it where it can, e.g. a probability table against the schedule's shape)."""
    return what, lambda v: True


def _passes(check: Callable[[Any], bool], value) -> bool:
    """Whether ``value`` passes ``check``; a check that cannot compare the value (``0 <= "a"``)
    refuses it rather than raising a TypeError of its own."""
    try:
        return bool(check(value))
    except (TypeError, ValueError):
        return False


def option(default, must: str, check: Callable[[Any], bool], *, doc: str):
    """A dataclass field of an :class:`Options`: its default, what a value must be (``must``, the
    text of the error), the check of a value and one line of documentation."""
    return field(default=default, metadata={"must": must, "check": check, "doc": doc})


@dataclass(frozen=True)
class Options:
    """An algorithm's options, typed and checked (the base: no options).

    Subclasses are frozen dataclasses whose fields come from :func:`option`; every field is checked
    when the object is built."""

    def __init_subclass__(cls, **kwargs) -> None:
        """A field whose default fails its own check is refused where the class is defined (else
        every build of the algorithm without that option would fail; a ValueError: this module imports
        nothing of fedlib, and fedlib's boundary counts its ``name: ...`` errors as its own)."""
        super().__init_subclass__(**kwargs)
        for name, f in vars(cls).items():
            if isinstance(f, Field) and "check" in f.metadata and f.default is not MISSING \
                    and not _passes(f.metadata["check"], f.default):
                raise InputError(f"{name}: default must be {f.metadata['must']} (its own check), got "
                                 f"{f.default!r} (in {cls.__name__})")

    def __post_init__(self) -> None:
        for f in fields(self):
            check = f.metadata.get("check")
            value = getattr(self, f.name)
            if check is not None and not _passes(check, value):
                raise InputError(f"{f.name}: must be {f.metadata['must']}, got {value!r}")
        self._check_together()

    def _check_together(self) -> None:
        """Checks that involve several fields (none by default)."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in declaration order."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def build(cls, given: Mapping[str, Any], algorithm: str = "") -> Options:
        """The options from the values ``given``: a ValueError ``"<name>: ..."`` for a name that
        is not an option or a value that its field refuses (naming the algorithm)."""
        where = f" (algorithm {algorithm!r})" if algorithm else ""
        declared = list(vars(cls).get("__annotations__", {}))
        if declared and "__dataclass_fields__" not in vars(cls):      # @dataclass(frozen=True) forgotten
            raise InputError(f"Options: {cls.__name__} declares {', '.join(declared)} but is not a "
                             "dataclass; "
                             f"decorate it with @dataclass(frozen=True) (algorithm {algorithm!r})")
        unknown = sorted(set(given) - set(cls.names()))
        if unknown:
            raise InputError(f"{unknown[0]}: not an option of algorithm {algorithm!r}; its options: "
                             f"{', '.join(cls.names()) or '(none)'}")
        try:
            return cls(**given)
        except ValueError as e:
            name, _, rest = str(e).partition(": ")
            raise InputError(f"{name}: {rest.replace(', got', where + ', got', 1)}") from None

    def changed(self) -> dict[str, Any]:
        """The options whose value is not their default, by name: what builds these options again
        (``type(algo)(problem, engine, **algo.settings.changed())``), as short as it can be (an
        explicit default of a number, text or None is left out; an array is kept)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            plain = isinstance(v, (str, int, float, type(None))) and type(v) is type(f.default)
            if v is not f.default and not (plain and v == f.default):
                out[f.name] = v
        return out

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """One row per option: name, default, what a value must be, what it does."""
        return [{"option": f.name, "default": None if f.default is MISSING else f.default,
                 "must be": f.metadata.get("must", "any value"), "what": f.metadata.get("doc", "")}
                for f in fields(cls)]


@dataclass(frozen=True)
class SolverOptions(Options):
    """The local solver's options (engine arguments), for the algorithms whose clients run
    heavy-ball or FedProx local steps."""

    momentum: float = option(0.0, *in_unit_interval(),
                             doc="heavy-ball momentum rho of the local solver (0: plain SGD)")
    prox_mu: float = option(0.0, *non_negative(),
                            doc="FedProx proximal weight mu of the local solver (0: none)")


def untyped(names: tuple[str, ...], base: type[Options] = Options) -> type[Options]:
    """An :class:`Options` with the fields of ``base`` and, for every other name, an untyped
    field whose default None means "not given" (for an algorithm that lists ``options`` names
    without declaring an ``Options`` dataclass)."""
    from dataclasses import make_dataclass
    extra = [(n, Any, field(default=None, metadata={"doc": "(untyped: declare an Options dataclass)"}))
             for n in names if n not in base.names()]
    return make_dataclass("UntypedOptions", extra, bases=(base,), frozen=True)
