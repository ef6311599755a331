"""Checks of the new focus study API, to be pasted into tests/test_studies.py when the draft lands (not collected by pytest)."""

def _checks(s, studies, pytest):
    configs = s.configs()
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
