"""Tests of fedlib.delays against the definitions of FedSUM eqs. 2-4 and the bounds of App. F."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fedlib import delays, participation

matrices = st.tuples(st.integers(1, 25), st.integers(1, 8)).flatmap(
    lambda s: arrays(np.int64, s, elements=st.integers(0, 2)))


def last_selection_by_definition(active):
    """Eq. 2 literally: a_{i,t} = max{j <= t : i in S_j}, -1 if empty."""
    t_, n = active.shape
    a = np.full((t_, n), -1)
    for t in range(t_):
        for i in range(n):
            js = [j for j in range(t + 1) if active[j, i] > 0]
            a[t, i] = max(js) if js else -1
    return a


def last_selection_by_recursion(active):
    """Eq. 3: a_{i,t} = t if i in S_t else a_{i,t-1}, with a_{i,-1} = -1."""
    prev = np.full(active.shape[1], -1)
    out = []
    for t, row in enumerate(active):
        prev = np.where(row > 0, t, prev)
        out.append(prev)
    return np.array(out)


@settings(max_examples=200, deadline=None)
@given(matrices)
def test_recursion_equals_definition(active):
    a = delays.last_selection(active)
    assert np.array_equal(a, last_selection_by_definition(active))
    assert np.array_equal(a, last_selection_by_recursion(active))


@settings(max_examples=200, deadline=None)
@given(matrices)
def test_metrics_follow_eq_4(active):
    m = delays.delay_metrics(active)
    a = last_selection_by_definition(active)
    tau = np.array([max(t - a[t, i] for i in range(active.shape[1])) for t in range(len(a))])
    assert np.array_equal(m.tau, tau)
    assert (m.tau >= 0).all()
    assert m.tau_max == tau.max() and math.isclose(m.tau_avg, tau.mean())
    assert m.tau_avg <= m.tau_max


def test_full_participation_has_zero_delay():
    m = delays.delay_metrics(np.ones((10, 4)))
    assert m.tau_max == 0 and m.tau_avg == 0


def test_never_participating_client_grows_linearly():
    act = np.ones((6, 3), dtype=int)
    act[:, 1] = 0
    m = delays.delay_metrics(act)
    assert list(m.tau) == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("n,s", [(100, 20), (10, 3), (12, 4), (7, 7)])
def test_deterministic_cyclic_exact_delay_and_bound(n, s):
    sched = participation.build("cyclic", n, 10 * n, per_round=s)
    m = delays.delay_metrics(sched.active)
    # every client returns after at most ceil(N/S) rounds -> steady-state delay ceil(N/S) - 1
    assert m.tau_max == math.ceil(n / s) - 1
    assert m.tau_max <= delays.bound_cyclic(n, s)


@pytest.mark.parametrize("n,s", [(100, 20), (30, 7)])
def test_reshuffled_cyclic_within_lemma_f3(n, s):
    for seed in range(5):
        sched = participation.build("reshuffled_cyclic", n, 400, seed=seed, per_round=s)
        m = delays.delay_metrics(sched.active)
        # the gap between two selections spans at most two epochs of ceil(N/S) rounds
        assert m.tau_max <= 2 * math.ceil(n / s) - 1
        assert m.tau_max <= delays.bound_reshuffled_cyclic(n, s)


def test_bound_formulas():
    assert math.isclose(delays.bound_uniform(100, 20, 2000), 20 * math.log(200000))
    assert math.isclose(delays.bound_bernoulli(100, 2000, 0.2), 20 * math.log(200000))
    assert math.isclose(delays.bound_bernoulli(1, 1, 0.5), 8 * math.log(2))
    assert delays.bound_cyclic(100, 20) == 10 and delays.bound_reshuffled_cyclic(100, 20) == 20
    with pytest.raises(ValueError, match="^delta"):
        delays.bound_bernoulli(10, 10, 0.0)


def test_monte_carlo_prefix_equals_direct_draws():
    mc = delays.monte_carlo("uniform", 20, [5, 50], seeds=[0, 1, 2], per_round=4)
    for T in (5, 50):    # prefixes of one long draw give what separate draws of length T give
        direct = [delays.delay_metrics(participation.build("uniform", 20, T, seed=k, per_round=4).active)
                  for k in range(3)]
        row = mc[mc["T"] == T]
        assert math.isclose(row["tau_max_mean"].item(), np.mean([m.tau_max for m in direct]))
        assert math.isclose(row["tau_avg_mean"].item(), np.mean([m.tau_avg for m in direct]))
    assert (mc["tau_avg_mean"] <= mc["tau_max_mean"]).all()


def test_monte_carlo_uniform_below_lemma_f1():
    mc = delays.monte_carlo("uniform", 100, [100, 1000], seeds=20, per_round=20)
    for _, row in mc.iterrows():
        assert row.tau_max_mean <= delays.bound_uniform(100, 20, int(row["T"]))


def test_bad_active():
    with pytest.raises(ValueError, match="^active"):
        delays.delay_metrics(np.ones(5))
