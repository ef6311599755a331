"""The interface every algorithm implements, the registry, and learning-rate schedules."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .._source import capture
from .._validate import InputError
from ..engine import LocalResult
from ..problems import Problem
from .options import Options, untyped

__all__ = ["SOLVER_OPTIONS", "Algorithm", "RoundInput", "available", "get", "lr_schedules", "register"]

#: local-solver options (engine arguments) an algorithm may list in ``options``
SOLVER_OPTIONS = ("momentum", "prox_mu")


@dataclass
class RoundInput:
    """Everything an algorithm sees in round t.

    Attributes:
        t: round index.
        active: int tensor [N], how often each client counts (row t of the schedule).
        uplink_ok: bool tensor [N], whose upload would reach the server.
        local_steps: int tensor [N], local steps of each client.
        lr_local: eta_l at this round (after the schedule).
        lr_global: eta_g.
    """

    t: int
    active: torch.Tensor
    uplink_ok: torch.Tensor
    local_steps: torch.Tensor
    lr_local: float
    lr_global: float

    @property
    def delivered(self) -> torch.Tensor:
        """Indices of clients that are active and whose upload succeeds."""
        return ((self.active > 0) & self.uplink_ok).nonzero().squeeze(1)

    @property
    def contacted(self) -> torch.Tensor:
        """Indices of the active clients (those the server sends the model to)."""
        return (self.active > 0).nonzero().squeeze(1)


class Algorithm:
    """An FL algorithm: server state + a round update over tensors [p] and [N, p].

    Subclasses set ``name``, ``description``, ``uplink`` and ``downlink`` (model-sized vectors
    per active client and round, FedSUM Fig. 1(b)), implement :meth:`init` (state for
    ``problem`` and ``x0``) and :meth:`round` (returns x^(t+1)). Local training goes through
    :meth:`local` (the engine's local SGD) so it runs for all active clients at once. Options are
    one frozen dataclass, ``Options`` (a subclass of :class:`~fedlib.algorithms.Options`, its
    fields made by :func:`~fedlib.algorithms.option`), read as ``self.settings.<name>``; the
    server's state set in ``init`` is named in ``server_state`` (checkpoints save it); an
    algorithm whose clients keep state names it in ``client_state`` and writes its round as
    :meth:`client_init`, :meth:`downlink_message`, :meth:`client_step` and :meth:`server_step`
    instead of :meth:`round`.

    Convention: a client whose upload fails is treated as absent for the round (it keeps its
    previous state), unless the algorithm's docstring says otherwise.
    """

    name: str = ""
    description: str = ""
    uplink: int = 1
    downlink: int = 1
    #: the options' names (an algorithm that declares an ``Options`` dataclass gets them from its
    #: fields)
    options: tuple[str, ...] = ()
    #: the options as one frozen dataclass (:class:`fedlib.algorithms.options.Options`): defaults,
    #: what each value must be, a line of doc each; built once per algorithm object as
    #: :attr:`settings` and by a config's check, before any run of a sweep
    Options: type[Options] = Options
    #: names of the state each client keeps between rounds (FedSUM's ``h``, SCAFFOLD's ``ci``);
    #: empty for an algorithm whose clients keep nothing. See :meth:`client_step`.
    client_state: tuple[str, ...] = ()
    #: names of the state the server keeps between rounds (FedSUM's ``y``, SCAFFOLD's ``c``; an
    #: algorithm not split into client and server steps keeps its clients' tables here too)
    server_state: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        """A subclass that does not set its own ``name`` is named after its class (lower case),
        so results never say ``'?'`` and a subclass never runs under its parent's name; one that
        declares ``Options`` but no ``options`` gets the names of its fields (one that declares
        both must list exactly those names)."""
        super().__init_subclass__(**kwargs)
        cls._declared_name = cls.__dict__.get("name")         # as written, for register's message
        cls._named_after_class = not isinstance(cls.__dict__.get("name"), str) or not cls.__dict__.get("name")
        if cls._named_after_class:
            cls.name = cls.__name__.lower()
        if "Options" in cls.__dict__:
            if not (isinstance(cls.Options, type) and issubclass(cls.Options, Options)):
                raise InputError(f"Options: must be a subclass of fedlib.algorithms.Options (a frozen "
                                 f"dataclass), got {cls.Options!r} on {cls.__name__}")
            if "options" not in cls.__dict__:
                cls.options = cls.Options.names()
            elif set(cls.options) != set(cls.Options.names()):
                raise InputError(f"Options: the fields of {cls.Options.__name__} "
                                 f"({', '.join(cls.Options.names()) or 'none'}) must be the options of "
                                 f"{cls.__name__} ({', '.join(cls.options) or 'none'}); leave out options, "
                                 "which then follow from the fields")

    @classmethod
    def options_type(cls) -> type[Options]:
        """The dataclass this algorithm's options are built as: its ``Options`` when that has
        exactly the names of ``options``; else (a class that lists names without declaring their
        types) the inherited fields plus an untyped field, default None, per other name."""
        typed = cls.Options
        if set(typed.names()) == set(cls.options):
            return typed
        cached = cls.__dict__.get("_untyped_options")
        if cached is None:
            base = typed if set(typed.names()) <= set(cls.options) else Options
            cached = untyped(tuple(cls.options), base)
            cls._untyped_options = cached
        return cached

    @classmethod
    def check_options(cls, options: dict) -> Options:
        """The typed options from the values given: a ValueError ``"<option>: ..."`` for a name
        this algorithm does not have or a value its ``Options`` field does not allow, naming
        what it must be."""
        return cls.options_type().build(options, cls.name)

    def __init__(self, problem: Problem, engine, **options):
        #: the options, typed and with their defaults (:attr:`Options`): the one way to read them
        self.settings = self.check_options(options)
        self.problem, self.engine = problem, engine
        self.N = problem.num_clients

    def prepare_schedule(self, schedule, seed: int, lr_local: float):
        """The schedule this algorithm runs on, given the environment's ``schedule``, the run's
        seed and its base local learning rate.

        The environment says who *can* take part, whose upload succeeds and how many local
        steps each client runs; an algorithm that chooses its own clients (FedACS, the
        wait-for-all baselines) returns a new Schedule here. Default: the environment's."""
        return schedule

    def eval_params(self, x: torch.Tensor) -> torch.Tensor:
        """The model the history evaluates after a round (default: the server's x)."""
        return x

    def extra_metrics(self) -> dict[str, float]:
        """Algorithm-specific columns added to every history row (default none)."""
        return {}

    def init(self, x0: torch.Tensor, nominal_steps: float) -> None:
        """Create the state for a run from x0; ``nominal_steps`` is the schedule's mean K.

        For an algorithm with :attr:`client_state`, this also creates its clients' state: here,
        one table [N, ...] per name from :meth:`client_init`; with remote clients (an engine with
        ``remote_clients``, e.g. Flower) each client keeps its own, and the engine's
        ``start_clients`` hands them x0."""
        self.K = float(nominal_steps)
        if self.client_state:
            if getattr(self.engine, "remote_clients", False):
                self.engine.start_clients(self, x0)
            else:
                for k, v in self.client_init(x0).items():
                    setattr(self, k, v.expand(self.N, *v.shape).clone())

    def round(self, x: torch.Tensor, r: RoundInput) -> torch.Tensor:
        """x^(t+1) from x^(t). An algorithm with :attr:`client_state` gets this one, which runs
        its round as its clients and its server do: :meth:`downlink_message` to the clients whose
        upload arrives, :meth:`client_step` on each of them (with its own state), then
        :meth:`server_step` over their uplinks. Others override it."""
        if not self.client_state:
            raise NotImplementedError(f"{type(self).__name__}: implement round(), or client_state with "
                                      "client_init / downlink_message / client_step / server_step")
        S = r.delivered
        down = self.downlink_message(x, r)
        up = self.run_clients(down, S, r) if len(S) else None
        return self.server_step(x, up, S, r)

    # ---------------------------------------------------------- the client / server split of a round
    # An algorithm whose clients keep state implements these four (and lists client_state); the
    # simulation runs them here over tables [N, ...], a deployment (fedlib.flower) runs client_step
    # on each device with the state the device keeps. Tensors in the messages are what the paper's
    # message counts count (``downlink`` / ``uplink`` model units); numbers are settings.

    def client_init(self, x0: torch.Tensor) -> dict[str, torch.Tensor]:
        """One client's state before its first round (each name of :attr:`client_state`)."""
        raise NotImplementedError

    def downlink_message(self, x: torch.Tensor, r: RoundInput) -> dict:
        """What the server sends every client it asks in round r: tensors [p] (``downlink`` of
        them) and numbers."""
        raise NotImplementedError

    def client_step(self, down: dict, state: dict[str, torch.Tensor], clients: torch.Tensor,
                    r: RoundInput) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """The clients' side of round r for ``clients`` [S] at once: from the downlink and their
        state rows ([S, ...] per name), (their uplinks [S, p] per name, their new state rows)."""
        raise NotImplementedError

    def uplink_sent(self) -> tuple[str, ...] | None:
        """The names of :meth:`client_step`'s uplinks that a client sends (``uplink`` of them);
        None: all. Those not sent are rebuilt by the server (:meth:`rebuild_uplink`)."""
        return None

    def rebuild_uplink(self, x: torch.Tensor, down: dict, up: dict[str, torch.Tensor], clients: torch.Tensor,
                       r: RoundInput) -> dict[str, torch.Tensor]:
        """The uplinks a client does not send (:meth:`uplink_sent`), rebuilt on the server."""
        return up

    def server_step(self, x: torch.Tensor, up: dict[str, torch.Tensor] | None, clients: torch.Tensor,
                    r: RoundInput) -> torch.Tensor:
        """x^(t+1) from the uplinks of ``clients`` (rows in their order; None: no upload arrived)."""
        raise NotImplementedError

    def run_clients(self, down: dict, clients: torch.Tensor, r: RoundInput) -> dict[str, torch.Tensor]:
        """:meth:`client_step` of ``clients``: on their devices where the engine has remote clients
        (its ``client_steps``), else here on the rows of the state tables, which it updates."""
        if getattr(self.engine, "remote_clients", False):
            return self.engine.client_steps(self, down, clients, r)
        state = {k: getattr(self, k)[clients] for k in self.client_state}
        up, new = self.client_step(down, state, clients, r)
        for k, v in new.items():
            getattr(self, k)[clients] = v
        return up

    #: attributes that are wiring, not state (never saved in a checkpoint)
    _NOT_STATE = ("problem", "engine", "settings")

    def state_dict(self) -> dict:
        """The algorithm's whole state after :meth:`init` (tensors, numbers, arrays, options),
        as a dict that :meth:`load_state_dict` restores: what a checkpoint saves. By default
        every instance attribute except the problem, the engine and the typed options (built again
        when the algorithm is built); an algorithm with state
        that is not plain data overrides both methods."""
        return {k: v for k, v in vars(self).items() if k not in self._NOT_STATE}

    def load_state_dict(self, state: dict) -> None:
        """Restore a state from :meth:`state_dict` (tensors moved to the model's device)."""
        dev = getattr(self.problem, "device", None)
        for k, v in state.items():
            setattr(self, k, v.to(dev) if isinstance(v, torch.Tensor) and dev is not None else v)

    def client_table(self, x0: torch.Tensor, copies: bool = False) -> torch.Tensor:
        """A per-client state table [N, p]: zeros, or N copies of ``x0``."""
        return x0.expand(self.N, -1).clone() if copies else x0.new_zeros(self.N, x0.numel())

    def local(self, x_start: torch.Tensor, clients: torch.Tensor, r: RoundInput, lr,
              correction: torch.Tensor | None = None, grads_at_start: bool = False,
              steps: torch.Tensor | None = None, **solver) -> LocalResult:
        """Local training of ``clients`` from ``x_start`` ([p] broadcast, or [S, p]) for
        ``steps`` (default: the schedule's local steps); ``grads_at_start``: every minibatch
        gradient at the start point (FedSUM-B's no local moves); ``solver`` passes ``momentum``,
        ``prox_mu`` or ``full_batch`` to the engine. An algorithm whose options include
        ``momentum`` / ``prox_mu`` (:data:`SOLVER_OPTIONS`) passes its settings' values on."""
        X0 = x_start.expand(len(clients), -1) if x_start.ndim == 1 else x_start
        steps = r.local_steps[clients] if steps is None else steps
        for key in SOLVER_OPTIONS:
            value = getattr(self.settings, key, None) if key in self.options else None
            if value is not None:
                solver.setdefault(key, float(value))
        return self.engine.local_sgd(self.problem, X0, clients, steps, lr, r.t, correction,
                                     bool(grads_at_start), **solver)

    def messages(self, r: RoundInput) -> tuple[int, int]:
        """(uplink, downlink) model units of round r, asked after the round ran: per active
        client (uploads are counted when attempted, failed or not)."""
        n = int((r.active > 0).sum())
        return self.uplink * n, self.downlink * n


_REGISTRY: dict[str, type[Algorithm]] = {}
#: the names of the algorithms fedlib ships (set once its modules are imported): never replaced,
#: so that a config naming one, and the stores' runs of it, mean the paper's algorithm
_BUILTIN: frozenset[str] = frozenset()


def register(cls: type[Algorithm] | None = None, *, replace: bool = False):
    """Class decorator adding an algorithm to the registry under ``cls.name``.

    ``@register`` refuses a class without its own ``name`` (the name configs give) and a name that is
    already taken (a built-in or an earlier registration);
    ``@register(replace=True)`` replaces an earlier registration on purpose, never a built-in
    algorithm (a sweep would store the class's runs as the paper's, beside the committed ones).
    """
    if not isinstance(replace, (bool, np.bool_)):
        raise InputError(f"replace: must be True or False, got {type(replace).__name__} {replace!r}")

    def add(c: type[Algorithm]) -> type[Algorithm]:
        if not (isinstance(c, type) and issubclass(c, Algorithm)):
            raise InputError(f"register: expected an Algorithm subclass, got {c!r}")
        _check_name(c)
        twin = next((b for b in _BUILTIN if b.casefold() == c.name.casefold()), None)
        if twin is not None and _REGISTRY.get(twin) is not c:
            raise InputError(f"name: algorithm {c.name!r} is {'' if twin == c.name else 'in all but case '}"
                             f"the built-in algorithm {twin!r} ({_REGISTRY[twin].__module__}."
                             f"{_REGISTRY[twin].__name__}); choose another name (a subclass of it may keep "
                             "its code under a name of its own)")
        _check_runnable(c)
        if c.name in _REGISTRY and _REGISTRY[c.name] is not c and not replace:
            raise InputError(f"name: algorithm {c.name!r} is already registered "
                             f"({_REGISTRY[c.name].__module__}.{_REGISTRY[c.name].__name__}); "
                             "use @register(replace=True) to replace it")
        for k in c.__mro__:                 # the source as loaded, for the runs' fingerprints
            if k is not Algorithm and issubclass(k, Algorithm):
                capture(k)
        _REGISTRY[c.name] = c
        return c
    return add if cls is None else add(cls)


#: the characters of an algorithm's name: it names the store's entry folders (``<name>-<hash>``)
#: and the checkpoints, so never a path separator, a dot or a space
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]*")


def _check_name(c: type[Algorithm]) -> None:
    """``c.name``: set on the class itself, a string of :data:`NAME_PATTERN` (ASCII letters,
    digits, ``_``, ``+``, ``-``; first a letter or digit); else one InputError naming it."""
    name = c.__dict__.get("_declared_name")
    if not isinstance(name, str) or not name:
        got = "none" if name in (None, "") else f"{type(name).__name__} {name!r}"
        raise InputError(f"name: must be set on {c.__name__} (a non-empty string class attribute 'name', its "
                         f"name in configs) to register it, got {got} (it would run as {c.name!r}, after "
                         "its class)")
    if not NAME_PATTERN.fullmatch(name):
        raise InputError(f"name: must be ASCII letters, digits, '_', '+' or '-', starting with a letter or "
                         f"digit (it names the store's folders), got {name!r}")


def _check_runnable(c: type[Algorithm]) -> None:
    """What a class needs to run, checked without running it: its own ``round``, or ``client_state``
    with the four methods of a client/server round (its ``Options`` are checked when the class is
    defined: ``__init_subclass__``). One InputError naming what is missing."""
    if c.round is not Algorithm.round:
        return
    split = ("client_init", "downlink_message", "client_step", "server_step")
    missing = [m for m in split if getattr(c, m) is getattr(Algorithm, m)]
    if not c.client_state or missing:
        what = (f"client_state {tuple(c.client_state)} without {', '.join(missing)}" if c.client_state
                else "neither round() nor client_state")
        raise InputError(f"round: {c.__name__} has {what}; implement round(x, r), or list client_state and "
                         f"implement {', '.join(split)}")


def _defaults(cls: type[Algorithm]) -> str:
    """``name=default, ...`` of an algorithm's options (None: not given)."""
    return ", ".join(f"{row['option']}={row['default']!r}" for row in cls.options_type().describe())


def available() -> dict[str, str]:
    """Registered algorithms, each with its one-line description and its options with their
    defaults (``get(name).Options.describe()`` says what each must be and does; the class
    docstring, ``help(fedlib.algorithms.get(name))``, explains them)."""
    return {k: f"{v.description} [options: {_defaults(v) or 'none'}]"
            for k, v in sorted(_REGISTRY.items())}


def get(name: str | type[Algorithm]) -> type[Algorithm]:
    """The algorithm class registered as ``name`` (an Algorithm subclass is returned as is)."""
    if isinstance(name, type) and issubclass(name, Algorithm):
        return name
    if isinstance(name, Algorithm):
        return type(name)
    if not isinstance(name, str) or name not in _REGISTRY:
        raise InputError(f"algorithm: unknown algorithm {name!r}; known algorithms: "
                         f"{', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


# --------------------------------------------------------------------------------------------
# Learning-rate schedules eta_l(t)
# --------------------------------------------------------------------------------------------
def _constant(eta0: float, t: int) -> float:
    return eta0


def _fedsum_sqrt(eta0: float, t: int) -> float:
    """FedSUM App. H (Table 2): eta_l = eta_0 / sqrt(t/10 + 1)."""
    return eta0 / math.sqrt(t / 10 + 1)


lr_schedules: dict[str, Callable[[float, int], float]] = {
    "constant": _constant,
    "fedsum_sqrt": _fedsum_sqrt,
}


from .._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
