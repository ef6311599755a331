"""Problems by name: the registry of problem builders that configs name (``quadratic``,
``focus_toy``, ``digits_cnn``, ``neural``), the builders themselves (their sources are the runs'
problem fingerprints), and the problem classes re-exported from :mod:`fedlib.objectives`
(quadratic forms, least squares, the FOCUS toy's data) and :mod:`fedlib.tasks` (the neural task).
Every problem gives per-client gradients for a stack of client parameter vectors.

Model of computation: the model is one flat vector ``x`` [p]; clients' local models are a stack
``X`` [S, p] with the client index of each row in ``clients`` [S]. A problem returns the
(stochastic) gradient of each row's client objective at that row::

    G = problem.grads(X, clients, round=t, step=k)          # [S, p]

Stochasticity is keyed by ``(seed, client, round, step)``: a client's noise or minibatch never
depends on who else is active or on the engine that asks. The global objective is
``f(x) = sum_i w_i f_i(x)`` with client weights ``w`` (``problem.weights``; uniform 1/N unless
a problem says otherwise).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from . import models
from ._source import capture
from ._validate import InputError, available_memory, check_int, check_new_name, check_real
from .objectives import (
    LeastSquares,
    Problem,
    Quadratic,
    QuadraticForm,
    focus_arbitrary_weights,
    focus_toy_bytes,
    focus_toy_data,
    stream_seed,
)
from .tasks import Neural, Split

# the classes of fedlib.objectives and fedlib.tasks are re-exported: problems.Quadratic, problems.Neural
__all__ = [
    "LeastSquares",
    "Neural",
    "Problem",
    "ProblemSpec",
    "Quadratic",
    "QuadraticForm",
    "Split",
    "available",
    "builder",
    "build",
    "check_run_inputs",
    "digits_cnn",
    "focus_arbitrary_weights",
    "focus_toy_data",
    "get_problem",
    "neural",
    "problem",
    "quadratic",
    "random_quadratic",
    "register_problem",
    "stream_seed",
]


# --------------------------------------------------------------------------------------------
# Named problems (registered below; their sources are the runs' problem fingerprints)
# --------------------------------------------------------------------------------------------
def random_quadratic(num_clients: int = 10, dim: int = 5, seed: int = 0, curvature: tuple = (0.5, 2.0),
                     spread: float = 1.0, sigma: float = 0.0, dtype=torch.float64,
                     device="cpu") -> Quadratic:
    """Heterogeneous quadratics: A_i = Q_i diag(U(curvature)) Q_i^T with random rotations Q_i,
    c_i ~ N(0, spread^2 I). Seeded by ``numpy.random.default_rng(seed)``."""
    num_clients, dim = check_int("num_clients", num_clients, 1), check_int("dim", dim, 1)
    if not (isinstance(curvature, (tuple, list)) and len(curvature) == 2):
        raise ValueError(f"curvature: expected (low, high) with 0 < low <= high, got {curvature!r}")
    lo = check_real("curvature", curvature[0], 0.0, low_open=True)
    check_real("curvature", curvature[1], lo)
    check_real("spread", spread, 0.0)
    check_real("sigma", sigma, 0.0)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    q, _ = np.linalg.qr(rng.standard_normal((num_clients, dim, dim)))
    lam = rng.uniform(*curvature, size=(num_clients, dim))
    A = np.einsum("nij,nj,nkj->nik", q, lam, q)
    A = 0.5 * (A + A.transpose(0, 2, 1))
    c = spread * rng.standard_normal((num_clients, dim))
    return Quadratic(A, c, sigma=sigma, seed=seed, dtype=dtype, device=device)


#: the registry name of :func:`random_quadratic` (``problems.build("quadratic", ...)``)
quadratic = random_quadratic


# --------------------------------------------------------------------------------------------
# Named neural tasks
# --------------------------------------------------------------------------------------------
def digits_cnn(num_clients: int = 20, alpha: float = 0.1, batch_size: int = 32, seed: int = 0,
               dropout: float = 0.2, device="cpu", train_eval_per_client: int | None = 100) -> Neural:
    """The embedded neural task: FedSUM's MNIST CNN on scikit-learn digits upscaled to 28x28,
    Dirichlet(alpha) label split over ``num_clients`` clients."""
    return neural(dataset="digits", partition="dirichlet", model="fedsum_mnist_cnn",
                  num_clients=num_clients, batch_size=batch_size, seed=seed, device=device, alpha=alpha,
                  model_args={"dropout": dropout}, train_eval_per_client=train_eval_per_client)


def neural(dataset: str = "mnist", partition: str = "dirichlet", model: str = "fedsum_mnist_cnn",
           num_clients: int = 100, batch_size: int = 128, seed: int = 0, device="cpu",
           data_root=None, synthetic: bool = False, model_args: dict | None = None,
           synthetic_sizes: tuple[int, int] | None = None, train_eval_per_client: int | None = 100,
           test_eval_size: int | None = None, **partition_args) -> Neural:
    """A :class:`Neural` problem from registry names: ``neural(dataset="mnist",
    partition="dirichlet", alpha=0.1, model="fedsum_mnist_cnn")``.

    Args:
        dataset: a name of :func:`fedlib.data.available`.
        partition: a name of :func:`fedlib.partition.available`; its arguments (``alpha``,
            ``similarity``, ...) go in ``**partition_args``.
        model: a name of :func:`fedlib.models.available`; ``model_args`` are passed to it.
        num_clients, batch_size, seed, device: as in :class:`Neural` (``seed`` also seeds the
            split and the model's initialisation).
        data_root: where the dataset files are (see :func:`fedlib.data.data_roots`).
        synthetic: use :func:`fedlib.data.synthetic_like` stand-ins (sizes ``synthetic_sizes``).
        train_eval_per_client: size of each client's training-metric subset (see :class:`Neural`).
        test_eval_size: size of the test-metric subset (see :class:`Neural`; None: all).
    """
    from . import data as data_mod
    from . import partition as part_mod

    if synthetic:
        n_tr, n_te = synthetic_sizes or (None, None)
        ds = data_mod.synthetic_like(dataset, n_tr, n_te, seed=seed, device=device)
    else:
        ds = data_mod.load(dataset, data_root=data_root, device=device)
    shape = tuple(ds.train[0].shape[1:])
    if shape != models.input_shape(model):
        raise ValueError(f"model: {model!r} expects inputs {models.input_shape(model)}, dataset {dataset!r} "
                         f"has {shape}")
    split = part_mod.build(partition, ds.train[1].cpu().numpy(), num_clients, seed=seed, **partition_args)
    net = models.build(model, seed=seed, num_classes=ds.num_classes, **(model_args or {}))
    prob = Neural(net, split.indices, ds.train, ds.test, batch_size=batch_size, device=device, seed=seed,
                  train_eval_per_client=train_eval_per_client, test_eval_size=test_eval_size)
    prob.label_counts = split.counts
    prob.names_spec = {"dataset": dataset, "partition": partition, "model": model, **partition_args}
    return prob


# --------------------------------------------------------------------------------------------
# Registry of problem builders (for configs and the cache)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProblemSpec:
    """A registered problem (:func:`register_problem`).

    Attributes:
        name: its name (a config's ``problem``).
        builder: ``builder(**arguments) -> Problem``; its parameters are the problem's arguments (a
            config's ``problem_args``), and its source the runs' problem fingerprint.
        description: one line on what it is.
        check: ``check(arguments)``, a cheap check of a config's ``problem_args`` (a dict, as
            given) that :meth:`fedlib.ExperimentConfig.validate` runs before any run: a rule
            between arguments, or a build of a problem small enough to build at once. It raises
            a ValueError whose message starts with the argument's name (``"sigma: ..."``), which
            ``validate`` names under ``<where>.problem_args``; None: no check beyond the
            arguments' names and types.
        forwards: the functions a builder that takes ``**kw`` passes those keywords on to: a
            config's argument names are checked against their parameters too (none: a builder
            with ``**kw`` takes any name).
        memory: ``memory(arguments) -> bytes`` (or None where it cannot tell), the peak memory
            that building the problem allocates; ``validate`` refuses a config that needs more
            than this machine has available (:func:`check_run_inputs`), and a check builds a
            problem only when it is small (:data:`BUILD_CHECK_BYTES`). None: not estimated.
        inputs: ``inputs(arguments)``, a check of what a run reads beyond its arguments (a
            dataset's files, a client count the data can serve), run by ``validate`` just before
            a run (:func:`check_run_inputs`); it raises a ValueError ``"<argument>: ..."`` as
            ``check`` does. None: nothing to check.
        datasets: ``datasets(arguments)``, the datasets ``(name, data_root)`` whose files a run
            reads from disk, so that a sweep stops before it runs anything when one is not on this
            machine (:func:`fedlib.sweeps.sweep`). None: none.
    """

    name: str
    builder: Callable[..., Problem]
    description: str
    check: Callable[[dict], None] | None = None
    forwards: tuple[Callable[..., object], ...] = ()
    memory: Callable[[dict], int | None] | None = None
    inputs: Callable[[dict], None] | None = None
    datasets: Callable[[dict], list[tuple[str, Any]]] | None = None

    @property
    def neural(self) -> bool:
        """Whether the builder declares it returns a :class:`~fedlib.tasks.Neural` (clients hold
        samples and draw minibatches): what ``draws`` and local work in epochs need."""
        fn = getattr(self.builder, "func", self.builder)                    # a functools.partial
        ann = inspect.signature(fn).return_annotation
        return ann is Neural or (isinstance(ann, str) and ann.rsplit(".", 1)[-1] == "Neural")

    @property
    def module(self) -> str:
        """The module that defines the builder (a worker process imports it)."""
        fn = getattr(self.builder, "func", self.builder)                    # a functools.partial
        return getattr(fn, "__module__", None) or ""


_PROBLEMS: dict[str, ProblemSpec] = {}
#: how many problems were registered in this process (the per-process problem cache's key)
_registrations = 0


def register_problem(name: str, builder: Callable[..., Problem], *, description: str,
                     check: Callable[[dict], None] | None = None, forwards: Any = (),
                     memory: Callable[[dict], int | None] | None = None,
                     inputs: Callable[[dict], None] | None = None,
                     datasets: Callable[[dict], list[tuple[str, Any]]] | None = None,
                     replace: bool = False) -> ProblemSpec:
    """Register a problem builder, so that :func:`build`, ``run`` and a config's ``problem`` know
    it, and :meth:`ExperimentConfig.validate` checks a config's ``problem_args`` from its
    declarations before anything runs (one message naming the argument): the names against the
    builder's parameters (and those of ``forwards``), integer hints, ``memory``, ``inputs``, then
    ``check``.

    Args:
        name: the problem's name; a built-in problem's name, or a name already registered (unless
            ``replace``), is refused.
        builder: ``builder(**arguments)`` returning a :class:`Problem`; its source is the
            fingerprint of the runs it builds (:func:`fedlib.fingerprint.config_fingerprint`).
        description: one line on what it is.
        check: ``check(arguments)``: a cheap check of the arguments as a config gives them (a
            dict), raising a ValueError ``"<argument>: <what is allowed>, got <value>"``; e.g. a
            rule between two arguments, or ``builder(**arguments)`` itself where that is quick.
            Run once per distinct arguments per process.
        forwards: the function (or functions) a builder with ``**kw`` passes them on to; the
            argument names a config gives are checked against their parameters.
        memory: ``memory(arguments)``: the bytes that building the problem allocates at its peak
            (None where the arguments do not tell, e.g. a bad size the builder refuses), from the
            arguments a config gives (those set to None left out); ``validate`` refuses a problem
            larger than this machine's available memory, naming the arguments ``memory`` read.
        inputs: ``inputs(arguments)``: a check of what a run reads beyond its arguments (the
            files of a dataset, a client count its data can serve), raising a ValueError
            ``"<argument>: ..."`` as ``check`` does; run by ``validate`` before a run.
        datasets: ``datasets(arguments)``: the ``(name, data_root)`` of each dataset whose files a
            run reads (a ``data_root`` None: :func:`fedlib.data.data_roots`); a sweep needing one
            this machine lacks stops before it creates or runs anything.
        replace: replace a problem registered before (not a built-in one).

    A problem defined in ``__main__`` (a notebook cell) runs in this process; a sweep with worker
    processes refuses it (define it in a module and import that).

    Raises:
        InputError: a bad name, a clash, a builder, check, memory, inputs, datasets or forwarded
            target that is not a function, or ``forwards`` for a builder that takes no ``**kw``.
    """
    check_new_name("problem", name, _BUILTIN, _PROBLEMS, replace)
    if not callable(builder):
        raise InputError(f"builder: problem {name!r} needs a function (**arguments) -> Problem, "
                         f"got {builder!r}")
    if not isinstance(description, str) or not description.strip():
        raise InputError(f"description: problem {name!r} needs a one-line description, got {description!r}")
    for field, fn in (("check", check), ("memory", memory), ("inputs", inputs), ("datasets", datasets)):
        if fn is not None and not callable(fn):
            raise InputError(f"{field}: must be a function of the arguments (a dict) or None, got {fn!r}")
    targets = _forwarded(name, builder, forwards)
    capture(builder)                        # its source as loaded, for the runs' fingerprints
    spec = ProblemSpec(name, builder, description, check, targets, memory, inputs, datasets)
    _PROBLEMS[name] = spec
    global _registrations
    _registrations += 1              # a problem built from the registry before is built again
    return spec


def _forwarded(name: str, builder: Callable[..., Problem], forwards: Any) -> tuple:
    """``forwards`` of :func:`register_problem` as a tuple of functions, checked."""
    targets = tuple(forwards) if isinstance(forwards, (tuple, list)) else (forwards,)
    if not all(callable(f) for f in targets):
        raise InputError(f"forwards: must be the function(s) the builder passes its **kw on to, "
                         f"got {forwards!r}")
    if targets and not any(p.kind is p.VAR_KEYWORD for p in inspect.signature(builder).parameters.values()):
        raise InputError(f"forwards: problem {name!r}'s builder takes no **kw to pass on; got {forwards!r}")
    return targets


def problem(name: str, *, description: str, check: Callable[[dict], None] | None = None,
            forwards: Any = (), memory: Callable[[dict], int | None] | None = None,
            inputs: Callable[[dict], None] | None = None,
            datasets: Callable[[dict], list[tuple[str, Any]]] | None = None, replace: bool = False):
    """Decorator form of :func:`register_problem`: ``@problems.problem("mine", description=...,
    check=..., forwards=make_data, memory=..., inputs=..., datasets=...)`` over the builder."""
    def register(builder):
        register_problem(name, builder, description=description, check=check, forwards=forwards,
                         memory=memory, inputs=inputs, datasets=datasets, replace=replace)
        return builder
    return register


#: the largest analytic problem a built-in's check builds whole (its declared ``memory``), so that a
#: value only its builder checks (a negative ``sigma``, an unknown ``dtype``) is refused by
#: ``validate`` before a sweep stores an error entry
BUILD_CHECK_BYTES = 32 * 2**20


class _Reads(dict):
    """A problem's arguments that remember which of them a ``memory`` declaration read (the
    arguments a refusal shows)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)


def _memory(spec: ProblemSpec, args: dict) -> tuple[int | None, set]:
    """The bytes ``spec`` declares that building it with ``args`` needs (None: not declared, or
    not told by these arguments), and the names of the arguments its declaration read."""
    if spec.memory is None:
        return None, set()
    given = _Reads({k: v for k, v in args.items() if v is not None})
    return spec.memory(given), given.read


def _check_memory(spec: ProblemSpec, args: dict, where: str = "problem_args") -> None:
    """One InputError naming ``where`` if building ``spec`` with ``args`` needs more memory than
    this machine has available (its declared ``memory``)."""
    need, read = _memory(spec, args)
    if need is not None and need > (have := available_memory()):
        shown = {k: v for k, v in args.items() if k in read}
        raise InputError(f"{where}: problem {spec.name!r} with {shown} needs about {need / 2**30:,.1f} GiB "
                         f"of memory to build; this machine has {have / 2**30:,.1f} GiB available")


def check_run_inputs(name: str, arguments: dict, where: str = "config") -> None:
    """What a run of problem ``name`` with ``arguments`` (a config's ``problem_args``) depends on
    beyond their own ranges, from the problem's declarations (:func:`register_problem`), checked
    by :meth:`fedlib.ExperimentConfig.validate` before it runs so that a sweep stores no error
    entry for an input it could have refused: ``memory`` (arrays that cannot fit in this
    machine's available memory), then ``inputs`` (e.g. a dataset's files and a client count its
    training split can serve).

    Raises:
        InputError: one message naming ``<where>.problem_args`` and the argument.
    """
    spec = get_problem(name)
    _check_memory(spec, arguments, f"{where}.problem_args")
    if spec.inputs is not None:
        try:
            spec.inputs(dict(arguments))
        except ValueError as e:
            raise InputError(f"{where}.problem_args.{e}") from None


def _positive_ints(args: dict, fn: Callable, *names: str) -> tuple[int, ...] | None:
    """The arguments ``names`` of ``args`` (``fn``'s defaults where not given) if all are positive
    integers, else None (a bad size: the builder refuses it)."""
    params = inspect.signature(fn).parameters
    values = tuple(args.get(n, params[n].default) for n in names)
    ok = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values)
    return values if ok else None


def _quadratic_bytes(args: dict) -> int | None:
    """Peak bytes of :func:`random_quadratic`: N x d x d float64 matrices, four alive at once while
    they are built (the Gaussian draw, its QR factor, the product and its symmetrised copy)."""
    sizes = _positive_ints(args, random_quadratic, "num_clients", "dim")
    return None if sizes is None else 4 * 8 * sizes[0] * sizes[1] * sizes[1]


def _focus_toy_bytes(args: dict) -> int | None:
    """Peak bytes of the FOCUS toy (:func:`fedlib.objectives.focus_toy_bytes`)."""
    sizes = _positive_ints(args, focus_toy_data, "n", "d")
    return None if sizes is None else focus_toy_bytes(*sizes)


def _build_if_small(name: str, args: dict) -> None:
    """Build the problem ``name`` with ``args`` if it is small (or its size cannot be told: a bad
    size, refused quickly by the builder)."""
    size, _ = _memory(get_problem(name), args)
    if size is None or size <= BUILD_CHECK_BYTES:
        build(name, **args)


def _check_quadratic(args: dict) -> None:
    """``quadratic``'s arguments: the curvature range ordered (lo <= hi), then a small one built."""
    curvature = args.get("curvature")
    if (isinstance(curvature, (tuple, list)) and len(curvature) == 2
            and all(isinstance(v, (int, float)) for v in curvature) and curvature[0] > curvature[1]):
        raise InputError(f"curvature: must be (lo, hi) with 0 < lo <= hi, got {tuple(curvature)!r}")
    _build_if_small("quadratic", args)


def _digits_cnn_inputs(args: dict) -> None:
    """:func:`digits_cnn`'s client count against the embedded digits' training split."""
    from . import data
    data.check_run_data("digits", args.get("num_clients", _default(digits_cnn, "num_clients")))


def _neural_inputs(args: dict) -> None:
    """:func:`neural`'s dataset files (or its synthetic stand-in's size) and client count."""
    from . import data
    data.check_run_data(args.get("dataset", _default(neural, "dataset")),
                        args.get("num_clients", _default(neural, "num_clients")),
                        synthetic=bool(args.get("synthetic", False)),
                        synthetic_sizes=args.get("synthetic_sizes"), data_root=args.get("data_root"),
                        partition=args.get("partition"))


def _neural_datasets(args: dict) -> list[tuple[str, Any]]:
    """The dataset a :func:`neural` run reads from disk when it names one (none for a synthetic
    stand-in)."""
    if args.get("synthetic") or not isinstance(args.get("dataset"), str):
        return []
    return [(args["dataset"], args.get("data_root"))]


def _default(fn: Callable, name: str) -> Any:
    """The default value of ``fn``'s parameter ``name``."""
    return inspect.signature(fn).parameters[name].default


def _register_builtins() -> None:
    """The built-in problems, through the same registration as a user's."""
    register_problem("quadratic", random_quadratic, check=_check_quadratic, memory=_quadratic_bytes,
                     description="heterogeneous random quadratics (exact gradients by default)")
    register_problem("focus_toy", lambda normalized=False, device="cpu", **kw: LeastSquares(
        *focus_toy_data(**kw), normalized=normalized, device=device),
        check=lambda args: _build_if_small("focus_toy", args), forwards=focus_toy_data,
        memory=_focus_toy_bytes,
        description="FOCUS least-squares toy: n=8000, d=50, N=16")
    register_problem("digits_cnn", digits_cnn, inputs=_digits_cnn_inputs,
                     description="FedSUM MNIST CNN on scikit-learn digits (28x28), Dirichlet split")
    register_problem("neural", neural, inputs=_neural_inputs, datasets=_neural_datasets,
                     description="any dataset x partition x model of fedlib.data / partition / models")


def available() -> dict[str, str]:
    """Problem builders by name, with a one-line description each."""
    return {k: v.description for k, v in _PROBLEMS.items()}


def get_problem(name: str) -> ProblemSpec:
    """The registered problem ``name`` (its builder, description and declared checks).

    Raises:
        InputError: an unknown name, naming the known ones.
    """
    if not isinstance(name, str) or name not in _PROBLEMS:
        raise InputError(f"problem: unknown problem {name!r}; known problems: {', '.join(sorted(_PROBLEMS))}")
    return _PROBLEMS[name]


def builder(name: str) -> Callable[..., Problem]:
    """The builder function of a registered problem (its signature lists the problem's arguments)."""
    return get_problem(name).builder


def build(name: str, **kwargs) -> Problem:
    """Build a registered problem by name (see :func:`available`).

    ``draws`` (``"legacy"`` or ``"keyed"``, :data:`fedlib.keyed.DRAWS`) is taken by every problem
    whose minibatches are drawn (:class:`Neural`) and applied after the builder (so the builders,
    whose source fingerprints the stored runs, are unchanged): a config asks for keyed draws with
    ``problem_args={"draws": "keyed", ...}``, and a config without it keeps its store key and its
    legacy draws."""
    get_problem(name)
    draws = kwargs.pop("draws", None)
    prob = _build(name, **kwargs)
    if draws is not None:
        if not hasattr(prob, "set_draws"):
            raise InputError(f"draws: problem {name!r} draws no minibatches; draws is for neural problems")
        prob.set_draws(draws)
    return prob


def _build(name: str, **kwargs) -> Problem:
    fn = _PROBLEMS[name].builder
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            raise InputError(f"{unknown[0]}: not an argument of problem {name!r}; its arguments: "
                             f"{', '.join(params)}")
    return fn(**kwargs)


_BUILTIN: frozenset = frozenset()
_register_builtins()
_BUILTIN = frozenset(_PROBLEMS)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)


def _check_synthetic_sizes(args: dict) -> None:
    """:func:`neural`'s ``synthetic_sizes``: None or two integers >= 1 (kept outside ``neural``,
    whose source is part of its runs' fingerprints)."""
    sizes = args.get("synthetic_sizes")
    if sizes is None:
        return
    ok = isinstance(sizes, (tuple, list)) and len(sizes) == 2 and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in sizes)
    if not ok:
        raise InputError(f"synthetic_sizes: must be None or two positive integers (n_train, n_test), "
                         f"got {sizes!r}")


guard_module(globals(), before={"random_quadratic": lambda a: _check_memory(get_problem("quadratic"), a),
                                "neural": _check_synthetic_sizes})
