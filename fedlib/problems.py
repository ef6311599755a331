"""Objectives: quadratic, least squares and neural, each giving per-client gradients for a stack
of client parameter vectors.

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

import contextlib
import copy
import inspect
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from . import models
from ._source import capture
from ._threads import map_single_threaded
from ._validate import check_int, check_real

__all__ = [
    "LeastSquares",
    "Neural",
    "Problem",
    "Quadratic",
    "QuadraticForm",
    "available",
    "builder",
    "build",
    "focus_toy_data",
    "neural",
    "quadratic",
    "random_quadratic",
]

_MASK64 = (1 << 63) - 1


def stream_seed(*keys: int) -> int:
    """A 63-bit seed derived from integer keys (seed, client, round, step, ...), via
    ``numpy.random.SeedSequence`` so that nearby keys give unrelated streams."""
    state = np.random.SeedSequence([int(k) & 0xFFFFFFFF for k in keys]).generate_state(1, np.uint64)
    return int(state[0]) & _MASK64


class Problem:
    """Interface of an objective split over ``num_clients`` clients (see module docstring).

    Attributes:
        num_clients: N.
        dim: p, the length of the flat parameter vector.
        weights: tensor [N], client weights w_i of the global objective (sum to 1).
        dtype, device: of every tensor the problem returns.
    """

    num_clients: int
    dim: int
    weights: torch.Tensor
    dtype: torch.dtype
    device: torch.device
    exact: bool = True   # gradients are exact (no noise / minibatches)
    #: the problem trains an ``nn.Module`` (``model``) on minibatches: the reference engine can run
    #: ``torch.optim.SGD`` on it (see :class:`Neural` for the attributes it then reads)
    has_module: bool = False

    def threaded_clients(self, device: torch.device) -> bool:
        """Whether the vectorized engine should train this problem's clients one by one in
        worker threads (each in :meth:`thread_model`, with one intra-op thread) rather than all
        in lockstep; False unless a problem says otherwise."""
        return False

    def grads(self, X: torch.Tensor, clients: torch.Tensor, round: int = 0, step: int = 0,
              stochastic: bool = True) -> torch.Tensor:
        """Gradients [S, p] of f_{clients[s]} at X[s]."""
        raise NotImplementedError

    def client_grad(self, x: torch.Tensor, client: int, round: int = 0, step: int = 0,
                    stochastic: bool = True) -> torch.Tensor:
        """Gradient of one client at one point, written plainly: the reference for tests."""
        raise NotImplementedError

    def loss(self, x: torch.Tensor) -> float:
        """Global objective f(x)."""
        raise NotImplementedError

    def full_grad(self, x: torch.Tensor) -> torch.Tensor | None:
        """Gradient of the global objective, or None when it is too costly to compute."""
        return None

    def optimum(self) -> torch.Tensor | None:
        """The minimiser of f when known in closed form, else None."""
        return None

    def initial_params(self, seed: int = 0) -> torch.Tensor:
        """Starting point x^(0)."""
        return torch.zeros(self.dim, dtype=self.dtype, device=self.device)

    def metrics(self, x: torch.Tensor) -> dict[str, float]:
        """Evaluation metrics of a global model: loss, grad_norm_sq, dist_to_opt, ..."""
        out = {"loss": self.loss(x)}
        g = self.full_grad(x)
        if g is not None:
            out["grad_norm_sq"] = float(g.pow(2).sum())
        opt = self.optimum()
        if opt is not None:
            d = float(torch.linalg.vector_norm(x - opt))
            out["dist_to_opt"] = d
            out["rel_dist_to_opt"] = d / max(float(torch.linalg.vector_norm(opt)), 1e-300)
        return out

    def spec(self) -> dict:
        """A JSON-serialisable description (used in cache keys and result metadata)."""
        return {"problem": type(self).__name__, "num_clients": self.num_clients, "dim": self.dim}


# --------------------------------------------------------------------------------------------
# Quadratic forms: f_i(x) = 1/2 x^T H_i x - r_i^T x + k_i
# --------------------------------------------------------------------------------------------
class QuadraticForm(Problem):
    """f_i(x) = 1/2 x^T H_i x - r_i^T x + k_i with H_i symmetric PSD: the common core of
    :class:`Quadratic` and :class:`LeastSquares`. Gradients are batched matrix products;
    optional Gaussian gradient noise of standard deviation ``sigma`` per coordinate, drawn from
    a generator keyed by (seed, round, step) for all N clients at once and indexed by client.
    """

    def __init__(self, H: torch.Tensor, r: torch.Tensor, k: torch.Tensor, weights=None,
                 sigma: float = 0.0, seed: int = 0, dtype=torch.float64, device="cpu"):
        self.dtype, self.device = dtype, torch.device(device)
        self.H = torch.as_tensor(H, dtype=dtype, device=self.device)
        self.r = torch.as_tensor(r, dtype=dtype, device=self.device)
        self.k = torch.as_tensor(k, dtype=dtype, device=self.device)
        if self.H.ndim != 3 or self.H.shape[1] != self.H.shape[2]:
            raise ValueError(f"H: expected [N, d, d], got {tuple(self.H.shape)}")
        self.num_clients, self.dim = self.H.shape[0], self.H.shape[1]
        if self.r.shape != (self.num_clients, self.dim):
            raise ValueError(f"r: expected {(self.num_clients, self.dim)}, got {tuple(self.r.shape)}")
        w = torch.full((self.num_clients,), 1.0 / self.num_clients, dtype=dtype) if weights is None \
            else torch.as_tensor(weights, dtype=dtype)
        if w.shape != (self.num_clients,) or (w < 0).any() or not math.isclose(float(w.sum()), 1.0,
                                                                                rel_tol=1e-9):
            raise ValueError("weights: expected N non-negative client weights summing to 1")
        self.weights = w.to(self.device)
        check_real("sigma", sigma, 0.0)
        self.sigma, self.seed = float(sigma), int(seed)
        self.exact = self.sigma == 0
        self.H_bar = torch.einsum("n,nij->ij", self.weights, self.H)
        self.r_bar = self.weights @ self.r

    def _noise(self, round: int, step: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(stream_seed(self.seed, round, step))
        return torch.randn(self.num_clients, self.dim, generator=g, dtype=self.dtype).to(self.device)

    def grads(self, X, clients, round=0, step=0, stochastic=True):
        clients = torch.as_tensor(clients, device=self.device)
        G = torch.einsum("sij,sj->si", self.H[clients], X) - self.r[clients]
        if stochastic and self.sigma > 0:
            G = G + self.sigma * self._noise(round, step)[clients]
        return G

    def client_grad(self, x, client, round=0, step=0, stochastic=True):
        g = self.H[client] @ x - self.r[client]
        if stochastic and self.sigma > 0:
            g = g + self.sigma * self._noise(round, step)[client]
        return g

    def client_losses(self, x: torch.Tensor) -> torch.Tensor:
        """f_i(x) for every client, [N]."""
        return 0.5 * torch.einsum("i,nij,j->n", x, self.H, x) - self.r @ x + self.k

    def loss(self, x):
        return float(self.weights @ self.client_losses(x))

    def full_grad(self, x):
        return self.H_bar @ x - self.r_bar

    def optimum(self):
        return self._cached_optimum(lambda: torch.linalg.solve(self.H_bar, self.r_bar))

    def _cached_optimum(self, solve):
        """The optimum, solved once per problem and copied out: the solver (LAPACK) need not give
        the same last bits on every call, and every evaluation asks for it (the FOCUS toy's lstsq
        took three quarters of its run time)."""
        opt = getattr(self, "_optimum", None)
        if opt is None:
            opt = self._optimum = solve()
        return opt.clone()

    def spec(self):
        return {**super().spec(), "sigma": self.sigma, "seed": self.seed}


class Quadratic(QuadraticForm):
    """f_i(x) = 1/2 (x - c_i)^T A_i (x - c_i), A [N, d, d] symmetric positive definite, c [N, d].

    The global objective is f = sum_i w_i f_i (uniform w_i = 1/N by default); its minimiser is
    x* = (sum_i w_i A_i)^{-1} sum_i w_i A_i c_i.

    Args:
        A: [N, d, d] SPD curvatures.
        c: [N, d] client optima.
        weights: client weights [N] (default uniform).
        sigma: standard deviation of additive Gaussian gradient noise (default 0: exact).
        seed: seed of the noise streams.
    """

    def __init__(self, A, c, weights=None, sigma: float = 0.0, seed: int = 0,
                 dtype=torch.float64, device="cpu"):
        A = torch.as_tensor(A, dtype=dtype)
        c = torch.as_tensor(c, dtype=dtype)
        if A.ndim != 3 or c.shape != A.shape[:2]:
            raise ValueError(f"A, c: expected A [N, d, d] and c [N, d], got {tuple(A.shape)}, "
                             f"{tuple(c.shape)}")
        if not torch.allclose(A, A.transpose(1, 2)) or torch.linalg.eigvalsh(A).min() <= 0:
            raise ValueError("A: every A_i must be symmetric positive definite")
        self.A, self.c = A.to(device), c.to(device)
        k = 0.5 * torch.einsum("ni,nij,nj->n", c, A, c)
        super().__init__(A, torch.einsum("nij,nj->ni", A, c), k, weights, sigma, seed, dtype, device)


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


class LeastSquares(QuadraticForm):
    """f_i(x) = 1/2 ||A_i x - b_i||^2 over the rows of client i (the FOCUS toy's unnormalised
    form), or 1/(2 n_i) ||A_i x - b_i||^2 with ``normalized=True``.

    The global objective is f = (1/N) sum_i f_i. Unnormalised, its minimiser is the ordinary
    least-squares solution of the stacked system, computed by ``torch.linalg.lstsq``.

    Args:
        A_rows: [n, d] design matrix.
        b_rows: [n] targets.
        client_of_row: [n] client index of each row (0..N-1, every client non-empty).
        normalized: divide f_i by the client's row count.
        sigma, seed: optional gradient noise as in :class:`QuadraticForm`.
    """

    def __init__(self, A_rows, b_rows, client_of_row, normalized: bool = False, sigma: float = 0.0,
                 seed: int = 0, dtype=torch.float64, device="cpu"):
        A = torch.as_tensor(A_rows, dtype=dtype)
        b = torch.as_tensor(b_rows, dtype=dtype)
        owner = torch.as_tensor(np.asarray(client_of_row), dtype=torch.long)
        if A.ndim != 2 or b.shape != (A.shape[0],) or owner.shape != (A.shape[0],):
            raise ValueError("A_rows, b_rows, client_of_row: expected [n, d], [n], [n]")
        n_clients = int(owner.max()) + 1
        counts = torch.bincount(owner, minlength=n_clients)
        if (counts == 0).any():
            raise ValueError("client_of_row: every client 0..N-1 needs at least one row")
        scale = (1.0 / counts.to(dtype)) if normalized else torch.ones(n_clients, dtype=dtype)
        H = torch.zeros(n_clients, A.shape[1], A.shape[1], dtype=dtype)
        r = torch.zeros(n_clients, A.shape[1], dtype=dtype)
        k = torch.zeros(n_clients, dtype=dtype)
        for i in range(n_clients):
            Ai, bi = A[owner == i], b[owner == i]
            H[i], r[i], k[i] = scale[i] * Ai.T @ Ai, scale[i] * Ai.T @ bi, 0.5 * scale[i] * bi @ bi
        self.A_rows, self.b_rows, self.client_of_row = A.to(device), b.to(device), owner.to(device)
        self.normalized = normalized
        super().__init__(H, r, k, None, sigma, seed, dtype, device)

    def optimum(self):
        if self.normalized:
            return super().optimum()
        return self._cached_optimum(
            lambda: torch.linalg.lstsq(self.A_rows, self.b_rows.unsqueeze(1)).solution.squeeze(1))

    def spec(self):
        return {**super().spec(), "normalized": self.normalized}


def focus_toy_data(n: int = 8000, d: int = 50, num_clients: int = 16, seed: int = 1234):
    """The FOCUS least-squares toy (Ying, Li & Yang 2025, FOCUS, arXiv:2503.20117, Sec. 5; the
    authors' public code, figures/focus.ipynb).

    A = diag((u + 1)/2) @ randn(n, d), u ~ U(0, 1)^n; x_o ~ N(0, I); b = A x_o + 0.1 randn(n);
    client i owns rows i, i + N, i + 2N, ... The draws use ``numpy.random.RandomState(seed)``
    -- the legacy stream that ``np.random.seed(1234)`` drives in the authors' notebook -- in
    the order u, A, x_o, noise (the order is our reading of their code).

    Returns:
        (A [n, d], b [n], client_of_row [n]) as numpy arrays.
    """
    n, d = check_int("n", n, 1), check_int("d", d, 1)
    check_int("num_clients", num_clients, 1, n)
    rs = np.random.RandomState(check_int("seed", seed, 0))
    u = rs.rand(n)
    A = np.diag((u + 1) / 2) @ rs.randn(n, d)
    x_o = rs.randn(d)
    b = A @ x_o + 0.1 * rs.randn(n)
    return A, b, np.arange(n) % num_clients


def focus_arbitrary_weights(num_clients: int = 16, seed: int = 5) -> np.ndarray:
    """Sampling weights of the FOCUS toy's "arbitrary" participation:
    q = (u' + 0.01) / sum, u' ~ U(0, 1)^N from ``numpy.random.RandomState(5)``."""
    u = np.random.RandomState(seed).rand(num_clients)
    return (u + 0.01) / (u + 0.01).sum()


# --------------------------------------------------------------------------------------------
# Neural problems
# --------------------------------------------------------------------------------------------
@dataclass
class Split:
    """Tensors of one dataset split (kept on the problem's device)."""

    x: torch.Tensor
    y: torch.Tensor


class Neural(Problem):
    """A neural network trained on data partitioned over clients, with vectorized gradients.

    The model's parameters are handled as one flat vector; ``grads`` evaluates the minibatch
    gradients of all requested clients at once with ``torch.func.vmap(grad(...))`` over the
    stacked flat parameters. Minibatch indices come from a ``torch.Generator`` keyed by
    (seed, client, round, step): ``min(batch_size, n_i)`` distinct samples of the client (as a
    data loader's last, short batch would be), padded with zero-weight entries so every
    client's batch stacks to the same shape. The global objective is the data-weighted mean
    loss over all clients' samples (w_i = n_i / n).

    Args:
        model: an ``nn.Module`` (its current parameters define ``initial_params``; buffers are
            not trained). Must not use BatchNorm running statistics.
        partition: sequence of N index arrays into the training split.
        train, test: (x, y) tensors of the training and test splits.
        batch_size: B.
        device: where data and parameters live.
        seed: seed of the minibatch streams.
        loss: per-sample loss ``(logits, y) -> [B]`` (default cross-entropy).
        eval_batch: samples per forward pass in evaluation (the default 512 evaluates FedSUM's
            MNIST CNN ~3x faster on one CPU thread than 4096, whose activations leave the cache).
        strategy: how ``grads`` batches clients: ``"vmap"`` (one ``vmap(grad)`` call over all
            clients), ``"loop"`` (``torch.func.grad`` client by client), or ``"auto"`` (default:
            vmap on GPUs, loop on CPUs, where vmap lowers convolutions to grouped convolutions
            that run slower than separate small ones; see ``benchmarks/README.md``).
        train_eval_per_client: training metrics (``loss``, ``train_acc``) are computed on a
            fixed, seeded subset of at most this many samples of each client, weighted by
            n_i / (n m_i) so that they estimate the data-weighted global objective without
            bias; ``None`` uses every training sample. The default (100) keeps one evaluation
            of FedSUM's MNIST setting (N = 100) at <= 10,000 training images plus the full test
            set, about 2 s on a 2-core CPU instead of ~12 s.
        test_eval_size: test metrics (``test_loss``, ``test_acc``) on a fixed, seeded random
            subset of this many test samples (for runs evaluated every round); ``None``
            (default) uses the whole test split.

    Dropout: layers of type :class:`fedlib.models.KeyedDropout` take their masks from a
    generator keyed by (seed, client, round, step) (:meth:`dropout_masks`), like the minibatch,
    so a client's trajectory does not depend on the engine, on the order clients are trained in,
    or on threads. A plain ``nn.Dropout`` in a user's model would draw from torch's global
    generator instead.
    """

    exact = False

    has_module = True

    def threaded_clients(self, device: torch.device) -> bool:
        """On CPUs with ``strategy="loop"``: clients in worker threads (faster than vmap there)."""
        return self.strategy == "loop" and torch.device(device).type == "cpu"

    def __init__(self, model: nn.Module, partition: Sequence[np.ndarray], train: tuple, test: tuple,
                 batch_size: int = 128, device="cpu", seed: int = 0,
                 loss: Callable | None = None, eval_batch: int = 512, strategy: str = "auto",
                 train_eval_per_client: int | None = 100, test_eval_size: int | None = None):
        self.device = torch.device(device)
        if strategy not in ("auto", "vmap", "loop"):
            raise ValueError(f"strategy: must be one of auto, vmap, loop; got {strategy!r}")
        self.strategy = strategy if strategy != "auto" else (
            "loop" if self.device.type == "cpu" else "vmap")
        self._threads = threading.local()
        self._copy_lock = threading.Lock()
        self.model = model.to(self.device)
        self.names = [n for n, _ in model.named_parameters()]
        self.shapes = [p.shape for _, p in model.named_parameters()]
        self.numels = [p.numel() for _, p in model.named_parameters()]
        self.dtype = next(model.parameters()).dtype
        self.dim = sum(self.numels)
        self.buffers = {n: b for n, b in model.named_buffers()}
        self.train, self.test = (Split(torch.as_tensor(s[0]).to(self.device),
                                       torch.as_tensor(s[1]).to(self.device)) for s in (train, test))
        self.partition = [torch.as_tensor(np.asarray(p), dtype=torch.long, device=self.device)
                          for p in partition]
        self.num_clients = len(self.partition)
        sizes = torch.tensor([len(p) for p in self.partition], dtype=torch.float64)
        if self.num_clients < 1 or (sizes == 0).any():
            raise ValueError("partition: need at least one client and every client non-empty")
        self.sizes = sizes
        self.weights = (sizes / sizes.sum()).to(self.dtype).to(self.device)
        if train_eval_per_client is not None and (isinstance(train_eval_per_client, bool) or not isinstance(
                train_eval_per_client, int) or train_eval_per_client < 1):
            raise ValueError(f"train_eval_per_client: must be a positive int or None, got "
                             f"{train_eval_per_client!r}")
        self.train_eval_per_client = train_eval_per_client
        batch_size = check_int("batch_size", batch_size, 1)
        self.batch_size, self.seed, self.eval_batch = int(batch_size), int(seed), int(eval_batch)
        self.per_sample_loss = loss or (lambda logits, y: nn.functional.cross_entropy(
            logits, y, reduction="none"))
        self._x0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
        self._grad = grad(self._batch_loss)
        self._vgrad = vmap(self._grad, in_dims=(0, 0, 0, 0, 0), randomness="error")
        self._drop_shapes: dict[int, list] = {}
        self._train_eval_idx, self._train_eval_w = self._train_eval_subset()
        n_test = len(self.test.y)
        if test_eval_size is not None and (isinstance(test_eval_size, bool) or not isinstance(
                test_eval_size, int) or not 1 <= test_eval_size):
            raise ValueError(f"test_eval_size: must be a positive int or None, got {test_eval_size!r}")
        self.test_eval_size = test_eval_size
        if test_eval_size is None or test_eval_size >= n_test:
            self._test_idx = None
        else:
            rng = np.random.default_rng(stream_seed(self.seed, 0, 0xE7E5))
            self._test_idx = torch.as_tensor(np.sort(rng.choice(n_test, test_eval_size, replace=False)),
                                             device=self.device)

    def _train_eval_subset(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Indices and weights of the training-metric subset (see ``train_eval_per_client``)."""
        m, n = self.train_eval_per_client, float(self.sizes.sum())
        idx, w = [], []
        for i, part in enumerate(self.partition):
            k = len(part) if m is None else min(m, len(part))
            if k < len(part):
                rng = np.random.default_rng(stream_seed(self.seed, i, 0xE7A1))
                pick = torch.as_tensor(np.sort(rng.choice(len(part), k, replace=False)),
                                       device=self.device)
                part = part[pick]
            idx.append(part)
            w.append(torch.full((k,), float(self.sizes[i]) / (n * k), dtype=torch.float64))
        return torch.cat(idx), torch.cat(w).to(self.device)
    # -- flat <-> dict ----------------------------------------------------------------------
    def unflatten(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Parameter dict of a flat vector [p]."""
        return {n: t.view(s) for n, t, s in zip(self.names, x.split(self.numels), self.shapes,
                                                 strict=True)}

    def initial_params(self, seed: int = 0) -> torch.Tensor:
        return self._x0.clone()

    # -- minibatches --------------------------------------------------------------------------
    def sample_indices(self, client: int, round: int, step: int) -> torch.Tensor:
        """Indices [m] of client's minibatch at (round, step): m = min(batch_size, n_i) distinct
        samples of the client, from a generator keyed by (seed, client, round, step)."""
        part = self.partition[client]
        g = torch.Generator().manual_seed(stream_seed(self.seed, client, round, step))
        m = min(self.batch_size, len(part))
        return part[torch.randperm(len(part), generator=g)[:m].to(self.device)]

    def batch_indices(self, client: int, round: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(indices [B], weights [B]) of client's minibatch at (round, step): the ``m`` samples of
        :meth:`sample_indices`, padded with zero-weight copies to B so that clients stack."""
        idx = self.sample_indices(client, round, step)
        m = len(idx)
        w = torch.ones(self.batch_size, dtype=self.dtype, device=self.device)
        if m < self.batch_size:
            idx = torch.cat([idx, idx[:1].expand(self.batch_size - m)])
            w[m:] = 0
        return idx, w

    def dropout_masks(self, client: int, round: int, step: int, pad_to: int | None = None
                      ) -> tuple[torch.Tensor, ...]:
        """The scaled masks of every KeyedDropout call of the model on client's minibatch at
        (round, step) (m = min(batch_size, n_i) samples), from a generator keyed by
        (seed, client, round, step), drawn on the CPU so every device gets the same masks.
        ``pad_to`` appends zero rows up to that batch size (for the padded vmap batch)."""
        m = min(self.batch_size, len(self.partition[client]))
        if m not in self._drop_shapes:
            with self._copy_lock:
                self._drop_shapes[m] = models.dropout_shapes(
                    copy.deepcopy(self.model), (m, *self.train.x.shape[1:]), self.dtype, self.device)
        shapes = self._drop_shapes[m]
        if not shapes:
            return ()
        g = torch.Generator().manual_seed(stream_seed(self.seed, client, round, step, 0xD0))
        masks = []
        for shape, p in shapes:
            mk = (torch.rand(shape, generator=g, dtype=self.dtype) >= p).to(self.dtype) / (1.0 - p)
            if pad_to is not None and pad_to > m:
                mk = torch.cat([mk, mk.new_zeros((pad_to - m, *shape[1:]))])
            masks.append(mk.to(self.device))
        return tuple(masks)

    def _batch_loss(self, flat, xb, yb, wb, masks=()):
        with models.dropout_masks(masks):
            out = functional_call(self._model(), (self.unflatten(flat), self.buffers), (xb,))
        return (self.per_sample_loss(out, yb) * wb).sum() / wb.sum()

    @contextlib.contextmanager
    def thread_model(self):
        """Within the block, :meth:`grad_one` of this thread uses the thread's own copy of the
        model (``functional_call`` swaps a module's parameters while it runs, so threads must
        not share one). The main thread uses ``self.model``."""
        if threading.current_thread() is not threading.main_thread():
            if getattr(self._threads, "model", None) is None:
                with self._copy_lock:
                    self._threads.model = copy.deepcopy(self.model)
            self._threads.model.train(self.model.training)
        yield

    def _model(self) -> nn.Module:
        """This thread's model: its copy in a worker thread, ``self.model`` otherwise."""
        m = getattr(self._threads, "model", None)
        return self.model if m is None else m

    def grad_one(self, x: torch.Tensor, client: int, round: int = 0, step: int = 0) -> torch.Tensor:
        """Minibatch gradient [p] of one client at one point, by plain autograd on the flat
        parameter vector over the client's own (unpadded) batch: the CPU engine's path. The
        loss, samples and dropout masks are those of :meth:`grads`."""
        idx = self.sample_indices(client, round, step)
        leaf = x.detach().requires_grad_(True)
        xb = self.train.x[idx]
        masks = self.dropout_masks(client, round, step)
        with torch.enable_grad(), models.dropout_masks(masks):
            out = functional_call(self._model(), (self.unflatten(leaf), self.buffers), (xb,))
            loss = self.per_sample_loss(out, self.train.y[idx]).mean()
            (g,) = torch.autograd.grad(loss, leaf)
        return g

    def grads(self, X, clients, round=0, step=0, stochastic=True):
        if not stochastic:
            return torch.stack([self._client_full_grad(x, int(c)) for x, c in zip(X, clients, strict=True)])
        clients = [int(c) for c in clients]
        self.model.train()
        if self.strategy == "loop":
            return torch.stack([self.grad_one(X[s], c, round, step) for s, c in enumerate(clients)])
        batches = [self.batch_indices(c, round, step) for c in clients]
        idx = torch.stack([b[0] for b in batches])
        w = torch.stack([b[1] for b in batches])
        masks = [self.dropout_masks(c, round, step, pad_to=self.batch_size) for c in clients]
        xb, yb = self.train.x[idx], self.train.y[idx]
        stacked = tuple(torch.stack(m) for m in zip(*masks, strict=True)) if masks[0] else ()
        return self._vgrad(X, xb, yb, w, stacked)

    def client_grad(self, x, client, round=0, step=0, stochastic=True):
        """Plain autograd on an ``nn.Module`` copy: the reference for tests."""
        if not stochastic:
            return self._client_full_grad(x, client)
        idx, w = self.batch_indices(client, round, step)
        self.model.train()
        params = {n: t.clone().requires_grad_(True) for n, t in self.unflatten(x).items()}
        with models.dropout_masks(self.dropout_masks(client, round, step, pad_to=len(idx))):
            out = functional_call(self.model, (params, self.buffers), (self.train.x[idx],))
        loss = (self.per_sample_loss(out, self.train.y[idx]) * w).sum() / w.sum()
        gs = torch.autograd.grad(loss, [params[n] for n in self.names])
        return torch.cat([g.reshape(-1) for g in gs])

    def _client_full_grad(self, x, client):
        """Full local gradient in evaluation mode (no dropout: a deterministic gradient)."""
        idx = self.partition[client]
        w = torch.ones(len(idx), dtype=self.dtype, device=self.device)
        model = self._model()                 # this thread's copy in the CPU engine's workers
        was = model.training
        model.eval()
        try:
            return grad(self._batch_loss)(x, self.train.x[idx], self.train.y[idx], w)
        finally:
            model.train(was)

    # -- evaluation -----------------------------------------------------------------------------
    @torch.no_grad()
    def _evaluate(self, x: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor,
                  weights: torch.Tensor | None = None) -> tuple[float, float]:
        """(weighted mean loss, weighted accuracy) of ``x`` on samples (xs, ys); weights sum
        to 1 (default uniform). Each batch of ``eval_batch`` samples is evaluated with one intra-op
        thread (on a CPU in worker threads, each with its own model copy, as clients train) and the
        batches are summed in order, so a history's bits do not depend on the computing process's
        thread count, nor on how many workers share the batches."""
        self.model.eval()
        params = self.unflatten(x)

        @torch.no_grad()
        def batch(s: int) -> tuple[float, float]:
            with self.thread_model():
                xb, yb = xs[s:s + self.eval_batch], ys[s:s + self.eval_batch]
                out = functional_call(self._model(), (params, self.buffers), (xb,))
                loss, hit = self.per_sample_loss(out, yb).double(), (out.argmax(1) == yb).double()
                if weights is None:
                    return float(loss.sum()), float(hit.sum())
                w = weights[s:s + self.eval_batch]
                return float(w @ loss), float(w @ hit)
        starts = range(0, len(ys), self.eval_batch)
        try:
            if self.device.type == "cpu":
                parts = map_single_threaded(batch, starts)
            else:
                parts = [batch(s) for s in starts]
        finally:
            self.model.train()
        total, correct = 0.0, 0.0
        for loss_sum, hit_sum in parts:                   # in order: the same sums as one loop
            total, correct = total + loss_sum, correct + hit_sum
        return (total / len(ys), correct / len(ys)) if weights is None else (total, correct)

    def loss(self, x):
        """Data-weighted training loss (on the evaluation subset, see ``train_eval_per_client``)."""
        return self._train_metrics(x)[0]

    def _train_metrics(self, x):
        idx = self._train_eval_idx
        return self._evaluate(x, self.train.x[idx], self.train.y[idx], self._train_eval_w)

    def metrics(self, x):
        train_loss, train_acc = self._train_metrics(x)
        tx, ty = (self.test.x, self.test.y) if self._test_idx is None else (
            self.test.x[self._test_idx], self.test.y[self._test_idx])
        test_loss, test_acc = self._evaluate(x, tx, ty)
        return {"loss": train_loss, "train_acc": train_acc, "test_loss": test_loss,
                "test_acc": test_acc}

    def __repr__(self) -> str:
        names = getattr(self, "names_spec", {})
        model = names.get("model", type(self.model).__name__)
        return (f"Neural(dataset={names.get('dataset', '?')!r}, model={model!r}, "
                f"partition={names.get('partition', '?')!r}, N={self.num_clients}, p={self.dim:,}, "
                f"batch_size={self.batch_size}, device={str(self.device)!r})")

    def spec(self):
        return {**super().spec(), "model": type(self.model).__name__, "batch_size": self.batch_size,
                "seed": self.seed, "train_eval_per_client": self.train_eval_per_client,
                **({"test_eval_size": self.test_eval_size} if self.test_eval_size is not None else {}),
                **getattr(self, "names_spec", {})}


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
    """Build a registered problem by name (see :func:`available`)."""
    if not isinstance(name, str) or name not in _BUILDERS:
        raise ValueError(f"problem: unknown problem {name!r}; known problems: {', '.join(sorted(_BUILDERS))}")
    fn = _BUILDERS[name][0]
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            raise ValueError(f"{unknown[0]}: not an argument of problem {name!r}; its arguments: "
                             f"{', '.join(params)}")
    return fn(**kwargs)
