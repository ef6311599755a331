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

import numpy as np
import torch

from . import models
from ._source import capture
from ._validate import check_int, check_real
from .objectives import (
    LeastSquares,
    Problem,
    Quadratic,
    QuadraticForm,
    focus_arbitrary_weights,
    focus_toy_data,
    stream_seed,
)
from .tasks import Neural, Split

# the classes of fedlib.objectives and fedlib.tasks are re-exported: problems.Quadratic, problems.Neural
__all__ = [
    "LeastSquares",
    "Neural",
    "Problem",
    "Quadratic",
    "QuadraticForm",
    "Split",
    "available",
    "builder",
    "build",
    "digits_cnn",
    "focus_arbitrary_weights",
    "focus_toy_data",
    "neural",
    "quadratic",
    "random_quadratic",
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
_BUILDERS: dict[str, tuple[Callable[..., Problem], str]] = {
    "quadratic": (random_quadratic, "heterogeneous random quadratics (exact gradients by default)"),
    "focus_toy": (lambda normalized=False, device="cpu", **kw: LeastSquares(
        *focus_toy_data(**kw), normalized=normalized, device=device),
        "FOCUS least-squares toy: n=8000, d=50, N=16"),
    "digits_cnn": (digits_cnn, "FedSUM MNIST CNN on scikit-learn digits (28x28), Dirichlet split"),
    "neural": (neural, "any dataset x partition x model of fedlib.data / partition / models"),
}


for _fn, _ in _BUILDERS.values():           # their sources as loaded, for the runs' fingerprints
    capture(_fn)


def available() -> dict[str, str]:
    """Problem builders by name, with a one-line description each."""
    return {k: v[1] for k, v in _BUILDERS.items()}


def builder(name: str) -> Callable[..., Problem]:
    """The builder function of a registered problem (its signature lists the problem's arguments)."""
    if not isinstance(name, str) or name not in _BUILDERS:
        raise ValueError(f"problem: unknown problem {name!r}; known problems: {', '.join(sorted(_BUILDERS))}")
    return _BUILDERS[name][0]


def build(name: str, **kwargs) -> Problem:
    """Build a registered problem by name (see :func:`available`).

    ``draws`` (``"legacy"`` or ``"keyed"``, :data:`fedlib.keyed.DRAWS`) is taken by every problem
    whose minibatches are drawn (:class:`Neural`) and applied after the builder (so the builders,
    whose source fingerprints the stored runs, are unchanged): a config asks for keyed draws with
    ``problem_args={"draws": "keyed", ...}``, and a config without it keeps its store key and its
    legacy draws."""
    if not isinstance(name, str) or name not in _BUILDERS:
        raise ValueError(f"problem: unknown problem {name!r}; known problems: {', '.join(sorted(_BUILDERS))}")
    draws = kwargs.pop("draws", None)
    prob = _build(name, **kwargs)
    if draws is not None:
        if not hasattr(prob, "set_draws"):
            raise ValueError(f"draws: problem {name!r} draws no minibatches; draws is for neural problems")
        prob.set_draws(draws)
    return prob


def _build(name: str, **kwargs) -> Problem:
    fn = _BUILDERS[name][0]
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            raise ValueError(f"{unknown[0]}: not an argument of problem {name!r}; its arguments: "
                             f"{', '.join(params)}")
    return fn(**kwargs)


from ._validate import InputError, check_problem_memory, guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)


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


guard_module(globals(), before={"random_quadratic": lambda a: check_problem_memory("quadratic", a),
                                "neural": _check_synthetic_sizes})
