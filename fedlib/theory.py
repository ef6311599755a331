"""Closed-form fixed points of FedAvg-type methods on quadratics (FedACS App. C's model).

With exact gradients of f_i(x) = 1/2 (x - c_i)^T A_i (x - c_i), any linear local solver (plain
SGD, heavy-ball momentum, FedProx) maps the global model x to x_i = x - M_i (x - c_i) after
tau_i steps, with a matrix M_i that depends on A_i, eta, tau_i and the solver
(:func:`local_map`). Every aggregation studied in fedacs.txt then reads

    x_{t+1} = x_t - sum_i W_i^t M_i^t (x_t - c_i)

with random scalar weights W_i^t that do not depend on x (who is drawn, whose upload arrives,
the normalisers). Taking expectations, E[x_t] converges to

    x_bar = (sum_i E[W_i M_i])^{-1} sum_i E[W_i M_i] c_i,

the method's fixed point (FedACS App. C, eqs. 33-38, in this notation). :func:`fixed_point`
evaluates it for a method and a realised Schedule, with the expectations taken as averages over
the schedule's rounds.
"""

from __future__ import annotations

import numpy as np

from .algorithms.reweighting import nova_normaliser
from .participation import Schedule

__all__ = ["aggregation_weights", "expected_weights", "fixed_point", "fixed_point_static", "local_map"]

METHODS = ("fedavg", "ca_fedavg", "fedau", "fednova", "fedacs")


def local_map(A: np.ndarray, eta: float, steps: int, momentum: float = 0.0,
              prox_mu: float = 0.0) -> np.ndarray:
    """M with x_tau - x_0 = -M (x_0 - c) for ``steps`` exact-gradient steps of the local solver
    on f(x) = 1/2 (x - c)^T A (x - c): plain SGD (M = I - (I - eta A)^tau), heavy ball
    (b <- rho b + d, x <- x - eta b, as ``torch.optim.SGD``) or FedProx (d = grad + mu (x - x_0))."""
    d = A.shape[0]
    E = np.zeros((d, d))          # e_k = x_k - x_0, as columns for delta_0 = x_0 - c = unit vectors
    B = np.zeros((d, d))
    for _ in range(steps):
        g = A @ (E + np.eye(d)) + prox_mu * E
        B = momentum * B + g
        E = E - eta * B
    return -E


def aggregation_weights(method: str, schedule: Schedule, uplink_p: np.ndarray, eta: float,
                        weights: np.ndarray, draws: int | None = None, momentum: float = 0.0,
                        prox_mu: float = 0.0) -> np.ndarray:
    """W_i^t [rounds, N] of ``method`` on ``schedule`` (for fedacs: its own sampled schedule).

    * fedavg (anonymous, over the N contacted clients): ok_i m_i / N
    * ca_fedavg: ok_i m_i / (p_i N)
    * fedau: ok_i m_i omega_i / N with omega_i = 1/p_i, the limit of its interval estimates
    * fednova: tau_eff (d_i / sum_{arrived} d) / a_i for arrived clients
    * fedacs: ok_i m_i / K
    """
    m = schedule.active * schedule.uplink_ok
    n = schedule.num_clients
    if method == "fedavg":
        return m / n
    if method in ("ca_fedavg", "fedau"):
        return m / (uplink_p * n)
    if method == "fedacs":
        return m / float(draws)
    if method == "fednova":
        import torch
        a = nova_normaliser(torch.tensor(np.array(schedule.local_steps)), eta, momentum, prox_mu).numpy()
        w = m * weights[None, :]
        tot = w.sum(1, keepdims=True)
        p = np.divide(w, tot, out=np.zeros_like(w, dtype=float), where=tot > 0)
        tau_eff = (p * a).sum(1, keepdims=True)
        return tau_eff * p / a
    raise ValueError(f"method: must be one of {', '.join(METHODS)}; got {method!r}")


def fixed_point(A: np.ndarray, c: np.ndarray, W: np.ndarray, schedule: Schedule, eta: float,
                momentum: float = 0.0, prox_mu: float = 0.0) -> np.ndarray:
    """x_bar = (sum_i E[W_i M_i])^{-1} sum_i E[W_i M_i] c_i with the expectations averaged over
    the schedule's rounds (see the module docstring)."""
    n, d = c.shape
    cache: dict[tuple[int, int], np.ndarray] = {}
    lhs, rhs = np.zeros((d, d)), np.zeros(d)
    T = schedule.num_rounds
    for i in range(n):
        for k in np.unique(schedule.local_steps[:, i]):
            rows = schedule.local_steps[:, i] == k
            w = W[rows, i].sum() / T
            if w == 0:
                continue
            key = (i, int(k))
            if key not in cache:
                cache[key] = local_map(A[i], eta, int(k), momentum, prox_mu)
            lhs += w * cache[key]
            rhs += w * cache[key] @ c[i]
    return np.linalg.solve(lhs, rhs)


def expected_weights(method: str, p: np.ndarray, steps: np.ndarray, eta: float, weights: np.ndarray,
                     momentum: float = 0.0, prox_mu: float = 0.0, mc_samples: int = 20000,
                     seed: int = 0) -> np.ndarray:
    """E[W_i] [N] in a static environment (uplink success p_i, tau_i steps, everyone asked):
    fedavg p_i / N; ca_fedavg and fedau (omega_i -> 1/p_i) 1/N; fedacs q_i p_i with the
    inferred eq. 15; fednova by Monte Carlo over ``mc_samples`` uplink patterns (its weights
    are a ratio over the clients whose upload arrived)."""
    import torch

    n = len(p)
    a = nova_normaliser(torch.as_tensor(np.asarray(steps)), eta, momentum, prox_mu).numpy()
    if method == "fedavg":
        return p / n
    if method in ("ca_fedavg", "fedau"):
        return np.full(n, 1.0 / n)
    if method == "fedacs":
        q = weights / (p * a)
        return q / q.sum() * p
    if method == "fednova":
        ok = np.random.default_rng(seed).random((mc_samples, n)) < p
        w = ok * weights
        tot = w.sum(1, keepdims=True)
        share = np.divide(w, tot, out=np.zeros_like(w), where=tot > 0)
        return ((share * a).sum(1, keepdims=True) * share / a).mean(0)
    raise ValueError(f"method: must be one of {', '.join(METHODS)}; got {method!r}")


def fixed_point_static(A: np.ndarray, c: np.ndarray, w: np.ndarray, steps: np.ndarray, eta: float,
                       momentum: float = 0.0, prox_mu: float = 0.0) -> np.ndarray:
    """x_bar = (sum_i w_i M_i)^{-1} sum_i w_i M_i c_i for expected weights w [N] and fixed
    local steps [N]."""
    Ms = [local_map(A[i], eta, int(steps[i]), momentum, prox_mu) for i in range(len(c))]
    lhs = sum(wi * M for wi, M in zip(w, Ms, strict=True))
    rhs = sum(wi * M @ ci for wi, M, ci in zip(w, Ms, c, strict=True))
    return np.linalg.solve(lhs, rhs)
