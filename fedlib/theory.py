"""Closed-form fixed points of FedAvg-type methods on quadratics (FedACS App. C's model).

With exact gradients of f_i(x) = 1/2 (x - c_i)^T A_i (x - c_i), any linear local solver (plain
SGD, heavy-ball momentum, FedProx) maps the global model x to x_i = x - M_i (x - c_i) after
tau_i steps, with a matrix M_i that depends on A_i, eta, tau_i and the solver
(:func:`local_map`). Every aggregation studied by Weng et al. 2025 (FedACS, arXiv:2505.11304) then reads

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

from . import algorithms
from ._validate import InputError
from .algorithms.reweighting import nova_normaliser
from .participation import Schedule

__all__ = ["aggregation_weights", "calibrated_rates", "expected_weights", "fixed_point", "fixed_point_static",
           "local_map", "step_factors"]

#: the methods whose aggregation the algorithms declare for this model
METHODS = ("fedavg", "ca_fedavg", "fedau", "fednova", "fedacs", "fedvarp")


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


def _declared(method: str, attr: str) -> staticmethod:
    """The algorithm's own declaration ``attr`` (one source of truth: fedlib.algorithms); the
    class itself must declare it, so a subclass never inherits its parent's weights."""
    cls = algorithms.get(method) if method in algorithms.available() else None
    if cls is None or attr not in vars(cls):
        having = sorted(n for n, c in ((n, algorithms.get(n)) for n in algorithms.available())
                        if attr in vars(c))
        raise InputError(f"method: must be one of {', '.join(having)}; got {method!r}")
    return getattr(cls, attr)


def aggregation_weights(method: str, schedule: Schedule, uplink_p: np.ndarray, eta: float,
                        weights: np.ndarray, draws: int | None = None, momentum: float = 0.0,
                        prox_mu: float = 0.0) -> np.ndarray:
    """W_i^t [rounds, N] of ``method`` on ``schedule`` (for fedacs: its own sampled schedule),
    as the algorithm declares them (its ``theory_weights``: fedavg, ca_fedavg, fedau, fednova,
    fedacs, fedvarp; each documents its formula)."""
    m = schedule.active * schedule.uplink_ok
    return _declared(method, "theory_weights")(m, schedule=schedule, uplink_p=uplink_p, eta=eta,
                                               weights=weights, draws=draws, momentum=momentum,
                                               prox_mu=prox_mu)


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
    """E[W_i] [N] in a static environment (uplink success p_i, tau_i steps, everyone asked), as
    the algorithm declares it (its ``theory_expected_weights``): fedavg p_i / N; ca_fedavg,
    fedvarp and fedau (omega_i -> 1/p_i) 1/N; fedacs q_i p_i with the inferred eq. 15; fednova
    by Monte Carlo over ``mc_samples`` uplink patterns (its weights are a ratio over the clients
    whose upload arrived)."""
    import torch

    a = nova_normaliser(torch.as_tensor(np.asarray(steps)), eta, momentum, prox_mu).numpy()
    return _declared(method, "theory_expected_weights")(np.asarray(p, dtype=float), a, np.asarray(weights),
                                                        mc_samples=mc_samples, seed=seed)


def fixed_point_static(A: np.ndarray, c: np.ndarray, w: np.ndarray, steps: np.ndarray, eta: float,
                       momentum: float = 0.0, prox_mu: float = 0.0) -> np.ndarray:
    """x_bar = (sum_i w_i M_i)^{-1} sum_i w_i M_i c_i for expected weights w [N] and fixed
    local steps [N]."""
    Ms = [local_map(A[i], eta, int(steps[i]), momentum, prox_mu) for i in range(len(c))]
    lhs = sum(wi * M for wi, M in zip(w, Ms, strict=True))
    rhs = sum(wi * M @ ci for wi, M, ci in zip(w, Ms, c, strict=True))
    return np.linalg.solve(lhs, rhs)


# --------------------------------------------------------------------------------------------
# Step-length calibration (FedACS Sec. 6 and App. I.2)
# --------------------------------------------------------------------------------------------
#: methods whose rate App. I.2 calibrates, and those it leaves at FedAvg's rate
CALIBRATED = ("fedavg", "ca_fedavg", "fedvarp", "fednova", "fedacs")
UNCALIBRATED = ("fedau", "os_sampling")


def step_factors(method: str, schedule: Schedule, uplink_p: np.ndarray | None = None,
                 weights: np.ndarray | None = None, eta: float = 1.0, momentum: float = 0.0,
                 prox_mu: float = 0.0, fedavg_aggregation: str = "contacted", mc_samples: int = 256,
                 seed: int = 0) -> np.ndarray:
    """s_m^t [rounds]: the effective step length of ``method`` in each round of ``schedule``.

    To first order in the local rate, a round moves the server model by
    ``-eta_l sum_i E[W_i^t] ||a_i^t||_1 grad f_i``: a scalar ``s^t = sum_i E[W_i^t] ||a_i^t||_1``
    times a convex combination of client gradients. FedACS App. I.2 calibrates every method to
    the same effective step length as FedAvg; that scalar is what we equate (the paper's formulas
    112-116 were lost in the text; this is our reading of the surviving prose, see
    :func:`calibrated_rates`). The expectation is over upload success (probabilities
    ``uplink_p``, default the schedule's own), given who is asked in round t (``active > 0``) and
    their local steps (normaliser ``||a||_1`` of the local solver, FedNova's a_i).

    * fedavg: W_i = m_i ok_i / D with D = sum of the contacted m_i (``"contacted"``, FedACS's
      eq. 6 as we read it), the number of arriving updates (``"participants"``) or N (``"all"``);
    * ca_fedavg and fedvarp: W_i = m_i ok_i / (p_i D_contacted) (App. I.2 derives FedVARP's
      expected step from c-a-FedAvg's, eq. 115);
    * fednova: W_i = tau_eff share_i / a_i, so s = E[tau_eff] (data shares over the arrivals);
    * fedacs: K draws with replacement by q_i ~ d_i / (p_i ||a_i||_1) over the available clients
      and anonymous 1/K aggregation: s = sum_i q_i p_i ||a_i||_1.

    Expectations with a ratio (fedavg "participants", fednova) are Monte Carlo averages over
    ``mc_samples`` upload patterns per round (seeded); the others are exact.
    """
    import torch

    active = np.asarray(schedule.active, dtype=float)
    T, n = active.shape
    p = np.asarray(schedule.uplink_probs if uplink_p is None and schedule.uplink_probs is not None
                   else (1.0 if uplink_p is None else uplink_p), dtype=float)
    p = np.broadcast_to(p, (T, n)) if p.ndim < 2 else p
    if p.shape != (T, n) or (p <= 0).any() or (p > 1).any():
        raise InputError(f"uplink_p: expected probabilities in (0, 1] of shape ({T}, {n}) or broadcastable")
    d = np.ones(n) / n if weights is None else np.asarray(weights, dtype=float)
    if d.shape != (n,) or (d < 0).any() or d.sum() <= 0:
        raise InputError(f"weights: expected {n} non-negative client weights with a positive sum")
    a = nova_normaliser(torch.as_tensor(np.array(schedule.local_steps)), eta, momentum, prox_mu).numpy()
    a = np.broadcast_to(a, (T, n))
    asked = active.sum(1)
    rng = np.random.default_rng(seed)
    out = np.zeros(T)
    factor = _declared(method, "theory_step_factor")
    for t in range(T):
        if asked[t] == 0:
            continue
        out[t] = factor(active[t], p[t], a[t], d, asked[t], rng=rng, mc_samples=mc_samples,
                        fedavg_aggregation=fedavg_aggregation)
    return out


def calibrated_rates(lr: float, schedule: Schedule, methods: tuple[str, ...] = CALIBRATED + UNCALIBRATED,
                     schedules: dict[str, Schedule] | None = None, **kwargs) -> dict[str, float]:
    """Local rates that give each method FedAvg's effective step length (FedACS App. I.2).

    ``eta_m = lr * mean_t s_fedavg^t / mean_t s_m^t`` with s from :func:`step_factors` (keyword
    arguments go there): the rates make the expected first-order progress over the run equal.
    Per method, as App. I.2 describes in words (its formulas were lost in the text):
    FedACS, c-a-FedAvg and FedNova get their own calibrated rate; FedVARP gets c-a-FedAvg's
    ("can be set the same", its eq. 115); FedAU and OS keep FedAvg's rate ("it's hard to compute
    the effective step size, so the hyper-parameter is set the same"; OS's effective rate equals
    FedAvg's by its eqs. 23-25).

    ``schedule`` is the environment FedAvg runs on (who is asked each round, their local
    steps); ``schedules`` gives another one per method where a method sees a different one,
    e.g. FedACS choosing among all available clients (kind ``full``) while the baselines ask a
    uniform subset. Uplink probabilities default to each schedule's own.

    Returns:
        method -> local learning rate.
    """
    if not lr > 0:
        raise InputError(f"lr: must be positive, got {lr!r}")
    unknown = [m for m in methods if m not in CALIBRATED + UNCALIBRATED]
    if unknown:
        raise InputError(f"methods: unknown {unknown}; allowed: {', '.join(CALIBRATED + UNCALIBRATED)}")
    ref = step_factors("fedavg", schedule, **kwargs).mean()
    if ref <= 0:
        raise InputError("schedule: FedAvg makes no progress on it (no client asked or no upload possible)")
    schedules = dict(schedules or {})
    extra = sorted(set(schedules) - set(methods))
    if extra:
        raise InputError(f"schedules: methods {extra} are not in methods ({', '.join(methods)})")
    out = {}
    for m in methods:
        same = m in UNCALIBRATED or m == "fedavg"
        own = schedules.get(m, schedule)
        out[m] = float(lr) if same else float(lr * ref / step_factors(m, own, **kwargs).mean())
    return out


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
