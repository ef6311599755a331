"""FedAvg (McMahan et al. 2017) and its aggregation conventions; FedAvg with known participation
probabilities. Copy this file to test an algorithm of your own: a by-hand rule on the two clients
of :mod:`.hand`, then the properties its paper states."""

import numpy as np
import pytest
import torch

import fedlib
from fedlib import participation

from ..conftest import rel
from .hand import ENGINES, ETA_G, TRACE, N, assert_by_hand, local, rounds

BY_HAND_NAMES = ("fedavg", "fedavg_known_p")


def fedavg_by_hand() -> np.ndarray:
    """x <- x + eta_g mean_{i in S_t} (x_i^(t,K) - x)."""
    x, xs = np.zeros(2), []
    for _, S in rounds():
        x = x + ETA_G * np.mean([local(i, x) - x for i in S], axis=0)
        xs.append(x)
    return np.array(xs)


def fedavg_known_p_by_hand() -> np.ndarray:
    """x <- x + eta_g (1/N) sum_{i in S_t} Delta_i / p_i, p_i the trace's observed frequencies."""
    p = TRACE.mean(0)
    x, xs = np.zeros(2), []
    for _, S in rounds():
        x = x + ETA_G * sum((local(i, x) - x) / p[i] for i in S) / N
        xs.append(x)
    return np.array(xs)


@pytest.mark.parametrize("engine", ENGINES)
def test_fedavg_rounds_by_hand(engine):
    assert_by_hand("fedavg", fedavg_by_hand(), engine)


@pytest.mark.filterwarnings("ignore:p. participation kind 'trace' defines no probabilities")
@pytest.mark.parametrize("engine", ENGINES)
def test_fedavg_known_p_rounds_by_hand(engine):
    assert_by_hand("fedavg_known_p", fedavg_known_p_by_hand(), engine)


def test_fedavg_is_biased_where_fedsum_is_exact(quad, het_bernoulli):
    res = fedlib.run("fedavg", quad, het_bernoulli, lr_local=0.05, progress=False, eval_every=500)
    # the last model and the last three evaluated ones (every 500 rounds) are all far from x*
    assert rel(res.params, quad.optimum()) > 1e-2
    assert res.history["rel_dist_to_opt"].iloc[-3:].min() > 1e-2


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
