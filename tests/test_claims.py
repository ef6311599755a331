"""fedlib.claims on constructed data: the verdict rule gives each of its five verdicts where it must."""

import math

import numpy as np
import pandas as pd
import pytest

from fedlib import claims
from fedlib.claims import EQUIVALENT, HOLDS, INCONCLUSIVE, NOT_HOLDS, NOT_TESTED


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


def test_the_interval_is_the_t_interval_of_the_paired_differences():
    d = [0.02, 0.03, 0.01]
    mean, lo, hi = claims.interval(d)
    half = 4.302652729911275 * np.std(d, ddof=1) / math.sqrt(3)          # t_{0.975, 2}
    assert mean == pytest.approx(0.02)
    assert (lo, hi) == (pytest.approx(0.02 - half), pytest.approx(0.02 + half))
    assert all(math.isnan(x) for x in claims.interval([0.5])[1:])
    assert lo < 0 and claims.seeds_needed(d) == 4                        # three do not decide; four would
    assert claims.seeds_needed([0.01, 0.03, -0.005]) > 3                 # the spread needs more seeds
    assert claims.seeds_needed([0.01, -0.01]) is None                    # the mean sits on the threshold


def test_seeds_to_decide_leaves_out_non_finite_differences_and_says_never_as_inf():
    d = {("A", "acc"): [0.02, 0.03, 0.01], ("A", "rounds"): [0.01, -0.01],
         ("B", "acc"): [0.02, math.nan, 0.03, 0.01, math.inf], ("B", "rounds"): [5.0, math.nan],
         ("C", "acc"): [0.5, 0.6]}
    need = claims.seeds_to_decide(d)
    assert list(need.index) == list(d) and need.index.nlevels == 2 and need.dtype == float
    assert need[("A", "acc")] == claims.seeds_needed([0.02, 0.03, 0.01]) == 4
    assert need[("B", "acc")] == need[("A", "acc")]                   # a failed or missed seed is left out
    assert need[("A", "rounds")] == math.inf                          # the mean sits on the threshold: never
    assert need[("B", "rounds")] == math.inf                          # one finite difference: no spread
    assert need[("C", "acc")] == claims.seeds_needed([0.5, 0.6]) < math.inf
    assert claims.seeds_to_decide({"x": [0.5, 0.6]}, threshold=0.55)["x"] == math.inf
    with pytest.raises(ValueError, match=r"^diffs\['x'\]: must be numbers"):
        claims.seeds_to_decide({"x": ["a", 1.0]})


def test_fewer_seeds_counts_strictly_fewer_with_never_as_infinitely_many():
    comps = ["rounds", "steps", "acc", "loss", "drop"]
    base = [10, None, 3, math.nan, math.inf]
    for other, better in (([9, 50, 3, 7, None], [True, True, False, True, False]),    # a tie is not fewer
                          ([11, math.nan, 4, None, 2], [False, False, False, False, True])):
        needs = pd.Series(base + other, index=pd.MultiIndex.from_product([["M", "F"], comps]), dtype=object)
        for at_least in range(len(comps) + 1):
            got = claims.fewer_seeds(needs, "M", "F", at_least)
            assert got.better.tolist() == better and got.better.name == "F decides better"
            assert got.enough is (sum(better) >= at_least)            # k of n
        assert got.words.startswith(f"F needs fewer seeds than M in {sum(better)} of 5 comparisons")
    assert claims.fewer_seeds(needs, "F", "F", 1).words == "F needs fewer seeds than F in 0 of 5 comparisons"
    back = claims.fewer_seeds(needs, "F", "M", 3)                     # two nevers tie: steps, loss
    assert back.words == "M needs fewer seeds than F in 2 of 5 comparisons (rounds, acc)" and not back.enough
    swapped = pd.concat([needs.loc[["M"]], needs.loc[["F"]].iloc[::-1]])   # the other's order is kept
    assert list(claims.fewer_seeds(swapped, "M", "F", 1).better.index) == comps[::-1]
    with pytest.raises(ValueError, match=r"^other: no dataset 'G' in needs; its datasets: \['F', 'M'\]"):
        claims.fewer_seeds(needs, "M", "G", 1)
    with pytest.raises(ValueError, match=r"^needs: the comparisons of 'M' and 'F' differ"):
        claims.fewer_seeds(needs.iloc[:-1], "M", "F", 1)
    with pytest.raises(ValueError, match=r"^at_least: must be an integer.*>= 0, got -1"):
        claims.fewer_seeds(needs, "M", "F", -1)


def test_each_verdict_comes_out_on_constructed_data():
    b = {0: 0.93, 1: 0.93, 2: 0.92, 3: 0.925, 4: 0.93}
    ahead = {s: v + x for (s, v), x in zip(b.items(), (0.02, 0.03, 0.02, 0.025, 0.02), strict=True)}
    v = claims.paired(ahead, b, margin=0.005)
    assert v.verdict == HOLDS and v.reason == "" and v.ci_low > 0 and v.seeds == 5
    assert v.effect == pytest.approx(0.023)
    v = claims.paired(b, ahead, margin=0.005)                          # the data favour the opposite
    assert v.verdict == NOT_HOLDS and v.ci_high < 0 and "5 of 5 seeds against the claim" in v.reason
    same = {s: x + d for (s, x), d in zip(b.items(), (0.001, -0.001, 0.0005, 0.0, -0.0005), strict=True)}
    v = claims.paired(same, b, margin=0.005)                           # no difference that matters
    assert v.verdict == EQUIVALENT and -0.005 <= v.ci_low and v.ci_high <= 0.005
    assert "no difference beyond the margin" in v.reason
    mixed = {s: x + d for (s, x), d in zip(b.items(), (0.03, -0.02, 0.01, -0.01, 0.02), strict=True)}
    v = claims.paired(mixed, b, margin=0.005)
    assert v.verdict == INCONCLUSIVE and "the seeds disagree (3 for the claim, 2 against)" in v.reason
    few = {0: 0.95, 1: 0.94}
    v = claims.paired(few, {0: 0.93, 1: 0.90}, margin=0.005)           # one way, interval too wide
    assert v.verdict == INCONCLUSIVE and "every seed goes one way" in v.reason
    assert "seeds would decide" in v.reason
    v = claims.paired({0: 0.95}, {0: 0.90})
    assert v.verdict == INCONCLUSIVE and "no interval" in v.reason and math.isnan(v.ci_low)
    # more seeds make a verdict more certain, never harder to reach: the same effect with more seeds
    spread = [0.02, -0.005, 0.03, 0.01, 0.015, 0.025, 0.005, 0.02]
    three = claims.paired({s: d for s, d in enumerate(spread[:3])}, dict.fromkeys(range(3), 0.0))
    eight = claims.paired({s: d for s, d in enumerate(spread)}, dict.fromkeys(range(8), 0.0))
    assert three.verdict == INCONCLUSIVE and eight.verdict == HOLDS
    # lower is better (rounds, loss)
    rounds = claims.paired({0: 20, 1: 25, 2: 30}, {0: 40, 1: 45, 2: 55}, higher=False, margin=5)
    assert rounds.verdict == HOLDS


def test_a_no_worse_claim_uses_the_margin_as_its_threshold():
    b = {0: 0.93, 1: 0.93, 2: 0.92}
    close = {0: 0.927, 1: 0.926, 2: 0.918}                              # about 0.3 points behind
    v = claims.paired(close, b, margin=0.01, kind="no worse")
    assert v.verdict == HOLDS and v.threshold == -0.01 and v.ci_low > -0.01
    far = {0: 0.90, 1: 0.905, 2: 0.895}
    assert claims.paired(far, b, margin=0.01, kind="no worse").verdict == NOT_HOLDS
    assert claims.paired(close, b, margin=0.0, kind="better").verdict in (NOT_HOLDS, INCONCLUSIVE)
    with pytest.raises(ValueError, match="^kind"):
        claims.paired(close, b, kind="similar")
    with pytest.raises(ValueError, match="^margin"):
        claims.paired(close, b, margin=-1)


def test_a_failed_run_is_named_and_left_out_never_a_silent_win():
    nan = math.nan
    ours = {0: 0.9, 1: 0.91, 2: 0.9}
    v = claims.paired(ours, {0: nan, 1: nan, 2: nan}, names=("F", "SCAFFOLD"))
    assert v.verdict == INCONCLUSIVE and v.seeds == 0                   # no paired comparison at all
    assert "the rival has no value on seed 0 (SCAFFOLD failed), seed 1" in v.reason
    v = claims.paired(ours, {0: 0.85, 1: nan, 2: 0.86}, names=("F", "S"))
    assert v.verdict == INCONCLUSIVE and v.seeds == 2                    # two seeds: t = 12.7, too wide
    assert v.reason.startswith("every seed goes one way (for the claim)")
    assert "the rival has no value on seed 1 (S failed) (left out)" in v.reason
    # the claimed method failing where the rival ran caps the verdict: it cannot hold
    lead = {0: 0.95, 1: 0.96, 2: 0.95, 3: nan}
    v = claims.paired(lead, {0: 0.90, 1: 0.90, 2: 0.91, 3: 0.90}, names=("F", "R"))
    assert v.verdict == INCONCLUSIVE and "the claimed method has no value on seed 3 (F failed)" in v.reason


def test_event_counts_with_a_clopper_pearson_interval():
    v = claims.event_count({s: True for s in range(3)}, "never reaches the target")
    assert v.verdict == INCONCLUSIVE and v.effect == 1.0 and v.direction == "for"
    assert v.ci_low == pytest.approx(0.025 ** (1 / 3))
    assert v.reason.startswith("cannot be confirmed below 6 seeds")        # 0.025^(1/6) = 0.54 > 1/2
    assert claims.event_count({s: True for s in range(6)}).verdict == HOLDS
    v = claims.event_count({s: False for s in range(6)}, "unstable")
    assert v.verdict == NOT_HOLDS and "unstable in 0 of 6 seeds" in v.reason
    v = claims.event_count({0: True, 1: False, 2: None})
    assert v.verdict == INCONCLUSIVE and v.seeds == 2 and "left out: seed 2" in v.reason


def test_against_all_is_decided_by_its_weakest_comparison():
    a = {0: 0.95, 1: 0.952, 2: 0.949}
    worse = {0: 0.90, 1: 0.905, 2: 0.90}
    better = {0: 0.97, 1: 0.975, 2: 0.972}
    assert claims.against_all(a, {"X": worse, "Y": worse}, margin=0.005).verdict == HOLDS
    v = claims.against_all(a, {"X": worse, "Y": better}, name="F", margin=0.005)
    assert v.verdict == NOT_HOLDS and "F vs Y" in v.numbers
    assert v.reason.startswith("per rival: X: holds; Y: does not hold; against Y: 3 of 3 seeds")
    tied = {0: 0.951, 1: 0.951, 2: 0.95}
    v = claims.against_all(a, {"X": worse, "Z": tied}, margin=0.005)
    assert v.verdict == EQUIVALENT and "against Z: no difference beyond the margin" in v.reason
    # a rival that failed (at its own paper's rate) on all but one seed has no interval: it is never
    # left out of "every", its comparison is inconclusive and the claim cannot hold
    nan = math.nan
    v = claims.against_all(a, {"X": worse, "S": {0: nan, 1: nan, 2: 0.5}}, margin=0.005, name="F")
    assert v.verdict == INCONCLUSIVE and v.reason.startswith("per rival: X: holds; S: inconclusive (")
    assert "against S: 1 seed(s) with both runs: no interval" in v.reason
    assert "the rival has no value on seed 0 (S failed), seed 1 (S failed)" in v.reason
    with pytest.raises(ValueError, match="others"):
        claims.against_all(a, {})


def test_combine_any_is_decided_by_its_strongest_comparison():
    """"Some rival beats the reference" (Wang & Ji's "P=1 does not give the best performance"): holds
    if one comparison holds, does not hold only if every one does not, equivalent where the best
    rival is within the margin, and a comparison not made or inconclusive keeps it open."""
    ref = {0: 0.90, 1: 0.902, 2: 0.899}
    worse = {0: 0.85, 1: 0.853, 2: 0.851}
    better = {0: 0.95, 1: 0.954, 2: 0.951}
    much = {0: 0.99, 1: 0.993, 2: 0.991}
    tied = {0: 0.901, 1: 0.901, 2: 0.90}

    def vs(**rivals):
        return claims.combine_any({n: claims.paired(r, ref, margin=0.005, names=(n, "ref"))
                                   for n, r in rivals.items()})
    v = vs(X=worse, Y=better, Z=much)
    assert v.verdict == HOLDS and v.reason.startswith("some rival: X: does not hold; Y: holds; Z: holds")
    assert "Z vs ref" in v.numbers and v.effect == pytest.approx(np.mean([0.09, 0.091, 0.092]))   # most slack
    v = vs(X=worse, Y=worse)
    assert v.verdict == NOT_HOLDS and v.reason.startswith("some rival: X: does not hold; Y: does not hold")
    assert vs(X=worse, T=tied).verdict == vs(T=tied).verdict == EQUIVALENT    # P=1 ties the best: no gain
    nan = math.nan
    open_ = claims.paired({0: 0.95, 1: nan, 2: nan}, ref, margin=0.005, names=("S", "ref"))
    assert open_.verdict == INCONCLUSIVE
    v = claims.combine_any({"X": claims.paired(worse, ref, margin=0.005), "S": open_})
    assert v.verdict == INCONCLUSIVE and v.direction == open_.direction and v.reason.startswith(
        "some rival: X: does not hold; S: inconclusive")
    v = claims.combine_any({"S": open_, "N": claims.not_run("no run of N")})
    assert v.verdict == NOT_TESTED and math.isnan(v.effect)
    assert "against N: not tested: not run here" in v.reason
    for bad in ({}, {"X": "holds"}, [open_]):
        with pytest.raises(ValueError, match="^verdicts: "):
            claims.combine_any(bad)


def test_paired_reach_compares_rounds_to_a_target_near_the_plateau_both_reach():
    # A climbs fast to 0.90; B climbs slower to 0.95: the target is 0.98 x 0.90 = 0.882
    fast = curve([0.1, 0.85, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9])
    slow = curve([0.1, 0.3, 0.5, 0.7, 0.85, 0.9, 0.93, 0.95, 0.95, 0.95, 0.95])
    a, b = {s: fast for s in range(3)}, {s: slow for s in range(3)}
    v = claims.paired_reach(a, b, margin=5, names=("A", "B"))
    assert v.verdict == HOLDS and "0.8820" in v.numbers and v.effect == 10        # rounds 20 vs 30
    assert claims.paired_reach(b, a, margin=5).verdict == NOT_HOLDS
    assert claims.paired_reach(a, a, margin=5).verdict == EQUIVALENT           # a tie in every seed
    # a loss (lower is better): the target is the higher plateau / level, reached from above
    la = {s: h.assign(loss=1 - h["test_acc"]) for s, h in a.items()}      # plateaus 0.10 and 0.05
    lb = {s: h.assign(loss=1 - h["test_acc"]) for s, h in b.items()}
    v = claims.paired_reach(la, lb, metric="loss", higher_metric=False, margin=5)
    assert v.verdict == HOLDS and "the higher plateau / 0.98 of loss" in v.numbers
    # round 20: mean(0.11, 0.1, 0.1) > 0.1 / 0.98; round 25: 0.1
    assert claims.rounds_to(la[0], 0.1 / 0.98, metric="loss", higher=False) == 25
    # a failed run is named and left out, not a win for its rival
    v = claims.paired_reach(a, {0: None, 1: None, 2: None}, names=("A", "B"))
    assert v.verdict == INCONCLUSIVE and "B failed or never" in v.reason
    # model units instead of rounds
    ua = {s: h.assign(units=h["round"] * 30) for s, h in a.items()}   # round 20 -> 600 vs round 30 -> 1200
    ub = {s: h.assign(units=h["round"] * 40) for s, h in b.items()}
    assert claims.paired_reach(ua, ub, x="units", margin=200).verdict == HOLDS
    # a run cut short is not one that never got there: runs of two horizons are refused
    short = {s: h[h["round"] <= 25] for s, h in b.items()}
    with pytest.raises(ValueError, match=r"^a, b: seed 0: A's run ends at round 50, B's at round 25; compare "
                                         r"runs of one horizon"):
        claims.paired_reach(a, short, names=("A", "B"))


def test_margins_are_fixed_per_metric():
    assert claims.margin_for("test accuracy") == 0.005
    assert claims.margin_for("rounds to target", eval_every=5) == 5
    assert claims.margin_for("model units to target", eval_every=5, per_round=40) == 200
    with pytest.raises(ValueError, match="^metric"):
        claims.margin_for("speed")
    with pytest.raises(ValueError, match="^eval_every"):
        claims.margin_for("rounds to target")


def test_claim_rows_are_typed_and_give_the_table_the_columns_of_the_mappings_they_replace():
    win = claims.paired({0: 1, 1: 1.1, 2: 1}, {0: 0, 1: 0, 2: 0.1})
    bad = claims.paired({0: 0, 1: 0, 2: 0.1}, {0: 1, 1: 1.1, 2: 1})
    rows = [claims.ClaimRow("Sec. 5", "A is better", "A beats B", win, setting="quick", paper="FOCUS",
                            context={"dataset": "MNIST", "pattern": "P1"}),
            claims.ClaimRow("Sec. 5", "A is better", "A beats C", bad, "at a reduced scale", setting="quick",
                            paper="FOCUS", context={"dataset": "MNIST", "pattern": "P2"})]
    assert rows[0].to_dict() == {"dataset": "MNIST", "pattern": "P1", "where": "Sec. 5",
                                 "quote": "A is better", "claim": "A beats B", "check": win,
                                 "setting": "quick", "paper": "FOCUS"}
    assert list(rows[1].to_dict()) == ["dataset", "pattern", "where", "quote", "claim", "check", "cause",
                                       "setting", "paper"]
    table = claims.claims_table(rows)
    assert table.equals(claims.claims_table([r.to_dict() for r in rows]))
    assert list(table.columns) == ["dataset", "pattern", "setting", "paper", *claims.CLAIM_COLUMNS]
    assert "reduced scale" in table.loc[1, "cause"] and table.loc[0, "cause"] == ""
    # a row without a setting or paper adds no such column; a short name is kept where given
    plain = claims.ClaimRow("Sec. 5", "A is better", "A beats B", win, short="A vs B")
    assert plain.to_dict() == {"where": "Sec. 5", "quote": "A is better", "claim": "A beats B", "check": win,
                               "short": "A vs B"}
    with pytest.raises(ValueError, match="^check: must be a fedlib.claims.Verdict; got str"):
        claims.ClaimRow("Sec. 5", "A is better", "A beats B", "holds")
    with pytest.raises(ValueError, match="^quote: every claim names its quote"):
        claims.ClaimRow("Sec. 5", " ", "A beats B", win)
    with pytest.raises(ValueError, match="^context: setting is a field of the row"):
        claims.ClaimRow("Sec. 5", "A is better", "A beats B", win, context={"setting": "x"})


def test_claims_table_names_where_and_quote_and_computes_every_cause(tmp_path):
    win = claims.paired({0: 1, 1: 1.1, 2: 1}, {0: 0, 1: 0, 2: 0.1})
    bad = claims.paired({0: 0, 1: 0, 2: 0.1}, {0: 1, 1: 1.1, 2: 1})
    row = {"pattern": "P1", "where": "Sec. 5", "quote": "A is better", "claim": "A beats B"}
    t = claims.claims_table([{**row, "check": win}, {**row, "check": bad, "cause": "at a reduced scale"}])
    assert list(t.columns) == ["pattern", *claims.CLAIM_COLUMNS]
    assert list(t["verdict"]) == [HOLDS, NOT_HOLDS] and t.loc[0, "cause"] == ""
    assert t.loc[1, "cause"].startswith("3 of 3 seeds against the claim")
    assert "reduced scale" in t.loc[1, "cause"]
    with pytest.raises(ValueError, match=r"rows\[0\].quote"):
        claims.claims_table([{"claim": "c", "where": "Sec. 5", "check": win}])
    with pytest.raises(ValueError, match=r"rows\[0\].check"):
        claims.claims_table([{**row, "verdict": "maybe"}])
    assert list(claims.claims_table([]).columns) == claims.CLAIM_COLUMNS
    # the ledger keeps the other notebooks' rows and replaces this one's
    out = tmp_path / "figures" / "02_x"
    claims.update_ledger(t, "02_x", "FedSUM", out, setting=["pattern"])
    claims.update_ledger(t.iloc[:1], "01_y", "Other", tmp_path / "figures" / "01_y")
    claims.update_ledger(t.iloc[:1], "02_x", "FedSUM", out, setting=["pattern"])
    ledger = pd.read_csv(tmp_path / "figures" / "claims_ledger.csv")
    assert list(ledger.columns) == claims.LEDGER_COLUMNS
    assert list(ledger["notebook"]) == ["01_y", "02_x"] and ledger.loc[1, "setting"] == "P1"
    # a row without one of the setting's context columns (a claim no pattern tests): left out of it
    mixed = claims.claims_table([{**row, "check": win, "setting": "s"},
                                 {k: v for k, v in row.items() if k != "pattern"} | {"check": win}])
    claims.update_ledger(mixed, "02_x", "FedSUM", out, setting=["pattern"])
    ledger = pd.read_csv(tmp_path / "figures" / "claims_ledger.csv", keep_default_na=False)
    assert ledger.loc[ledger["notebook"] == "02_x", "setting"].tolist() == ["P1, s", ""]
    claims.update_ledger(t.iloc[:1], "02_x", "FedSUM", out, setting=["pattern"])
    assert (tmp_path / "figures" / "claims_ledger.md").read_text().startswith("| notebook | paper |")
    # a notebook asking several papers' claims (09) names each row's paper; ``paper`` fills the rest
    several = t.assign(paper=["FOCUS", ""])
    claims.update_ledger(several, "09_z", "FedSUM", tmp_path / "figures" / "09_z")
    ledger = pd.read_csv(tmp_path / "figures" / "claims_ledger.csv")
    assert ledger.loc[ledger["notebook"] == "09_z", "paper"].tolist() == ["FOCUS", "FedSUM"]
    # a run at other parameters (``-p out_dir``) in a folder not named for its notebook, or at the
    # project's top: a ledger of its own rows, and the ledger of all notebooks as it was
    before = (tmp_path / "figures" / "claims_ledger.csv").read_bytes()
    for own in (tmp_path / "figures" / "02_per_round_10", tmp_path / "o1"):
        claims.update_ledger(t.iloc[:1], "02_x", "FedSUM", own)
        assert pd.read_csv(own / "claims_ledger.csv")["notebook"].tolist() == ["02_x"]
    assert (tmp_path / "figures" / "claims_ledger.csv").read_bytes() == before
    for own in (tmp_path / "figures" / "02_x-mine", tmp_path / "elsewhere" / "02_x"):   # named, not placed
        claims.update_ledger(t.iloc[:1], "02_x", "FedSUM", own)
        assert (own / "claims_ledger.csv").is_file()
    assert (tmp_path / "figures" / "claims_ledger.csv").read_bytes() == before
    other = tmp_path / "results" / "notebooks" / "02_x-per_round=10"
    claims.update_ledger(t.iloc[:1], "02_x", "FedSUM", other)
    ledger = pd.read_csv(tmp_path / "results" / "notebooks" / "claims_ledger.csv")
    assert ledger["notebook"].tolist() == ["02_x"]


def test_the_ledger_collects_every_notebooks_claims_and_the_readme_shows_its_counts():
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    ledger = pd.read_csv(root / "figures" / "claims_ledger.csv")
    assert list(ledger.columns) == claims.LEDGER_COLUMNS
    assert set(ledger["verdict"]) <= set(claims.VERDICTS)
    assert ledger[["where", "quote", "claim", "setting"]].notna().all().all()
    assert (ledger.loc[ledger["verdict"] != HOLDS, "cause"].fillna("").str.len() > 0).all()
    for nb, rows in ledger.groupby("notebook"):
        table = pd.read_csv(root / "figures" / nb / "claims.csv")
        assert list(table["claim"]) == list(rows["claim"]), nb
        assert list(table["verdict"]) == list(rows["verdict"]), nb
    # each verdict follows from its own interval, threshold and margin by the one rule
    for r in ledger.itertuples():
        if r.verdict == HOLDS:
            assert r.ci_low > r.threshold, r.claim
        elif r.verdict == NOT_HOLDS:
            assert r.ci_high < r.threshold, r.claim
        elif r.verdict == EQUIVALENT:
            assert -r.margin <= r.ci_low and r.ci_high <= r.margin, r.claim
        # precedence: an interval wholly inside +-margin of a 'better' claim is equivalent, whatever its sign
        if r.verdict in (HOLDS, NOT_HOLDS) and r.threshold == 0 and r.margin > 0:
            assert not (-r.margin <= r.ci_low and r.ci_high <= r.margin), r.claim
    # inconclusive rows carry their direction, the others none; a row not tested says why, and no
    # claim against several rivals holds while one of them is not tested or left out
    text = ledger.fillna({"direction": "", "cause": ""})
    inconclusive = text["verdict"] == INCONCLUSIVE
    assert set(text.loc[inconclusive, "direction"]) <= set(claims.DIRECTIONS)
    assert (text.loc[~inconclusive, "direction"] == "").all()
    assert text.loc[text["verdict"] == NOT_TESTED, "cause"].str.contains("not tested: ").all()
    # a row not tested made no comparison: no effect, no interval (issue 49: not a one-seed effect)
    assert ledger.loc[ledger["verdict"] == NOT_TESTED, ["effect", "ci_low", "ci_high"]].isna().all(axis=None)
    held = text.loc[text["verdict"] == HOLDS, "cause"]
    assert not held.str.contains(": not tested|left out: ", regex=True).any()
    readme = (root / "README.md").read_text()
    block = readme.split("<!-- what-holds:start -->\n", 1)[1].split("\n<!-- what-holds:end -->", 1)[0]
    assert block == claims.what_holds_markdown(ledger), "README's what-holds table: regenerate it (ledger)"
    assert " ".join(claims.RULE.split()) in " ".join(readme.split())


def test_tidy_labels_summarizes_and_keeps_only_the_curves_of_runs_that_are_ok():
    rows = []
    for key, acc in (("a", [0.1, 0.5, 0.8, 0.9]), ("b", [0.1] * 12)):
        for i, v in enumerate(acc):
            rows.append({"key": key, "round": 5 * i, "test_acc": v, "loss": 2.3 - 0.1 * i, "status": "ok"})
    df = pd.DataFrame(rows)
    t, s, c = claims.tidy(df, {"a": ("x", 0), "b": ("y", 0)}, ["data", "seed"], chance=0.1,
                          rename={"data": str.upper})
    assert set(t["data"]) == {"X", "Y"} and list(s.index.names) == ["data", "seed"]
    assert s.loc[("X", 0), "outcome"] == "ok" and s.loc[("Y", 0), "outcome"].startswith("collapsed")
    assert c[("X", 0)]["test_acc"].tolist() == [0.1, 0.5, 0.8, 0.9] and c[("Y", 0)] is None
    _, _, c2 = claims.tidy(df, {"a": ("x", 0), "b": ("y", 0)}, ["data", "seed"], chance=0.1,
                           derived={"twice": lambda t: 2 * t["test_acc"]})
    assert c2[("x", 0)]["twice"].tolist() == [0.2, 1.0, 1.6, 1.8]      # derived columns reach the curves


def test_a_run_stored_ok_with_a_nan_accuracy_has_no_value_not_an_ok_mean_of_what_is_left():
    """Bad inputs, trial 5 (finding 21's remainder): status ok and a NaN test accuracy at one
    evaluation read "ok" with the mean of the other evaluations; the run now has no final value and
    says where its first NaN is (the claims then read it as they read a failed run)."""
    rows = []
    for key, acc in (("a", [0.1, 0.5, 0.8, 0.9]), ("b", [0.1, 0.5, float("nan"), 0.9]),
                     ("c", [0.1, 0.4, 0.7, 0.8])):
        for i, v in enumerate(acc):
            rows.append({"key": key, "round": 5 * i, "test_acc": v, "loss": 2.3 - 0.1 * i, "status": "ok"})
    df = pd.DataFrame(rows)
    s = claims.summarize(df, {"a": ("A", 0), "b": ("A", 1), "c": ("C", 0)}, ["method", "seed"], chance=0.1,
                         window=0.5).set_index(["method", "seed"])
    assert s.loc[("A", 0), "outcome"] == "ok" and s.loc[("A", 0), "final_acc"] == pytest.approx(0.85)
    assert s.loc[("A", 1), "outcome"] == "no value: test_acc is NaN at round 10"
    assert np.isnan(s.loc[("A", 1), "final_acc"]) and np.isnan(s.loc[("A", 1), "drop"])
    lossy = df.assign(loss=np.where((df["key"] == "c") & (df["round"] == 15), np.nan, df["loss"]))
    s2 = claims.summarize(lossy[lossy["key"] == "c"], {"c": ("C", 0)}, ["method", "seed"], chance=0.1)
    assert s2["outcome"].tolist() == ["no value: loss is NaN at round 15"]


def test_a_notebook_opens_with_what_its_committed_claims_say():
    ledger = pd.DataFrame({
        "notebook": ["nb"] * 3 + ["other"], "paper": "P", "where": "Sec. 1", "quote": "q",
        "setting": ["MNIST, P1, quick profile (MNIST, T = 200)"] * 4,
        "claim": ["A beats B", "A beats C", "A beats B", "x"], "verdict": [HOLDS, NOT_HOLDS, HOLDS, HOLDS],
        "seeds": [5, 4, 5, 3], "cause": ""})
    text = claims.summary_markdown("nb", ledger)
    assert "(3 claim rows; seeds per comparison: 4, 5)" in text
    assert "**2 holds**, **1 does not hold**, **0 equivalent**, **0 inconclusive**" in text
    assert "Scale: quick profile (MNIST, T = 200)." in text
    assert "*Holds*: A beats B." in text and "*Does not hold*: A beats C." in text    # each claim once
    assert "figures/nb/claims.md" in text and "x" not in text.split("Scale")[0]
    assert claims.summary_markdown("missing", ledger).startswith("No claims of `missing`")
    split = ledger.assign(verdict=[HOLDS, NOT_HOLDS, NOT_HOLDS, HOLDS])     # A beats B: one of each
    text = claims.summary_markdown("nb", split)
    assert "*Holds*: A beats B (in 1 of its 2 settings)." in text
    assert "*Does not hold*: A beats C; A beats B (in 1 of its 2 settings)." in text


def test_a_claim_no_run_makes_is_counted_not_tested_but_adds_no_seeds_or_scale_to_the_summary():
    row = claims.ClaimRow("Sec. 5", "q", "A beats B on SVHN", claims.not_run("SVHN cannot be had here"),
                          setting="paper profile (SVHN, T = 2000), not run")
    table = claims.claims_table([row])
    assert table.loc[0, "verdict"] == NOT_TESTED and table.loc[0, "seeds"] == 0
    assert table.loc[0, "cause"] == "not tested: not run here: SVHN cannot be had here"
    ledger = pd.DataFrame({
        "notebook": "nb", "paper": "P", "where": "Sec. 5", "quote": "q",
        "setting": ["MNIST, quick profile (MNIST, T = 200)", table.loc[0, "setting"]],
        "claim": ["A beats B", "A beats B on SVHN"], "verdict": [HOLDS, NOT_TESTED], "direction": "",
        "seeds": [5, 0], "cause": ["", table.loc[0, "cause"]]})
    text = claims.summary_markdown("nb", ledger)
    assert "(2 claim rows; seeds per comparison: 5)" in text and "**1 not tested**" in text
    assert "Scale: quick profile (MNIST, T = 200)." in text and "*Not tested*: A beats B on SVHN." in text
    counts = claims.what_holds(ledger)                                 # the README's table counts it
    assert counts.loc[0, NOT_TESTED] == 1 and counts.loc[0, "rows"] == 2
    assert "| 1 | 2 |" in claims.what_holds_markdown(ledger).splitlines()[2]


def test_an_interval_inside_the_margin_is_equivalent_whatever_its_sign():
    # row 85's case: every seed against the claim, but the whole interval inside +-0.005
    b = dict.fromkeys(range(5), 0.90)
    behind = {s: 0.90 + d for s, d in enumerate((-0.003, -0.0025, -0.0035, -0.0028, -0.0032))}
    v = claims.paired(behind, b, margin=0.005)
    assert v.ci_high < 0 and -0.005 <= v.ci_low
    assert v.verdict == EQUIVALENT and v.direction == ""
    ahead = {s: 0.90 + d for s, d in enumerate((0.003, 0.0025, 0.0035, 0.0028, 0.0032))}
    v = claims.paired(ahead, b, margin=0.005)
    assert v.ci_low > 0 and v.verdict == EQUIVALENT                  # a win smaller than the margin
    v = claims.paired(ahead, b, margin=0.001)
    assert v.verdict == HOLDS                                        # the same win beyond a finer margin
    v = claims.paired(behind, b, margin=0.001)
    assert v.verdict == NOT_HOLDS
    # a "no worse" claim has no equivalent: inside the margin it holds
    assert claims.paired(behind, b, margin=0.005, kind="no worse").verdict == HOLDS


def test_a_failure_outside_the_papers_rule_makes_the_comparison_not_tested():
    nan = math.nan
    ours = {0: 0.90, 1: 0.91, 2: 0.90, 3: 0.92}
    rival = {0: nan, 1: 0.80, 2: nan, 3: 0.81}
    why = "local step 7.3x App. H's"
    v = claims.paired(ours, rival, names=("F", "S"), off_rule={"S": why})
    assert v.verdict == NOT_TESTED and v.direction == ""
    # issue 49: the comparison was not made, so no effect and no interval; the numbers keep what was measured
    assert math.isnan(v.effect) and math.isnan(v.ci_low) and math.isnan(v.ci_high)
    assert "effect 0.1100, 95% CI [" in v.numbers and "seed 1: 0.9100 vs 0.8000" in v.numbers
    t = claims.claims_table([claims.ClaimRow("Sec. 5", "q", "F beats S", v)])
    assert t[["effect", "ci_low", "ci_high"]].isna().all(axis=None)
    assert v.reason.startswith("not tested: S has no value (failed) on 2 of 4 seeds (seed 0, seed 2), run "
                               f"outside its paper's settings: {why} (without the mark, the 2 seed(s) "
                               "where both ran: holds)")           # what the rest of the rule gives
    # the same failures at the rival's own rate: left out and named; the two seeds where both ran decide
    v = claims.paired(ours, rival, names=("F", "S"))
    assert v.verdict == HOLDS and v.seeds == 2
    assert "the rival has no value on seed 0 (S failed), seed 2 (S failed)" in v.reason
    # marked, but it did not fail: the comparison is a test like any other
    v = claims.paired(ours, {0: 0.80, 1: 0.80, 2: 0.81, 3: 0.80}, names=("F", "S"), off_rule={"S": why})
    assert v.verdict == HOLDS
    # the claimed method failing outside its paper's settings
    v = claims.paired({0: nan, 1: nan, 2: nan}, {0: 0.8, 1: 0.8, 2: 0.8}, names=("F", "S"),
                      off_rule={"F": "63.5x FOCUS's rate"})
    assert v.verdict == NOT_TESTED and "F has no value (failed) on 3 of 3 seeds" in v.reason
    assert "without the mark" not in v.reason                  # no seed left to judge: nothing to name
    assert math.isnan(v.effect) and math.isnan(v.ci_low)
    # paired_reach passes it on
    h = curve([0.1, 0.85, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9])
    v = claims.paired_reach({0: h, 1: h}, {0: None, 1: h}, names=("A", "S"), off_rule={"S": why})
    assert v.verdict == NOT_TESTED and "S has no value (failed or never) on 1 of 2 seeds (seed 0)" in v.reason
    assert math.isnan(v.effect) and "effect 0, 95% CI no interval" in v.numbers    # measured, not compared
    # a not-tested verdict that carries an effect is refused: there was no comparison
    with pytest.raises(ValueError, match="^effect, ci_low, ci_high: a 'not tested' verdict has none"):
        claims.Verdict(NOT_TESTED, "n", 1, (35.0,), 35.0)


def test_a_claim_whose_setting_is_not_run_is_not_tested_with_its_reason_never_inconclusive():
    v = claims.not_run("  CIFAR-10 cannot be had here ")
    assert (v.verdict, v.seeds, v.diffs, v.direction) == (NOT_TESTED, 0, (), "")
    assert v.reason == "not tested: not run here: CIFAR-10 cannot be had here" and math.isnan(v.effect)
    t = claims.claims_table([claims.ClaimRow("App. H.6", "q", "FedSUM is the strongest", v)])
    assert t.loc[0, "verdict"] == NOT_TESTED and t.loc[0, "cause"] == v.reason
    # among rivals that were run, an untested one keeps its verdict and ranks below inconclusive
    c = claims.combine({"A": claims.paired({0: 1.0, 1: 1.1}, {0: 0.5, 1: 0.6}), "B": v})
    assert c.verdict == NOT_TESTED and "per rival: A: holds; B: not tested" in c.reason
    for bad in ("", "   ", None, 3):
        with pytest.raises(ValueError, match="^reason: must say why the claim's setting is not run here"):
            claims.not_run(bad)


def test_a_dataset_that_cannot_be_had_is_worded_once_for_every_study():
    one = claims.not_had("App. F runs CIFAR-10", "the quick profile runs MNIST", ["CIFAR-10"])
    assert one.verdict == NOT_TESTED and one.reason == (
        "not tested: not run here: App. F runs CIFAR-10; the quick profile runs MNIST: CIFAR-10 cannot be "
        "had on these machines (no network), and the paper profile runs it (on a GPU)")
    two = claims.not_had("Fig. 1 runs A, B, C", "the quick profile runs A only", ["B", "C"])
    assert two.reason.endswith(": B and C cannot be had on these machines (no network), and the paper "
                               "profile runs them (on a GPU)")
    none = claims.not_had("Sec. 6 runs B", "every profile runs A", ["B"], paper_profile=False)
    assert none.reason.endswith("every profile runs A: B cannot be had on these machines (no network)")
    for bad in ([], "CIFAR-10", [""], None):
        with pytest.raises(ValueError, match="^missing: must be a non-empty sequence of dataset names"):
            claims.not_had("x", "y", bad)
    with pytest.raises(ValueError, match="^here_runs: must say what is run"):
        claims.not_had("x", " ", ["B"])


def test_a_claim_against_every_rival_cannot_hold_by_leaving_one_unrun():
    ours = {0: 0.9, 1: 0.91, 2: 0.92}
    runs = {"B": {0: 0.5, 1: 0.52, 2: 0.5}, "C": {0: 0.6, 1: 0.61, 2: 0.6}}

    def vs(m):
        return claims.paired(ours, runs[m], names=("A", m))
    every = claims.against_rivals(["B", "C"], vs, runs.__contains__)
    assert (every.check.verdict, every.unrun, every.words) == (HOLDS, [], "(B, C)")
    short = claims.against_rivals(["B", "D", "C"], vs, runs.__contains__, "is not in Fig. 1's runs here")
    assert (short.check.verdict, short.unrun, short.words) == (NOT_TESTED, ["D"], "(B, D, C; D not run here)")
    assert "per rival: B: holds; D: not tested; C: holds" in short.check.reason
    assert "D is not in Fig. 1's runs here" in short.check.reason
    for bad in ([], ["B", "B"]):
        with pytest.raises(ValueError, match="^rivals: must name each rival of the claim once"):
            claims.against_rivals(bad, vs, runs.__contains__)


def test_a_comparison_a_rule_sets_aside_is_not_tested_with_its_numbers_kept():
    v = claims.paired({0: 0.9, 1: 0.8, 2: 0.7}, {0: 0.85, 1: 0.82, 2: 0.6})     # inconclusive, leans for
    assert v.verdict == INCONCLUSIVE and v.direction == "for"
    s = claims.set_aside(v, " the horizon stops it short ")
    assert (s.verdict, s.direction) == (NOT_TESTED, "")
    assert s.reason == ("not tested: the horizon stops it short (without this rule: inconclusive (for)); "
                        + v.reason)                                   # what the rule set aside, kept
    assert claims.set_aside(s, "again").reason == "not tested: again"      # no verdict to name
    assert all(math.isnan(x) for x in (s.effect, s.ci_low, s.ci_high))
    assert (s.numbers, s.seeds, s.diffs, s.threshold, s.margin) == (v.numbers, v.seeds, v.diffs, v.threshold,
                                                                     v.margin)
    for bad in ("", "  ", None):
        with pytest.raises(ValueError, match="^why: must say why the rule sets the comparison aside"):
            claims.set_aside(v, bad)
    with pytest.raises(ValueError, match="^check: must be a Verdict"):
        claims.set_aside("holds", "x")


def test_every_rival_keeps_its_verdict_and_the_weakest_decides():
    nan = math.nan
    a = {0: 0.95, 1: 0.952, 2: 0.949}
    worse = {0: 0.90, 1: 0.905, 2: 0.90}
    better = {0: 0.97, 1: 0.975, 2: 0.972}
    failed = {0: nan, 1: nan, 2: nan}
    off = {"S": "7.3x App. H's step"}
    v = claims.against_all(a, {"X": worse, "S": failed}, name="F", margin=0.005, off_rule=off)
    assert v.verdict == NOT_TESTED                                    # never a win by leaving S out
    assert math.isnan(v.effect) and math.isnan(v.ci_low)              # the deciding comparison was not made
    assert v.reason.startswith("per rival: X: holds; S: not tested; against S: not tested: S has no value")
    v = claims.against_all(a, {"X": worse, "S": failed, "Y": better}, name="F", margin=0.005, off_rule=off)
    assert v.verdict == NOT_HOLDS and "Y: does not hold" in v.reason and "S: not tested" in v.reason
    # not tested outranks inconclusive and equivalent
    tied = {0: 0.951, 1: 0.951, 2: 0.95}
    v = claims.against_all(a, {"Z": tied, "S": failed}, name="F", margin=0.005, off_rule=off)
    assert v.verdict == NOT_TESTED
    # the direction of an inconclusive combination: against if any inconclusive rival leans against
    up = {0: 0.93, 1: 0.96, 2: 0.90}                                  # a - up: 0.02, -0.008, 0.049: for
    down = {0: 0.96, 1: 0.94, 2: 0.99}                                # -0.01, 0.012, -0.041: against
    v = claims.against_all(a, {"U": up, "X": worse}, name="F")
    assert v.verdict == INCONCLUSIVE and v.direction == "for"
    v = claims.against_all(a, {"U": up, "D": down}, name="F")
    assert v.verdict == INCONCLUSIVE and v.direction == "against"
    assert "per rival: U: inconclusive (for); D: inconclusive (against)" in v.reason


def test_the_direction_of_an_inconclusive_verdict():
    assert claims.direction([0.02, -0.01, 0.03]) == "for"             # mean above, 2 seeds of 3 above
    assert claims.direction([-0.02, 0.01, -0.03]) == "against"
    assert claims.direction([0.05, -0.01, -0.01]) == "split"          # mean above, most seeds below
    assert claims.direction([0.01, -0.01]) == "split"                 # the mean on the threshold
    assert claims.direction([]) == "split"
    assert claims.direction([-0.004, -0.006], threshold=-0.005) == "split"   # one each side of -margin
    v = claims.paired({0: 1.0, 1: 1.2, 2: 0.9}, {0: 0.9, 1: 1.0, 2: 1.0})   # d = 0.1, 0.2, -0.1
    assert v.verdict == INCONCLUSIVE and v.direction == "for"
    assert claims.paired({0: 1.0, 1: 1.1}, {0: 0.0, 1: 0.0}).direction == ""     # holds: no direction
    t = claims.claims_table([{"claim": "c", "where": "w", "quote": "q", "check": v}])
    assert t.loc[0, "direction"] == "for"


def test_margins_are_no_finer_than_the_metrics_resolution():
    # one test image of MNIST's 10,000 and of notebook 07's 2,000; the spread measured between identical
    # configs stored at different commits (issue 49)
    image, image_07, spread = 1 / 10_000, 1 / 2_000, 0.0006
    assert claims.MARGINS["accuracy drop"] >= max(3 * image, spread)
    assert claims.MARGINS["test accuracy"] >= max(3 * image_07, spread)
    assert claims.MARGINS["accuracy fluctuation"] >= max(2 * image_07, spread)   # 07's variance proxy


def test_an_event_count_says_when_its_seeds_cannot_decide_it():
    assert claims.event_seeds(0.5) == (6, 6)
    assert claims.event_seeds(0.1) == (2, 36)          # 0.025^(1/2) = 0.158; 1 - 0.025^(1/35) > 0.1
    v = claims.event_count({s: False for s in range(3)}, "OS misses it")
    assert v.verdict == INCONCLUSIVE and v.direction == "against"
    assert v.reason.startswith("cannot be refuted below 6 seeds (no outcome of 3 seeds puts the interval "
                               "below 1/2); OS misses it in 0 of 3 seeds")
    # issue 49: at rate 1/10, 0 misses of 3 lean against the claim and only 36 seeds could refute it, but the
    # other side is decidable at 3 seeds -- 3 misses of 3 hold (Clopper-Pearson lower bound 0.29 > 0.1)
    v = claims.event_count({s: False for s in range(3)}, "OS misses it", level=0.1)
    assert v.reason.startswith("cannot be refuted below 36 seeds (no outcome of 3 seeds puts the interval "
                               "below 0.1)") and v.threshold == 0.1
    assert "confirm" not in v.reason
    v = claims.event_count({s: True for s in range(3)}, level=0.1)
    assert v.verdict == HOLDS and v.ci_low == pytest.approx(0.2924, abs=1e-4)
    assert claims.event_count({s: False for s in range(36)}, level=0.1).verdict == NOT_HOLDS
    # leaning for the claim, the mirror image: n of n cannot confirm a rate of 1/2 below 6 seeds, nor one of
    # 0.9 below 36, though at 3 seeds 0 of 3 refute a rate of 0.9
    v = claims.event_count({s: True for s in range(3)}, "never reaches it")
    assert v.direction == "for" and v.reason.startswith(
        "cannot be confirmed below 6 seeds (no outcome of 3 seeds puts the interval above 1/2); never "
        "reaches it in 3 of 3 seeds")
    v = claims.event_count({s: True for s in range(3)}, level=0.9)
    assert v.verdict == INCONCLUSIVE and v.reason.startswith("cannot be confirmed below 36 seeds")
    assert claims.event_count({s: False for s in range(3)}, level=0.9).verdict == NOT_HOLDS
    # on the rate, each side it cannot reach
    v = claims.event_count({0: True, 1: False})
    assert v.direction == "split" and v.reason.startswith(
        "cannot be confirmed below 6 seeds nor refuted below 6 seeds (no outcome of 2 seeds puts the "
        "interval above or below 1/2)")
    v = claims.event_count({s: s < 4 for s in range(7)})              # 4 of 7: decidable in principle
    assert v.verdict == INCONCLUSIVE and "cannot be" not in v.reason and v.direction == "for"
    with pytest.raises(ValueError, match="^level"):
        claims.event_count({0: True}, level=1.0)


def test_what_holds_counts_each_verdict_and_the_inconclusive_by_direction():
    verdicts = [HOLDS, INCONCLUSIVE, INCONCLUSIVE, INCONCLUSIVE, NOT_TESTED, EQUIVALENT]
    ledger = pd.DataFrame({"paper": ["P"] * 6, "notebook": ["nb"] * 6, "verdict": verdicts,
                           "direction": ["", "for", "against", "against", "", ""]})
    t = claims.what_holds(ledger)
    assert list(t.columns) == ["paper", "notebook", *claims.COUNT_COLUMNS, "rows"]
    row = t.iloc[0]
    assert (row[HOLDS], row["inconclusive (for)"], row["inconclusive (against)"], row["inconclusive (split)"],
            row[NOT_TESTED], row[EQUIVALENT], row["rows"]) == (1, 1, 2, 0, 1, 1, 6)
    md = claims.what_holds_markdown(ledger)
    head = ("| paper | notebook | holds | does not hold | equivalent | inconclusive (for) "
            "| inconclusive (against) | inconclusive (split) | not tested | rows |")
    assert md.splitlines()[0] == head
    last = "| all | [ledger](figures/claims_ledger.md) | 1 | 0 | 1 | 1 | 2 | 0 | 1 | 6 |"
    assert md.splitlines()[-1] == last


def test_a_seed_a_holding_rival_leaves_out_is_named_in_the_combined_reason():
    """Issue 49 ("left out and named"): against every rival, a rival whose comparison holds on the
    seeds where both ran, but failed on one, is named with that seed even when another rival decides
    the combined verdict."""
    a = {0: 0.9, 1: 0.91, 2: 0.92, 3: 0.9}
    close = {0: 0.8, 1: 0.85, 2: 0.86, 3: 0.84}                       # decides: the least slack
    failed = {0: 0.1, 1: 0.12, 2: 0.11, 3: math.nan}                  # seed 3: failed, left out
    v = claims.against_all(a, {"B": close, "C": failed}, "A")
    assert v.verdict == HOLDS and v.reason.startswith("per rival: B: holds; C: holds")
    assert "against C:" in v.reason and "seed 3" in v.reason


def test_the_rule_states_how_a_combined_claim_gets_its_numbers_and_which_margins_moved():
    """Issue 49: RULE says what :func:`combine` does (the deciding comparison's effect and interval,
    the direction of an inconclusive combination), what an event's cause says, and that two margins
    were changed after runs were read, each with its reason; the numbers it names are MARGINS'."""
    rule = " ".join(claims.RULE.split())
    assert ("Its effect, interval, threshold and seeds are those of the comparison that decides it: the "
            "weakest, and among comparisons with that verdict the one whose interval's lower bound minus its "
            "threshold is least (one without an interval first; on a tie, the first listed)") in rule
    assert ("an inconclusive combination leans against if any of its inconclusive comparisons leans against, "
            "for if all of them lean for, split otherwise") in rule
    # what the sentence says is what combine does: of two holding rivals, the one with the least slack decides
    a = {0: 0.95, 1: 0.952, 2: 0.949}
    far, near = {0: 0.80, 1: 0.80, 2: 0.80}, {0: 0.94, 1: 0.941, 2: 0.94}
    v = claims.against_all(a, {"far": far, "near": near}, name="F")
    near_v = claims.paired(a, near)
    assert v.verdict == HOLDS and (v.effect, v.ci_low) == (near_v.effect, near_v.ci_low)
    assert "'cannot be confirmed below m seeds'" in rule and "'cannot be refuted below m seeds'" in rule
    assert "undecidable" not in rule and "before any run" not in rule
    assert "two were changed after runs were read" in rule
    assert f"the accuracy drop's, from 0.0005 to {claims.MARGINS['accuracy drop']:g}" in rule
    assert f"in place of test accuracy's {claims.MARGINS['test accuracy']:g}" in rule
    assert f"the drop's {claims.MARGINS['accuracy drop']:g}" in rule
    fluctuation = claims.MARGINS.get("accuracy fluctuation")       # notebook 07's variance proxy (the other)
    assert fluctuation is None or fluctuation == claims.MARGINS["accuracy drop"]


def test_a_pipe_in_a_cell_stays_in_its_cell_in_the_markdown_tables(tmp_path):
    """Issue 49: notebook 01's quote "|S_t| = S" split its row of claims.md into extra columns."""
    import re
    v = claims.paired({0: 1, 1: 1.1, 2: 1}, {0: 0, 1: 0, 2: 0.1})
    t = claims.claims_table([claims.ClaimRow("Lemma 1", "with |S_t| = S clients a round", "a | b", v)])
    claims.update_ledger(t, "01_x", "FedSUM", tmp_path / "figures" / "01_x")
    from fedlib import plotting
    plotting.save_table(t, tmp_path / "figures" / "01_x", "claims")

    def cells(line):                                    # GitHub Markdown splits a row at every unescaped |
        return re.split(r"(?<!\\)\|", line.strip())[1:-1]
    for path, n in ((tmp_path / "figures" / "claims_ledger.md", len(claims.LEDGER_COLUMNS)),
                    (tmp_path / "figures" / "01_x" / "claims.md", len(t.columns))):
        lines = path.read_text().splitlines()
        assert [len(cells(x)) for x in lines] == [n] * 3, path.name
        row = dict(zip(cells(lines[0]), cells(lines[2]), strict=True))
        assert row[" quote "] == r" with \|S_t\| = S clients a round " and row[" claim "] == r" a \| b "
    # the CSV keeps the text as it is
    ledger = pd.read_csv(tmp_path / "figures" / "claims_ledger.csv")
    assert ledger.loc[0, "quote"] == "with |S_t| = S clients a round"


def test_a_setting_that_draws_nothing_counts_as_one_run():
    """claims.RULE: full participation (or a fixed cycle) is one run whatever the seed: one seed, its
    difference exact; the verdict is the one the seeds' equal differences gave."""
    v = claims.paired({0: 0.9, 1: 0.9, 2: 0.9}, {0: 0.8, 1: 0.8, 2: 0.8}, margin=0.01)
    once = claims.one_run(v, 3)
    assert (once.verdict, once.seeds, once.diffs) == (v.verdict, 1, (pytest.approx(0.1),))
    assert once.effect == once.ci_low == once.ci_high == pytest.approx(0.1)
    assert once.numbers == "one run, repeated by 3 seeds (the setting draws nothing; the difference is " \
                           "exact): " + v.numbers
    assert claims.one_run(claims.not_run("x"), 3) == claims.not_run("x")           # nothing to count
    with pytest.raises(ValueError, match=r"^check: its seeds' differences are not all equal \(0.1, 0.2\)"):
        claims.one_run(claims.paired({0: 0.9, 1: 0.9}, {0: 0.8, 1: 0.7}), 2)
    with pytest.raises(ValueError, match="^repeats: must be an integer >= 2"):
        claims.one_run(v, 1)                                   # one seed: the rule gives no interval
    with pytest.raises(ValueError, match=r"^repeats: the check counts 3 seed\(s\), not the 4"):
        claims.one_run(v, 4)
