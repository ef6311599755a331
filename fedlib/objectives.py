"""Objectives split over clients: the interface every problem implements, and the analytic ones
(quadratic forms, least squares, the FOCUS least-squares toy's data).

Model of computation and keying of randomness: see :mod:`fedlib.problems`, which builds problems
by name from these classes and from :mod:`fedlib.tasks`."""

from __future__ import annotations

import math

import numpy as np
import torch

from ._validate import InputError, available_memory, check_int, check_real

__all__ = ["LeastSquares", "Problem", "Quadratic", "QuadraticForm", "focus_arbitrary_weights",
           "focus_toy_bytes", "focus_toy_data", "stream_seed"]

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
    #: the content digest of each dataset the problem computes on, by name
    #: (:func:`fedlib.data.content_digest`; :class:`~fedlib.tasks.Neural` computes its own); a
    #: stored run records it (``meta.json``'s ``data``) so that ``verify`` tells a replay on other
    #: data apart. None: no data (an analytic objective).
    data_digests: dict[str, str] | None = None

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
                 sigma: float = 0.0, seed: int = 0, dtype: torch.dtype = torch.float64, device="cpu"):
        self.dtype, self.device = dtype, torch.device(device)
        self.H = torch.as_tensor(H, dtype=dtype, device=self.device)
        self.r = torch.as_tensor(r, dtype=dtype, device=self.device)
        self.k = torch.as_tensor(k, dtype=dtype, device=self.device)
        if self.H.ndim != 3 or self.H.shape[1] != self.H.shape[2]:
            raise InputError(f"H: expected [N, d, d], got {tuple(self.H.shape)}")
        self.num_clients, self.dim = self.H.shape[0], self.H.shape[1]
        if self.r.shape != (self.num_clients, self.dim):
            raise InputError(f"r: expected {(self.num_clients, self.dim)}, got {tuple(self.r.shape)}")
        w = torch.full((self.num_clients,), 1.0 / self.num_clients, dtype=dtype) if weights is None \
            else torch.as_tensor(weights, dtype=dtype)
        if w.shape != (self.num_clients,) or (w < 0).any() or not math.isclose(float(w.sum()), 1.0,
                                                                                rel_tol=1e-9):
            raise InputError("weights: expected N non-negative client weights summing to 1")
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

    def __init__(self, A: np.ndarray | torch.Tensor, c: np.ndarray | torch.Tensor, weights=None,
                 sigma: float = 0.0, seed: int = 0, dtype: torch.dtype = torch.float64, device="cpu"):
        A = torch.as_tensor(A, dtype=dtype)
        c = torch.as_tensor(c, dtype=dtype)
        if A.ndim != 3 or c.shape != A.shape[:2]:
            raise InputError(f"A, c: expected A [N, d, d] and c [N, d], got {tuple(A.shape)}, "
                             f"{tuple(c.shape)}")
        if not torch.allclose(A, A.transpose(1, 2)) or torch.linalg.eigvalsh(A).min() <= 0:
            raise InputError("A: every A_i must be symmetric positive definite")
        self.A, self.c = A.to(device), c.to(device)
        k = 0.5 * torch.einsum("ni,nij,nj->n", c, A, c)
        super().__init__(A, torch.einsum("nij,nj->ni", A, c), k, weights, sigma, seed, dtype, device)


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

    def __init__(self, A_rows: np.ndarray | torch.Tensor, b_rows: np.ndarray | torch.Tensor,
                 client_of_row: np.ndarray | torch.Tensor, normalized: bool = False, sigma: float = 0.0,
                 seed: int = 0, dtype: torch.dtype = torch.float64, device="cpu"):
        A = torch.as_tensor(A_rows, dtype=dtype)
        b = torch.as_tensor(b_rows, dtype=dtype)
        owner = torch.as_tensor(np.asarray(client_of_row), dtype=torch.long)
        if A.ndim != 2 or b.shape != (A.shape[0],) or owner.shape != (A.shape[0],):
            raise InputError("A_rows, b_rows, client_of_row: expected [n, d], [n], [n]")
        n_clients = int(owner.max()) + 1
        counts = torch.bincount(owner, minlength=n_clients)
        if (counts == 0).any():
            raise InputError("client_of_row: every client 0..N-1 needs at least one row")
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


def focus_toy_bytes(n: int, d: int) -> int:
    """Peak bytes that :func:`focus_toy_data` allocates for an n x d toy: the n x n diagonal
    scaling it multiplies the n x d design by, and that design, twice (float64)."""
    return 8 * n * n + 2 * 8 * n * d


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
    if (need := focus_toy_bytes(n, d)) > (have := available_memory()):
        raise InputError(f"n, d: the {n:,} x {d:,} toy needs about {need / 2**30:,.1f} GiB to build; this "
                         f"machine has {have / 2**30:,.1f} GiB available")
    rs = np.random.RandomState(check_int("seed", seed, 0, 2**32 - 1))
    u = rs.rand(n)
    A = np.diag((u + 1) / 2) @ rs.randn(n, d)
    x_o = rs.randn(d)
    b = A @ x_o + 0.1 * rs.randn(n)
    return A, b, np.arange(n) % num_clients


def focus_arbitrary_weights(num_clients: int = 16, seed: int = 5) -> np.ndarray:
    """Sampling weights of the FOCUS toy's "arbitrary" participation:
    q = (u' + 0.01) / sum, u' ~ U(0, 1)^N from ``numpy.random.RandomState(5)``."""
    num_clients = check_int("num_clients", num_clients, 1)
    if 24 * num_clients > (have := available_memory()):
        raise InputError(f"num_clients: {num_clients:,} weights need more than the {have / 2**30:,.1f} GiB "
                         "this machine has available")
    u = np.random.RandomState(check_int("seed", seed, 0, 2**32 - 1)).rand(num_clients)
    return (u + 0.01) / (u + 0.01).sum()



from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
