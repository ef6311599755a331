"""What the site says that no file of the repository computes: the four papers' references, what
each figure under ``figures/`` shows, which README section is which kind of guide, and how the API
is grouped by task. ``docs/build.py`` reads it; every number shown next to these words (verdict
counts, rows, seeds) is computed from ``figures/claims_ledger.csv`` at build time.

The papers' titles and authors are those of the paper texts the notebooks were written from; the
arXiv identifiers are those the package's docstrings cite. Where a full name is not in either, the
surname is given as the docstrings give it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    """One of the four papers: its ledger name (``paper`` column), reference and what the
    companion regenerates of it."""

    key: str            # the ``paper`` column of the ledger
    slug: str           # page name under papers/
    short: str          # the name on cards
    title: str
    authors: tuple[str, ...]
    year: int
    arxiv: str | None   # identifier as cited in the package's docstrings; None: not known
    venue: str
    notebooks: tuple[str, ...]
    regenerated: tuple[str, ...]
    not_regenerated: tuple[str, ...]
    bibkey: str
    found: str          # where the reference was read


PAPERS: tuple[Paper, ...] = (
    Paper(
        key="FedSUM", slug="fedsum", short="FedSUM",
        title="FedSUM Family: Efficient Federated Learning Methods under Arbitrary Client Participation",
        authors=("Runze You", "Shi Pu"), year=2025, arxiv="2512.18275", venue="arXiv preprint",
        notebooks=("01_participation_delays", "02_fedsum_main", "03_fedsum_ablations",
                   "09_real_availability"),
        regenerated=(
            "Table 1 and App. F: the delay metrics tau_max / tau_avg of Cases 1-4, P2, P3, the biased "
            "and Markov patterns against the lemmas' bounds (notebook 01).",
            "Fig. 1 (a) against rounds, (b) against model units, Figs. 5-7 (one pattern per column) and "
            "Fig. 8 (the last rounds): FedSUM, FedSUM-CR and the baselines under P1-P3 (notebook 02).",
            "Figs. 4, 9, 10, 11 and 14: labels per client, Cases 1-4, several p, the family at a constant "
            "rate, the batch-size remark of App. H.5, biased sampling (notebook 03).",
            "The headline claims again under a recorded smartphone availability trace (notebook 09).",
        ),
        not_regenerated=(
            "SVHN and CIFAR-10 of Fig. 1 run in the paper profile only: the quick profile uses MNIST "
            "for all three datasets (a CPU budget of minutes).",
            "Fig. 12 (ResNet-18 on CIFAR-10/100) runs in the paper profile only: no CIFAR data on the "
            "machines that built the committed results.",
            "Fig. 13 (BERT on SST-2) is out of scope: no SST-2 or pretrained weights here, and a "
            "transformer does not fit the two-core budget.",
        ),
        bibkey="you2025fedsum",
        found="paper text (title, authors); fedlib/delays.py, fedlib/algorithms/fedsum.py (arXiv id)"),
    Paper(
        key="FOCUS", slug="focus", short="FOCUS",
        title="Exact and Linear Convergence for Federated Learning under Arbitrary Client "
              "Participation is Attainable",
        authors=("Ying", "Li", "Yang"), year=2025, arxiv="2503.20117", venue="arXiv preprint",
        notebooks=("04_focus_toy", "05_focus_cifar", "09_real_availability"),
        regenerated=(
            "Fig. 4: the least-squares toy under full, uniform and arbitrary participation, with "
            "FOCUS's linear rate, at the paper's own scale (notebook 04).",
            "App. F, Figs. 8-9: the label bubbles and SG-FOCUS against FedAU and SCAFFOLD (faithful "
            "and as the authors' code runs them) under Fig. 9's two panels, \"bern\" and \"markov\", and "
            "their code's \"uniform 4 of 32\" (notebook 05).",
            "The headline claim again under a recorded smartphone availability trace (notebook 09).",
        ),
        not_regenerated=(
            "CIFAR-10 and the FOCUS CNN over 10,000 rounds run in the paper profile only: the quick "
            "profile trains MNIST with FedSUM's small CNN for 1,000 rounds.",
        ),
        bibkey="ying2025focus",
        found="paper text (title); fedlib/algorithms/variance_reduced.py (authors' surnames, arXiv id; "
              "their first names are not in the paper text)"),
    Paper(
        key="FedACS", slug="fedacs", short="FedACS",
        title="Heterogeneity-Aware Client Sampling: A Unified Solution for Consistent Federated Learning",
        authors=("Weng", "Ren", "Xiao", "Skoglund"), year=2025, arxiv="2505.11304", venue="arXiv preprint",
        notebooks=("06_fedacs_toy", "07_fedacs_experiments", "09_real_availability"),
        regenerated=(
            "Fig. 4 and App. C: closed-form and simulated fixed points of each aggregation and local "
            "solver; Figs. 7-8 (notebook 06).",
            "Sec. 6 and App. I: Figs. 6, 9, 10 and Tables 1 and 4 (MNIST), FedACS against FedAvg, "
            "c-a-FedAvg, FedVARP, FedNova, FedAU and OS, with a regime grid over the settings the "
            "text lost (notebook 07).",
            "The headline claims again under a recorded smartphone availability trace (notebook 09).",
        ),
        not_regenerated=(
            "The text lost N, the rates and the epoch / upload-probability ranges: notebook 07 runs a "
            "grid over them and says which cell each figure uses; FedACS's update rule is inferred "
            "(eqs. 3, 15).",
            "CIFAR-10 and CINIC-10 (Tables 1 and 4) run in the paper profile only: the quick profile "
            "runs Tables 1 and 4 and Figs. 6 and 9 on MNIST, and Fig. 10 on Fashion-MNIST, standing in "
            "for CIFAR-10.",
        ),
        bibkey="weng2025fedacs",
        found="paper text (title); fedlib/algorithms/sampling.py, fedlib/studies/fedacs_toy.py (authors' "
              "surnames, arXiv id; their first names are not in the paper text)"),
    Paper(
        key="Wang & Ji 2022", slug="wang-ji-2022", short="Wang & Ji 2022",
        title="A Unified Analysis of Federated Learning with Arbitrary Client Participation",
        authors=("Shiqiang Wang", "Mingyue Ji"), year=2022, arxiv="2205.13648",
        venue="Advances in Neural Information Processing Systems (NeurIPS)",
        notebooks=("08_amplified_fedavg", "09_real_availability"),
        regenerated=(
            "Figs. 1-2: amplification against no amplification and the wait-minibatch / wait-full "
            "baselines after a FedAvg warm-up, each at its own tuned rate and at the authors' rates, "
            "with several P (notebook 08).",
            "The headline claim again under a recorded smartphone availability trace (notebook 09).",
        ),
        not_regenerated=(
            "CIFAR-10 cannot be had on the machines that built the committed results, so its rows are "
            "not run. The quick profile runs the paper's FashionMNIST with FedSUM's small CNN standing in "
            "for the paper's CNN and time scaled down 5x (a cycle of 100 rounds); the paper profile runs "
            "FashionMNIST with the paper's CNN and the paper's cycle.",
        ),
        bibkey="wang2022unified",
        found="paper text (title, authors); fedlib/algorithms/amplified.py (arXiv id, NeurIPS)"),
)


@dataclass(frozen=True)
class Figure:
    """A figure file ``figures/<notebook>/<stem>.png``: what of the paper it regenerates, what it
    shows, and which ledger rows it supports (rows of ``notebook`` whose ``where`` matches
    ``where`` and whose setting matches ``setting``, both regular expressions; None: none)."""

    label: str
    shows: str
    where: str | None = None
    setting: str = ""
    notebook: str | None = None   # the ledger rows' notebook when it is not the figure's own


FIGURES: dict[str, dict[str, Figure]] = {
    "01_participation_delays": {
        "participation_heatmaps": Figure("FedSUM Table 1 (patterns)", "which clients take part in the "
                                         "first rounds of each participation pattern (clients by rounds)"),
        "tau_per_round": Figure("FedSUM eqs. 2-4", "the per-round delay tau_t of one draw of each pattern"),
        "delays_vs_T": Figure("FedSUM Table 1, App. F", "Monte Carlo means of tau_max and tau_avg against "
                              "the horizon T, beside the lemmas' bounds (the premise of Remark 4.2 and of "
                              "Table 1's rates, whose rows are not tested)", r"Lemma F|Remark 4\.2|Table 1"),
    },
    "02_fedsum_main": {
        "fig1a_figs5-7_rounds": Figure("FedSUM Fig. 1(a), Figs. 5-7", "training loss and test accuracy "
                                       "against rounds, FedSUM and FedSUM-CR against the baselines, one "
                                       "participation pattern (P1-P3) per column, on MNIST (the paper's "
                                       "SVHN and CIFAR-10 panels are not run here)", r"Fig\. 1\(a\)"),
        "fig1b_communication": Figure("FedSUM Fig. 1(b)", "test accuracy against communication (model "
                                      "units), one pattern per column, on MNIST", r"Fig\. 1\(b\)"),
        "fig8_last_rounds": Figure("FedSUM Fig. 8", "the last rounds of the runs of Fig. 1, zoomed in"),
        "regime_P1": Figure("regime section (not in the paper)", "the methods under P1 at the earlier "
                            "quick rates"),
    },
    "03_fedsum_ablations": {
        "fig4_label_distribution": Figure("FedSUM Fig. 4", "the labels each client holds"),
        "fig9_cases": Figure("FedSUM Fig. 9", "FedSUM under participation Cases 1-4, with their measured "
                             "tau_max and tau_avg", r"Fig\. 9"),
        "fig14a_cases_and_biased": Figure("FedSUM Fig. 14(a)", "FedSUM under Cases 1-4 and the biased "
                                          "pattern", r"Fig\. 14\(a\)"),
        "fig14b_biased": Figure("FedSUM Fig. 14(b)", "FedSUM and FedAvg under the biased pattern",
                                r"Fig\. 14\(b\)"),
        "fig10_case2_p": Figure("FedSUM Fig. 10", "FedSUM under Case 2 with several p at a constant "
                                "local rate", r"Fig\. 10"),
        "fig11_family_mnist": Figure("FedSUM Fig. 11", "FedSUM-B, FedSUM and FedSUM-CR at a constant "
                                     "local rate (MNIST)", r"Fig\. 11"),
        "fig11_batch_size": Figure("FedSUM App. H.5", "the batch-size remark of App. H.5: the family at "
                                   "several batch sizes", r"App\. H\.5$"),
    },
    "04_focus_toy": {
        "focus_toy_relative_error": Figure("FOCUS Fig. 4", "relative distance to the optimum against "
                                           "rounds on the least-squares toy, under full, uniform and "
                                           "arbitrary participation", ""),
    },
    "05_focus_cifar": {
        "fig8_label_bubbles": Figure("FOCUS App. F, Fig. 8", "the label distribution over the 32 clients "
                                     "(bubble area: samples of a label at a client)"),
        "fig9_focus": Figure("FOCUS App. F, Fig. 9", "training loss and test accuracy of SG-FOCUS, FedAU "
                             "and SCAFFOLD per participation pattern, on MNIST standing in for CIFAR-10",
                             r"Fig\. 9"),
        "regime_plateau": Figure("regime section (not in the paper)", "SG-FOCUS's \"bern\" plateau at "
                                 "half the rate, and the verdicts at the earlier horizon"),
        "pilot_fmnist": Figure("a pilot of the stand-in dataset (not in the paper)", "test accuracy of "
                               "SG-FOCUS and the two SCAFFOLDs under \"bern\" on seeds 0 and 1, MNIST beside "
                               "Fashion-MNIST (both standing in for CIFAR-10)"),
    },
    "06_fedacs_toy": {
        "distance_bars": Figure("FedACS Fig. 4, App. C", "distance of each method's end point to the "
                                "optimum per local solver, closed form beside simulation", r"Fig\. 4"),
        "divergence_2d": Figure("FedACS Figs. 7-8", "where each method ends against the optimum in two "
                                "dimensions (static environment, SGD)", r"App\. I\.4"),
    },
    "07_fedacs_experiments": {
        "regime_grid": Figure("FedACS Sec. 6 (regime grid)", "test accuracy of each method over the grid "
                              "of base rate and pairing of weak computation with weak uplinks (the "
                              "cells other than Fig. 6's)", "", r"^MNIST, dynamic(?!, eta 0\.05, same)"),
        "fig6_dynamic": Figure("FedACS Fig. 6, Table 1", "test accuracy against rounds under dynamic "
                               "heterogeneity (eta 0.05, same clients weak in both)", "",
                               r"^MNIST, dynamic, eta 0\.05, same"),
        "fig9_static": Figure("FedACS App. I, Fig. 9, Table 4 (left)", "test accuracy against rounds "
                              "under static heterogeneity", "", r"^MNIST, static"),
        "fig10_alphas": Figure("FedACS App. I, Fig. 10, Table 4 (right)", "test accuracy against rounds "
                               "at Dirichlet alpha 0.1 on Fashion-MNIST, standing in for CIFAR-10 (the "
                               "paper's other alphas on CIFAR-10 are not run)", "",
                               r"^Fashion-MNIST .*alpha"),
    },
    "08_amplified_fedavg": {
        "warmup": Figure("Wang & Ji 2022 (warm-up)", "the FedAvg warm-up runs to their plateau, one per "
                         "seed"),
        "fig1_methods": Figure("Wang & Ji 2022 Fig. 1", "amplification against no amplification and "
                               "wait-minibatch / wait-full, at each method's best rate and at the "
                               "authors' rates", r"Fig\. 1"),
        "fig2_P": Figure("Wang & Ji 2022 Fig. 2", "amplification with several periods P", r"Fig\. 2"),
    },
    "09_real_availability": {
        "trace_hourly": Figure("not in any paper", "share of the Stunner trace's devices online by hour "
                               "of day (UTC and local time)"),
        "trace_sessions": Figure("not in any paper", "lengths of the online sessions and of the gaps "
                                 "between them in the trace"),
        "trace_week": Figure("not in any paper", "a week of 100 records of the trace: who is online when"),
        "curves": Figure("not in any paper", "the four papers' algorithms under the real trace: training "
                         "loss and test accuracy against rounds", "", r"^(?!.*'s rule)"),
        "curves_own_rates": Figure("not in any paper", "under the real trace at each paper's own rates: "
                                   "SG-FOCUS, FedAU and SCAFFOLD at FOCUS's eta, and Wang & Ji's pair after "
                                   "the warm-up each at its own grid rate", "", r"'s rule"),
    },
}

#: README sections (``## `` headings) by kind of guide; a section not named here is a how-to
GUIDE_KINDS: dict[str, str] = {
    "The library in three lines": "tutorial",
    "Data offline": "how-to",
    "Add your own algorithm": "how-to",
    "Add your own participation kind": "how-to",
    "Add your own dataset": "how-to",
    "Your own availability trace, and reading a store": "how-to",
    "Real availability traces": "how-to",
    "Sweeps, the results store, verification": "how-to",
    "Deploy with Flower": "how-to",
    "What holds": "explanation",
    "Layout": "reference",
    "The two commands": "contributing",
}

#: the API grouped by task: (group, modules); a public module in none of them is listed under
#: "Other modules", so nothing is dropped; ``INTERNALS`` are listed apart
API_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Participation and delays", ("fedlib.participation", "fedlib.delays", "fedlib.traces")),
    ("Algorithms", ("fedlib.algorithms", "fedlib.algorithms.base", "fedlib.algorithms.options",
                    "fedlib.algorithms.fedavg", "fedlib.algorithms.fedsum",
                    "fedlib.algorithms.variance_reduced", "fedlib.algorithms.reweighting",
                    "fedlib.algorithms.sampling", "fedlib.algorithms.amplified", "fedlib.theory")),
    ("Problems, data and models", ("fedlib.problems", "fedlib.objectives", "fedlib.tasks", "fedlib.data",
                                   "fedlib.partition", "fedlib.models")),
    ("Running and sweeps", ("fedlib", "fedlib.runner", "fedlib.engine", "fedlib.grouped", "fedlib.config",
                            "fedlib.sweeps", "fedlib.dask_preload",
                            "fedlib.extensions",
                            "fedlib.analysis", "fedlib.plotting")),
    ("Stores and verification", ("fedlib.store", "fedlib.locks", "fedlib.verification")),
    ("Claims and studies", ("fedlib.claims", "fedlib.studies", "fedlib.studies.base",
                            "fedlib.studies.methods", "fedlib.studies.fedsum",
                            "fedlib.studies.focus",
                            "fedlib.studies.fedacs_toy", "fedlib.studies.fedacs", "fedlib.studies.amplified",
                            "fedlib.studies.real")),
    ("Deployment", ("fedlib.flower",)),
)
INTERNALS: tuple[str, ...] = ("fedlib.arithmetic", "fedlib.fingerprint", "fedlib.notebook", "fedlib.paths")

#: the three-line example's section, shown on the landing page under "Start here"
START_HERE = "The library in three lines"


def figure_spec(notebook: str, stem: str) -> Figure | None:
    """The description of ``figures/<notebook>/<stem>.png``, or None when there is none."""
    return FIGURES.get(notebook, {}).get(stem)


__all__ = ["API_GROUPS", "FIGURES", "GUIDE_KINDS", "INTERNALS", "PAPERS", "START_HERE", "Figure", "Paper",
           "figure_spec"]
