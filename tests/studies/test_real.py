"""fedlib.studies.real: the algorithms under a recorded availability trace (notebook 09)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedlib import delays


def test_real_study_keeps_app_h_rules_under_the_trace(tmp_path):
    """Notebook 09: App. H's grid under the trace (FedAvg, a quarter of the run, the product of the
    paper's summed step, eta_g capped at 1 by pick_rates), every method at the shared rates,
    amplification every day of rounds at eta_0 / gamma, and configs that name the real files by a
    data-folder path and their SHA-256 (the same store keys on every machine)."""
    from fedlib import traces
    from fedlib.studies import fedsum, real
    s = real.real_setup("quick", "traces/sessions_100.txt")
    assert (s.num_clients, s.local_steps, s.batch, s.rule) == (100, 5, 32, "whole")
    assert s.rounds * s.round_minutes == 7 * 24 * 60 and s.weeks == 1                  # one week of rounds
    assert s.amplify_every * s.round_minutes == 24 * 60                                # P = one day
    assert s.product == fedsum.matched_product(5, 84)
    step = fedsum.summed_step(s.product, 1.0, 5, 84)
    paper = fedsum.summed_step(0.01, 1.0, 10, 2000)
    assert abs(step - paper) / paper < 0.01                                          # App. H's summed step
    grid = s.grid_configs()
    assert sorted(eg for _, eg in grid.values()) == sorted(fedsum.PAPER_GRID_ETA_G)
    for c, (e0, eg) in grid.items():
        assert c.algorithm == "fedavg" and c.rounds == s.rounds // 4 and c.lr_local == e0
        assert abs(e0 * eg - s.product) < 1e-6 * s.product
    args = dict(next(iter(grid)).participation_args)
    assert args["path"] == "traces/sessions_100.txt"
    assert args["sha256"] == real.TRACE_SHA256["sessions_100.txt"]
    configs = s.configs((0.1, 1.0), [0, 1])
    assert len(configs) == 2 * (len(real.METHODS) + len(real.AMPLIFIED))
    assert s.warmup_rounds == 4 * 12                                  # Wang & Ji: a warm-up of 4 cycles
    for c, (seed, label) in configs.items():
        assert c.seed == dict(c.problem_args)["seed"] == seed and c.lr_global == 1.0
        if label in real.AMPLIFIED:                                    # a phase after the seed's warm-up
            assert c.algorithm == "amplified_fedavg" and c.warmup() == s.warmup((0.1, 1.0), seed)
            assert dict(c.algorithm_args) == {"P": 12, "gamma": real.AMPLIFIED[label]}
            assert c.lr_local == pytest.approx(0.1 / real.GAMMA) and c.rounds + s.warmup_rounds == s.rounds
            assert c.warmup().algorithm == "fedavg" and c.warmup().lr_local == 0.1
        else:
            algo, opts = real.METHODS[label]
            assert (c.algorithm, c.lr_local, dict(c.algorithm_args), c.rounds) == (algo, 0.1, opts, s.rounds)
    # the smoke profile's synthetic trace: schedules, delays beside the synthetic patterns
    files = real.trace_files("smoke")
    assert real.have(files) and all(traces.read_stunner(p) for p in files.values())
    smoke = real.real_setup("smoke", files["sessions_100.txt"])
    table = smoke.delay_table([0, 1])
    assert table["pattern"].str.startswith("real").sum() == 2 and len(table) == 2 + 7
    real_rows = table[table["pattern"].str.startswith("real")]
    for k, (_, row) in zip([0, 1], real_rows.iterrows(), strict=True):
        a = smoke.schedules([k])[k]
        m = delays.delay_metrics(a)
        assert row["tau_max"] == m.tau_max and row["tau_avg"] == round(m.tau_avg, 3)
        assert row["S (mean clients per round)"] == pytest.approx(a.sum(axis=1).mean(), abs=0.05)
    assert not real.have({"x": Path("traces/none.txt")})
    with pytest.raises(ValueError, match="^stand_in_rounds: must be an integer >= 0"):
        real.real_setup("quick", "traces/sessions_100.txt", stand_in_rounds=-1)



def test_real_closest_pattern_and_hourly_shares_are_computed_from_their_inputs(tmp_path):
    from fedlib import traces
    from fedlib.studies import real
    table = pd.DataFrame({"pattern": ["real: a, seed 0", "real: a, seed 1", "synthetic: U", "synthetic: M"],
                          "tau_max": [80.0, 84.0, 40.0, 83.0], "tau_avg": [40.0, 44.0, 20.0, 41.0],
                          "bound on tau_max": [3000.0, 3000.0, 200.0, np.nan]})
    c = real.closest_pattern(table)
    assert c["pattern"] == "M" and c["real tau_max"] == 82.0 and c["real tau_avg"] == 42.0
    # a record online 0-1 h every day, time zone +2: online at UTC hour 0, local hour 2
    h = 3600 * 1000
    f = tmp_path / "t.txt"
    f.write_text("u 1 1398902400000 2 " + " ".join([str(h), str(23 * h)] * 7) + "\n")
    share = real.hourly_share({"t.txt": f}).set_index(["clock", "hour"])["share online"]
    assert share[("UTC", 0)] == 1.0 and share.xs("UTC").drop(0).eq(0).all()
    assert share[("local time", 2)] == 1.0 and share.xs("local time").drop(2).eq(0).all()
    q = real.session_quantiles({"t.txt": f}, points=3)
    assert q[q["kind"] == "online session"]["minutes"].tolist() == [60.0, 60.0, 60.0]
    assert q[q["kind"] == "offline gap"]["minutes"].tolist() == [23 * 60.0] * 3
    week = real.sample_week(f, records=5)
    assert week.shape == (168, 1) and week.iloc[:, 0].tolist() == ([1] + [0] * 23) * 7
    assert traces.sessions(f)[0].tolist() == [60.0] * 7


def test_real_runs_focus_and_wang_ji_at_their_own_rates():
    """Issue 49: FOCUS App. F's one constant eta for SG-FOCUS and its rivals; Wang & Ji's phases at
    the rate each one's grid picks, searched on tuning seeds that are never evaluated, scored by the
    training loss over the phase's last day; the shared-rate phases keep their configs (store keys)."""
    from fedlib.config import ExperimentConfig
    from fedlib.studies import focus, real
    s = real.real_setup("quick", "traces/sessions_100.txt")
    rates = (0.1, 1.0)
    fc = s.focus_configs([0, 1])
    assert sorted(fc.values()) == sorted((k, label) for k in (0, 1) for label, _ in real.FOCUS_RULE.values())
    for c, (seed, _) in fc.items():
        assert (c.lr_local, c.lr_global, c.lr_schedule) == (focus.ETA, 1.0, "constant")
        assert c.seed == seed and (c.local_steps, dict(c.problem_args)["batch_size"]) == (5, 32)
    algos = {label: (c.algorithm, dict(c.algorithm_args)) for c, (_, label) in fc.items()}
    assert algos["SCAFFOLD at FOCUS's eta"] == ("scaffold", {})            # FOCUS's SCAFFOLD: two uplinks
    assert algos["SG-FOCUS at FOCUS's eta"][0] == "sg_focus" and algos["FedAU at FOCUS's eta"][0] == "fedau"
    # the shared-rate phase is the phase at eta_0 / eta
    shared = {label: c for c, (k, label) in s.configs(rates, [0]).items() if label in real.AMPLIFIED}
    for label, c in shared.items():
        assert s.phase(label, 0.1 / real.GAMMA, 0, rates) == c and c.lr_schedule == "fedsum_sqrt"
        assert s.phase(label, 0.1 / real.GAMMA, 0, rates, constant=True) == c.replace(lr_schedule="constant")
    with pytest.raises(ValueError, match="^label: must be one of"):
        s.phase("FedAvg", 0.1, 0, rates)
    assert s.amplified_rates(rates) == [0.1, 0.01, 0.001, 0.0001, 1e-05]
    # the score: the mean training loss over the last day (12 rounds) of a 36-round phase; NaN if not ok
    c = s.phase(next(iter(real.AMPLIFIED)), 0.01, 100, rates)
    rounds = np.arange(0, 37, 4)
    df = pd.DataFrame({"key": c.key(), "status": "ok", "round": rounds, "loss": rounds / 4.0})
    assert s.amplified_score(df, c) == np.mean([6.0, 7.0, 8.0, 9.0])
    assert np.isnan(s.amplified_score(df.assign(status="diverged"), c))
    assert np.isnan(s.amplified_score(df.iloc[:0], c))

    # the search: a loss with its minimum at 1e-3 on tuning seed 100 and 101 only
    asked = []

    def compute(configs: list[ExperimentConfig]) -> pd.DataFrame:
        asked.extend(configs)
        rows = []
        for cfg in configs:
            for r in rounds:
                loss = (np.log10(cfg.lr_local) + 3) ** 2 + dict(cfg.algorithm_args)["gamma"] / 100
                rows.append({"key": cfg.key(), "status": "ok", "round": r, "loss": loss})
        return pd.DataFrame(rows)
    searches = s.search_amplified(rates, compute)
    assert {k.seed for k in asked} == set(s.tuning_seeds) == {100, 101}
    assert {k.lr_schedule for k in asked} == {"constant"}                   # Wang & Ji's gamma: constant
    picks = real.grid_picks(searches)                                       # each search's best rate
    assert picks == {label: g.best for label, g in searches.items()} == dict.fromkeys(real.AMPLIFIED, 0.001)
    assert not any(g.on_edge for g in searches.values())
    table = s.grid_table(searches)
    assert len(table) == 2 * 5 and table["picked"].sum() == 2
    own = s.own_configs(rates, [0, 1, 2], picks)
    assert len(own) == 3 * (len(real.FOCUS_RULE) + len(real.AMPLIFIED))
    for cfg, (seed, label) in own.items():
        if label in real.TUNED.values():
            assert cfg.lr_local == 0.001 and cfg.warmup() == s.warmup(rates, seed)
            assert cfg.lr_schedule == "constant"
    with pytest.raises(ValueError, match="^picks: needs a rate for"):
        s.own_configs(rates, [0], {})
    stored = s.stored_configs(rates, [0, 1, 2], searches)
    assert set(own) <= set(stored) and set(s.configs(rates, [0, 1, 2])) <= set(stored)
    assert s.warmup(rates, 101) in stored and len(stored) == len(set(stored))


def test_real_cost_reads_each_run_once_and_sums_its_last_seconds():
    """The stored runs' cost (notebook 09): each run's measured seconds at its last round, summed
    over runs; the runs already read are taken from their frames, only the others are read again,
    and the sum is the one of reading them all at once."""
    from fedlib.studies import real
    s = real.real_setup("quick", "traces/sessions_100.txt")
    configs = [s.warmup((0.1, 1.0), k) for k in (0, 1, 2)]
    seconds = {c.key(): [10.0 * (i + 1), 3600.0 * (i + 1)] for i, c in enumerate(configs)}  # cumulative

    def frame(cs: list) -> pd.DataFrame:
        return pd.DataFrame([{"key": c.key(), "round": r, "seconds": t, "loss": 1.0}
                             for c in cs for r, t in enumerate(seconds[c.key()])])
    assert real.cost_hours(frame(configs)) == 1 + 2 + 3
    asked = []

    def compute(cs: list) -> pd.DataFrame:
        asked.extend(cs)
        return frame(cs)
    other = frame([s.warmup((0.1, 1.0), 0)]).assign(key="not one of them", seconds=7200.0)
    loaded = [frame(configs[:2]), frame(configs[1:2]), other]          # read before, one of them twice
    assert real.cost_hours_of(configs, loaded, compute) == real.cost_hours(frame(configs))
    assert asked == configs[2:]                                          # only the run not read before
    asked.clear()
    assert real.cost_hours_of(configs, [], compute) == 6 and asked == configs
    assert real.cost_hours_of([], loaded, compute) == 0.0


def test_real_late_window_is_read_from_the_runs_evaluations_and_matches_late_mean():
    """The late window notebook 09's claims read, in words, from the runs themselves: per run length
    the evaluations in the last WINDOW of its rounds (the ones claims.late_mean averages), Wang & Ji's
    phases also as rounds of the whole run (after the warm-up)."""
    import re

    from fedlib import claims
    from fedlib.studies import real
    s = real.real_setup("quick", "traces/sessions_100.txt")
    T, every, w = s.rounds, s.eval_every, s.warmup_rounds
    main = pd.DataFrame({"round": np.arange(0, T + 1, every),
                         "test_acc": np.linspace(0.1, 0.9, T // every + 1)})
    phase = pd.DataFrame({"round": np.arange(0, T - w + 1, every),
                          "test_acc": np.linspace(0.5, 0.9, (T - w) // every + 1)})
    words = s.late_window({(0, "FedAvg"): main, (0, "phase"): phase, (1, "failed"): None})
    got = dict(re.findall(r"(\d+)-round runs: \d+ evaluation\(s\), at round\(s\) ([\d, ]+)", words))
    for h in (main, phase):                                   # the evaluations late_mean averages
        rounds = [int(r) for r in got[str(int(h["round"].iloc[-1]))].split(", ")]
        assert np.mean(h.set_index("round").loc[rounds, "test_acc"]) == pytest.approx(
            claims.late_mean(h, window=real.WINDOW))
    assert got[str(T)] == "76, 80, 84"                        # rounds >= 84 - 8.4, every 4th
    assert words.startswith(f"late window: the last 10% of each run's rounds (every {every} rounds")
    phase_rounds = ", ".join(str(int(r) + w) for r in got[str(T - w)].split(", "))
    assert f"after the {w}-round warm-up: round(s) {phase_rounds} of the run" in words
