"""fedlib.analysis: labelling sweep frames, finals, first reach of a target, the best grid cell."""

import numpy as np
import pandas as pd
import pytest

import fedlib
from fedlib import ExperimentConfig, analysis
from fedlib.store import Store

from .run_helpers import base_config as _base


def _frame(tmp_path):
    base = ExperimentConfig("fedavg", "quadratic", "full", 12, problem_args={"num_clients": 4, "dim": 3},
                            lr_local=0.05, eval_every=3)
    labels = {base: ("P1", "FedAvg"), base.replace(algorithm="fedsum"): ("P1", "FedSUM"),
              base.replace(lr_local=1000.0): ("P1", "FedAvg, too fast")}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fedlib.sweep(list(labels), tmp_path, progress=False), labels


def test_label_adds_named_columns_from_configs_or_keys(tmp_path):
    df, labels = _frame(tmp_path)
    out = analysis.label(df, labels, ["pattern", "method"])
    assert list(out.columns[-2:]) == ["pattern", "method"] and "pattern" not in df
    assert set(out["method"]) == {"FedAvg", "FedSUM", "FedAvg, too fast"}
    fin = analysis.label(analysis.finals(df), {c.key(): m for c, (_, m) in labels.items()}, ["method"])
    assert fin.loc[list(labels)[1].key(), "method"] == "FedSUM"
    with pytest.raises(ValueError, match="^labels: no labels for run"):
        analysis.label(df, dict(list(labels.items())[:1]), ["pattern", "method"])


def test_final_table_keeps_the_order_of_the_labels_and_blanks_diverged_runs(tmp_path):
    df, labels = _frame(tmp_path)
    t = analysis.final_table(df, labels, ["pattern", "method"], extra=lambda c: {"lr": c.lr_local},
                             columns={"final loss": "loss", "outcome": "outcome"})
    assert list(t.columns) == ["pattern", "method", "lr", "final loss", "outcome"]
    assert t["method"].tolist() == [m for _, m in labels.values()]
    assert t["lr"].tolist() == [0.05, 0.05, 1000.0]
    fast = t.set_index("method").loc["FedAvg, too fast"]
    assert fast["outcome"].startswith("diverged at round") and np.isnan(fast["final loss"])
    assert t.set_index("method").loc["FedSUM", "final loss"] == analysis.finals(df).loc[
        list(labels)[1].key(), "loss"]


def test_first_reach_is_the_first_evaluation_at_the_target():
    df = pd.DataFrame({"key": ["a"] * 4 + ["b"] * 2, "round": [0, 5, 10, 15, 0, 5],
                       "test_acc": [0.1, 0.6, 0.5, 0.8, 0.1, 0.2], "units": [0, 10, 20, 30, 0, 10]})
    hit = analysis.first_reach(df, 0.55, columns=("round", "units"))
    assert hit.loc["a"].tolist() == [5.0, 10.0] and hit.loc["b"].isna().all()
    shuffled = df.sample(frac=1, random_state=0)
    again = analysis.first_reach(shuffled, 0.55, columns=("round", "units"))
    pd.testing.assert_frame_equal(again.loc[["a", "b"]], hit.loc[["a", "b"]])


def test_best_rows_never_choose_a_failed_run_and_work_per_group():
    t = pd.DataFrame({"method": ["x", "x", "x", "y", "y"], "lr": [1, 0.1, 0.01, 1, 0.1],
                      "loss": [0.05, 0.2, 0.3, np.nan, 0.4], "status": ["diverged", "ok", "ok", "ok", "ok"]})
    assert analysis.best_rows(t, "loss", by="method").tolist() == [False, True, False, False, True]
    assert analysis.best_rows(t, "loss").tolist() == [False, True, False, False, False]
    assert analysis.best_rows(t, "loss", lower=False).tolist() == [False, False, False, False, True]
    with pytest.raises(RuntimeError, match="for y diverged or failed"):
        analysis.best_rows(t.assign(status=["ok", "ok", "ok", "error", "error"]), "loss", by="method")


def _bowl(optimum, fail_above=None):
    """Scores of a loss that is lowest at ``optimum`` in log rate (NaN above ``fail_above``)."""
    calls = []

    def evaluate(rates):
        calls.append(list(rates))
        return {r: (np.nan if fail_above and r > fail_above else (np.log10(r) - np.log10(optimum)) ** 2)
                for r in rates}
    return evaluate, calls


def test_a_grid_pick_on_its_edge_is_extended_past_the_edge():
    evaluate, calls = _bowl(1e-4)
    g = analysis.search_log_grid(evaluate, [1.0, 0.1, 0.01])
    assert g.best == pytest.approx(1e-4) and not g.on_edge
    assert g.extended == pytest.approx((1e-3, 1e-4, 1e-5)) and len(calls) == 4
    # an interior pick is accepted as it is, with no extension
    evaluate, calls = _bowl(0.1)
    g = analysis.search_log_grid(evaluate, [1.0, 0.1, 0.01])
    assert g.best == 0.1 and g.extended == () and len(calls) == 1
    # upwards too, and higher-is-better scores
    evaluate, _ = _bowl(10.0)
    g = analysis.search_log_grid(lambda r: {k: -v for k, v in evaluate(r).items()}, [0.1, 1.0], lower=False)
    assert g.best == pytest.approx(10.0) and g.extended == pytest.approx((10.0, 100.0))


def test_a_failed_neighbour_bounds_the_grid_and_the_limit_is_reported():
    evaluate, _ = _bowl(100.0, fail_above=2.0)         # the rate above 1 diverges
    g = analysis.search_log_grid(evaluate, [0.01, 0.1, 1.0])
    assert g.best == 1.0 and g.extended == (10.0,) and np.isnan(g.scores[10.0]) and not g.on_edge
    evaluate, _ = _bowl(1e-9)
    g = analysis.search_log_grid(evaluate, [1.0, 0.1], max_extensions=2)
    assert g.on_edge and g.best == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="rates"):
        analysis.search_log_grid(evaluate, [])
    with pytest.raises(RuntimeError, match="every run"):
        analysis.search_log_grid(lambda r: {k: np.nan for k in r}, [1.0, 0.1])


def test_mean_std_leaves_out_runs_without_a_value():
    assert analysis.mean_std([0.9, 0.92, float("nan")]) == "0.9100 ± 0.0141"     # sample std of two
    assert analysis.mean_std([float("nan"), 0.5], digits=2) == "0.50"
    assert analysis.mean_std([float("nan")]) == analysis.mean_std([]) == "-"


def test_finals_average_the_last_evaluations_and_blank_diverged_runs(tmp_path):
    ok = _base(rounds=12, eval_every=3)
    bad = _base(algorithm="fedavg", rounds=12, eval_every=3, lr_local=1e12)   # overflows
    df = fedlib.sweep([ok, bad], tmp_path, progress=False)
    f = analysis.finals(df)
    hist = Store(tmp_path).get(ok).history
    assert f.loc[ok.key(), "loss"] == hist["loss"].iloc[-1] and f.loc[ok.key(), "round"] == 12
    assert np.isclose(analysis.finals(df, last=2).loc[ok.key(), "loss"], hist["loss"].iloc[-2:].mean())
    assert f.loc[ok.key(), "outcome"] == "ok"
    div = Store(tmp_path).get(bad).meta["diverged_at"]
    assert f.loc[bad.key(), "outcome"] == f"diverged at round {div}" and np.isnan(f.loc[bad.key(), "loss"])
    assert "seconds" not in f and "lr_local" not in f
    with pytest.raises(ValueError, match="^last"):
        analysis.finals(df, last=0)
    with pytest.raises(ValueError, match="^df"):
        analysis.finals(df.drop(columns="diverged_at"))
