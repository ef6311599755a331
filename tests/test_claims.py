"""fedlib.claims on constructed curves: each check can hold, fail, and end within noise."""

import math

import numpy as np
import pandas as pd
import pytest

from fedlib import analysis, claims
from fedlib.claims import HOLDS, NOISE, NOT_HOLDS


def curve(acc, loss=None, every=5):
    acc = np.asarray(acc, dtype=float)
    loss = np.linspace(2.3, 0.2, len(acc)) if loss is None else np.asarray(loss, dtype=float)
    return pd.DataFrame({"round": np.arange(len(acc)) * every, "test_acc": acc, "loss": loss})


def test_late_mean_averages_the_last_tenth_not_one_evaluation():
    h = curve([0.1] * 18 + [0.8, 0.9, 1.0])            # rounds 0..100; last 10%: rounds 90..100
    assert claims.late_mean(h, window=0.1) == pytest.approx(0.9)
    assert claims.late_mean(h, window=0.01) == pytest.approx(1.0)  # at least the last evaluation
    with pytest.raises(ValueError, match="window"):
        claims.late_mean(h, window=0)


def test_rounds_to_smooths_a_lucky_evaluation():
    h = curve([0.1, 0.5, 0.95, 0.5, 0.5, 0.95, 0.96, 0.97, 0.97])
    assert claims.rounds_to(h, 0.95, smooth=1) == 10
    assert claims.rounds_to(h, 0.95, smooth=3) == 35    # mean of rounds 25-35 is 0.96
    assert math.isnan(claims.rounds_to(h, 0.99))


def test_mean_drop_counts_falls_not_climbs():
    rising = curve([0.1, 0.5, 0.7, 0.8, 0.9])
    assert claims.mean_drop(rising) == 0.0
    recovering = curve([0.1, 0.9, 0.2, 0.9, 0.9])       # one fall of 0.7 over 4 intervals
    assert claims.mean_drop(recovering) == pytest.approx(0.7 / 4)
    # the climb back is not counted: a curve that only climbs from a low start scores 0
    assert claims.mean_drop(curve([0.2, 0.2, 0.9, 0.9])) == 0.0
    assert claims.mean_drop(recovering, start=15) == 0.0
    assert math.isnan(claims.mean_drop(curve([0.5])))


def test_collapse_finds_a_sustained_stall_and_whether_it_lasts():
    healthy = curve([0.1, 0.5, 0.8, 0.9, 0.9, 0.9, 0.9])
    assert claims.collapse(healthy, chance=0.1) == (pytest.approx(math.nan, nan_ok=True), False)
    recovered = curve([0.1, 0.6, 0.15, 0.12, 0.11, 0.14, 0.8, 0.9])
    start, stuck = claims.collapse(recovered, chance=0.1, sustain=4)
    assert (start, stuck) == (10.0, False)
    short = curve([0.1, 0.6, 0.15, 0.12, 0.8, 0.9])      # 2 evaluations: not sustained
    assert math.isnan(claims.collapse(short, chance=0.1, sustain=4)[0])
    dead = curve([0.1, 0.6, 0.8, 0.103, 0.103, 0.103, 0.103])
    assert claims.collapse(dead, chance=0.1, sustain=4) == (15.0, True)
    # a training loss above its start counts even with accuracy above chance
    rising_loss = curve([0.1, 0.4, 0.4, 0.4, 0.4, 0.4], loss=[2.3, 2.0, 2.5, 2.6, 2.7, 2.8])
    assert claims.collapse(rising_loss, chance=0.1, sustain=4) == (10.0, True)


def test_paired_verdicts():
    a, b = {0: 0.95, 1: 0.96, 2: 0.94}, {0: 0.93, 1: 0.93, 2: 0.92}
    assert claims.paired(a, b, tol=0.005).verdict == HOLDS
    assert claims.paired(b, a, tol=0.005).verdict == NOT_HOLDS
    assert claims.paired(a, b, tol=0.025).verdict == NOISE              # inside the tolerance
    mixed = {0: 0.95, 1: 0.90, 2: 0.94}
    assert claims.paired(mixed, b, tol=0.005).verdict == NOISE          # the seeds disagree
    assert claims.paired({0: 0.95}, {0: 0.90}).verdict == NOISE         # too few seeds
    assert "1 seed(s), 3 needed" in claims.paired({0: 0.95}, {0: 0.90}).numbers
    # lower is better (rounds, loss)
    assert claims.paired({0: 20, 1: 25, 2: 30}, {0: 40, 1: 45, 2: 50}, higher=False, tol=5).verdict == HOLDS
    # non-inferiority: a within one point of b holds with a margin of 0.01
    close = {0: 0.925, 1: 0.925, 2: 0.915}
    assert claims.paired(close, b, margin=0.01, tol=0.0).verdict == HOLDS
    assert claims.paired(close, b, margin=0.0, tol=0.0).verdict == NOT_HOLDS   # 0.5 point behind in each seed


def test_paired_counts_a_failed_run_as_the_worst_of_its_seed():
    nan = math.nan
    v = claims.paired({0: 0.9, 1: 0.9, 2: 0.9}, {0: nan, 1: nan, 2: nan})
    assert v.verdict == HOLDS and v.diffs == (math.inf,) * 3 and "failed" in v.numbers
    assert claims.paired({0: nan, 1: nan, 2: nan}, {0: 0.5, 1: 0.5, 2: 0.5}).verdict == NOT_HOLDS
    assert claims.paired({0: nan, 1: nan, 2: nan}, {0: nan, 1: nan, 2: nan}).verdict == NOISE


def test_against_all_fails_on_one_and_names_it():
    a = {0: 0.95, 1: 0.95, 2: 0.95}
    worse = {s: 0.9 for s in a}
    better = {s: 0.97 for s in a}
    assert claims.against_all(a, {"X": worse, "Y": worse}, tol=0.005).verdict == HOLDS
    v = claims.against_all(a, {"X": worse, "Y": better}, name="F", tol=0.005)
    assert v.verdict == NOT_HOLDS and "F vs Y" in v.numbers
    tied = {0: 0.95, 1: 0.96, 2: 0.94}
    assert claims.against_all(a, {"X": worse, "Z": tied}, tol=0.005).verdict == NOISE
    with pytest.raises(ValueError, match="others"):
        claims.against_all(a, {})


def test_paired_reach_compares_rounds_to_a_target_near_the_plateau_both_reach():
    # A climbs fast to 0.90; B climbs slower to 0.95: the target is 0.98 x 0.90 = 0.882
    fast = curve([0.1, 0.85, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9])
    slow = curve([0.1, 0.3, 0.5, 0.7, 0.85, 0.9, 0.93, 0.95, 0.95, 0.95, 0.95])
    a, b = {s: fast for s in range(3)}, {s: slow for s in range(3)}
    v = claims.paired_reach(a, b, tol=5, names=("A", "B"))
    assert v.verdict == HOLDS and "0.8820" in v.numbers
    assert claims.paired_reach(b, a, tol=5).verdict == NOT_HOLDS
    assert claims.paired_reach(a, a, tol=5).verdict == NOISE               # a tie in every seed
    # a failed run never gets there
    v = claims.paired_reach(a, {0: None, 1: None, 2: None})
    assert v.verdict == HOLDS and math.isinf(v.diffs[0]) and "vs never" in v.numbers
    assert claims.paired_reach({0: None, 1: None, 2: None}, b).verdict == NOT_HOLDS
    # model units instead of rounds
    ua = {s: h.assign(units=h["round"] * 30) for s, h in a.items()}   # round 20 -> 600 vs round 30 -> 1200
    ub = {s: h.assign(units=h["round"] * 40) for s, h in b.items()}
    assert claims.paired_reach(ua, ub, x="units", tol=200).verdict == HOLDS


def test_combine_needs_every_comparison_to_hold():
    win = claims.paired({0: 1, 1: 1, 2: 1}, {0: 0, 1: 0, 2: 0})
    loss = claims.paired({0: 0, 1: 0, 2: 0}, {0: 1, 1: 1, 2: 1})
    tie = claims.paired({0: 0, 1: 0, 2: 0}, {0: 0, 1: 0, 2: 0})
    assert claims.combine({"x": win, "y": win}).verdict == HOLDS
    assert claims.combine({"x": win, "y": loss, "z": tie}).verdict == NOT_HOLDS
    assert "also not clear: z" in claims.combine({"x": win, "y": loss, "z": tie}).numbers
    assert claims.combine({"x": win, "z": tie}).verdict == NOISE
    with pytest.raises(ValueError, match="verdicts"):
        claims.combine({})


def test_claims_table_requires_a_cause_for_every_verdict_but_holds():
    v = claims.paired({0: 1, 1: 1, 2: 1}, {0: 0, 1: 0, 2: 0})
    t = claims.claims_table([{"pattern": "P1", "claim": "c", "check": v}])
    assert list(t.columns) == ["pattern", "claim", "verdict", "numbers", "seeds", "cause"]
    assert t.loc[0, "verdict"] == HOLDS and t.loc[0, "seeds"] == 3
    bad = claims.paired({0: 0, 1: 0, 2: 0}, {0: 1, 1: 1, 2: 1})
    with pytest.raises(ValueError, match=r"rows\[0\].cause"):
        claims.claims_table([{"claim": "c", "check": bad}])
    with pytest.raises(ValueError, match=r"rows\[0\].verdict"):
        claims.claims_table([{"claim": "c", "verdict": "maybe", "numbers": "", "seeds": 3, "cause": "x"}])
    assert list(claims.claims_table([]).columns) == claims.CLAIM_COLUMNS


def test_summarize_reports_collapsed_and_diverged_runs_without_finals():
    def frame(key, acc, status="ok", diverged_at=None):
        h = curve(acc)
        return h.assign(key=key, status=status, diverged_at=diverged_at)
    good = [0.1, 0.5, 0.8, 0.9, 0.9, 0.92, 0.94, 0.94, 0.95, 0.95, 0.96]
    dead = [0.1, 0.5, 0.8, 0.103, 0.103, 0.103, 0.103, 0.103, 0.103, 0.103, 0.103]
    df = pd.concat([frame("a", good), frame("b", dead), frame("c", good[:4], "diverged", 20)])
    labels = {"a": ("A",), "b": ("B",), "c": ("C",)}
    s = claims.summarize(df, labels, ["method"], chance=0.1).set_index("method")
    assert s.loc["A", "outcome"] == "ok" and s.loc["A", "final_acc"] == pytest.approx(0.955)
    assert s.loc["B", "outcome"] == "collapsed at round 15" and math.isnan(s.loc["B", "final_acc"])
    assert s.loc["C", "outcome"] == "diverged at round 20" and math.isnan(s.loc["C", "final_acc"])
    assert s.loc["A", "drop"] == 0.0


def test_per_group_reports_runs_that_stopped_learning_and_never_averages_them():
    def frame(key, acc, status="ok", diverged_at=None):
        return curve(acc).assign(key=key, status=status, diverged_at=diverged_at)
    good = [0.1, 0.5, 0.8, 0.9, 0.9, 0.92, 0.94, 0.94, 0.95, 0.95, 0.96]
    better = [a + 0.02 for a in good]
    dip = [0.1, 0.5, 0.8, 0.103, 0.103, 0.103, 0.103, 0.9, 0.95, 0.95, 0.97]      # collapses, recovers
    dead = [0.1, 0.5, 0.8] + [0.103] * 8
    df = pd.concat([frame("a0", good), frame("a1", better), frame("a2", dead), frame("b0", dip),
                    frame("b1", good[:4], "diverged", 20)])
    labels = {"a0": ("A", 0), "a1": ("A", 1), "a2": ("A", 2), "b0": ("B", 0), "b1": ("B", 1)}
    s = claims.summarize(df, labels, ["method", "seed"], chance=0.1)
    t = claims.per_group(s, ["method"], {"acc": "final_acc"}, recovered=True).set_index("method")
    assert t.loc["A", "acc"] == analysis.mean_std([0.955, 0.975])          # the dead seed 2 is not averaged
    assert t.loc["A", "runs ok"] == "2 of 3" and t.loc["A", "not ok"] == "seed 2: collapsed at round 15"
    assert t.loc["B", "not ok"] == "seed 1: diverged at round 20"
    assert t.loc["B", "recovered collapse"] == "seed 0: from round 15"
    assert t.loc["A", "recovered collapse"] == "-"
    assert claims.outcome_counts(s) == {"ok": 3, "collapsed": 1, "diverged": 1}
    tidy = analysis.label(df, labels, ["method", "seed"])
    curves = claims.ok_curves(tidy, s, ["method", "seed"])
    assert curves[("A", 2)] is None and curves[("B", 1)] is None
    assert curves[("A", 1)]["test_acc"].tolist() == better


def test_scale_cause_says_what_a_verdict_at_each_profile_can_mean():
    quick = claims.scale_cause("quick", 0, 200, "MNIST, 200 rounds")
    assert quick == "not reproduced at this scale (MNIST, 200 rounds)"
    stand = claims.scale_cause("quick", 3, 3, "x")
    assert stand.startswith("random stand-in data, 3 rounds: a test of the code path")
    assert "a test of the code path" in claims.scale_cause("smoke", 0, 4, "x")
    assert claims.scale_cause("paper", 0, 2000, "x") == "not reproduced here"
