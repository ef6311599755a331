"""fedlib.studies.amplified: Wang & Ji 2022's setup (notebook 08): the grid, the cycle scoring, outcomes."""

import math

import numpy as np
import pandas as pd
import pytest

from fedlib import studies


def test_amplified_study_is_wang_and_ji():
    s = studies.amplified.amplified_setup("paper")
    assert (s.num_clients, s.per_round, s.local_steps, s.batch, s.lr0, s.groups) == (250, 10, 5, 16, 0.1, 5)
    assert s.cycle == 500 and s.base().rounds == s.warmup == 2000
    phase = s.phase("wait-full", 1000, 0.1)
    assert phase.rounds == 1000 // 500 and phase.eval_every == 1 and phase.warmup() == s.base()
    amp = s.phase("amplification (eta=10, P=500)", 1000, 1e-5, P=100)
    assert dict(amp.algorithm_args) == {"P": 100, "gamma": 10.0} and amp.rounds == 1000
    grid = s.grid_configs()                                    # every rate at each tuning seed
    assert s.tuning_seeds == s.grid_seeds == (100, 101)
    assert len(grid) == len(s.methods) * len(s.grid) * 2 and {c.seed for c in grid} == {100, 101}
    assert s.grid_rates == [0.1, 0.01, 0.001, 0.0001, 1e-05]
    assert s.authors_rates() == {"amplification (eta=10, P=500)": 1e-5, "no amplification (eta=1)": 1e-5,
                                 "wait-minibatch": 0.1, "wait-full": 0.1}
    fig1 = s.fig1_configs(s.authors_rates(), [0, 1, 2])        # independent seeds: a warm-up each
    assert len(fig1) == 12 and {c.warmup() for c in fig1} == set(s.warmups([0, 1, 2]))
    for c, (k, _) in fig1.items():                              # everything of a run keyed by its seed
        assert c.seed == dict(c.problem_args)["seed"] == c.warmup().seed == k
    assert s.fig1_configs(s.authors_rates(), [0]) == {c: v for c, v in fig1.items() if v[0] == 0}
    assert next(iter(s.fig1_configs(s.authors_rates(), [0]))).warmup() == s.base()   # the setup's seed
    with pytest.raises(ValueError, match=r"^seed: must be an integer in \[0, 2\*\*63\), got -1"):
        s.at_seed(-1)
    fig2 = s.fig2_configs(1e-4, [0, 1])
    assert sorted(v[1] for v in fig2.values()) == sorted(list(s.P_values) * 2)
    with pytest.raises(ValueError, match="^label: must be one of"):
        s.phase("FedAvg", 10, 0.1)
    with pytest.raises(ValueError, match="^rates: no rate for 'wait-full'"):
        s.fig1_configs({m: 0.1 for m in list(s.methods)[:3]}, [0])
    df = pd.DataFrame({"key": ["a", "a", "b"], "algorithm": ["wait_full"] * 2 + ["fedavg"],
                       "round": [1, 2, 5], "waited_rounds": [500, 1000, np.nan]})
    t = s.timeline(df, {"a": "wait-full", "b": "x"})
    assert t["time"].tolist() == [500, 1000, 5]
    stand = studies.amplified.amplified_setup("quick", stand_in_rounds=2)
    assert stand.P_values == (1, stand.cycle) and stand.grid == (1.0,)
    paper = studies.amplified.amplified_setup("paper", stand_in_rounds=2)      # Fashion-MNIST's protocol
    assert paper.score_cycles == 0 and paper.tuning_seeds == (100, 101)      # 2 rounds: no cycle's end
    c = paper.phase("wait-full", 2, 0.1)
    assert paper.late_window(_fake_runs([c], lambda lr: 1.0, paper), c) == pytest.approx(1.0 + 2 / 1000)



def _fake_runs(configs, loss_of_rate, setup):
    """A sweep-like frame: each config's loss is ``loss_of_rate(lr)`` at every evaluation after 0
    (time in rounds, a wait round charged a cycle)."""
    rows = []
    for c in configs:
        wait = c.algorithm.startswith("wait")
        for r in range(0, c.rounds + 1, 1 if wait else c.eval_every):
            rows.append({"key": c.key(), "algorithm": c.algorithm, "status": "ok", "round": r,
                         "waited_rounds": r * setup.cycle if wait else np.nan,
                         "loss": 5.0 if r == 0 else loss_of_rate(c.lr_local) + r / 1000})
    return pd.DataFrame(rows)



def test_amplified_grid_scores_the_last_cycle_and_leaves_no_pick_on_an_edge():
    s = studies.amplified.amplified_setup("quick", dataset="mnist")
    assert s.grid_horizon == 2 * s.cycle                        # the score covers a cycle after the jump
    c = s.grid_config("no amplification (eta=1)", 0.01)
    df = _fake_runs([c], lambda lr: 1.0, s)
    # evaluations every 20 rounds: the last cycle is (100, 200]: 120 ... 200
    assert s.late_window(df, c) == pytest.approx(1.0 + np.mean([120, 140, 160, 180, 200]) / 1000)
    w = s.grid_config("wait-full", 0.1)
    dw = _fake_runs([w], lambda lr: 2.0, s)
    assert w.rounds == 2 and s.late_window(dw, w) == pytest.approx(2.0 + 2 / 1000)   # the last wait round
    assert math.isnan(s.late_window(df.assign(status="diverged"), c))
    calls = []

    def compute(configs):
        calls.append(len(configs))
        return _fake_runs(configs, lambda lr: abs(math.log10(lr) + 6.4), s)     # best below the grid
    searches = s.search_rates(compute)
    for g in searches.values():
        assert g.best == pytest.approx(1e-6) and g.extended == pytest.approx((1e-6, 1e-7)) and not g.on_edge
    assert calls == [5, 1, 1] * len(s.methods)



def test_amplified_earlier_rule_scores_the_first_cycle_and_warmups_report_their_plateau():
    s = studies.amplified.amplified_setup("quick", dataset="mnist")
    grid = {s.grid_config(m, r): (m, r) for m in s.methods for r in (0.1, 0.01)}
    # the loss after the first cycle favours 0.1, the last cycle 0.01: the two rules disagree
    df = _fake_runs(grid, lambda lr: 1.0, s)
    first = (df["round"] <= s.cycle) & (df["round"] > 0)
    lr_of = {c.key(): r for c, (_, r) in grid.items()}
    df.loc[first, "loss"] = [0.5 if lr_of[k] == 0.1 else 0.9 for k in df.loc[first, "key"]]
    picks = s.earlier_picks(df, grid, {m: 0.01 for m in s.methods})
    assert picks["pick: loss after one cycle (earlier rule)"].tolist() == [0.1] * len(s.methods)
    assert picks["pick: last cycle of 2 (here)"].tolist() == [0.01] * len(s.methods)
    bad = df.assign(status=np.where(df["key"].map(lr_of) == 0.1, "diverged", "ok"))
    again = s.earlier_picks(bad, grid, {m: 0.01 for m in s.methods})    # a diverged rate is never picked
    assert again.iloc[:, 2].tolist() == [0.01] * len(s.methods)
    # warm-ups: the accuracy over the cycle ending at a round; a flat last cycle gains nothing
    rounds = np.arange(0, 1501, 20)
    acc = np.minimum(rounds / 1000, 0.9)
    warm = pd.DataFrame({"seed": 3, "round": rounds, "test_acc": acc})
    t = s.warmup_table(warm, 300).iloc[0]
    assert t["seed"] == 3
    assert t["test acc, cycle to round 300"] == pytest.approx(np.mean([0.22, 0.24, 0.26, 0.28, 0.3]))
    assert t["test acc, cycle to round 1500"] == pytest.approx(0.9)
    assert t["gain over the last cycle"] == pytest.approx(0)



def test_amplified_outcomes_leave_failed_runs_out_and_name_them():
    s = studies.amplified.amplified_setup("quick", dataset="mnist")
    c = s.phase("no amplification (eta=1)", s.horizon, 0.01)
    df = _fake_runs([c], lambda lr: 1.0, s).assign(test_acc=0.8)
    ok = s.outcome(df, c)
    assert ok["outcome"] == "ok" and ok["acc"] == pytest.approx(0.8)
    stuck = s.outcome(df.assign(test_acc=0.1), c)                   # at chance to the end: collapsed
    assert stuck["outcome"].startswith("collapsed at round") and math.isnan(stuck["acc"])
    vals = {(0, "a"): ok, (1, "a"): stuck}
    t = s.outcome_table(vals, {"a": {"method": "a", "key": lambda k: (k, "a")}}, [0, 1]).iloc[0]
    assert t["runs ok"] == "1 of 2" and t["not ok"].startswith("seed 1: collapsed")
    assert t["late test acc"] == "0.8000"


def test_fashion_mnist_protocol_tunes_on_other_seeds_and_scores_every_method_on_the_same_points():
    mnist = studies.amplified.amplified_setup("quick", dataset="mnist")             # the earlier stand-in
    assert (mnist.tuning_seeds, mnist.score_cycles, mnist.grid_seeds) == ((), 0, (0,))
    assert (mnist.warmup, mnist.horizon, mnist.grid_horizon) == (1500, 200, 200)   # MNIST's store unchanged
    s = studies.amplified.amplified_setup("quick", dataset="fashion_mnist")
    assert s == studies.amplified.amplified_setup("quick")      # Wang & Ji's own dataset: the quick default
    assert (s.dataset, s.model, s.num_clients, s.cycle, s.warmup, s.horizon) == (
        "fashion_mnist", "fedsum_mnist_cnn", 250, 100, 2000, 300)
    assert s.P_values == (1, 20, 60, 100, 140, 180)             # Fig. 2's P of a 500-round cycle, / 5
    assert s.grid_horizon == s.horizon and s.window_times() == [200, 300]
    assert all(w in s.setting for w in ("FashionMNIST, Wang & Ji's own dataset", "ends of cycles 2, 3",
                                        "for Wang & Ji's CNN", "seeds 100, 101"))
    assert "MNIST, standing in for FashionMNIST" in mnist.setting
    assert (s.test_size, mnist.test_size) == (10000, 10000)
    # the grid runs on the tuning seeds' own warm-ups, never on an evaluated seed's
    grid = s.grid_configs()
    assert {c.warmup() for c in grid} == set(s.warmups([100, 101]))
    assert not {c.key() for c in grid} & {c.key() for c in s.fig1_configs(s.authors_rates(), range(5))}
    s.check_seeds([0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="^seeds: 101 also tune the rates"):
        s.check_seeds([0, 101])
    with pytest.raises(ValueError, match="^dataset: the quick profile runs on 'fashion_mnist' or 'mnist'"):
        studies.amplified.amplified_setup("quick", dataset="cifar10")
    # the symmetric window: a wait method (one evaluation per cycle) and Alg. 1 (every 20 rounds)
    # are both scored at times 200 and 300 only
    amp = s.phase("amplification (eta=10, P=100)", s.horizon, 1e-3)
    wait = s.phase("wait-full", s.horizon, 0.1)
    assert wait.rounds == 3
    df = _fake_runs([amp, wait], lambda lr: 1.0, s)
    assert s.late_window(df, amp) == pytest.approx(1.0 + np.mean([200, 300]) / 1000)
    assert s.late_window(df, wait) == pytest.approx(1.0 + np.mean([2, 3]) / 1000)
    with pytest.raises(ValueError, match="^score_cycles: run .* has no evaluation at time 200"):
        s.late_window(df[~((df["key"] == amp.key()) & (df["round"] == 200))], amp)
    with pytest.raises(ValueError, match="^horizon: 250 must be a multiple of the cycle"):
        s.window_times(250)


def test_fashion_mnist_grid_averages_the_tuning_seeds_and_a_failure_on_one_rules_a_rate_out():
    s = studies.amplified.amplified_setup("quick", dataset="fashion_mnist")

    def compute(configs):
        # seed 100 favours 1e-3, seed 101 1e-2 by more; 1e-4 diverges on seed 101 only
        df = _fake_runs(configs, lambda lr: 1.0, s)
        for c in configs:
            sel = df["key"] == c.key()
            bump = {(100, 1e-3): -0.1, (101, 1e-2): -0.3}.get((c.seed, c.lr_local), 0.0)
            df.loc[sel, "loss"] += bump
            if (c.seed, c.lr_local) == (101, 1e-4):
                df.loc[sel, "status"] = "diverged"
        return df
    searches = s.search_rates(compute)
    for g in searches.values():
        assert g.best == pytest.approx(1e-2) and math.isnan(g.scores[1e-4])
    picks = s.earlier_picks(compute(list(s.grid_configs())), s.grid_configs(), {m: 1e-2 for m in s.methods})
    assert list(picks.columns)[1] == "pick: ends of cycles 2, 3 of 3 (here)"


def test_smoke_profile_on_fashion_mnist_is_tiny_and_keeps_the_protocol():
    s = studies.amplified.amplified_setup("smoke", dataset="fashion_mnist")
    assert s.tuning_seeds == (100,) and s.window_times() == [10, 20]
    assert s.phase("wait-full", 20, 0.1).rounds == 2
    args = dict(s.base().problem_args)
    assert args["dataset"] == "fashion_mnist" and args["synthetic"]
    assert tuple(args["synthetic_sizes"]) == (400, 100)
    assert "smoke test" in s.data_name
    # the smoke profiles' smaller local work (2 steps of 8, its CPU budget); quick and paper keep the paper's
    digits = studies.amplified.amplified_setup("smoke", dataset="digits")
    assert (s.local_steps, s.batch) == (digits.local_steps, digits.batch) == (2, 8)
    assert s.base().local_steps == 2 and dict(s.base().problem_args)["batch_size"] == 8
    for prof in ("quick", "paper"):
        for ds in studies.amplified.DATASETS[prof]:
            full = studies.amplified.amplified_setup(prof, dataset=ds)
            assert (full.local_steps, full.batch) == (5, 16)
    paper = studies.amplified.amplified_setup("paper")
    assert paper.model == "wj_fmnist_cnn" and paper.dataset == "fashion_mnist" and paper.score_cycles == 2
    assert paper.window_times() == [4500, 5000] and paper.window_times(paper.grid_horizon) == [500, 1000]


def test_compute_in_order_runs_the_tuning_grid_first_then_whole_seeds():
    s = studies.amplified.amplified_setup("quick", dataset="fashion_mnist")
    batches, kept = [], []

    def compute(configs, keep_params=False):
        batches.append(configs)
        kept.append(keep_params)
        phases = [c for c in configs if c.init_from is not None]
        return _fake_runs(phases, lambda lr: abs(math.log10(lr) + 2.2), s)
    best = s.compute_in_order(compute, [3, 0])
    assert {c.seed for c in batches[0]} == {100, 101} and all(c.algorithm == "fedavg" for c in batches[0])
    seeds_after = [sorted({c.seed for c in b}) for b in batches[1:]]
    first_eval = seeds_after.index([3])
    assert all(k == [100, 101] for k in seeds_after[:first_eval])          # the grid, on the tuning seeds
    assert seeds_after[first_eval:] == [[3], [3], [0], [0]]                 # then seed by seed: warm-up, runs
    assert best == {m: pytest.approx(1e-2) for m in s.methods}
    amp = next(iter(s.methods))
    want = {*s.fig1_configs(best, [0]), *s.fig1_configs(s.authors_rates(), [0]),
            *s.fig2_configs(best[amp], [0])}
    assert set(batches[-1]) == want                                        # exactly the notebook's runs
    # the warm-ups keep their final models (else the next sweep computes them again), nothing else
    assert kept == [all(c.algorithm == "fedavg" for c in b) for b in batches] and sum(kept) == 3
    with pytest.raises(ValueError, match="^seeds: 100 also tune"):
        s.compute_in_order(compute, [100])


def _fake_accuracy_runs(setup, gap):
    """A ``compute`` of fake runs whose late test accuracy orders the methods as Sec. 6 says
    (amplification at the cycle > wait > no amplification), ``gap`` apart, plus a small
    per-run offset; the training loss picks 1e-2 in every grid. Returns (compute, keys asked)."""
    asked = set()

    def compute(configs, keep_params=False):
        asked.update(c.key() for c in configs)
        df = _fake_runs(configs, lambda lr: abs(math.log10(lr) + 2.2), setup)
        rank = {}
        for c in configs:
            args = dict(c.algorithm_args)
            rank[c.key()] = (2 if c.algorithm.startswith("wait") else 0 if args.get("gamma", 1.0) == 1.0
                             else 3 if args["P"] == setup.cycle else 1) + int(c.key()[-3:], 16) % 5 / 50
        return df.assign(test_acc=0.8 + gap * df["key"].map(rank))
    return compute, asked


def test_evaluate_reads_every_run_and_compare_puts_the_datasets_side_by_side_under_their_protocols():
    fashion = studies.amplified.amplified_setup("quick")
    mnist = studies.amplified.amplified_setup("quick", dataset="mnist")
    evals = {}
    for s, gap in ((mnist, 0.001), (fashion, 0.02)):
        compute, asked = _fake_accuracy_runs(s, gap)
        ev = s.evaluate(compute, [0, 1, 2])
        assert ev.keys == asked and ev.best == {m: pytest.approx(1e-2) for m in s.methods}   # every run read
        assert tuple(ev.rates) == studies.amplified.RATE_SETS and ev.seeds == (0, 1, 2)
        authors = studies.amplified.RATE_SETS[1]
        assert all(r.setting.endswith(s.setting_at(r.context["rates"] != authors))
                   and r.context["in the paper"].endswith("no number printed") for r in ev.rows)
        # the authors' rates are not in the paper's text: their rows' setting says where they come from,
        # and names no tuning seeds (those rates are fixed in the authors' code, not tuned here)
        src = studies.amplified.RATE_SOURCES
        assert all(r.setting == ", ".join(x for x in (src.get(r.context["rates"]),
                                                      s.setting_at(r.context["rates"] != authors)) if x)
                   for r in ev.rows)
        assert all(("rates tuned on seeds" in r.setting) == (r.context["rates"] != authors
                                                             and bool(s.tuning_seeds)) for r in ev.rows)
        assert {r.context["rates"] for r in ev.rows if "from their code, not the paper" in r.setting} \
            == {"the authors' rates"}
        evals[s.data_label] = ev
    assert {c.seed for c in evals["FashionMNIST"].setup.grid_configs()} == {100, 101}
    with pytest.raises(ValueError, match="^seeds: 100 also tune"):
        fashion.evaluate(_fake_accuracy_runs(fashion, 0.02)[0], [0, 100])
    t = studies.amplified.compare_datasets(evals)
    assert (t["protocol"].str.contains("ends of cycles 2, 3") == (t["data"] == "FashionMNIST")).all()
    for _, g in t.groupby(["data", "rates"]):
        methods, spread = g.iloc[:-1], g.iloc[-1]
        assert len(methods) == 4 and methods["runs ok"].eq("3 of 3").all()
        got = methods["late test acc"].max() - methods["late test acc"].min()
        assert spread["late test acc"] == pytest.approx(got)
        assert spread["test images"] == pytest.approx(got * 10000)
        assert spread["margins"] == pytest.approx(got / studies.amplified.claims.MARGINS["test accuracy"])
    spreads = t[t["method"].str.startswith("spread")].set_index(["data", "rates"])["margins"]
    assert (spreads["FashionMNIST"] > 10 * spreads["MNIST"]).all()       # the gap here is 20x MNIST's
    v = studies.amplified.compare_claims(evals)
    assert len(v) == len(evals["MNIST"].rows) == 13
    # Sec. 6's "partial contributions", against Fig. 1's run without amplification at its own best
    # rate, seed by seed (the fake runs rank them 1 over 0): a row that names its two rates
    partial = [r for r in evals["FashionMNIST"].rows if r.quote == studies.amplified.QUOTES["partial"]]
    (across,) = [r for r in partial if r.context["rates"] == studies.amplified.FIG2_VS_FIG1_RATES]
    assert across.where == "Sec. 6, Fig. 2" and across.check.verdict == "holds" and across.check.seeds == 3
    assert across.check.reason == "per rival: P=20: holds; P=60: holds"
    assert "(20, 60) ends above no amplification" in across.claim
    (larger,) = [r for r in evals["FashionMNIST"].rows if r.quote == studies.amplified.QUOTES["larger"]]
    assert larger.claim.endswith("(the sentence follows one on CIFAR-10 and does not say whether it covers "
                                 "FashionMNIST; our reading applies it here)")
    # "Algorithm 1 with amplification gives the best performance": against each of the three others
    best = [r for r in evals["FashionMNIST"].rows if r.quote == studies.amplified.QUOTES["best"]]
    assert [r.context["rates"] for r in best] == list(studies.amplified.RATE_SETS)
    for r in best:
        assert r.check.verdict == "holds" and r.check.seeds == 3
        rivals = [m for m in fashion.methods if not m.startswith("amplification")]
        assert r.check.reason.startswith("per rival: " + "; ".join(f"{m}: holds" for m in rivals))
    for name, ev in evals.items():                                        # the verdicts claims_table gives
        want = studies.amplified.claims.claims_table(list(ev.rows))
        lean = [f" ({d})" if d else "" for d in want["direction"].fillna("")]
        assert v[f"{name}: verdict"].tolist() == [a + b for a, b in zip(want["verdict"], lean, strict=True)]
        assert v[f"{name}: effect"].tolist() == pytest.approx(want["effect"].tolist())
    lowest = v[v["claim"] == "FedAvg without amplification is the lowest"]
    assert lowest["FashionMNIST: verdict"].eq("holds").all()


def test_the_cifar_10_claim_is_a_row_not_tested_with_its_reason():
    fig1, fig2, row, slower, speedup, p_free = studies.amplified.amplified_setup("quick").unrun_claims()
    # Sec. 5's linear speedup and Sec. 2's P-free dominant terms: statements of the analysis
    for r, (where, quote, claim, shown) in zip((speedup, p_free), studies.amplified.THEORY_UNRUN.values(),
                                               strict=True):
        assert (r.where, r.quote, r.claim, r.check.verdict) == (where, quote, claim, "not tested")
        assert r.context["in the paper"] == shown and r.setting == "a statement of the analysis, not run"
    assert "(S = 10)" in speedup.check.reason and "would be tuning" in speedup.check.reason
    assert "P = 1, 20, 60, 100, 140, 180 rows test" in p_free.check.reason
    assert fig1.where == "Sec. 6, Fig. 1" and fig1.check.verdict == "not tested" and fig1.check.seeds == 0
    q = studies.amplified.QUOTES
    assert all(q[k] in fig1.quote for k in ("best", "wait", "full", "lowest"))   # each of Fig. 1's claims
    assert "CIFAR-10 cannot be had on these machines" in fig1.check.reason
    assert fig2.where == "Sec. 6, Fig. 2" and fig2.check.verdict == "not tested"    # Fig. 2's, in its order
    assert fig2.quote == " ... ".join(q[k] for k in ("P1", "partial", "larger"))
    assert fig2.check.reason == fig1.check.reason and fig2.setting == fig1.setting
    assert slower.check.verdict == "not tested" and slower.check.seeds == 0
    assert slower.quote.startswith("Nevertheless, we expect that choosing a smaller learning rate")
    assert "(here 140, 180)" in slower.claim and "no run at a smaller rate" in slower.check.reason
    assert slower.setting == "FashionMNIST, P above the cycle, not run"
    assert row.where == "Sec. 6, Fig. 2" and row.check.verdict == "not tested" and row.check.seeds == 0
    assert row.quote.endswith("even slightly better performance in the case of CIFAR-10 data")
    assert "CIFAR-10 cannot be had on these machines" in row.check.reason
    assert row.context["rates"] == studies.amplified.FIG2_RATES         # the rate Fig. 2 runs at


def _fig2_rows(acc_of_P: dict, plain: float):
    """The quick profile's Fig. 2 rows from per-seed accuracies ``acc_of_P`` (P -> seed -> acc) and
    Fig. 1's run without amplification at ``plain`` + seed / 1000 (every seed otherwise alike)."""
    s = studies.amplified.amplified_setup("quick")
    seeds = [0, 1, 2, 3]
    vals2 = {(k, P): {"acc": acc_of_P[P][k]} for P in s.P_values for k in seeds}
    best = studies.amplified.RATE_SETS[0]
    vals1 = {(best, k, m): {"acc": plain + k / 1000} for k in seeds for m in s.methods}
    rows = s.fig2_claims(vals1, vals2, seeds, best)
    return s, {(r.quote, r.context["rates"]): r for r in rows}


def test_fig2_claims_run_every_p_at_one_rate_and_similar_is_within_the_margin_both_ways():
    Q, fig2 = studies.amplified.QUOTES, studies.amplified.FIG2_RATES
    noise = {0: 0.0, 1: 0.0004, 2: -0.0003, 3: 0.0001}
    # P = 20 lies 0.008 above the cycle's P = 100 (beyond the 0.005 margin), P = 60 0.001 below it
    base = {1: 0.80, 20: 0.858, 60: 0.849, 100: 0.85, 140: 0.84, 180: 0.84}
    acc = {P: {k: a + noise[k] * (P == 20) for k in noise} for P, a in base.items()}
    s, rows = _fig2_rows(acc, plain=0.9)
    assert all(r.where == "Sec. 6, Fig. 2" for r in rows.values())
    assert {rates for _, rates in rows} == {fig2, studies.amplified.FIG2_VS_FIG1_RATES}
    similar = rows[(Q["smaller"], fig2)].check
    # a smaller P "similar" to the cycle: no worse than it and it no worse than them, each by the margin
    assert similar.reason.startswith("per rival: P=20 no worse than P=100: holds; P=100 no worse than P=20: "
                                     "does not hold; P=60 no worse than P=100: holds; "
                                     "P=100 no worse than P=60: holds")
    assert similar.verdict == "does not hold" and similar.threshold == -0.005
    assert similar.effect == pytest.approx(-0.008 - np.mean(list(noise.values())))   # P=100 - P=20
    # "partial contributions ... improve performance": over P = 1 at the same rate (Fig. 2's runs only)
    # "P = 1 does not give the best performance": every other P against P = 1, some P beating it
    p1 = rows[(Q["P1"], fig2)]
    assert p1.claim == "P = 1 is not the best: some P (20, 60, 100, 140, 180) beats it"
    assert p1.check.verdict == "holds" and p1.check.reason.startswith(
        "some rival: P=20: holds; P=60: holds; P=100: holds; P=140: holds; P=180: holds")
    assert p1.check.effect == pytest.approx(0.058 + np.mean(list(noise.values())))   # P = 20: the most slack
    vs_p1 = rows[(Q["partial"], fig2)]
    assert "ends above P = 1" in vs_p1.claim and vs_p1.check.verdict == "holds"
    assert vs_p1.check.effect == pytest.approx(0.049)          # P = 60 - P = 1: the weaker of the two
    # and over Fig. 1's run without amplification at its own grid rate, named as two rates: here it
    # lies above every P, so that reading does not hold while the same-rate one does
    across = rows[(Q["partial"], studies.amplified.FIG2_VS_FIG1_RATES)]
    assert "two rates" in across.context["rates"] and across.check.verdict == "does not hold"
    assert across.check.effect == pytest.approx(0.849 - 0.9 - np.mean(list(noise)) / 1000)


def test_fig2_similar_holds_only_when_the_interval_lies_within_the_margin_on_both_sides():
    Q, fig2 = studies.amplified.QUOTES, studies.amplified.FIG2_RATES
    noise = {0: 0.0, 1: 0.0004, 2: -0.0003, 3: 0.0001}
    # P = 20 lies 0.002 above the cycle's P = 100, P = 60 0.001 below it (seed noise on P = 20 only)
    base = {1: 0.86, 20: 0.852, 60: 0.849, 100: 0.85, 140: 0.84, 180: 0.84}
    _, rows = _fig2_rows({P: {k: a + noise[k] * (P == 20) for k in noise} for P, a in base.items()},
                         plain=0.8)
    assert rows[(Q["smaller"], fig2)].check.verdict == "holds"
    # the P = 1 check and the no-amplification check read different runs: P = 1 (0.86) lies above
    # every P below the cycle, Fig. 1's run without amplification (0.8 + seed / 1000) below them
    assert rows[(Q["partial"], fig2)].check.verdict == "does not hold"
    assert rows[(Q["partial"], studies.amplified.FIG2_VS_FIG1_RATES)].check.verdict == "holds"


def test_setup_seeds_rates_and_horizons_are_refused_when_they_are_not_what_a_run_can_take():
    """A seed bent into another (2.9 -> 2, True -> 1, "3" -> 3), a seed twice (one run counted twice
    in every interval), no seed, a rate or horizon a run cannot take, or an option the algorithm
    does not have: each is refused naming its field, before anything is computed."""
    f = studies.amplified
    s = f.amplified_setup("smoke")
    asked = []
    for bad in ([2.9], [True], ["3"], [0, 0], [], [-1]):
        with pytest.raises(ValueError, match="^seeds: "):
            s.evaluate(lambda cs, **kw: asked.append(cs), bad)
        with pytest.raises(ValueError, match="^seeds: "):
            s.compute_in_order(lambda cs, **kw: asked.append(cs), bad)
    assert not asked                                            # refused before the tuning grid
    assert s.check_seeds((3, 4)) == [3, 4]
    m = next(iter(s.methods))
    for horizon in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="^horizon: must be an integer"):
            s.phase(m, horizon, 0.1)
    for lr in (math.nan, -1, 0, math.inf, "0.1", True):
        with pytest.raises(ValueError, match="^lr: must be a (real|finite) number > 0"):
            s.phase(m, 10, lr)
    with pytest.raises(ValueError, match="^phase.algorithm_args.bogus: not an option of algorithm"):
        s.phase(m, 10, 0.1, bogus=3)
    assert dict(s.phase(m, 10, 0.1, P=2).algorithm_args)["P"] == 2
    with pytest.raises(ValueError, match="^seeds: "):
        s.claims({}, {}, [0, 0, 1], {"x": {}})
    with pytest.raises(ValueError, match="^rate_sets: expected a non-empty dict"):
        s.claims({}, {}, [0], {})


def test_p1_is_not_the_best_holds_if_any_p_beats_it_and_is_refuted_only_if_every_p_is_worse():
    """Sec. 6's "P=1 ... does not give the best performance" is existential: a P other than the cycle's
    that beats P = 1 makes it hold (the row once compared the cycle's P alone and missed it); every P
    worse than P = 1 makes it not hold; the best P within the margin of P = 1: equivalent."""
    Q, fig2 = studies.amplified.QUOTES, studies.amplified.FIG2_RATES
    noise = {0: 0.0, 1: 0.0004, 2: -0.0003, 3: 0.0001}

    def p1(base):
        _, rows = _fig2_rows({P: {k: a + noise[k] * (P % 40 == 20) for k in noise} for P, a in base.items()},
                             plain=0.8)
        return rows[(Q["P1"], fig2)].check
    only_140 = p1({1: 0.85, 20: 0.84, 60: 0.84, 100: 0.849, 140: 0.87, 180: 0.84})
    assert only_140.verdict == "holds" and "P=100: equivalent" in only_140.reason
    assert "P=140 vs P=1" in only_140.numbers
    worse = p1({1: 0.85, 20: 0.84, 60: 0.84, 100: 0.83, 140: 0.83, 180: 0.82})
    assert worse.verdict == "does not hold"
    tied = p1({1: 0.85, 20: 0.84, 60: 0.851, 100: 0.83, 140: 0.83, 180: 0.82})
    assert tied.verdict == "equivalent" and "P=60 vs P=1" in tied.numbers


def _fig1_values(s, seeds):
    """Fig. 1 and Fig. 2 outcomes at the quick profile: at the grid's rates (no amplification picks
    1e-3, the authors run 1e-5) amplification ends below every other method; at the authors' rates
    it ends above no amplification only. Returns (vals1, vals2, rate sets)."""
    amp, no_amp, mb, full = s.methods
    rates = s.rate_sets({amp: 1e-5, no_amp: 1e-3, mb: 0.1, full: 0.1})
    authors = studies.amplified.RATE_SETS[1]
    acc = {amp: 0.84, no_amp: 0.85, mb: 0.86, full: 0.8605}
    jitter = {0: 0.0, 1: 0.0004, 2: -0.0003}
    vals1 = {(rn, k, m): {"acc": (0.80 if (rn, m) == (authors, no_amp) else acc[m]) + jitter[k] * (m == amp),
                          "loss": 0.4, "outcome": "ok"}
             for rn in rates for k in seeds for m in s.methods}
    vals2 = {(k, P): {"acc": 0.84 + jitter[k], "loss": 0.45, "outcome": "ok"}
             for k in seeds for P in s.P_values}
    return vals1, vals2, rates


def test_rows_name_the_authors_horizon_and_those_that_do_not_hold_the_grid_picks_beside_the_authors():
    f = studies.amplified
    assert f.AUTHORS_HORIZON == 298_000            # (1,500,000 - 10,000) iterations / 5 a round
    s = f.amplified_setup("quick")
    assert s.horizon_words == ("3 cycles after warm-up, 0.50% of the authors' 596 (their code: 298,000 "
                               "rounds, cycle 500)")
    paper = f.amplified_setup("paper")
    assert paper.horizon_words.startswith("10 cycles after warm-up, 1.68% of the authors' 596")
    assert "rates tuned on seeds 100, 101" in s.setting_at(True) and "rates tuned" not in s.setting_at(False)
    seeds = [0, 1, 2]
    vals1, vals2, rates = _fig1_values(s, seeds)
    rows = s.claims(vals1, vals2, seeds, rates)
    assert all(s.horizon_words in r.setting for r in rows)
    table = f.claims.claims_table(rows)
    best, authors = f.RATE_SETS
    fails = table[table["verdict"] == "does not hold"]
    assert set(fails["rates"]) == {best, authors, f.FIG2_VS_FIG1_RATES}
    assert fails["cause"].str.contains(f"horizon: {s.horizon_words}", regex=False).all()
    pick = ("the grid (runs of 3 cycles) picked no amplification (eta=1) 0.001 where the authors' code "
            "runs 1e-05")
    for _, r in fails.iterrows():                  # the grid's picks only where the grid set the rates
        assert (pick in r["cause"]) == (r["rates"] != authors)
        assert "amplification (eta=10, P=100) 1e-05 where" not in r["cause"]   # the same rate: not named
    held = table[table["verdict"] != "does not hold"]
    assert not held["cause"].fillna("").str.contains("horizon:").any()
    lowest = table[(table["claim"] == "FedAvg without amplification is the lowest")
                   & (table["rates"] == authors)]
    assert lowest["verdict"].tolist() == ["holds"]


def test_notebook_09s_horizon_rule_reads_each_run_from_the_initial_model():
    s = studies.amplified.amplified_setup("quick")
    seeds = [0, 1, 2]
    vals1, vals2, _ = _fig1_values(s, seeds)
    warm = pd.DataFrame({"seed": [0, 0, 1, 1, 2, 2, 100], "round": [0, 20, 0, 20, 0, 20, 0],
                         "loss": [2.0, 1.0, 2.5, 1.0, 2.0, 1.0, 9.0]})
    text = s.early_phase_words(warm, vals1, vals2, 0.5)
    # 0.4 / 2.5 = 0.16 to 0.45 / 2.0 = 0.225; seed 100 (a tuning seed) is not one of the runs
    assert "ends at 0.16 to 0.23 of that loss (2.00 to 2.50 by seed), 0 run(s) failed" in text
    assert text.endswith("no run has stayed in its early phase and no row is set aside.")
    assert s.horizon_words in text and "2,000-round warm-up" in text
    vals2[(1, 20)] = {**vals2[(1, 20)], "loss": 1.5}                  # 1.5 / 2.5 = 0.6 > 0.5
    vals1[next(iter(vals1))] = {"acc": np.nan, "loss": np.nan, "outcome": "diverged"}
    text = s.early_phase_words(warm, vals1, vals2, 0.5)
    assert "1 run(s) failed" in text and "1 run(s) have not left their early phase" in text
    with pytest.raises(ValueError, match="^warm: no loss at round 0 for seed"):
        s.early_phase_words(warm[warm["seed"] != 2], vals1, vals2, 0.5)
