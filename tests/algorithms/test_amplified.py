"""Generalized FedAvg with amplified updates and the wait-for-all baselines (Wang & Ji 2022,
NeurIPS, arXiv:2205.13648, Alg. 1 and Secs. 5-6)."""

import numpy as np
import pytest
import torch

import fedlib
from fedlib import participation

from .hand import ENGINES, ETA_G, N, assert_by_hand, local, rounds

BY_HAND_NAMES = ("amplified_fedavg", "wait_minibatch", "wait_full")


def amplified_by_hand(P: int, gamma: float) -> np.ndarray:
    """FedAvg rounds; after every P rounds x <- x_prev + gamma (x - x_prev), x_prev <- x."""
    x, x_prev, xs = np.zeros(2), np.zeros(2), []
    for t, S in rounds():
        x = x + ETA_G * np.mean([local(i, x) - x for i in S], axis=0)
        if (t + 1) % P == 0:
            x = x_prev + gamma * (x - x_prev)
            x_prev = x.copy()
        xs.append(x.copy())
    return np.array(xs)


def wait_by_hand() -> np.ndarray:
    """The server waits until every client has been available: each round averages all N
    clients' updates (exact gradients here, so minibatch and full local gradients agree)."""
    x, xs = np.zeros(2), []
    for _ in rounds():
        x = x + ETA_G * np.mean([local(i, x) - x for i in range(N)], axis=0)
        xs.append(x.copy())
    return np.array(xs)


@pytest.mark.parametrize("engine", ENGINES)
def test_amplified_rounds_by_hand(engine):
    assert_by_hand("amplified_fedavg", amplified_by_hand(P=2, gamma=1.5), engine, P=2, gamma=1.5)
    assert_by_hand("amplified_fedavg", amplified_by_hand(P=1, gamma=1.0), engine)   # the defaults


@pytest.mark.parametrize("name", ["wait_minibatch", "wait_full"])
@pytest.mark.parametrize("engine", ENGINES)
def test_wait_rounds_by_hand(name, engine):
    assert_by_hand(name, wait_by_hand(), engine)


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


def test_wait_baselines_use_every_client_and_count_waiting(quad):
    sched = participation.build("uniform", 8, 4, seed=0, per_round=2, local_steps=2)
    res = fedlib.run("wait_full", quad, sched, lr_local=0.05, cycle=500, progress=False)
    assert list(res.history["waited_rounds"]) == [0, 500, 1000, 1500, 2000]
    assert res.history["uplink"].iloc[-1] == 8 * 4
    full = participation.build("full", 8, 4, local_steps=2)
    assert torch.allclose(res.params, fedlib.run("fedavg", quad, full, lr_local=0.05, progress=False).params)
