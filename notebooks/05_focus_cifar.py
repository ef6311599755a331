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
# # 05 — SG-FOCUS on an image task (FOCUS App. F: Figs. 8-9)
#
# App. F of the FOCUS paper (Ying, Li & Yang 2025, arXiv:2503.20117) trains a three-layer CNN on CIFAR-10 split over $N = 32$ clients with a
# Dirichlet prior of $\alpha = 0.05$ (most clients hold one or two classes, Fig. 8) and compares
# SG-FOCUS with FedAU and SCAFFOLD under arbitrary participation (Fig. 9). The settings come from
# the authors' public code: one rate $\eta = 2 \cdot 10^{-3}$ for every method,
# $K = 3$, batch 128, 10,000 rounds. F.2 reads Fig. 9 under "arbitrary client
# participation/sampling"; the authors' plotting notebook draws it in two panels, "Active" from
# their **"bern"** runs (each client independently, the first $0.9N$ with $p_i \sim U(0.1, 0.3)$,
# the rest with $p_i \sim U(0.1, 0.9)$: "we do not restrict the number of participating
# clients") and "Passive" from their **"markov"** runs. Their "markov" is a two-state chain per
# client whose transition matrix has two equal rows, [[0.8, 0.2], [0.8, 0.2]]: the next state does
# not depend on the current one, so each client is present with probability 0.2 in every round,
# independently, and we run it as that (`focus.PASSIVE`). **"uniform"** (4 of 32), a third option
# of their code, is in neither panel: its claim rows say so in their setting.
#
# The authors' baselines are not what their names say. Their FedAU increments its participation
# counter only in a branch it never reaches, so every participant's weight is the round number:
# equal weights, plain FedAvg over the participants. Their SCAFFOLD steps by the sum of the
# arrivals' $\Delta y$ divided by a fixed $S$ (their `num_sample_clients`: 10 in their "bern" and
# "markov" runs, however many arrive; 4 in "uniform", where exactly 4 arrive, so there it is the
# mean and their SCAFFOLD is SCAFFOLD); its control update divides by $N$, as the paper's.
# (An earlier version of this notebook read it as dividing the control update by 10, and ran that
# variant instead.) We run the faithful FedAU and SCAFFOLD and the two "as in the authors' code"
# variants.
#
# The quick profile keeps the authors' rules (one rate for all, $K = 3$, batch 128, their
# patterns) and runs 1,000 of their 10,000 rounds, 5 seeds (should the store lack some runs of a
# method under a pattern, that method is left out there and its comparisons are "not tested" rows
# counting the runs in); every claim is checked seed by seed
# on late-window means, and a regime section shows the verdicts at our earlier horizon (400
# rounds) and SG-FOCUS's "bern" plateau at a smaller rate.

# %% tags=["parameters"]
profile: str = "quick"  # smoke (every code path, tiny), quick (MNIST standing in for CIFAR-10, reduced rounds) or paper
seeds: list = [0, 1, 2, 3, 4]  # seeds of the split, the model, the participation probabilities, the schedules and the minibatches
stand_in_rounds: int = 0  # tests only: above 0, the profile's settings on random stand-in data, this many rounds
workers: int = 1  # worker processes computing missing runs (1: in this kernel)
out_dir: str = ""  # empty: figures/05_focus_cifar at the default parameters, else results/notebooks/
progress: bool = False  # progress bars of the sweeps

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from fedlib import claims, notebook, plotting, studies
from fedlib.store import Store

runs = notebook.notebook_runs("05_focus_cifar", globals(), out_dir)   # style, profile, out_dir, store
out_dir, store, compute = runs.out_dir, runs.store, runs.compute
focus = studies.focus

# %%
runs.summary()   # what the committed runs say (the claims ledger)

# %% [markdown]
# ## Settings per profile
#
# <details><summary>The settings table: each setting as the paper (or the authors' code) gives it, ours in the quick profile, and why</summary>
#
# | setting | paper (App. F; authors' code) | quick (here) | why |
# |---|---|---|---|
# | data | CIFAR-10 | MNIST (stands in for CIFAR-10) | no CIFAR-10 on these machines |
# | model | conv3x3 3-16-32-64 (ReLU + max-pool each), FC 1024-500-10 | FedSUM's MNIST CNN (C10-C20-L50) | the CIFAR model takes 3x32x32 inputs; a small CNN fits the CPU budget |
# | split | N = 32, Dirichlet alpha = 0.05 on the class prior, equal sizes (their code: each class cut over the clients in proportion to their draws, then random samples moved from larger clients to smaller) | `dirichlet_prior`: the same law per client (Dir(alpha x prior)), each client filled from its own draw | the same prior and sizes by another procedure: the label skew can differ |
# | augmentation | none stated (their code: random 32-pixel crops with 4 of padding and horizontal flips on CIFAR-10) | none | MNIST stands in; the paper profile has none either |
# | participation | Fig. 9's panels: "bern" (first int(0.9 N): p ~ U(0.1, 0.3), rest U(0.1, 0.9)) and "markov" (as coded, every client p = 0.2 in every round); their code's "uniform" (4 of 32) in neither | "bern", "markov" (p = 0.2) and "uniform"; the p_i drawn by `numpy.random.default_rng(seed)` | the authors drew them from numpy's global state |
# | local work | K = 3 (3 gradients, 2 local moves for FOCUS), batch 128 | same | |
# | rate | eta = 2e-3 for every method's local steps and SG-FOCUS's server step; FedAU's and SCAFFOLD's server step 1 | same; SG-FOCUS under "bern" also at 1e-3 (sensitivity panel) | the panel asks whether the "bern" plateau is the rate's |
# | rounds | 10,000, evaluated every 25 | 1,000, evaluated every 25 | CPU budget: the store's CPU-hours, from its runs' measured seconds (one thread each), are printed in the pilot section below; 10,000 rounds would take ten times as long |
# | seeds | one run (seed 66) | 5 seeds, compared seed by seed | claims are checked per seed |
# | methods | SG-FOCUS, FedAU, SCAFFOLD | the same (faithful), the authors' FedAU (= FedAvg) and SCAFFOLD (sum over a fixed S: 10 under "bern" and "markov"; under "uniform" it is SCAFFOLD) | shows why the paper's curves look as they do |
# | final values | last point of a single run | late-window means: the evaluations of the last fifth of the rounds | single evaluations of SG-FOCUS's accuracy swing (the final-values table's swing column) |
# | evaluation | not stated (their code logs the participants' minibatch loss and the test accuracy) | training loss on 50 samples per client (weighted), test accuracy on the whole test set | budget |
#
# </details>
#
# **The paper profile** runs the paper column on CIFAR-10: the authors' CNN, 10,000 rounds,
# evaluated every 25 (the training loss on 100 held samples per client), 5 seeds, no augmentation.

# %%
setup = focus.focus_setup(profile, stand_in_rounds=stand_in_rounds)   # the table above, per profile
N, ETA, K, METHODS, T = setup.num_clients, setup.eta, setup.local_steps, focus.METHODS, setup.rounds
PATTERNS = [*setup.patterns, focus.PASSIVE]                     # Fig. 9's panels, and the authors' "uniform"
for k in seeds:
    bern_p = focus.focus_setup(profile, k, stand_in_rounds).bern_p()
    print(f"seed {k}: bern: expected participants per round {bern_p.sum():.1f} of {N} "
          f"(p from {bern_p.min():.3f} to {bern_p.max():.3f})")

# %% [markdown]
# ## Fig. 8 — label distribution (bubble area = samples of that label at that client)
# The split of the first seed, computed from the data once and kept beside the store as a CSV
# (the notebook re-executes without the dataset).

# %%
first = focus.focus_setup(profile, seeds[0], stand_in_rounds)
counts = Store(store).derived_table(f"label_counts_{first.dataset}_seed{seeds[0]}", lambda: pd.DataFrame(
    first.base().build_problem().label_counts).rename_axis("client")).to_numpy()
fig, ax = plt.subplots(figsize=(11, 4))
plotting.label_distribution_bubbles(ax, counts, title=f"Fig. 8 — {setup.data_name}, N={N}, Dirichlet prior "
                                                       f"{setup.alpha} (seed {seeds[0]})")
runs.figure(fig, "fig8_label_bubbles")
share = np.sort(counts, axis=1)[:, ::-1].cumsum(1) / counts.sum(1, keepdims=True)
print(f"clients whose two largest classes hold at least 90% of their data: {(share[:, 1] >= 0.9).sum()} "
      f"of {N}; median share of the largest class {np.median(share[:, 0]):.2f}")

# %% [markdown]
# ## All runs
# Every method x pattern x seed. Each run is summarized (`fedlib.claims.summarize`): its
# outcome is "ok", "diverged" or "collapsed" (test accuracy within 0.1 of chance, or training
# loss above its start, for 4 evaluations in a row and still so at the end); a run that is not
# ok is reported, never averaged. Final values are means over the evaluations of the last fifth
# of the rounds.

# %%
labels = {**setup.configs(seeds), **setup.configs(seeds, passive=True)}    # config -> (pattern, seed, method)
# a method whose runs under a pattern the store does not all hold (computing off): left out there,
# its comparisons "not tested" rows saying how many are in
pending = setup.pending(labels, store) if notebook.computing_off() else {}
labels = {c: v for c, v in labels.items() if v[2] not in pending.get(v[0], {})}
for p, waiting in pending.items():
    for m, why in waiting.items():
        print(f"{m} under {p}: {why}")
SHOWN = [m for m in METHODS if any(v[2] == m for v in labels.values())]
df = compute(list(labels))
tidy, summary, curves = claims.tidy(df, labels, focus.NAMES, focus.CHANCE, focus.WINDOW)
print("runs by outcome:", claims.outcome_counts(summary))

# %% [markdown]
# ## Fig. 9 — training loss and test accuracy per participation pattern
# Lines are means over the seeds with a band from the lowest to the highest seed.

# %%
fig, _ = plotting.curves(tidy, "method", "pattern", col_order=PATTERNS, size=(6, 3.5), errorbar=("pi", 100),
                         hue_order=SHOWN, palette=plotting.method_palette(METHODS))
runs.figure(fig, "fig9_focus", f"Fig. 9 — {setup.data_name}; N={N}, K={K}, batch {setup.batch}, eta={ETA}, T={T}, "
                               f"seeds {seeds} ({profile} profile)")

# %% [markdown]
# ## Final values
# Per pattern and method: late-window test accuracy and training loss as mean ± standard
# deviation over the seeds whose run is ok, the spread of test accuracy inside the window (its
# standard deviation, a measure of the swing), and the runs that are not ok.

# %%
summary["swing"] = summary["key"].map(focus.late_swing(df, T))
final = runs.table(claims.per_group(summary, ["pattern", "method"], {
    "final test acc": "final_acc", "final train loss": "final_loss", "test acc swing (std in window)": "swing"}),
    "fig9_final")
notebook.folded_tables("Final values per pattern and method", final)   # folded: page height

# %% [markdown]
# ## The paper's claim, checked seed by seed
# "SG-FOCUS shows the best performance on convergence speed and test accuracy, compared to FedAU
# and SCAFFOLD" (App. F.2). Per pattern, against the faithful baselines and against the authors'
# variants, two checks, each holding only if it holds against each rival. Per seed the difference
# that favours the claim, then the mean effect and its 95% t-interval, judged by the one rule of
# `fedlib.claims` (printed below) with the margins of `claims.MARGINS`, fixed before the runs
# were read. (Our Fig. 9 also plots the training loss, which the authors' plotting notebook does not; the
# text claims nothing about it, so it is shown in the figures and final values, not checked.)
#
# * **higher test accuracy**: late-window mean; margin 0.005;
# * **faster**: rounds until the trailing mean of 3 evaluations of test accuracy reaches 98% of
#   the lower of the two runs' late-window values; margin one evaluation interval.
#
# Under "bern" the cause of a row that does not hold also gives what the notebook's Fashion-MNIST
# pilot (its section below: two seeds, the harder stand-in) says of the same check by the same rule,
# against the rivals the pilot ran (SCAFFOLD and the authors' SCAFFOLD; FedAU was not run there): a
# note beside the row, not a row of its own, since it has two seeds. SG-FOCUS at the smaller rate of
# the regime section is *not* in the causes: there only SG-FOCUS moves off App. F.1's one rate for
# every method (its rivals keep theirs), so it breaks the paper's rule; the regime section shows it,
# labelled so.
#
# App. F.1 also reads Fig. 8: "we can roughly observe that the data of each client mainly covers
# 1-2 classes". On the split of Fig. 8 above (one split, as the paper draws one; exact, no run): a
# client mainly covers 1-2 classes when its two largest classes hold at least 90% of its data (the
# other eight together at most a tenth, one class's share of an even split), and "roughly each"
# asks it of at least three in four clients, counted over the clients with the 95%
# Clopper-Pearson interval as events are counted over seeds (`focus.MAINLY`, `focus.ROUGHLY_EACH`;
# our reading).
#
# Both claims are the paper's on CIFAR-10, which cannot be had here: each is also a "not tested" row
# on CIFAR-10 itself (`setup.unrun_claims()`), beside the stand-in's rows.

# %%
print(claims.RULE)
bern = PATTERNS[0]
# the Fashion-MNIST pilot's runs (issue 50, its section below), read here so that each "bern" row's
# cause says what the pilot finds for the same check, against the rivals it ran
PILOT_DATA = {"MNIST": setup.dataset, "Fashion-MNIST": "fashion_mnist"}
PILOT = profile == "quick"                         # the pilot is of the quick profile's stand-in
if PILOT:
    pilot = {c: v for name, ds in PILOT_DATA.items() for c, v in setup.pilot_configs(ds, label=name).items()}
    p_pending = setup.pending(pilot, store) if notebook.computing_off() else {}
    for name, waiting in p_pending.items():
        for m, why in waiting.items():
            print(f"the pilot waits for its runs of {m} on {name}: {why}")
    PILOT = not p_pending
pilot_note = {}
if PILOT:
    pilot_df = compute(list(pilot))
    p_tidy, p_summary, p_curves = claims.tidy(pilot_df, pilot, focus.PILOT_NAMES, focus.CHANCE, focus.WINDOW)
    p_summary = p_summary.sort_index()
    p_frames = {name: studies.base.Frames(p_summary, p_curves, focus.PILOT_SEEDS, setup.eval_every,
                                          prefix=(name,)) for name in PILOT_DATA}
    pilot_note = focus.pilot_causes(p_frames["Fashion-MNIST"], "Fashion-MNIST (standing in for CIFAR-10)")
claim_rows = [r for p in PATTERNS
              for r in setup.claims(summary, curves, p, seeds, then=pilot_note if p == bern else None,
                                    pending=pending.get(p))]
# App. F.1's reading of Fig. 8, on the split drawn above (exact: no run); both claims on CIFAR-10 itself
claim_table = runs.claims([*claim_rows, first.label_claim(counts), *setup.unrun_claims()], "FOCUS",
                          setting=["pattern"])

# %%
for _, r in claim_table.iterrows():
    print(f"[{r['verdict']}] {r['claim']} " + (f"under {r['pattern']}" if r["pattern"] else f"({r['setting']})"))
AU_CODE, SC_CODE = focus.RIVALS["the authors' variants"]
fin = summary.groupby(["pattern", "method"])[["final_acc", "final_loss"]].mean()
for p in PATTERNS:
    t = fin.loc[p, "final_acc"]
    sc = setup.same_runs(p).get(SC_CODE, SC_CODE)
    theirs = (f"{t[sc]:.4f}" + (" (the same runs)" if sc != SC_CODE else "")) if sc in t else "(runs pending)"
    print(f"{p}: mean final test accuracy: faithful FedAU {t['FedAU']:.4f} vs the authors' FedAU "
          f"{t[AU_CODE]:.4f}; SCAFFOLD {t['SCAFFOLD']:.4f} vs the authors' SCAFFOLD {theirs}.")
print(f"SG-FOCUS's server step is eta times the SUM of the clients' latest gradients, i.e. about "
      f"{N} x eta = {N * ETA:.3f} on the average objective, while the FedAvg-type methods step by eta "
      "per local step: with one rate for all, as in the authors' code, the methods do not take "
      "steps of the same length.")

# %% [markdown]
# ## Regime: the horizon, and SG-FOCUS's "bern" plateau at a smaller rate
# Our earlier quick profile stopped at 400 rounds and judged the last 3 evaluations. The same
# checks on the same runs cut at that horizon (late window: the last fifth of the cut) show which
# verdicts the horizon decides. Then the question that decides the accuracy and speed claims
# under "bern": does SG-FOCUS's swinging plateau shrink with the horizon, or with a smaller rate?
# SG-FOCUS runs under "bern" at half the paper's rate on the same seeds (a sensitivity panel: the
# verdicts above stay at the paper's rate, the one rate of the authors' code).

# %%
CUT = 400 if profile == "quick" else max(2 * setup.eval_every, T * 2 // 5 // setup.eval_every * setup.eval_every)
horizon_table, cut_summary = setup.horizon_check(df, labels, claim_rows, seeds, CUT, pending)
changed = (horizon_table[f"at T = {T}"] != horizon_table[f"cut at {CUT}"]).sum()
print(f"{changed} of {len(horizon_table)} verdicts differ between the cut at {CUT} rounds and T = {T}.")
notebook.folded_tables(f"The verdicts at T = {T} and cut at {CUT}", runs.table(horizon_table, "regime_horizon"),
                       index=False)   # folded: page height

# %%
# SG-FOCUS under "bern" at the smaller rate: a sensitivity panel that breaks App. F.1's one rate for every
# method (only SG-FOCUS moves; its rivals keep the paper's rate), so none of it enters the ledger
E0 = focus.SENSITIVITY_ETAS[0]
sens = setup.sensitivity_configs(seeds)                        # config -> (eta, seed)
sens_tidy, sens_summary, sens_curves = claims.tidy(compute(list(sens)), sens, ["eta", "seed"], focus.CHANCE,
                                                   focus.WINDOW)
panel_rows = setup.claims(summary, curves, bern, seeds, ours=(sens_summary, sens_curves, lambda k: (E0, k)),
                          pending=pending.get(bern))
LOSS_MARGIN = claims.MARGINS["training loss"]
sens_summary["swing"] = sens_summary["key"].map(focus.late_swing(sens_tidy, T))
cut_summary["swing"] = cut_summary["key"].map(focus.late_swing(df[df["round"] <= CUT], CUT))
cases = [(f"eta {ETA:g}, cut at {CUT}", cut_summary, [(bern, k, "SG-FOCUS") for k in seeds]),
         (f"eta {ETA:g}, T = {T}", summary, [(bern, k, "SG-FOCUS") for k in seeds])]
cases += [(f"eta {e:g}, T = {T}", sens_summary, [(e, k) for k in seeds]) for e in focus.SENSITIVITY_ETAS]
plateau_table = setup.plateau_table(cases)
runs.table(plateau_table.drop(columns=["_loss", "_swing"]), "regime_plateau")
both = pd.concat([tidy[(tidy["pattern"] == bern) & (tidy["method"] == "SG-FOCUS")].assign(eta=f"{ETA:g}"),
                  sens_tidy.assign(eta=sens_tidy["eta"].map("{:g}".format))], ignore_index=True)
fig, axes = plotting.curves(both, "eta", None, size=(6, 3.8), errorbar=("pi", 100), legend_width=0)
for a in axes.flat:
    a.axvline(CUT, color="grey", ls=":", lw=1)
runs.figure(fig, "regime_plateau", f"SG-FOCUS under bern at two rates; {setup.data_name}; seeds {seeds}; dotted: "
                                   f"the earlier horizon ({profile} profile)")
display(plateau_table.drop(columns=["_loss", "_swing"]))
pl = plateau_table.set_index("SG-FOCUS under bern")
for what, x, y in (("the horizon", pl.index[0], pl.index[1]), ("the smaller rate", pl.index[1], pl.index[2])):
    dl = pl.loc[y, "_loss"] - pl.loc[x, "_loss"]
    print(f"with {what} ({x} -> {y}): late training loss {pl.loc[x, '_loss']:.3f} -> {pl.loc[y, '_loss']:.3f} "
          f"({'shrinks' if dl < -LOSS_MARGIN else 'grows' if dl > LOSS_MARGIN else 'unchanged within ' + format(LOSS_MARGIN, 'g')}), "
          f"accuracy swing {pl.loc[x, '_swing']:.4f} -> {pl.loc[y, '_swing']:.4f}.")

# %% [markdown]
# The claims under "bern" with SG-FOCUS at the smaller rate (its rivals at the paper's rate):
# how much of the verdict is the rate. **This breaks the paper's rule** (App. F.1 and the authors'
# run script: one rate for every method; only SG-FOCUS is moved here, its rivals are not re-run), so
# these verdicts stay here and are not in the ledger or in any row's cause.

# %%
paper_rows = {r.claim: r.check.verdict for r in claim_rows if r.context["pattern"] == bern}
runs.table(pd.DataFrame([{"claim": r.claim, f"SG-FOCUS at eta {ETA:g}": paper_rows[r.claim],
                          f"SG-FOCUS at eta {E0:g} (breaks the one-rate rule)": r.check.verdict,
                          "numbers": r.check.numbers}
                         for r in panel_rows]), "regime_rate")

# %% [markdown]
# ## Pilot: would Fashion-MNIST decide the "bern" rows better? (issue 50)
# The pilot was planned when, under "bern", the rows against SCAFFOLD and the authors' SCAFFOLD (then
# the variant we had misread from their code, see the top) were inconclusive on MNIST, where the
# methods end within a few points of each other near its ceiling; its runs of the authors' SCAFFOLD
# are the corrected ones, and the claim rows above give today's verdicts on MNIST. Fashion-MNIST
# (Debian's `dataset-fashion-mnist`: the same 28x28 inputs, the same small CNN) is harder; like MNIST it stands in for CIFAR-10. The pilot runs
# SG-FOCUS and the two SCAFFOLDs under "bern" on seeds 0 and 1 with every quick setting but the
# dataset (the runs a switched profile would compute, kept in this store), beside the MNIST runs of
# the same seeds. Its rule, fixed before its runs were read, is printed first; then the late-window
# test accuracy of each run, each check's per-seed difference d (positive favours SG-FOCUS) and the
# seeds its spread would need (d: one value per seed, seeds 0 and 1), the decision and what
# switching would cost.

# %%
# the pilot's runs were read with the claims above (PILOT, pilot, p_summary, p_frames)
if PILOT:
    print(focus.PILOT_RULE)
    checks = pd.concat([focus.pilot_checks(p_frames[name]).assign(dataset=name) for name in PILOT_DATA],
                       ignore_index=True)
    runs_ok = {name: int((p_summary.loc[name, "outcome"] == "ok").sum()) for name in PILOT_DATA}
    better, switch = focus.pilot_decision(checks, "MNIST", "Fashion-MNIST",
                                          runs_ok["Fashion-MNIST"] == len(p_summary.loc["Fashion-MNIST"]))
    runs.table(checks, "pilot_fmnist_checks")
    acc = p_summary["final_acc"].unstack(["dataset", "seed"]).loc[["SG-FOCUS", *focus.PILOT_RIVALS], list(PILOT_DATA)]
    display(runs.table(acc.round(4), "pilot_fmnist_accuracy"))

    def _cells(r):
        return pd.Series({f"{r['dataset']}: d": ", ".join(f"{r[f'd seed {k}']:.4g}" for k in focus.PILOT_SEEDS),
                          f"{r['dataset']}: seeds needed": "never" if pd.isna(r["seeds needed"])
                          else f"{r['seeds needed']:.0f}"})
    view = pd.concat([checks[checks["dataset"] == name].set_index(["rival", "check"]).apply(_cells, axis=1)
                      for name in PILOT_DATA], axis=1)
    display(view.assign(**{"Fashion-MNIST decides better": better}))

# %%
if PILOT:
    fig, _ = plotting.curves(p_tidy, "method", "dataset", col_order=list(PILOT_DATA), size=(4.6, 2.8),
                             metrics={"test_acc": "test accuracy"}, errorbar=("pi", 100),
                             hue_order=["SG-FOCUS", *focus.PILOT_RIVALS], palette=plotting.method_palette(METHODS))
    runs.figure(fig, "pilot_fmnist", f"Pilot: bern, eta={ETA}, T={T}, seeds {list(focus.PILOT_SEEDS)}; both datasets "
                                     "stand in for CIFAR-10")
    for name in PILOT_DATA:
        a = acc[name]
        print(f"{name}: late test accuracy {a.min().min():.4f} to {a.max().max():.4f}; between the methods "
              + ", ".join(f"seed {k}: {a[k].max() - a[k].min():.4f}" for k in a.columns)
              + f"; per method from seed to seed up to {(a.max(axis=1) - a.min(axis=1)).max():.4f}; "
              f"runs ok {runs_ok[name]} of {a.size}.")
    sg = p_tidy[(p_tidy["dataset"] == "Fashion-MNIST") & (p_tidy["method"] == "SG-FOCUS")].sort_values("round")
    above = sg.groupby("seed").apply(lambda h: int((h["loss"] > h["loss"].iloc[0]).sum()), include_groups=False)
    print(f"SG-FOCUS on Fashion-MNIST: training loss above its start in {above.sum()} of {len(sg)} evaluations, "
          f"up to {sg['loss'].max():.2f} (start {sg.groupby('seed')['loss'].first().max():.2f}); "
          "not diverged or collapsed by the rule of \"All runs\".")
    print(f"Fashion-MNIST decides {int(better.sum())} of {len(better)} comparisons with fewer seeds than MNIST: "
          + ("switch the quick profile to Fashion-MNIST." if switch else "keep MNIST for this notebook's quick "
             "profile."))
    secs = pilot_df.groupby("key")["seconds"].max()            # measured seconds of each run (one thread)
    by = {v: float(secs[c.key()]) for c, v in pilot.items()}
    fm = sum(t for (name, _, _), t in by.items() if name == "Fashion-MNIST")
    mn = sum(t for (name, _, _), t in by.items() if name == "MNIST")
    store_h = studies.real.cost_hours(df) + studies.real.cost_hours(compute(list(sens)))
    n_runs, held = len(labels) + len(sens), len(by) // 2
    print(f"Cost: this notebook's {n_runs} quick runs took {store_h:.1f} CPU-hours on MNIST (their measured "
          f"seconds, one thread each); the pilot's {held} Fashion-MNIST runs took {fm / mn:.2f} x the seconds of "
          f"their MNIST counterparts (the same model on inputs of the same shape). A switch recomputes the "
          f"{n_runs - held} runs the pilot does not hold: about {(store_h - mn / 3600) * fm / mn:.1f} CPU-hours.")

# %% [markdown]
# On Fashion-MNIST the methods end far apart (the spread between them printed above is several
# times MNIST's), but not as the paper has it: SG-FOCUS at the paper's one rate swings hard under
# "bern" (its training loss climbs above its start) and ends far below both SCAFFOLDs on both seeds,
# so the accuracy checks turn against the claim, with a wide spread from seed to seed, where MNIST's
# same two seeds favour it. A speed check it decides better is measured to 98% of the lower
# plateau, which is SG-FOCUS's own low one, reached early. By the rule fixed beforehand (two seeds
# give a coarse spread) this notebook's quick profile stays on MNIST, and the store of a switch is
# not computed (its CPU-hours above). The pilot's checks, by the rule of the claims, stand in the
# causes of the "bern" rows they bear on (a row that holds on MNIST carries no cause), so a reader of
# the ledger sees them. What the harder dataset magnifies is the "bern" plateau that
# the regime section ties to SG-FOCUS's rate; SG-FOCUS at the smaller rate on Fashion-MNIST was not
# part of the pilot.

# %%
if profile == "quick":
    print(f"MNIST stands in for CIFAR-10 (it cannot be had here), with FedSUM's small CNN; runs are {T:,} of "
          f"the paper's 10,000 rounds; seeds {seeds}.")
