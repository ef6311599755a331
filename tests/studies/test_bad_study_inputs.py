"""Bad inputs to the studies' setups and helpers, as a fresh-eyed trial found them (2026-12-01):
each was accepted and gave a result that looked valid (a phantom run set aside, a tuning seed
evaluated, an accuracy in percent, a seed counted twice, an unknown setting read as "static"), or
ended in a raw KeyError / ZeroDivisionError from inside. Each is now one error naming the argument."""

import math

import numpy as np
import pandas as pd
import pytest

from fedlib import claims, studies
from fedlib.config import ExperimentConfig
from fedlib.studies import amplified, fedacs, fedsum, real


def _frames(names=("A", "B"), seeds=(0, 1), **kw) -> studies.Frames:
    """Runs of the methods ``names`` at ``seeds`` that all learned (0.1 to 0.8 test accuracy)."""
    idx = pd.MultiIndex.from_tuples([(k, m) for k in seeds for m in names], names=["seed", "method"])
    summary = pd.DataFrame({"final_acc": 0.8, "final_loss": 0.3}, index=idx)
    curves = {i: pd.DataFrame({"round": [0, 10], "test_acc": [0.1, 0.8], "loss": [2.3, 0.3]}) for i in idx}
    return studies.Frames(summary, curves, seeds, **kw)


@pytest.fixture(scope="module")
def amp():
    return amplified.amplified_setup("smoke")


@pytest.fixture(scope="module")
def fac():
    return fedacs.fedacs_setup("smoke")


def test_runs_set_aside_must_be_runs_of_the_frames():
    """real.without: a seed the frames do not compare, or a method they do not hold, set aside
    nothing and added a phantom row (and marked the method off its rule)."""
    f = _frames()
    for runs, match in (({"A": ([7], "why")}, r"^runs: 'A''s seeds must be seeds of the frames \(\[0, 1\]\)"),
                        ({"Nope": ([0], "why")}, r"^runs: 'Nope' has no run at every seed"),
                        ({"A": ([], "why")}, r"^runs: 'A''s seeds must be seeds"),
                        ({"A": ([0], "")}, r"^runs: 'A' must say why"),
                        ({"A": [0]}, r"^runs: each method maps to \(its seeds, why\)")):
        with pytest.raises(ValueError, match=match):
            real.without(f, runs)
    out = real.without(f, {"A": ([1], "a reason")})
    assert len(out.summary) == len(f.summary) and np.isnan(out.values("A")[1])
    assert out.off_rule == {"A": "a reason"}


def test_the_horizon_rule_refuses_a_method_it_cannot_read():
    """real.early_phase: a typo, or a string read letter by letter, skipped the rule without a word."""
    f = _frames(names=("FedAU", "SG-FOCUS"), methods=("FedAU", "SG-FOCUS"))
    with pytest.raises(ValueError, match=r"^methods: 'FedAu' is not a method of the frames \('FedAU', "):
        real.early_phase(f, ("FedAu",), 84, 10_000)
    with pytest.raises(ValueError, match=r"^methods: must be a sequence of method labels"):
        real.early_phase(f, "FedAU", 84, 10_000)
    assert real.early_phase(f, ("FedAU",), 84, 10_000) == {}          # learned: nothing set aside


def test_a_calibration_ratio_that_is_not_a_number_is_refused():
    """real.off_calibration: NaN > tol is False, so a NaN ratio counted as "on App. I.2's rate"."""
    table = pd.DataFrame({"seed": [0, 1], "method": ["FedVARP"] * 2,
                          "App. I.2 rate / shared": [1.0, math.nan]})
    with pytest.raises(ValueError, match=r"^table: 'App\. I\.2 rate / shared' must be a positive finite "
                                         r"ratio; "
                                         r"'FedVARP' at seed 1 has nan"):
        real.off_calibration(table)
    with pytest.raises(ValueError, match=r"^table: must be RealSetup\.calibration's table; it lacks "
                                         r"'App\. I\.2 rate / shared'"):
        real.off_calibration(table.drop(columns="App. I.2 rate / shared"))


def test_fig1_and_fig2_configs_refuse_a_tuning_seed_and_a_rate_of_no_method(amp):
    """Issue 49's guard against scoring the runs that picked the rates held in compute_in_order but
    not in the configs the notebook builds itself."""
    tuning = amp.tuning_seeds[0]
    rates = amp.authors_rates()
    for call in (lambda: amp.fig1_configs(rates, [tuning]), lambda: amp.fig2_configs(0.01, [tuning])):
        with pytest.raises(ValueError, match=rf"^seeds: {tuning} also tune the rates"):
            call()
    with pytest.raises(ValueError, match=r"^seeds: each seed once"):
        amp.fig1_configs(rates, [0, 0])
    with pytest.raises(ValueError, match=r"^rates: 'typo' is not a method of Fig\. 1"):
        amp.fig1_configs({**rates, "typo": 0.1}, [0])
    assert len(amp.fig1_configs(rates, [0])) == len(amp.methods)


def test_fig2_claims_read_accuracies_as_fractions(amp):
    """Accuracies in percent gave verdicts; a run that is not in the values was a raw KeyError."""
    ok = {"outcome": "ok", "acc": 0.8, "loss": 0.4}
    vals2 = {(k, P): {**ok, "acc": 80.0} for k in (0, 1) for P in amp.P_values}
    with pytest.raises(ValueError, match=r"^vals2: P = \d+: an accuracy is a fraction .* seed 0 has 80\.0"):
        amp.fig2_claims({}, vals2, [0, 1], "best")
    with pytest.raises(ValueError, match=r"^values: no run at \(0, "):
        amp.fig2_claims({}, {}, [0, 1], "best")


def test_store_cost_needs_four_positive_seconds_and_distinct_seeds(amp):
    secs = (1.0, 0.5, 1.0, 2.0)
    for bad in ((1.0, 2.0, 3.0), (1.0, -2.0, 3.0, 4.0), (1.0, math.nan, 3.0, 4.0)):
        with pytest.raises(ValueError, match=r"^seconds: must be 4 positive seconds"):
            amp.store_cost([0], bad)
    with pytest.raises(ValueError, match=r"^seeds: each seed once"):
        amp.store_cost([0, 0], secs)
    with pytest.raises(ValueError, match=r"^extensions: must be an integer >= 0"):
        amp.store_cost([0], secs, extensions=-5)


def test_fedacs_environments_refuse_an_unknown_setting_and_a_mask_that_is_not_one(fac):
    """An unknown setting became the static one; a short mask gave fewer clients; a 0/1 int mask was
    read as column indices (a weak-half share of 1.31)."""
    split = fac.split((fac.datasets[0], "dynamic", None))
    weak = fac.weak_half(split)
    with pytest.raises(ValueError, match=r"^setting: must be one of 'dynamic', 'static', got 'nope'"):
        fac.environment("nope", weak)
    for bad in (weak[:3], weak.astype(int)):
        with pytest.raises(ValueError, match=r"^weak: must be a boolean mask of the \d+ clients"):
            fac.environment("dynamic", bad)
    with pytest.raises(ValueError, match=r"^split: must be a dict whose 'partition' is one of iid, "):
        fac.weak_half({"partition": "nope"})
    with pytest.raises(ValueError, match=r"^key: must be an environment"):
        fac.kind(("digits", "windy", None))
    assert fac.kind(("digits", "static", None)) == "static"
    assert fac.kind(("digits", "dynamic", 0.1)) == "alpha"
    with pytest.raises(ValueError, match=r"^lr: must be a finite number > 0"):
        fac.regime(math.nan, "same", 0)
    with pytest.raises(ValueError, match=r"^seed: must be an integer in \[0, 2\*\*63\)"):
        fac.regime(0.05, "same", -3)


def test_mechanism_refuses_an_integer_mask_and_swapped_configs():
    base = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=2,
                            problem_args={"num_clients": 4, "dim": 2, "seed": 0})
    sizes = np.array([10, 20, 30, 40])
    weak = np.array([True, True, False, False])
    with pytest.raises(ValueError, match=r"^weak: must be a boolean mask of the 4 clients"):
        fedacs.mechanism(base.replace(algorithm="fedacs"), base, weak.astype(int), sizes)
    with pytest.raises(ValueError, match=r"^config_fedacs: must be a config of 'fedacs', got one of"):
        fedacs.mechanism(base, base, weak, sizes)


def test_accuracy_targets_are_fractions():
    """A target of 70 gave a claim on "7000% test accuracy" and a table column "rounds for 7000%"."""
    f = _frames(names=("FedACS", "FedAvg"), methods=("FedACS", "FedAvg"))
    for bad in (70, -1.0, 1.0, math.nan, True):
        with pytest.raises(ValueError, match=r"^target: must be an accuracy in \(0, 1\), a fraction"):
            fedacs.headline_claims(f, target=bad)
    s = pd.DataFrame({"rounds to target": [10.0], "computation to target (local steps)": [50.0]},
                     index=pd.Index(["FedACS"], name="method"))
    with pytest.raises(ValueError, match=r"^targets: 'e''s target must be an accuracy in \(0, 1\)"):
        fedacs.paper_table({"e": s}, {"e": "MNIST"}, {"e": 70})
    with pytest.raises(ValueError, match=r"^names: no entry for environment 'e'"):
        fedacs.paper_table({"e": s}, {}, {"e": 0.7})
    for args in ((1.5, 0.5), (0.8, 0.5, 70), (True, 0.5)):
        with pytest.raises(ValueError, match=r"^(mnist_plateau|mnist_target): must be an accuracy"):
            fedacs.pilot_target(*args)


def test_fedsum_helpers_refuse_what_divided_by_zero_or_read_a_negative_rate_as_app_h():
    for call, match in ((lambda: fedsum.matched_product(0, 200), r"^local_steps: must be an integer >= 1"),
                        (lambda: fedsum.matched_product(5, -10), r"^rounds: must be an integer >= 1"),
                        (lambda: fedsum.matched_product(5, 200, digits=-1), r"^digits: must be an integer"),
                        (lambda: fedsum.delay_patterns(0, 4), r"^num_clients: must be an integer >= 1"),
                        (lambda: fedsum.delay_patterns(10, 20), r"^per_round: must be at most num_clients"),
                        (lambda: fedsum.off_rule(-0.01, -1.0, 128, 10, 2000), r"^eta_0: must be a finite"),
                        (lambda: fedsum.summed_step(0.01, 1.0, True, 2000), r"^local_steps: must be an int"),
                        (lambda: fedsum.pick_rates(pd.DataFrame(), {}, max_eta_g=math.nan),
                         r"^max_eta_g: must be a number > 0 \(inf: no cap\)")):
        with pytest.raises(ValueError, match=match):
            call()
    assert fedsum.matched_product(5, 200) == 0.0733                  # App. H's summed step at K = 5, T = 200


def test_a_seed_twice_is_refused_wherever_a_study_takes_seeds():
    """guard_study's ARG_CHECKS: a seed given twice counted one run twice (or merged it) in
    ablation_claims, remark_claims, delay_claims, outcome_table, store_cost, main_configs..."""
    pats = fedsum.delay_patterns(10, 2)
    with pytest.raises(ValueError, match=r"^seeds: each seed once .* 0 repeated in \[0, 0\]"):
        fedsum.delay_claims(pats, 10, 20, [0, 0])
    with pytest.raises(ValueError, match=r"^seeds: must be a non-empty list of non-negative integers, got "
                                         r"\[1\.7, 2\]"):
        fedsum.delay_claims(pats, 10, 20, [1.7, 2])
    with pytest.raises(ValueError, match=r"^seeds: must be a non-empty list"):
        amplified.AmplifiedSetup.outcome_table({}, {}, [])


def test_a_trend_over_one_p_is_not_tested():
    """Fig. 10's "a larger p is better" over a single p came out "equivalent"."""
    s = fedsum.fedsum_setup("smoke")
    seeds = [0, 1]
    idx = pd.MultiIndex.from_tuples([("MNIST", c, "FedSUM", k) for c in s.cases() for k in seeds],
                                    names=["dataset", "case", "method", "seed"])
    case_s = pd.DataFrame({"final_acc": 0.9}, index=idx)
    p_s = pd.DataFrame({"final_acc": [0.8, 0.81]},
                       index=pd.MultiIndex.from_tuples([("MNIST", 0.1, 0), ("MNIST", 0.1, 1)],
                                                       names=["dataset", "p", "seed"]))
    row = s.delay_claims(case_s, p_s, "MNIST", seeds)[1]
    assert row.check.verdict == claims.NOT_TESTED and "only p = 0.1 ran" in row.check.reason


def test_rounds_to_names_a_column_the_history_lacks():
    h = pd.DataFrame({"round": [0, 1, 2], "test_acc": [0.1, 0.5, 0.9]})
    with pytest.raises(ValueError, match=r"^x: 'model units' is not a column of the history \(columns: "):
        claims.rounds_to(h, 0.5, x="model units")


def test_a_dataset_a_table_a_metric_or_rates_of_the_wrong_kind_is_named(amp):
    """Raw KeyErrors and unpack errors from inside, now one error naming the argument."""
    s = fedsum.fedsum_setup("smoke")
    with pytest.raises(ValueError, match=r"^dataset: must be a dataset id .*, got 'MNIST' \(a name: "):
        s.dataset_name("MNIST")
    with pytest.raises(ValueError, match=r"^rates: must map each dataset of the profile"):
        s.main_configs({"mnist": (0.1,)}, ["P1"], [0])
    with pytest.raises(ValueError, match=r"^rates: .*\('digits'; its keys: 'mnsit'\), got None"):
        s.main_configs({"mnsit": (0.1, 1.0)}, ["P1"], [0])          # the typo named
    for bad, why in (("P1", "must be a non-empty list"), ([], "must be a non-empty list"),
                     (["P1", "P1"], "each pattern once")):            # a text iterated letter by letter,
        with pytest.raises(ValueError, match=rf"^patterns: {why}"):     # nothing, or one counted twice
            s.main_configs({"digits": (0.1, 1.0)}, bad, [0])
    with pytest.raises(ValueError, match=r"^table: must be one of 'Table 1 \(dynamic\)', .*, got 'Table 9'"):
        fedacs.beside_paper(pd.DataFrame(), "Table 9")
    with pytest.raises(ValueError, match=r"^metric: must be one of 'loss', 'test_acc', got 'nope'"):
        amp.late_window(pd.DataFrame(), amp.base(), "nope")
    q = real.real_setup("smoke")
    for bad in ((0.1,), (0.1, -1.0), (math.nan, 1.0), "ab"):
        with pytest.raises(ValueError, match=r"^rates: must be the shared rates \(eta_0, eta_g\)"):
            q.configs(bad, [0])
    with pytest.raises(ValueError, match=r"^per_seed: no seed's summary"):
        fedacs.seed_summary({})
    with pytest.raises(ValueError, match=r"^files: no trace file"):
        real.session_lengths({})
