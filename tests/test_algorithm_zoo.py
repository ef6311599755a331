"""The baselines of the four papers: one property from each paper, hand-computed two-client
rounds, vectorized == reference engine, message counts."""

import numpy as np
import pytest
import torch

import fedlib
from fedlib import algorithms, participation, problems, theory
from fedlib.algorithms.reweighting import nova_normaliser
from fedlib.algorithms.sampling import os_probabilities

from .conftest import TINY_CNN_REDUCTION, assert_kernels_agree, rel
from .test_algorithms import ETA_G, ETA_L, TRACE, K, N, _hand_problem, _local

ALL = sorted(algorithms.available())


# ------------------------------------------------------------------ exact convergence
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


def test_focus_converges_linearly_under_weighted_participation():
    A, b, owner = problems.focus_toy_data(n=800, d=10, num_clients=8, seed=0)
    ls = problems.LeastSquares(A, b, owner)
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


# ------------------------------------------------------------------ FedACS vs FedAvg fixed points
def _fixed_points(prob, eta, p_up, tau, d):
    """Closed forms for exact gradients and plain local SGD: tau_i steps map x to
    x - M_i (x - c_i), M_i = I - (I - eta A_i)^tau_i. FedAvg with anonymous aggregation over
    all N contacted clients has E[x_{t+1}] = E[x_t] - (1/N) sum p_i M_i (E[x_t] - c_i): the mean
    iterate converges to x_bar = (sum p_i M_i)^-1 sum p_i M_i c_i. FedACS (q_i ~ d_i/(p_i tau_i))
    has E[update] = -c sum d_i M_i/tau_i (x - c_i): x_hat = (sum d_i M_i/tau_i)^-1 (...)."""
    A, c = prob.A.numpy(), prob.c.numpy()
    n, dim = c.shape
    Ms = [np.eye(dim) - np.linalg.matrix_power(np.eye(dim) - eta * A[i], tau[i]) for i in range(n)]
    xbar = np.linalg.solve(sum(p_up[i] * Ms[i] for i in range(n)),
                           sum(p_up[i] * Ms[i] @ c[i] for i in range(n)))
    xhat = np.linalg.solve(sum(d[i] * Ms[i] / tau[i] for i in range(n)),
                           sum(d[i] * Ms[i] @ c[i] / tau[i] for i in range(n)))
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
    A, c = prob.A.numpy(), prob.c.numpy()
    L = max(np.linalg.eigvalsh(a).max() for a in A)
    mu = sum(di * np.linalg.eigvalsh(a).min() for di, a in zip(d, A, strict=True))
    bound = (L ** 2 * eta * (d * (tau - 1) * np.linalg.norm(c - xs, axis=1)).sum()
             / (2 * mu * (1 - eta * L * (tau.max() - 1) / 2)))
    assert np.linalg.norm(xhat - xs) <= bound
    assert np.linalg.norm(xbar - xs) > 2 * bound
    # and the FedACS deviation is first order in eta: halving eta halves it
    _, xhat2 = _fixed_points(prob, eta / 2, p_up, tau, d)
    ratio = np.linalg.norm(xhat - xs) / np.linalg.norm(xhat2 - xs)
    assert 1.7 < ratio < 2.3


def test_fedvarp_fixed_point_is_the_plain_mean_over_all_clients():
    """At a fixed point FedVARP's table holds every client's update at x_bar and the correction
    has mean zero: the mean iterate sits at (sum M_i)^-1 sum M_i c_i (theory's W_i = 1/N), the
    point of c-a-FedAvg, not FedAvg's p-weighted one; with momentum too."""
    n_cl, T, eta = 4, 6000, 0.02
    prob = problems.random_quadratic(n_cl, 3, seed=7, spread=2.0)
    p_up, tau = np.array([0.9, 0.3, 0.6, 0.5]), np.array([1, 5, 2, 8])
    A, c = prob.A.numpy(), prob.c.numpy()
    env = participation.build("full", n_cl, T, seed=1, uplink_p=p_up, local_steps=tau)
    scale = np.linalg.norm(prob.optimum().numpy())
    for solver in ({}, {"momentum": 0.5}):
        acc = []
        fedlib.run("fedvarp", prob, env, lr_local=eta, progress=False, eval_every=T,
                   callback=lambda t, x, acc=acc: acc.append(x.numpy().copy()) if t >= T // 4 else None,
                   **solver)
        W = theory.aggregation_weights("fedvarp", env, p_up, eta, prob.weights.numpy(), **solver)
        xv = theory.fixed_point(A, c, W, env, eta, **solver)
        w_ca = theory.expected_weights("ca_fedavg", p_up, tau, eta, prob.weights.numpy())
        xca = theory.fixed_point_static(A, c, w_ca, tau, eta, **solver)
        xavg = theory.fixed_point_static(A, c, p_up / n_cl, tau, eta, **solver)
        assert np.allclose(xv, xca)
        assert np.linalg.norm(np.mean(acc, axis=0) - xv) / scale < 0.05
        assert np.linalg.norm(xavg - xv) / scale > 0.1                  # a different point than FedAvg's


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
    A, c = prob.A.numpy(), prob.c.numpy()
    x_tau = np.linalg.solve(sum(t * a for t, a in zip(tau, A, strict=True)),
                            sum(t * a @ ci for t, a, ci in zip(tau, A, c, strict=True)))
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


def test_fedau_interval_estimates_converge_to_inverse_p(quad):
    p = np.linspace(0.1, 0.9, 8)
    sched = participation.build("bernoulli", 8, 6000, seed=3, p=p, local_steps=1)
    res = fedlib.run("fedau", quad, sched, lr_local=0.01, cutoff=10_000, progress=False, eval_every=6000)
    est = res.algorithm.interval_estimates().numpy()
    assert np.allclose(est, 1 / p, rtol=0.1)


def test_amplified_fedavg_amplifies_the_accumulated_update(quad):
    sched = participation.build("uniform", 8, 6, seed=2, per_round=3, local_steps=2)
    kw = dict(lr_local=0.05, progress=False)
    x0 = quad.initial_params()
    plain3 = fedlib.run("fedavg", quad, sched, rounds=3, **kw).params
    amp3 = fedlib.run("amplified_fedavg", quad, sched, rounds=3, P=3, gamma=2.5, **kw).params
    assert torch.allclose(amp3, x0 + 2.5 * (plain3 - x0), rtol=1e-13, atol=1e-14)
    # next window: from x_3, plain FedAvg on rounds 3..5, then amplified again
    rest = participation.build("trace", 8, 3, trace=sched.active[3:], local_steps=2)
    shifted = fedlib.run("fedavg", quad, rest, x0=amp3, **kw).params
    amp6 = fedlib.run("amplified_fedavg", quad, sched, P=3, gamma=2.5, **kw).params
    # the rounds' minibatch keys differ by the shift, but quadratics here are exact
    assert torch.allclose(amp6, amp3 + 2.5 * (shifted - amp3), rtol=1e-12, atol=1e-13)
    one = fedlib.run("amplified_fedavg", quad, sched, P=1, gamma=1.0, **kw).params
    assert torch.equal(one, fedlib.run("fedavg", quad, sched, **kw).params)


@pytest.mark.parametrize("m", [1, 3])
def test_fedawe_echo_multiplies_by_absence_plus_one(m):
    prob, A, c = _hand_problem()
    trace = np.array([[1, 1]] + [[1, 0]] * m + [[0, 1]])
    sched = participation.build("trace", 2, len(trace), trace=trace, local_steps=K)
    res = fedlib.run("fedawe", prob, sched, lr_local=ETA_L, lr_global=ETA_G, progress=False)
    # round 0: both from x0 = 0 (tau = -1, multiplier 1)
    G0 = [np.zeros(2) - _local(A, c, i, np.zeros(2), ETA_L, 0) for i in range(2)]
    x1 = np.mean([-ETA_G * g for g in G0], axis=0)
    # client 1 kept x1 as its copy and was absent for m rounds: last round echoes (m + 1) G
    G1 = x1 - _local(A, c, 1, x1, ETA_L, 0)
    expect = x1 - ETA_G * (m + 1) * G1
    assert np.allclose(res.params.numpy(), expect, rtol=1e-12, atol=1e-13)


def test_os_probabilities_water_filling():
    u = torch.tensor([5.0, 1.0, 1.0, 0.5, 0.0], dtype=torch.float64)
    p = os_probabilities(u, 2)
    assert np.isclose(float(p.sum()), 2) and float(p.max()) <= 1 and p[0] == 1 and p[4] == 0
    assert torch.allclose(p[1:4] / u[1:4], (p[1] / u[1]).expand(3))    # proportional below the cap
    assert torch.equal(os_probabilities(u, 9), torch.ones(5, dtype=torch.float64))


def test_wait_baselines_use_every_client_and_count_waiting(quad):
    sched = participation.build("uniform", 8, 4, seed=0, per_round=2, local_steps=2)
    res = fedlib.run("wait_full", quad, sched, lr_local=0.05, cycle=500, progress=False)
    assert list(res.history["waited_rounds"]) == [0, 500, 1000, 1500, 2000]
    assert res.history["uplink"].iloc[-1] == 8 * 4
    full = participation.build("full", 8, 4, local_steps=2)
    assert torch.allclose(res.params, fedlib.run("fedavg", quad, full, lr_local=0.05, progress=False).params)


# ------------------------------------------------------------------ two clients by hand
def _zoo_by_hand(name, A, c):
    """Each rule written out for the 2-client TRACE of test_algorithms (exact gradients)."""
    x = np.zeros(2)
    n = N
    state = {"c": np.zeros(2), "ci": np.zeros((n, 2)), "U": np.zeros((n, 2)), "y": np.zeros((n, 2)),
             "ys": np.zeros(2), "gp": np.zeros((n, 2)), "since": np.zeros(n), "isum": np.zeros(n),
             "icnt": np.zeros(n)}
    xs = []
    for _t, row in enumerate(TRACE):
        S = np.flatnonzero(row)
        delta = {i: _local(A, c, i, x, ETA_L, 0) - x for i in S}
        if name == "scaffold":
            dys, dcs = [], []
            for i in S:
                yk = _local(A, c, i, x, ETA_L, state["c"] - state["ci"][i])
                cnew = state["ci"][i] - state["c"] + (x - yk) / (K * ETA_L)
                dys.append(yk - x)
                dcs.append(cnew - state["ci"][i])
                state["ci"][i] = cnew
            x = x + ETA_G * np.mean(dys, axis=0)
            state["c"] = state["c"] + np.sum(dcs, axis=0) / n
        elif name == "mifa":
            for i in S:
                state["U"][i] = delta[i] / ETA_L
            x = x + ETA_G * ETA_L * state["U"].mean(0)
        elif name == "fedvarp":
            v = state["y"].mean(0) + np.mean([delta[i] - state["y"][i] for i in S], axis=0)
            for i in S:
                state["y"][i] = delta[i]
            x = x + ETA_G * v
        elif name in ("focus", "sg_focus"):
            for i in S:
                xi, yi = x.copy(), np.zeros(2)
                for k in range(K):
                    if k > 0:
                        xi = xi - ETA_L * yi
                    g = A[i] @ (xi - c[i])
                    yi = yi + g - state["gp"][i]
                    state["gp"][i] = g
                state["ys"] = state["ys"] + yi
            x = x - ETA_G * ETA_L * state["ys"]
        elif name == "fedau":
            omega = np.where(state["icnt"] > 0, state["isum"] / np.maximum(state["icnt"], 1), 1.0)
            x = x + ETA_G * sum(omega[i] * delta[i] for i in S) / n
            for i in range(n):
                if i in S:
                    state["isum"][i] += state["since"][i] + 1
                    state["icnt"][i] += 1
                    state["since"][i] = 0
                else:
                    state["since"][i] += 1
        elif name in ("fednova", "ca_fedavg", "os_sampling", "amplified_fedavg"):
            x = x + ETA_G * np.mean([delta[i] for i in S], axis=0)   # equal weights, K_i = K, p = 1
        elif name == "fedavg_known_p":
            p = TRACE.mean(0)                                         # observed frequencies
            x = x + ETA_G * sum(delta[i] / p[i] for i in S) / n
        else:
            raise KeyError(name)
        xs.append(x.copy())
    return np.array(xs)


HAND = ["scaffold", "mifa", "fedvarp", "focus", "sg_focus", "fedau", "fednova", "ca_fedavg",
        "os_sampling", "amplified_fedavg", "fedavg_known_p"]


@pytest.mark.filterwarnings("ignore:p. participation kind 'trace' defines no probabilities")
@pytest.mark.parametrize("name", HAND)
def test_two_client_rounds_by_hand(name):
    prob, A, c = _hand_problem()
    sched = participation.build("trace", N, len(TRACE), trace=TRACE, local_steps=K)
    expect = _zoo_by_hand(name, A, c)
    traj = []
    fedlib.run(name, prob, sched, lr_local=ETA_L, lr_global=ETA_G, progress=False,
               callback=lambda t, x: traj.append(x.numpy().copy()))
    assert np.allclose(np.array(traj), expect, rtol=1e-12, atol=1e-12)


def test_fedacs_round_by_hand():
    """A client drawn m times trains once and makes ONE upload attempt (one link, FedACS Sec. 2:
    "the aggregation weight for each client corresponds to the frequency of its appearance"): it
    counts m times if that upload arrives and not at all if it fails (inferred; both cases occur)."""
    prob, A, c = _hand_problem()
    rounds = 12
    env = participation.build("full", N, rounds, seed=0, uplink_p=[1.0, 0.5], local_steps=[1, 3])
    traj = []
    res = fedlib.run("fedacs", prob, env, lr_local=ETA_L, lr_global=ETA_G, draws=3,
                     uplink_p=[1.0, 0.5], progress=False, callback=lambda t, x: traj.append(x.numpy()))
    sched = res.schedule
    twice = sched.active >= 2
    assert (twice & sched.uplink_ok).any() and (twice & ~sched.uplink_ok).any()
    x = np.zeros(2)
    for t in range(rounds):
        upd = np.zeros(2)
        for i in range(N):
            if sched.active[t, i] and sched.uplink_ok[t, i]:
                xi = x.copy()
                for _ in range(sched.local_steps[t, i]):
                    xi = xi - ETA_L * A[i] @ (xi - c[i])
                upd += sched.active[t, i] * (xi - x)
        x = x + ETA_G * upd / 3
        assert np.allclose(traj[t], x, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ every algorithm, every problem
@pytest.mark.parametrize("name", ALL)
def test_vectorized_equals_reference_on_the_neural_task(name, tiny_cnn):
    sched = participation.build("bernoulli", tiny_cnn.num_clients, 3, seed=1, p=0.6, local_steps=2,
                                uplink_p=0.8)
    kw = dict(lr_local=0.05, progress=False, eval_every=3)
    a = fedlib.run(name, tiny_cnn, sched, engine="vectorized", **kw)
    b = fedlib.run(name, tiny_cnn, sched, engine="reference", **kw)
    x0 = tiny_cnn.initial_params(0)
    assert_kernels_agree(a.params - x0, b.params - x0, TINY_CNN_REDUCTION, name)
    assert a.history["test_acc"].notna().all()


@pytest.mark.parametrize("name", ALL)
def test_runs_on_least_squares(name):
    A, b, owner = problems.focus_toy_data(n=160, d=5, num_clients=4, seed=1)
    ls = problems.LeastSquares(A, b, owner, normalized=True)
    res = fedlib.run(name, ls, {"kind": "bernoulli", "p": 0.7}, rounds=40, local_steps=2,
                     lr_local=0.05, progress=False)
    assert not res.diverged
    assert res.history["loss"].iloc[-1] < res.history["loss"].iloc[0]


MESSAGES = {"fedavg": (1, 1), "fedsum_b": (1, 1), "fedsum": (1, 2), "fedsum_cr": (1, 1),
            "scaffold": (2, 2), "mifa": (1, 1), "fedvarp": (1, 1), "focus": (1, 1), "sg_focus": (1, 1),
            "fedau": (1, 1), "fedawe": (1, 1), "fednova": (1, 1), "fedavg_known_p": (1, 1),
            "ca_fedavg": (1, 1), "amplified_fedavg": (1, 1), "fedacs": (1, 1)}


def test_every_algorithm_declares_its_messages():
    assert set(MESSAGES) | {"os_sampling", "wait_minibatch", "wait_full"} == set(ALL)
    for name, (up, down) in MESSAGES.items():
        cls = algorithms.get(name)
        assert (cls.uplink, cls.downlink) == (up, down), name
        assert cls.__doc__ and "Messages" in cls.__doc__


def test_os_sampling_counts_only_picked_uploads(quad):
    sched = participation.build("full", 8, 10, local_steps=2)
    res = fedlib.run("os_sampling", quad, sched, lr_local=0.05, budget=3, progress=False)
    assert res.history["downlink"].iloc[-1] == 80
    assert 0 < res.history["uplink"].iloc[-1] < 80


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
