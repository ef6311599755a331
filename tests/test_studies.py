"""The FedSUM App. H setup shared by notebooks 02 and 03."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedlib import delays, studies


def test_paper_profile_is_app_h():
    s = studies.fedsum_setup("paper")
    assert (s.num_clients, s.per_round, s.local_steps, s.batch_size, s.rounds) == (100, 20, 10, 128, 2000)
    assert s.datasets == ("mnist", "svhn", "cifar10") and s.alpha == 0.1
    # App. H: eta_0 in {0.01, 0.005, 0.001, 0.0005} with eta_0 * eta_g = 0.01, 500 rounds of FedAvg
    assert sorted(e0 for e0, _ in s.grid) == [0.0005, 0.001, 0.005, 0.01]
    assert all(math.isclose(e0 * eg, 0.01) for e0, eg in s.grid) and s.grid_rounds == 500
    c = s.base("cifar10", seed=3, participation="P2")
    assert c.lr_schedule == "fedsum_sqrt" and (c.lr_local, c.lr_global) == (0.01, 1.0)
    assert dict(c.problem_args)["model"] == "fedsum_cifar10_cnn" and c.seed == 3
    assert c.participation == "bernoulli" and dict(c.participation_args) == {"p": 0.2}


def test_patterns_have_the_papers_probabilities():
    s = studies.fedsum_setup("paper")
    rounds = 40
    p3 = s.base("mnist", participation="P3").replace(rounds=rounds).schedule(num_clients=100)
    t = np.arange(rounds)
    expected = 0.2 * (0.3 * np.sin(np.pi * t / 5) + 0.7)             # App. H, P3
    np.testing.assert_allclose(p3.probs, np.repeat(expected[:, None], 100, axis=1), rtol=1e-12)
    p1 = s.base("mnist", participation="P1").replace(rounds=rounds).schedule(num_clients=100)
    assert ((p1.active > 0).sum(axis=1) == 20).all()                  # 20 of 100 every round
    p2 = s.base("mnist", participation="P2").replace(rounds=rounds).schedule(num_clients=100)
    np.testing.assert_allclose(p2.probs, 0.2)


def test_grid_configs_differ_only_in_the_rates():
    s = studies.fedsum_setup("quick")
    grid = s.grid_configs("mnist")
    assert len(grid) == len(s.grid) == len({c.key() for c in grid})
    for c, (e0, eg) in grid.items():
        assert (c.lr_local, c.lr_global, c.rounds, c.algorithm) == (e0, eg, s.grid_rounds, "fedavg")
        assert c.participation == "uniform"
        assert c.replace(lr_local=0.01, lr_global=1.0, rounds=s.rounds) == s.base("mnist")


def test_stand_in_keeps_the_structure_and_cuts_the_rounds():
    s = studies.fedsum_setup("paper", stand_in_rounds=2)
    assert (s.num_clients, s.per_round, s.local_steps, s.batch_size) == (100, 20, 10, 128)
    assert s.rounds == s.grid_rounds == 2 and len(s.grid) == 1
    args = dict(s.base("svhn").problem_args)
    assert args["synthetic"] is True and args["model"] == "fedsum_svhn_cnn"
    assert "stand-in" in s.dataset_name("svhn")


def _frame(rows):
    return pd.DataFrame(rows, columns=["key", "round", "loss", "test_acc", "status"])


def test_pick_rates_takes_the_lowest_final_training_loss_and_skips_diverged_runs():
    s = studies.fedsum_setup("quick", regime="earlier")
    grid = s.grid_configs("mnist")
    keys = [c.key() for c in grid]
    losses = [0.5, 0.2, 0.3, 0.9, 0.25, 0.4, 0.6, 0.7]
    rows = []
    for k, loss in zip(keys, losses, strict=True):
        rows += [(k, 0, 2.3, 0.1, "ok"), (k, 40, loss, 0.9, "ok")]
    rows[3] = (keys[1], 40, float("nan"), 0.1, "diverged")          # the lowest one diverged
    table, e0, eg = studies.pick_rates(_frame(rows), grid, s.max_eta_g, s.pick_window)
    assert (e0, eg) == grid[list(grid)[4]]                          # next lowest: 0.25
    assert table["chosen"].sum() == 1 and bool(table.loc[4, "chosen"])
    assert table.loc[1, "status"] == "diverged"


def test_quick_profile_keeps_app_h_rule_the_summed_step_and_a_fixed_product():
    paper, quick = studies.fedsum_setup("paper"), studies.fedsum_setup("quick")
    fs = studies.fedsum
    # App. H's run: eta_0 eta_g = 0.01, K = 10, T = 2000 -> summed step ~26.4
    s_paper = fs.summed_step(0.01, 1.0, 10, 2000)
    assert s_paper == pytest.approx(26.40, abs=0.01)
    assert (quick.local_steps, quick.rounds, quick.eval_every) == (5, 200, 5)
    # the quick grid: App. H's four eta_g at one fixed product, each run with the paper's summed step
    assert tuple(eg for _, eg in quick.grid) == tuple(eg for _, eg in sorted(paper.grid, reverse=True))
    products = {round(e0 * eg, 12) for e0, eg in quick.grid}
    assert products == {fs.matched_product(5, 200)} and fs.matched_product(5, 200) == pytest.approx(0.0733)
    for e0, eg in quick.grid:
        assert fs.summed_step(e0, eg, quick.local_steps, quick.rounds) == pytest.approx(s_paper, rel=1e-3)
    # scored after the same quarter of the run as App. H (500 of 2000 rounds)
    assert quick.grid_rounds / quick.rounds == paper.grid_rounds / paper.rounds
    assert quick.max_eta_g == paper.max_eta_g == 1.0
    with pytest.raises(ValueError, match="schedule"):
        fs.summed_step(0.1, 1.0, 5, 10, schedule="cosine")


def test_pick_rates_caps_eta_g_at_the_theory_and_keeps_the_product():
    s = studies.fedsum_setup("quick")
    grid = s.grid_configs("mnist")
    keys = [c.key() for c in grid]
    rows = []
    for k, (late, last) in zip(keys, [(0.36, 0.35), (0.34, 0.36), (0.5, 0.5), (0.4, 0.4)], strict=True):
        rows += [(k, 0, 2.3, 0.1, "ok"), (k, 45, late, 0.9, "ok"), (k, 50, last, 0.9, "ok")]
    # the late window (rounds 45-50) prefers eta_g = 2; the last evaluation alone eta_g = 1
    table, e0, eg = studies.pick_rates(_frame(rows), grid, window=0.1)
    assert bool(table.loc[1, "chosen"]) and (e0, eg) == (pytest.approx(0.0733), 1.0)
    assert list(table["used"]) == [True, False, False, False]
    assert "outside FedSUM's theory" in table.loc[1, "note"]
    assert table.loc[1, "final train loss"] == pytest.approx(0.35)
    table, e0, eg = studies.pick_rates(_frame(rows), grid, window=None)
    assert bool(table.loc[0, "chosen"]) and "note" not in table and (e0, eg) == grid[list(grid)[0]]
    # without the cap the pick is used as it is
    _, e0, eg = studies.pick_rates(_frame(rows), grid, max_eta_g=float("inf"))
    assert (e0, eg) == grid[list(grid)[1]]


def test_the_earlier_quick_regime_is_kept_for_its_stored_runs():
    e = studies.fedsum_setup("quick", regime="earlier")
    assert (e.rounds, e.grid_rounds, len(e.grid), e.max_eta_g, e.pick_window) == (120, 40, 8, math.inf, None)
    with pytest.raises(ValueError, match="regime"):
        studies.fedsum_setup("paper", regime="earlier")
    with pytest.raises(ValueError, match="regime: must be one of app_h, earlier"):
        studies.fedsum_setup("quick", regime="fast")


def test_pick_rates_refuses_a_grid_with_nothing_usable():
    s = studies.fedsum_setup("smoke")
    grid = s.grid_configs("digits")
    rows = [(c.key(), 4, float("nan"), 0.1, "diverged") for c in grid]
    with pytest.raises(RuntimeError, match="every run of the learning-rate grid"):
        studies.pick_rates(_frame(rows), grid)


@pytest.mark.parametrize("kwargs, match", [
    ({"profile": "fast"}, "profile"),
    ({"profile": "quick", "stand_in_rounds": -1}, "stand_in_rounds"),
    ({"profile": "quick", "stand_in_rounds": 1.5}, "stand_in_rounds"),
])
def test_bad_setup_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        studies.fedsum_setup(**kwargs)


def test_unknown_dataset_and_pattern_are_named():
    s = studies.fedsum_setup("quick")
    with pytest.raises(ValueError, match="dataset"):
        s.base("svhn")
    with pytest.raises(ValueError, match="participation"):
        s.base("mnist", participation="P4")


# ------------------------------------------------------------------------------ the other papers
def test_focus_study_is_app_f_and_the_authors_run_script():
    s = studies.focus.focus_setup("paper")
    assert (s.dataset, s.model, s.num_clients, s.per_round, s.batch, s.rounds) == \
        ("cifar10", "focus_cifar10_cnn", 32, 4, 128, 10_000)
    assert (s.eta, s.local_steps, s.alpha) == (2e-3, 3, 0.05)
    p = s.bern_p()
    assert np.all((p[:28] >= 0.1) & (p[:28] <= 0.3)) and np.all((p[28:] >= 0.1) & (p[28:] <= 0.9))
    configs = s.configs()
    assert len(configs) == 2 * len(studies.focus.METHODS) == len({c.key() for c in configs})
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


def test_focus_toy_panels_are_fig4():
    prob, panels = studies.focus.toy_panels(rounds=5, local_steps=3)
    assert prob.num_clients == 16 and prob.dim == 50
    assert [lr for _, lr in panels.values()] == [6e-4, 1.5e-4, 1e-4]
    assert [int(s.active.sum(1).max()) for s, _ in panels.values()] == [16, 4, 4]


def test_amplified_study_is_wang_and_ji():
    s = studies.amplified.amplified_setup("paper")
    assert (s.num_clients, s.per_round, s.local_steps, s.batch, s.lr0, s.groups) == (250, 10, 5, 16, 0.1, 5)
    assert s.cycle == 500 and s.base().rounds == s.warmup == 2000
    phase = s.phase("wait-full", 1000, 0.1)
    assert phase.rounds == 1000 // 500 and phase.eval_every == 1 and phase.warmup() == s.base()
    amp = s.phase("amplification (eta=10, P=500)", 1000, 1e-5, P=100)
    assert dict(amp.algorithm_args) == {"P": 100, "gamma": 10.0} and amp.rounds == 1000
    grid = s.grid_configs()
    assert len(grid) == len(s.methods) * len(s.grid)
    assert s.grid_rates == [0.1, 0.01, 0.001, 0.0001, 1e-05]
    assert s.authors_rates() == {"amplification (eta=10, P=500)": 1e-5, "no amplification (eta=1)": 1e-5,
                                 "wait-minibatch": 0.1, "wait-full": 0.1}
    fig1 = s.fig1_configs(s.authors_rates(), [0, 1, 2])        # independent seeds: a warm-up each
    assert len(fig1) == 12 and {c.warmup() for c in fig1} == set(s.warmups([0, 1, 2]))
    for c, (k, _) in fig1.items():                              # everything of a run keyed by its seed
        assert c.seed == dict(c.problem_args)["seed"] == c.warmup().seed == k
    assert s.fig1_configs(s.authors_rates(), [0]) == {c: v for c, v in fig1.items() if v[0] == 0}
    assert next(iter(s.fig1_configs(s.authors_rates(), [0]))).warmup() == s.base()   # the grid's seed
    with pytest.raises(ValueError, match="^seed: must be a non-negative integer, got -1"):
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


def test_fedacs_environments_and_calibrated_rates(tmp_path):
    from fedlib.store import Store
    s = studies.fedacs.fedacs_setup("smoke", stand_in_rounds=2)
    weak = s.weak_half({"partition": "one_class"})
    assert weak.tolist() == [True] * 5 + [False] * 5                      # digits 0-4 are weak
    static = s.environment("static", weak)
    assert all(1 <= e <= 2 for e, w in zip(static["local_epochs"], weak, strict=True) if w)
    assert all(0.6 <= p <= 1.0 for p, w in zip(static["uplink_p"], weak, strict=True) if not w)
    assert "local_epochs_range" in s.environment("dynamic", weak)
    crossed = s.regime(s.lr, "crossed", s.seed).environment("static", weak)  # weak uplinks: other half
    assert crossed["local_epochs"] == static["local_epochs"]
    assert all((0.2 <= p <= 0.5) != w for p, w in zip(crossed["uplink_p"], weak, strict=True))
    with pytest.raises(ValueError, match="^pairing: must be one of \\['same', 'crossed'\\], got 'cross'"):
        s.regime(s.lr, "cross", 0)
    grid = s.regime_grid([0, 1], Store(tmp_path / "grid"))
    assert set(grid) == {(s.lr, p, k) for p in studies.fedacs.PAIRINGS for k in (0, 1)}
    same, cross = grid[s.lr, "same", 0], grid[s.lr, "crossed", 0]
    assert list(same) == list(s.methods) and same["FedAvg"].lr_local == s.lr
    assert same["FedAvg"].key() != cross["FedAvg"].key()
    experiments, rates = s.experiments(Store(tmp_path))
    assert set(experiments) == {("digits", "dynamic", None), ("digits", "static", None),
                                ("digits", "dynamic", 0.5)}
    cs = experiments["digits", "dynamic", None]
    assert list(cs) == list(s.methods) and cs["FedACS"].participation == "full"
    assert cs["FedAU"].lr_local == cs["FedAvg"].lr_local == s.lr                 # App. I.2: not calibrated
    assert len(list(tmp_path.glob("client_sizes_*.csv"))) == 2                   # kept beside the store
    assert set(rates["method"]) == set(s.methods) and s.target(("digits", "dynamic", None)) == 0.5
    for key, cs in experiments.items():                                        # each run on its key's split
        assert s.split(key) == ({"partition": "dirichlet", "alpha": key[2]} if key[2] is not None
                                else studies.fedacs.DATASETS[key[0]].partition)
        for c in cs.values():
            args = dict(c.problem_args)
            want = s.split(key)
            assert (args["partition"], args.get("alpha")) == (want["partition"], want.get("alpha"))


def test_fedacs_toy_fixed_points_match_the_simulation():
    toy = studies.fedacs_toy.Toy(num_clients=6, rounds=1000, seed=1)
    dist = {}
    for method in ("fedavg", "ca_fedavg", "fedacs"):
        xbar, sim = toy.evaluate("static", method, "SGD")
        dist[method] = np.linalg.norm(xbar - toy.x_star)
        if method != "fedacs":                  # FedACS's draws are noisier than its small bias
            assert np.linalg.norm(sim - xbar) < 0.2 * dist[method], method
    assert dist["fedacs"] < min(dist["fedavg"], dist["ca_fedavg"])           # it removes both biases
    comm = {m: toy.single_source("communication", m, 0.02) for m in ("fedavg", "ca_fedavg")}
    assert comm["ca_fedavg"] < comm["fedavg"]


def test_delay_patterns_are_table_1():
    pats = studies.fedsum.delay_patterns(100, 20)
    assert pats["Case 3 cyclic"]["bound"](50) == 2 * 100 / 20
    assert math.isnan(pats["Markov (FedAU)"]["bound"](10))
    assert studies.fedsum.delay_profile("quick")[1] == 20
    with pytest.raises(ValueError, match="^profile: must be one of"):
        studies.fedsum.delay_profile("smoke")


def test_ablation_configs_are_notebook_03s_runs_per_seed():
    s = studies.fedsum_setup("quick")
    rates = {"mnist": (0.0733, 1.0)}
    runs = s.ablation_configs(rates, [0, 1, 2])
    cases, ps, fam = runs["cases"], runs["p"], runs["family"]
    # Figs. 9, 14: Cases 1-4 and biased for FedSUM, biased for FedAvg, at the grid's decaying rates
    assert len(cases) == 3 * 6 and {lab[3] for lab in cases.values()} == {"FedSUM", "FedAvg"}
    kinds = {**{name: kind for name, (kind, _) in s.cases().items()}, "biased (H.8)": s.biased[0]}
    for c, (_, pattern, seed, method) in cases.items():
        assert (c.lr_local, c.lr_global, c.lr_schedule, c.seed) == (0.0733, 1.0, "fedsum_sqrt", seed)
        assert c.rounds == s.rounds == 200
        assert (c.algorithm, c.participation) == (method.lower(), kinds[pattern])
    assert {lab[1] for lab in cases.values()} == set(s.cases()) | {"biased (H.8)"}
    # Fig. 10: Case 2 with each p at the paper's constant rate
    assert len(ps) == 3 * len(studies.fedsum.FIG10_P)
    for c, (_, p, _) in ps.items():
        assert (c.participation, dict(c.participation_args)) == ("bernoulli", {"p": p})
        assert c.lr_schedule == "constant"
        assert c.lr_local == studies.fedsum.FIG10_RATE == 0.01
    # Fig. 11 and the batch remark: the family under P1-P3 at batch 32, FedSUM-B and FedSUM at batch 8
    small = {c: lab for c, lab in fam.items() if lab[4] == studies.fedsum.SMALL_BATCH}
    assert len(fam) == 3 * (9 + 2) and {lab[3] for lab in small.values()} == {"FedSUM-B", "FedSUM"}
    for c, (_, pattern, _, method, batch) in fam.items():
        assert dict(c.problem_args)["batch_size"] == batch and c.lr_local == studies.fedsum.FIG11_RATE
        assert c.algorithm == studies.fedsum.FAMILY[method] and c.lr_schedule == "constant"
        assert c.participation == s.patterns[pattern][0]
    assert len({c.key() for r in runs.values() for c in r}) == sum(map(len, runs.values()))   # no run twice
    smoke = studies.fedsum_setup("smoke").ablation_configs({"digits": (0.1, 1.0)}, [0])
    assert {lab[1] for lab in smoke["p"].values()} == {0.2, 0.5}


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
    s = studies.amplified.amplified_setup("quick")
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


def _fake_cell(cell: dict, curves: dict) -> pd.DataFrame:
    """A sweep frame for ``cell`` (seed -> {method: config}): ``curves[method]`` -> (acc, loss)
    per round, the same for every seed; 10 local steps per round."""
    frames = []
    for cs in cell.values():
        for m, c in cs.items():
            acc, loss = curves[m]
            r = np.arange(len(acc))
            frames.append(pd.DataFrame({"key": c.key(), "round": r, "test_acc": acc, "loss": loss,
                                        "client_steps": 10 * r, "status": "ok", "diverged_at": None}))
    return pd.concat(frames, ignore_index=True)


def test_fedacs_cell_claims_are_seed_by_seed(tmp_path):
    from fedlib.store import Store
    s = studies.fedacs.fedacs_setup("smoke", stand_in_rounds=2)
    split = {"partition": "one_class"}
    cell = {k: s.regime(s.lr, "same", k).experiment("digits", split, "dynamic", 40, Store(tmp_path))[0]
            for k in (0, 1, 2)}
    T = 41
    ramp = lambda at: np.clip(np.arange(T) / at, 0, 1) * 0.8 + 0.1          # noqa: E731 - reaches 0.9 at ``at``
    down = np.linspace(2.3, 0.5, T)
    bumpy = down.copy()
    bumpy[10:16] = 2.6                                          # above its start for 6 evaluations
    curves = {m: (ramp(30), down) for m in s.methods}
    curves["FedACS"] = (ramp(10) + 0.05, down)
    curves["FedAU"] = (ramp(30), bumpy)
    found = studies.fedacs.cell_claims(_fake_cell(cell, curves), cell, target=0.7)
    assert all(r["where"] and r["quote"] for r in found)
    rows = {r["claim"].split(" (")[0]: r["check"] for r in found}
    for claim in ("fewer rounds to the target", "less computation to the target than the same four",
                  "FedACS has the highest late-window test accuracy",
                  "OS is sub-optimal: FedACS ends above it"):
        assert rows[claim].verdict == "holds", (claim, rows[claim])
    assert rows["fewer rounds to the target"].seeds == 3 and rows["fewer rounds to the target"].effect == 16
    # FedAU and OS reach the target on all three seeds: the paper's dash is not seen, but three seeds
    # cannot put the share of "never" below one half (Clopper-Pearson)
    for m in ("FedAU", "OS"):
        v = rows[f"{m} never reaches the target"]
        assert v.verdict == "inconclusive" and v.effect == 0 and "in 0 of 3 seeds" in v.reason
    curves["FedACS"] = (np.full(T, 0.5), down)                              # never reaches the target
    curves["FedAU"] = (np.full(T, 0.5), bumpy)
    found = studies.fedacs.cell_claims(_fake_cell(cell, curves), cell, target=0.7)
    rows = {r["claim"].split(" (")[0]: r["check"] for r in found}
    v = rows["fewer rounds to the target"]
    assert v.verdict == "inconclusive" and "the claimed method failed on seed 0 (FedACS never)" in v.reason
    assert rows["FedACS has the highest late-window test accuracy"].verdict == "does not hold"
    v = rows["FedAU never reaches the target"]
    assert v.effect == 1.0 and v.verdict == "inconclusive" and "6 seeds going the same way" in v.reason


def test_fedacs_mechanism_is_eq_15_over_the_schedule(tmp_path):
    from fedlib.store import Store
    s = studies.fedacs.fedacs_setup("smoke", stand_in_rounds=2)
    split = {"partition": "one_class"}
    weak = s.weak_half(split)
    sizes = s.client_sizes("digits", split, Store(tmp_path))
    for pairing in studies.fedacs.PAIRINGS:
        cs = s.regime(s.lr, pairing, 0).experiment("digits", split, "static", 3, Store(tmp_path))[0]
        m = studies.fedacs.mechanism(cs["FedACS"], cs["FedAvg"], weak, sizes)
        sched = cs["FedACS"].schedule(num_clients=s.num_clients)
        p, tau = sched.uplink_probs[0], sched.local_steps[0]
        q = sizes / (p * tau)
        q = q / q.sum()                                         # static: every round the same
        assert m["FedACS: share of draws to the weak-computation half"] == pytest.approx(q[weak].sum())
        uploads = m["FedACS: expected successful uploads per round"]
        assert uploads == pytest.approx(s.per_round * (q * p).sum())
    assert 0 < m["FedAvg: expected successful uploads per round"] <= s.per_round


def test_fedacs_tables_over_seeds_average_only_reached_targets(tmp_path):
    from fedlib.store import Store
    f = studies.fedacs
    idx = pd.Index(["FedACS", "FedAvg"], name="method")
    a = pd.DataFrame({"final test acc": [0.8, 0.7], "rounds to target": [10.0, 20.0],
                      "computation to target (local steps)": [100.0, 300.0],
                      "measured seconds to target": [1.0, 2.0], "outcome": ["ok", "ok"]}, index=idx)
    b = a.assign(**{"rounds to target": [14.0, np.nan], "outcome": ["ok", "diverged at round 9"],
                    "computation to target (local steps)": [140.0, np.nan]})
    m = f.seed_summary({0: a, 1: b})
    assert m.loc["FedACS", "rounds to target"] == 12 and m.loc["FedAvg", "rounds to target"] == 20
    assert m.loc["FedAvg", "reached"] == "1 of 2"
    assert m.loc["FedAvg", "outcome"] == "seed 1: diverged at round 9"
    t = f.paper_table({"e": m}, {"e": "MNIST"}, {"e": 0.7}).set_index("algorithm")
    assert t.loc["FedAvg", "MNIST: rounds for 70%"] == "20 (1.67) [1 of 2]"
    assert t.loc["FedACS", "MNIST: rounds for 70%"] == "12 (1.00)"
    with pytest.raises(ValueError, match="^seeds: must be a non-empty list of non-negative integers"):
        f.fedacs_setup("smoke", stand_in_rounds=2).regime_grid([], Store(tmp_path))


def test_amplified_earlier_rule_scores_the_first_cycle_and_warmups_report_their_plateau():
    s = studies.amplified.amplified_setup("quick")
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
    s = studies.amplified.amplified_setup("quick")
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


def test_fedsum_delay_rows_are_the_schedules_own_and_tables_average_seeds():
    s = studies.fedsum_setup("smoke")
    c = s.base("digits", 0, "P1")
    m = delays.delay_metrics(c.schedule(num_clients=s.num_clients).active)
    assert s.delay_row(c) == {"tau_max": m.tau_max, "tau_avg": round(m.tau_avg, 3)}
    summ = pd.DataFrame({"pattern": ["P1", "P1"], "seed": [0, 1], "final_acc": [0.5, 0.7],
                         "final_loss": [1.0, 0.8], "outcome": ["ok", "ok"], "tau_max": [4, 6],
                         "tau_avg": [1.0, 2.0]}).set_index(["pattern", "seed"])
    t = s.delay_table(summ, ["pattern"]).iloc[0]
    assert (t["tau_max"], t["tau_avg"]) == (5.0, 1.5)
    assert s.setting.startswith("smoke profile") and "T=4" in s.title
    q = studies.fedsum_setup("quick")
    assert q.setting == "quick profile (MNIST, K = 5, batch 32, T = 200 of the paper's 2000)"
    assert "MNIST stands in" in q.title and q.paper_step == pytest.approx(26.4, abs=0.05)


def test_focus_swing_is_the_late_std_of_accuracy():
    df = pd.DataFrame({"key": "a", "round": np.arange(0, 101, 10),
                       "test_acc": [0.0] * 8 + [0.5, 0.7, 0.9]})
    # the last fifth of 100 rounds: rounds 80, 90, 100
    assert studies.focus.late_swing(df, 100)["a"] == pytest.approx(np.std([0.5, 0.7, 0.9], ddof=1))


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
