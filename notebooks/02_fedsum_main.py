# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -papermill,-execution
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -papermill,-widgets
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 — FedSUM against the baselines under P1-P3 (FedSUM Sec. 5: Fig. 1; App. H.3: Figs. 5-8)
#
# Sec. 5 of `fedsum.txt` trains CNNs on $N = 100$ clients with Dirichlet($\alpha = 0.1$) labels
# and compares FedSUM and FedSUM-CR with six baselines that need no knowledge of the
# participation: FedAvg over the active clients, FedAU, FedAWE, FedVARP, MIFA and SCAFFOLD. All
# share $\eta_g$ and the local schedule $\eta_l(t) = \eta_0 / \sqrt{t/10 + 1}$, with $(\eta_0,
# \eta_g)$ picked by a grid over FedAvg (App. H). Three participation patterns: **P1** 20 of 100
# clients uniformly, **P2** each client with probability $S/N$, **P3** with probability
# $\frac{S}{N}(0.3 \sin(\pi t / 5) + 0.7)$. One schedule per pattern and seed is replayed for
# every algorithm.
#
# * **Fig. 1 (a)**: training loss and test accuracy vs rounds; **(b)** the same vs the
#   communication workload in model units (one unit = one full model sent, up or down).
# * **Figs. 5-7**: one pattern per figure; **Fig. 8**: the last rounds, zoomed.
#
# Every run is a stored entry of `results/02_fedsum_main/<profile>/` (`fedlib.sweep`); the
# learning-rate grid is a stored sweep whose table gives the rates every method uses.

# %% tags=["parameters"]
profile: str = "quick"  # smoke (every code path, tiny), quick (MNIST, reduced scale) or paper (App. H, GPU)
seeds: list = [0, 1]  # seeds of the split, the model, the schedules and the minibatches; one run per seed
stand_in_rounds: int = 0  # tests only: above 0, the profile's settings on random stand-in data, this many rounds, P1 only
workers: int = 1  # worker processes computing missing runs (1: in this kernel)
out_dir: str = ""  # empty: figures/02_fedsum_main at the default parameters, else results/notebooks/
progress: bool = False  # progress bars of the sweeps

# %%
import numpy as np
import pandas as pd
import seaborn as sns

from fedlib import analysis, notebook, plotting, studies

runs = notebook.notebook_runs("02_fedsum_main", globals(), out_dir)   # style, profile, out_dir, store
out_dir, store, compute = runs.out_dir, runs.store, runs.compute
setup = studies.fedsum_setup(profile, stand_in_rounds, regime="earlier" if profile == "quick" else "app_h")


# %% [markdown]
# ## Settings per profile
#
# | setting | paper (Sec. 5, App. H, Table 2) | quick (here) | why |
# |---|---|---|---|
# | data | MNIST, SVHN, CIFAR-10 | MNIST only | SVHN and CIFAR-10 cannot be had on these machines |
# | model | Table 2 CNNs (MNIST: C10-C20-L50, dropout 0.2) | the MNIST CNN of Table 2 | |
# | clients | N = 100, Dirichlet 0.1 | same | structure kept |
# | patterns | P1, P2, P3 with S = 20 | same | |
# | local work | K = 10 steps, batch 128 | K = 5 steps, batch 32 | ~0.8 s per round on 2 CPU cores instead of ~3.4 s |
# | rounds | T = 2000 | T = 120, evaluated every 5 rounds | budget |
# | rate grid | FedAvg under P1, eta_0 in {0.01, 0.005, 0.001, 0.0005} with eta_0 eta_g = 0.01, best after 500 rounds | FedAvg under P1, eta_0 in {0.3, 0.1, 0.03, 0.01} x eta_g in {1, 2}, best after 40 rounds | fewer, shorter rounds need larger rates; same rule ("best" = lowest training loss, our reading) |
# | rates | eta_g = 1, eta_l(t) = eta_0 / sqrt(t/10 + 1), the same for all | same schedule, the grid's (eta_0, eta_g) for all | |
# | seeds | one run per setting | 2 seeds per setting, mean and spread shown | the issue asks for the spread |
# | FedAU | cutoff K = 50 | same | |
# | FedAWE | (FedAWE's paper) | its authors' code: the echoed update clipped to norm 0.5 before eta_g, the mean of all client copies evaluated | see below |
# | FedSUM-CR | Alg. 3, eq. (11) | eq. (11) and the exact form under a decaying rate, both shown | see below |
# | communication | "one unit = one full model"; SCAFFOLD counted as FedSUM's single-variable uplink | same convention (SCAFFOLD 1 up, 2 down; FedSUM 1 up, 2 down; FedSUM-CR and the others 1 up, 1 down) | the paper's convention |
# | evaluation | (not stated) | training loss on 50 samples per client (weighted by client size), test accuracy on the whole test set | budget |
#
# **FedSUM-CR with a decaying rate.** Eq. (11) rebuilds the correction as $(z_i - x^{(t)}) /
# ((t - a_i)\,\eta_l(t))$, which is exact for a constant rate; under $\eta_l(t) = \eta_0 /
# \sqrt{t/10 + 1}$ it over-weights $y_i$ of a client away $g$ rounds by $\sqrt{(t/10+1)/((t-g)/10+1)}$.
# `rebuild="rate_sum"` divides by $\sum_{s=a_i}^{t-1} \eta_l(s)$ instead (equal to eq. (11) for a
# constant rate). Algorithm 3 as printed uses eq. (11), and App. H says nothing of a change for
# the decaying schedule, so we read "FedSUM-CR" in the paper's figures as eq. (11) (an inference)
# and show the exact form beside it.
#
# **Communication.** FedSUM says it has "the same communication and memory cost as SCAFFOLD ...
# through single-variable uplink communication": under SCAFFOLD's option II the server can
# rebuild $\Delta c_i$ from $\Delta y_i$, so one model goes up. We count SCAFFOLD that way here
# (`uplink_vectors=1`); the FOCUS paper counts 2 up (`uplink_vectors=2`, the default).

# %%
METHODS, OURS, BASELINES = studies.fedsum.METHODS, studies.fedsum.OURS, studies.fedsum.BASELINES
PATTERNS = list(setup.patterns) if not stand_in_rounds else ["P1"]   # stand-ins: the datasets' path
print(f"profile {profile}: N={setup.num_clients}, S={setup.per_round}, K={setup.local_steps}, "
      f"batch {setup.batch_size}, T={setup.rounds}, datasets {', '.join(setup.datasets)}, "
      f"seeds {seeds}")

# %% [markdown]
# ## The learning-rate grid
# FedAvg under P1 (seed 0) for the grid's rounds at every pair; the pair with the lowest
# training loss at the end is used by every method below.

# %%
rates, grid_tables = {}, []
for ds in setup.datasets:
    grid = setup.grid_configs(ds)
    table, eta0, eta_g = studies.pick_rates(compute(list(grid)), grid, setup.max_eta_g, setup.pick_window)
    rates[ds] = (eta0, eta_g)
    grid_tables.append(table.assign(dataset=setup.dataset_name(ds)))
grid_table = pd.concat(grid_tables, ignore_index=True)
plotting.save_table(grid_table, out_dir, "lr_grid")
for ds, (eta0, eta_g) in rates.items():
    print(f"{setup.dataset_name(ds)}: chosen eta_0 = {eta0}, eta_g = {eta_g}")
grid_table

# %% [markdown]
# ## All runs
# Every method x pattern x seed (and dataset), at the chosen rates.

# %%
labels = setup.main_configs(rates, PATTERNS, seeds)           # config -> (dataset, pattern, seed, method)
df = compute(list(labels))
tidy = analysis.label(df, labels, ["dataset", "pattern", "seed", "method"])
tidy["dataset"] = tidy["dataset"].map(setup.dataset_name)
tidy["model units"] = tidy["uplink"] + tidy["downlink"]
tidy = tidy[["dataset", "pattern", "seed", "method", "status", "round", "loss", "test_acc",
             "model units", "uplink", "downlink"]]
status = tidy.drop_duplicates(["dataset", "pattern", "seed", "method"])["status"].value_counts()
print("runs by status:", dict(status))

# %% [markdown]
# ## Fig. 1 — (a) vs rounds, (b) vs communication
# Lines are means over seeds with a band from the lowest to the highest seed (a); against model
# units each seed is drawn on its own (b), since Bernoulli and sine patterns send different
# numbers of models per seed. Loss axes stop at three times the initial loss: a run that
# diverges leaves through the top.

# %%
DATASETS = list(dict.fromkeys(tidy["dataset"]))
STYLE = dict(hue_order=list(METHODS), palette=sns.color_palette("tab10", len(METHODS)))
title = f"({profile} profile; N={setup.num_clients}, S={setup.per_round}, K={setup.local_steps}, " \
        f"batch {setup.batch_size})"


def grid_figure(data: pd.DataFrame, x: str, columns: list, name: str, suptitle: str,
                per_seed: bool = False) -> None:
    """Rows: (dataset, metric); columns: patterns. Saved as ``name``."""
    extra = dict(units="seed", estimator=None, lw=1) if per_seed else dict(errorbar=("pi", 100))
    fig, _ = plotting.curves(data, "method", "pattern", x=x, col_order=columns, row="dataset",
                             title="{row}, {col}", size=(4.6, 3.3), legend_width=0, **STYLE, **extra)
    fig.suptitle(f"{suptitle} {title}")
    fig.tight_layout()
    _ = plotting.save_figure(fig, out_dir, name)


grid_figure(tidy, "round", PATTERNS, "fig1a_rounds", "Fig. 1(a) — vs rounds;")
grid_figure(tidy, "model units", PATTERNS, "fig1b_communication", "Fig. 1(b) — vs model units;",
            per_seed=True)

# %% [markdown]
# ## Figs. 5-7 — one pattern per figure

# %%
for fig_no, pattern in zip((5, 6, 7), PATTERNS, strict=False):    # stand-ins: P1 only
    grid_figure(tidy, "round", [pattern], f"fig{fig_no}_{pattern}", f"Fig. {fig_no} — {pattern};")

# %% [markdown]
# ## Fig. 8 — the last rounds
# The paper zooms on the last 160 of 2000 rounds (8%); here the last 8% of the rounds or the
# last four evaluations, whichever is longer.

# %%
zoom = max(int(round(0.08 * setup.rounds)), 4 * setup.eval_every)
grid_figure(tidy[tidy["round"] >= setup.rounds - zoom], "round", PATTERNS, "fig8_last_rounds",
            f"Fig. 8 — last {zoom} rounds;")

# %% [markdown]
# ## Tables: final values and the cost of reaching a target accuracy
# Final values are means ± standard deviations over the seeds whose run finished; a run that
# diverged (a non-finite model or loss; the rates are shared by all methods, as in the paper) has
# no final value and is listed with its round of divergence. The target of a dataset and pattern
# is 90% of the best final mean test accuracy there, rounded down to a whole percent. "rounds"
# and "model units" are the first evaluation at or above it, averaged over seeds; a method counts
# as reaching it only if every seed does.

# %%
final = analysis.label(analysis.finals(df), labels, ["dataset", "pattern", "seed", "method"])   # diverged: NaN
final["dataset"] = final["dataset"].map(setup.dataset_name)
agg = final.groupby(["dataset", "pattern", "method"]).agg(
    acc_mean=("test_acc", "mean"), acc_std=("test_acc", "std"), loss_mean=("loss", "mean"),
    loss_std=("loss", "std"), seeds=("seed", "nunique"),
    diverged=("outcome", lambda o: ", ".join(sorted(v.removeprefix("diverged at ") for v in o if v != "ok")))
).reset_index()
target = (agg.groupby(["dataset", "pattern"])["acc_mean"].max() * 0.9 * 100).map(np.floor) / 100


rows = []
by_run = analysis.label(df.assign(**{"model units": df["uplink"] + df["downlink"]}), labels,
                        ["dataset", "pattern", "seed", "method"]).assign(dataset=lambda d: d["dataset"].map(setup.dataset_name))
for (d, p, m), g in by_run.groupby(["dataset", "pattern", "method"]):
    level = target[(d, p)]
    per_seed = analysis.first_reach(g, level, columns=("round", "model units"))     # one row per seed
    reached = per_seed["round"].notna().all()
    rows.append({"dataset": d, "pattern": p, "method": m, "target acc": level,
                 "rounds to target": per_seed["round"].mean() if reached else np.nan,
                 "model units to target": per_seed["model units"].mean() if reached else np.nan})
reach = pd.DataFrame(rows)
table = agg.merge(reach, on=["dataset", "pattern", "method"])
table["method"] = pd.Categorical(table["method"], list(METHODS))
table = table.sort_values(["dataset", "pattern", "method"]).reset_index(drop=True)


def mean_std(m: float, s: float) -> str:
    """'mean ± std' over the seeds that finished ('-' if none did)."""
    return "-" if np.isnan(m) else f"{m:.4f}" if np.isnan(s) else f"{m:.4f} ± {s:.4f}"


show = pd.DataFrame({
    "dataset": table["dataset"], "pattern": table["pattern"], "method": table["method"],
    "final test acc": [mean_std(m, s) for m, s in zip(table["acc_mean"], table["acc_std"], strict=True)],
    "final train loss": [mean_std(m, s) for m, s in zip(table["loss_mean"], table["loss_std"], strict=True)],
    "seeds": table["seeds"], "diverged (seed runs)": table["diverged"].replace("", "-"),
    "target acc": table["target acc"],
    "rounds to target": table["rounds to target"].map(lambda v: "not reached" if np.isnan(v) else f"{v:.0f}"),
    "model units to target": table["model units to target"].map(
        lambda v: "not reached" if np.isnan(v) else f"{v:.0f}")})
plotting.save_table(show, out_dir, "final_and_target")
show

# %% [markdown]
# ## The paper's claims at this scale
# Each line is computed from the table above and the curves, per dataset and pattern, and
# printed as "holds" or "does not hold" here:
# * **faster** (Fig. 1(a)): FedSUM and FedSUM-CR reach the target in no more rounds than any
#   baseline;
# * **more stable** (Fig. 1(a)): their test accuracy moves less from one evaluation to the next
#   over the second half of the rounds (mean absolute change, averaged over seeds) than every
#   baseline's;
# * **less communication** (Fig. 1(b)): FedSUM-CR's final test accuracy is within one percentage
#   point of FedSUM's (or above) and it reaches the target with fewer model units.

# %%
late = tidy[tidy["round"] >= setup.rounds / 2].sort_values("round")
wobble = (late.groupby(["dataset", "pattern", "method", "seed"])["test_acc"]
          .apply(lambda s: s.diff().abs().mean()).groupby(["dataset", "pattern", "method"]).mean())
t = table.set_index(["dataset", "pattern", "method"])
claims = []
for d in DATASETS:
    for p in PATTERNS:
        r = t.loc[(d, p)]["rounds to target"]
        w = wobble.loc[(d, p)].reindex(list(METHODS))             # NaN: no late evaluations (diverged)
        base_r = r[BASELINES].min()
        fast = all(np.isfinite(r[m]) and (np.isnan(base_r) or r[m] <= base_r) for m in OURS)
        claims.append({"dataset": d, "pattern": p, "claim": "FedSUM and FedSUM-CR converge faster",
                       "at this scale": "holds" if fast else "does not hold",
                       "numbers": f"rounds to {target[(d, p)]:.2f}: FedSUM {r['FedSUM']:.0f}, "
                                  f"FedSUM-CR {r['FedSUM-CR']:.0f}, fastest baseline "
                                  f"{r[BASELINES].idxmin() if np.isfinite(base_r) else 'none'} {base_r:.0f}"})
        steady = w[BASELINES].dropna()                # baselines with evaluations in the second half
        stable = all(w[m] < steady.min() for m in OURS) if len(steady) else False
        claims.append({"dataset": d, "pattern": p, "claim": "FedSUM and FedSUM-CR are more stable",
                       "at this scale": "holds" if stable else "does not hold",
                       "numbers": f"mean |change| of test acc: FedSUM {w['FedSUM']:.4f}, FedSUM-CR "
                                  f"{w['FedSUM-CR']:.4f}, steadiest baseline "
                                  f"{steady.idxmin() if len(steady) else 'none'} {steady.min():.4f}"})
        a, u = t.loc[(d, p)]["acc_mean"], t.loc[(d, p)]["model units to target"]
        keeps = a["FedSUM-CR"] >= a["FedSUM"] - 0.01 and np.isfinite(u["FedSUM-CR"]) \
            and (np.isnan(u["FedSUM"]) or u["FedSUM-CR"] < u["FedSUM"])
        claims.append({"dataset": d, "pattern": p,
                       "claim": "FedSUM-CR keeps FedSUM's accuracy with less communication",
                       "at this scale": "holds" if keeps else "does not hold",
                       "numbers": f"final acc CR {a['FedSUM-CR']:.4f} vs {a['FedSUM']:.4f}; units to "
                                  f"target CR {u['FedSUM-CR']:.0f} vs {u['FedSUM']:.0f}"})
claim_table = pd.DataFrame(claims)
plotting.save_table(claim_table, out_dir, "claims")
claim_table

# %%
held = claim_table.groupby("claim")["at this scale"].apply(lambda s: (s == "holds").sum())
n_cases = len(DATASETS) * len(PATTERNS)
for claim, k in held.items():
    print(f"'{claim}': holds in {k} of {n_cases} dataset x pattern cases at the {profile} scale.")
cr = t.xs("FedSUM-CR", level="method")["acc_mean"]
cr_exact = t.xs("FedSUM-CR (exact rate sum)", level="method")["acc_mean"]
gap = (cr_exact - cr).abs().max()
print(f"FedSUM-CR with eq. (11) vs the exact rate sum: largest difference of final mean test "
      f"accuracy {gap:.4f} over the {n_cases} cases.")
best = table.loc[table.groupby(["dataset", "pattern"])["acc_mean"].idxmax(), ["dataset", "pattern", "method", "acc_mean"]]
for _, r in best.iterrows():
    print(f"{r['dataset']}, {r['pattern']}: highest final mean test accuracy {r['acc_mean']:.4f} ({r['method']}).")
runs = final.groupby(["dataset", "pattern", "method"]).size()
named = {setup.dataset_name(ds): rates[ds] for ds in setup.datasets}
for (d, p, m), g in final[final["outcome"] != "ok"].groupby(["dataset", "pattern", "method"]):
    print(f"{d}, {p}: {m} diverged in {len(g)} of {runs[(d, p, m)]} runs ({', '.join(g['outcome'])}) at the "
          f"shared rates (eta_0, eta_g) = {named[d]}.")
if profile == "quick":
    print("MNIST stands in for the paper's three datasets (SVHN and CIFAR-10 cannot be had here); "
          f"runs are {setup.rounds} rounds of K={setup.local_steps} steps instead of 2000 of 10.")
