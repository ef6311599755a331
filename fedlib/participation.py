"""Client-participation models compiled to a seeded, replayable :class:`Schedule`.

A participation model (a *kind*) describes the environment: who is active in each round, whether
an active client's upload reaches the server, and how many local steps it runs. :func:`build`
compiles a kind into a :class:`Schedule` -- plain integer / boolean arrays over
``[rounds, num_clients]`` -- computed once, saved, and replayed identically for every algorithm,
so all curves of a figure see the same participation draws.

Example:
    >>> from fedlib import participation
    >>> s = participation.build("uniform", num_clients=100, rounds=2000, seed=0, per_round=20)
    >>> s.active.shape, int(s.active[0].sum())
    ((2000, 100), 20)

Randomness comes only from ``numpy.random.default_rng``. The seed is split (``SeedSequence``)
into independent streams for participation, uplink success and local steps, so attaching an
uplink model or heterogeneous steps never changes who is active.

The kinds follow the papers (FedSUM Sec. 2.1 Cases 1-4 and App. H P1-P3; FedAU/FedAWE; FOCUS;
FedACS; Wang & Ji 2022). ``available()`` lists them. A kind of one's own is registered with
:func:`register_kind` (or the decorator :func:`kind`), its arguments declared with it
(:class:`Arg`: name, type, default, range or choices), exactly as the built-in kinds are; a
config's ``participation_args`` are then checked from those declarations.
"""

from __future__ import annotations

import inspect
import json
import numbers
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._source import capture
from ._validate import (
    InputError,
    broadcast_rows,
    check_int,
    check_new_name,
    check_probs,
    jsonable,
    prob_matrix,
)
from .traces import FORMATS, RULES, file_sha256

__all__ = ["COMMON_ARGS", "LOCAL_WORK", "REQUIRED", "TYPES", "Arg", "Draw", "Kind", "Schedule", "arguments",
           "available", "build", "check_arguments", "draws_from_seed", "get_kind", "inputs_here",
           "key_arguments", "kind", "kind_function", "load", "read_trace", "register_kind", "trace_digest"]


# --------------------------------------------------------------------------------------------
# The Schedule
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Schedule:
    """Participation, uplink success and local steps of every client in every round.

    Attributes:
        active: int array [rounds, num_clients]; how many times client i counts in round t
            (0 = absent, 1 = present, > 1 only for sampling with replacement).
        uplink_ok: bool array [rounds, num_clients]; whether client i's upload in round t
            reaches the server (all True unless an uplink model was attached).
        local_steps: int array [rounds, num_clients]; local steps client i runs in round t.
        spec: the kind and arguments it was built from (JSON-serialisable metadata).
        probs: float array [rounds, num_clients], the true probability p_i^t that client i takes
            part in round t, for kinds that define one (full, uniform (S/N), bernoulli, sine,
            biased, markov (its stationary p, the marginal of every round)); None otherwise
            (cyclic, reshuffled_cyclic, weighted, with_replacement, periodic, trace, custom).
        uplink_probs: float array [rounds, num_clients], the probability that an active client's
            upload succeeds (None: uploads always succeed).
    """

    active: np.ndarray
    uplink_ok: np.ndarray
    local_steps: np.ndarray
    spec: dict = field(default_factory=dict)
    probs: np.ndarray | None = None
    uplink_probs: np.ndarray | None = None

    def __post_init__(self) -> None:
        active = np.ascontiguousarray(_integral("active", self.active))
        uplink = np.ascontiguousarray(self.uplink_ok, dtype=bool)
        steps = np.ascontiguousarray(_integral("local_steps", self.local_steps))
        if active.ndim != 2:
            raise InputError(f"active: expected a 2-D array [rounds, num_clients], got {active.shape}")
        for name, arr in (("uplink_ok", uplink), ("local_steps", steps)):
            if arr.shape != active.shape:
                raise InputError(f"{name}: shape {arr.shape} must equal active's {active.shape}")
        if (active < 0).any():
            raise InputError("active: counts must be >= 0")
        if (steps < 1).any():
            raise InputError("local_steps: every entry must be >= 1")
        for name in ("probs", "uplink_probs"):
            val = getattr(self, name)
            if val is not None:
                arr = np.ascontiguousarray(val, dtype=float)
                if arr.shape != active.shape:
                    raise InputError(f"{name}: shape {arr.shape} must equal active's {active.shape}")
                if not np.all(np.isfinite(arr) & (arr >= 0) & (arr <= 1)):
                    raise InputError(f"{name}: probabilities must lie in [0, 1]")
                arr.setflags(write=False)
                object.__setattr__(self, name, arr)
        for arr in (active, uplink, steps):
            arr.setflags(write=False)
        object.__setattr__(self, "active", active)
        object.__setattr__(self, "uplink_ok", uplink)
        object.__setattr__(self, "local_steps", steps)

    @property
    def num_rounds(self) -> int:
        """Number of rounds T."""
        return self.active.shape[0]

    @property
    def num_clients(self) -> int:
        """Number of clients N."""
        return self.active.shape[1]

    @property
    def kind(self) -> str:
        """Name of the participation kind this schedule was built from."""
        return str(self.spec.get("kind", "custom"))

    def clients(self, t: int) -> np.ndarray:
        """Indices of the clients active in round ``t`` (each once, however often it counts)."""
        return np.flatnonzero(self.active[t])

    def delivered(self) -> np.ndarray:
        """int [rounds, num_clients]: counts whose upload reached the server (active * uplink_ok)."""
        return self.active * self.uplink_ok

    def truncate(self, rounds: int) -> Schedule:
        """The first ``rounds`` rounds of this schedule."""
        if not 1 <= rounds <= self.num_rounds:
            raise InputError(f"rounds: must be in 1..{self.num_rounds}, got {rounds}")
        def cut(a):
            return None if a is None else a[:rounds]
        return Schedule(self.active[:rounds], self.uplink_ok[:rounds],
                        self.local_steps[:rounds], dict(self.spec, rounds=rounds),
                        cut(self.probs), cut(self.uplink_probs))

    def window(self, start: int, stop: int) -> Schedule:
        """Rounds ``start`` .. ``stop - 1`` of this schedule (a phase continuing another)."""
        if not 0 <= start < stop <= self.num_rounds:
            raise InputError(f"start, stop: need 0 <= start < stop <= {self.num_rounds}, got {start}, {stop}")

        def cut(a):
            return None if a is None else a[start:stop]
        return Schedule(self.active[start:stop], self.uplink_ok[start:stop], self.local_steps[start:stop],
                        dict(self.spec, rounds=stop - start, window=[start, stop]),
                        cut(self.probs), cut(self.uplink_probs))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        def same(a, b):
            return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
        return (np.array_equal(self.active, other.active)
                and np.array_equal(self.uplink_ok, other.uplink_ok)
                and np.array_equal(self.local_steps, other.local_steps)
                and self.spec == other.spec and same(self.probs, other.probs)
                and same(self.uplink_probs, other.uplink_probs))

    __hash__ = None  # type: ignore[assignment]

    def save(self, path: str | os.PathLike) -> None:
        """Save to a ``.npz`` file (numpy appends ``.npz`` to a name without it; :func:`load` of the
        same name finds it); :func:`load` restores it exactly."""
        folder = os.path.dirname(os.path.abspath(os.fspath(path)))
        if not os.path.isdir(folder):
            raise InputError(f"path: must be in an existing folder; {folder} does not exist, got "
                             f"{os.fspath(path)!r}")
        if os.path.isdir(os.fspath(path)):
            raise InputError(f"path: must be a file name, got {os.fspath(path)!r}, which is a folder "
                             "(e.g. add /schedule.npz)")
        extra = {k: getattr(self, k) for k in ("probs", "uplink_probs") if getattr(self, k) is not None}
        np.savez_compressed(path, active=self.active, uplink_ok=self.uplink_ok,
                            local_steps=self.local_steps,
                            spec=np.array(json.dumps(self.spec, sort_keys=True)), **extra)

    def __repr__(self) -> str:
        return (f"Schedule(kind={self.kind!r}, rounds={self.num_rounds}, "
                f"num_clients={self.num_clients}, mean_active={self.active.sum(1).mean():.2f})")


def load(path: str | os.PathLike) -> Schedule:
    """Load a schedule written by :meth:`Schedule.save` (a name without ``.npz`` that is not a file
    reads the ``.npz`` that save wrote for it).

    Raises:
        InputError: the file is missing or is not a schedule file (naming the file).
    """
    not_schedule = (f"schedule: {os.fspath(path)} is not a schedule file (.npz written by Schedule.save)")
    if not os.path.exists(path) and os.path.isfile(os.fspath(path) + ".npz"):
        path = os.fspath(path) + ".npz"          # Schedule.save("name") wrote name.npz (numpy's suffix)
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise InputError(not_schedule)
        with z:
            missing = [k for k in ("active", "uplink_ok", "local_steps", "spec") if k not in z.files]
            if missing:
                raise InputError(f"schedule: {os.fspath(path)} is not a schedule file (it lacks "
                                 f"{', '.join(missing)}; write one with Schedule.save)")
            opt = {k: (z[k] if k in z.files else None) for k in ("probs", "uplink_probs")}
            return Schedule(z["active"], z["uplink_ok"], z["local_steps"], json.loads(str(z["spec"])), **opt)
    except (OSError, EOFError, zipfile.BadZipFile, json.JSONDecodeError, ValueError) as e:
        if str(e).startswith("schedule: "):
            raise
        if isinstance(e, ValueError) and "pickled" in str(e):      # neither .npz nor .npy: e.g. text
            raise InputError(not_schedule) from None
        why = str(e).split(".")[0] if str(e) else type(e).__name__
        raise InputError(f"schedule: cannot read {os.fspath(path)} as a schedule file written by "
                         f"Schedule.save ({why})") from None


# --------------------------------------------------------------------------------------------
# Validation helpers: one message naming the field and the allowed values
# --------------------------------------------------------------------------------------------
def _integral(name: str, arr: Any) -> np.ndarray:
    """An int64 copy of ``arr``, refusing entries that are not whole numbers (no truncation)."""
    a = np.asarray(arr)
    if a.dtype == bool or np.issubdtype(a.dtype, np.integer):
        return a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.number):
        raise InputError(f"{name}: expected integer counts, got an array of {a.dtype}")
    bad = ~np.isfinite(a) | (a != np.round(a))
    if bad.any():
        raise InputError(f"{name}: expected integer counts, got {a[bad].ravel()[0]!r} at index "
                         f"{tuple(int(i) for i in np.argwhere(bad)[0])}")
    return a.astype(np.int64)


def _weights(name: str, q: Any, n: int) -> np.ndarray:
    try:
        q = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected {n} real sampling weights, got {q!r}") from None
    if q.shape != (n,):
        raise InputError(f"{name}: expected {n} sampling weights (one per client), got shape {q.shape}")
    bad = np.flatnonzero(~np.isfinite(q) | (q < 0))
    if len(bad):
        raise InputError(f"{name}: weights must be finite and >= 0; entry {bad[0]} is {q[bad[0]]:g}")
    if not np.isclose(q.sum(), 1.0, atol=1e-8):
        raise InputError(f"{name}: weights must be >= 0 and sum to 1, got sum {q.sum():.6g}")
    return q / q.sum()


# --------------------------------------------------------------------------------------------
# The registry of kinds: each kind declares its arguments (name, type, default, check) with it
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Draw:
    """What a participation kind draws: the activity counts [rounds, N] and, for kinds that define
    them, the true participation probabilities p_i^t [rounds, N] (None otherwise)."""

    active: np.ndarray
    probs: np.ndarray | None = None


#: the default of a required argument
REQUIRED = inspect.Parameter.empty

#: the arguments of :func:`build` that set each client's local work: steps, or a range to draw them
#: from, or epochs (or their range); one of them at a time
LOCAL_WORK = ("local_steps", "local_steps_range", "local_epochs", "local_epochs_range")

#: the types an argument of a kind may declare, and how an error message names them
TYPES = {"number": "a number", "integer": "an integer", "text": "a text (str)", "path": "a file path (str)",
         "bool": "True or False", "array": "an array of numbers", "function": "a function",
         "mask": "an array of 0/1 or booleans"}


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _is_array(v: Any) -> bool:
    """A (nested) list / tuple / array of numbers, never of strings or bools."""
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "iuf"
    if hasattr(v, "detach") and hasattr(v, "dtype"):                  # a torch tensor
        return not str(v.dtype).endswith("bool")
    if isinstance(v, (list, tuple)):
        return all(_is_number(x) or (isinstance(x, (list, tuple)) and _is_array(x)) for x in v)
    if hasattr(v, "__array__") and not isinstance(v, (str, bytes)):        # a pandas frame, a series
        try:
            return np.asarray(v).dtype.kind in "iuf"
        except (TypeError, ValueError):
            return False
    return False


_IS = {"number": _is_number,
       "integer": lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)),
       "text": lambda v: isinstance(v, str), "path": lambda v: isinstance(v, (str, os.PathLike)),
       "bool": lambda v: isinstance(v, (bool, np.bool_)), "array": _is_array, "function": callable,
       "mask": lambda v: _is_array(v) or _is_bool_array(v)}


def _is_bool_array(v: Any) -> bool:
    """A numpy array, a torch tensor or a (nested) list / tuple of booleans."""
    if isinstance(v, np.ndarray) or (hasattr(v, "detach") and hasattr(v, "dtype")):
        return str(v.dtype).endswith("bool")
    if isinstance(v, (list, tuple)) and v:
        return all(isinstance(x, (bool, np.bool_)) or (isinstance(x, (list, tuple)) and _is_bool_array(x))
                   for x in v)
    return False


def _shown(value: Any) -> str:
    """``repr(value)``, or for an array (or a long list) its kind and shape: an error message
    names the value without printing a whole matrix."""
    if isinstance(value, np.ndarray) or (hasattr(value, "detach") and hasattr(value, "shape")):
        return f"{type(value).__name__} of shape {tuple(value.shape)} and dtype {value.dtype}"
    if hasattr(value, "shape") and hasattr(value, "__array__"):        # a pandas frame or series
        return f"{type(value).__name__} of shape {tuple(value.shape)}"
    text = " ".join(repr(value).split())
    return text if len(text) <= 200 else text[:200] + " ..."


def _either(words: Any) -> str:
    """``a, b or c``."""
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


@dataclass(frozen=True)
class Arg:
    """One argument of a participation kind, declared with the kind (:func:`register_kind`).

    Its ``default`` is its value when not given; :data:`REQUIRED` (the default) makes it required,
    and None makes None allowed. (Documented here rather than under Attributes: the sentinel's
    own docstring makes autodoc list ``default`` by itself.)

    Attributes:
        name: the argument's name (a key of a config's ``participation_args``).
        type: one of :data:`TYPES` or a tuple of them (e.g. ``("number", "array")`` for a
            probability given as a scalar or one per client).
        low, high: the allowed range of a number, an integer or each entry of an array (None: no
            bound); ``high="n"`` is the number of clients.
        low_open, high_open: whether the bound itself is excluded.
        choices: the allowed values of a text (or any other type).
        noun: what the values are, for messages (``"probabilities"``: "p: probabilities must lie in
            (0, 1]").
        doc: one line on what it does.
    """

    name: str
    type: str | tuple[str, ...]
    default: Any = REQUIRED
    low: float | None = None
    high: float | str | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    noun: str = ""
    doc: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise InputError(f"name: an argument's name must be an identifier, got {self.name!r}")
        types = (self.type,) if isinstance(self.type, str) else tuple(self.type)
        unknown = [t for t in types if t not in TYPES]
        if not types or unknown:
            raise InputError(f"{self.name}: type must be one of {', '.join(TYPES)} (or a tuple of them); got "
                             f"{self.type!r}")
        object.__setattr__(self, "type", types)
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        if self.high is not None and not _is_number(self.high) and self.high != "n":
            raise InputError(f"{self.name}: high must be a number, 'n' (the number of clients) or None; got "
                             f"{self.high!r}")
        if self.low is not None and _is_number(self.high) and self.low > self.high:
            raise InputError(f"{self.name}: low must be <= high, got low {self.low!r} > high {self.high!r}")
        if self.default is not REQUIRED and self.default is not None:
            try:
                self.check(self.default)
            except ValueError as e:
                raise InputError(f"{self.name}: default must be allowed by its own check, got "
                                 f"{self.default!r} ({e})") from None

    @property
    def required(self) -> bool:
        """Whether the argument must be given."""
        return self.default is REQUIRED

    def allowed(self, n: int | None = None) -> str:
        """What the argument allows, in words (``an integer in 1..N``, ``one of 'a', 'b'``)."""
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        what = _either(TYPES[t] for t in self.type)
        rng = self._range(n)
        return f"{what} {rng}".strip() + (" (or None)" if self.default is None else "")

    def _range(self, n: int | None) -> str:
        high = ("N" if n is None else n) if self.high == "n" else self.high
        if self.type == ("integer",) and self.low is not None and high is not None:
            return f"in {self.low}..{high}"
        if self.low is not None and high is not None:
            return (f"in {'(' if self.low_open else '['}{self.low:g}, "
                    f"{high if isinstance(high, str) else format(high, 'g')}{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if high is not None:
            return f"{'<' if self.high_open else '<='} {high if isinstance(high, str) else format(high, 'g')}"
        return ""

    def check(self, value: Any, n: int | None = None) -> None:
        """Raise one ValueError naming the argument, the value and what is allowed when ``value``
        has the wrong type or lies outside the declared range / choices (``n``: the number of
        clients, for ``high="n"``; None: that bound is not checked)."""
        if value is None and self.default is None:
            return
        if not any(_IS[t](value) for t in self.type):
            raise InputError(f"{self.name}: {self._type_message()}, got {_shown(value)}")
        if self.choices is not None:
            if value not in self.choices:
                raise InputError(f"{self.name}: must be one of {', '.join(map(str, self.choices))}; "
                                 f"got {value!r}")
            return
        if callable(value) or (self.low is None and self.high is None) or not (
                _is_number(value) or _is_array(value)):
            return
        self._check_range(value, n)

    def _type_message(self) -> str:
        if self.type == ("integer",):
            return "must be an integer"
        whats = _either(TYPES[t] for t in self.type)
        if set(self.type) <= {"number", "integer", "array", "function"}:
            return f"must be numbers ({whats}; not strings or bools)"
        return f"must be {_either(TYPES[t] for t in self.type)}"

    def _check_range(self, value: Any, n: int | None) -> None:
        high = (n if self.high == "n" else self.high)
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{self.name}: must be a rectangular array of numbers, got {value!r}") from None
        ok = np.isfinite(arr)
        if self.low is not None:
            ok &= (arr > self.low) if self.low_open else (arr >= self.low)
        if high is not None:
            ok &= (arr < high) if self.high_open else (arr <= high)
        if ok.all():
            return
        rng = self._range(n)
        if self.type == ("integer",):
            raise InputError(f"{self.name}: must be an integer {rng}, got {value!r}")
        verb = f"must lie {rng}" if rng.startswith("in ") else f"must be {rng}"
        if arr.ndim == 0:
            shown = f", got {value!r}"
        else:
            at = tuple(int(i) for i in np.argwhere(~ok)[0])
            shown = f"; entry {at[0] if len(at) == 1 else at} is {arr[at]:g}"
        raise InputError(f"{self.name}: {self.noun + ' ' if self.noun else ''}{verb}{shown}")


@dataclass(frozen=True)
class Kind:
    """A registered participation kind (:func:`register_kind`).

    Attributes:
        name: its name (a config's ``participation``).
        builder: ``builder(rng, rounds, n, **arguments) -> Draw`` (or the activity array alone):
            draws the counts [rounds, N] from ``rng`` (a ``numpy.random.Generator``).
        description: one line on what it models.
        args: its arguments, declared (:class:`Arg`).
        draws: whether the schedule depends on the seed (False: ``full``, ``trace``).
        key: the arguments as a run's store key holds them (e.g. a file by its content, never its
            path), or None (the arguments as given).
    """

    name: str
    builder: Callable[..., Draw]
    description: str
    args: tuple[Arg, ...] = ()
    draws: bool = True
    key: Callable[[dict], dict] | None = None

    @property
    def module(self) -> str:
        """The module that defines the builder (a worker process imports it)."""
        return self.builder.__module__

    def arg(self, name: str) -> Arg | None:
        """The argument ``name`` of this kind or of every kind (:data:`COMMON_ARGS`), else None."""
        return next((a for a in (*self.args, *COMMON_ARGS) if a.name == name), None)

    def signature(self) -> str:
        """Its arguments in one line: ``per_round, on_rate=0.05``."""
        parts = [a.name if a.required else f"{a.name}={a.default!r}" for a in self.args]
        return ", ".join(parts) or "no arguments"

    def describe(self) -> str:
        """One documentation line per argument: its name, what it allows, its default and its doc."""
        return "\n".join(f"{a.name}: {a.allowed()}{'' if a.required else f' (default {a.default!r})'}"
                         f"{'; ' + a.doc if a.doc else ''}" for a in self.args)


#: the arguments every kind takes (:func:`build`): local work, uplink success, the seed
COMMON_ARGS = (
    Arg("seed", "integer", 0, low=0, doc="seed of the schedule's random streams"),
    Arg("local_steps", ("integer", "array"), 1, low=1, doc="K: an int, per client [N] or [rounds, N]"),
    Arg("local_steps_range", "array", None, low=1, doc="(lo, hi) or [N, 2]: steps drawn every round"),
    Arg("uplink_p", ("number", "array", "function"), None, low=0, low_open=True, high=1,
        noun="probabilities", doc="probability that an active client's upload arrives"),
    Arg("uplink_p_range", "array", None, doc="(lo, hi) or [N, 2]: upload probabilities drawn every round"),
    Arg("local_epochs", ("integer", "array"), None, low=1, doc="local work in epochs instead of steps"),
    Arg("local_epochs_range", "array", None, low=1, doc="(lo, hi) or [N, 2]: epochs drawn every round"),
    Arg("client_sizes", "array", None, low=1, doc="n_i, the clients' sample counts (with epochs)"),
    Arg("batch_size", "integer", None, low=1, doc="B (with epochs)"),
)

_KINDS: dict[str, Kind] = {}
_BUILTIN: frozenset[str] = frozenset()


def register_kind(name: str, builder: Callable[..., Draw | np.ndarray], *, description: str,
                  args: Any = (), draws: bool = True, key: Callable[[dict], dict] | None = None,
                  replace: bool = False) -> Kind:
    """Register a participation kind, so that :func:`build`, ``run`` and a config's
    ``participation`` know it, and :meth:`ExperimentConfig.validate` checks its arguments from
    their declarations (one message naming the argument, the value and what is allowed).

    Args:
        name: the kind's name; a built-in kind's name, or a name already registered (unless
            ``replace``), is refused.
        builder: ``builder(rng, rounds, n, **arguments)`` returning a :class:`Draw` or the
            activity counts [rounds, n]; its parameters after the first three are the declared
            arguments (their defaults, where it has them, equal to the declared ones).
        description: one line on what it models.
        args: its arguments, :class:`Arg` objects (a sequence, or a dict name -> Arg).
        draws: whether the schedule depends on the seed (False warns a sweep over seeds).
        key: the arguments as a run's store key holds them (e.g. a file's digest for its path).
        replace: replace a kind registered before (not a built-in one).

    A kind defined in ``__main__`` (a notebook cell) runs in this process; a sweep with worker
    processes refuses it (define it in a module and import that).

    Raises:
        InputError: a bad name, a clash, or arguments that do not match the builder.
    """
    check_new_name("participation kind", name, _BUILTIN, _KINDS, replace)
    if not isinstance(description, str) or not description.strip():
        raise InputError(f"description: kind {name!r} needs a one-line description, got {description!r}")
    spec = Kind(name, capture(builder), description, _declared(name, builder, args), bool(draws), key)
    _KINDS[name] = spec
    _document_kinds()
    return spec


def kind(name: str, *, description: str, args: Any = (), draws: bool = True,
         key: Callable[[dict], dict] | None = None, replace: bool = False):
    """Decorator form of :func:`register_kind`: ``@participation.kind("mine", description=...,
    args=[participation.Arg("mode", "text", "a", choices=("a", "b"))])`` over the builder."""
    def register(builder):
        register_kind(name, builder, description=description, args=args, draws=draws, key=key,
                      replace=replace)
        return builder
    return register


_OWN = ("kind", "num_clients", "rounds")


def _declared(name: str, builder: Any, args: Any) -> tuple[Arg, ...]:
    """The declared arguments, checked against the builder's signature."""
    if not callable(builder):
        raise InputError(f"builder: kind {name!r} needs a function (rng, rounds, n, **arguments), "
                         f"got {builder!r}")
    decl = tuple(args.values()) if isinstance(args, dict) else tuple(args)
    if not all(isinstance(a, Arg) for a in decl):
        raise InputError(f"args: kind {name!r} declares its arguments as participation.Arg objects, "
                         f"got {args!r}")
    names = [a.name for a in decl]
    clash = [a for a in names if a in _OWN or any(c.name == a for c in COMMON_ARGS) or names.count(a) > 1]
    if clash:
        raise InputError(f"args: kind {name!r} declares {clash[0]!r} twice or as an argument every kind has "
                         f"({', '.join(_OWN + tuple(c.name for c in COMMON_ARGS))})")
    params = list(inspect.signature(builder).parameters.values())
    if len(params) < 3 or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params[:3]):
        raise InputError(f"builder: kind {name!r}'s function must take (rng, rounds, n, ...) first")
    rest = {p.name: p for p in params[3:] if p.kind is not p.VAR_KEYWORD}
    if len(rest) < len(params) - 3 or set(rest) == set(names):          # **kwargs, or the same names
        for a in decl:
            got = rest.get(a.name)
            if got is not None and got.default is not REQUIRED and not _same(got.default, a.default):
                raise InputError(f"args: kind {name!r}'s argument {a.name!r} declares default {a.default!r}, "
                                 f"its function {got.default!r}")
        return decl
    raise InputError(f"args: kind {name!r} declares {', '.join(names) or 'no arguments'}; its function takes "
                     f"{', '.join(rest) or 'none'} after its first three parameters "
                     f"({', '.join(p.name for p in params[:3])}), which must be (rng, rounds, n)")


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _document_kinds() -> None:
    """Write the table of kinds and their declared arguments into :func:`build`'s docstring (again
    whenever a kind is registered)."""
    fn = globals().get("build")
    if fn is None:                                      # the built-in kinds, before build exists
        return
    base = fn.__dict__.setdefault("_doc_without_kinds", fn.__doc__ or "")
    lines = ["", "    Kinds and their arguments (``participation.arguments(kind)``, declared with each kind:",
             "    :func:`register_kind`):", ""]
    for name, spec in _KINDS.items():
        args = "; ".join(f"{a.name}{'' if a.required else f'={a.default!r}'}: {a.allowed()}"
                         for a in spec.args)
        lines.append(f"    - ``{name}`` ({args or 'no arguments'}): {spec.description}")
    fn.__doc__ = base + "\n".join(lines) + "\n"


def get_kind(name: str) -> Kind:
    """The registered kind ``name`` (its builder, arguments and description).

    Raises:
        InputError: an unknown kind, naming the known ones.
    """
    if name not in _KINDS:
        raise InputError(f"kind: unknown participation kind {name!r}; known kinds: "
                         f"{', '.join(sorted(_KINDS))}")
    return _KINDS[name]


def check_arguments(name: str, args: dict, n: int | None = None) -> None:
    """Check ``args`` (a config's ``participation_args``: the kind's own and those of
    :data:`COMMON_ARGS`) against the kind's declarations: names, required ones, types, ranges and
    choices (``n``: the number of clients where known).

    Raises:
        InputError: one message ``<argument>: ...`` naming the value and what is allowed.
    """
    spec = get_kind(name)
    for arg, value in args.items():
        decl = spec.arg(arg)
        if decl is None:
            raise InputError(f"{arg}: not an argument of participation kind {name!r}; its arguments: "
                             f"{', '.join(a.name for a in (*spec.args, *COMMON_ARGS))}")
        decl.check(value, n)
    missing = [a.name for a in spec.args if a.required and a.name not in args]
    if missing:
        raise InputError(f"{missing[0]}: required by kind {name!r} ({spec.arg(missing[0]).allowed(n)})")


def key_arguments(name: str, args: dict) -> dict:
    """The arguments of kind ``name`` as a run's store key holds them (its ``key`` hook; the
    arguments as given for a kind without one, or one not registered in this process)."""
    spec = _KINDS.get(name)
    return dict(args) if spec is None or spec.key is None else spec.key(dict(args))


def inputs_here(name: str, args: dict) -> bool:
    """Whether every file the arguments name (those of type ``path`` given as text) is on this
    machine (a relative path is also looked up in the data folder: :func:`fedlib.traces.resolve`)."""
    from .traces import resolve
    spec = get_kind(name)
    for arg, value in args.items():
        decl = spec.arg(arg)
        if decl is not None and "path" in decl.type and isinstance(value, (str, os.PathLike)) \
                and not resolve(value).is_file():
            return False
    return True


def draws_from_seed(name: str, args: dict) -> bool:
    """Whether a schedule of kind ``name`` with ``args`` depends on its seed: its kind draws, or
    random uplinks or local work are attached (any argument but the kind's own and ``local_steps``)."""
    spec = get_kind(name)
    return spec.draws or not set(args) <= {a.name for a in spec.args} | {"local_steps"}


#: the argument S of the kinds that pick S clients a round
_PER_ROUND = Arg("per_round", "integer", low=1, high="n", doc="S, clients per round")
#: sampling weights q, one per client
_Q = Arg("q", "array", low=0, noun="weights", doc="weights [N], >= 0, summing to 1")
_RECORDED_ARGS = (
    Arg("path", "path", doc="the trace file (also looked up in the data folder)"),
    Arg("format", "text", "stunner", choices=FORMATS, doc="the file's layout"),
    Arg("round_minutes", "number", 60, low=0, low_open=True, doc="the length of a round"),
    Arg("rule", "text", "start", choices=RULES, doc="online when the round starts, or throughout it"),
    Arg("offset", "integer", 0, low=0, doc="the round of the records where round 0 falls"),
    Arg("sha256", "text", None, doc="the file's expected SHA-256 (hex)"),
)


def _trace_key(args: dict) -> dict:
    """A trace is keyed by its content, not by the form or the path it came in."""
    if "trace" not in args:
        return args
    return {**args, "trace": {"digest": trace_digest(args["trace"])}}


def _recorded_key(args: dict) -> dict:
    """A recorded trace is keyed by its file's SHA-256 (the one the config gives, else the
    file's), never its path, so that a store moves between machines."""
    if "path" not in args:
        return args
    args = dict(args)
    path = args.pop("path")
    args["sha256"] = str(args.get("sha256") or file_sha256(path)).lower()
    return args


@kind("full", description="every client in every round", draws=False)
def _full(rng: np.random.Generator, rounds: int, n: int) -> Draw:
    """Full participation."""
    return Draw(np.ones((rounds, n), dtype=np.int64), np.ones((rounds, n)))


def _top_k_mask(keys: np.ndarray, k: int) -> np.ndarray:
    """0/1 matrix marking the k largest keys of each row."""
    idx = np.argpartition(-keys, k - 1, axis=1)[:, :k]
    out = np.zeros(keys.shape, dtype=np.int64)
    np.put_along_axis(out, idx, 1, axis=1)
    return out


@kind("uniform", description="Case 1 / P1: per_round (S) of N uniformly without replacement",
      args=[_PER_ROUND])
def _uniform(rng: np.random.Generator, rounds: int, n: int, per_round: int) -> Draw:
    """Case 1 of FedSUM Sec. 2.1 (P1 of App. H).

    Args:
        per_round: S, clients drawn uniformly without replacement each round (1 <= S <= N).
    """
    s = check_int("per_round", per_round, 1, n)
    return Draw(_top_k_mask(rng.random((rounds, n)), s), np.full((rounds, n), s / n))


@kind("bernoulli", description="Case 2 / P2: client i present independently with probability p_i^t",
      args=[Arg("p", ("number", "array", "function"), low=0, low_open=True, high=1, noun="probabilities",
                doc="p_i^t: a scalar, [N], [rounds, N] or t -> p")])
def _bernoulli(rng: np.random.Generator, rounds: int, n: int, p: Any) -> Draw:
    """Case 2 of FedSUM Sec. 2.1 (P2 of App. H with p = S/N).

    Args:
        p: probability in (0, 1]: a scalar, a per-client vector [N], a [rounds, N] array, or a
            callable ``t -> p`` returning a scalar or [N].
    """
    pm = prob_matrix("p", p, rounds, n)
    return Draw((rng.random((rounds, n)) < pm).astype(np.int64), pm)


def sine_probs(t: np.ndarray, base: float, amplitude: float = 0.3, period: float = 10.0) -> np.ndarray:
    """P3 probabilities base * (amplitude * sin(2 pi t / period) + 1 - amplitude) at rounds t."""
    return base * (amplitude * np.sin(2 * np.pi * t / period) + 1 - amplitude)


@kind("sine", description="P3: Bernoulli with p_i^t = (S/N)(a sin(2 pi t / period) + 1 - a)",
      args=[Arg("per_round", "integer", None, low=1, high="n", doc="S; the base probability is S/N"),
            Arg("p", "number", None, low=0, low_open=True, high=1, doc="the base probability (instead of S)"),
            Arg("amplitude", "number", 0.3, low=0, high=1, high_open=True, doc="a"),
            Arg("period", "number", 10.0, low=0, low_open=True, doc="in rounds")])
def _sine(rng: np.random.Generator, rounds: int, n: int, per_round: int | None = None,
          p: float | None = None, amplitude: float = 0.3, period: float = 10.0) -> Draw:
    """P3 of FedSUM App. H: p_i^t = (S/N)(0.3 sin(pi t / 5) + 0.7) with the defaults.

    Args:
        per_round: S; the base probability is S/N. Give this or ``p``.
        p: the base probability directly (instead of ``per_round``).
        amplitude: a in [0, 1) (default 0.3).
        period: period of the sine in rounds (default 10, i.e. sin(pi t / 5)).
    """
    if (per_round is None) == (p is None):
        raise InputError("per_round / p: give exactly one of per_round (S) or p (base probability)")
    base = (check_int("per_round", per_round, 1, n) / n) if per_round is not None else float(p)
    if not 0 <= amplitude < 1:
        raise InputError(f"amplitude: must lie in [0, 1), got {amplitude}")
    if not period > 0:
        raise InputError(f"period: must be > 0, got {period}")
    probs = sine_probs(np.arange(rounds), base, amplitude, period)
    pm = check_probs("p", np.broadcast_to(probs[:, None], (rounds, n)))
    return Draw((rng.random((rounds, n)) < pm).astype(np.int64), pm)


def biased_probs(n: int, start: float = 0.5, step: float = 0.05, group: int = 11) -> np.ndarray:
    """Per-client probabilities of FedSUM App. H.8: ``start`` for clients 1-11, minus ``step``
    for every further block of ``group`` clients (0.5, 0.45, 0.4, ...)."""
    group = check_int("group", group, 1)
    p = start - step * (np.arange(n) // group)
    return check_probs("p (biased: start - step * (i // group))", p)


@kind("biased", description="FedSUM H.8: Bernoulli, p falls by 0.05 every 11 clients from 0.5",
      args=[Arg("start", "number", 0.5, low=0, low_open=True, high=1, doc="probability of the first block"),
            Arg("step", "number", 0.05, doc="decrease per block"),
            Arg("group", "integer", 11, low=1, doc="clients per block")])
def _biased(rng: np.random.Generator, rounds: int, n: int, start: float = 0.5,
            step: float = 0.05, group: int = 11) -> Draw:
    """Biased participation of FedSUM App. H.8 (see :func:`biased_probs`).

    Args:
        start: probability of the first block (default 0.5).
        step: decrease per block (default 0.05).
        group: clients per block (default 11).
    """
    p = biased_probs(n, start, step, group)
    return Draw((rng.random((rounds, n)) < p).astype(np.int64), np.broadcast_to(p, (rounds, n)))


@kind("cyclic", description="Case 3: fixed order, blocks of S consecutive clients, wrap-around",
      args=[_PER_ROUND], draws=False)
def _cyclic(rng: np.random.Generator, rounds: int, n: int, per_round: int) -> Draw:
    """Case 3 of FedSUM Sec. 2.1 (deterministic cyclic). Round t selects clients
    (t S + j) mod N, j = 0..S-1. Uses no randomness.

    Args:
        per_round: S (1 <= S <= N).
    """
    s = check_int("per_round", per_round, 1, n)
    idx = (np.arange(rounds)[:, None] * s + np.arange(s)[None, :]) % n
    out = np.zeros((rounds, n), dtype=np.int64)
    np.put_along_axis(out, idx, 1, axis=1)
    return Draw(out)


@kind("reshuffled_cyclic", description="Case 4: like cyclic, the order reshuffled every epoch",
      args=[_PER_ROUND])
def _reshuffled_cyclic(rng: np.random.Generator, rounds: int, n: int, per_round: int) -> Draw:
    """Case 4 of FedSUM Sec. 2.1 (reshuffled cyclic).

    The clients form a stream of independent random permutations (one per epoch of N client
    slots); each round takes the next S entries. When N is not a multiple of S a block straddles
    two epochs; the next permutation is then drawn with the clients still in the straddling
    block moved behind its first S - r positions (a stable move), so every round has exactly S
    distinct clients and every client appears exactly once per epoch.

    Args:
        per_round: S (1 <= S <= N).
    """
    s = check_int("per_round", per_round, 1, n)
    out = np.zeros((rounds, n), dtype=np.int64)
    perm = rng.permutation(n)
    pos = 0
    for t in range(rounds):
        if pos + s <= n:
            block = perm[pos:pos + s]
            pos += s
        else:
            rest = perm[pos:]
            nxt = rng.permutation(n)
            need = s - len(rest)
            clash = np.isin(nxt, rest)
            head = nxt[~clash][:need]
            nxt = np.concatenate([head, nxt[~np.isin(nxt, head)]])  # head first, rest in order
            # the clients of `rest` must not sit among the first `need` entries: they do not,
            # because `head` was taken from the non-clashing ones.
            block = np.concatenate([rest, head])
            perm, pos = nxt, need
        out[t, block] = 1
        if pos == n:
            perm, pos = rng.permutation(n), 0
    return Draw(out)


@kind("markov", description="two-state on/off chain per client (FedAU): on-rate and stationary p",
      args=[Arg("p", ("number", "array"), low=0, low_open=True, high=1, noun="probabilities",
                doc="stationary probability: a scalar or [N]"),
            Arg("on_rate", "number", 0.05, low=0, low_open=True, high=1,
                doc="P(off -> on) before rescaling")])
def _markov(rng: np.random.Generator, rounds: int, n: int, p: Any, on_rate: float = 0.05) -> Draw:
    """Markov participation of FedAU (Wang & Ji 2023).

    P(off -> on) = on_rate and P(on -> off) = on_rate (1/p - 1), both rescaled by their maximum
    when one exceeds 1, so the stationary probability of "on" is p. The first round's state is
    drawn from the stationary distribution.

    Args:
        p: stationary probability in (0, 1]: scalar or per-client vector [N].
        on_rate: P(off -> on) before rescaling, in (0, 1].
    """
    pv = check_probs("p", np.broadcast_to(_shape_check("p", p, (n,)), (n,)))
    check_probs("on_rate", np.asarray(on_rate))
    up = np.full(n, float(on_rate))
    down = on_rate * (1.0 / pv - 1.0)
    scale = np.maximum(1.0, np.maximum(up, down))
    up, down = up / scale, down / scale
    state = rng.random(n) < pv
    u = rng.random((rounds, n))
    out = np.empty((rounds, n), dtype=np.int64)
    for t in range(rounds):
        if t > 0:
            state = np.where(state, u[t] >= down, u[t] < up)
        out[t] = state
    return Draw(out, np.broadcast_to(pv, (rounds, n)))      # started stationary: every round's marginal is p


def _shape_check(name: str, value: Any, shape: tuple) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim != 0 and arr.shape != shape:
        raise InputError(f"{name}: expected a scalar or shape {shape}, got shape {arr.shape}")
    return arr


@kind("weighted", description="S of N without replacement, drawn with probabilities q (FOCUS 'arbitrary')",
      args=[Arg("per_round", "integer", low=1, high="n", doc="S (at most the clients with q_i > 0)"), _Q])
def _weighted(rng: np.random.Generator, rounds: int, n: int, per_round: int, q: Any) -> Draw:
    """Weighted sampling without replacement (successive sampling proportional to q, drawn by
    the Gumbel-top-k trick), the "arbitrary" participation of the FOCUS toy.

    Args:
        per_round: S (1 <= S <= number of clients with q_i > 0).
        q: sampling weights [N], >= 0, summing to 1.
    """
    qv = _weights("q", q, n)
    s = check_int("per_round", per_round, 1, int((qv > 0).sum()))
    with np.errstate(divide="ignore"):
        keys = np.log(qv)[None, :] - np.log(-np.log(rng.random((rounds, n))))
    return Draw(_top_k_mask(keys, s))


@kind("with_replacement",
      description="K draws with replacement by q; a client drawn m times counts m (FedACS)",
      args=[Arg("draws", "integer", low=1, doc="draws per round"), _Q])
def _with_replacement(rng: np.random.Generator, rounds: int, n: int, draws: int, q: Any) -> Draw:
    """Sampling with replacement (FedACS): ``draws`` clients per round by probabilities q;
    ``active[t, i]`` is how many times client i was drawn.

    Args:
        draws: number of draws per round (>= 1).
        q: sampling probabilities [N], >= 0, summing to 1.
    """
    k = check_int("draws", draws, 1)
    qv = _weights("q", q, n)
    return Draw(rng.multinomial(k, qv, size=rounds).astype(np.int64))


@kind("periodic", description="Wang & Ji 2022: groups available in windows, S picked by a permutation walk",
      args=[_PER_ROUND, Arg("groups", ("integer", "array"), 5, doc="G, or a group id 0..G-1 per client"),
            Arg("window", "integer", 100, low=1, doc="rounds a group stays available"),
            Arg("cycle", "integer", None, low=1, doc="period of the pattern (default G * window)")])
def _periodic(rng: np.random.Generator, rounds: int, n: int, per_round: int, groups: Any = 5,
              window: int = 100, cycle: int | None = None) -> Draw:
    """Periodic availability of Wang & Ji (2022), as in their public code.

    Group g is available in rounds [start_g + m * cycle, start_g + m * cycle + window) with
    start_g = window * g - offset, offset = int(window * U(0, 1)) drawn once. Clients are chosen
    by the "regularized" walk: walk a random permutation of all N clients, keep the currently
    available ones, skip the others, draw a new permutation when it is exhausted. If fewer than S
    clients are available, all available ones take part.

    Args:
        per_round: S, clients selected per round.
        groups: number of groups G (clients split into G contiguous equal blocks), or an int
            array [N] of group ids 0..G-1.
        window: rounds a group stays available (default 100).
        cycle: period of the pattern (default G * window).
    """
    s = check_int("per_round", per_round, 1, n)
    if np.ndim(groups) == 0:
        g = check_int("groups", groups, 1, n)
        gid = np.arange(n) * g // n
    else:
        gid = np.asarray(groups)
        if gid.shape != (n,) or not np.issubdtype(gid.dtype, np.integer) or gid.min() < 0:
            raise InputError(f"groups: expected an int or {n} non-negative integer group ids")
        g = int(gid.max()) + 1
    window = check_int("window", window, 1)
    cycle = g * window if cycle is None else check_int("cycle", cycle, window)
    offset = int(window * rng.random())
    t = np.arange(rounds)[:, None]
    start = window * np.arange(g)[None, :] - offset
    avail_group = ((t - start) % cycle) < window            # [rounds, G]
    avail = avail_group[:, gid]                              # [rounds, N]
    out = np.zeros((rounds, n), dtype=np.int64)
    perm, pos = rng.permutation(n), 0
    for r in range(rounds):
        want = min(s, int(avail[r].sum()))
        chosen: list[int] = []
        while len(chosen) < want:
            if pos == n:
                perm, pos = rng.permutation(n), 0
            c = perm[pos]
            pos += 1
            if avail[r, c] and c not in chosen:
                chosen.append(c)
        out[r, chosen] = 1
    return Draw(out)


def _binary(path: str) -> bool:
    """Whether the file at ``path`` is not UTF-8 text (its first 8 KiB: a NUL byte or bytes
    that do not decode)."""
    with open(path, "rb") as f:
        head = f.read(8192)
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start < len(head) - 4           # not a multi-byte character cut by the 8 KiB
    return b"\0" in head


def _trace_array(trace: Any) -> np.ndarray:
    """:func:`read_trace` of an array (or nested lists): its rows as long as the first, numbers."""
    try:
        arr = np.asarray(trace)
    except ValueError:
        arr = np.asarray(trace, dtype=object)
    if arr.dtype == object and arr.ndim == 1 and all(np.ndim(r) == 1 for r in arr):
        lens = [len(r) for r in arr]
        bad = next((i for i, k in enumerate(lens) if k != lens[0]), None)
        if bad is not None:
            raise InputError(f"trace: rows of unequal length (row {bad} has {lens[bad]}, expected "
                             f"{lens[0]}, as row 0)")
    if arr.dtype == object or arr.dtype.kind in "US":
        raise InputError(f"trace: entries must be the numbers 0 or 1, got dtype {arr.dtype}")
    return arr.astype(float)


def read_trace(trace: Any) -> np.ndarray:
    """A 0/1 availability matrix [rounds, N] from an array, or from a file: ``.npy`` (numpy's own
    format, no pickles) or CSV. A CSV may have a header row (any non-numeric first row) and an
    index column (a header whose first cell is empty or ``index``, as ``pandas.to_csv`` writes);
    any other cell that is not a number is refused naming the file, its row and column (1-based,
    as an editor shows them). Rows must all be as long as the first.

    Raises:
        InputError: naming the file (or ``trace``) and what is wrong.
    """
    if not isinstance(trace, (str, os.PathLike)):
        return _trace_array(trace)
    path = os.path.expanduser(os.fspath(trace))
    if os.path.isdir(path):
        raise InputError(f"trace: {path} is a folder; give the CSV or .npy file of the trace")
    if not os.path.isfile(path):
        raise InputError(f"trace: no such file {path}")
    if not path.endswith(".npy") and _binary(path):
        ext = os.path.splitext(path)[1] or "a binary file"
        raise InputError(f"trace: {path} is not a CSV or .npy file ({ext} not supported; CSV or .npy)")
    if path.endswith(".npy"):
        try:
            return np.asarray(np.load(path, allow_pickle=False), dtype=float)
        except (ValueError, OSError) as e:
            raise InputError(f"trace: {path} is not a numeric .npy array ({e})") from None
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\r\n").split(",") for line in f if line.strip()]
    if not rows:
        raise InputError(f"trace: {path} is empty")

    def number(cell: str) -> bool:
        try:
            float(cell)
            return True
        except ValueError:
            return False
    first_row, skip_col = 0, 0
    if not all(number(c) for c in rows[0]):                     # a header row
        first_row = 1
        skip_col = int(rows[0][0].strip().lower() in ("", "index", "unnamed: 0"))
    out = []
    for i, row in enumerate(rows[first_row:], start=first_row + 1):
        cells = row[skip_col:]
        if out and len(cells) != len(out[0]):
            raise InputError(f"trace: {path} row {i} has {len(cells)} columns, the rows above "
                             f"{len(out[0])}")
        for j, cell in enumerate(cells, start=skip_col + 1):
            if not number(cell):
                raise InputError(f"trace: {path} row {i}, column {j}: {cell!r} is not a number"
                                 f"{_cell_hint(cell, first_row)}")
        out.append([float(c) for c in cells])
    if not out:
        raise InputError(f"trace: {path} has a header but no rows")
    return np.array(out, dtype=float)


def _cell_hint(cell: str, header_rows: int) -> str:
    """Why a trace file's cell is not a number, where a common layout explains it: another
    separator than the comma, or booleans written as words."""
    seps = ((";", "';'"), ("\t", "tabs"), (" ", "spaces"))
    sep = next((name for c, name in seps if c in cell.strip()), None)
    if sep is not None:
        return (f" (this file separates its values by {sep}; a trace file is comma-separated, as "
                "DataFrame.to_csv writes it)")
    if cell.strip().lower() in ("true", "false", "yes", "no"):
        head = "; row 1 was read as a header" if header_rows else ""
        return f" (entries are 0 or 1: write booleans as integers, e.g. DataFrame.astype(int).to_csv{head})"
    return ""


def trace_digest(trace: Any) -> str:
    """The content of a trace (:func:`read_trace`) as a short digest of its shape and 0/1 entries,
    whatever form it was given in: a run's store key holds this, so a trace file edited after a
    sweep is a new run, and the same matrix as a list, an array or a file is the same run."""
    import hashlib
    arr = read_trace(trace)
    blob = json.dumps(list(arr.shape)).encode() + np.ascontiguousarray(np.nan_to_num(arr, nan=-1)).tobytes()
    return hashlib.sha256(blob).hexdigest()[:16]


@kind("trace", description="a user-supplied 0/1 array or file (CSV, .npy) of shape [rounds, N]",
      args=[Arg("trace", ("mask", "path"),
                doc="0/1 or booleans [rounds, N], or a CSV / .npy file holding it")],
      draws=False, key=_trace_key)
def _trace(rng: np.random.Generator, rounds: int, n: int, trace: Any) -> Draw:
    """Replay a recorded availability trace.

    Args:
        trace: a 0/1 array [rounds, N], or the path of a file holding one (:func:`read_trace`:
            CSV with or without a header row and index column, or ``.npy``).
    """
    arr = read_trace(trace)
    if arr.shape != (rounds, n):
        raise InputError(f"trace: expected shape ({rounds}, {n}), got {arr.shape}")
    if not np.isin(arr, (0, 1)).all():
        bad = np.argwhere(~np.isin(arr, (0, 1)))[0]
        raise InputError(f"trace: entries must be 0 or 1; round {bad[0]}, client {bad[1]} holds "
                         f"{arr[tuple(bad)]:g}")
    return Draw(arr.astype(np.int64))


@kind("recorded",
      description="a recorded availability trace (fedlib.traces), a seeded choice of N of its records",
      args=_RECORDED_ARGS, key=_recorded_key)
def _recorded(rng: np.random.Generator, rounds: int, n: int, path: Any, format: str = "stunner",
              round_minutes: float = 60, rule: str = "start", offset: int = 0,
              sha256: str | None = None) -> Draw:
    """Real availability: N records drawn (without replacement, by the schedule's seed) from a
    recorded trace (:func:`fedlib.traces.availability`), client i replaying record i; round 0 falls
    ``offset`` rounds into the records (e.g. the hour of the week) and a run longer than the
    records wraps around to their start. Records never online are not drawn (such a device never
    takes part). The probabilities a baseline may know are each drawn record's long-run
    availability (its share of rounds online over the whole record).

    Args:
        path: the trace file (a relative path is also looked up in the data folder:
            :func:`fedlib.traces.resolve`); format, round_minutes, rule: as
            :func:`fedlib.traces.availability`.
        offset: the round of the records where round 0 falls (0 <= offset < their rounds).
        sha256: the file's expected SHA-256 (hex): a file with other bytes is refused. A run's
            store key holds the file's digest, never its path (:meth:`ExperimentConfig.key`).
    """
    from .traces import availability, file_sha256
    if sha256 is not None and file_sha256(path) != str(sha256).lower():
        raise InputError(f"sha256: the trace file {path} has SHA-256 {file_sha256(path)}, not the {sha256} "
                         "the config asks for (another version of the trace?)")
    m = availability(path, format=format, round_minutes=round_minutes, rule=rule)
    usable = np.flatnonzero(m.any(axis=1))
    if n > len(usable):
        raise InputError(f"num_clients: {n} clients asked of {path}, which has {len(usable)} records that "
                         f"are ever online (of {m.shape[0]})")
    length = m.shape[1]
    offset = check_int("offset", offset, 0, length - 1)
    pick = usable[rng.choice(len(usable), size=n, replace=False)]
    cols = (offset + np.arange(rounds)) % length
    active = m[pick][:, cols].T.astype(np.int64)
    probs = np.broadcast_to(m[pick].mean(axis=1), (rounds, n)).copy()
    return Draw(active, probs)


# --------------------------------------------------------------------------------------------
# Uplink success and local steps (attach to any kind)
# --------------------------------------------------------------------------------------------
def _prob_ranges(rng: np.random.Generator, ranges: Any, rounds: int, n: int) -> np.ndarray:
    """Probabilities [rounds, N] drawn uniformly from (lo, hi) or per-client [N, 2] ranges."""
    try:
        arr = np.asarray(ranges, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"uplink_p_range: expected (lo, hi) or shape ({n}, 2), got {ranges!r}") from None
    if arr.shape == (2,):
        arr = np.broadcast_to(arr, (n, 2))
    if arr.shape != (n, 2):
        raise InputError(f"uplink_p_range: expected (lo, hi) or shape ({n}, 2), got shape {arr.shape}")
    lo, hi = arr[:, 0], arr[:, 1]
    if not (np.isfinite(arr).all() and (lo > 0).all() and (hi <= 1).all() and (lo <= hi).all()):
        raise InputError("uplink_p_range: ranges (lo, hi) need 0 < lo <= hi <= 1")
    return lo + (hi - lo) * rng.random((rounds, n))


def _one_local_work(local_steps: Any, local_steps_range: Any) -> None:
    """:func:`build`'s local work given once: ``local_steps`` (other than its default, 1) and
    ``local_steps_range`` both given is one InputError (the range won, unseen)."""
    if local_steps_range is not None and not (np.ndim(local_steps) == 0 and local_steps == 1):
        raise InputError(f"local_steps / local_steps_range: give local work either as steps or as a "
                         f"range to draw them from, not both (got local_steps={local_steps!r} and "
                         f"local_steps_range={local_steps_range!r})")


def _local_steps(rng: np.random.Generator, steps: Any, steps_range: Any, rounds: int,
                 n: int, name: str = "local_steps") -> np.ndarray:
    """Local steps [rounds, N] from ``local_steps`` (int, [N] or [rounds, N]) or, when given,
    ``local_steps_range``: (lo, hi) for all clients or [N, 2] per client, drawn uniformly from
    lo..hi (inclusive) every round (FedACS App. I.3.1, dynamic heterogeneity)."""
    if steps_range is not None:
        arr = np.asarray(steps_range)
        if arr.shape == (2,):
            arr = np.broadcast_to(arr, (n, 2))
        if arr.shape in ((n, 2), (2,)) and not np.issubdtype(arr.dtype, np.integer):
            raise InputError(f"{name}_range: must be integers (lo, hi) or an [N, 2] array of integers, "
                             f"got {steps_range!r}")
        if arr.shape != (n, 2) or not np.issubdtype(arr.dtype, np.integer):
            raise InputError(f"{name}_range: expected integers (lo, hi) or shape ({n}, 2), "
                             f"got shape {arr.shape}")
        lo, hi = arr[:, 0], arr[:, 1]
        if (lo < 1).any() or (hi < lo).any():
            raise InputError(f"{name}_range: ranges (lo, hi) need 1 <= lo <= hi")
        return rng.integers(lo, hi + 1, size=(rounds, n)).astype(np.int64)
    arr = np.asarray(steps)
    if arr.ndim == 0:
        k = check_int(name, steps, 1)
        return np.full((rounds, n), k, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"{name}: entries must be integers >= 1")
    out = broadcast_rows(name, arr, rounds, n, "an int, ")
    if (out < 1).any():
        raise InputError(f"{name}: every entry must be >= 1")
    return np.array(out, dtype=np.int64)


def kind_function(kind: str) -> Callable[..., Draw]:
    """The function that draws a participation kind (its signature, after ``rng, rounds, n``, lists
    the kind's arguments)."""
    return get_kind(kind).builder


def arguments(kind: str) -> dict[str, Any]:
    """The arguments of a participation kind with their defaults (:data:`REQUIRED`, i.e.
    ``inspect.Parameter.empty``, for required ones), e.g. ``arguments("uniform") == {"per_round":
    <required>}``. Every kind also takes :data:`COMMON_ARGS` (``local_steps``, ``uplink_p``, ...;
    see :func:`build`)."""
    return {a.name: a.default for a in get_kind(kind).args}


def available() -> dict[str, str]:
    """Names of the participation kinds, each with a one-line description and its arguments."""
    return {name: f"{spec.description} [{spec.signature()}]" for name, spec in _KINDS.items()}


def build(kind: str, num_clients: int, rounds: int, seed: int = 0, *, local_steps: Any = 1,
          local_steps_range: Any = None, uplink_p: Any = None, uplink_p_range: Any = None,
          local_epochs: Any = None, local_epochs_range: Any = None, client_sizes: Any = None,
          batch_size: int | None = None, **kwargs: Any) -> Schedule:
    """Compile a participation model into a :class:`Schedule`.

    Args:
        kind: one of :func:`available` (``full``, ``uniform``, ``bernoulli``, ...).
        num_clients: N >= 1.
        rounds: T >= 1.
        seed: seed of the ``numpy.random.default_rng`` streams.
        local_steps: int K (default 1), per-client [N], or [rounds, N].
        local_steps_range: instead of ``local_steps``, (lo, hi) or per-client ranges [N, 2];
            steps are drawn uniformly from lo..hi every round (dynamic heterogeneity).
        uplink_p: probability that an active client's upload succeeds: None (always), scalar,
            [N], [rounds, N] or callable t -> p.
        local_epochs: instead of steps, local work in epochs (FedACS App. I.3.1): int, [N] or
            [rounds, N]; client i then runs epochs_i^t x ceil(n_i / batch_size) steps.
        local_epochs_range: epochs drawn uniformly from (lo, hi) or per-client [N, 2] ranges
            every round (dynamic heterogeneity), instead of ``local_epochs``.
        client_sizes: n_i, the clients' sample counts [N] (needed with epochs).
        batch_size: B (needed with epochs).
        **kwargs: the kind's own arguments (``per_round``, ``p``, ``q``, ``trace``, ...; see the
            kind's docstring).

    Returns:
        The schedule; the same arguments give identical arrays.

    Raises:
        InputError: unknown kind or argument, or a value outside its allowed range.
    """
    spec = get_kind(kind)
    n, t = _check_size(num_clients, rounds)
    check_arguments(kind, kwargs, n)
    ss = np.random.SeedSequence(check_int("seed", seed, 0))
    r_part, r_up, r_steps = (np.random.default_rng(s) for s in ss.spawn(3))
    defaults = {a.name: a.default for a in spec.args if not a.required and a.name not in kwargs}
    active, probs = _draw(spec, r_part, t, n, {**defaults, **kwargs})
    uplink, uplink_probs = _uplink(r_up, uplink_p, uplink_p_range, t, n)
    epochs_given = local_epochs is not None or local_epochs_range is not None
    if epochs_given:
        if local_steps_range is not None or not (np.ndim(local_steps) == 0 and local_steps == 1):
            raise InputError("local_epochs / local_steps: give local work either in steps or in epochs, "
                             "not both")
        steps = _epoch_steps(r_steps, local_epochs, local_epochs_range, client_sizes, batch_size, t, n)
    else:
        if client_sizes is not None or batch_size is not None:
            raise InputError("client_sizes / batch_size: only used with local_epochs")
        _one_local_work(local_steps, local_steps_range)
        steps = _local_steps(r_steps, local_steps, local_steps_range, t, n)
    epochs = {"local_epochs": local_epochs, "local_epochs_range": local_epochs_range,
              "client_sizes": client_sizes, "batch_size": batch_size} if epochs_given else {}
    spec_dict = {"kind": kind, "num_clients": n, "rounds": t, "seed": int(seed),
                 "local_steps": jsonable(local_steps), "uplink_p": jsonable(uplink_p),
                 **({"uplink_p_range": jsonable(uplink_p_range)} if uplink_p_range is not None else {}),
                 "local_steps_range": jsonable(local_steps_range),
                 **{k: jsonable(v) for k, v in epochs.items()},
                 **{k: jsonable(v) for k, v in kwargs.items()}}
    return Schedule(active, uplink, steps, spec_dict, probs, uplink_probs)


def _check_size(num_clients: Any, rounds: Any) -> tuple[int, int]:
    """N and T, refusing a schedule larger than ``$FEDLIB_MAX_SCHEDULE_GIB`` (default 8 GiB)."""
    n = check_int("num_clients", num_clients, 1)
    t = check_int("rounds", rounds, 1)
    need = t * n * 41 / 2**30          # active, local steps (int64), uplink (bool), probabilities and a temp
    limit = float(os.environ.get("FEDLIB_MAX_SCHEDULE_GIB", "8"))
    if need > limit:
        raise InputError(f"rounds x num_clients: a {t:,} x {n:,} schedule needs about {need:,.0f} GiB "
                         f"(over the limit of {limit:g} GiB; set FEDLIB_MAX_SCHEDULE_GIB to raise it)")
    return n, t


def _draw(spec: Kind, rng: np.random.Generator, t: int, n: int, args: dict) -> tuple[np.ndarray, Any]:
    """The kind's activity counts [t, n] and probabilities (None where it defines none)."""
    draw = spec.builder(rng, t, n, **args)
    if not isinstance(draw, Draw):
        draw = Draw(np.asarray(draw))
    shape = np.shape(draw.active)
    if shape != (t, n):
        raise InputError(f"kind: participation kind {spec.name!r} ({spec.module}) drew activity of shape "
                         f"{shape}, expected (rounds, num_clients) = ({t}, {n})")
    try:
        _integral("active", draw.active)
    except ValueError as e:                        # e.g. probabilities returned instead of 0/1 draws
        raise InputError(f"kind: participation kind {spec.name!r} ({spec.module}) drew activity that is not "
                         f"counts (integers >= 0: 0/1 for who takes part; draw from rng for probabilities): "
                         f"{str(e).partition(': expected integer counts, ')[2]}") from None
    return draw.active, draw.probs


def _uplink(rng: np.random.Generator, uplink_p: Any, uplink_p_range: Any, t: int,
            n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Whether each upload arrives [t, n], and its probability (None: always)."""
    if uplink_p_range is not None:
        if uplink_p is not None:
            raise InputError("uplink_p / uplink_p_range: give the upload probabilities either fixed or as "
                             "ranges, not both")
        uplink_probs = _prob_ranges(rng, uplink_p_range, t, n)
        return rng.random((t, n)) < uplink_probs, uplink_probs
    if uplink_p is None:
        return np.ones((t, n), dtype=bool), None
    uplink_probs = np.array(prob_matrix("uplink_p", uplink_p, t, n), dtype=float)
    return rng.random((t, n)) < uplink_probs, uplink_probs


def _epoch_steps(rng: np.random.Generator, local_epochs: Any, local_epochs_range: Any, client_sizes: Any,
                 batch_size: Any, t: int, n: int) -> np.ndarray:
    """Local steps from epochs: epochs_i^t x ceil(n_i / B) (FedACS App. I.3.1)."""
    if client_sizes is None or batch_size is None:
        raise InputError("client_sizes / batch_size: local_epochs needs the clients' sample counts "
                         "n_i and the batch size B (steps = epochs x ceil(n_i / B))")
    sizes = _integral("client_sizes", client_sizes)
    if sizes.shape != (n,) or (sizes < 1).any():
        raise InputError(f"client_sizes: expected {n} sample counts >= 1, got shape {sizes.shape}")
    b = check_int("batch_size", batch_size, 1)
    epochs = _local_steps(rng, 1 if local_epochs is None else local_epochs, local_epochs_range, t, n,
                          name="local_epochs")
    return epochs * (-(-sizes // b))[None, :]


_BUILTIN = frozenset(_KINDS)
_document_kinds()


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
