"""Argument checks shared by fedlib's modules (package-internal): each raises one
:class:`InputError` naming the argument and what it allows."""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from typing import Any

import numpy as np

__all__ = ["InputError", "available_memory", "broadcast_rows", "check_device", "check_int", "check_probs",
           "check_real", "check_text", "guard", "guard_module", "jsonable", "own_error", "prob_matrix",
           "warn"]


class InputError(ValueError):
    """A value fedlib refuses at its public boundary: the message starts with the argument's name
    (``name: ...``), says the value it got and what is allowed. A ValueError, so code that
    catches ValueError keeps working; ``fedlib.InputError`` catches fedlib's refusals alone.

    Every refusal in fedlib's code raises it, with two exceptions that keep a plain ValueError:
    the checks inside the built-in problem builders ``random_quadratic`` and ``neural``, whose
    source is part of stored runs' fingerprints (:mod:`fedlib.fingerprint`: editing it would mark
    every stored run stale); called through the public boundary (:func:`guard`), theirs comes out
    as an InputError too. Other errors of fedlib's own: ``fedlib.data.DataNotFoundError`` (a
    FileNotFoundError) and ``fedlib.store.CorruptEntry``."""


#: fedlib's own folder: :func:`warn` attributes a warning to the first caller outside it
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line: the first caller outside
    fedlib (a notebook cell, a script, a test), however many of fedlib's functions and :func:`guard`
    wrappers lie between (a fixed ``stacklevel`` pointed into fedlib, e.g. at the wrapper, once a
    function was guarded). Where that caller is the standard library or an installed package (the
    command line's ``runpy``, a process pool's worker, Dask), the warning names fedlib's outermost
    function instead, which says more. Python 3.12's ``skip_file_prefixes`` does the first half;
    fedlib supports 3.11."""
    import sys
    import sysconfig
    import warnings
    frame, level, own = sys._getframe(1), 2, 2      # level 2: warn's caller; own: fedlib's outermost
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        if frame.f_code is not _GUARD_CODE:
            own = level
        frame, level = frame.f_back, level + 1
    name = frame.f_code.co_filename
    paths = sysconfig.get_paths()
    outside = [paths[k] + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
    if name.startswith("<frozen") or any(name.startswith(p) for p in outside):
        level = own
    warnings.warn(message, category, stacklevel=level)


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name}: must be an integer, got {value!r}")
    rng = f"in {low}..{high}" if high is not None else f">= {low}"
    if value < low or (high is not None and value > high):
        raise InputError(f"{name}: must be an integer {rng}, got {value}")
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


def check_text(name: str, value: Any, what: str) -> str:
    """``value`` if it is a non-empty text (not only spaces), else one InputError naming ``name``
    and ``what`` the text says (e.g. "naming a run with no value (e.g. 'failed')")."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{name}: must be a non-empty text {what}, got {value!r}")
    return value


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


# ------------------------------------------------------------------------------------ the boundary
# fedlib's one contract mechanism: every public function (a module's ``__all__``) is wrapped by
# :func:`guard_module`, which checks a ``device`` (and a declared ``before`` check) before the
# function runs, and each argument against the function's type hints when the call fails with an
# error that is not fedlib's own, raising one :class:`InputError` naming the argument, its value
# and what the hint allows. Ranges and values (a probability in (0, 1], a known name) stay with
# the function's own checks (:func:`check_int`, :func:`check_real`, ...), which raise InputError
# as well.
# Own code rather than a library (beartype, pydantic): fedlib's hints are read leniently
# (``np.ndarray`` where a list is accepted, ``str`` where a path is), and no new dependency is
# needed. The hints are judged when a call fails, not before it: :func:`guard` says why.

_ARRAY_TYPES = (list, tuple, range)


def _is_array_like(value: Any) -> bool:
    import pandas as pd
    import torch
    return (isinstance(value, (np.ndarray, np.generic, torch.Tensor, pd.Series, pd.DataFrame, pd.Index,
                               *_ARRAY_TYPES))
            or (isinstance(value, numbers.Number) and not isinstance(value, bool)))


def _accepts(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits ``hint`` as fedlib's functions read their hints (True for a hint
    it cannot judge)."""
    import types
    import typing
    if hint is Any or hint is object or isinstance(hint, (str, typing.TypeVar)):
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(_accepts(value, h) for h in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin is typing.Annotated:
        return _accepts(value, typing.get_args(hint)[0])
    if origin is not None:
        return _accepts_generic(value, origin, typing.get_args(hint))
    return _accepts_type(value, hint)


def _accepts_generic(value: Any, origin: Any, args: tuple) -> bool:
    """:func:`_accepts` for a parametrised hint (``list[int]``, ``dict[str, float]``...)."""
    import collections.abc as cabc
    if not _accepts(value, origin):
        return False
    if origin in (list, tuple, cabc.Sequence, cabc.Iterable, cabc.Collection, set, frozenset) \
            and isinstance(value, (list, tuple, set, frozenset)) and args and len(value) <= 10_000:
        if origin is tuple and args[-1] is not Ellipsis:               # tuple[int, float]: each its own
            return len(value) == len(args) and all(_accepts(v, a) for v, a in zip(value, args,
                                                                                  strict=True))
        return all(_accepts(v, args[0]) for v in value)
    if origin in (dict, cabc.Mapping, cabc.MutableMapping) and len(args) == 2 and len(value) <= 10_000:
        return all(_accepts(k, args[0]) and _accepts(v, args[1]) for k, v in value.items())
    return True


def _accepts_type(value: Any, hint: Any) -> bool:
    """:func:`_accepts` for a plain hint (a class, or something it cannot judge: True)."""
    import collections.abc as cabc
    if not isinstance(hint, type):
        return True
    if hint is bool:
        return isinstance(value, (bool, np.bool_))
    if hint in (int, float) and getattr(value, "ndim", None) == 0 and hasattr(value, "dtype"):
        return True                                   # a 0-d tensor or array (a captured graph's round)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    if hint is complex:
        return isinstance(value, numbers.Number) and not isinstance(value, (bool, np.bool_))
    if hint is str:
        return isinstance(value, (str, os.PathLike))
    if hint is os.PathLike or (isinstance(hint, type) and issubclass(hint, os.PathLike)):
        return isinstance(value, (str, os.PathLike))
    if hint in (list, tuple, cabc.Sequence, cabc.MutableSequence):
        return _is_array_like(value) and not isinstance(value, (numbers.Number, np.generic))
    if hint in (cabc.Iterable, cabc.Collection, cabc.Iterator):
        return hasattr(value, "__iter__") and not isinstance(value, (str, bytes, cabc.Mapping, os.PathLike))
    if hint in (dict, cabc.Mapping, cabc.MutableMapping):
        return isinstance(value, cabc.Mapping)
    if hint in (cabc.Callable, type):
        return callable(value)
    try:
        import torch
        if hint in (np.ndarray, torch.Tensor):              # an array, or a list of numbers; not a scalar
            return _is_array_like(value) and not isinstance(value, numbers.Number)
    except ImportError:  # pragma: no cover
        pass
    if getattr(hint, "_is_protocol", False) or hint.__module__ == "builtins" and hint not in (set, frozenset):
        return True
    if isinstance(value, hint):
        return True
    if hint.__module__.split(".")[0] == "fedlib":            # fedlib's own classes: duck types welcome,
        return value is not None and not isinstance(           # plain values are not one
            value, (str, bytes, numbers.Number, np.generic, list, tuple, cabc.Mapping, os.PathLike))
    return False


def _describe(hint: Any) -> str:
    import typing
    if hint is None or hint is type(None):
        return "None"
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    import types
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(dict.fromkeys(_describe(a) for a in args))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    name = getattr(origin or hint, "__name__", None) or str(hint)
    words = {"int": "an integer", "float": "a real number", "bool": "True or False", "str": "a string",
             "ndarray": "an array (or list) of numbers", "Tensor": "an array (or list) of numbers",
             "PathLike": "a path", "Path": "a path", "dict": "a mapping", "Mapping": "a mapping",
             "list": "a list", "tuple": "a sequence", "Sequence": "a sequence", "Iterable": "an iterable",
             "Callable": "a callable", "DataFrame": "a pandas DataFrame"}
    return words.get(name, f"{'an' if name[:1] in 'AEIOU' else 'a'} {name}")


def _hints(fn: Any, globalns: dict) -> dict:
    import typing
    try:
        return typing.get_type_hints(fn, globalns=globalns)
    except Exception:  # noqa: BLE001 - a hint that names something not importable: judge the others
        out = {}
        for name, ann in getattr(fn, "__annotations__", {}).items():
            try:
                out[name] = eval(ann, globalns) if isinstance(ann, str) else ann  # noqa: S307
            except Exception:  # noqa: BLE001
                out[name] = Any
        return out


def check_device(name: str, value: Any) -> Any:
    """``value`` if torch names a device by it (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a
    ``torch.device``), else one InputError naming ``name``."""
    import torch
    try:
        torch.device(value)
    except (RuntimeError, TypeError, ValueError):
        raise InputError(f"{name}: must be a torch device such as 'cpu' or 'cuda', got {value!r}") from None
    return value



def check_new_name(what: str, name: object, builtin, registered: dict, replace: bool) -> None:
    """A name a user registers (a dataset, a participation kind: ``what``): an identifier, not a
    built-in's, and not registered already unless ``replace`` (``registered`` maps names to
    entries with a ``module``). One ValueError naming ``name`` else."""
    if not isinstance(name, str) or not name.isidentifier():
        raise InputError(f"name: a {what}'s name must be an identifier, got {name!r}")
    if name in builtin:
        raise InputError(f"name: {what} {name!r} is a built-in {what}; choose another name")
    if name in registered and not replace:
        raise InputError(f"name: {what} {name!r} is already registered (by {registered[name].module}); pass "
                         "replace=True to replace it")

def own_error(e: BaseException) -> bool:
    """Whether fedlib raised ``e`` on purpose: an exception class of fedlib's (:class:`InputError`,
    ``DataNotFoundError``, ``CorruptEntry``, ...) or a ValueError whose ``raise`` is in fedlib's
    code and whose message names what it refuses (``name: ...``), not a ValueError from inside
    numpy or torch, nor Python's own (``int('x')``)."""
    if type(e).__module__.split(".")[0] == "fedlib":
        return True
    if not isinstance(e, ValueError) or ": " not in str(e):
        return False
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    here = os.path.dirname(os.path.abspath(__file__))
    return tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(here + os.sep)


def guard(fn: Any, globalns: dict | None = None, what: str | None = None, before: Any = None) -> Any:
    """``fn`` wrapped as fedlib's public boundary: a ``device`` argument (and ``before(arguments)``
    if given: a check of values, e.g. a size that cannot fit in memory, kept outside a function
    whose source is part of stored runs' fingerprints) is checked before ``fn`` runs; if ``fn``
    then fails with an error that is not fedlib's own (:func:`own_error`: a TypeError,
    AttributeError, IndexError, an error from inside numpy or torch, ...), its arguments are
    checked against its type hints and the first that does not fit is one :class:`InputError`
    naming the argument, the value and what the hint allows (the original error chained to it).

    Why the hints are judged only when the function fails, not before every call (decided on
    measurements, 2026-11-26, on a shared 2-core AMD EPYC; a prototype that judged them first):

    * The function's own checks speak first, with the more specific message: judged first,
      15 of the 237 tests of ``tests/test_bad_inputs.py`` got the generic hint's message instead
      (``sweep(5)``: "configs: must be an iterable or an ExperimentConfig" for "configs:
      expected ExperimentConfig objects ..."; ``claims.interval(["a", "b"])``: "d: must be a
      sequence ..., got list" -- true of the value -- for "d: must be numbers").
    * Cost on the per-step calls: binding and judging the arguments took about 32 us per
      :func:`fedlib.objectives.stream_seed` call (itself about 32 us; called per client and
      step with legacy draws, per step for a stochastic quadratic), doubling it; 109 us per
      :func:`fedlib.keyed.step_draws` step (2 %), 52 us per :func:`fedlib.participation.build`
      (5 %). The wrapper as it is costs a call and a ``try`` (under 2 us).
    * Not a reason any more: hints written too loosely to judge first. Judged (without
      refusing) on every call of 456 passing tests of 21 test files, no call that returned
      normally had an argument that misfit its hint.

    What this gives up: a wrong-typed argument that the function's own checks do not look at is
    named only after the work up to the failure. The functions that write or run (``sweep``,
    ``run``, the store) check their arguments at entry, and ``tests/test_contract.py`` asserts
    that no wrong value stores an entry; a value check that must come first goes in ``before``."""
    import functools
    import inspect
    if getattr(fn, "__fedlib_guarded__", False):
        return fn
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    state: dict = {}
    label = what or f"{fn.__module__.removeprefix('fedlib.')}.{fn.__qualname__}"
    device = sig.parameters.get("device")

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        if device is not None or before is not None:
            _check_first(sig, device, before, label, args, kwargs)
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if own_error(e):
                if type(e) is ValueError:      # a registered builder's own check (its source is kept
                    raise InputError(str(e)) from e   # as stored runs' fingerprint): one class for all
                raise
            problem = _misfit(fn, sig, globalns, label, state, args, kwargs)
            if problem is None:
                raise
            raise InputError(problem) from e

    checked.__fedlib_guarded__ = True
    return checked


#: the code of :func:`guard`'s wrapper, which :func:`warn` does not name as fedlib's outermost function
_GUARD_CODE = guard(lambda x: x).__code__


def _check_first(sig: Any, device: Any, before: Any, label: str, args: tuple, kwargs: dict) -> None:
    """:func:`guard`'s checks before the call: the ``device`` argument, and ``before``."""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise InputError(f"{label}: {e}") from None
    value = bound.arguments.get("device", device.default if device is not None else None)
    if device is not None and (value is not None or device.default is not None):
        check_device("device", value)
    if before is not None:
        before(dict(bound.arguments))


def _misfit(fn: Any, sig: Any, globalns: dict | None, label: str, state: dict, args: tuple,
            kwargs: dict) -> str | None:
    """The first argument of a failed call of ``fn`` that does not fit its hint, as a message;
    None if all fit (the hints read once into ``state``)."""
    import inspect
    if "hints" not in state:
        hints = _hints(fn, globalns if globalns is not None else getattr(fn, "__globals__", {}))
        state["hints"] = {k: v for k, v in hints.items() if k in sig.parameters and k != "return"}
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        return f"{label}: {e}"
    for name, value in bound.arguments.items():
        hint = state["hints"].get(name)
        if hint is None:
            continue
        kind = sig.parameters[name].kind
        values = value if kind is inspect.Parameter.VAR_POSITIONAL else \
            value.values() if kind is inspect.Parameter.VAR_KEYWORD else (value,)
        for v in values:
            if not _accepts(v, hint):
                text = repr(v)
                text = text if len(text) <= 80 else text[:77] + "..."
                return (f"{name}: must be {_describe(hint)} (argument of {label}), got "
                        f"{type(v).__name__} {text}")
    return None


_WRAPPED: dict[int, Any] = {}


def guard_module(namespace: dict, before: dict[str, Any] | None = None, methods: bool = False,
                 by_name: dict[str, Any] | None = None) -> None:
    """Wrap every function that a module lists in its ``__all__`` (and the ``__init__`` of its
    public classes; not a dataclass's, whose hints are the stored types that its own
    ``__post_init__`` converts to and checks) with :func:`guard`, in place: fedlib's public
    boundary. Called on the last line of each public module (``guard_module(globals())``);
    ``before``: function name -> a check of its bound arguments, run before the call (see
    :func:`guard`); ``methods``: also wrap the public methods (plain and static) of the module's
    public classes, dataclasses included (the studies' setups, whose methods users call with
    summaries, seeds and labels: a wrong type there would otherwise end in a pandas or Python
    error from deep inside; off in modules whose classes are on the per-step path); ``by_name``:
    parameter name -> ``check(name, value)``, run before the call on each wrapped function's
    argument of that name where one is given and is not None (a convention of the module, e.g. the
    studies' ``seeds``: :data:`fedlib.studies.base.ARG_CHECKS`)."""
    import inspect
    module = namespace.get("__name__", "")
    for name in namespace.get("__all__", ()):
        obj = namespace.get(name)
        if obj is None or inspect.ismodule(obj):
            continue
        if methods and inspect.isclass(obj) and obj.__module__ == module:
            _guard_methods(obj, namespace, f"{module.removeprefix('fedlib.')}.{name}", by_name)
        if inspect.isfunction(obj) and obj.__module__ == module:
            if id(obj) not in _WRAPPED:
                _WRAPPED[id(obj)] = guard(obj, namespace, before=_by_name(obj, by_name,
                                                                           (before or {}).get(obj.__name__)))
            namespace[name] = _WRAPPED[id(obj)]
        elif inspect.isclass(obj) and obj.__module__ == module and not issubclass(obj, BaseException) \
                and not any(c.__name__ == "Algorithm" for c in obj.__mro__) \
                and not dataclasses.is_dataclass(obj) \
                and "__init__" in vars(obj) and not getattr(obj.__init__, "__fedlib_guarded__", False) \
                and not getattr(obj, "_is_protocol", False):
            obj.__init__ = guard(obj.__init__, namespace, what=f"{module.removeprefix('fedlib.')}.{name}")


def _guard_methods(cls: type, namespace: dict, what: str, by_name: dict[str, Any] | None = None) -> None:
    """:func:`guard_module`'s ``methods``: each public plain or static method of ``cls`` wrapped by
    :func:`guard` (with the checks of ``by_name``), in place (properties and class methods as they
    are)."""
    import inspect
    for attr, value in list(vars(cls).items()):
        if attr.startswith("_"):
            continue
        if inspect.isfunction(value):
            setattr(cls, attr, guard(value, namespace, what=f"{what}.{attr}",
                                     before=_by_name(value, by_name)))
        elif isinstance(value, staticmethod) and inspect.isfunction(value.__func__):
            fn = value.__func__
            setattr(cls, attr, staticmethod(guard(fn, namespace, what=f"{what}.{attr}",
                                                  before=_by_name(fn, by_name))))


def _by_name(fn: Any, by_name: dict[str, Any] | None, before: Any = None) -> Any:
    """``before`` (a check of a call's bound arguments, or None) extended by the checks of
    ``by_name`` (parameter name -> ``check(name, value)``) on the parameters of ``fn`` that it names:
    each runs on its argument where the call gives one that is not None."""
    import inspect
    if getattr(fn, "__fedlib_guarded__", False):
        return before
    try:
        params = [p for p in inspect.signature(fn).parameters if p in (by_name or {})]
    except (TypeError, ValueError):
        return before
    if not params:
        return before

    def check(arguments: dict) -> None:
        for p in params:
            if arguments.get(p) is not None:
                by_name[p](p, arguments[p])
        if before is not None:
            before(arguments)
    return check
