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
# # 06 — FedACS toy: where heterogeneous systems drive FedAvg (FedACS Fig. 4, App. C; Figs. 7-8)
#
# The quadratic model of FedACS App. C: client $i$ has $f_i(x)=\frac12(x-c_i)^\top A_i(x-c_i)$
# with its own optimum $c_i$ and curvature $A_i$; the goal is $f=\sum_i d_i f_i$ with
# $x^*=(\sum_i d_iA_i)^{-1}\sum_i d_iA_ic_i$. Every client is reachable each round; client $i$
# runs $\tau_i$ local steps and its upload succeeds with probability $p_i$. The server
# aggregates anonymously (FedACS eq. 3: the sum of the received updates over the number of
# clients asked).
#
# This notebook also holds FedACS **Figs. 7-8** (App. I.4: the distance between each method's
# end point and the true optimum in the static and the dynamic setting, and the picture of the
# end points): the true optimum of the CNNs of notebook 07 cannot be computed, and the text
# bounds FedACS's remaining distance by "the model's dimensionality and the learning rate", App.
# C's analysis; a picture of end points needs a low-dimensional model. Fig. 7's methods are all
# here (FedAvg, c-a-FedAvg, FedVARP, FedAU, FedNova, FedACS); OS is not: its probabilities follow
# the clients' update norms, which have no fixed-point closed form.
#
# For every method and local solver we compute the **closed-form fixed point**
# (`fedlib.theory`: $\bar x=(\sum_i E[W_iM_i])^{-1}\sum_i E[W_iM_i]c_i$, App. C eqs. 33-38 in our
# notation) and the **simulated end point** (mean of the iterates over the second half of the
# run), and their distances to $x^*$.
#
# *Inferred parts.* The text of the FedACS paper (Weng et al. 2025, arXiv:2505.11304) that we
# work from lost its formulas: the FedACS sampling rule $q_i\propto d_i/(p_i\|a_i\|_1)$ and the
# aggregation are our inference, recorded in `fedlib.algorithms.sampling.FedACS`. The
# problem instance (curvatures, optima, $p_i$, $\tau_i$) is ours: the paper's numbers were lost.
# In particular, how the paper paired upload reliability $p_i$ with local work $\tau_i$ is
# unknown: our first instance pairs them **crossed** ($p_i$ rises from 0.2 to 1 while $\tau_i$
# falls from $N$ to 1: the reliable clients do the least work), and the claims that this pairing
# can decide are checked again with the other pairings (section "The pairing of $p_i$ and $\tau_i$").
#
# *Where Fig. 7 comes from.* Putting App. I.4's Fig. 7 on App. C's quadratic model is our
# reconstruction: App. I.4 shows Fig. 7 "under both static and dynamic heterogeneous settings",
# the settings of App. I.3.1's experiments, so the paper's figure may come from its CNN runs; how
# well this model matches it is uncertain (every Fig. 7 row's setting says so).

# %% tags=["parameters"]
profile: str = "quick"  # quick or paper (longer runs, tighter simulated averages)
num_clients: int = 10  # N
dim: int = 2  # dimension of the quadratic model
lr: float = 0.02  # eta_l of all methods; eta_g is 1
draws: int = 10  # FedACS: K draws with replacement per round
seed: int = 0  # seed of the problem and the participation draws
claim_seeds: list = [0, 1, 2, 3, 4]  # instances of the model (optima, curvatures) the claims compare, seed by seed
out_dir: str = ""  # empty: figures/06_fedacs_toy at the default parameters, else results/notebooks/
progress: bool = False  # progress bars

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

import fedlib
from fedlib import claims, notebook, plotting, studies

plotting.set_style()
out_dir = notebook.notebook_output_dir("06_fedacs_toy", globals(), out_dir)
toy = studies.fedacs_toy.Toy(num_clients, dim, lr, draws, seed, profile=profile)    # App. C's quadratic model
rounds = toy.rounds
N, A, c, d, prob, x_star, p_up, tau = toy.N, toy.A, toy.c, toy.d, toy.prob, toy.x_star, toy.p_up, toy.tau
solvers, methods, environment, method_options = (studies.fedacs_toy.TOY_SOLVERS, studies.fedacs_toy.TOY_METHODS,
                                                 toy.environment, toy.method_options)


# %% [markdown]
# ## Distance to the optimum, per method and local solver

# %%
rows, points = [], {}
for env_kind in ("static", "dynamic"):
    for solver in solvers:
        for label, m in methods.items():
            xbar, sim = toy.evaluate(env_kind, m, solver, progress)
            points[env_kind, solver, label] = xbar
            rows.append({"environment": env_kind, "solver": solver, "method": label,
                         "closed form": np.linalg.norm(xbar - x_star),
                         "simulated": np.linalg.norm(sim - x_star),
                         "sim vs closed form": np.linalg.norm(sim - xbar)})
dist = pd.DataFrame(rows)
_ = plotting.save_table(dist, out_dir, "distance_to_optimum", float_format="%.4f")

# %% tags=["nbval-ignore-output"]
g = sns.catplot(data=dist, x="solver", y="closed form", hue="method", col="environment",
                kind="bar", height=4, aspect=1.5)
for ax, env_kind in zip(g.axes.flat, ("static", "dynamic"), strict=True):
    sub = dist[dist["environment"] == env_kind]
    for k, (label, _) in enumerate(methods.items()):
        s = sub[sub["method"] == label]
        xs = np.arange(len(solvers)) + (k - (len(methods) - 1) / 2) * 0.8 / len(methods)
        ax.plot(xs, s["simulated"], "k.", ms=6, label="simulated" if k == 0 else None)
    ax.set_ylabel(r"$\|x_{end} - x^*\|$")
g.axes.flat[0].legend(loc="upper left", fontsize=8)
g.figure.suptitle("Distance between the end point and the true optimum (bars: closed form, dots: simulation)",
                  y=1.03)
plotting.save_figure(g.figure, out_dir, "distance_bars")
plt.show()

# %% [markdown]
# Column `sim vs closed form`: how far a simulated end point (the mean iterate over the run's second
# half) lies from the closed-form fixed point over the same schedule, its largest per method below.
# FedVARP's is 0 in the static environment: with exact gradients its table holds the fresh updates
# at its fixed point, so its iterate stays there whichever uploads fail (in the dynamic one each
# round's local work moves it a little); every other method moves with each round's arrivals, and
# a finite time average scatters around its fixed point. The claims below read closed forms, not
# end points.

# %%
resid = dist.groupby("method", sort=False)["sim vs closed form"].max()
print("largest |simulated - closed form| per method: " + ", ".join(f"{m} {v:.4f}" for m, v in resid.items()))
pd.options.display.float_format = "{:.3f}".format
dist.pivot_table(index=["environment", "solver"], columns="method", values="closed form")[list(methods)]

# %% [markdown]
# ## Which inconsistency does each method remove?
# Two sources: **communication** (heterogeneous $p_i$, $\tau_i$ equal) and **computation**
# (heterogeneous $\tau_i$, $p_i = 1$). A method *removes* a source when its fixed point tends
# to $x^*$ as $\eta\to0$: its distance shrinks in proportion to $\eta$ (ratio near 2 when
# $\eta$ is halved); a remaining bias does not shrink (ratio near 1). Closed forms with exact
# expectations of the aggregation weights (`theory.expected_weights`), SGD solver.

# %%
cons = []
for source in ("communication", "computation"):
    for label, m in methods.items():
        d1, d2 = toy.single_source(source, m, lr), toy.single_source(source, m, lr / 2)
        cons.append({"source": source, "method": label, "distance": d1, "ratio eta -> eta/2": d1 / d2,
                     "removed": bool(d1 / d2 > 1.6)})
cons = pd.DataFrame(cons)
plotting.save_table(cons, out_dir, "inconsistency_removed", float_format="%.3f")
cons.pivot(index="method", columns="source", values="removed").loc[list(methods)]

# %% [markdown]
# ## The divergence picture (d = 2, static environment, SGD)
# Iterates of each method from $x_0 = 0$, the client optima $c_i$, the true optimum $x^*$ and
# each method's closed-form fixed point.

# %% tags=["nbval-ignore-output"]
fig, ax = plt.subplots(figsize=(7, 7))
env, _ = environment("static")
ax.scatter(c[:, 0], c[:, 1], c="grey", s=25, label="client optima $c_i$")
colors = sns.color_palette(n_colors=len(methods))
for (label, m), col in zip(methods.items(), colors, strict=True):
    traj = [np.zeros(dim)]
    fedlib.run(m, prob, env, rounds=min(rounds, 600), lr_local=lr, progress=False, eval_every=rounds,
               callback=lambda t, x, traj=traj: traj.append(x.numpy().copy()), **method_options(m, p_up))
    traj = np.array(traj)
    ax.plot(traj[:, 0], traj[:, 1], "-", color=col, lw=0.8, alpha=0.7)
    ax.plot(*points["static", "SGD", label], "X", color=col, ms=11, mec="k", label=f"{label} fixed point")
ax.plot(*x_star, "*", color="gold", ms=20, mec="k", label="true optimum $x^*$")
ax.set_aspect("equal")
ax.legend(fontsize=8, loc="lower left")
ax.set_title("Trajectories and fixed points")
plotting.save_figure(fig, out_dir, "divergence_2d")
plt.show()

# %% [markdown]
# ## Commentary (from the tables above)

# %%
sgd_static = dist[(dist.environment == "static") & (dist.solver == "SGD")].set_index("method")
best = sgd_static["closed form"].idxmin()
print(f"static, SGD: closest fixed point -> {best}; "
      + ", ".join(f"{m} {v:.3f}" for m, v in sgd_static["closed form"].items()))
removed = cons.pivot(index="method", columns="source", values="removed")
for m in methods:
    kinds = [s for s in ("communication", "computation") if removed.loc[m, s]]
    print(f"{m:11s} removes: {', '.join(kinds) if kinds else 'neither'}")
print("largest |simulated - closed form|:", round(float(dist["sim vs closed form"].max()), 4))
gap = dist.pivot_table(index=["environment", "solver"], columns="method", values="closed form")
print("FedVARP vs c-a-FedAvg, largest difference of their closed-form distances over the runs' realised uploads:",
      round(float((gap["FedVARP"] - gap["c-a-FedAvg"]).abs().max()), 4))
exact = {m: toy.single_source("both", methods[m], lr) for m in ("FedVARP", "c-a-FedAvg")}
print("with exact expected weights (static, SGD): " + ", ".join(f"{m} {v:.4f}" for m, v in exact.items()))

# %% [markdown]
# ## Claims: what FedACS says of each method's objective inconsistency (Sec. 3, Sec. 4.1, Sec. 6, App. I.4)
# FedACS's statements about the baselines are statements about fixed points, which this model
# computes exactly. Each is checked on `claim_seeds` instances of the model (each draws its own
# optima and curvatures; $p_i$ and $\tau_i$ as above, paired crossed), seed by seed, by the one rule
# of `fedlib.claims`, from closed forms with exact expected weights in the static environment:
#
# * a method **removes** a source of inconsistency when its fixed point's distance to $x^*$ at
#   $\eta/2$ is about half that at $\eta$ (what is left is first order in $\eta$), and **keeps** it
#   when the distance stays (share kept near 1): the share kept is compared with 3/4, midway,
#   margin 0.05; "neither" and "both" combine the two sources, each with its verdict;
# * **closer / farther**: distances to $x^*$ with both sources at the toy's rate, margin 0.01
#   (0.5% of the radius of the optima's circle), against every other method where the claim says so;
# * App. I.2's "the step size ... does not determine the final convergence point": halving $\eta$
#   leaves each method that keeps a source where it was, its share kept within 1/4 of 1 (nearer
#   kept than removed). FedACS, which removes both, is outside the sentence's scope (settling at an
#   incorrect stationary point): App. I.4 bounds its remaining distance by the rate, its own row;
# * Sec. 4.1's "existing works [41, 37, 26, 38, 10] leverage statistical properties ... are
#   ineffective against structural inconsistency": the three of them this model runs (c-a-FedAvg
#   [26], FedAU [37], FedVARP [10]) each keep the computation inconsistency (the `inconsistency_removed`
#   table above, by the share-kept rule of the "keeps" rows).
#
# Fig. 7 shows the distances "under both static and dynamic heterogeneous settings": its claims (every
# App. I.4 row, none left out) are checked a second time in the dynamic environment ($p_i^t$ and
# $\tau_i^t$ redrawn every round). The
# distances with both sources at the toy's rate are each method's closed-form fixed point over its
# run's realised schedule; removes / keeps and the single-source comparisons use each round's exact
# expected weights given that round's $p_i^t$ and $\tau_i^t$, averaged over the rounds
# (`Toy.dynamic_source`: no noise of realised uplinks, which would not shrink with $\eta$), at $\eta$
# and $\eta/2$. FedAU's weights there are its declared limit $\omega_i = 1/p_i^t$; its interval
# estimates follow the long-run mean of $p_i^t$ instead, whose weights have the same mean over the
# rounds ($p_i^t$ is drawn apart from $\tau_i^t$), so over many rounds its fixed point is the same. Sec. 6 puts FedVARP's failure on "non-stationary statistics across training rounds":
# the dynamic environment redraws $p_i^t$ and $\tau_i^t$ independently from fixed ranges (the same
# statistics every round), and with exact gradients FedVARP's fixed point is c-a-FedAvg's by
# construction, so that row is "not tested", with the reason.
#
# Sec. 6's two statements about variance (FedNova's, c-a-FedAvg's; notebook 07 tests c-a-FedAvg's on
# its runs) are rows "not tested", with the reason; so is the dimensionality half of App. I.4's "bounded by the model's dimensionality and the
# learning rate" (this instance is defined in $d = 2$ only; the row on the learning-rate half says so).
#
# Sec. 4.2's Cor. 2.2 ("the objective is consistent ... if the heterogeneous communication and
# computation satisfy (13)", the condition lost) is checked on the toy at our reading of (13),
# $p_i \tau_i \propto d_i$: $p_i = d_i / \tau_i$ scaled to a largest $p_i$ of 1 beside the toy's own
# $\tau_i$, full participation, FedAvg's share kept at $\eta/2$ against 3/4 as in the "removes" rows
# (`studies.fedacs_toy.Toy.balanced_p`). Cor. 2.1 (its bound lost) and "no convergence guarantee in
# dynamic heterogeneous FL" (a possibility) are rows "not tested", with the reason.

# %%
print(claims.RULE)
values = studies.fedacs_toy.toy_values(claim_seeds, num_clients=num_clients, dim=dim, lr=lr, draws=draws,
                                       profile=profile)
dynamic = studies.fedacs_toy.dynamic_values(claim_seeds, progress, num_clients=num_clients, dim=dim, lr=lr,
                                             draws=draws, profile=profile)
model = f"App. C's quadratic model, our numbers (the paper's were lost): N = {N}, d = {dim}, eta = {lr:g}"


def setting_of(pairing: str) -> str:
    """The setting of the static rows at ``pairing`` of p_i and tau_i."""
    return f"{model}; {studies.fedacs_toy.pairing_words(pairing)}; static environment, closed forms; instances {claim_seeds}"


def dynamic_setting_of(pairing: str) -> str:
    """The setting of the dynamic rows at ``pairing``."""
    return (f"{model}; {studies.fedacs_toy.pairing_words(pairing)}; dynamic environment (p_i, tau_i redrawn each "
            f"round), closed forms over each run's schedule (removes / keeps, one source: each round's expected "
            f"weights); instances {claim_seeds}")


first_rows = [*studies.fedacs_toy.toy_claims(values, setting_of(toy.pairing)),
              *studies.fedacs_toy.dynamic_claims(dynamic, dynamic_setting_of(toy.pairing))]
for r in first_rows:
    print(f"[{r.check.verdict}] {r.where}: {r.claim}")

# %% [markdown]
# * **FedAvg** keeps both inconsistencies: clients with reliable uplinks and clients that run
#   many local steps pull the fixed point towards their own optima. In this instance the two
#   pulls partly cancel (the reliable clients are the slow ones), so removing only one of them
#   can move a method's fixed point *further* from $x^*$ than FedAvg's, as the bars show for
#   c-a-FedAvg, FedAU and FedNova.
# * **c-a-FedAvg and FedAU** divide by the (known, or estimated) participation probability:
#   they remove the communication bias but keep the computation bias of unequal $\tau_i$.
# * **FedVARP** aggregates its table of every client's latest update: at a fixed point that is
#   the plain mean over all clients (App. I.2's eq. 115 equals c-a-FedAvg's aggregate), so with
#   exact expected weights its fixed point is c-a-FedAvg's (printed above). Over a run's realised
#   uploads the two differ (the other printed difference): c-a-FedAvg's weight $1/p_i$ is right
#   only on average, while FedVARP's table weighs every client $1/N$ whatever arrives; the paper's "FedVarp is
#   ineffective" (App. I.4) concerns its stale updates under noisy, non-stationary training: this
#   exact-gradient model has no noise, and its dynamic environment's statistics are the same every
#   round.
# * **FedNova** normalises by the local work $\|a_i\|_1$: it removes the computation bias but,
#   averaging over the clients whose upload arrived, keeps the communication bias.
# * **FedACS** samples by $q_i \propto d_i/(p_i\|a_i\|_1)$ and removes both, for every local
#   solver and also when $p_i$ and $\tau_i$ are redrawn every round; what remains is the
#   first-order learning-rate effect (halving $\eta$ halves it).

# %% [markdown]
# ## The pairing of $p_i$ and $\tau_i$
# The paper's $p_i$ and $\tau_i$ were lost, and with them how it paired upload reliability with
# local work: which pairing its Fig. 7 had is unknown. The instance above pairs them **crossed**
# (anti-correlated: the reliable clients do the least work), where FedAvg's two biases partly
# cancel: its effective weight $p_i\tau_i$ spreads far less than $\tau_i$ (c-a-FedAvg's and FedAU's,
# which keep the computation bias) or $p_i$ (FedNova's, which keeps the communication bias). The
# claims whose check compares distances to $x^*$ with both sources acting (closer / farther,
# `studies.fedacs_toy.PAIRED_KINDS`) are therefore checked again, by the same rule on the same
# instance seeds, with notebook 07's other pairing, **same** (positively correlated: the reliable
# clients do the most work), and with **shuffled** ($\tau_i$ a random permutation per instance
# seed, independent of $p_i$): in the static environment and in the dynamic one. The rows above
# stand for the crossed instance; the ledger holds each pairing's rows, each naming its pairing.
# Every other row (removes / keeps, one source alone, App. I.2's step size) is recomputed in the static
# environment for every pairing in the verdict table below (closed forms, cheap); only the
# comparisons with both sources enter the ledger per pairing.

# %%
pairings = studies.fedacs_toy.TOY_PAIRINGS
spread = []
for p_ in pairings:
    for k in claim_seeds:
        inst = studies.fedacs_toy.Toy(num_clients, dim, lr, draws, k, profile=profile, pairing=p_)
        spread.append({"pairing": p_, "instance": k,
                       "FedAvg's p_i tau_i: max / min": (inst.p_up * inst.tau).max() / (inst.p_up * inst.tau).min(),
                       "tau_i: max / min": inst.tau.max() / inst.tau.min(),
                       "p_i: max / min": inst.p_up.max() / inst.p_up.min(),
                       "corr(p_i, tau_i)": np.corrcoef(inst.p_up, inst.tau)[0, 1]})
spread = pd.DataFrame(spread)
plotting.save_table(spread, out_dir, "pairing_weights", float_format="%.3f")
spread.groupby("pairing", sort=False).mean(numeric_only=True).drop(columns="instance")

# %%
static_by, dynamic_by = {toy.pairing: values}, {toy.pairing: dynamic}
for p_ in pairings:
    if p_ != toy.pairing:
        static_by[p_] = studies.fedacs_toy.toy_values(claim_seeds, num_clients=num_clients, dim=dim, lr=lr,
                                                      draws=draws, profile=profile, pairing=p_)
        dynamic_by[p_] = studies.fedacs_toy.dynamic_values(claim_seeds, progress, shares=False, num_clients=num_clients,
                                                           dim=dim, lr=lr, draws=draws, profile=profile, pairing=p_)
paired = studies.fedacs_toy.PAIRED_KINDS
pairing_rows = [r for p_ in pairings if p_ != toy.pairing
                for r in (*studies.fedacs_toy.toy_claims(static_by[p_], setting_of(p_), kinds=paired),
                          *studies.fedacs_toy.dynamic_claims(dynamic_by[p_], dynamic_setting_of(p_), kinds=paired))]
by_pairing = pd.DataFrame({p_: {**{("static", r.where, r.claim): r.check.words
                                   for r in studies.fedacs_toy.toy_claims(static_by[p_])},
                                **{("dynamic", r.where, r.claim): r.check.words
                                   for r in studies.fedacs_toy.dynamic_claims(dynamic_by[p_], kinds=paired)}}
                           for p_ in pairings})
by_pairing.index.names = ["environment", "where", "claim"]
plotting.save_table(by_pairing.reset_index(), out_dir, "verdicts_by_pairing")
moved = by_pairing[by_pairing.nunique(axis=1) > 1]
both = {(c[0], c[2]) for c in studies.fedacs_toy.TOY_CLAIMS if c[3][0] in paired}     # closer / farther claims
outside = [i for i in moved.index if (i[1], i[2]) not in both]
print(f"{len(moved)} of {len(by_pairing)} rows read differently across the pairings; of them, "
      f"{len(outside)} outside the closer / farther comparisons with both sources")
for (env_, _, claim_), v in moved.iterrows():
    print(f"  {env_}: {claim_}: " + "; ".join(f"{p_} {w}" for p_, w in v.items()))
by_pairing

# %% [markdown]
# The lines above name each verdict that moves with the pairing, pairing by pairing. Which pairing
# the paper's lost $p_i$ and $\tau_i$ had is unknown, so no pairing's rows stand for the paper's
# instance: a closer / farther row is a verdict on our instance with that pairing.

# %%
claim_table = claims.claims_table([*first_rows, *pairing_rows, *studies.fedacs_toy.unrun_claims()])
plotting.save_table(claim_table, out_dir, "claims")
claims.update_ledger(claim_table, "06_fedacs_toy", "FedACS", out_dir)
for r in pairing_rows:
    print(f"[{r.check.verdict}] {r.where}: {r.claim} ({r.setting.split('; ')[1].split(':')[0]})")
