"""fedlib.studies.focus: FOCUS's App. F setup (notebooks 04 and 05)."""

import numpy as np
import pandas as pd
import pytest

from fedlib import studies


def test_focus_study_is_app_f_and_the_authors_run_script():
    s = studies.focus.focus_setup("paper")
    assert (s.dataset, s.model, s.num_clients, s.per_round, s.batch, s.rounds) == \
        ("cifar10", "focus_cifar10_cnn", 32, 4, 128, 10_000)
    assert (s.eta, s.local_steps, s.alpha) == (2e-3, 3, 0.05)
    p = s.bern_p()
    assert np.all((p[:28] >= 0.1) & (p[:28] <= 0.3)) and np.all((p[28:] >= 0.1) & (p[28:] <= 0.9))
    configs = s.configs()
    assert len(configs) == 2 * len(studies.focus.METHODS) == len({c.key() for c in configs})
    assert {v[0] for v in configs.values()} == {"bern", "uniform (4 of 32)"}
    assert all(c.lr_local == 2e-3 and c.local_steps == 3 for c in configs)
    three = s.configs([0, 1, 2])
    assert len(three) == 3 * len(configs) and {v[1] for v in three.values()} == {0, 1, 2}
    for c, (pattern, k, _) in three.items():                # a seed draws the split, model, p_i, schedule
        assert c.seed == k and dict(c.problem_args)["seed"] == k
        if pattern == "bern":
            own = studies.focus.focus_setup("paper", k).bern_p().tolist()
            assert list(dict(c.participation_args)["p"]) == own
    sens = s.sensitivity_configs([0, 1])
    assert sorted(sens.values()) == [(e, k) for k in (0, 1) for e in studies.focus.SENSITIVITY_ETAS]
    assert all(c.algorithm == "sg_focus" and c.participation == "bernoulli" and c.lr_local < s.eta
               for c in sens)
    for bad in ([], [-1], [0.5], [True]):
        with pytest.raises(ValueError, match="^seeds: must be a non-empty list"):
            s.configs(bad)
    stand = studies.focus.focus_setup("paper", stand_in_rounds=2)
    assert stand.rounds == 2 and dict(stand.base().problem_args)["synthetic"] is True
    assert studies.focus.focus_setup("quick", seed=1).bern_p().tolist() != s.bern_p().tolist()



def test_focus_toy_panels_are_fig4():
    prob, panels = studies.focus.toy_panels(rounds=5, local_steps=3)
    assert prob.num_clients == 16 and prob.dim == 50
    assert [lr for _, lr in panels.values()] == [6e-4, 1.5e-4, 1e-4]
    assert [int(s.active.sum(1).max()) for s, _ in panels.values()] == [16, 4, 4]



def test_focus_swing_is_the_late_std_of_accuracy():
    df = pd.DataFrame({"key": "a", "round": np.arange(0, 101, 10),
                       "test_acc": [0.0] * 8 + [0.5, 0.7, 0.9]})
    # the last fifth of 100 rounds: rounds 80, 90, 100
    assert studies.focus.late_swing(df, 100)["a"] == pytest.approx(np.std([0.5, 0.7, 0.9], ddof=1))
