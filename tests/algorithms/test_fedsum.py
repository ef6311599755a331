"""The FedSUM family (You & Pu 2025, arXiv:2512.18275): FedSUM-B, FedSUM, FedSUM-CR (Algs. 1-3)."""

import numpy as np
import pytest
import torch

import fedlib
from fedlib import algorithms, participation

from ..conftest import rel
from .hand import ENGINES, ETA_G, ETA_L, A, C, K, N, assert_by_hand, local, rounds

FAMILY = ["fedsum_b", "fedsum", "fedsum_cr"]
BY_HAND_NAMES = tuple(FAMILY)


def _family_by_hand(name: str) -> np.ndarray:
    """Algs. 1-3 with exact gradients: client i sends h_i^new; the server's y accumulates the
    changes h_i^new - h_i and x <- x - eta_g eta_l K / N y."""
    x, y = np.zeros(2), np.zeros(2)
    h, a, z = np.zeros((N, 2)), np.full(N, -1), np.zeros((N, 2))
    xs = []
    for t, S in rounds():
        delta = []
        for i in S:
            if name == "fedsum_b":
                hn = A[i] @ (x - C[i])                                 # K gradients at x, averaged
            else:
                if name == "fedsum":
                    yi = y - h[i]                                      # Alg. 2 line 6 (eq. 9)
                else:                                                  # Alg. 3 line 6 (eq. 11)
                    yi = N / (ETA_G * ETA_L * K) * (z[i] - x) / (t - a[i]) - h[i]
                    a[i], z[i] = t, x
                xk = local(i, x, ETA_L / N, yi)
                hn = N * (x - xk) / (ETA_L * K) - yi
            delta.append(hn - h[i])
            h[i] = hn
        y = y + np.sum(delta, axis=0)
        x = x - ETA_G * ETA_L * K / N * y
        xs.append(x.copy())
    return np.array(xs)


@pytest.mark.parametrize("name", FAMILY)
@pytest.mark.parametrize("engine", ENGINES)
def test_rounds_by_hand(name, engine):
    assert_by_hand(name, _family_by_hand(name), engine)


@pytest.mark.parametrize("name", FAMILY)
def test_fedsum_family_reaches_the_true_optimum(name, quad, het_bernoulli):
    """Thm 4.1: exact convergence under arbitrary participation (FedAvg is biased here:
    tests/algorithms/test_fedavg.py)."""
    res = fedlib.run(name, quad, het_bernoulli, lr_local=0.05, progress=False, eval_every=500)
    assert rel(res.params, quad.optimum()) <= 1e-8
    assert res.history["rel_dist_to_opt"].iloc[-1] <= 1e-8


def test_fedsum_b_full_participation_is_gradient_descent(quad):
    sched = participation.build("full", quad.num_clients, 30, local_steps=4)
    res = fedlib.run("fedsum_b", quad, sched, lr_local=0.02, lr_global=1.5, progress=False)
    x = quad.initial_params()
    for _ in range(30):
        x = x - 1.5 * 0.02 * 4 * quad.full_grad(x)
    assert torch.allclose(res.params, x, rtol=1e-12, atol=1e-14)


def test_fedsum_cr_rebuilds_agree_for_a_constant_rate(quad):
    sched = participation.build("bernoulli", quad.num_clients, 60, seed=3, p=0.4, local_steps=3)
    a = fedlib.run("fedsum_cr", quad, sched, lr_local=0.05, progress=False)
    b = fedlib.run("fedsum_cr", quad, sched, lr_local=0.05, progress=False, rebuild="rate_sum")
    assert torch.allclose(a.params, b.params, rtol=1e-10, atol=1e-12)
    assert a.history["rel_dist_to_opt"].iloc[-1] < 1e-3                          # converges exactly
    with pytest.raises(ValueError, match="^rebuild"):
        fedlib.run("fedsum_cr", quad, sched, progress=False, rebuild="exact-ish")


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


def test_lr_schedules():
    f = algorithms.lr_schedules["fedsum_sqrt"]
    assert f(0.01, 0) == 0.01 and np.isclose(f(0.01, 30), 0.005)
    assert algorithms.lr_schedules["constant"](0.3, 99) == 0.3
