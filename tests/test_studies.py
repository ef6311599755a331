"""The FedSUM App. H setup shared by notebooks 02 and 03."""

import math

import numpy as np
import pandas as pd
import pytest

from fedlib import studies


def test_paper_profile_is_app_h():
    s = studies.fedsum_setup("paper")
    assert (s.num_clients, s.per_round, s.local_steps, s.batch_size, s.rounds) == (100, 20, 10, 128, 2000)
    assert s.datasets == ("mnist", "svhn", "cifar10") and s.alpha == 0.1
    # App. H: eta_0 in {0.01, 0.005, 0.001, 0.0005} with eta_0 * eta_g = 0.01, 500 rounds of FedAvg
    assert sorted(e0 for e0, _ in s.grid) == [0.0005, 0.001, 0.005, 0.01]
    assert all(math.isclose(e0 * eg, 0.01) for e0, eg in s.grid) and s.grid_rounds == 500
    c = s.base("cifar10", seed=3, participation="P2")
    assert c.lr_schedule == "fedsum_sqrt" and (c.lr_local, c.lr_global) == (0.01, 1.0)
    assert dict(c.problem_args)["model"] == "fedsum_cifar10_cnn" and c.seed == 3
    assert c.participation == "bernoulli" and dict(c.participation_args) == {"p": 0.2}


def test_patterns_have_the_papers_probabilities():
    s = studies.fedsum_setup("paper")
    rounds = 40
    p3 = s.base("mnist", participation="P3").replace(rounds=rounds).schedule(num_clients=100)
    t = np.arange(rounds)
    expected = 0.2 * (0.3 * np.sin(np.pi * t / 5) + 0.7)             # App. H, P3
    np.testing.assert_allclose(p3.probs, np.repeat(expected[:, None], 100, axis=1), rtol=1e-12)
    p1 = s.base("mnist", participation="P1").replace(rounds=rounds).schedule(num_clients=100)
    assert ((p1.active > 0).sum(axis=1) == 20).all()                  # 20 of 100 every round
    p2 = s.base("mnist", participation="P2").replace(rounds=rounds).schedule(num_clients=100)
    np.testing.assert_allclose(p2.probs, 0.2)


def test_grid_configs_differ_only_in_the_rates():
    s = studies.fedsum_setup("quick")
    grid = s.grid_configs("mnist")
    assert len(grid) == len(s.grid) == len({c.key() for c in grid})
    for c, (e0, eg) in grid.items():
        assert (c.lr_local, c.lr_global, c.rounds, c.algorithm) == (e0, eg, s.grid_rounds, "fedavg")
        assert c.participation == "uniform"
        assert c.replace(lr_local=0.01, lr_global=1.0, rounds=s.rounds) == s.base("mnist")


def test_stand_in_keeps_the_structure_and_cuts_the_rounds():
    s = studies.fedsum_setup("paper", stand_in_rounds=2)
    assert (s.num_clients, s.per_round, s.local_steps, s.batch_size) == (100, 20, 10, 128)
    assert s.rounds == s.grid_rounds == 2 and len(s.grid) == 1
    args = dict(s.base("svhn").problem_args)
    assert args["synthetic"] is True and args["model"] == "fedsum_svhn_cnn"
    assert "stand-in" in s.dataset_name("svhn")


def _frame(rows):
    return pd.DataFrame(rows, columns=["key", "round", "loss", "test_acc", "status"])


def test_pick_rates_takes_the_lowest_final_training_loss_and_skips_diverged_runs():
    s = studies.fedsum_setup("quick")
    grid = s.grid_configs("mnist")
    keys = [c.key() for c in grid]
    losses = [0.5, 0.2, 0.3, 0.9, 0.25, 0.4, 0.6, 0.7]
    rows = []
    for k, loss in zip(keys, losses, strict=True):
        rows += [(k, 0, 2.3, 0.1, "ok"), (k, 40, loss, 0.9, "ok")]
    rows[3] = (keys[1], 40, float("nan"), 0.1, "diverged")          # the lowest one diverged
    table, e0, eg = studies.pick_rates(_frame(rows), grid)
    assert (e0, eg) == grid[list(grid)[4]]                          # next lowest: 0.25
    assert table["chosen"].sum() == 1 and bool(table.loc[4, "chosen"])
    assert table.loc[1, "status"] == "diverged"


def test_pick_rates_refuses_a_grid_with_nothing_usable():
    s = studies.fedsum_setup("smoke")
    grid = s.grid_configs("digits")
    rows = [(c.key(), 4, float("nan"), 0.1, "diverged") for c in grid]
    with pytest.raises(RuntimeError, match="every run of the learning-rate grid"):
        studies.pick_rates(_frame(rows), grid)


@pytest.mark.parametrize("kwargs, match", [
    ({"profile": "fast"}, "profile"),
    ({"profile": "quick", "stand_in_rounds": -1}, "stand_in_rounds"),
    ({"profile": "quick", "stand_in_rounds": 1.5}, "stand_in_rounds"),
])
def test_bad_setup_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        studies.fedsum_setup(**kwargs)


def test_unknown_dataset_and_pattern_are_named():
    s = studies.fedsum_setup("quick")
    with pytest.raises(ValueError, match="dataset"):
        s.base("svhn")
    with pytest.raises(ValueError, match="participation"):
        s.base("mnist", participation="P4")
