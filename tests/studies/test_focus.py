"""fedlib.studies.focus: FOCUS's App. F setup (notebooks 04 and 05)."""

import math
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from fedlib import studies
from fedlib._validate import InputError


def test_focus_study_is_app_f_and_the_authors_run_script():
    s = studies.focus.focus_setup("paper")
    assert (s.dataset, s.model, s.num_clients, s.per_round, s.batch, s.rounds) == \
        ("cifar10", "focus_cifar10_cnn", 32, 4, 128, 10_000)
    assert (s.eta, s.local_steps, s.alpha) == (2e-3, 3, 0.05)
    p = s.bern_p()
    assert np.all((p[:28] >= 0.1) & (p[:28] <= 0.3)) and np.all((p[28:] >= 0.1) & (p[28:] <= 0.9))
    configs = s.configs()
    # the authors' SCAFFOLD has no run of its own under "uniform": there it is SCAFFOLD's
    assert len(configs) == 2 * len(studies.focus.METHODS) - 1 == len({c.key() for c in configs})
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



def test_the_authors_scaffold_sums_over_their_fixed_s_and_is_scaffold_under_uniform():
    """The authors' SCAFFOLD (BichengYing/FedASL, server.py) steps x by the sum of the arrivals'
    Delta y over their ``num_sample_clients``: 10 in their "bern" and "markov" runs, 4 in
    "uniform", where 4 arrive every round and it is SCAFFOLD. Its claim rows under "uniform" take
    SCAFFOLD's runs, and say so in their setting."""
    f = studies.focus
    s = f.focus_setup("quick")
    code = f.RIVALS["the authors' variants"][1]
    both = {**s.configs([0]), **s.configs([0], passive=True)}
    theirs = {v[0]: c for c, v in both.items() if v[2] == code}
    assert set(theirs) == {"bern", f.PASSIVE}
    assert all(c.algorithm == "scaffold" and dict(c.algorithm_args) == {"dy_divisor": 10}
               for c in theirs.values())
    uniform = "uniform (4 of 32)"
    assert s.same_runs(uniform) == {code: "SCAFFOLD"} and s.same_runs("bern") == s.same_runs(f.PASSIVE) == {}
    assert "the authors' SCAFFOLD is SCAFFOLD here (their fixed S, 4," in s.pattern_note(uniform)
    for bad in ("uniform", "nope", None, 4):                     # a pattern's name, not its kind
        for ask in (s.same_runs, s.pattern_note):
            with pytest.raises(InputError, match=r"pattern: must be one of 'bern', 'uniform \(4 of 32\)', "
                                                 r"'markov \(p = 0.2\)', got "):
                ask(bad)
    # a claim row under "uniform" reads SCAFFOLD's values for the authors' SCAFFOLD
    methods = ["SG-FOCUS", "FedAU", "SCAFFOLD", "FedAU as in the authors' code (= FedAvg)"]
    acc = {"SG-FOCUS": 0.9, "FedAU": 0.8, "SCAFFOLD": 0.85, methods[3]: 0.7}      # SCAFFOLD the closest
    rows = [{"pattern": uniform, "seed": k, "method": m, "final_acc": acc[m] + 0.01 * k, "outcome": "ok"}
            for k in (0, 1, 2) for m in methods]
    summary = pd.DataFrame(rows).set_index(["pattern", "seed", "method"])
    curves = {i: pd.DataFrame({"round": [0, 25, 50], "test_acc": [0.1, a * 0.99, a]})
              for i, a in summary["final_acc"].items()}
    got = {r.claim: r for r in s.claims(summary, curves, uniform, [0, 1, 2])}
    theirs = f.rivals_words("the authors' variants")
    assert "their FedAU as coded: every participant weighted alike, i.e. FedAvg" in theirs
    assert "summed over a fixed S, 10 where the number that arrive varies" in theirs    # the catalogue's S
    assert f.rivals_words("FedAU and SCAFFOLD") == "FedAU and SCAFFOLD"
    with pytest.raises(InputError, match="^group: must be one of 'FedAU and SCAFFOLD', "):
        f.rivals_words("the authors'")
    row = got[f"SG-FOCUS has higher test accuracy than {theirs}"]
    assert row.check.verdict == "holds"
    assert row.check.numbers.startswith(f"SG-FOCUS vs {code} (higher is better; effect 0.0500")
    assert "seed 0: 0.9000 vs 0.8500" in row.check.numbers


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


PANELS = ("full participation", "arbitrary (4 of 16, weighted by q)")


def _toy_frame(curves: dict, seeds=(0, 1), panels=PANELS):
    """A frame of Fig. 4's runs: method -> error per round (the same for every panel and seed, but
    FOCUS's rate, which varies a little by seed so that intervals have a spread)."""
    rows = []
    for p in panels:
        for k in seeds:
            for m, err in curves.items():
                e = err(k) if callable(err) else err
                rows.append(pd.DataFrame({"panel": p, "seed": k, "method": m, "round": np.arange(len(e)),
                                          "comm": np.arange(len(e)) * (2 if m == "SCAFFOLD" else 1),
                                          "rel_dist_to_opt": e}))
    return pd.concat(rows, ignore_index=True)


def test_rate_kept_tells_a_linear_rate_from_a_slowing_one():
    t = np.arange(200)
    frame = pd.DataFrame({"round": t, "rel_dist_to_opt": 0.8 ** t})           # linear: the rate is kept
    assert studies.focus.rate_kept(frame) == pytest.approx(1.0)
    slow = pd.DataFrame({"round": t, "rel_dist_to_opt": 1 / (1 + t)})       # O(1/t): log10 2 / log10(T/2)-ish
    assert studies.focus.rate_kept(slow) < 0.3
    flat = pd.DataFrame({"round": t, "rel_dist_to_opt": np.full(200, 1e-3)})  # a plateau has no rate
    assert np.isnan(studies.focus.rate_kept(flat))


GROUP = next(iter(studies.focus.TOY_RIVALS))          # Fig. 4's other algorithms, as the claims name them


def test_fig4_claims_call_a_tie_at_the_floor_equivalent_never_a_win():
    t = np.arange(300)
    linear = {k: 0.85 ** t * (1 + 0.01 * k) for k in (0, 1)}
    curves = {"FOCUS": lambda k: linear[k], "SCAFFOLD": lambda k: 0.8 ** t,       # both reach the floor
              "FedAvg": 1e-4 + 0.9 ** t, "FedAU": 1e-4 + 0.9 ** t, "MIFA": 1e-4 + 0.9 ** t}  # plateaus
    curves.update({m: 1e-4 + 0.9 ** t for m in studies.focus.TOY_ADDED})
    rows = studies.focus.toy_claims(_toy_frame(curves), [0, 1], "s")
    got = {(r.context["panel"].split(" (")[0], r.claim): r.check for r in rows}
    final = got["full participation", f"FOCUS ends with a lower error than {GROUP}"]
    assert final.verdict == "equivalent"                          # SCAFFOLD ties at the floor: no win
    assert "SCAFFOLD: equivalent" in final.reason and "FedAvg: holds" in final.reason
    full = {claim: v.verdict for (p, claim), v in got.items() if p == "full participation"}
    assert full["FOCUS converges linearly: its log10 error falls in the late half of its descent to the "
                "floor at least 0.5 times as fast as in the early half (1 for a linear rate)"] == "holds"
    faster = got["full participation", f"FOCUS converges faster than {GROUP} (rounds)"]
    assert faster.verdict == "does not hold" and "SCAFFOLD: does not hold" in faster.reason  # it is faster
    # on Fig. 4's axis SCAFFOLD pays two vectors a round: its faster curve costs more units than FOCUS's
    cheaper = got["full participation",
                  f"FOCUS converges faster than {GROUP} (communication cost, Fig. 4's axis)"]
    assert cheaper.verdict == "holds" and "SCAFFOLD: holds" in cheaper.reason
    lead = [r for r in rows if r.context["panel"] == "all" and r.check.diffs]
    assert len(lead) == 2 and all(r.check.verdict != "holds" for r in lead)  # the same lead in every scenario
    assert all(r.where == "Sec. 5, Fig. 4" for r in rows)
    # every method but FOCUS runs alike on both seeds here; FOCUS's rate differs by seed: no repeat
    note = studies.focus.toy_rivals_note()
    assert all(r.setting == ("s" + note if GROUP in r.claim else "s")
               for r in rows if r.context["panel"] != "all")
    same = {m: (lambda k, e=(0.9 ** t): e) for m in ("FOCUS", *studies.focus.TOY_RIVALS[GROUP],
                                                      *studies.focus.TOY_ADDED)}
    repeated = studies.focus.toy_claims(_toy_frame(same), [0, 1], "s")
    assert all(r.setting.endswith("; this scenario draws nothing: its 2 seeds repeat one run, counted once "
                                  "(the interval is that run's difference)")
               for r in repeated if r.context["panel"] != "all")
    # counted once (claims.RULE): one seed, the interval that run's difference
    once = [r.check for r in repeated if r.context["panel"] != "all" and r.check.diffs]
    assert once and all(v.seeds == 1 and len(v.diffs) == 1 and v.ci_low == v.ci_high == v.effect
                        and v.numbers.startswith("one run, repeated by 2 seeds") for v in once)


def test_fig4_rivals_are_the_authors_figures_and_proxskip_is_not_tested():
    """FOCUS Sec. 5's "the other algorithms" are those of the authors' Fig. 4 (their plotting notebook
    and every panel's legend): FedAvg, FedAU, SCAFFOLD, ProxSkip and MIFA. All run here but ProxSkip,
    whose row is "not tested"; FedAU and MIFA are rivals of the rows, not extras; the rows that compare
    rivals name where they come from and FedAU's cutoff (ours, the authors')."""
    f = studies.focus
    assert f.TOY_RIVALS == {"FedAvg, FedAU, SCAFFOLD and MIFA": ["FedAvg", "FedAU", "SCAFFOLD", "MIFA"]}
    assert set(f.TOY_UNRUN) == {"ProxSkip"} and "not implemented in fedlib" in f.TOY_UNRUN["ProxSkip"]
    assert {"FedAvg", "FedAU", "SCAFFOLD", "MIFA", "FOCUS"} <= set(f.TOY_METHODS)
    assert not {"FedAU*", "MIFA*"} & set(f.TOY_METHODS) and set(f.TOY_ADDED) == {"FedSUM*", "FedSUM-CR*"}
    assert "FOCUS, FedAvg, FedAU, SCAFFOLD, ProxSkip, MIFA" in f.TOY_FIGURE and "3280b83" in f.TOY_FIGURE
    note = f.toy_rivals_note()
    assert "interval cutoff K = 50" in note and f"toy notebook sets {f.AUTHORS_TOY_FEDAU_CUTOFF}" in note
    t = np.arange(300)
    curves = {"FOCUS": lambda k: 0.85 ** t * (1 + 0.01 * k), "SCAFFOLD": 0.8 ** t, "FedAvg": 1e-4 + 0.9 ** t,
              "FedAU": 1e-4 + 0.9 ** t, "MIFA": 1e-3 + 0.9 ** t}
    rows = f.toy_claims(_toy_frame(curves), [0, 1], "s")
    proxskip = [r for r in rows if "ProxSkip" in r.claim]
    assert len(proxskip) == 1 and proxskip[0].check.verdict == "not tested" and proxskip[0].check.seeds == 0
    assert proxskip[0].context == {"panel": "all"} and f.TOY_FIGURE in proxskip[0].setting
    lower = next(r for r in rows if r.claim == f"FOCUS ends with a lower error than {GROUP}")
    assert all(f"{m}: " in lower.check.reason for m in ("FedAvg", "FedAU", "SCAFFOLD", "MIFA"))


def test_particularly_under_arbitrary_participation_reads_fig4s_axis_and_sets_aside_ties_at_the_floor():
    """Sec. 5's "particularly under arbitrary participation", per rival and per other panel: on Fig. 4's
    axis, the lead in communication to the plateau is larger under arbitrary participation; on the final
    error, a rival at the floor with FOCUS in both panels is not tested (its lead is 0 by construction),
    the others compared, and the cause says why the row is kept (review finding 6)."""
    f = studies.focus
    t = np.arange(400)
    panels = ("full participation", "arbitrary (4 of 16, weighted by q)")
    # FOCUS and SCAFFOLD linear to the floor, both slower under arbitrary (SCAFFOLD pays two units a
    # round); the plateaus higher and slower there
    frames = []
    for p, slow, high, fast in ((panels[0], 0.8, 1e-4, 0.85), (panels[1], 0.9, 1e-3, 0.9)):
        curves = {"FOCUS": lambda k, r=fast: r ** t * (1 + 0.01 * k), "SCAFFOLD": fast ** t,
                  **{m: (lambda k, s=slow, h=high: h * (1 + 0.01 * k) + s ** t)
                     for m in ("FedAvg", "FedAU", "MIFA")}}
        frames.append(_toy_frame(curves, seeds=(0, 1, 2), panels=(p,)))
    rows = f.toy_claims(pd.concat(frames, ignore_index=True), [0, 1, 2], "s")
    comm, final = [r for r in rows if r.context["panel"] == "all" and r.check.diffs]
    assert "communication to the plateau both reach, Fig. 4's axis" in comm.claim
    assert comm.check.verdict == "holds"
    assert "FedAvg, arbitrary vs full participation: holds" in comm.check.reason
    assert "each panel at the authors' rate for it (full participation 0.0006, arbitrary 0.0001)" \
        in comm.setting
    assert "log10 final error" in final.claim and final.check.verdict == "not tested"     # SCAFFOLD's tie
    assert "SCAFFOLD, arbitrary vs full participation: not tested" in final.check.reason
    assert "its lead is 0 in both by construction" in final.check.reason
    assert "FedAvg, arbitrary vs full participation: holds" in final.check.reason        # a factor 10 more
    assert final.cause.startswith("kept as a second reading: against the rivals that end above the floor "
                                  "(FedAvg, FedAU, MIFA)") and "SCAFFOLD ends at the floor" in final.cause
    assert f.TOY_RATES == {"full participation": 6e-4, "uniform (4 of 16)": 1.5e-4,
                           "arbitrary (4 of 16, weighted by q)": 1e-4}
    assert [lr for _, lr in f.toy_panels(2, 3)[1].values()] == list(f.TOY_RATES.values())


def test_sec_1_and_2_claims_ask_the_toy_against_variance_reduction_and_learned_probabilities():
    """Sec. 1: push-pull handles unknown participation better than variance reduction (SCAFFOLD, MIFA)
    and learned participation probabilities (FedAU), under arbitrary participation; Sec. 2: FedAU does
    not converge exactly (its last error above the floating-point floor), per scenario."""
    f = studies.focus
    t = np.arange(300)
    curves = {"FOCUS": lambda k: 0.85 ** t * (1 + 0.01 * k), "SCAFFOLD": 0.8 ** t, "FedAvg": 1e-4 + 0.9 ** t,
              "FedAU": 1e-4 + 0.9 ** t, "MIFA": 1e-3 + 0.9 ** t}
    rows = f.toy_intro_claims(_toy_frame(curves), [0, 1], 1e-11, "s")
    intro = [r for r in rows if r.where == "Sec. 1"]
    learned = [r for r in rows if r.where == "Sec. 2"]
    assert len(intro) == 2
    assert all(r.quote == f.INTRO_QUOTE and r.context == {"panel": PANELS[1]} for r in intro)
    lower, cheaper = (r.check for r in intro)
    assert lower.verdict == "equivalent" and "SCAFFOLD: equivalent" in lower.reason    # both at the floor
    assert "MIFA: holds" in lower.reason and "FedAU: holds" in lower.reason
    assert cheaper.verdict == "holds"                                               # SCAFFOLD pays two units
    assert "FedAvg" not in lower.reason                                         # not one of Sec. 1's kinds
    assert len(learned) == len(PANELS) and all(r.quote == f.LEARNED_QUOTE for r in learned)
    assert all(r.check.verdict == "holds" and r.check.effect == pytest.approx(-4 - np.log10(1e-11), abs=0.01)
               for r in learned)
    for q in (f.INTRO_QUOTE, f.LEARNED_QUOTE):                                      # verbatim in the paper
        assert " ".join(q.split()) in " ".join(_paper_text().split())


def _paper_text() -> str:
    """The FOCUS paper's text where the shared papers are on this machine, else skip."""
    from pathlib import Path
    path = Path("/work/shared/papers/focus.txt")
    if not path.is_file():
        pytest.skip("the FOCUS paper's text is not on this machine")
    return path.read_text()


def test_the_pilot_configs_are_the_bern_runs_a_switched_profile_would_compute():
    """Issue 50's pilot: every setting of the quick profile but the dataset, so that its entries are
    the switched profile's own runs (same keys)."""
    s = studies.focus.focus_setup("quick")
    pilot = s.pilot_configs("fashion_mnist", label="Fashion-MNIST")
    assert sorted(pilot.values()) == sorted(("Fashion-MNIST", k, m) for k in (0, 1)
                                            for m in ("SG-FOCUS", *studies.focus.PILOT_RIVALS))
    switched = replace(s, dataset="fashion_mnist").configs([0, 1])
    assert all(c in switched and switched[c][0] == "bern" for c in pilot)
    assert {dict(c.problem_args)["dataset"] for c in pilot} == {"fashion_mnist"}
    mnist = s.pilot_configs(s.dataset)
    moved = {c.replace(problem_args={**dict(c.problem_args), "dataset": "fashion_mnist"}).key()
             for c in mnist}
    assert moved == {c.key() for c in pilot}                        # the same runs, on the other dataset
    assert set(mnist.values()) == {("mnist", k, m) for _, k, m in pilot.values()}


def _pilot_frames(acc: dict, reach: dict, seeds=(0, 1, 2)):
    """Frames of a pilot: method -> seed -> late accuracy, and method -> seed -> the round at
    which its curve jumps from 0.1 to that accuracy (curves evaluated every 25 rounds to 1000)."""
    rounds = np.arange(0, 1001, 25)
    summary, curves = [], {}
    for m, per in acc.items():
        for k in seeds:
            summary.append({"dataset": "d", "seed": k, "method": m, "final_acc": per[k], "outcome": "ok"})
            curves[("d", k, m)] = pd.DataFrame({"round": rounds,
                                                "test_acc": np.where(rounds >= reach[m][k], per[k], 0.1)})
    s = pd.DataFrame(summary).set_index(["dataset", "seed", "method"])
    return studies.base.Frames(s, curves, seeds, eval_every=25, prefix=("d",))


def test_pilot_checks_give_each_seeds_difference_and_the_seeds_needed():
    rival, other = studies.focus.PILOT_RIVALS
    acc = {"SG-FOCUS": {0: 0.80, 1: 0.82, 2: 0.81}, rival: {0: 0.70, 1: 0.73, 2: 0.70},
           other: {0: 0.81, 1: 0.80, 2: 0.82}}
    reach = {"SG-FOCUS": {0: 100, 1: 100, 2: 100}, rival: {0: 200, 1: 300, 2: 200},
             other: {0: 100, 1: 100, 2: 100}}
    t = studies.focus.pilot_checks(_pilot_frames(acc, reach)).set_index(["rival", "check"])
    a = t.loc[(rival, "test accuracy")]
    assert [a[f"d seed {k}"] for k in (0, 1, 2)] == pytest.approx([0.10, 0.09, 0.11])
    assert a["mean d"] == pytest.approx(0.10) and a["verdict"] == "holds"
    from fedlib import claims
    assert a["seeds needed"] == claims.seeds_needed([0.10, 0.09, 0.11]) == 2
    r = t.loc[(rival, "rounds to plateau")]                         # rounds: the rival's minus SG-FOCUS's
    assert [r[f"d seed {k}"] for k in (0, 1, 2)] == [100, 200, 100]
    tie = t.loc[(other, "rounds to plateau")]
    assert tie["mean d"] == 0 and np.isnan(tie["seeds needed"])     # every seed ties: never decided
    mixed = t.loc[(other, "test accuracy")]
    assert [mixed[f"d seed {k}"] for k in (0, 1, 2)] == pytest.approx([-0.01, 0.02, -0.01])
    assert mixed["verdict"] == "inconclusive"


def test_pilot_causes_put_the_second_stand_ins_checks_beside_the_bern_rows():
    """Review finding 1: the pilot on the harder stand-in goes into the causes of the "bern" rows it
    bears on, per rival it ran, by the same rule as the rows (verdict, seeds against, numbers), naming
    the rivals it did not run; keyed by the rows' claims."""
    f = studies.focus
    rival, other = f.PILOT_RIVALS
    acc = {"SG-FOCUS": {0: 0.52, 1: 0.37}, rival: {0: 0.77, 1: 0.75}, other: {0: 0.75, 1: 0.73}}
    reach = {"SG-FOCUS": {0: 100, 1: 100}, rival: {0: 175, 1: 150}, other: {0: 225, 1: 200}}
    notes = f.pilot_causes(_pilot_frames(acc, reach, seeds=(0, 1)), "Fashion-MNIST")
    theirs = f.rivals_words("the authors' variants")
    assert set(notes) == {f"SG-FOCUS {w} than {g}" for w in ("has higher test accuracy", "converges faster")
                          for g in ("FedAU and SCAFFOLD", theirs)}
    # the claims the rows of headline_claims make, so the notes reach them by claim
    rows = f.focus_setup("quick").claims(*_bern_frame(), "bern", [0, 1, 2], then=notes)
    assert rows and all(r.cause == notes[r.claim] for r in rows)
    acc_note = notes["SG-FOCUS has higher test accuracy than FedAU and SCAFFOLD"]
    assert acc_note.startswith("on Fashion-MNIST, the notebook's pilot (issue 50: \"bern\", seeds [0, 1]")
    assert f"against {rival}: inconclusive (against), 2 of 2 seeds against the claim" in acc_note
    assert "seed 0: 0.5200 vs 0.7700; seed 1: 0.3700 vs 0.7500" in acc_note
    assert acc_note.endswith("FedAU not run in the pilot")
    own = notes[f"SG-FOCUS has higher test accuracy than {theirs}"]
    assert f"against {other}: " in own and f"against {rival}: " not in own
    assert "FedAU as in the authors' code (= FedAvg) not run in the pilot" in own
    fast = notes["SG-FOCUS converges faster than FedAU and SCAFFOLD"]
    assert f"against {rival}: inconclusive (for), 0 of 2 seeds against the claim" in fast
    assert "; the target, 0.98 of the lower plateau, is SG-FOCUS's own on 2 of 2 seeds)" in fast


def _bern_frame():
    """A summary and curves of every method under "bern" on seeds 0-2 (SG-FOCUS ahead)."""
    rows = [{"pattern": "bern", "seed": k, "method": m, "outcome": "ok",
             "final_acc": (0.9 if m == "SG-FOCUS" else 0.8) + 0.01 * k}
            for k in (0, 1, 2) for m in studies.focus.METHODS]
    summary = pd.DataFrame(rows).set_index(["pattern", "seed", "method"])
    curves = {i: pd.DataFrame({"round": [0, 25, 50], "test_acc": [0.1, a * 0.99, a]})
              for i, a in summary["final_acc"].items()}
    return summary, curves


def test_pilot_decision_counts_the_comparisons_the_other_dataset_decides_with_fewer_seeds():
    comps = [("A", "acc"), ("A", "rounds"), ("B", "acc"), ("B", "rounds")]

    def table(name, needs):
        return pd.DataFrame([{"dataset": name, "rival": r, "check": c, "seeds needed": n}
                             for (r, c), n in zip(comps, needs, strict=True)])
    base = table("MNIST", [None, 40, 3, 5])
    for needs, better, switch in (([12, 4, 3, None], [True, True, False, False], False),
                                  ([12, 4, 2, 4], [True, True, True, True], True),
                                  ([None, 39, 2, 9], [False, True, True, False], False)):
        got, decided = studies.focus.pilot_decision(pd.concat([base, table("F", needs)]), "MNIST", "F", True)
        assert got.tolist() == better and decided is switch
    both = pd.concat([base, table("F", [2, 2, 2, 2])])
    _, decided = studies.focus.pilot_decision(both, "MNIST", "F", False)
    assert decided is False                                         # a run of the other dataset failed
    with pytest.raises(ValueError, match=r"^other: no dataset 'G' in checks; its datasets: \['MNIST'\]"):
        studies.focus.pilot_decision(base, "MNIST", "G", True)
    with pytest.raises(ValueError, match="^checks: the comparisons of 'MNIST' and 'F' differ"):
        studies.focus.pilot_decision(pd.concat([base, table("F", [2, 2, 2, 2]).iloc[:3]]), "MNIST", "F", True)


def test_the_markov_belief_of_sec_5_3_is_tested_on_the_toy_at_the_floor_and_by_its_late_fall():
    """Sec. 5.3's "FOCUS still converges exactly" under Markov participation: the panel is fedlib's
    Markov chain with the uniform panel's mean participation and step size; one row asks Fig. 4's
    floor at the last round, the other that the log10 error still falls over the late half of the
    rounds above the floor (no irreducible neighbourhood), FedAvg's numbers in the causes."""
    sched, lr = studies.focus.toy_markov_panel(400, 3, seed=1)
    prob, panels = studies.focus.toy_panels(2, 3)
    assert lr == panels["uniform (4 of 16)"][1]
    assert sched.num_clients == prob.num_clients == studies.focus.TOY_CLIENTS       # the toy's N = 16
    assert sched.active.mean() == pytest.approx(studies.focus.MARKOV_P, abs=0.03)        # 4 of 16 on average
    on = sched.active.astype(bool)
    stay = (on[1:] & on[:-1]).sum() / on[:-1].sum()              # P(on -> on) = 1 - on_rate (1/p - 1)
    down = studies.focus.MARKOV_ON_RATE * (1 / studies.focus.MARKOV_P - 1)
    assert stay == pytest.approx(1 - down, abs=0.05)
    t = np.arange(401)
    floor = 1e-11
    panel = [studies.focus.MARKOV_PANEL]
    slow = {"FOCUS": lambda k: 0.97 ** t * (1 + 0.01 * k), "FedAvg": 1e-3 + 0.9 ** t}  # above the floor
    exact, fall = studies.focus.toy_markov_claims(_toy_frame(slow, seeds=(0, 1, 2), panels=panel), [0, 1, 2],
                                                  floor, "m")
    assert (exact.where, exact.quote, exact.setting, exact.context) == (
        "Sec. 5.3", studies.focus.MARKOV_QUOTE, "m", {"panel": studies.focus.MARKOV_PANEL})
    # log10 0.97^400 = -5.3, far above -11, but still falling: the horizon, not FOCUS, decides it
    assert exact.check.verdict == "not tested" and "the horizon cannot decide it" in exact.check.reason
    assert np.isnan(exact.check.effect) and "3 of 3 seeds" in exact.check.reason
    assert exact.check.diffs[0] == pytest.approx(-11 - 400 * np.log10(0.97))   # what was measured
    late = 200 * -np.log10(0.97)                              # decades over the late half (rounds 200-400)
    assert fall.check.verdict == "holds" and fall.check.diffs[0] == pytest.approx(late, rel=0.02)
    need = (400 * np.log10(0.97) + 11) / -np.log10(0.97)     # rounds to the floor at the late pace
    got = re.search(r"reach the floor in about (\d+)-(\d+) more rounds", exact.cause)
    assert got and abs(int(got.group(1)) - need) <= 2 and "FedAvg -3.00 to -3.00" in exact.cause
    plateau = {"FOCUS": 1e-3 + 0.9 ** t, "FedAvg": 1e-3 + 0.9 ** t}                # a neighbourhood
    exact, fall = studies.focus.toy_markov_claims(_toy_frame(plateau, seeds=(0, 1, 2), panels=panel),
                                                  [0, 1, 2], floor)
    assert fall.check.verdict == "equivalent" and "reach the floor" not in fall.cause
    assert exact.check.verdict == "does not hold"            # stuck above the floor: a neighbourhood
    fast = {"FOCUS": lambda k: 0.8 ** t * (1 + 0.01 * k), "FedAvg": 1e-3 + 0.9 ** t}  # at the floor early
    exact, fall = studies.focus.toy_markov_claims(_toy_frame(fast, seeds=(0, 1, 2), panels=panel), [0, 1, 2],
                                                  floor)
    assert exact.check.verdict == "holds" and fall.check.verdict == "holds"   # the descent above the floor


def test_the_comparisons_floor_is_derived_from_the_exact_floor_and_reaches_every_comparison():
    """toy_floor is one decade above exact_floor of the toy's data (both powers of ten), the default of
    every function that reads errors against a floor; toy_claims hands its floor to the linear-rate
    check as well (it did not: the rate read a typed default)."""
    prob, _ = studies.focus.toy_panels(rounds=2, local_steps=3)
    floor = studies.focus.toy_floor()
    assert floor == pytest.approx(10 * studies.focus.exact_floor(prob), rel=1e-12) and floor == 1e-10
    assert np.log10(floor) == round(np.log10(floor))                     # a power of ten, exactly
    t = np.arange(500)
    # fast to 1e-8 (round 175), then slower: above 1e-6 the rate is kept, above the derived floor it is not
    bent = np.where(t <= 175, 0.9 ** t, 0.9 ** 175 * 0.97 ** (t - 175))
    curves = {"FOCUS": lambda k: np.maximum(bent * (1 + 0.01 * k), 1e-14), "SCAFFOLD": 0.8 ** t,
              "FedAvg": 1e-4 + 0.9 ** t, "FedAU": 1e-4 + 0.9 ** t, "MIFA": 1e-4 + 0.9 ** t}
    frame = _toy_frame(curves)
    h = studies.focus.toy_curves(frame)[(PANELS[0], 0, "FOCUS")]
    assert h["error"].min() == floor                          # clipped at the derived floor by default
    assert studies.focus.rate_kept(h) == studies.focus.rate_kept(h, floor) < 0.5
    assert studies.focus.rate_kept(h, 1e-6) == pytest.approx(1.0)
    rows = {r.claim: r for r in studies.focus.toy_claims(frame, [0, 1], floor=1e-6)
            if r.context["panel"] == PANELS[0]}
    linear = rows["FOCUS converges linearly: its log10 error falls in the late half of its descent to the "
                  "floor at least 0.5 times as fast as in the early half (1 for a linear rate)"].check
    assert linear.diffs == pytest.approx((0, 0), abs=1e-6) and linear.verdict == "holds"  # the rows' floor
    default = {r.claim: r for r in studies.focus.toy_claims(frame, [0, 1]) if r.context["panel"] == PANELS[0]}
    assert default[linear_claim := next(iter(c for c in default if c.startswith("FOCUS converges linearly")))
                   ].check.verdict != "holds" and linear_claim in rows


def test_fig4_claims_compare_focus_with_its_figures_algorithms_and_the_added_methods_only_beyond_the_paper():
    """Sec. 5's "outperforms the other algorithms" speaks of Fig. 4's algorithms (FedAvg, FedAU, SCAFFOLD,
    MIFA; ProxSkip not run): the methods notebook 04 adds are in no claim row, only in toy_beyond's
    table, with the same checks (here FedSUM* ties FOCUS at the floor and gets there first, FedSUM-CR*
    plateaus)."""
    t = np.arange(300)
    linear = {k: 0.85 ** t * (1 + 0.01 * k) for k in (0, 1)}
    curves = {"FOCUS": lambda k: linear[k], "SCAFFOLD": 1e-4 + 0.9 ** t, "FedAvg": 1e-4 + 0.9 ** t,
              "FedAU": 1e-4 + 0.9 ** t, "MIFA": 1e-4 + 0.9 ** t, "FedSUM*": 0.8 ** t,
              "FedSUM-CR*": 1e-3 + 0.9 ** t}
    frame = _toy_frame(curves)
    rows = studies.focus.toy_claims(frame, [0, 1], "s")
    assert not any(m in r.claim or m in r.check.reason or m in r.check.numbers
                   for r in rows for m in studies.focus.TOY_ADDED)
    assert {r.claim.split(" (communication")[0] + (" (communication" if "(communication" in r.claim else "")
            for r in rows if r.claim.startswith(("FOCUS ends", "FOCUS converges faster"))} == {
        f"FOCUS ends with a lower error than {GROUP}",
        f"FOCUS converges faster than {GROUP} (rounds)",
        f"FOCUS converges faster than {GROUP} (communication"}
    beyond = studies.focus.toy_beyond(frame, [0, 1])
    assert len(beyond) == len(PANELS) * len(studies.focus.TOY_ADDED) * len(studies.focus.TOY_CHECKS)
    assert set(beyond["method"]) == set(studies.focus.TOY_ADDED)
    got = beyond.set_index(["panel", "method", "check"])["verdict"]
    lower, faster, _ = studies.focus.TOY_CHECKS
    assert got[PANELS[0], "FedSUM*", lower] == "equivalent"            # both at the floor
    assert got[PANELS[0], "FedSUM*", faster] == "does not hold"       # it is faster than FOCUS
    assert got[PANELS[1], "FedSUM-CR*", lower] == "holds"
    # the same comparison as a claim row would make against that method alone
    one = studies.focus._toy_checks(studies.focus.toy_curves(frame), PANELS[1], [0, 1], ["FedSUM-CR*"])[0]
    row = beyond.set_index(["panel", "method", "check"]).loc[(PANELS[1], "FedSUM-CR*", lower)]
    assert (row["effect"], row["ci_low"], row["seeds"]) == (one.effect, one.ci_low, one.seeds)


def test_the_passive_panel_is_the_authors_markov_every_client_at_p_0_2_independently():
    """The authors' "markov" (Fig. 9's passive panel) steps each client's state by the transition
    matrix [[0.8, 0.2], [0.8, 0.2]]: its rows are equal, so whatever the state, the next is 1 with
    probability 0.2, independently of the past. fedlib's own two-state chain (the ``markov`` kind,
    FedAU's) at stationary p = 0.2 and on-rate 0.2 has that matrix (P(off -> on) = 0.2, P(on -> off)
    = 0.2 (1 / 0.2 - 1) = 0.8); its schedule and our runs' Bernoulli schedules both give that law;
    the panel's runs are the other patterns' runs in all else."""
    from fedlib import participation
    f = studies.focus
    T, N = 4000, 32
    chain = participation.build("markov", N, T, seed=7, p=f.PASSIVE_P, on_rate=f.PASSIVE_P).active
    s = f.focus_setup("quick")
    passive = s.configs([0, 1], passive=True)
    assert len(passive) == 2 * len(f.METHODS) and {v[0] for v in passive.values()} == {f.PASSIVE}
    normal = {(v[1], v[2]): c for c, v in s.configs([0, 1]).items() if v[0] == "bern"}
    for c, (_, k, m) in passive.items():
        assert c.participation == "bernoulli" and dict(c.participation_args) == {"p": f.PASSIVE_P}
        assert c.replace(participation_args=normal[(k, m)].participation_args) == normal[(k, m)]
    ours = next(iter(passive)).replace(rounds=T).schedule(num_clients=N).active
    # 4000 x 32 draws: the rate within 0.01 of 0.2 is > 14 standard errors (sqrt(0.16 / 128,000));
    # P(present | present the round before) as well (about 25,600 pairs: > 6 standard errors), and
    # P(present | absent the round before) (about 102,000 pairs: within 0.01 is > 7 standard errors)
    for m in (chain, ours):
        assert abs(m.mean() - f.PASSIVE_P) < 0.01
        prev, nxt = m[:-1].ravel(), m[1:].ravel()
        assert abs(nxt[prev == 1].mean() - f.PASSIVE_P) < 0.015
        assert abs(nxt[prev == 0].mean() - f.PASSIVE_P) < 0.01
    assert s.pattern_note(f.PASSIVE).startswith("the authors' \"markov\" (Fig. 9's passive panel")


def test_methods_not_all_stored_are_not_tested_rows_counting_their_runs(tmp_path):
    """With computing off a notebook leaves out a method whose runs under a pattern the store does
    not all hold; its comparisons there are "not tested" rows saying how many are in, and the
    comparisons without it are made."""
    f = studies.focus
    s = f.focus_setup("quick")
    labels = {**s.configs([0, 1]), **s.configs([0, 1], passive=True)}
    pending = s.pending(labels, tmp_path)                       # an empty store: every run missing
    assert set(pending) == {"bern", "uniform (4 of 32)", f.PASSIVE}
    assert set(pending["bern"]) == set(f.METHODS) and set(pending["uniform (4 of 32)"]) == set(f.METHODS) - {
        f.RIVALS["the authors' variants"][1]}                  # under uniform it is SCAFFOLD's run
    assert pending["bern"]["FedAU"] == ("0 of the 2 runs of FedAU under bern are in the quick store; its "
                                        "comparisons are checked once all are")
    assert not any(tmp_path.iterdir())                           # counting writes nothing
    with pytest.raises(InputError, match=r"^pending: keys must be method labels \('SG-FOCUS', "):
        s.claims(pd.DataFrame(), {}, "bern", [0, 1], pending=pending)     # all patterns, not one
    with pytest.raises(InputError, match=r"^pending: keys must be patterns \('bern', "):
        s.horizon_check(pd.DataFrame(), {}, [], [0, 1], 400, pending={"FedAU": "x"})
    absent = tmp_path / "no_store"
    assert s.pending(labels, absent) == pending and not absent.exists()     # only read: not created
    for bad in ([*labels], {c: "bern" for c in labels}, {"bern": (0, 0, "FedAU")}):
        with pytest.raises(InputError, match=r"labels: expected a dict config -> \(pattern, seed, method\)"):
            s.pending(bad, tmp_path)
    # rows: the group with a pending method is not tested, with its reason; the other is compared
    code = f.RIVALS["the authors' variants"][1]
    methods = [m for m in f.METHODS if m != code]
    rows = [{"pattern": "bern", "seed": k, "method": m, "outcome": "ok",
             "final_acc": (0.9 if m == "SG-FOCUS" else 0.8) + 0.01 * k} for k in (0, 1, 2) for m in methods]
    summary = pd.DataFrame(rows).set_index(["pattern", "seed", "method"])
    curves = {i: pd.DataFrame({"round": [0, 25, 50], "test_acc": [0.1, a * 0.99, a]})
              for i, a in summary["final_acc"].items()}
    why, code_group = {code: "3 of the 5 runs of it are in"}, "the authors' variants"
    got = {r.claim: r.check for r in s.claims(summary, curves, "bern", [0, 1, 2], pending=why)}
    assert got["SG-FOCUS has higher test accuracy than FedAU and SCAFFOLD"].verdict == "holds"
    for what in ("has higher test accuracy", "converges faster"):
        v = got[f"SG-FOCUS {what} than {f.rivals_words(code_group)}"]
        assert v.verdict == "not tested" and "3 of the 5 runs of it are in" in v.reason
    # the paper profile's rows name its own model
    assert "App. F.1's three-layer CNN" in studies.focus.focus_setup("paper").setting
    assert "FedSUM's small CNN" in s.setting


def test_uniform_rows_say_the_pattern_is_the_authors_codes_option():
    """App. F.1: "we do not restrict the number of participating clients in each round"; the
    "uniform" pattern (4 of 32) comes from the authors' code, and its rows say so in their setting;
    the "bern" rows, the paper's own test, do not."""
    s = studies.focus.focus_setup("quick")
    uniform = next(p for p, (kind, _) in s.patterns.items() if kind == "uniform")
    rounds = np.arange(0, 1001, 25)
    summary, curves = [], {}
    for p in s.patterns:
        for k in (0, 1, 2):
            for m in studies.focus.METHODS:
                acc = (0.8 if m == "SG-FOCUS" else 0.7) + 0.001 * k
                summary.append({"pattern": p, "seed": k, "method": m, "final_acc": acc, "outcome": "ok"})
                curves[(p, k, m)] = pd.DataFrame({"round": rounds,
                                                  "test_acc": np.where(rounds >= 100, acc, 0.1)})
    summary = pd.DataFrame(summary).set_index(["pattern", "seed", "method"])
    rows = {p: s.claims(summary, curves, p, [0, 1, 2]) for p in s.patterns}
    assert all(r.setting == s.setting for r in rows["bern"])
    note = ("the pattern is the authors' code's option, not a panel of Fig. 9; the paper states "
            "unrestricted participation (App. F.1); the authors' SCAFFOLD is SCAFFOLD here (their fixed S, "
            "4, is the number that arrive every round)")
    assert s.pattern_note(uniform) == note and s.pattern_note("bern") == ""
    assert len(rows[uniform]) == 4 and all(r.setting == f"{s.setting}; {note}" for r in rows[uniform])
    assert rows[uniform][0].check.verdict == "holds"


def test_fig8_label_row_counts_the_clients_whose_two_largest_classes_hold_most_of_their_data():
    """App. F.1 on Fig. 8, "each client mainly covers 1-2 classes": per client the share of its two
    largest classes against MAINLY, counted over the clients at the rate ROUGHLY_EACH (the event
    count's Clopper-Pearson interval), exact on one split."""
    from fedlib import claims
    s = studies.focus.focus_setup("quick")
    two = np.zeros((32, 10))
    two[:, 0], two[:, 1], two[:, 2:] = 50, 40, 10 / 8                        # 90% in two classes: it counts
    row = s.label_claim(two)
    assert (row.where, row.quote) == ("App. F.1, Fig. 8", studies.focus.LABEL_QUOTE)
    assert row.check.verdict == "holds" and row.check.seeds == 32 and row.check.effect == 1.0
    assert row.check.threshold == studies.focus.ROUGHLY_EACH == 0.75
    assert "32 of 32 clients" in row.check.numbers and "least share 0.900" in row.check.numbers
    assert claims.event_seeds(studies.focus.ROUGHLY_EACH)[0] == 13            # 32 clients can decide it
    assert "seed 0" in row.setting and "N = 32 clients" in row.setting and row.context == {"pattern": ""}
    # our split of the stand-in, by another procedure than Fig. 8's: the row says it checks ours
    assert "the same Dirichlet prior as Fig. 8's, another procedure; MNIST: the row checks our split, not " \
        "the paper's" in row.setting and "drawn as Fig. 8's is" not in row.setting
    assert row.claim.startswith("on our split of MNIST (a check of the stand-in split, not of Fig. 8's)")
    paper = studies.focus.focus_setup("paper").label_claim(two)
    assert paper.claim.startswith("on our split of CIFAR-10 (not Fig. 8's own split)")
    spread = two.copy()
    spread[:20] = 10                                                 # 20 clients: every class evenly
    low = s.label_claim(spread)
    assert low.check.verdict == "does not hold" and low.check.effect == pytest.approx(12 / 32)
    assert "in 12 of 32 clients" in low.check.reason and "seeds" not in low.check.reason
    with pytest.raises(ValueError, match="^counts: must be clients x classes"):
        s.label_claim(np.zeros((4, 10)))
    nan = two.copy()
    nan[3, 0] = np.nan                                  # a client whose count is unknown is not counted
    for bad in (nan, np.where(two > 0, np.inf, 0.0), [["a", "b"]]):
        with pytest.raises(ValueError, match="^counts: must be clients x classes"):
            s.label_claim(bad)


def test_exact_floor_is_float64_roundings_bound_on_the_toys_data():
    """2 kappa_2(H) gamma_m ||H|_abs|| / ||H|| for the longest sums the methods' H_bar rests on (a
    client's rows, then the N clients), float64's unit roundoff, rounded up to a power of ten:
    recomputed here in numpy, far below FedAvg's plateau, far above one float64's rounding."""
    prob, _ = studies.focus.toy_panels(rounds=2, local_steps=3)
    floor = studies.focus.exact_floor(prob)
    u = np.finfo(np.float64).eps / 2
    A, owner = prob.A_rows.numpy(), prob.client_of_row.numpy()
    counts = np.bincount(owner)
    m = counts.max() + len(counts)
    w = prob.weights.numpy()
    habs = sum(w[i] * np.abs(A[owner == i]).T @ np.abs(A[owner == i]) for i in range(len(counts)))
    H = prob.H_bar.numpy()
    bound = 2 * np.linalg.cond(H) * m * u / (1 - m * u) * np.linalg.norm(habs, 2) / np.linalg.norm(H, 2)
    assert bound <= floor < 10 * bound and np.log10(floor) == round(np.log10(floor))
    assert np.linalg.norm(habs, 2) > np.linalg.norm(H, 2)       # |A|^T |A| bounds the rounding, not H
    assert 100 * np.finfo(np.float64).eps < floor < 1e-6


def test_exact_convergence_rows_compare_the_last_error_with_the_floor():
    """FOCUS's row holds where its last error lies at the floor in every seed and not where one seed
    stops above it; FedAvg's row holds for a plateau and is equivalent where FedAvg reaches the floor;
    SCAFFOLD gets no row (the paper never says it fails to converge exactly)."""
    t = np.arange(300)
    floor = 1e-11
    curves = {"FOCUS": lambda k: 0.85 ** t * (1 + 0.01 * k), "SCAFFOLD": 1e-3 + 0.9 ** t,
              "FedAvg": 1e-4 + 0.9 ** t}
    rows = studies.focus.toy_exact_claims(_toy_frame(curves, seeds=(0, 1, 2)), [0, 1, 2], floor, "s")
    assert len(rows) == 2 * len(PANELS) and not any("SCAFFOLD" in r.claim for r in rows)
    got = {(r.context["panel"], r.claim.split(":")[0]): r for r in rows}
    focus = got[PANELS[0], "FOCUS converges exactly"]
    assert focus.check.verdict == "holds" and focus.check.effect == 0
    assert focus.where == "Sec. 5, Fig. 4; Sec. 5.1"
    assert got[PANELS[1], "FedAvg does not converge exactly"].claim.endswith(studies.focus.FEDAVG_LOST)
    assert "are lost from the text" in studies.focus.FEDAVG_LOST        # the quote's lost symbols, marked
    fedavg = got[PANELS[1], "FedAvg does not converge exactly"].check
    assert fedavg.verdict == "holds" and fedavg.effect == pytest.approx(-4 - np.log10(floor))
    # the last round decides: FOCUS stopped above the floor on one seed, FedAvg reached it
    stuck = {"FOCUS": lambda k: np.maximum(0.85 ** t, 1e-6 if k == 2 else 0), "SCAFFOLD": 0.9 ** t,
             "FedAvg": 0.8 ** t}
    rows = studies.focus.toy_exact_claims(_toy_frame(stuck, seeds=(0, 1, 2)), [0, 1, 2], floor)
    got = {r.claim.split(":")[0]: r.check for r in rows if r.context["panel"] == PANELS[0]}
    assert got["FOCUS converges exactly"].verdict != "holds"
    assert got["FOCUS converges exactly"].diffs == pytest.approx((0, 0, -5))
    assert got["FedAvg does not converge exactly"].verdict == "equivalent"


def test_app_f_on_cifar_10_is_not_tested_where_a_stand_in_runs():
    """App. F runs CIFAR-10 (App. F.1); the quick profile's MNIST stands in: App. F.2's comparison and
    App. F.1's reading of Fig. 8 are "not tested" rows on CIFAR-10 itself, none at the paper profile."""
    from fedlib import claims
    f = studies.focus
    comparison, split = f.focus_setup("quick").unrun_claims()
    assert (comparison.where, comparison.quote, split.quote) == ("App. F.2, Fig. 9", f.QUOTE, f.LABEL_QUOTE)
    for r in (comparison, split):
        assert r.check.verdict == claims.NOT_TESTED and r.check.seeds == 0 and "CIFAR-10" in r.claim
        assert "the quick profile runs MNIST, standing in for CIFAR-10: CIFAR-10 cannot be had" in \
            r.check.reason
    assert comparison.context == {"pattern": "bern"} and "FedAU and SCAFFOLD" in comparison.claim
    assert f.focus_setup("paper").unrun_claims() == []
    assert len(f.focus_setup("paper", stand_in_rounds=2).unrun_claims()) == 2     # random stand-in data


def test_setup_arguments_and_seeds_are_refused_when_they_are_not_what_a_run_can_take():
    """A setup's seed and stand-in rounds, the sensitivity panel's rates, the pilot's switch flag and
    the seeds compared (each once) are checked, naming the field, where they were taken as given."""
    f = studies.focus
    s = f.focus_setup("smoke")
    for dataset in ("bogus", None, 5):
        with pytest.raises(InputError, match="^dataset: must be one of 'mnist', 'fashion_mnist'"):
            s.pilot_configs(dataset)
    with pytest.raises(InputError, match="^label: must be a string"):
        s.pilot_configs("fashion_mnist", label=5)
    for eta in (math.nan, -1e-3, 0, math.inf, True, "1e-3"):
        with pytest.raises(InputError, match=r"^etas\[0\]: must be a (real|finite) number > 0"):
            s.sensitivity_configs(etas=[eta])
    checks = pd.DataFrame({"dataset": ["a", "b"], "rival": ["r", "r"], "check": ["c", "c"],
                           "seeds needed": [5, 3]})
    assert f.pilot_decision(checks, "a", "b", True, at_least=1)[1] is True
    for flag in ("no", math.nan, 1):
        with pytest.raises(InputError, match="^other_ok: must be True or False"):
            f.pilot_decision(checks, "a", "b", flag, at_least=1)
    summary = pd.DataFrame({"pattern": ["bern"] * 2, "seed": [0, 0], "method": ["SG-FOCUS", "FedAU"],
                            "outcome": ["ok"] * 2, "final_acc": [0.9, 0.8]}).set_index(f.NAMES)
    with pytest.raises(InputError, match="^seeds: each seed once"):
        s.claims(summary, {}, "bern", [0, 0, 1])
