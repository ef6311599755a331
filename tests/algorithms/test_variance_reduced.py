"""Variance-reduced and memory-based methods: SCAFFOLD (Karimireddy et al. 2020,
arXiv:1910.06378), MIFA (Gu et al. 2021), FedVARP (Jhunjhunwala et al. 2022), FOCUS and SG-FOCUS
(Ying, Li & Yang 2025, arXiv:2503.20117)."""

import numpy as np
import pytest
import torch

import fedlib
from fedlib import participation, problems, theory

from ..conftest import rel
from .hand import ENGINES, ETA_G, ETA_L, A, C, K, N, assert_by_hand, local, rounds

BY_HAND_NAMES = ("scaffold", "mifa", "fedvarp", "focus", "sg_focus")


def scaffold_by_hand() -> np.ndarray:
    """Option II: local steps corrected by c - c_i; c_i^+ = c_i - c + (x - y_i)/(K eta_l);
    x <- x + eta_g mean (y_i - x); c <- c + (1/N) sum (c_i^+ - c_i)."""
    x, c, ci, xs = np.zeros(2), np.zeros(2), np.zeros((N, 2)), []
    for _, S in rounds():
        dys, dcs = [], []
        for i in S:
            yk = local(i, x, corr=c - ci[i])
            cnew = ci[i] - c + (x - yk) / (K * ETA_L)
            dys.append(yk - x)
            dcs.append(cnew - ci[i])
            ci[i] = cnew
        x = x + ETA_G * np.mean(dys, axis=0)
        c = c + np.sum(dcs, axis=0) / N
        xs.append(x.copy())
    return np.array(xs)


def mifa_by_hand() -> np.ndarray:
    """Every client's latest update U_i (kept for absent clients); x <- x + eta_g eta_l mean_i U_i."""
    x, U, xs = np.zeros(2), np.zeros((N, 2)), []
    for _, S in rounds():
        for i in S:
            U[i] = (local(i, x) - x) / ETA_L
        x = x + ETA_G * ETA_L * U.mean(0)
        xs.append(x.copy())
    return np.array(xs)


def fedvarp_by_hand() -> np.ndarray:
    """v = ybar + mean_{i in S} (Delta_i - y_i); x <- x + eta_g v; y_i <- Delta_i."""
    x, y, xs = np.zeros(2), np.zeros((N, 2)), []
    for _, S in rounds():
        delta = {i: local(i, x) - x for i in S}
        v = y.mean(0) + np.mean([delta[i] - y[i] for i in S], axis=0)
        for i in S:
            y[i] = delta[i]
        x = x + ETA_G * v
        xs.append(x.copy())
    return np.array(xs)


def focus_by_hand() -> np.ndarray:
    """Push-pull: each arriving client tracks its gradient changes (y_i += g - g_prev_i, a local
    move by eta_l y_i between evaluations); the server tracker y_s sums the clients' y_i and
    x <- x - eta_g eta_l y_s."""
    x, ys, gp, xs = np.zeros(2), np.zeros(2), np.zeros((N, 2)), []
    for _, S in rounds():
        for i in S:
            xi, yi = x.copy(), np.zeros(2)
            for k in range(K):
                if k > 0:
                    xi = xi - ETA_L * yi
                g = A[i] @ (xi - C[i])
                yi = yi + g - gp[i]
                gp[i] = g
            ys = ys + yi
        x = x - ETA_G * ETA_L * ys
        xs.append(x.copy())
    return np.array(xs)


BY_HAND = {"scaffold": scaffold_by_hand, "mifa": mifa_by_hand, "fedvarp": fedvarp_by_hand,
           "focus": focus_by_hand, "sg_focus": focus_by_hand}   # SG-FOCUS: FOCUS's update (exact gradients)


@pytest.mark.parametrize("name", BY_HAND_NAMES)
@pytest.mark.parametrize("engine", ENGINES)
def test_rounds_by_hand(name, engine):
    assert_by_hand(name, BY_HAND[name](), engine)


@pytest.mark.parametrize("name,steps", [("focus", 3), ("sg_focus", 3), ("mifa", 1), ("fedvarp", 1)])
def test_exact_under_heterogeneous_bernoulli(name, steps, quad):
    sched = participation.build("bernoulli", 8, 3000, seed=11, p=np.linspace(0.2, 0.9, 8),
                                local_steps=steps)
    lr = 0.05 if name not in ("focus", "sg_focus") else 0.05 / 8
    res = fedlib.run(name, quad, sched, lr_local=lr, progress=False, eval_every=3000)
    assert rel(res.params, quad.optimum()) <= 1e-8
    avg = fedlib.run("fedavg", quad, sched, lr_local=lr, progress=False, eval_every=3000)
    assert rel(avg.params, quad.optimum()) > 1e-3


def test_scaffold_exact_under_full_participation(quad):
    sched = participation.build("full", 8, 1500, local_steps=5)
    res = fedlib.run("scaffold", quad, sched, lr_local=0.05, progress=False, eval_every=1500)
    assert rel(res.params, quad.optimum()) <= 1e-8
    avg = fedlib.run("fedavg", quad, sched, lr_local=0.05, progress=False, eval_every=1500)
    assert rel(avg.params, quad.optimum()) > 1e-3


def test_scaffold_counting_and_divisor_options(quad):
    sched = participation.build("uniform", quad.num_clients, 5, seed=0, per_round=3, local_steps=2)
    two = fedlib.run("scaffold", quad, sched, progress=False)
    one = fedlib.run("scaffold", quad, sched, progress=False, uplink_vectors=1)
    assert two.history["uplink"].iloc[-1] == 2 * one.history["uplink"].iloc[-1] == 2 * 3 * 5
    assert torch.equal(one.params, two.params)                                    # counting only
    # dy_divisor (the FOCUS authors' code: the sum of the Delta y over a fixed count): at the count
    # that arrives (3 every round) it is the mean; at twice that, the first round's step is half
    # (c and every c_i start at 0, so the first round's Delta y do not depend on it); float64,
    # rounding only
    same = fedlib.run("scaffold", quad, sched, progress=False, dy_divisor=3)
    assert torch.allclose(same.params, two.params, rtol=1e-12, atol=0)
    x0 = torch.ones(4, dtype=torch.float64)
    one_round = participation.build("uniform", quad.num_clients, 1, seed=0, per_round=3, local_steps=2)
    full = fedlib.run("scaffold", quad, one_round, progress=False, x0=x0)
    half = fedlib.run("scaffold", quad, one_round, progress=False, dy_divisor=6, x0=x0)
    assert not torch.equal(full.params, x0)
    assert torch.allclose(half.params - x0, 0.5 * (full.params - x0), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="^uplink_vectors"):
        fedlib.run("scaffold", quad, sched, progress=False, uplink_vectors=3)


def test_focus_converges_linearly_under_weighted_participation():
    A_, b, owner = problems.focus_toy_data(n=800, d=10, num_clients=8, seed=0)
    ls = problems.LeastSquares(A_, b, owner)
    q = problems.focus_arbitrary_weights(8, seed=5)
    sched = participation.build("weighted", 8, 400, seed=0, per_round=2, q=q, local_steps=3)
    res = fedlib.run("focus", ls, sched, lr_local=5e-4, progress=False)
    h = res.history[res.history["round"] >= 50]
    logerr = np.log(h["rel_dist_to_opt"].to_numpy())
    slope, icpt = np.polyfit(h["round"], logerr, 1)
    fit = slope * h["round"] + icpt
    r2 = 1 - ((logerr - fit) ** 2).sum() / ((logerr - logerr.mean()) ** 2).sum()
    assert slope < -0.02 and r2 > 0.98         # a straight line on the log axis
    # every window of 70 rounds shrinks the error by at least a third of the mean factor
    # (the factor varies with the random participation, not with the error level)
    windows = np.diff(logerr[::70])
    assert (windows < 0).all() and windows.max() < windows.mean() / 3


def test_fedvarp_fixed_point_is_the_plain_mean_over_all_clients():
    """At a fixed point FedVARP's table holds every client's update at x_bar and the correction
    has mean zero: the mean iterate sits at (sum M_i)^-1 sum M_i c_i (theory's W_i = 1/N), the
    point of c-a-FedAvg, not FedAvg's p-weighted one; with momentum too."""
    n_cl, T, eta = 4, 6000, 0.02
    prob = problems.random_quadratic(n_cl, 3, seed=7, spread=2.0)
    p_up, tau = np.array([0.9, 0.3, 0.6, 0.5]), np.array([1, 5, 2, 8])
    A_, C_ = prob.A.numpy(), prob.c.numpy()
    env = participation.build("full", n_cl, T, seed=1, uplink_p=p_up, local_steps=tau)
    scale = np.linalg.norm(prob.optimum().numpy())
    for solver in ({}, {"momentum": 0.5}):
        acc = []
        fedlib.run("fedvarp", prob, env, lr_local=eta, progress=False, eval_every=T,
                   callback=lambda t, x, acc=acc: acc.append(x.numpy().copy()) if t >= T // 4 else None,
                   **solver)
        W = theory.aggregation_weights("fedvarp", env, p_up, eta, prob.weights.numpy(), **solver)
        xv = theory.fixed_point(A_, C_, W, env, eta, **solver)
        w_ca = theory.expected_weights("ca_fedavg", p_up, tau, eta, prob.weights.numpy())
        xca = theory.fixed_point_static(A_, C_, w_ca, tau, eta, **solver)
        xavg = theory.fixed_point_static(A_, C_, p_up / n_cl, tau, eta, **solver)
        assert np.allclose(xv, xca)
        assert np.linalg.norm(np.mean(acc, axis=0) - xv) / scale < 0.05
        assert np.linalg.norm(xavg - xv) / scale > 0.1                  # a different point than FedAvg's
