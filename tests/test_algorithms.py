"""Algorithms: exact properties from the papers, hand-computed rounds, message counts."""

import numpy as np
import pandas as pd
import pytest
import torch

import fedlib
from fedlib import algorithms, participation, problems

from .conftest import rel

FEDSUM_FAMILY = ["fedsum_b", "fedsum", "fedsum_cr"]


# ---------------------------------------------------------------------- exactness (FedSUM Thm 4.1)
@pytest.mark.parametrize("name", FEDSUM_FAMILY)
def test_fedsum_family_reaches_true_optimum(name, quad, het_bernoulli):
    res = fedlib.run(name, quad, het_bernoulli, lr_local=0.05, progress=False, eval_every=500)
    assert rel(res.params, quad.optimum()) <= 1e-8
    assert res.history["rel_dist_to_opt"].iloc[-1] <= 1e-8


def test_fedavg_is_biased_under_the_same_conditions(quad, het_bernoulli):
    res = fedlib.run("fedavg", quad, het_bernoulli, lr_local=0.05, progress=False, eval_every=500)
    # the last model and the last three evaluated ones (every 500 rounds) are all far from x*
    assert rel(res.params, quad.optimum()) > 1e-2
    assert res.history["rel_dist_to_opt"].iloc[-3:].min() > 1e-2


def test_fedsum_b_full_participation_is_gradient_descent(quad):
    sched = participation.build("full", quad.num_clients, 30, local_steps=4)
    res = fedlib.run("fedsum_b", quad, sched, lr_local=0.02, lr_global=1.5, progress=False)
    x = quad.initial_params()
    for _ in range(30):
        x = x - 1.5 * 0.02 * 4 * quad.full_grad(x)
    assert torch.allclose(res.params, x, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------- two clients by hand
def _hand_problem():
    A = np.array([[[2.0, 0.5], [0.5, 1.0]], [[1.0, -0.3], [-0.3, 3.0]]])
    c = np.array([[1.0, -2.0], [-1.0, 0.5]])
    return problems.Quadratic(A, c), A, c


TRACE = np.array([[1, 1], [0, 1], [1, 0], [1, 1]])
K, ETA_L, ETA_G, N = 2, 0.1, 0.7, 2


def _local(A, c, i, x, lr, corr):
    for _ in range(K):
        x = x - lr * (A[i] @ (x - c[i]) + corr)
    return x


def _by_hand(name, A, c):
    x = np.zeros(2)
    h, y = np.zeros((N, 2)), np.zeros(2)
    a, z = np.full(N, -1), np.zeros((N, 2))
    xs = []
    for t, row in enumerate(TRACE):
        S = np.flatnonzero(row)
        if name == "fedavg":
            x = x + ETA_G * np.mean([_local(A, c, i, x, ETA_L, 0) - x for i in S], axis=0)
        else:
            delta = []
            for i in S:
                if name == "fedsum_b":
                    hn = A[i] @ (x - c[i])                       # K gradients at x, averaged
                else:
                    if name == "fedsum":
                        yi = y - h[i]
                    else:
                        yi = N / (ETA_G * ETA_L * K) * (z[i] - x) / (t - a[i]) - h[i]
                        a[i], z[i] = t, x
                    xk = _local(A, c, i, x, ETA_L / N, yi)
                    hn = N * (x - xk) / (ETA_L * K) - yi
                delta.append(hn - h[i])
                h[i] = hn
            y = y + np.sum(delta, axis=0)
            x = x - ETA_G * ETA_L * K / N * y
        xs.append(x.copy())
    return np.array(xs)


@pytest.mark.parametrize("name", ["fedavg", *FEDSUM_FAMILY])
@pytest.mark.parametrize("engine", ["vectorized", "reference"])
def test_two_client_rounds_by_hand(name, engine):
    prob, A, c = _hand_problem()
    expect = _by_hand(name, A, c)
    for T in range(1, len(TRACE) + 1):
        sched = participation.build("trace", N, T, trace=TRACE[:T], local_steps=K)
        res = fedlib.run(name, prob, sched, lr_local=ETA_L, lr_global=ETA_G, progress=False,
                         engine=engine)
        assert np.allclose(res.params.numpy(), expect[T - 1], rtol=1e-12, atol=1e-12), (name, T)


@pytest.mark.parametrize("name", ["fedavg", *FEDSUM_FAMILY])
def test_vectorized_equals_reference_engine(name, tiny_cnn):
    sched = participation.build("uniform", tiny_cnn.num_clients, 3, seed=0, per_round=3,
                                local_steps=2)
    kw = dict(lr_local=0.05, progress=False, eval_every=3)
    a = fedlib.run(name, tiny_cnn, sched, engine="vectorized", **kw)
    b = fedlib.run(name, tiny_cnn, sched, engine="reference", **kw)
    assert torch.allclose(a.params, b.params, atol=1e-5, rtol=0)


# ---------------------------------------------------------------------- communication (Fig. 1(b))
@pytest.mark.parametrize("name,up,down", [("fedavg", 1, 1), ("fedsum_b", 1, 1), ("fedsum", 1, 2),
                                          ("fedsum_cr", 1, 1)])
def test_message_counts(name, up, down, quad):
    sched = participation.build("uniform", quad.num_clients, 20, seed=1, per_round=3, local_steps=2)
    res = fedlib.run(name, quad, sched, lr_local=0.01, progress=False)
    h = res.history
    assert h["uplink"].iloc[-1] == up * 3 * 20 and h["downlink"].iloc[-1] == down * 3 * 20
    assert (np.diff(h["uplink"]) == up * 3).all()
    cls = algorithms.get(name)
    assert (cls.uplink, cls.downlink) == (up, down)


# ---------------------------------------------------------------------- determinism and options
def test_same_seed_same_history_bits():
    prob = problems.digits_cnn(num_clients=5, alpha=0.5, batch_size=8, seed=0)   # with dropout
    sched = participation.build("bernoulli", 5, 4, seed=2, p=0.6, local_steps=2)
    runs = [fedlib.run("fedsum", prob, sched, lr_local=0.05, progress=False, seed=7) for _ in range(2)]
    h0, h1 = (r.history.drop(columns=["seconds", "eval_seconds"]) for r in runs)
    pd.testing.assert_frame_equal(h0, h1, check_exact=True)
    assert torch.equal(runs[0].params, runs[1].params)


def test_lr_schedules():
    f = algorithms.lr_schedules["fedsum_sqrt"]
    assert f(0.01, 0) == 0.01 and np.isclose(f(0.01, 30), 0.005)
    assert algorithms.lr_schedules["constant"](0.3, 99) == 0.3


def test_fedavg_aggregation_conventions(quad):
    sched = participation.build("uniform", quad.num_clients, 1, seed=0, per_round=2, local_steps=3)
    S = sched.clients(0)
    base = dict(lr_local=0.1, progress=False)
    part = fedlib.run("fedavg", quad, sched, **base).params
    allN = fedlib.run("fedavg", quad, sched, aggregation="all", **base).params
    w = np.zeros(quad.num_clients)
    w[S] = 0.5
    wt = fedlib.run("fedavg", quad, sched, aggregation="weights", weights=w, **base).params
    x0 = quad.initial_params()
    assert torch.allclose(allN - x0, (part - x0) * 2 / quad.num_clients)
    assert torch.allclose(wt, part)
    with pytest.raises(ValueError, match="^aggregation"):
        fedlib.run("fedavg", quad, sched, aggregation="median", **base)


def test_registry_and_errors(quad):
    av = algorithms.available()
    assert {"fedavg", "fedsum_b", "fedsum", "fedsum_cr"} <= set(av)
    with pytest.raises(ValueError, match="^algorithm") as e:
        fedlib.run("fedfoo", quad, "full", rounds=2)
    assert "fedsum" in str(e.value)
    with pytest.raises(ValueError, match="^momentum"):
        fedlib.run("fedsum", quad, "full", rounds=2, momentum=0.9, progress=False)
