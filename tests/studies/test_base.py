"""fedlib.studies.base: the one shape of a paper's study, its registry and the runs its claims read."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from fedlib import claims, studies
from fedlib._validate import InputError
from fedlib.analysis import GridSearch
from fedlib.claims import ClaimRow
from fedlib.studies import base, real

WIN = claims.paired({0: 1.0, 1: 1.1, 2: 1.0}, {0: 0.0, 1: 0.0, 2: 0.1})


def _curve(reach: int, rounds: int = 40) -> pd.DataFrame:
    """A test-accuracy curve that climbs from 0.1 to 0.9 by round ``reach`` and stays there."""
    r = np.arange(0, rounds + 1, 2)
    return pd.DataFrame({"round": r, "test_acc": np.clip(r / reach, 0, 1) * 0.8 + 0.1, "loss": 1.0 / (1 + r)})


def _frames(acc: dict, reach: dict, seeds=(0, 1, 2), **kw) -> studies.Frames:
    """Frames of runs by seed and method: ``acc[m]`` the final accuracy of every seed (a little
    noise per seed), ``reach[m]`` the round its curve reaches its plateau."""
    idx = pd.MultiIndex.from_tuples([(k, m) for k in seeds for m in acc], names=["seed", "method"])
    summary = pd.DataFrame({"final_acc": [acc[m] + 0.001 * k for k, m in idx]}, index=idx)
    curves = {(k, m): _curve(reach[m]) for k, m in idx}
    return studies.Frames(summary, curves, seeds, **kw)


def test_the_built_in_studies_are_registered_with_one_shape():
    assert studies.names()[:5] == ("amplified", "fedacs", "fedsum", "focus", "real")
    papers = {n: studies.get(n).paper for n in real.ASKED}
    assert papers == {"fedsum": "FedSUM", "focus": "FOCUS", "fedacs": "FedACS", "amplified": "Wang & Ji 2022"}
    for name in studies.names():
        s = studies.get(name)
        setup = s.setup("smoke")
        assert setup.profile == "smoke" and s.notebooks, name
    assert studies.get("fedsum").headline is studies.fedsum.headline_claims
    with pytest.raises(ValueError, match="^name: must be one of 'amplified', .*; got 'fedsun'"):
        studies.get("fedsun")


def test_frames_read_runs_by_seed_and_method_under_a_prefix_or_a_key():
    idx = pd.MultiIndex.from_tuples([("P1", k, m) for k in (0, 1) for m in ("A", "B")],
                                    names=["pattern", "seed", "method"])
    summary = pd.DataFrame({"final_acc": [0.5, 0.4, 0.6, 0.3], "drop": [1, 2, 3, 4]}, index=idx)
    curves = {i: f"curve {i}" for i in idx}
    f = studies.Frames(summary, curves, [0, 1], prefix=("P1",))
    assert f.values("A") == {0: 0.5, 1: 0.6} and f.values("B", "drop") == {0: 2, 1: 4}
    assert f.hist("B") == {0: "curve ('P1', 0, 'B')", 1: "curve ('P1', 1, 'B')"}
    other = studies.Frames(summary, curves, (1,), key=lambda k, _m: ("P1", k, "A"))  # labelled otherwise
    assert other.values("anything") == {1: 0.6}
    with pytest.raises(ValueError, match="^seeds: no seed"):
        studies.Frames(summary, curves, [])
    # how a comparison names a run with no value, and in rounds to a target (which may never come)
    assert (f.missing, f.missing_or_never) == ("failed", "failed or never")
    aside = replace(f, missing="failed or set aside")
    assert aside.missing_or_never == "failed, set aside or never"
    for bad in ("", "  ", None):
        with pytest.raises(ValueError, match="^missing: must be a non-empty text"):
            studies.Frames(summary, curves, [0], missing=bad)


def test_frames_name_a_missing_run_a_missing_column_and_an_accuracy_that_is_not_a_fraction():
    """A seed with no run of the method, in the summary or the curves, is one error naming the seed
    and the runs held, not a pandas KeyError from inside a claim; so is a column the summary lacks and
    an accuracy given in percent or as inf (NaN stays: a run that failed)."""
    f = _frames({"A": 0.9, "B": 0.8}, {"A": 10, "B": 20}, seeds=(0, 1))
    wide = replace(f, seeds=(0, 1, 7))
    with pytest.raises(ValueError, match=r"^seeds: the summary has no run of 'A' at seed 7 \(looked up as "
                                         r"\(7, 'A'\)\); it holds \(0, 'A'\)"):
        wide.values("A")
    with pytest.raises(ValueError, match="^seeds: the curves has no run of 'B' at seed 7"):
        wide.hist("B")
    with pytest.raises(ValueError, match="^seeds: the summary has no run of 'C' at seeds 0, 1"):
        f.values("C")
    with pytest.raises(ValueError, match=r"^column: must be a column of the summary \(final_acc\); got"):
        f.values("A", "drop")
    for bad in (91.0, np.inf, -0.1):
        s = f.summary.copy()
        s.loc[(1, "B"), "final_acc"] = bad
        with pytest.raises(ValueError, match=r"^summary: 'final_acc' of 'B': an accuracy is a .* seed 1"):
            replace(f, summary=s).values("B")
    s = f.summary.copy()
    s.loc[(1, "B"), "final_acc"] = np.nan
    assert np.isnan(replace(f, summary=s).values("B")[1])
    lost = replace(f, key=lambda k, m: {0: (0, m)}[k])             # a key that cannot label seed 1
    with pytest.raises(ValueError, match="^method: 'A' has no run label at the seeds"):
        lost.values("A")


def test_a_papers_headline_claims_read_any_runs_of_its_methods():
    """FedACS's Sec. 6 on runs labelled by seed and method (notebook 09's shape): FedACS ahead of
    every rival of its claim that ran -- for "outperforms all benchmark methods", Sec. 6's six
    benchmarks only, not the other methods a notebook runs beside them -- each row naming the paper."""
    f = _frames({"FedACS": 0.9, "FedAvg": 0.8, "FedVARP": 0.8, "MIFA": 0.85},
                {"FedACS": 10, "FedAvg": 30, "FedVARP": 30, "MIFA": 20}, eval_every=2,
                methods=("FedACS", "FedAvg", "FedVARP", "MIFA"))
    rows = studies.get("fedacs").claims(f)
    assert [r.paper for r in rows] == ["FedACS", "FedACS"] and all(isinstance(r, ClaimRow) for r in rows)
    speed, acc = rows
    assert speed.claim.startswith("FedACS needs fewer rounds to 70% test accuracy than FedAvg, FedVARP (")
    assert speed.check.verdict == claims.HOLDS and speed.where == studies.fedacs.QUOTES["rounds"].where
    assert acc.claim == ("FedACS ends with a higher late-window test accuracy than FedAvg, FedVARP (the "
                         "benchmarks of its Sec. 6 that run here)")
    assert acc.check.verdict == claims.HOLDS and "MIFA" not in acc.check.numbers + acc.check.reason
    ahead = _frames({"FedACS": 0.9, "FedAvg": 0.8, "FedVARP": 0.95, "MIFA": 0.95},
                    {"FedACS": 10, "FedAvg": 30, "FedVARP": 10, "MIFA": 10},
                    methods=("FedACS", "FedAvg", "FedVARP", "MIFA"))
    assert studies.get("fedacs").claims(ahead)[1].check.verdict == claims.NOT_HOLDS
    # a method that is not one of Sec. 6's benchmarks does not enter "outperforms all benchmark methods"
    beside = _frames({"FedACS": 0.9, "FedAvg": 0.8, "MIFA": 0.95}, {"FedACS": 10, "FedAvg": 30, "MIFA": 10},
                     methods=("FedACS", "FedAvg", "MIFA"))
    assert studies.get("fedacs").claims(beside)[1].check.verdict == claims.HOLDS
    # a rival marked as run outside its paper's settings that failed makes the comparison "not tested"
    broken = replace(f, curves={**f.curves, (1, "FedAvg"): None},
                     off_rule={"FedAvg": "a rate its paper would not use"})
    assert studies.get("fedacs").claims(broken)[0].check.verdict == claims.NOT_TESTED
    # Wang & Ji's "best": amplification against every other method of Fig. 1; the wait baselines not
    # run make the claim "not tested" (it cannot hold on the pair alone), each rival's verdict listed
    pair = _frames({"amp": 0.7, "plain": 0.6}, {"amp": 10, "plain": 10})
    assert pair.has("amp") and not pair.has("wait-full")
    labelled = replace(pair, key=lambda k, m: (k, {"amp": "amp", "plain": "plain"}[m]))  # 09's shape
    assert labelled.has("plain") and not labelled.has("wait-full")
    (row,) = studies.get("amplified").claims(pair, amplified="amp", plain="plain", warmup="a warm-up")
    assert row.claim == ("after a warm-up, amp ends above every other method of Fig. 1 (plain, "
                         "wait-minibatch, wait-full; wait-minibatch, wait-full not run here)")
    assert row.check.verdict == claims.NOT_TESTED and row.quote == studies.amplified.QUOTES["best"]
    assert "per rival: plain: holds; wait-minibatch: not tested; wait-full: not tested" in row.check.reason
    worse = _frames({"amp": 0.5, "plain": 0.6}, {"amp": 10, "plain": 10})
    (row,) = studies.get("amplified").claims(worse, amplified="amp", plain="plain")
    assert row.check.verdict == claims.NOT_HOLDS and row.check.effect < 0     # the pair decides: below
    waits = ("wait-minibatch", "wait-full")
    every = _frames({"amp": 0.7, "plain": 0.6, **dict.fromkeys(waits, 0.6)},
                    dict.fromkeys(("amp", "plain", *waits), 10))
    (row,) = studies.get("amplified").claims(every, amplified="amp", plain="plain")
    assert row.check.verdict == claims.HOLDS and row.claim.endswith("(plain, wait-minibatch, wait-full)")


def test_a_user_registers_a_study(monkeypatch):
    monkeypatch.setattr(base, "_STUDIES", dict(base._STUDIES))

    def headline(frames, **_):
        return [ClaimRow("Sec. 4", "ours is better", "A beats B",
                         claims.paired(frames.values("A"), frames.values("B")))]
    mine = studies.Study("mine", "Me et al. 2026", ("10_mine",), setup=lambda profile: profile,
                         methods=("FedAvg",), headline=headline)
    assert studies.register_study(mine) is mine and studies.get("mine") is mine and "mine" in studies.names()
    (row,) = studies.get("mine").claims(_frames({"A": 0.9, "B": 0.5}, {"A": 5, "B": 5}))
    assert row.paper == "Me et al. 2026" and row.check.verdict == claims.HOLDS
    with pytest.raises(ValueError, match="^study.name: 'mine' is already registered"):
        studies.register_study(mine)
    studies.register_study(replace(mine, paper="Me 2027"), replace=True)
    assert studies.get("mine").paper == "Me 2027"
    with pytest.raises(ValueError, match="^study: must be a fedlib.studies.Study"):
        studies.register_study("mine")
    with pytest.raises(ValueError, match="^study 'real': has no headline claims"):
        studies.get("real").claims(_frames({"A": 0.9}, {"A": 5}))


def test_notebook_09_asks_each_paper_through_its_registered_study(monkeypatch):
    """real.claims reads no study's internals: replace each registered study's headline and its
    rows are what notebook 09 reports, with this profile's setting, the paper, and the causes of
    the rows whose methods another paper tunes."""
    seen = {}

    def stub(name):
        def headline(frames, **kw):
            seen[name] = (frames, kw)
            return [ClaimRow("Sec. 1", "it is better", f"{name}'s claim", WIN)]
        return headline
    for name in real.ASKED:
        monkeypatch.setitem(base._STUDIES, name, replace(studies.get(name), headline=stub(name)))
    s = real.real_setup("quick", "traces/sessions_100.txt")
    searches = {label: GridSearch({0.01: 0.5, 0.001: 0.4, 0.0001: 0.6}, 0.001, (), False)
                for label in real.AMPLIFIED}
    calibration = pd.DataFrame({"seed": 0, "method": ["FedACS", "FedAvg"], "App. I.2 rate / shared": 1.0})
    rows = s.claims(pd.DataFrame(), {}, [0, 1, 2], per_round=11.6, rates=(0.1, 1.0),
                    own_summary=pd.DataFrame(), own_curves={}, searches=searches, calibration=calibration)
    assert [r.claim for r in rows] == [f"{n}'s claim" for n in real.ASKED]
    assert [r.paper for r in rows] == ["FedSUM", "FOCUS", "FedACS", "Wang & Ji 2022"]
    assert rows[0].setting == s.setting
    assert rows[2].setting == (f"{s.setting}; FedACS App. I.2's rule: its calibration gives every method "
                               "FedAvg's rate here (each upload arrives, K = 5 for all)")
    # FOCUS's and Wang & Ji's rows name their paper's rule in the setting, which every verdict keeps
    assert rows[1].setting.startswith(f"{s.setting}; FOCUS App. F's rule: SG-FOCUS, FedAU and SCAFFOLD at "
                                      f"one constant eta = {studies.focus.ETA:g}")
    assert rows[3].setting.startswith(f"{s.setting}; Wang & Ji's rule: each phase at the constant rate its "
                                      "own grid picks, 36 rounds after the warm-up (3 cycles of P = 12 "
                                      "rounds, 3 amplifications), ")
    assert "of the authors' 596 cycles" in rows[3].setting         # their horizon beside ours
    assert rows[0].cause == rows[2].cause == ""
    assert rows[1].cause.startswith("SG-FOCUS, FedAU and SCAFFOLD at FOCUS App. F's rule: one constant rate "
                                    f"eta = {studies.focus.ETA:g} for all three")
    assert rows[3].cause.startswith("FOCUS's horizon rule (late-window training loss above")  # why not here
    assert ("each phase at the constant rate its own grid picks (Wang & Ji Sec. 6: a grid of (1, 0.1, 0.01, "
            "0.001, 0.0001) times the initial rate, here the warm-up's eta_0 = 0.1)") in rows[3].cause
    assert "picks amplification (eta=10, P=1 day): 0.001; no amplification (eta=1): 0.001" in rows[3].cause
    assert "tuning seeds 100, 101 (never evaluated)" in rows[3].cause
    # FedSUM's and FedACS's claims read the shared-rate runs, FOCUS's and Wang & Ji's the runs at their
    # own rates, found under their own labels
    for name in ("fedsum", "fedacs"):
        frames = seen[name][0]
        assert frames.methods == tuple(real.METHODS)
        assert set(frames.off_rule) == {*real.METHODS, *real.AMPLIFIED}
        assert (frames.per_round, frames.eval_every, frames.seeds) == (12, s.eval_every, (0, 1, 2))
    frames, kw = seen["amplified"]
    assert kw == {"amplified": "amplification (eta=10, P=1 day)", "plain": "no amplification (eta=1)",
                  "warmup": "a 4-day FedAvg warm-up"}
    assert frames is seen["focus"][0] and not frames.off_rule
    amp = "amplification (eta=10, P=1 day)"
    assert frames.at(1, amp) == (1, f"{amp} at its grid rate")
    assert frames.at(2, "SCAFFOLD") == (2, "SCAFFOLD at FOCUS's eta")
    # FedSUM's methods are marked with App. H's rule at this profile's batch and K
    assert "batch 32 instead of 128, K = 5, T = 84" in seen["fedsum"][0].off_rule["FedSUM"]


@pytest.mark.parametrize("factory, takes_seed", [
    ("focus.focus_setup", True), ("amplified.amplified_setup", True), ("fedacs.fedacs_setup", True),
    ("fedsum.fedsum_setup", False)])
def test_every_setup_refuses_a_seed_or_stand_in_rounds_a_run_cannot_take(factory, takes_seed):
    """A setup's seed (-1, 1.5, True, None, "3", beyond 64 bits) and stand-in rounds (negative,
    fractional, a bool, a string) are refused naming the field (``notebook.check_seed``,
    ``check_stand_in``), where they went into the configs as given."""
    module, name = factory.split(".")
    make = getattr(getattr(studies, module), name)
    if takes_seed:
        for seed in (-1, 1.5, True, None, "3", 2 ** 70):
            with pytest.raises(InputError, match=r"^seed: must be an integer in \[0, 2\*\*63\)"):
                make("smoke", seed=seed)
        assert make("smoke", seed=np.int64(3)).seed == 3
    for rounds in (-5, 2.5, True, "3"):
        with pytest.raises(InputError, match=r"^stand_in_rounds: must be an integer >= 0"):
            make("smoke", stand_in_rounds=rounds)


def test_the_studies_methods_name_a_wrong_typed_argument():
    """The setups' public methods are fedlib's boundary too (guard_module(methods=True)): a wrong type
    that the method's own checks do not look at is one error naming the argument and its hint, not a
    TypeError or AttributeError from inside pandas."""
    from fedlib.studies import focus
    s = focus.focus_setup("smoke")
    assert getattr(focus.FocusSetup.horizon_check, "__fedlib_guarded__", False)
    assert getattr(studies.Frames.values, "__fedlib_guarded__", False)
    with pytest.raises(ValueError, match=r"^df: must be a pandas DataFrame \(argument of "
                                         r"studies\.focus\.FocusSetup\.horizon_check\), got int 5"):
        s.horizon_check(5, {}, [], [0], 10)
    with pytest.raises(ValueError, match=r"^cases: must be a list \(argument of "
                                         r"studies\.focus\.FocusSetup\.plateau_table\), got str 'abc'"):
        focus.FocusSetup.plateau_table("abc")                      # a static method, guarded as well
