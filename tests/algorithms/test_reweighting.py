"""Methods that reweight the arriving updates: FedAU (Wang & Ji 2023, arXiv:2306.03401), FedAWE
(Xiang et al. 2024), FedNova (Wang et al. 2020, arXiv:2007.07481) and c-a-FedAvg (the FedACS
baseline)."""

import numpy as np
import pytest
import torch

import fedlib
from fedlib import participation, problems
from fedlib.algorithms.reweighting import nova_normaliser

from ..conftest import rel
from .hand import ENGINES, ETA_G, ETA_L, K, N, assert_by_hand, hand_problem, local, rounds
from .test_fedavg import fedavg_by_hand

BY_HAND_NAMES = ("fedau", "fedawe", "fednova", "ca_fedavg")


def fedau_by_hand() -> np.ndarray:
    """x <- x + eta_g (1/N) sum_{i in S} omega_i Delta_i, omega_i the mean of client i's past
    participation intervals (1 before its first completed interval)."""
    x, xs = np.zeros(2), []
    since, isum, icnt = np.zeros(N), np.zeros(N), np.zeros(N)
    for _, S in rounds():
        omega = np.where(icnt > 0, isum / np.maximum(icnt, 1), 1.0)
        x = x + ETA_G * sum(omega[i] * (local(i, x) - x) for i in S) / N
        for i in range(N):
            if i in S:
                isum[i] += since[i] + 1
                icnt[i] += 1
                since[i] = 0
            else:
                since[i] += 1
        xs.append(x.copy())
    return np.array(xs)


def fedawe_by_hand() -> np.ndarray:
    """Client i starts from its copy x_i, G_i = x_i - x_i^(t,K), echoes
    x_i - eta_g (t - tau_i) G_i; the server averages the echoes; x_i <- x, tau_i <- t."""
    x, xi, tau, xs = np.zeros(2), np.zeros((N, 2)), np.full(N, -1), []
    for t, S in rounds():
        echoes = [xi[i] - ETA_G * (t - tau[i]) * (xi[i] - local(i, xi[i])) for i in S]
        x = np.mean(echoes, axis=0)
        for i in S:
            xi[i], tau[i] = x, t
        xs.append(x.copy())
    return np.array(xs)


#: FedNova with K_i = K for all and c-a-FedAvg with every upload arriving (p_i = 1) are FedAvg:
#: x <- x + eta_g mean_{i in S} Delta_i
BY_HAND = {"fedau": fedau_by_hand, "fedawe": fedawe_by_hand, "fednova": fedavg_by_hand,
           "ca_fedavg": fedavg_by_hand}


@pytest.mark.parametrize("name", BY_HAND_NAMES)
@pytest.mark.parametrize("engine", ENGINES)
def test_rounds_by_hand(name, engine):
    assert_by_hand(name, BY_HAND[name](), engine)


def test_fedau_interval_estimates_converge_to_inverse_p(quad):
    p = np.linspace(0.1, 0.9, 8)
    sched = participation.build("bernoulli", 8, 6000, seed=3, p=p, local_steps=1)
    res = fedlib.run("fedau", quad, sched, lr_local=0.01, cutoff=10_000, progress=False, eval_every=6000)
    est = res.algorithm.interval_estimates().numpy()
    assert np.allclose(est, 1 / p, rtol=0.1)


@pytest.mark.parametrize("m", [1, 3])
def test_fedawe_echo_multiplies_by_absence_plus_one(m):
    trace = np.array([[1, 1]] + [[1, 0]] * m + [[0, 1]])
    sched = participation.build("trace", 2, len(trace), trace=trace, local_steps=K)
    res = fedlib.run("fedawe", hand_problem(), sched, lr_local=ETA_L, lr_global=ETA_G, progress=False)
    # round 0: both from x0 = 0 (tau = -1, multiplier 1)
    G0 = [np.zeros(2) - local(i, np.zeros(2)) for i in range(2)]
    x1 = np.mean([-ETA_G * g for g in G0], axis=0)
    # client 1 kept x1 as its copy and was absent for m rounds: last round echoes (m + 1) G
    G1 = x1 - local(1, x1)
    expect = x1 - ETA_G * (m + 1) * G1
    assert np.allclose(res.params.numpy(), expect, rtol=1e-12, atol=1e-13)


def test_fedawe_clip_before_eta_g_and_authors_evaluation(quad):
    sched = participation.build("bernoulli", quad.num_clients, 30, seed=4, p=0.3, local_steps=3)
    kw = dict(lr_local=0.05, progress=False)
    plain = fedlib.run("fedawe", quad, sched, **kw)
    # clip acts on the averaged echo before eta_g: with a huge clip nothing changes, with eta_g = 2
    # and a tight clip every update has norm exactly 2 * clip
    assert torch.equal(fedlib.run("fedawe", quad, sched, clip=1e9, **kw).params, plain.params)
    steps = [quad.initial_params()]                                 # full participation: every
    full = participation.build("full", quad.num_clients, 10, local_steps=3)   # copy is x^(t)
    fedlib.run("fedawe", quad, full, clip=1e-3, lr_global=2.0, **kw,
               callback=lambda t, x: steps.append(x.clone()))
    moves = [float(torch.linalg.vector_norm(b - a)) for a, b in zip(steps[:-1], steps[1:], strict=True)]
    assert np.allclose(moves, 2e-3, rtol=1e-9)
    # the authors evaluate the mean of all clients' copies
    res = fedlib.run("fedawe", quad, sched, evaluate="mean_of_copies", **kw)
    assert res.history["loss"].iloc[-1] == pytest.approx(quad.loss(res.algorithm.xi.mean(0)), rel=1e-12)
    assert res.history["loss"].iloc[-1] != pytest.approx(quad.loss(res.params), rel=1e-9)
    assert torch.equal(res.params, plain.params)                      # training is unchanged
    with pytest.raises(ValueError, match="^evaluate"):
        fedlib.run("fedawe", quad, sched, evaluate="best", **kw)


def test_fednova_consistent_where_fedavg_is_not():
    prob = problems.random_quadratic(4, 3, seed=2, spread=2.0)
    tau = np.array([1, 2, 4, 8])
    sched = participation.build("full", 4, 3000, local_steps=tau)
    xs = prob.optimum()
    err = {}
    for eta in (0.01, 0.005):
        for name in ("fednova", "fedavg"):
            res = fedlib.run(name, prob, sched, lr_local=eta, progress=False, eval_every=3000)
            err[name, eta] = rel(res.params, xs)
    # FedNova: deviation O(eta) -> halves with eta; FedAvg: tends to the tau-weighted optimum
    assert 1.7 < err["fednova", 0.01] / err["fednova", 0.005] < 2.3
    A_, C_ = prob.A.numpy(), prob.c.numpy()
    x_tau = np.linalg.solve(sum(t * a for t, a in zip(tau, A_, strict=True)),
                            sum(t * a @ ci for t, a, ci in zip(tau, A_, C_, strict=True)))
    assert err["fedavg", 0.005] > 10 * err["fednova", 0.005]
    assert err["fedavg", 0.005] > 0.5 * np.linalg.norm(x_tau - xs.numpy()) / float(xs.norm())


def test_nova_normalisers():
    s = torch.tensor([1, 3])
    assert torch.equal(nova_normaliser(s, 0.1), s.double())
    rho = 0.5   # counters 1, 1.5, 1.75 -> sums 1 and 4.25
    f64 = dict(dtype=torch.float64)
    assert torch.allclose(nova_normaliser(s, 0.1, momentum=rho), torch.tensor([1.0, 4.25], **f64))
    q = 1 - 0.1 * 2.0  # prox: 1, 1 + q, 1 + q + q^2
    assert torch.allclose(nova_normaliser(s, 0.1, prox_mu=2.0), torch.tensor([1.0, 1 + q + q * q], **f64))
