"""Algorithms: exact properties from the papers, hand-computed rounds, message counts."""

import numpy as np
import pandas as pd
import pytest
import torch

import fedlib
from fedlib import algorithms, participation, problems

from .conftest import TINY_CNN_REDUCTION, assert_kernels_agree, rel

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
    x0 = tiny_cnn.initial_params(0)
    assert_kernels_agree(a.params - x0, b.params - x0, TINY_CNN_REDUCTION, name)


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


def test_fedavg_over_the_contacted_clients_counts_failed_uploads_as_zeros(quad):
    """FedACS's FedAvg: divide by the clients asked, so each lost upload shortens the step."""
    sched = participation.build("uniform", quad.num_clients, 30, seed=1, per_round=4, local_steps=2,
                                uplink_p=0.5)
    base = dict(lr_local=0.1, progress=False, rounds=1)
    partial = [t for t in range(30) if 0 < sched.uplink_ok[t][sched.active[t] > 0].sum() < 4]
    one = sched.window(partial[0], partial[0] + 1)
    arrived = int(one.uplink_ok[0][one.active[0] > 0].sum())
    x0 = quad.initial_params()
    part = fedlib.run("fedavg", quad, one, **base).params
    asked = fedlib.run("fedavg", quad, one, aggregation="contacted", **base).params
    assert torch.allclose(asked - x0, (part - x0) * arrived / 4)


def test_registry_and_errors(quad):
    av = algorithms.available()
    assert {"fedavg", "fedsum_b", "fedsum", "fedsum_cr"} <= set(av)
    with pytest.raises(ValueError, match="^algorithm") as e:
        fedlib.run("fedfoo", quad, "full", rounds=2)
    assert "fedsum" in str(e.value)
    with pytest.raises(ValueError, match="^momentum"):
        fedlib.run("fedsum", quad, "full", rounds=2, momentum=0.9, progress=False)


# ---------------------------------------------------------------------- FedSUM-CR rebuild options
def test_fedsum_cr_rebuilds_agree_for_a_constant_rate(quad):
    sched = participation.build("bernoulli", quad.num_clients, 60, seed=3, p=0.4, local_steps=3)
    a = fedlib.run("fedsum_cr", quad, sched, lr_local=0.05, progress=False)
    b = fedlib.run("fedsum_cr", quad, sched, lr_local=0.05, progress=False, rebuild="rate_sum")
    assert torch.allclose(a.params, b.params, rtol=1e-10, atol=1e-12)
    assert a.history["rel_dist_to_opt"].iloc[-1] < 1e-3                          # converges exactly


def test_fedsum_cr_rate_sum_is_the_rate_weighted_average_of_y(quad):
    """With eta_l(t) = eta_0 / sqrt(t/10 + 1), z_i - x^(t) = sum_s eta_g eta_l(s) K / N y^(s): the
    rate_sum rebuild recovers sum_s eta_l(s) y^(s) / sum_s eta_l(s); eq. 11 scales it by
    sum_s eta_l(s) / ((t - a_i) eta_l(t)) > 1."""
    from fedlib.algorithms.fedsum import FedSUMCR

    class Recorder(FedSUMCR):
        def init(self, x0, nominal_steps):
            super().init(x0, nominal_steps)
            self.ys, self.seen = [], []

        def round(self, x, r):
            out = super().round(x, r)
            self.ys.append(self.y.clone())
            return out

        def _corrected_h(self, x, S, y_i, r):
            self.seen.append((r.t, S.clone(), (y_i + self.h[S]).clone()))
            return super()._corrected_h(x, S, y_i, r)

    sched = participation.build("cyclic", quad.num_clients, 30, per_round=2, local_steps=2)  # away 3 rounds
    lr = algorithms.lr_schedules["fedsum_sqrt"]
    for mode in ("rate_sum", "eq11"):
        res = fedlib.run(Recorder, quad, sched, lr_local=0.1, lr_schedule="fedsum_sqrt", progress=False,
                         rebuild=mode)
        algo, checked = res.algorithm, 0
        for t, _, rebuilt in algo.seen:
            a = t - quad.num_clients // 2            # the last visit: N/S = 4 rounds earlier
            if a < 0:
                continue
            w = torch.tensor([lr(0.1, s) for s in range(a, t)], dtype=torch.float64)
            avg = sum(wi * algo.ys[s] for wi, s in zip(w, range(a, t), strict=True)) / w.sum()
            factor = 1.0 if mode == "rate_sum" else float(w.sum() / ((t - a) * lr(0.1, t)))
            for row in rebuilt:
                assert torch.allclose(row, factor * avg, rtol=1e-9, atol=1e-12)
            checked += 1
        assert checked > 10


def test_scaffold_counting_and_divisor_options(quad):
    sched = participation.build("uniform", quad.num_clients, 5, seed=0, per_round=3, local_steps=2)
    two = fedlib.run("scaffold", quad, sched, progress=False)
    one = fedlib.run("scaffold", quad, sched, progress=False, uplink_vectors=1)
    assert two.history["uplink"].iloc[-1] == 2 * one.history["uplink"].iloc[-1] == 2 * 3 * 5
    assert torch.equal(one.params, two.params)                                    # counting only
    ten = fedlib.run("scaffold", quad, sched, progress=False, c_divisor=10)
    assert not torch.equal(ten.params, two.params)
    with pytest.raises(ValueError, match="^uplink_vectors"):
        fedlib.run("scaffold", quad, sched, progress=False, uplink_vectors=3)
    with pytest.raises(ValueError, match="^rebuild"):
        fedlib.run("fedsum_cr", quad, sched, progress=False, rebuild="exact-ish")
