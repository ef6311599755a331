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
import numpy as np
import pandas as pd
import seaborn as sns

import fedlib
from fedlib import ExperimentConfig, plotting, results

plotting.set_style()
NB = "08_amplified_fedavg"
out_dir = plotting.notebook_output_dir(NB, globals(), out_dir)
results.check_profile(profile)

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
SETTINGS = {
    "smoke": dict(dataset="digits", model="fedsum_mnist_cnn", num_clients=10, window=2, warmup=6,
                  horizon=8, grid_horizon=4, eval_every=2, P_values=[1, 5, 10], grid=[1.0, 0.1],
                  train_eval=10),
    "quick": dict(dataset="mnist", model="fedsum_mnist_cnn", num_clients=250, window=20, warmup=300,
                  horizon=300, grid_horizon=100, eval_every=20, P_values=[1, 20, 60, 100, 140, 180],
                  grid=[1.0, 0.1, 0.01, 0.001, 0.0001], train_eval=20),
    "paper": dict(dataset="fashion_mnist", model="wj_fmnist_cnn", num_clients=250, window=100,
                  warmup=2000, horizon=5000, grid_horizon=1000, eval_every=100,
                  P_values=[1, 100, 300, 500, 700, 900], grid=[1.0, 0.1, 0.01, 0.001, 0.0001],
                  train_eval=100),
}
cfg = dict(SETTINGS[profile])
GROUPS = 5
if stand_in_rounds > 0:    # the profile's exact structure on random data of the same shapes, a few rounds
    cfg.update(warmup=stand_in_rounds, horizon=stand_in_rounds, grid_horizon=stand_in_rounds,
               eval_every=stand_in_rounds, train_eval=2, grid=cfg["grid"][:1],
               P_values=[1, GROUPS * cfg["window"]])
LR0, S, I, BATCH = 0.1, 10, 5, 16
cycle = GROUPS * cfg["window"]
stand_in = {"mnist": "MNIST, standing in for FashionMNIST", "digits": "digits (smoke test)",
            "fashion_mnist": "FashionMNIST"}[cfg["dataset"]]
store = results.notebook_store(NB, profile, committed=stand_in_rounds == 0)
synthetic = {"synthetic": True, "synthetic_sizes": [20 * cfg["num_clients"], 200]} if stand_in_rounds else {}

model_args = {"dropout": 0.0} if cfg["model"] == "fedsum_mnist_cnn" else {}
base = ExperimentConfig(
    algorithm="fedavg", problem="neural", participation="periodic", rounds=cfg["warmup"],
    problem_args={"dataset": cfg["dataset"], "partition": "majority_label", "similarity": 0.05,
                  "model": cfg["model"], "model_args": model_args, "num_clients": cfg["num_clients"],
                  "batch_size": BATCH, "train_eval_per_client": cfg["train_eval"], "seed": seed,
                  **synthetic},
    participation_args={"per_round": S, "groups": GROUPS, "window": cfg["window"]},
    local_steps=I, lr_local=LR0, eval_every=cfg["eval_every"], seed=seed)
warmup = base                                                  # FedAvg (eta = 1) at the initial rate
METHODS = {                                                    # label -> (algorithm, options)
    f"amplification (eta=10, P={cycle})": ("amplified_fedavg", {"P": cycle, "gamma": 10.0}),
    "no amplification (eta=1)": ("amplified_fedavg", {"P": cycle, "gamma": 1.0}),
    "wait-minibatch": ("wait_minibatch", {"cycle": cycle}),
    "wait-full": ("wait_full", {"cycle": cycle}),
}


def phase(label: str, horizon: int, lr: float, **extra) -> ExperimentConfig:
    """A method continuing the warm-up for ``horizon`` rounds of time (a wait round costs a cycle)."""
    algo, opts = METHODS[label]
    rounds = horizon // cycle if algo.startswith("wait") and not stand_in_rounds else horizon
    every = 1 if algo.startswith("wait") else cfg["eval_every"]
    return base.replace(algorithm=algo, algorithm_args={**opts, **extra}, rounds=max(rounds, 1),
                        lr_local=lr, eval_every=every, init_from=warmup)


def tidy(df: pd.DataFrame, labels: dict) -> pd.DataFrame:
    """Label the runs and put them on one time axis: rounds after the warm-up, wait rounds
    charged as a cycle each."""
    out = df.assign(method=df["key"].map(labels)).dropna(subset=["method"])
    waited = out["waited_rounds"] if "waited_rounds" in out else np.nan
    out["time"] = np.where(out["algorithm"].str.startswith("wait"), waited, out["round"])
    return out


# %% [markdown]
# ## The learning-rate grid
# Each method continues the shared warm-up for one grid horizon at every rate of the grid; the
# rate with the lowest training loss at the end is that method's rate below.

# %%
grid_configs = {phase(label, cfg["grid_horizon"], LR0 * g): (label, LR0 * g)
                for label in METHODS for g in cfg["grid"]}
df_grid = results.require_ok(fedlib.sweep(list(grid_configs), store, progress=progress))
last = df_grid.groupby("key").tail(1).set_index("key")
grid_table = pd.DataFrame([
    {"method": label, "lr": lr, "final train loss": last.loc[c.key(), "loss"],
     "final test acc": last.loc[c.key(), "test_acc"], "status": last.loc[c.key(), "status"]}
    for c, (label, lr) in grid_configs.items()])
ok = grid_table[np.isfinite(grid_table["final train loss"]) & (grid_table["status"] == "ok")]
best_lr = ok.loc[ok.groupby("method")["final train loss"].idxmin()].set_index("method")["lr"]
grid_table["chosen"] = [best_lr.get(m) == lr for m, lr in zip(grid_table["method"], grid_table["lr"],
                                                               strict=True)]
plotting.save_table(grid_table, out_dir, "lr_grid")
grid_table

# %% [markdown]
# ## Fig. 1 — methods at their best rates
# Time on the x-axis counts rounds after the warm-up; a wait-for-all round is charged a full
# cycle of waiting, as in the paper.

# %%
fig1_configs = {phase(label, cfg["horizon"], float(best_lr[label])): label for label in METHODS}
df1 = results.require_ok(fedlib.sweep(list(fig1_configs), store, progress=progress))
t1 = tidy(df1, {c.key(): lab for c, lab in fig1_configs.items()})

fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
for ax, metric, name in ((axes[0], "loss", "training loss"), (axes[1], "test_acc", "test accuracy")):
    sns.lineplot(data=t1, x="time", y=metric, hue="method", marker="o", markersize=3, ax=ax)
    ax.set(xlabel="rounds after warm-up (wait rounds charged a cycle)", ylabel=name)
axes[0].set_yscale("log")
axes[1].get_legend().remove()
fig.suptitle(f"Fig. 1 — {stand_in}; N={cfg['num_clients']}, S={S}, cycle {cycle} rounds "
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
fig2_configs = {phase(amp, cfg["horizon"], float(best_lr[amp]), P=P): f"P={P}" for P in cfg["P_values"]}
df2 = results.require_ok(fedlib.sweep(list(fig2_configs), store, progress=progress))
t2 = tidy(df2, {c.key(): lab for c, lab in fig2_configs.items()})
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
for ax, metric, name in ((axes[0], "loss", "training loss"), (axes[1], "test_acc", "test accuracy")):
    sns.lineplot(data=t2, x="time", y=metric, hue="method", marker="o", markersize=3, ax=ax,
                 hue_order=[f"P={P}" for P in cfg["P_values"]])
    ax.set(xlabel="rounds after warm-up", ylabel=name)
axes[0].set_yscale("log")
axes[1].get_legend().remove()
fig.suptitle(f"Fig. 2 — Alg. 1 with eta=10 and several P; {stand_in}; cycle {cycle} ({profile} profile)")
fig.tight_layout()
_ = plotting.save_figure(fig, out_dir, "fig2_P")
final2 = t2.groupby("method").tail(1).set_index("method")
table2 = pd.DataFrame({"P": cfg["P_values"],
                       "final train loss": [final2.loc[f"P={P}", "loss"] for P in cfg["P_values"]],
                       "final test acc": [final2.loc[f"P={P}", "test_acc"] for P in cfg["P_values"]]})
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
