"""fedlib.studies.real: the algorithms under a recorded availability trace (notebook 09)."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedlib import delays


def test_real_study_keeps_app_h_rules_under_the_trace(tmp_path):
    """Notebook 09: App. H's grid under the trace (FedAvg, a quarter of the run, the product of the
    paper's summed step, App. H.2's reported eta_g = 1 kept by pick_rates), every method at the shared rates,
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


def _frames(runs: dict, seeds=(0, 1, 2)):
    """Frames of synthetic runs: method -> seed -> (test accuracy curve, training loss curve) over
    rounds 0, 4, ..., 84 (None: a run that failed); final values over the last tenth."""
    from fedlib import claims
    from fedlib.studies.base import Frames
    rows, curves = [], {}
    for m, per in runs.items():
        for k in seeds:
            h = None
            if per[k] is not None:
                acc, loss = per[k]
                h = pd.DataFrame({"round": np.arange(0, 85, 4), "test_acc": acc, "loss": loss})
            curves[(k, m)] = h
            ok = h is not None
            rows.append({"seed": k, "method": m,
                         "final_acc": claims.late_mean(h, "test_acc") if ok else np.nan,
                         "final_loss": claims.late_mean(h, "loss") if ok else np.nan})
    return Frames(pd.DataFrame(rows).set_index(["seed", "method"]), curves, seeds, 4, 10,
                  methods=tuple(runs))


def test_real_late_window_holds_at_least_two_evaluations():
    """Issue 49 / claims.MARGINS: a late-window mean is never one evaluation. The 36-round phases
    (every 4 rounds) had a window of 10%, round 36 alone; the window is widened to the last 1.5
    evaluation intervals where 10% holds fewer than two evaluations, and kept at 10% elsewhere."""
    from fedlib import claims
    from fedlib.studies import real
    s = real.real_setup("quick", "traces/sessions_100.txt")
    assert s.late_window(84) == real.WINDOW                                # rounds 76, 80, 84
    evaluated = np.arange(0, 37, 4)
    assert (evaluated >= 36 - real.WINDOW * 36).sum() == 1                 # the defect: round 36 alone
    assert (evaluated >= 36 - s.late_window(36) * 36).tolist().count(True) == 2      # rounds 32 and 36
    for every in range(1, 11):                                             # any T, any interval
        for T in range(2 * every, 301, every):
            w = replace(s, eval_every=every).late_window(T)
            n = int((np.arange(0, T + 1, every) >= T - w * T).sum())
            assert n >= 2 and (w == real.WINDOW or n == 2)
    # the summary of a phase (36 rounds) and of a whole run (84) read their own windows
    rates = (0.1, 1.0)
    phase = s.phase(next(iter(real.AMPLIFIED)), 0.01, 0, rates)
    whole = s.configs(rates, [0])
    full = next(c for c, (_, label) in whole.items() if label == "FedAvg")
    frames = []
    for c, T in ((phase, 36), (full, 84)):
        r = np.arange(0, T + 1, 4)
        frames.append(pd.DataFrame({"key": c.key(), "status": "ok", "round": r, "test_acc": 0.5 + r / 1000,
                                    "loss": 1.0 - r / 1000, "uplink": 1.0, "downlink": 1.0}))
    labels = {phase: (0, next(iter(real.AMPLIFIED))), full: (0, "FedAvg")}
    _, summary, _ = s.tidy(pd.concat(frames, ignore_index=True), labels)
    assert summary.loc[(0, next(iter(real.AMPLIFIED))), "final_acc"] == pytest.approx(0.5 + 34 / 1000)
    assert summary.loc[(0, "FedAvg"), "final_acc"] == pytest.approx(0.5 + 80 / 1000)
    assert claims.late_mean(frames[0], "test_acc", s.late_window(36)) == pytest.approx(0.534)


def test_real_focus_comparison_with_a_run_in_its_early_phase_is_not_tested():
    """FOCUS's horizon rule: at FOCUS's eta (App. F's rate for 10,000 rounds) a run of 84 rounds
    whose late-window training loss is still above half its loss at round 0 has not left its early
    phase; its comparisons are "not tested", the reason naming the horizon and every such seed
    (a failed run of that method counts with them); at App. F's horizon the rule does not apply, and
    a rival that learned is compared as usual."""
    from fedlib import claims
    from fedlib.studies import get, real
    r = np.arange(0, 85, 4)
    learned = (0.1 + 0.8 * r / 84, 2.3 - 1.9 * r / 84)                      # loss 0.4 at the end
    early = (0.1 + 0.1 * r / 84, 2.3 - 0.2 * r / 84)                        # loss 2.1 of 2.3
    slower = (0.1 + 0.7 * r / 84, 2.3 - 1.7 * r / 84)                       # left its early phase
    f = _frames({"SG-FOCUS": dict.fromkeys(range(3), learned), "FedAU": dict.fromkeys(range(3), early),
                 "SCAFFOLD": {0: slower, 1: slower, 2: None}})
    marked = real.early_phase(f, tuple(real.FOCUS_RULE), 84, 10_000)
    assert list(marked) == ["FedAU"] and marked["FedAU"][0] == [0, 1, 2]
    why = marked["FedAU"][1]
    assert "10,000 rounds" in why and "T = 84 (0.84%" in why and "3 of 3 runs" in why
    assert "seed 0: 2.11 of 2.30, 0.195" in why                             # loss of the start, accuracy
    assert real.early_phase(f, tuple(real.FOCUS_RULE), 10_000, 10_000) == {}
    rows = get("focus").claims(real.without(f, marked))
    assert [row.check.verdict for row in rows] == [claims.NOT_TESTED] * 2
    for row in rows:
        assert "FedAU: not tested" in row.check.reason and "early phase" in row.check.reason
        assert "SCAFFOLD: holds" in row.check.reason                        # learned: compared on 2 seeds
    # a run set aside did not fail: its comparisons say "failed or set aside" (one word for the frames;
    # the why names the seeds set aside), never "failed" alone
    assert real.without(f, marked).missing == "failed or set aside" and f.missing == "failed"
    assert "FedAU has no value (failed or set aside) on 3 of 3 seeds" in rows[0].check.reason
    assert "seed 0 (FedAU failed or set aside)" in rows[0].check.reason
    assert "FedAU has no value (failed, set aside or never) on 3 of 3 seeds" in rows[1].check.reason
    assert "(FedAU failed)" not in rows[0].check.reason
    assert "the rival has no value on seed 2 (SCAFFOLD failed or set aside)" in rows[0].check.reason
    # a method with one early run and one failed run: both are no value, the failed one with them
    f2 = _frames({"SG-FOCUS": dict.fromkeys(range(3), learned), "FedAU": dict.fromkeys(range(3), slower),
                  "SCAFFOLD": {0: early, 1: slower, 2: None}})
    marked = real.early_phase(f2, tuple(real.FOCUS_RULE), 84, 10_000)
    assert list(marked) == ["SCAFFOLD"] and marked["SCAFFOLD"][0] == [0, 2]
    assert "1 of 3 runs" in marked["SCAFFOLD"][1]
    assert marked["SCAFFOLD"][1].endswith("its run failed (diverged or collapsed) on seed(s) 2")  # named
    assert "failed" not in why                                              # FedAU: every run early
    acc = get("focus").claims(real.without(f2, marked))[0].check
    assert acc.verdict == claims.NOT_TESTED and "FedAU: holds" in acc.reason
    # without() leaves the frames it is given alone
    assert real.without(f2, {}) is f2 and f2.curves[(0, "SCAFFOLD")] is not None


def test_real_fedacs_rows_name_every_rival_and_app_i2_calibration():
    """FedACS's Sec. 6 claims under the trace: App. I.2's calibration computed on each seed's
    schedule gives every method FedAvg's rate where every upload arrives and every client runs K
    steps (so the shared-rate runs are at App. I.2's rule); a method off its calibrated rate makes
    its comparisons "not tested"; every rival the paper names is in the row's per-rival list, those
    notebook 09 does not run "not tested: not run here", none left out."""
    from fedlib import claims
    from fedlib.studies import fedacs, real
    smoke = real.real_setup("smoke", real.trace_files("smoke")["sessions_100.txt"])
    cal = smoke.calibration((0.1, 1.0), [0, 1])
    assert cal["method"].tolist() == ["FedACS", "FedAvg", "FedVARP", "FedAU"] * 2
    assert np.allclose(cal["App. I.2 rate / shared"], 1.0, rtol=0, atol=real.CALIBRATION_TOL)
    assert real.off_calibration(cal) == {}
    off = cal.copy()
    off.loc[(off["seed"] == 1) & (off["method"] == "FedVARP"), "App. I.2 rate / shared"] = 1.5
    assert real.off_calibration(off) == {"FedVARP": ([1], "run at the shared rate, not FedACS App. I.2's "
                                                          "calibrated rate (seed 1: 1.5x the shared)")}
    r = np.arange(0, 85, 4)
    fast, slow = (np.minimum(0.1 + r / 40, 0.9), 2.3 - r / 40), (np.minimum(0.1 + r / 80, 0.85), 2.3 - r / 80)
    run = {"FedACS": fast, "FedAvg": slow, "FedVARP": slow, "FedAU": slow}
    f = _frames({m: dict.fromkeys(range(3), c) for m, c in run.items()})
    s = real.real_setup("quick", "traces/sessions_100.txt")
    cal3 = pd.DataFrame([{"seed": k, "method": m, "App. I.2 rate / shared": 1.0}
                         for k in range(3) for m in run])
    rows = s._fedacs_rows(f, cal3)
    assert len(rows) == 2
    for row, rivals in zip(rows, ((*fedacs.RIVALS, "FedAU"), fedacs.BENCHMARKS), strict=True):
        assert [x.split(":")[0] for x in row.check.reason.split("; against")[0].removeprefix("per rival: ")
                .split("; ")] == list(rivals)
        for m in rivals:
            expect = "holds" if m in run else "not tested"
            assert f"{m}: {expect}" in row.check.reason
            if m not in run:
                assert f"against {m}: not tested: not run here" in row.check.reason
        assert row.check.verdict == claims.NOT_TESTED                      # the rivals not run count
        assert "every method FedAvg's rate here" in row.setting
    # FedACS off its calibrated rate: every comparison is not tested, with the rates named
    cal3.loc[cal3["method"] == "FedACS", "App. I.2 rate / shared"] = 2.0
    rows = s._fedacs_rows(f, cal3)
    for row in rows:
        assert "FedAvg: not tested" in row.check.reason and "2x the shared" in row.check.reason
        assert "rates 1-2x the shared" in row.setting


def test_real_wang_ji_row_names_the_horizon_against_the_authors_and_why_the_horizon_rule_is_not_applied():
    """Review finding: Wang & Ji's row runs 3 cycles after the warm-up where the authors' code runs 596
    (298,000 rounds after its warm-up, cycle 500: amplified.AUTHORS_HORIZON, not retyped); its setting
    and cause say so, computed. FOCUS's horizon rule is not applied to it (its criterion: runs at a rate
    fixed for a far longer horizon, still in their early phase from an initial model; Wang & Ji's phases
    continue a warmed-up model at their own grid's rates): the cause says so, with the ratio the rule
    reads. The row's "in the paper" column says Fig. 1 prints curves only; the FedSUM rows' too."""
    from fedlib import claims
    from fedlib.studies import amplified, real
    from fedlib.studies.base import Frames
    s = real.real_setup("quick", "traces/sessions_100.txt")
    theirs = amplified.AUTHORS_HORIZON / amplified.amplified_setup("paper").cycle
    assert theirs == 596
    assert s.horizon_words == ("36 rounds after the warm-up (3 cycles of P = 12 rounds, 3 amplifications), "
                               f"{3 / theirs:.2%} of the authors' 596 cycles (their code: 298,000 rounds "
                               "after its warm-up, cycle 500)")
    r = np.arange(0, 85, 4)                                                  # _frames' evaluations
    amp, plain = real.AMPLIFIED
    phases = {real.TUNED[amp]: (0.80 + 0 * r, 0.50 + 0 * r), real.TUNED[plain]: (0.85 + 0 * r, 0.46 + 0 * r)}
    f = _frames({m: dict.fromkeys(range(3), c) for m, c in phases.items()})
    start = pd.DataFrame({"round": [0, 4], "loss": [2.3, 2.0], "test_acc": [0.1, 0.2]})
    curves = {(k, "FedAvg"): start for k in range(3)}
    words = s.horizon_rule_words(curves, f.summary, [0, 1, 2])
    assert words.startswith("FOCUS's horizon rule (late-window training loss above 0.5 x the initial "
                            "model's: not tested) is not applied: its criterion covers runs at a rate fixed "
                            "for a far longer horizon")
    assert words.endswith(f"over seeds [0, 1, 2]: {real.TUNED[amp]}: {0.5 / 2.3:.2f}-{0.5 / 2.3:.2f}; "
                          f"{real.TUNED[plain]}: {0.46 / 2.3:.2f}-{0.46 / 2.3:.2f}")
    own = Frames(f.summary, f.curves, (0, 1, 2), 4, 10, methods=tuple(real.AMPLIFIED),
                 key=lambda k, m: (k, real.TUNED[m]))
    row, = s._amplified_rows(own, curves, f.summary, [0, 1, 2])
    assert row.check.verdict == claims.NOT_HOLDS and row.cause.endswith(words)
    assert row.context[claims.IN_THE_PAPER] == "Fig. 1: curves only, no number printed"
    _, _, phases_cause, phase_setting = s._own_rule_words((0.127, 1.0), {})
    assert phase_setting.endswith(f"picks, {s.horizon_words}") and phases_cause.endswith(s.horizon_words)
    # the FedSUM rows' SCAFFOLD cause names the grid's own pick, passed through
    why = s.off_rule((0.127, 1.0), picked=(0.127, 1.0))["SCAFFOLD"]
    assert why.endswith("App. H.2's reported eta_g = 1 at the matched product; the grid's own pick "
                        "(eta_g = 1) gives the same eta_0")
