"""fedlib.campaign: runs in order inside a budget, never one that cannot finish, resumed without
recomputing (notebook 02's smoke profile, a clock that advances with the store)."""

import pytest

from fedlib import campaign
from fedlib.store import Store


def _clock(path, per_run=30.0):
    """A clock for the test: every stored run has taken ``per_run`` seconds, nothing else takes time."""
    return lambda: per_run * (len(Store(path).keys()) if path.exists() else 0)


def test_a_campaign_stops_inside_its_budget_and_resumes_without_recomputing(tmp_path):
    path = tmp_path / "paper"
    kw = dict(profile="smoke", store=path, seeds=[0], patterns=["P1"], clock=_clock(path),
              echo=lambda s: None)
    none = campaign.run_campaign("02_fedsum_main", budget_min=0, **kw)
    n_grid, n_main = 2, 9                         # the grid; every method under P1
    assert none.computed == [] and none.stopped == "budget" and len(none.left) == n_grid + n_main
    # 2 minutes: the first grid run (probe: no time) takes 30 s, so the second is estimated at
    # 1.15 x 30 s and fits; a main run (4 rounds at 15 s a round, x 1.15 = 69 s) would end past 120 s
    first = campaign.run_campaign("02_fedsum_main", budget_min=2, **kw)
    assert len(first.computed) == 2 and first.stopped == "budget" and first.seconds <= 120
    assert len(first.left) == n_main and first.left_minutes == pytest.approx(n_main * 69 / 60)
    st = Store(path)
    stamps = {k: (path / k / "history.csv").stat().st_mtime_ns for k in st.keys()}
    assert all("digests" in st.read(k).meta for k in st.keys())               # sealed: committable
    rest = campaign.run_campaign("02_fedsum_main", budget_min=10, **kw)
    assert rest.loaded == 2 and len(rest.computed) == n_main and rest.left == [] and rest.stopped == "done"
    assert {k: (path / k / "history.csv").stat().st_mtime_ns for k in stamps} == stamps   # not recomputed
    again = campaign.run_campaign("02_fedsum_main", budget_min=10, **kw)
    assert again.computed == [] and again.loaded == n_grid + n_main


def test_campaign_arguments_are_checked(tmp_path, capsys):
    from fedlib.__main__ import main
    with pytest.raises(ValueError, match="notebook: no campaign for '05_focus_cifar'"):
        campaign.run_campaign("05_focus_cifar", store=tmp_path)
    with pytest.raises(ValueError, match="budget_min: must be a number >= 0"):
        campaign.run_campaign("02_fedsum_main", profile="smoke", budget_min=-1, store=tmp_path)
    assert main(["campaign", "02_fedsum_main", "--profile", "smoke", "--budget-min", "0",
                 "--store", str(tmp_path / "s"), "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert "0 run(s) computed" in out and "29 left" in out and "not measured yet" in out


def test_a_whole_runs_pace_replaces_a_probes(tmp_path):
    """A probe's few rounds pay warm-ups a whole run amortises: once a whole run of the setting
    is measured, its pace decides the estimates, even where the probe's was slower."""
    from fedlib import ExperimentConfig
    c = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=500)
    pace = campaign._Pace(Store(tmp_path))
    pace.note(c.replace(rounds=10), 2.58, probe=True)                 # 0.258 s a round
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 0.258 * 500)
    pace.note(c, 47.0)                                                # 0.094 s a round
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 47.0)
    pace.note(c.replace(rounds=10), 5.0, probe=True)                  # a later, slower probe
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 47.0)
