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
# # 08 — Generalized FedAvg with amplification under periodic availability (Wang & Ji 2022, Figs. 1-2)
#
# Algorithm 1 of `amplified_fedavg.txt` runs FedAvg rounds and, every $P$ rounds, amplifies the
# update accumulated since the last amplification by $\eta$: $x \leftarrow x_{\text{prev}} +
# \eta (x - x_{\text{prev}})$. Sec. 6 trains CNNs on $N = 250$ clients, each with one majority
# label (5% minority data); the clients of two majority labels are available for 100 rounds,
# then the next two, and so on (a cycle of 500 rounds with a random offset); $S = 10$ clients
# per round are picked in the "regularized" way among the available ones; $I = 5$ local steps of
# batch 16. After a FedAvg warm-up, each method continues with the best learning rate of a grid.
#
# * **Fig. 1**: Alg. 1 with amplification ($\eta = 10$, $P$ = the cycle), without ($\eta = 1$,
#   i.e. FedAvg), and the two wait-for-all baselines (every client in every round; each such
#   round costs a full cycle of waiting), minibatch or full local gradients.
# * **Fig. 2**: Alg. 1 with $\eta = 10$ and several $P$, including values that do not match the
#   cycle.
#
# Every run is a stored entry of `results/08_amplified_fedavg/<profile>/` (`fedlib.sweep`):
# the warm-up is one entry shared by every method (`ExperimentConfig.init_from`), the
# learning-rate grid is a sweep whose table picks each method's rate.

# %% tags=["parameters"]
profile: str = "quick"  # smoke (every code path, tiny), quick (MNIST, time scaled down 5x) or paper
seed: int = 0  # seed of the split, the model and the availability offset
stand_in_rounds: int = 0  # tests only: above 0, every phase is cut to this many rounds on synthetic stand-in data
out_dir: str = ""  # empty: figures/08_amplified_fedavg at the default parameters, else results/notebooks/
progress: bool = False  # progress bars of the sweeps

# %%
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from fedlib import analysis, notebook, plotting, studies

runs = notebook.notebook_runs("08_amplified_fedavg", globals(), out_dir)   # style, profile, out_dir, store
NB = "08_amplified_fedavg"
out_dir, store, compute = runs.out_dir, runs.store, runs.compute

# %% [markdown]
# ## Settings per profile
#
# | setting | paper (Sec. 6, App. D; authors' code) | quick (here) | why |
# |---|---|---|---|
# | data | FashionMNIST, CIFAR-10 | MNIST (stands in for FashionMNIST: same 1x28x28 input) | no FashionMNIST or CIFAR-10 on these machines |
# | model | 5x5 CNN, conv 1-32-32, FC 1568-128-10 (228,586 parameters) | FedSUM's MNIST CNN without dropout (C10-C20-L50, 51,480 parameters) | the paper's CNN costs ~80 s per wait-full round on 2 CPU cores |
# | clients | N = 250, one majority label, 5% minority | same | structure kept |
# | availability | groups of 2 labels, windows of 100 rounds, cycle 500, random offset | windows of 20 rounds, cycle 100 | time scaled down 5x |
# | selection | S = 10, regularized walk among the available | same | |
# | local work | I = 5 steps, batch 16 | same | |
# | warm-up | FedAvg at 0.1 for 2,000 rounds | FedAvg at 0.1 for 300 rounds | time scaled down |
# | after warm-up | (not stated) | 300 rounds = 3 cycles | budget |
# | amplification | eta = 10, P = 500 (the cycle) | eta = 10, P = 100 (the cycle) | scaled cycle |
# | Fig. 2 P values | 1, 100, 300, 500, 700, 900 | 1, 20, 60, 100, 140, 180 | scaled 5x |
# | rate grid | {1, 0.1, 0.01, 0.001, 0.0001} x 0.1 | same grid, 1 cycle per run | the grid's horizon is ours |
# | best rate | (not stated how) | lowest training loss at the end of the grid run | our choice |
# | waiting cost | a wait round = one cycle (500 rounds) | a wait round = one cycle (100 rounds) | scaled cycle |
# | evaluation | (not stated) | every 20 rounds; training metrics on 20 samples per client (weighted), test accuracy on the whole test set | budget |

# %%
setup = studies.amplified.amplified_setup(profile, seed, stand_in_rounds)   # the table above, per profile
cycle, METHODS, S, stand_in = setup.cycle, setup.methods, setup.per_round, setup.data_name


# %% [markdown]
# ## The learning-rate grid
# Each method continues the shared warm-up for one grid horizon at every rate of the grid; the
# rate with the lowest training loss at the end is that method's rate below.

# %%
grid_configs = setup.grid_configs()                          # config -> (method, rate)
df_grid = compute(grid_configs)
last = df_grid.groupby("key").tail(1).set_index("key")
grid_table = pd.DataFrame([
    {"method": label, "lr": lr, "final train loss": last.loc[c.key(), "loss"],
     "final test acc": last.loc[c.key(), "test_acc"], "status": last.loc[c.key(), "status"]}
    for c, (label, lr) in grid_configs.items()])
grid_table["chosen"] = analysis.best_rows(grid_table, "final train loss", by="method")
best_lr = grid_table[grid_table["chosen"]].set_index("method")["lr"]
plotting.save_table(grid_table, out_dir, "lr_grid")
grid_table

# %% [markdown]
# ## Fig. 1 — methods at their best rates
# Time on the x-axis counts rounds after the warm-up; a wait-for-all round is charged a full
# cycle of waiting, as in the paper.

# %%
fig1_configs = {setup.phase(label, setup.horizon, float(best_lr[label])): label for label in METHODS}
df1 = compute(fig1_configs)
t1 = setup.timeline(df1, {c.key(): lab for c, lab in fig1_configs.items()})

fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
for ax, metric, name in ((axes[0], "loss", "training loss"), (axes[1], "test_acc", "test accuracy")):
    sns.lineplot(data=t1, x="time", y=metric, hue="method", marker="o", markersize=3, ax=ax)
    ax.set(xlabel="rounds after warm-up (wait rounds charged a cycle)", ylabel=name)
axes[0].set_yscale("log")
axes[1].get_legend().remove()
fig.suptitle(f"Fig. 1 — {stand_in}; N={setup.num_clients}, S={S}, cycle {cycle} rounds "
             f"({profile} profile)")
fig.tight_layout()
_ = plotting.save_figure(fig, out_dir, "fig1_methods")

# %%
final1 = t1.groupby("method").tail(1).set_index("method")
table1 = pd.DataFrame({"method": list(METHODS), "lr": [best_lr[m] for m in METHODS],
                       "rounds run": [int(final1.loc[m, "round"]) for m in METHODS],
                       "time": [int(final1.loc[m, "time"]) for m in METHODS],
                       "final train loss": [final1.loc[m, "loss"] for m in METHODS],
                       "final test acc": [final1.loc[m, "test_acc"] for m in METHODS]})
plotting.save_table(table1, out_dir, "fig1_final")
table1

# %% [markdown]
# ## Fig. 2 — amplification with several P
# $\eta = 10$ at the rate chosen for amplification in the grid; $P$ equal to the cycle is the
# amplification run of Fig. 1 (the same stored entry).

# %%
amp = f"amplification (eta=10, P={cycle})"
fig2_configs = {setup.phase(amp, setup.horizon, float(best_lr[amp]), P=P): f"P={P}" for P in setup.P_values}
df2 = compute(fig2_configs)
t2 = setup.timeline(df2, {c.key(): lab for c, lab in fig2_configs.items()})
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
for ax, metric, name in ((axes[0], "loss", "training loss"), (axes[1], "test_acc", "test accuracy")):
    sns.lineplot(data=t2, x="time", y=metric, hue="method", marker="o", markersize=3, ax=ax,
                 hue_order=[f"P={P}" for P in setup.P_values])
    ax.set(xlabel="rounds after warm-up", ylabel=name)
axes[0].set_yscale("log")
axes[1].get_legend().remove()
fig.suptitle(f"Fig. 2 — Alg. 1 with eta=10 and several P; {stand_in}; cycle {cycle} ({profile} profile)")
fig.tight_layout()
_ = plotting.save_figure(fig, out_dir, "fig2_P")
final2 = t2.groupby("method").tail(1).set_index("method")
table2 = pd.DataFrame({"P": setup.P_values,
                       "final train loss": [final2.loc[f"P={P}", "loss"] for P in setup.P_values],
                       "final test acc": [final2.loc[f"P={P}", "test_acc"] for P in setup.P_values]})
plotting.save_table(table2, out_dir, "fig2_final")
table2

# %% [markdown]
# ## The paper's claims at this scale
# Each line is computed from the tables above: "holds" or "does not hold" here. Differences of
# test accuracy below one percentage point are treated as ties.

# %%
acc = table1.set_index("method")["final test acc"]
no_amp, wait_mb, wait_full = "no amplification (eta=1)", "wait-minibatch", "wait-full"
accP = table2.set_index("P")["final test acc"]
TIE = 0.01
claims = [
    ("amplification with P equal to the cycle gives the best performance (Fig. 2)",
     accP[cycle] >= accP.max() - TIE,
     f"P={cycle}: {accP[cycle]:.4f}; best P={int(accP.idxmax())}: {accP.max():.4f}"),
    ("wait-minibatch and wait-full are worse than amplification (Fig. 1)",
     acc[wait_mb] < acc[amp] and acc[wait_full] < acc[amp],
     f"amplification {acc[amp]:.4f}, wait-minibatch {acc[wait_mb]:.4f}, wait-full {acc[wait_full]:.4f}"),
    ("FedAvg without amplification is the lowest (Fig. 1)",
     acc[no_amp] <= acc.min() + 1e-12,
     f"no amplification {acc[no_amp]:.4f}; lowest: {acc.idxmin()} {acc.min():.4f}"),
    ("wait-full gives no substantial gain over wait-minibatch (Fig. 1)",
     acc[wait_full] <= acc[wait_mb] + TIE,
     f"wait-full {acc[wait_full]:.4f} vs wait-minibatch {acc[wait_mb]:.4f}"),
]
claim_table = pd.DataFrame([{"claim": c, "at this scale": "holds" if ok else "does not hold", "numbers": n}
                            for c, ok, n in claims])
plotting.save_table(claim_table, out_dir, "claims")
for c, ok_, n in claims:
    print(f"{'holds' if ok_ else 'does not hold':14s} {c}: {n}")

# %% [markdown]
# The rates the grid chose explain much of what the claims show at this scale: a rate that
# works for plain FedAvg can blow up once the cycle's update is amplified by $\eta = 10$, so the
# one-cycle grid may push amplification to a much smaller rate.

# %%
warm_loss = float(t1.loc[t1["time"] == 0, "loss"].iloc[0])
for m in METHODS:
    rows = grid_table[grid_table["method"] == m]
    worse = rows[rows["final train loss"] > warm_loss]["lr"].tolist()
    print(f"{m}: chosen lr {best_lr[m]:.3g}; grid rates ending above the warm-up's training loss "
          f"({warm_loss:.3f}): {', '.join(f'{v:.3g}' for v in worse) or 'none'}")

# %% [markdown]
# ## What the store holds
# The runs behind this notebook (warm-up, grid, Fig. 1, Fig. 2) with their status; any of them
# can be replayed with `fedlib.verify`.

# %%
every = pd.concat([df_grid, df1, df2]).drop_duplicates("key")
where = f"results/{NB}/{profile}/" if str(store).endswith(f"{NB}/{profile}") else "a temporary store"
print(f"{every['key'].nunique() + 1} runs (the warm-up included) in {where}; "
      f"status: {every['status'].value_counts().to_dict()}")
