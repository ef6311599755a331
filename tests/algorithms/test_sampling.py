"""Algorithms that choose their own clients: FedACS (Weng, Ren, Xiao & Skoglund 2025,
arXiv:2505.11304; the update rule is our inference) and optimal client sampling (Chen, Horvath &
Richtarik 2020, the FedACS baseline "OS")."""

import numpy as np
import pytest
import torch

import fedlib
from fedlib import participation, problems
from fedlib.algorithms.sampling import os_probabilities

from .hand import ENGINES, ETA_G, ETA_L, A, C, N, assert_by_hand, hand_problem, local, rounds
from .test_fedavg import fedavg_by_hand

BY_HAND_NAMES = ("fedacs", "os_sampling")


@pytest.mark.filterwarnings("ignore:p. participation kind 'trace' defines no probabilities")
@pytest.mark.parametrize("engine", ENGINES)
def test_os_sampling_rounds_by_hand(engine):
    """A budget above the clients present picks every one with probability 1: FedAvg's mean."""
    assert_by_hand("os_sampling", fedavg_by_hand(), engine)


def os_with_replacement_by_hand(budget: int, seed: int = 0) -> np.ndarray:
    """FedACS App. B.1.3's OS on the two clients: ``budget`` draws with replacement, q_i proportional
    to d_i ||Delta_i||, aggregated as x + eta_g (1/budget) sum_draws d_j Delta_j / q_j."""
    x, out = np.zeros(2), []
    for t, S in rounds():
        delta = np.array([local(i, x) - x for i in S])
        d = np.full(len(S), 1.0 / len(S))                  # the problem's equal weights, over S
        u = d * np.linalg.norm(delta, axis=1)
        q = u / u.sum()
        counts = np.bincount(np.random.default_rng([seed, t]).choice(len(S), size=budget, p=q / q.sum()),
                             minlength=len(S))
        x = x + ETA_G * ((counts * d / (budget * q)) @ delta)
        out.append(x.copy())
    return np.array(out)


@pytest.mark.parametrize("engine", ENGINES)
def test_os_with_replacement_rounds_by_hand(engine):
    """App. B.1.3's reading of OS: a client drawn twice counts twice; one drawn never not at all."""
    expect = os_with_replacement_by_hand(3)
    assert_by_hand("os_sampling", expect, engine, budget=3, sampling="with_replacement")
    assert not np.allclose(expect, fedavg_by_hand())        # the draws matter on this trace


def test_os_with_replacement_is_unbiased(quad):
    """Over many draws the aggregate's mean is the weighted mean of the updates (what water-filling
    and FedAvg aggregate): one round, full participation, mean over seeds within 4 standard errors."""
    sched = participation.build("full", 8, 1, local_steps=2)
    ends = np.array([fedlib.run("os_sampling", quad, sched, lr_local=0.05, budget=2, seed=s,
                                sampling="with_replacement", progress=False).params.numpy()
                     for s in range(400)])
    avg = fedlib.run("fedavg", quad, sched, lr_local=0.05, progress=False).params.numpy()
    assert np.all(np.abs(ends.mean(0) - avg) <= 4 * ends.std(0) / np.sqrt(len(ends)) + 1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_fedacs_round_by_hand(engine):
    """A client drawn m times trains once and makes ONE upload attempt (one link, FedACS Sec. 2:
    "the aggregation weight for each client corresponds to the frequency of its appearance"): it
    counts m times if that upload arrives and not at all if it fails (inferred; both cases occur)."""
    rounds_ = 12
    env = participation.build("full", N, rounds_, seed=0, uplink_p=[1.0, 0.5], local_steps=[1, 3])
    traj = []
    res = fedlib.run("fedacs", hand_problem(), env, lr_local=ETA_L, lr_global=ETA_G, draws=3,
                     uplink_p=[1.0, 0.5], progress=False, engine=engine,
                     callback=lambda t, x: traj.append(x.numpy()))
    sched = res.schedule
    twice = sched.active >= 2
    assert (twice & sched.uplink_ok).any() and (twice & ~sched.uplink_ok).any()
    x = np.zeros(2)
    for t in range(rounds_):
        upd = np.zeros(2)
        for i in range(N):
            if sched.active[t, i] and sched.uplink_ok[t, i]:
                xi = x.copy()
                for _ in range(sched.local_steps[t, i]):
                    xi = xi - ETA_L * A[i] @ (xi - C[i])
                upd += sched.active[t, i] * (xi - x)
        x = x + ETA_G * upd / 3
        assert np.allclose(traj[t], x, rtol=1e-12, atol=1e-12)


def _fixed_points(prob, eta, p_up, tau, d):
    """Closed forms for exact gradients and plain local SGD: tau_i steps map x to
    x - M_i (x - c_i), M_i = I - (I - eta A_i)^tau_i. FedAvg with anonymous aggregation over
    all N contacted clients has E[x_{t+1}] = E[x_t] - (1/N) sum p_i M_i (E[x_t] - c_i): the mean
    iterate converges to x_bar = (sum p_i M_i)^-1 sum p_i M_i c_i. FedACS (q_i ~ d_i/(p_i tau_i))
    has E[update] = -c sum d_i M_i/tau_i (x - c_i): x_hat = (sum d_i M_i/tau_i)^-1 (...)."""
    A_, C_ = prob.A.numpy(), prob.c.numpy()
    n, dim = C_.shape
    Ms = [np.eye(dim) - np.linalg.matrix_power(np.eye(dim) - eta * A_[i], tau[i]) for i in range(n)]
    xbar = np.linalg.solve(sum(p_up[i] * Ms[i] for i in range(n)),
                           sum(p_up[i] * Ms[i] @ C_[i] for i in range(n)))
    xhat = np.linalg.solve(sum(d[i] * Ms[i] / tau[i] for i in range(n)),
                           sum(d[i] * Ms[i] @ C_[i] / tau[i] for i in range(n)))
    return xbar, xhat


def test_fedacs_removes_both_biases_fedavg_keeps_them():
    n_cl, T, eta = 4, 8000, 0.02
    prob = problems.random_quadratic(n_cl, 3, seed=7, spread=2.0)
    p_up, tau = np.array([0.9, 0.3, 0.6, 0.5]), np.array([1, 5, 2, 8])
    d = prob.weights.numpy()
    xs = prob.optimum().numpy()
    xbar, xhat = _fixed_points(prob, eta, p_up, tau, d)
    env = participation.build("full", n_cl, T, seed=1, uplink_p=p_up, local_steps=tau)

    def mean_iterate(name, **kw):
        acc = []
        fedlib.run(name, prob, env, lr_local=eta, progress=False, eval_every=T,
                   callback=lambda t, x: acc.append(x.numpy().copy()) if t >= T // 4 else None, **kw)
        return np.mean(acc, axis=0)

    scale = np.linalg.norm(xs)
    avg = mean_iterate("fedavg", aggregation="all")
    acs = mean_iterate("fedacs", draws=40, uplink_p=p_up)
    # simulations land on their closed-form points (time averages of noisy iterates)
    assert np.linalg.norm(avg - xbar) / scale < 0.05
    assert np.linalg.norm(acs - xhat) / scale < 0.05
    # FedAvg's point is far from x*; FedACS's is within its learning-rate bound:
    # ||x_hat - x*|| <= L^2 eta sum_i d_i (tau_i - 1) ||c_i - x*|| / (2 mu (1 - eta L (tau_max - 1)/2))
    # with L the largest and mu the d-weighted smallest client curvature (M_i/tau_i = eta A_i B_i,
    # ||B_i - I|| <= eta L (tau_i - 1)/2).
    A_, C_ = prob.A.numpy(), prob.c.numpy()
    L = max(np.linalg.eigvalsh(a).max() for a in A_)
    mu = sum(di * np.linalg.eigvalsh(a).min() for di, a in zip(d, A_, strict=True))
    bound = (L ** 2 * eta * (d * (tau - 1) * np.linalg.norm(C_ - xs, axis=1)).sum()
             / (2 * mu * (1 - eta * L * (tau.max() - 1) / 2)))
    assert np.linalg.norm(xhat - xs) <= bound
    assert np.linalg.norm(xbar - xs) > 2 * bound
    # and the FedACS deviation is first order in eta: halving eta halves it
    _, xhat2 = _fixed_points(prob, eta / 2, p_up, tau, d)
    ratio = np.linalg.norm(xhat - xs) / np.linalg.norm(xhat2 - xs)
    assert 1.7 < ratio < 2.3


def test_fedacs_sampling_probabilities_follow_inferred_eq_15(quad):
    p_up = np.linspace(0.3, 1.0, 8)
    tau = np.arange(1, 9)
    env = participation.build("full", 8, 4000, seed=0, uplink_p=p_up, local_steps=tau)
    res = fedlib.run("fedacs", quad, env, rounds=1, draws=5, uplink_p=p_up, progress=False)
    algo = res.algorithm
    q = algo.sampling_probs(env)
    expect = (1 / (p_up * tau)) / (1 / (p_up * tau)).sum()
    assert np.allclose(q, expect[None, :])
    sched = algo.prepare_schedule(env, seed=0, lr_local=0.01)
    assert (sched.active.sum(1) == 5).all()
    assert np.allclose(sched.active.mean(0) / 5, expect, atol=0.01)
    assert np.array_equal(sched.uplink_ok, env.uplink_ok)


def test_fedacs_refuses_a_rate_whose_prox_normaliser_leaves_no_probabilities(quad):
    """FedProx's ||a_i||_1 = sum_k (1 - eta mu)^k is positive only while eta mu < 1 bounds it: past
    that, eq. (15)'s scores change sign and numpy's multinomial failed with "pvals < 0"; the rate
    is refused naming the field and the product."""
    env = participation.build("full", 8, 10, seed=0, local_steps=np.arange(1, 9))
    with pytest.raises(ValueError, match=r"^lr_local: eta_l = 5 with prox_mu = 1 makes FedNova's normaliser "
                                         r".* eta_l \* prox_mu < 1 \(here 5\)"):
        fedlib.run("fedacs", quad, env, lr_local=5.0, draws=3, prox_mu=1.0, progress=False)
    fedlib.run("fedacs", quad, env, lr_local=0.5, draws=3, prox_mu=1.0, progress=False)   # 0.5: runs


def test_os_probabilities_water_filling():
    u = torch.tensor([5.0, 1.0, 1.0, 0.5, 0.0], dtype=torch.float64)
    p = os_probabilities(u, 2)
    assert np.isclose(float(p.sum()), 2) and float(p.max()) <= 1 and p[0] == 1 and p[4] == 0
    assert torch.allclose(p[1:4] / u[1:4], (p[1] / u[1]).expand(3))    # proportional below the cap
    assert torch.equal(os_probabilities(u, 9), torch.ones(5, dtype=torch.float64))


def test_os_sampling_counts_only_picked_uploads(quad):
    sched = participation.build("full", 8, 10, local_steps=2)
    res = fedlib.run("os_sampling", quad, sched, lr_local=0.05, budget=3, progress=False)
    assert res.history["downlink"].iloc[-1] == 80
    assert 0 < res.history["uplink"].iloc[-1] < 80
