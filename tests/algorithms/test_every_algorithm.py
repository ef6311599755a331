"""What holds for every registered algorithm: a by-hand test of its rule (in its family's file),
the vectorized and the reference engine agree, it runs on least squares, it declares its
messages, and the registry's errors."""

import importlib

import numpy as np
import pandas as pd
import pytest
import torch

import fedlib
from fedlib import algorithms, participation, problems

from ..conftest import TINY_CNN_REDUCTION, assert_kernels_agree

ALL = sorted(algorithms.available())
FAMILIES = ["fedavg", "fedsum", "variance_reduced", "reweighting", "sampling", "amplified"]

MESSAGES = {"fedavg": (1, 1), "fedsum_b": (1, 1), "fedsum": (1, 2), "fedsum_cr": (1, 1),
            "scaffold": (2, 2), "mifa": (1, 1), "fedvarp": (1, 1), "focus": (1, 1), "sg_focus": (1, 1),
            "fedau": (1, 1), "fedawe": (1, 1), "fednova": (1, 1), "fedavg_known_p": (1, 1),
            "ca_fedavg": (1, 1), "amplified_fedavg": (1, 1), "fedacs": (1, 1)}


def test_every_algorithm_has_its_rule_written_out_by_hand():
    covered = set()
    for family in FAMILIES:
        covered |= set(importlib.import_module(f"{__package__}.test_{family}").BY_HAND_NAMES)
    assert covered == set(ALL), f"no by-hand test: {sorted(set(ALL) - covered)}"


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


def test_every_algorithm_declares_its_messages():
    assert set(MESSAGES) | {"os_sampling", "wait_minibatch", "wait_full"} == set(ALL)
    for name, (up, down) in MESSAGES.items():
        cls = algorithms.get(name)
        assert (cls.uplink, cls.downlink) == (up, down), name
        assert cls.__doc__ and "Messages" in cls.__doc__


@pytest.mark.parametrize("name", sorted(set(MESSAGES) - {"fedacs"}))   # FedACS draws its own clients
def test_message_counts_follow_the_declaration(name, quad):
    """Fig. 1(b) counts models sent: per round, uplink times the clients that upload."""
    sched = participation.build("uniform", quad.num_clients, 20, seed=1, per_round=3, local_steps=2)
    res = fedlib.run(name, quad, sched, lr_local=0.01, progress=False)
    up, down = MESSAGES[name]
    h = res.history
    assert h["uplink"].iloc[-1] == up * 3 * 20 and h["downlink"].iloc[-1] == down * 3 * 20
    assert (np.diff(h["uplink"]) == up * 3).all()


def test_registry_and_errors(quad):
    av = algorithms.available()
    assert {"fedavg", "fedsum_b", "fedsum", "fedsum_cr"} <= set(av)
    with pytest.raises(ValueError, match="^algorithm") as e:
        fedlib.run("fedfoo", quad, "full", rounds=2)
    assert "fedsum" in str(e.value)
    with pytest.raises(ValueError, match="^momentum"):
        fedlib.run("fedsum", quad, "full", rounds=2, momentum=0.9, progress=False)


def test_same_seed_same_history_bits():
    prob = problems.digits_cnn(num_clients=5, alpha=0.5, batch_size=8, seed=0)   # with dropout
    sched = participation.build("bernoulli", 5, 4, seed=2, p=0.6, local_steps=2)
    runs = [fedlib.run("fedsum", prob, sched, lr_local=0.05, progress=False, seed=7) for _ in range(2)]
    h0, h1 = (r.history.drop(columns=["seconds", "eval_seconds"]) for r in runs)
    pd.testing.assert_frame_equal(h0, h1, check_exact=True)
    assert torch.equal(runs[0].params, runs[1].params)
