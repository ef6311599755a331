"""FedSUM App. H (notebooks 02 and 03) per profile: N, S, K, B, T, the patterns P1-P3 and the
learning-rate grid; notebook 03 reuses notebook 02's grid (the same stored runs)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .. import claims, delays
from .._validate import InputError
from ..analysis import best_rows
from ..claims import ClaimRow, late_mean
from ..config import ExperimentConfig
from ..notebook import check_profile, check_stand_in
from ..participation import biased_probs, build, sine_probs
from . import methods
from .base import Frames, Study, check_accuracies, check_rate_pair, register_study

__all__ = ["BASELINES", "FAMILY", "FIG10_P", "FIG10_RATE", "FIG11_RATE", "METHODS", "METHOD_NAMES", "OURS",
           "QUOTES", "PAPER_GRID_ETA_G", "PAPER_RUN", "REGIMES", "REMARK_BATCHES", "SMALL_BATCH", "STUDY",
           "FedSumSetup",
           "DELAY_LEMMAS", "delay_claims", "delay_patterns", "delay_profile", "fedsum_setup",
           "grid_pick", "headline_claims", "matched_product", "off_rule", "paper_shows", "pick_rates",
           "resnet_configs", "summed_step", "THEORY_UNRUN", "theory_claims"]

#: Fig. 1 / Figs. 5-8: label -> (algorithm, options), from the catalogue (:mod:`fedlib.studies.methods`)
METHOD_NAMES = ("FedSUM", "FedSUM-CR", "FedSUM-CR (exact rate sum)", "FedAvg", "FedAU", "FedAWE", "FedVARP",
                "MIFA", "SCAFFOLD")
METHODS = methods.specs(METHOD_NAMES)
OURS = ["FedSUM", "FedSUM-CR"]
BASELINES = ["FedAvg", "FedAU", "FedAWE", "FedVARP", "MIFA", "SCAFFOLD"]

#: Fig. 10: FedSUM under Case 2 at a constant eta_l = 0.01 (App. H); the paper lists no p
#: values, these are ours
FIG10_RATE, FIG10_P = 0.01, (0.05, 0.1, 0.2, 0.4)
#: Fig. 11 (App. H.5): the FedSUM family at a constant eta_l = 0.1; the remark's smaller batch (8)
FIG11_RATE, SMALL_BATCH = 0.1, 8
#: App. H.5's examples of "a smaller batch size (e.g., 8 or 16)": a row for each, "not tested" where
#: no run of Fig. 11's group is at that batch
REMARK_BATCHES = (8, 16)
#: (App. H.5's runs of the family use each algorithm's default options)
FAMILY = methods.algorithms(["FedSUM-B", "FedSUM", "FedSUM-CR"])

#: the paper's words behind each claim the notebooks check (Sec. 5 for notebook 02, App. H for 03)
QUOTES = {
    "fig1a": "FedSUM and FedSUM-CR achieve faster convergence and greater stability than the baseline "
             "algorithms",
    "fig1b": "FedSUM and FedSUM-CR achieve faster convergence with respect to the communication workload",
    "cr": "FedSUM-CR maintains the strong performance of FedSUM with improved communication efficiency",
    "fig9": "The results shown in Figure 9 confirm the robust performance of FedSUM under different "
            "patterns.",
    "fig10": "larger p (and thus smaller tau_avg and tau_max) generally leads to better performance",
    "fig11": "FedSUM-B and FedSUM-CR achieve performance comparable to or even better than FedSUM",
    "batch": "Under a smaller batch size (e.g., 8 or 16), the performance of FedSUM-B degrades while FedSUM "
             "takes the lead.",
    "fig14": "the bias issue discussed in ... does not affect the performance of FedSUM",
    "fig1a loss": "Figure 1(a) presents the training loss and test accuracy curves for the three datasets. "
                  "FedSUM and FedSUM-CR achieve faster convergence and greater stability than the baseline "
                  "algorithms",
    "fig12": "It can be seen that FedSUM achieves the strongest performance in both cases.",
    "fig13": "The FedSUM algorithm demonstrates competitive performance in terms of both loss reduction and "
             "accuracy improvement compared to FedAvg.",
    "fig13 others": "Note that both SCAFFOLD ... and FedSUM-CR do not converge in this experiment",
    "most effective": "Notably, FedSUM-CR maintains the strong performance of FedSUM with improved "
                      "communication efficiency, making it the most effective algorithm in this comparison.",
    "grid": "The initial local learning rate eta_0 and global learning rate eta_g are optimized over a grid "
            "search, with eta_0 in {0.01, 0.005, 0.001, 0.0005} and eta_0 eta_g = 0.01, based on the best "
            "performance after 500 global rounds of FedAvg. Consequently, we select eta_g = 1.0 and eta_0 = "
            "0.01 for all algorithms across various models and datasets.",
    "remark 2.1": "The metrics tau_max and tau_avg offer a concise means of quantifying client "
                  "participation. Smaller values indicate more frequent participation, which generally "
                  "promotes faster convergence and better global model performance.",
    "fig1 datasets": "We consider three image classification tasks using the MNIST (lecun2010mnist), "
                     "SVHN (netzer2011reading), and CIFAR-10 (krizhevsky2009learning) datasets, each "
                     "containing 10 classes. ... Figure 1(a) presents the training loss and test accuracy "
                     "curves for the "
                     "three datasets. FedSUM and FedSUM-CR achieve faster convergence and greater stability "
                     "than the baseline algorithms ... Figure 1(b) further demonstrates that FedSUM and "
                     "FedSUM-CR achieve faster convergence with respect to the communication workload. "
                     "Notably, FedSUM-CR maintains the strong performance of FedSUM with improved "
                     "communication efficiency, making it the most effective algorithm in this comparison.",
}
#: the labels of the main runs (:meth:`FedSumSetup.main_configs`)
MAIN_NAMES = ["dataset", "pattern", "seed", "method"]
#: test accuracy at chance (10 classes in every dataset) and the late window (the last tenth)
CHANCE, WINDOW = 0.1, 0.1
#: "reaches first" compares the rounds to this fraction of the plateau both runs reach
LEVEL = 0.98
#: notebook 03: the spread of final accuracy over Cases 1-4 that "robust" allows (ours)
ROBUST_SPREAD = 0.02
#: App. H.2's selection from its grid: "we select eta_g = 1.0" (at eta_0 eta_g of the grid). The runs
#: keep this reported eta_g at the grid's product (:func:`pick_rates`); the grid repeats App. H.2's
#: selection as a check (:meth:`FedSumSetup.grid_claim`). FedSUM's theory does not bound eta_g by 1:
#: Thm. 4.1 / D.1 *set* eta_g = 1/sqrt(tau_max) (well below 1 at the delays measured here), which neither
#: eta_g = 1 nor eta_g = 2 is (an earlier version of this module misread it as a cap eta_g <= 1 and
#: credited App. H with it; App. H has no cap)
APP_H_ETA_G = 1.0
#: App. H.2's words for its selection (a part of :data:`QUOTES` ``["grid"]``), quoted in the grid's notes
APP_H_SELECTION = "we select eta_g = 1.0 and eta_0 = 0.01 for all algorithms"

#: FedSUM App. H, Table 2 and "Client participation patterns" (P1-P3).
_FEDSUM = {
    "smoke": dict(datasets=("digits",), num_clients=10, per_round=4, local_steps=2, batch_size=16,
                  rounds=4, eval_every=2, train_eval=10, grid=((0.1, 1.0), (0.03, 1.0)),
                  grid_rounds=2, departure=(0.1, 2.0)),
    # App. H's rule at T = 200, K = 5: the grid keeps eta_0 eta_g fixed at the product that gives
    # the paper's summed step (see matched_product), over the same four eta_g, scored after the
    # same quarter of the run (500 of 2000 rounds -> 50 of 200)
    "quick": dict(datasets=("mnist",), num_clients=100, per_round=20, local_steps=5, batch_size=32,
                  rounds=200, eval_every=5, train_eval=20, grid=None, grid_rounds=50, departure=(0.1, 2.0)),
    "paper": dict(datasets=("mnist", "svhn", "cifar10"), num_clients=100, per_round=20,
                  local_steps=10, batch_size=128, rounds=2000, eval_every=10, train_eval=100,
                  grid=((0.01, 1.0), (0.005, 2.0), (0.001, 10.0), (0.0005, 20.0)),
                  grid_rounds=500),
}
#: the quick profile before App. H's rule was kept (T = 120, eta_0 and eta_g searched independently:
#: it picked (0.1, 2), eta_g = 2 instead of App. H.2's reported eta_g = 1 and about twice the paper's
#: summed step); kept so that the stored runs of the earlier figures can be read and compared
#: (regime="earlier")
_EARLIER_QUICK = dict(_FEDSUM["quick"], rounds=120, train_eval=50, grid_rounds=40,
                      grid=tuple((e0, eg) for e0 in (0.3, 0.1, 0.03, 0.01) for eg in (1.0, 2.0)),
                      max_eta_g=float("inf"), pick_window=None, departure=None)
#: the regimes of :func:`fedsum_setup`
REGIMES = ("app_h", "earlier")
_MODELS = {"digits": "fedsum_mnist_cnn", "mnist": "fedsum_mnist_cnn", "svhn": "fedsum_svhn_cnn",
           "cifar10": "fedsum_cifar10_cnn"}
_NAMES = {"digits": "digits (smoke test)", "mnist": "MNIST", "svhn": "SVHN", "cifar10": "CIFAR-10"}


@dataclass(frozen=True)
class FedSumSetup:
    """FedSUM App. H at one profile.

    Attributes:
        profile: the profile.
        datasets: the datasets of the figure columns (the quick profile has MNIST only).
        num_clients, per_round, local_steps, batch_size, rounds, eval_every: N, S, K, B, T and
            the evaluation interval.
        train_eval: training samples per client in the training-loss estimate.
        grid: the (eta_0, eta_g) pairs of the learning-rate grid (FedAvg under P1).
        grid_rounds: rounds of each grid run ("best performance after 500 global rounds").
        stand_in: above 0, random data of each dataset's shapes and every run cut to this many
            rounds (tests of the paper profile on machines without the data).
        alpha: the Dirichlet concentration of the label split.
        max_eta_g: the eta_g the runs keep (:func:`pick_rates`): App. H.2's reported selection,
            :data:`APP_H_ETA_G` ("we select eta_g = 1.0 ... for all algorithms"), at the product of
            the grid's pick; a pick above it is used at the same product with this eta_g (inf: the
            pick as it is, the earlier quick regime). Not a bound of FedSUM's theory (see
            :data:`APP_H_ETA_G`); the name is kept from when it was read as one.
        departure: the (eta_0, eta_g) of the earlier quick regime's pick, (0.1, 2): eta_g = 2, not
            App. H.2's reported eta_g = 1, and about twice App. H's summed step over the earlier 120
            rounds (2.7 times over 200); notebook 02's regime section runs the methods there too
            (None: no regime section, as at the paper profile).
        pick_window: the grid scores each run by its training loss averaged over this last
            fraction of its rounds (None: the last evaluation, as the earlier quick regime did).
    """

    profile: str
    datasets: tuple
    num_clients: int
    per_round: int
    local_steps: int
    batch_size: int
    rounds: int
    eval_every: int
    train_eval: int
    grid: tuple
    grid_rounds: int
    stand_in: int = 0
    alpha: float = 0.1
    max_eta_g: float = APP_H_ETA_G
    pick_window: float | None = 0.1
    departure: tuple | None = None
    patterns: dict = field(default_factory=dict)

    @property
    def scale(self) -> str:
        """The scale of this profile's runs in words (datasets, K, batch, T of the paper's)."""
        return (f"{', '.join(self.dataset_name(d) for d in self.datasets)}, K = {self.local_steps}, batch "
                f"{self.batch_size}, T = {self.rounds} of the paper's {PAPER_RUN['rounds']}")

    @property
    def setting(self) -> str:
        """The setting of this profile's claim rows (a stand-in or smoke run says it reproduces
        nothing: :func:`fedlib.claims.scale_cause`)."""
        if self.stand_in or self.profile == "smoke":
            return claims.scale_cause(self.profile, self.stand_in, self.rounds, self.scale)
        return f"{self.profile} profile ({self.scale})"

    @property
    def title(self) -> str:
        """The settings every figure's title names (and what MNIST stands for)."""
        stand = " — MNIST stands in for SVHN and CIFAR-10" if self.profile == "quick" else ""
        return (f"({self.profile} profile; N={self.num_clients}, S={self.per_round}, K={self.local_steps}, "
                f"batch {self.batch_size}, T={self.rounds}{stand})")

    @property
    def paper_step(self) -> float:
        """The summed step of App. H's run (:data:`PAPER_RUN`), about 26.4."""
        return summed_step(PAPER_RUN["product"], 1.0, PAPER_RUN["local_steps"], PAPER_RUN["rounds"])

    def summed_step(self, eta_0: float, eta_g: float) -> float:
        """:func:`summed_step` of a run of this profile."""
        return summed_step(eta_0, eta_g, self.local_steps, self.rounds)

    def off_rule(self, eta_0: float, eta_g: float, picked: tuple | None = None) -> dict[str, str]:
        """:func:`off_rule` of this profile's runs at (``eta_0``, ``eta_g``); ``picked``: the grid's
        own pick (:meth:`grid_pick`), named beside the rates the runs use."""
        return off_rule(eta_0, eta_g, self.batch_size, self.local_steps, self.rounds, picked)

    def grid_pick(self, table: pd.DataFrame, dataset: str) -> tuple[float, float]:
        """:func:`grid_pick` of ``dataset``'s (an id) rows of :meth:`choose_rates`' grid table."""
        name = self.dataset_name(dataset)
        return grid_pick(table[table["dataset"] == name] if "dataset" in table else table)

    def choose_rates(self, compute: Callable[[list], pd.DataFrame],
                     datasets: list | None = None) -> tuple[dict, pd.DataFrame]:
        """App. H's choice of (eta_0, eta_g) per dataset of ``datasets`` (default: all;
        :func:`pick_rates` over :meth:`grid_configs`; ``compute`` maps configs to their
        :func:`fedlib.sweep` frame).

        Returns:
            dataset -> (eta_0, eta_g), and the grids' table with each pair's summed step over T.
        """
        rates, tables = {}, []
        for ds in self.datasets if datasets is None else datasets:
            grid = self.grid_configs(ds)
            table, eta0, eta_g = pick_rates(compute(list(grid)), grid, self.max_eta_g, self.pick_window)
            table["summed step over T"] = [self.summed_step(e0, eg)
                                           for e0, eg in zip(table["eta_0"], table["eta_g"], strict=True)]
            rates[ds] = (eta0, eta_g)
            tables.append(table.assign(dataset=self.dataset_name(ds)))
        return rates, pd.concat(tables, ignore_index=True)

    def tidy(self, df: pd.DataFrame, labels: dict,
             names=MAIN_NAMES) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
        """:func:`fedlib.claims.tidy` of runs labelled by ``names``, datasets by their names; the
        curves gain ``model units`` (uplink + downlink, Fig. 1(b)'s axis)."""
        return claims.tidy(df, labels, names, CHANCE, WINDOW, rename={"dataset": self.dataset_name},
                           derived={"model units": lambda t: t["uplink"] + t["downlink"]})

    def main_claims(self, summary: pd.DataFrame, curves: dict, dataset: str, pattern: str, seeds: list,
                    setting: str, off_rule: dict | None = None) -> list[ClaimRow]:
        """:func:`headline_claims` under one dataset (by name) and pattern, from the summary and
        the curves of :meth:`tidy`, margins from this profile's evaluation interval and clients per
        round; each row names its dataset, pattern and ``setting``. ``off_rule`` (:meth:`off_rule`):
        the methods run outside App. H's settings; a comparison where one of them failed is "not
        tested"."""
        frames = Frames(summary, curves, seeds, self.eval_every, self.per_round, prefix=(dataset, pattern),
                        off_rule=off_rule)
        return _shown([replace(r, context={"dataset": dataset, "pattern": pattern}, setting=setting)
                       for r in headline_claims(frames)])

    def departure_check(self, compute: Callable[[list], pd.DataFrame], rates: dict, seeds: list,
                        tidy: pd.DataFrame, summary: pd.DataFrame, curves: dict) -> dict:
        """Notebook 02's regime section: every method under P1 at the earlier quick profile's rates
        (:attr:`departure`) on ``seeds``, beside the same runs under App. H's rule (``rates``, and
        ``tidy``, ``summary``, ``curves`` of those runs, :meth:`tidy`), both judged on the same
        seeds.

        Returns:
            ``curves`` (both regimes' P1 curves, a ``regime`` column), ``verdicts`` (each P1 claim
            under both), ``runs`` (per method: runs ok and collapsed in each regime) and
            ``lines`` (what changed, in words).
        """
        e0, eg = self.departure
        dep_labels = self.main_configs({ds: self.departure for ds in self.datasets}, ["P1"], seeds)
        dep_tidy, dep_summary, dep_curves = self.tidy(compute(list(dep_labels)), dep_labels)
        app_h = "App. H's rule: (eta_0, eta_g) = ({:g}, {:g})".format(*rates[self.datasets[0]])
        here = tidy[(tidy["pattern"] == "P1") & tidy["seed"].isin(seeds)]
        both = pd.concat([here.assign(regime=app_h),
                          dep_tidy.assign(regime=f"earlier rates: ({e0:g}, {eg:g})")], ignore_index=True)
        paper_step, dep_step = self.paper_step, self.summed_step(e0, eg)
        cause = (f"the earlier rates ({e0:g}, {eg:g}): eta_g = {eg:g}, not App. H.2's reported eta_g = "
                 f"{APP_H_ETA_G:g}, summed step {dep_step:.1f} vs App. H's {paper_step:.1f}")
        names = list(dict.fromkeys(dep_tidy["dataset"]))
        rows = {"App. H's rule": [r for d in names
                                  for r in self.main_claims(summary, curves, d, "P1", seeds, "",
                                                            self.off_rule(*rates[self.datasets[0]]))],
                "earlier rates": [r for d in names
                                  for r in self.main_claims(dep_summary, dep_curves, d, "P1", seeds, cause,
                                                            self.off_rule(e0, eg))]}
        outcomes = {}
        for name, s in (("App. H's rule", summary), ("earlier rates", dep_summary)):
            p1 = s.xs("P1", level="pattern").reset_index()
            p1 = p1[p1["seed"].isin(seeds)]
            outcomes[name] = {(d, m): f"{(g['outcome'] == 'ok').sum()} ok, "
                                      f"{g['collapsed_from'].notna().sum()} collapsed (at some point)"
                              for (d, m), g in p1.groupby(["dataset", "method"])}
        verdicts = pd.DataFrame([{
            "dataset": r.context["dataset"], "claim": r.claim, "seeds": len(seeds),
            "under App. H's rule": r.check.verdict, "at the earlier rates": o.check.verdict,
            "numbers at the earlier rates": o.check.numbers}
            for r, o in zip(rows["App. H's rule"], rows["earlier rates"], strict=True)])
        runs = pd.DataFrame([{"dataset": d, "method": m, **{n: outcomes[n][(d, m)] for n in outcomes}}
                             for d, m in outcomes["App. H's rule"]])
        changed = (verdicts["under App. H's rule"] != verdicts["at the earlier rates"]).sum()
        lines = [f"earlier rates ({e0:g}, {eg:g}): summed step over T = {dep_step:.1f}, "
                 f"{dep_step / paper_step:.1f} times App. H's {paper_step:.1f}",
                 f"P1, seeds {seeds}: {changed} of {len(verdicts)} claim verdicts change between App. H's "
                 f"rule and the earlier rates ({e0:g}, {eg:g})."]
        return {"curves": both, "verdicts": verdicts, "runs": runs, "lines": lines}

    def delay_row(self, config: ExperimentConfig) -> dict:
        """tau_max and tau_avg (FedSUM eqs. 2-4) of the schedule ``config`` replays."""
        m = delays.delay_metrics(config.schedule(num_clients=self.num_clients).active)
        return {"tau_max": m.tau_max, "tau_avg": round(m.tau_avg, 3)}

    def ablation_group(self, compute: Callable[[list], pd.DataFrame], labelled: dict,
                       names: list) -> tuple[pd.DataFrame, pd.DataFrame]:
        """One group of :meth:`ablation_configs`: its labelled curves and its per-run summary
        (:func:`fedlib.claims.summarize`, indexed by ``names``) with each run's measured delays."""
        t, s, _ = self.tidy(compute(list(labelled)), labelled, names)
        tau = pd.DataFrame([{"key": c.key(), **self.delay_row(c)} for c in labelled])
        return t, s.reset_index().merge(tau, on="key").set_index(names)

    @staticmethod
    def delay_table(summary: pd.DataFrame, by: list) -> pd.DataFrame:
        """Per group of ``by``: final test accuracy and training loss (mean +- std over the runs
        that are ok), delays (mean over seeds) and the runs that are not ok."""
        t = claims.per_group(summary, by, {"final test acc": "final_acc", "final train loss": "final_loss"})
        groups = summary.reset_index().groupby(by, sort=False)
        t.insert(len(by), "tau_max", groups["tau_max"].mean().to_numpy())
        t.insert(len(by) + 1, "tau_avg", groups["tau_avg"].mean().round(3).to_numpy())
        return t

    def ablation_claims(self, case_s: pd.DataFrame, p_s: pd.DataFrame, fam_s: pd.DataFrame, seeds: list,
                        datasets: list, setting: str) -> list[ClaimRow]:
        """App. H's claims about Figs. 9-11 and 14 from the summaries of :meth:`ablation_group`
        (cases, p, family), per dataset id in ``datasets``: FedSUM robust under Cases 1-4 (a spread
        below :data:`ROBUST_SPREAD`, ours), a larger p better (:meth:`delay_claims`), FedSUM-B and
        FedSUM-CR no worse than FedSUM, FedSUM-B degrading at the small batch where FedSUM leads
        (:meth:`family_claims`), FedSUM unaffected by biased sampling (:meth:`bias_claims`); each
        row names its dataset and ``setting``, followed by the row's own setting where it has one
        (App. H.5's batch departure)."""
        rows = []
        for d in map(self.dataset_name, datasets):
            found = [*self.delay_claims(case_s, p_s, d, seeds), *self.family_claims(fam_s, d, seeds),
                     *self.bias_claims(case_s, d, seeds)]
            rows += [replace(r, context={"dataset": d},
                             setting="; ".join(x for x in (setting, r.setting) if x)) for r in found]
        return _shown(rows)

    def delay_claims(self, case_s: pd.DataFrame, p_s: pd.DataFrame, dataset: str,
                     seeds: list) -> list[ClaimRow]:
        """App. H.4 on ``dataset`` (by name): FedSUM robust under Cases 1-4 (Fig. 9), and a larger p
        better (Fig. 10)."""
        per_case = {c: _final_acc(case_s, seeds, dataset, c, "FedSUM") for c in self.cases()}
        spread = {k: max(v[k] for v in per_case.values()) - min(v[k] for v in per_case.values())
                  for k in seeds}
        p_values = sorted(set(p_s.index.get_level_values("p")))
        per_p = {p: _final_acc(p_s, seeds, dataset, p) for p in p_values}
        # "generally": the trend over the p values, not every step -- per seed, the least-squares
        # slope of final accuracy on p times the range of p (the fitted change from the smallest p to
        # the largest, :func:`_trend`), against 0 with the accuracy margin
        lo, hi = f"{p_values[0]:g}", f"{p_values[-1]:g}"
        trend = (_acc_paired(_trend({p: dict.fromkeys(seeds, p) for p in p_values}, per_p, seeds),
                             dict.fromkeys(seeds, 0.0), names=(f"trend p={lo}..{hi}", "no trend"))
                 if len(p_values) > 1 else
                 claims.not_run(f"only p = {lo} ran: a trend over p needs runs at two values of p or more"))
        return [ClaimRow("App. H.4, Fig. 9", QUOTES["fig9"],
                         "FedSUM is robust under Cases 1-4: spread of final accuracy below "
                         f"{ROBUST_SPREAD:g} (ours)",
                         _acc_paired(spread, dict.fromkeys(seeds, ROBUST_SPREAD), higher=False,
                                     names=("spread", "bound"))),
                ClaimRow("App. H.4, Fig. 10", QUOTES["fig10"],
                         "a larger p (smaller delays) generally gives a higher final accuracy: the fitted "
                         f"trend of final accuracy over p = {lo} to {hi}", trend,
                         setting=self.constant_rate_setting(FIG10_RATE))]

    def family_claims(self, fam_s: pd.DataFrame, dataset: str, seeds: list) -> list[ClaimRow]:
        """App. H.5 on ``dataset`` (by name): FedSUM-B and FedSUM-CR no worse than FedSUM under each
        pattern (Fig. 11), FedSUM-B degrading at the small batch where FedSUM leads. App. H.5 ties both
        to its batch ("This is mainly because the batch size is set to 128"): at another batch every
        row, whatever its verdict, names the departure as its setting (:meth:`batch_departure`). Each
        other example batch of the remark (:data:`REMARK_BATCHES`) that no run of ``fam_s`` (its
        ``batch`` level) makes is a row "not tested", its reason the batches that were run. Every row's
        setting also names its constant rate, the share of the paper's summed step its runs move, and
        FedSUM-B's samples a round at each batch it compares (:meth:`constant_rate_setting`)."""
        B = self.batch_size
        fig11, remark = self.batch_departure()
        fig11 = "; ".join(x for x in (self.constant_rate_setting(FIG11_RATE, (B,)), fig11) if x)
        remark = "; ".join(x for x in (self.constant_rate_setting(FIG11_RATE, (B, SMALL_BATCH)), remark) if x)

        def acc(*where) -> dict:
            return _final_acc(fam_s, seeds, dataset, *where)
        rows = [ClaimRow("App. H.5, Fig. 11", QUOTES["fig11"],
                         f"{m} comparable to or better than FedSUM at constant eta_l = {FIG11_RATE:g}, "
                         f"batch {B}, {p}",
                         _acc_paired(acc(p, m, B), acc(p, "FedSUM", B), kind="no worse", names=(m, "FedSUM")),
                         setting=fig11)
                for p in self.patterns for m in ("FedSUM-B", "FedSUM-CR")]
        return rows + [
            ClaimRow("App. H.5", QUOTES["batch"],
                     f"at batch {SMALL_BATCH} FedSUM-B degrades (vs batch {B}), P1",
                     _acc_paired(acc("P1", "FedSUM-B", B), acc("P1", "FedSUM-B", SMALL_BATCH),
                                 names=(f"batch {B}", f"batch {SMALL_BATCH}")), setting=remark),
            ClaimRow("App. H.5", QUOTES["batch"],
                     f"at batch {SMALL_BATCH} FedSUM takes the lead over FedSUM-B, P1",
                     _acc_paired(acc("P1", "FedSUM", SMALL_BATCH), acc("P1", "FedSUM-B", SMALL_BATCH),
                                 names=("FedSUM", "FedSUM-B")), setting=remark),
            *self._unrun_batches(fam_s, remark)]

    def _unrun_batches(self, fam_s: pd.DataFrame, remark: str | None) -> list[ClaimRow]:
        """:meth:`family_claims`' "not tested" rows: App. H.5's example batches that no run of
        ``fam_s`` makes (the batches that were run, from its ``batch`` level, in the reason)."""
        run = sorted({int(b) for b in fam_s.index.get_level_values("batch")})
        return [ClaimRow("App. H.5", QUOTES["batch"],
                         f"at batch {b} FedSUM-B degrades (vs batch {self.batch_size}) and FedSUM takes the "
                         "lead over FedSUM-B, P1",
                         claims.not_run(f"no run of Fig. 11's group is at batch {b}: its runs are at batch "
                                        f"{' and '.join(map(str, run))} (App. H.5's remark is run at its "
                                        f"first example, batch {SMALL_BATCH})"), setting=remark)
                for b in REMARK_BATCHES if b not in run]

    def constant_rate_setting(self, rate: float, batches: tuple = ()) -> str:
        """The words a constant-rate row of notebook 03 (App. H.4's Fig. 10, App. H.5's Fig. 11 and
        batch remark) adds to its setting: the constant rate ``rate`` with eta_g = 1 (Fig. 10's
        caption: "constant learning rates eta_g = 1.0 and eta_l = 0.01"; App. H.5: "the constant and
        bigger local learning rate eta_l = 0.1"), the summed step eta_g eta_l K T a run moves at this
        profile's K and T against App. H's run at the same rate (K = 10, T = 2000: :data:`PAPER_RUN`),
        and, for each batch B of ``batches``, the samples FedSUM-B averages per client in a round (Alg.
        1: K minibatch gradients at x^(t), so K x B) against App. H's K at App. H.5's batch (128 for
        this profile's large batch; the remark's own example batch otherwise)."""
        k, t = self.local_steps, self.rounds
        pk, pt, pb = PAPER_RUN["local_steps"], PAPER_RUN["rounds"], _FEDSUM["paper"]["batch_size"]
        here = summed_step(rate, 1.0, k, t, "constant")
        there = summed_step(rate, 1.0, pk, pt, "constant")
        words = [f"constant eta_l = {rate:g}, eta_g = 1: a run moves eta_g eta_l K T = {here:g} in all, "
                 f"{_share(here, there)} the paper's {there:g} (K = {pk}, T = {pt})"]
        for b in batches:
            paper_b = pb if b == self.batch_size else b
            words.append(f"FedSUM-B at batch {b} averages K x B = {k} x {b} = {k * b:,} samples a round per "
                         f"client, {_share(k * b, pk * paper_b)} App. H.5's {pk} x {paper_b} = "
                         f"{pk * paper_b:,}")
        return "; ".join(words)

    def batch_departure(self) -> tuple[str, str]:
        """How this profile's batch departs from App. H.5's, which ties its claims to it (Fig. 11's
        results "mainly because the batch size is set to 128"; its remark: a smaller batch, "e.g., 8
        or 16", against 128): the words for Fig. 11's rows and for the remark's rows, both "" at the
        paper's batch."""
        B, paper = self.batch_size, _FEDSUM["paper"]["batch_size"]
        if B == paper:
            return "", ""
        fig11 = (f"departure: batch {B}, not App. H.5's {paper}, the batch App. H.5 credits for FedSUM-B's "
                 "showing (large for a client's ~600 samples)")
        remark = (f"departure: the large batch is {B}, not App. H.5's {paper} (the small batch {SMALL_BATCH} "
                  "is one of App. H.5's examples)")
        return fig11, remark

    def bias_claims(self, case_s: pd.DataFrame, dataset: str, seeds: list) -> list[ClaimRow]:
        """App. H.8 on ``dataset`` (by name): under biased sampling FedSUM ends at or above FedAvg
        (our reading of Fig. 14(b), a "no worse" claim) and is no worse than its lowest of Cases 1-4
        (Fig. 14(a), the row that tests App. H.8's sentence)."""
        per_case = [_final_acc(case_s, seeds, dataset, c, "FedSUM") for c in self.cases()]
        lowest = {k: min(v[k] for v in per_case) for k in seeds}
        biased = _final_acc(case_s, seeds, dataset, "biased (H.8)", "FedSUM")
        return [ClaimRow("App. H.8, Fig. 14(b)", QUOTES["fig14"],
                         "Fig. 14(b): under biased sampling FedSUM ends at or above FedAvg (our reading of "
                         "Fig. 14(b); App. H.8's sentence cites both 14(a) and 14(b))",
                         _acc_paired(biased, _final_acc(case_s, seeds, dataset, "biased (H.8)", "FedAvg"),
                                     kind="no worse", names=("FedSUM", "FedAvg"))),
                ClaimRow("App. H.8, Fig. 14(a)", QUOTES["fig14"],
                         "biased sampling leaves FedSUM no worse than its lowest final accuracy of Cases "
                         "1-4 (by more than the accuracy margin)",
                         _acc_paired(biased, lowest, kind="no worse",
                                     names=("biased", "lowest of Cases 1-4")))]

    def grid_claim(self, table: pd.DataFrame, dataset: str) -> ClaimRow:
        """App. H.2's selection, "we select eta_g = 1.0", checked on ``dataset``'s (an id) rows of
        :meth:`choose_rates`' grid table: the pair at eta_g = :data:`APP_H_ETA_G` has the grid's best
        score (the training loss :func:`pick_rates` ranks by, lower is better) against each pair at
        another eta_g, seed by seed over the grid's seeds (:meth:`grid_configs`: one), margin of the
        training loss; every pair compared, none left out (:func:`fedlib.claims.against_all`); on
        one seed, the selection made once as App. H makes it, "not tested" (no interval). The
        row repeats App. H.2's reported selection as a check; it does not set the runs' rates (they
        keep App. H.2's eta_g = 1 at the grid's product, :attr:`max_eta_g`). Its cause
        (:meth:`_grid_cause`) names the rule's own pick, the eta_0 the runs use against the pick's,
        and the pick under the other reading of "best performance", the test accuracy (the rule
        stays the training loss, as set before the runs). Its "in the paper" column gives App.
        H.2's reported selection (:func:`paper_shows`). A grid with no other eta_g (smoke,
        stand-ins) has nothing to select between: "not tested"."""
        name = self.dataset_name(dataset)
        t = table[table["dataset"] == name] if "dataset" in table else table
        t = t[t["status"] != "not in the grid"]
        seeds = sorted({c.seed for c in self.grid_configs(dataset)})

        def score(r) -> dict:
            return dict.fromkeys(seeds, r["final train loss"] if r["status"] == "ok" else math.nan)
        ours = t[np.isclose(t["eta_g"], APP_H_ETA_G)]
        rivals = {f"eta_g = {r['eta_g']:g}": score(r) for _, r in t.iterrows()
                  if not np.isclose(r["eta_g"], APP_H_ETA_G)}
        window = (f"the last {self.pick_window:.0%} of its {self.grid_rounds} rounds" if self.pick_window
                  else f"round {self.grid_rounds}")
        claim = (f"FedAvg's grid (App. H.2's rule as read here) selects eta_g = {APP_H_ETA_G:g}: at eta_0 "
                 f"eta_g = {t['eta_0 x eta_g'].iloc[0]:g} it has the lowest training loss over {window} (the "
                 "grid's score for 'best performance') against every other eta_g of the grid")
        setting = (f"{self.setting}; our grid (App. H.2's rule at this profile's scale): FedAvg under P1, "
                   f"seed {', '.join(map(str, seeds))} (ours: App. H names neither), {self.grid_rounds} "
                   f"rounds (App. H: 500), eta_0 eta_g = {t['eta_0 x eta_g'].iloc[0]:g} (App. H: 0.01), "
                   f"eta_g in {{{', '.join(f'{g:g}' for g in t['eta_g'])}}}")
        context = {"dataset": name, "pattern": "P1", claims.IN_THE_PAPER: paper_shows("App. H.2")}
        if ours.empty or not rivals:
            return ClaimRow("App. H.2", QUOTES["grid"], claim, claims.not_run(
                f"the {self.profile} profile's grid{' (stand-ins: its first pair)' if self.stand_in else ''} "
                f"has no eta_g other than {APP_H_ETA_G:g}: nothing to select between"),
                context=context, setting=setting)
        best = min((score(r) for _, r in ours.iterrows()),          # the best of its pairs at eta_g = 1
                   key=lambda v: np.nan_to_num(v[seeds[0]], nan=np.inf))
        check = claims.against_all(best, rivals, f"eta_g = {APP_H_ETA_G:g}", higher=False,
                                   margin=claims.MARGINS["training loss"])
        if len(seeds) < 2:                  # App. H picks once; so does its rule here: no interval
            check = claims.set_aside(check, "a selection App. H makes once, on a pattern and seed it does "
                                            f"not state, repeated here once (seed {seeds[0]}): one "
                                            "observation, which no interval can decide")
        return ClaimRow("App. H.2", QUOTES["grid"], claim, check, cause=self._grid_cause(t, seeds),
                        context=context, setting=setting)

    def _grid_cause(self, t: pd.DataFrame, seeds: list) -> str:
        """What :meth:`grid_claim`'s row adds, from one dataset's rows ``t`` of the grid table: the
        pair the grid's rule picks (the lowest training loss, the score set before the runs) on its
        ``seeds``; where that pick is not App. H.2's reported eta_g, that the runs keep App. H.2's
        eta_g at the pick's product (:attr:`max_eta_g`) and the eta_0 that gives against the
        pick's; and, since App. H.2 does not say what its "best performance" is, the pair the other
        reading, the highest late-window test accuracy, picks (with each eta_g's accuracy). The row's
        rule is not changed by it."""
        picked = t[t["chosen"]]
        if picked.empty:
            return "the grid's rule picks no pair"
        pick = picked.iloc[0]
        product = float(pick["eta_0 x eta_g"])
        cause = (f"the grid's rule (the lowest training loss, as set before the runs) picks eta_g = "
                 f"{pick['eta_g']:g} (eta_0 = {pick['eta_0']:g}) on its {len(seeds)} seed(s)")
        if pick["eta_g"] > self.max_eta_g:
            cause += (f"; the runs do not use that pick: they keep App. H.2's reported selection "
                      f"(\"{APP_H_SELECTION}\"), eta_g = {self.max_eta_g:g} at the same product {product:g}, "
                      f"so eta_0 = {product / self.max_eta_g:g} where the pick's is {pick['eta_0']:g}; this "
                      "row repeats App. H.2's selection as a check")
        if "final test acc" in t and (t["status"] == "ok").any():
            by_acc = t.loc[best_rows(t, "final test acc", lower=False)].iloc[0]
            accs = ", ".join(f"eta_g = {r['eta_g']:g}: {r['final test acc']:.4f}" for _, r in t.iterrows()
                             if r["status"] == "ok")
            cause += (f"; read as the highest test accuracy over the same window (App. H.2's 'best "
                      f"performance' does not say which), the grid picks eta_g = {by_acc['eta_g']:g} "
                      f"({accs}); the row's rule stays the training loss, as set before the runs")
        return cause

    def remark_claims(self, case_t: pd.DataFrame, case_s: pd.DataFrame, p_s: pd.DataFrame, seeds: list,
                      datasets: list, setting: str) -> list[ClaimRow]:
        """FedSUM's claims that tie the delays to the runs, from notebook 03's Figs. 9 and 10 runs
        (:meth:`ablation_group`: ``case_t`` the curves and ``case_s`` the summary of the cases, ``p_s``
        the summary of Fig. 10), per dataset id in ``datasets``: App. H.4's "larger p (and thus
        smaller tau_avg and tau_max)" (:meth:`p_delay_claims`) and Remark 2.1's smaller delays,
        faster and better (:meth:`case_delay_claims`); each row names its dataset and ``setting``."""
        curves = claims.ok_curves(case_t, case_s.reset_index(), list(case_s.index.names))
        rows = []
        for d in map(self.dataset_name, datasets):
            found = [*self.p_delay_claims(p_s, d, seeds), *self.case_delay_claims(case_s, curves, d, seeds)]
            rows += [replace(r, context={"dataset": d}, setting=setting) for r in found]
        return _shown(rows)

    def p_delay_claims(self, p_s: pd.DataFrame, dataset: str, seeds: list) -> list[ClaimRow]:
        """App. H.4's "larger p (and thus smaller tau_avg and tau_max)" on Fig. 10's runs of
        ``dataset`` (by name): per delay, at each step from one p to the next larger, the schedule's
        delay (:meth:`delay_row`) is smaller, seed by seed (margin one round,
        :data:`fedlib.claims.MARGINS`); every step must hold (:func:`fedlib.claims.combine`)."""
        p_values = sorted(set(p_s.index.get_level_values("p")))
        rows = []
        for col in ("tau_max", "tau_avg"):
            tau = {p: _values(p_s, seeds, col, dataset, p) for p in p_values}
            steps = {f"p = {lo:g} to {hi:g}": claims.paired(
                tau[hi], tau[lo], higher=False, margin=claims.MARGINS["delay"],
                names=(f"{col} at p = {hi:g}", f"{col} at p = {lo:g}"), digits=3)
                for lo, hi in zip(p_values, p_values[1:], strict=False)}
            rows.append(ClaimRow("App. H.4, Fig. 10", QUOTES["fig10"],
                                 f"a larger p gives a smaller {col}: it falls at each step of p = "
                                 f"{', '.join(f'{p:g}' for p in p_values)} (the schedules of Fig. 10's runs, "
                                 f"{self.rounds} rounds)", claims.combine(steps)))
        return rows

    def case_delay_claims(self, case_s: pd.DataFrame, curves: dict, dataset: str,
                          seeds: list) -> list[ClaimRow]:
        """Remark 2.1 ("smaller values ... generally promotes faster convergence and better global
        model performance") on FedSUM's runs under Cases 1-4 (Fig. 9) of ``dataset`` (by name), our
        reading of "generally" as the trend over the cases, as for Fig. 10: per seed, the fitted change
        (:func:`_trend`) over the cases' own tau_avg of the rounds each run needs to reach a target
        near the plateau all four reach (:data:`LEVEL` times the lowest late-window test accuracy; the
        highest late-window training loss over :data:`LEVEL`), claimed to rise with tau_avg (margin
        one evaluation interval), and of the final test accuracy, claimed to fall (accuracy margin)."""
        cases = list(self.cases())
        tau = {c: _values(case_s, seeds, "tau_avg", dataset, c, "FedSUM") for c in cases}
        lo_hi = "from the case with the smallest tau_avg to the largest"
        rounds_margin = claims.margin_for("rounds to target", self.eval_every)
        rows = []
        for metric, higher, what in (("test_acc", True, f"{LEVEL:g} x the lowest plateau of test accuracy"),
                                     ("loss", False, f"the highest plateau of training loss / {LEVEL:g}")):
            per_seed = {k: _reach({c: curves.get((dataset, c, k, "FedSUM")) for c in cases}, metric, higher)
                        for k in seeds}
            reach = {c: {k: per_seed[k][c] for k in seeds} for c in cases}
            rows.append(ClaimRow(
                "Sec. 2.2, Remark 2.1", QUOTES["remark 2.1"],
                f"Cases 1-4 (Fig. 9): smaller delays converge faster: rounds to {what} rise with tau_avg "
                f"(per seed, the fitted change {lo_hi}; our reading of 'generally')",
                claims.paired(_trend(tau, reach, seeds), dict.fromkeys(seeds, 0.0), margin=rounds_margin,
                              names=("fitted change of rounds", "no change"), digits=2,
                              missing="failed or never"),
                cause=self.case_confound(tau, reach, seeds)))
        acc = {c: _final_acc(case_s, seeds, dataset, c, "FedSUM") for c in cases}
        return rows + [ClaimRow(
            "Sec. 2.2, Remark 2.1", QUOTES["remark 2.1"],
            f"across Cases 1-4 (Fig. 9's runs), smaller delays perform better: the final test accuracy falls "
            f"with tau_avg (per seed, the fitted change {lo_hi}; our reading of 'generally')",
            _acc_paired(_trend(tau, acc, seeds), dict.fromkeys(seeds, 0.0), higher=False,
                        names=("fitted change of final accuracy", "no change")))]

    def case_confound(self, tau: dict, reach: dict, seeds: list) -> str:
        """What a row of :meth:`case_delay_claims` on the rounds to a target adds to its verdict: the
        cases in order of their mean tau_avg over ``seeds`` (case -> seed -> value, as ``tau`` and
        ``reach``), each with its mean rounds over the seeds where it has one, which case is slowest,
        and the confound the fit over the cases carries: Sec. 2.1's cyclic orders (each round the next
        block of clients, :meth:`cases`) against its random samples; where the cyclic cases are the
        ones with the smallest tau_avg, delay and pattern move together, and the rounds within each
        family (cyclic, sampled) say which way the delay alone points."""
        def mean(d: dict) -> float:
            v = [float(d[k]) for k in seeds if np.isfinite(float(d[k]))]
            return float(np.mean(v)) if v else math.nan
        order = sorted(tau, key=lambda c: mean(tau[c]))
        cyclic = [c for c in order if "cyclic" in self.cases()[c][0]]
        sampled = [c for c in order if c not in cyclic]
        by = "; ".join(f"{c} tau_avg {mean(tau[c]):.3g}, {mean(reach[c]):.1f} rounds" for c in order)
        slow = max(order, key=lambda c: mean(reach[c]) if np.isfinite(mean(reach[c])) else -math.inf)
        text = f"mean over seeds, by tau_avg: {by}; slowest: {slow}"
        if not cyclic or not sampled:
            return text
        lead = ("the cyclic cases have the smallest tau_avg" if order[:len(cyclic)] == cyclic else
                "the cyclic cases do not have the smallest tau_avg")
        within = "; ".join(f"within the {name} cases, the smaller tau_avg ({g[0]}) needs "
                           f"{mean(reach[g[0]]) - mean(reach[g[-1]]):+.1f} rounds against {g[-1]}"
                           for name, g in (("cyclic", cyclic), ("sampled", sampled)) if len(g) > 1)
        return (f"{text}; confounded: {lead}, and the cases differ in more than their delays (a cyclic "
                "order visits the clients in fixed blocks, in turn; the others sample them at random), so "
                "the fit over the cases compares cyclic orders with sampling"
                + (f"; {within}" if within else ""))

    def unrun_claims(self) -> list[ClaimRow]:
        """App. H.6 and H.7's claims, which no run of this profile tests, each "not tested" with the
        reason (:func:`fedlib.claims.not_run`): Fig. 12 (ResNet-18 on CIFAR-10 / CIFAR-100) runs at
        the paper profile only, from one seed, and Fig. 13 (a pretrained BERT on SST-2) nowhere."""
        if self.profile == "paper":
            fig12 = ("Fig. 12's runs are drawn at the paper profile from one seed (notebook 03), and a "
                     "claim is compared seed by seed over several")
        else:
            fig12 = ("Fig. 12 runs at the paper profile only (on a GPU): CIFAR-10 and CIFAR-100 cannot be "
                     "had on these machines and ResNet-18 (11 M parameters, 50 clients) is beyond 2 CPU "
                     "cores (the smoke profile runs its code on random stand-ins)")
        fig13 = ("Fig. 13 fine-tunes a pretrained bert-base-uncased on SST-2: neither the weights nor the "
                 "dataset can be had on these machines (no network), and a transformer is beyond the 2-core "
                 "budget; no notebook runs it")
        resnet = "ResNet-18, N = 50, S = 10, K = 10, batch 32, Dirichlet alpha = 0.1 (App. H.6)"
        bert = "bert-base-uncased, 8 IID clients, 2 a round, K = 3, batch 4 (App. H.7)"
        return _shown([
            ClaimRow("App. H.6, Fig. 12", QUOTES["fig12"],
                     "FedSUM beats FedAvg and SCAFFOLD on CIFAR-10 and on CIFAR-100 (training loss and "
                     "test accuracy)", claims.not_run(fig12),
                     context={"dataset": "CIFAR-10, CIFAR-100"}, setting=resnet),
            ClaimRow("App. H.7, Fig. 13", QUOTES["fig13"],
                     "FedSUM is comparable to FedAvg in training loss and accuracy on SST-2",
                     claims.not_run(fig13), context={"dataset": "SST-2"}, setting=bert),
            ClaimRow("App. H.7", QUOTES["fig13 others"],
                     "SCAFFOLD and FedSUM-CR do not converge on SST-2", claims.not_run(fig13),
                     context={"dataset": "SST-2"}, setting=bert)])

    def unrun_main_claims(self) -> list[ClaimRow]:
        """Sec. 5's claims about Fig. 1 on each of its datasets that this setup does not run (the
        quick profile runs MNIST only; the paper profile all three, unless
        :func:`fedlib.campaign.stored_scope_02` cut a dataset whose runs are not stored), one row
        per dataset, "not tested" with the reason computed from the setup's datasets and the
        paper profile's (:func:`fedlib.claims.not_run`); MNIST has no such row: every profile runs
        it (the smoke profile on its digits stand-in). Then one such row per dataset run and
        pattern that ``stored_scope_02`` cut from a paper store's render (:meth:`_unrun_patterns`).
        Notebook 02 puts these rows beside :meth:`main_claims`."""
        claim = ("Fig. 1's claims as notebook 02 checks them on MNIST: FedSUM and FedSUM-CR faster (rounds, "
                 "model units) and more stable than every baseline; FedSUM-CR keeps FedSUM's accuracy with "
                 "fewer model units, the most effective")
        return self._unrun_datasets("Sec. 5, Fig. 1", QUOTES["fig1 datasets"], claim, "Fig. 1",
                                    "App. H grid or main runs", {"pattern": ", ".join(self._every_pattern)}
                                    ) + self._unrun_patterns(claim)

    @property
    def _every_pattern(self) -> dict:
        """The patterns of this setup's profile (:attr:`patterns` unless a paper store's scope cut some)."""
        return fedsum_setup(self.profile, self.stand_in).patterns

    def _unrun_patterns(self, claim: str) -> list[ClaimRow]:
        """One "not tested" row per dataset this setup runs and pattern of its profile that it does
        not (:func:`fedlib.campaign.stored_scope_02` cut the patterns outside the largest block of
        patterns x seeds whose main runs the paper store holds whole); none where it runs every
        pattern."""
        cut = [p for p in self._every_pattern if p not in self.patterns]
        why = ("the paper profile runs {p}, but {p} is outside the largest block of patterns x seeds whose "
               "main runs are all in this store, so this render leaves it out (the notebook's 'missing:' "
               "lines give each seed's count; `make campaign NB=02_fedsum_main` computes the rest)")
        return _shown([ClaimRow("Sec. 5, Fig. 1", QUOTES["fig1 datasets"], claim,
                                claims.not_run(why.format(p=p)),
                                context={"dataset": self.dataset_name(d), "pattern": p}, setting=self.setting)
                       for d in self.datasets for p in cut])

    def unrun_ablation_claims(self) -> list[ClaimRow]:
        """App. H.4, H.5 and H.8's claims (Figs. 9-11 and 14(b), each drawn on MNIST, SVHN and
        CIFAR-10: their captions) on the datasets this setup does not run: one "not tested" row per
        claim, in the paper's words (:data:`QUOTES`), naming every such dataset in its setting and
        reason (as :meth:`unrun_main_claims`; none where the setup runs all three). Notebook 03 puts
        these rows beside :meth:`ablation_claims`, which test the same claims on MNIST."""
        batch = _FEDSUM["paper"]["batch_size"]
        rows = [("App. H.4, Fig. 9", "fig9", "FedSUM is robust under Cases 1-4", "Fig. 9"),
                ("App. H.4, Fig. 10", "fig10", "a larger p (smaller delays) generally gives a higher "
                 "final accuracy", "Fig. 10"),
                ("App. H.5, Fig. 11", "fig11", f"FedSUM-B and FedSUM-CR comparable to or better than "
                 f"FedSUM at constant eta_l = {FIG11_RATE:g}, batch {batch}, P1-P3", "Fig. 11"),
                ("App. H.5", "batch", f"at a smaller batch ({' or '.join(map(str, REMARK_BATCHES))}) "
                 "FedSUM-B degrades and FedSUM takes the lead over FedSUM-B", "Fig. 11"),
                ("App. H.8, Fig. 14(b)", "fig14", "under biased sampling FedSUM ends at or above FedAvg",
                 "Fig. 14(b)")]
        own = {"Fig. 10": f"Case 2 with p in {{{', '.join(f'{p:g}' for p in FIG10_P)}}} (not S of N), "
                          f"constant eta_l = {FIG10_RATE:g}, eta_g = 1",
               "Fig. 11": f"constant eta_l = {FIG11_RATE:g}"}
        return [r for where, key, claim, figs in rows
                for r in self._unrun_datasets(where, QUOTES[key], claim, figs, "ablation runs", {},
                                              joint=True, detail=own.get(figs, ""))]

    def _unrun_datasets(self, where: str, quote: str, claim: str, figs: str, stored: str,
                        context: dict, joint: bool = False, detail: str = "") -> list[ClaimRow]:
        """One "not tested" row per dataset of the paper profile (MNIST aside) that this setup does
        not run: ``figs`` draw it, the reason says which profile runs it (its ``stored`` runs);
        ``joint``: one row naming all of them (none if there is none); ``detail``: the figure's own
        setting (its participation and rates, as its caption states them), in place of S of N."""
        paper = _FEDSUM["paper"]
        runs = ", ".join(self.dataset_name(d) for d in self.datasets) or "none"
        names = ", ".join(_NAMES[d] for d in paper["datasets"])
        clients = f"N = {paper['num_clients']}, " + (detail or f"S = {paper['per_round']}") + ", "
        setting = (f"App. H's CNN (Table 2), {clients}K = {paper['local_steps']}, batch "
                   f"{paper['batch_size']}, T = {paper['rounds']} (the paper profile), "
                   + ("its runs not in this store" if self.profile == "paper"
                      else f"not run at the {self.profile} profile"))

        def check(datasets: list) -> claims.Verdict:
            name = " and ".join(datasets)
            if self.profile == "paper":
                return claims.not_run(f"the paper profile runs {name}, but its {stored} are not in this "
                                      f"store (`make campaign` computes them on a GPU; {name} cannot be had "
                                      "on these machines)")
            verb = "runs" if figs.startswith("Fig. ") else "run"
            return claims.not_had(f"{figs} {verb} {names} (App. H)",
                                  f"the {self.profile} profile runs {runs} only", datasets)
        missing = [_NAMES[d] for d in paper["datasets"][1:] if d not in self.datasets]
        groups = ([missing] if missing else []) if joint else [[m] for m in missing]
        return _shown([ClaimRow(where, quote, claim, check(g), setting=setting,
                                context={"dataset": " and ".join(g), **context})
                       for g in groups])

    def earlier_ablations(self, compute: Callable[[list], pd.DataFrame], datasets: list, seeds: list,
                          rows: list[ClaimRow]) -> tuple[pd.DataFrame, str]:
        """Notebook 03's regime section (quick profile): the claims of ``rows`` (:meth:`ablation_claims`
        of this regime over ``seeds``) beside the same claims from the earlier quick profile's single seed
        (T = 120, rates (0.1, 2)); a row "not tested" (no run makes its setting) compares nothing and
        is left out. Returns the table and a line saying in how many claims the earlier effect has
        the other sign."""
        earlier = fedsum_setup("quick", regime="earlier")
        groups = earlier.ablation_configs({ds: (0.1, 2.0) for ds in datasets}, [0], datasets)
        names = {"cases": ["dataset", "pattern", "seed", "method"], "p": ["dataset", "p", "seed"],
                 "family": ["dataset", "pattern", "seed", "method", "batch"]}
        old = {g: claims.tidy(compute(list(groups[g])), groups[g], n, CHANCE, WINDOW,
                              rename={"dataset": self.dataset_name})[1] for g, n in names.items()}
        old_rows = self.ablation_claims(old["cases"], old["p"], old["family"], [0], datasets, "")
        rows, old_rows = zip(*[(r, o) for r, o in zip(rows, old_rows, strict=True)
                               if r.check.verdict != claims.NOT_TESTED], strict=True)
        here = f"here ({len(seeds)} seeds, T = {self.rounds})"
        table = pd.DataFrame([{
            "dataset": r.context["dataset"], "claim": r.claim, f"{here}: verdict": r.check.verdict,
            f"{here}: effect [95% CI]": f"{r.check.effect:.4f} [{r.check.ci_low:.4f}, {r.check.ci_high:.4f}]",
            "earlier (1 seed, T = 120, (0.1, 2)): effect": round(o.check.effect, 4),
            "numbers, earlier": o.check.numbers} for r, o in zip(rows, old_rows, strict=True)])
        flips = sum(np.sign(r.check.effect) != np.sign(o.check.effect)
                    for r, o in zip(rows, old_rows, strict=True)
                    if np.isfinite(r.check.effect) and np.isfinite(o.check.effect))
        line = (f"the earlier single seed's effect has the other sign than this regime's mean effect in "
                f"{flips} of {len(table)} claims (one seed gives no interval: the earlier runs cannot decide "
                "a verdict).")
        return table, line

    @property
    def draws(self) -> dict:
        """The problem argument naming the draw scheme: keyed draws (:mod:`fedlib.keyed`, the same
        bits on GPUs and CPUs, so a GPU-computed entry replays on a CPU) at the paper profile,
        whose runs only a GPU computes; the legacy draws (no argument: the stored keys) at the
        quick and smoke profiles."""
        return {"draws": "keyed"} if self.profile == "paper" else {}

    def dataset_name(self, dataset: str) -> str:
        """How figures name ``dataset`` (and what it stands for)."""
        if dataset not in _NAMES:
            ids = ", ".join(map(repr, _NAMES))
            raise InputError(f"dataset: must be a dataset id ({ids}), got {dataset!r}"
                             + (" (a name: give its id)" if dataset in _NAMES.values() else ""))
        name = _NAMES[dataset]
        return f"{name} on random stand-in data" if self.stand_in else name

    def base(self, dataset: str, seed: int = 0, participation: str = "P1") -> ExperimentConfig:
        """FedAvg under a pattern of :attr:`patterns` (a name like ``"P1"``) or a
        ``(kind, arguments)`` pair, eta_l = eta_0 / sqrt(t/10 + 1) with eta_0 = 0.01, eta_g = 1."""
        if dataset not in self.datasets:
            raise InputError(f"dataset: {dataset!r} is not in this profile's datasets "
                             f"({', '.join(self.datasets)})")
        if isinstance(participation, str):
            if participation not in self.patterns:
                raise InputError(f"participation: unknown pattern {participation!r}; known: "
                                 f"{', '.join(self.patterns)} (or a (kind, arguments) pair)")
            kind, args = self.patterns[participation]
        else:
            kind, args = participation
        synthetic = {}
        if self.stand_in:
            synthetic = {"synthetic": True, "synthetic_sizes": [20 * self.num_clients, 200]}
        return ExperimentConfig(
            algorithm="fedavg", problem="neural", participation=kind, rounds=self.rounds,
            problem_args={"dataset": dataset, "partition": "dirichlet", "alpha": self.alpha,
                          "model": _MODELS[dataset], "num_clients": self.num_clients,
                          "batch_size": self.batch_size, "train_eval_per_client": self.train_eval,
                          "seed": seed, **synthetic, **self.draws},
            participation_args=args, local_steps=self.local_steps, lr_local=0.01, lr_global=1.0,
            lr_schedule="fedsum_sqrt", eval_every=self.eval_every, seed=seed)

    def main_configs(self, rates: dict, patterns: list, seeds: list) -> dict:
        """Fig. 1 / Figs. 5-8: every method of :data:`METHODS` under each pattern and seed at the
        grid's rates ``rates[dataset] = (eta_0, eta_g)``: config -> (dataset, pattern, seed, method).
        ``patterns``: names of :attr:`patterns` or ``(kind, arguments)`` pairs, each once."""
        for ds in self.datasets:
            missing = isinstance(rates, dict) and ds not in rates
            keys = f"; its keys: {', '.join(map(repr, rates))}" if missing else ""
            check_rate_pair("rates", rates.get(ds) if isinstance(rates, dict) else None,
                            f"map each dataset of the profile ({', '.join(self.datasets)}) to "
                            f"(eta_0, eta_g), two positive rates ({ds!r}{keys})")
        if isinstance(patterns, (str, bytes)) or not isinstance(patterns, (list, tuple)) or not patterns:
            raise InputError(f"patterns: must be a non-empty list of patterns (names among "
                             f"{', '.join(self.patterns)}, or (kind, arguments) pairs), got {patterns!r}")
        twice = [p for i, p in enumerate(patterns) if p in patterns[:i]]
        if twice:
            raise InputError(f"patterns: each pattern once (a pattern twice would count its runs twice), "
                             f"got {twice[0]!r} more than once")
        out = {}
        for ds in self.datasets:
            eta0, eta_g = rates[ds]
            for pattern in patterns:
                for seed in seeds:
                    base = self.base(ds, seed, pattern).replace(lr_local=eta0, lr_global=eta_g)
                    for label, (algo, opts) in METHODS.items():
                        out[base.replace(algorithm=algo, algorithm_args=opts)] = (ds, pattern, seed, label)
        return out

    def cases(self) -> dict[str, tuple[str, dict]]:
        """Sec. 2.1's Cases 1-4 at this profile's N and S (Fig. 9)."""
        n, k = self.num_clients, self.per_round
        return {"Case 1 (uniform)": ("uniform", {"per_round": k}),
                "Case 2 (Bernoulli)": ("bernoulli", {"p": k / n}),
                "Case 3 (cyclic)": ("cyclic", {"per_round": k}),
                "Case 4 (reshuffled cyclic)": ("reshuffled_cyclic", {"per_round": k})}

    #: App. H.8's biased sampling (Fig. 14)
    biased = ("biased", {"start": 0.5, "step": 0.05, "group": 11})

    def decaying(self, dataset: str, algorithm: str, pattern, rates: dict, seed: int = 0) -> ExperimentConfig:
        """``algorithm`` under ``pattern`` at the grid's rates, eta_l(t) = eta_0 / sqrt(t/10 + 1)."""
        eta0, eta_g = rates[dataset]
        return self.base(dataset, seed, pattern).replace(algorithm=algorithm, lr_local=eta0, lr_global=eta_g)

    def constant(self, dataset: str, algorithm: str, pattern, lr: float, seed: int = 0,
                 **changes) -> ExperimentConfig:
        """``algorithm`` under ``pattern`` with a constant local rate ``lr``, eta_g = 1 (``batch_size``
        among ``changes`` changes the problem's batch)."""
        b = self.base(dataset, seed, pattern)
        if "batch_size" in changes:
            b = b.replace(problem_args={**dict(b.problem_args), "batch_size": changes.pop("batch_size")})
        return b.replace(algorithm=algorithm, lr_local=lr, lr_schedule="constant", **changes)

    def ablation_configs(self, rates: dict, seeds: list, datasets: list | None = None) -> dict[str, dict]:
        """Notebook 03's runs at the grid's decaying rates ``rates[dataset] = (eta_0, eta_g)`` and
        at the constant rates of Figs. 10 and 11, for each seed and dataset (default: all):

        * ``"cases"`` (Figs. 9, 14): FedSUM under Cases 1-4 and biased sampling, FedAvg under
          biased sampling: config -> (dataset, pattern, seed, method);
        * ``"p"`` (Fig. 10): FedSUM under Case 2 with each p of :data:`FIG10_P`, constant eta_l
          :data:`FIG10_RATE`: config -> (dataset, p, seed);
        * ``"family"`` (Fig. 11 and App. H.5's remark): FedSUM-B, FedSUM and FedSUM-CR under
          P1-P3 at constant eta_l :data:`FIG11_RATE`, and FedSUM-B and FedSUM under P1 at batch
          :data:`SMALL_BATCH`: config -> (dataset, pattern, seed, method, batch).
        """
        p_values = FIG10_P if self.profile != "smoke" else (0.2, 0.5)
        out = {"cases": {}, "p": {}, "family": {}}
        for ds in self.datasets if datasets is None else datasets:
            for seed in seeds:
                cases = out["cases"]
                for label, pattern in {**self.cases(), "biased (H.8)": self.biased}.items():
                    cases[self.decaying(ds, "fedsum", pattern, rates, seed)] = (ds, label, seed, "FedSUM")
                c = self.decaying(ds, "fedavg", self.biased, rates, seed)
                cases[c] = (ds, "biased (H.8)", seed, "FedAvg")
                for p in p_values:
                    c = self.constant(ds, "fedsum", ("bernoulli", {"p": p}), FIG10_RATE, seed)
                    out["p"][c] = (ds, p, seed)
                for pname in self.patterns:
                    for label, algo in FAMILY.items():
                        c = self.constant(ds, algo, pname, FIG11_RATE, seed)
                        out["family"][c] = (ds, pname, seed, label, self.batch_size)
                for label in ("FedSUM-B", "FedSUM"):
                    c = self.constant(ds, FAMILY[label], "P1", FIG11_RATE, seed, batch_size=SMALL_BATCH)
                    out["family"][c] = (ds, "P1", seed, label, SMALL_BATCH)
        return out

    def grid_configs(self, dataset: str) -> dict:
        """The learning-rate grid: FedAvg under P1, seed 0, ``grid_rounds`` rounds; maps each
        config to its (eta_0, eta_g)."""
        b = self.base(dataset).replace(rounds=self.grid_rounds)
        return {b.replace(lr_local=e0, lr_global=eg): (e0, eg) for e0, eg in self.grid}


def _final_acc(summary: pd.DataFrame, seeds: list, *where) -> dict:
    """seed -> final accuracy of the run at ``where`` (the summary's index without its seed level)."""
    return check_accuracies(_values(summary, seeds, "final_acc", *where), f"summary: final_acc at {where!r}")


def _values(summary: pd.DataFrame, seeds: list, column: str, *where) -> dict:
    """seed -> ``column`` of the run at ``where`` (the summary's index without its seed level)."""
    sel = summary.reset_index().set_index([x for x in summary.index.names if x != "seed"] + ["seed"])
    absent = [k for k in seeds if (*where, k) not in sel.index]
    if absent:
        raise InputError(f"summary: no run at {where!r} for seed{'s' if len(absent) > 1 else ''} "
                         f"{', '.join(map(repr, absent))} (its index levels: {list(sel.index.names)})")
    if column not in sel.columns:
        raise InputError(f"summary: no column {column!r} (columns: {', '.join(map(str, sel.columns))})")
    return {k: sel.loc[(*where, k), column] for k in seeds}


def _share(x: float, of: float) -> str:
    """``x`` as a share of ``of`` in words, for a setting: "1/20 of", "the same as", "2x"."""
    if math.isclose(x, of, rel_tol=1e-9):
        return "the same as"
    return f"1/{of / x:.3g} of" if x < of else f"{x / of:.3g}x"


def _trend(x: dict, y: dict, seeds: list) -> dict:
    """seed -> the least-squares slope of ``y[key][seed]`` on ``x[key][seed]`` over the keys, times
    that seed's range of x: the fitted change of y from the smallest x to the largest (NaN where a
    value is missing, e.g. a run that failed or never reached a target)."""
    out = {}
    for k in seeds:
        xs, ys = [float(x[c][k]) for c in x], [float(y[c][k]) for c in x]
        ok = np.isfinite(ys).all() and np.isfinite(xs).all()
        out[k] = float(np.polyfit(xs, ys, 1)[0] * (max(xs) - min(xs))) if ok else math.nan
    return out


def _reach(runs: dict, metric: str, higher: bool) -> dict:
    """key -> the rounds the curve ``runs[key]`` needs to reach a target near the plateau all of
    ``runs`` reach (:func:`fedlib.claims.rounds_to`): :data:`LEVEL` times the lowest late-window
    ``metric`` where ``higher`` is better, else the highest over :data:`LEVEL`; NaN for every key
    where a curve is missing (None: a run that failed), as no common target is then defined."""
    if any(v is None for v in runs.values()):
        return dict.fromkeys(runs, math.nan)
    plateau = [late_mean(v, metric, WINDOW) for v in runs.values()]
    target = LEVEL * min(plateau) if higher else max(plateau) / LEVEL
    return {c: claims.rounds_to(v, target, metric, higher=higher) for c, v in runs.items()}


def _acc_paired(a: dict, b: dict, **kw) -> claims.Verdict:
    """:func:`fedlib.claims.paired` with the margin of test accuracy."""
    return claims.paired(a, b, margin=claims.MARGINS["test accuracy"], **kw)


#: what FedSUM prints behind a claim whose place names no figure (:func:`paper_shows`)
_SHOWN_IN_TEXT = {"App. H.5": "App. H.5: text only, no number printed",
                  "App. H.7": "App. H.7: text only (not depicted in Fig. 13), no number printed",
                  "Sec. 2.2, Remark 2.1": "Remark 2.1: text only, no number printed",
                  "Sec. 4, Remark 4.2": "Remark 4.2: text only, no number printed",
                  "Sec. 4, Table 1": "Table 1: orders of convergence bounds, no experimental number"}


#: FedSUM's statements that no run here can test, found by paper read 1 (FedSUM finding 7), each as
#: (where, quote, claim, reason); notebook 01 carries the theory's, notebook 02 the attribution of
#: Fig. 1(a)'s gain
THEORY_UNRUN = {
    "remark 4.2": (
        "Sec. 4, Remark 4.2",
        "Moreover, the FedSUM family remains convergent even when the inactive period grows with T (e.g., "
        "log(T)), which is a significant improvement compared to yan2024federated; gu2021fast, where "
        "convergence requires the inactive period to be strictly bounded.",
        "the FedSUM family converges even when the inactive period grows with T (e.g. log T), where earlier "
        "analyses need it bounded",
        "an asymptotic statement in T, and a comparison with other papers' assumptions: every run here has "
        "one horizon (notebook 02: T = 200 at the quick profile), so none shows convergence as T grows; this "
        "notebook measures the premise only (its patterns' tau_max grows with T, each against App. F's "
        "lemma)"),
    "table 1": (
        "Sec. 4, Table 1",
        "These results indicate that the delay metrics tau_max and tau_avg accurately capture participation "
        "heterogeneity under arbitrary client participation schemes, while the FedSUM family achieves "
        "state-of-the-art efficiency across diverse participation regimes.",
        "Table 1's rates: the FedSUM family's convergence bounds match or improve the state of the art in "
        "every participation case",
        "Table 1 gives orders of upper bounds (constants and logarithms hidden) on the average squared "
        "gradient norm, which no run records; a rate's dependence on S, K and T needs runs at several of "
        "each, and the protocol runs one S, K and T per pattern; notebook 03 tests two directional pieces "
        "(App. H.4's trend in p, Remark 2.1's ordering of the cases by their delays)"),
    "attribution": (
        "Sec. 5, Fig. 1(a)",
        "FedSUM and FedSUM-CR achieve faster convergence and greater stability than the baseline algorithms, "
        "which we attribute to its stochastic uplink-merge technique combined with the correction "
        "direction.",
        "the gain of Fig. 1(a) comes from the stochastic uplink merge combined with the correction direction",
        "an attribution needs an ablation that removes one part and keeps the other (the uplink merge "
        "without the correction direction), which neither the paper nor this project runs; FedSUM-B against "
        "FedSUM (notebook 03, App. H.5) changes two parts at once; the gain itself is what the Fig. 1(a) "
        "rows test"),
}


def theory_claims(*names: str, setting: str = "a statement of the analysis, not run") -> list[ClaimRow]:
    """The rows of :data:`THEORY_UNRUN` named ``names`` (all where none), each "not tested" with its
    reason (:func:`fedlib.claims.not_run`), ``setting`` and what the paper prints behind it."""
    unknown = [n for n in names if n not in THEORY_UNRUN]
    if unknown:
        raise InputError(f"names: each must be one of {', '.join(map(repr, THEORY_UNRUN))}, "
                         f"got {unknown[0]!r}")
    return _shown([ClaimRow(where, quote, claim, claims.not_run(reason), setting=setting)
                   for where, quote, claim, reason in (THEORY_UNRUN[n] for n in (names or THEORY_UNRUN))])


def paper_shows(where: str) -> str:
    """What FedSUM (You & Pu 2025, arXiv:2512.18275) prints behind a claim at ``where`` (a claim
    row's place), for the ledger's "in the paper" column: its experiments are figures only (Sec. 5,
    App. H; Table 1 holds rates, not results), so a claim about a figure gets "Fig. X: curves only,
    no number printed" (as notebook 08 fills its rows), App. H.2's grid its reported selection, and
    a sentence with no figure says so."""
    if where == "App. H.2":
        return (f"App. H.2 selects eta_g = {APP_H_ETA_G:.1f}, eta_0 = {PAPER_RUN['product'] / APP_H_ETA_G:g} "
                "(its grid's scores not printed)")
    fig = re.search(r"Fig\. \d+(?:\([a-z]\))?", where)
    if fig:
        return claims.curves_only(fig[0])
    if where in _SHOWN_IN_TEXT:
        return _SHOWN_IN_TEXT[where]
    raise InputError(f"where: no entry for {where!r} (a figure, App. H.2 or one of "
                     f"{', '.join(map(repr, _SHOWN_IN_TEXT))})")


def _shown(rows: list[ClaimRow]) -> list[ClaimRow]:
    """``rows``, each with its "in the paper" context column (:func:`paper_shows`) after its others."""
    return [replace(r, context={**r.context, claims.IN_THE_PAPER: paper_shows(r.where)}) for r in rows]


def headline_claims(frames: Frames) -> list[ClaimRow]:
    """Sec. 5's claims about Fig. 1 on ``frames`` (runs of :data:`OURS` and :data:`BASELINES` by seed
    and method): FedSUM and FedSUM-CR reach the plateau of test accuracy, and of the training loss
    (Fig. 1(a) shows both), in fewer rounds and fewer model units than every baseline and drop less
    test accuracy along the way; FedSUM-CR keeps FedSUM's final accuracy, needs fewer model units
    than FedSUM and, "the most effective algorithm in this comparison", fewer model units than
    every other method. Margins: one evaluation interval, in rounds and in model units (eval_every x 2S),
    :data:`fedlib.claims.MARGINS`; a comparison where a method of ``frames.off_rule`` failed is "not
    tested"."""
    rounds_margin = claims.margin_for("rounds to target", frames.eval_every)
    units_margin = claims.margin_for("model units to target", frames.eval_every, 2 * frames.per_round)
    acc_margin, drop_margin = claims.MARGINS["test accuracy"], claims.MARGINS["accuracy drop"]
    hist, off_rule, missing, never = frames.hist, frames.off_rule, frames.missing, frames.missing_or_never

    def reach(ours: str, x: str, margin: float, rivals=BASELINES, **kw):
        return claims.against_all(hist(ours), {b: hist(b) for b in rivals}, ours, compare=claims.paired_reach,
                                  level=LEVEL, x=x, margin=margin, off_rule=off_rule, missing=never, **kw)
    fig1a, fig1b = "Sec. 5, Fig. 1(a)", "Sec. 5, Fig. 1(b)"
    rows = [ClaimRow(fig1a, QUOTES["fig1a"], f"{ours} converges faster than every baseline (rounds)",
                     reach(ours, "round", rounds_margin)) for ours in OURS]
    rows += [ClaimRow(fig1a, QUOTES["fig1a loss"],
                      f"{ours} converges faster than every baseline (rounds, training loss)",
                      reach(ours, "round", rounds_margin, metric="loss", higher_metric=False))
             for ours in OURS]
    rows += [ClaimRow(fig1a, QUOTES["fig1a"],
                      f"{ours} is more stable than every baseline (mean drop of test accuracy)",
                      claims.against_all(frames.values(ours, "drop"),
                                         {b: frames.values(b, "drop") for b in BASELINES},
                                         ours, higher=False, margin=drop_margin, off_rule=off_rule,
                                         missing=missing))
             for ours in OURS]
    rows += [ClaimRow(fig1b, QUOTES["fig1b"], f"{ours} needs fewer model units than every baseline",
                      reach(ours, "model units", units_margin)) for ours in OURS]
    pair = ("FedSUM-CR", "FedSUM")
    return _shown(rows + [
        ClaimRow(fig1b, QUOTES["cr"], f"FedSUM-CR keeps FedSUM's final test accuracy (margin {acc_margin:g})",
                 claims.paired(*(frames.values(m, "final_acc") for m in pair), margin=acc_margin,
                               kind="no worse", names=pair, off_rule=off_rule, missing=missing)),
        ClaimRow(fig1b, QUOTES["cr"], "FedSUM-CR needs fewer model units than FedSUM",
                 claims.paired_reach(*(hist(m) for m in pair), LEVEL, x="model units", margin=units_margin,
                                     names=pair, off_rule=off_rule, missing=never)),
        ClaimRow(fig1b, QUOTES["most effective"],
                 "FedSUM-CR is the most effective: fewer model units than every other method (FedSUM and "
                 "every baseline)",
                 reach("FedSUM-CR", "model units", units_margin, rivals=["FedSUM", *BASELINES]))])


def off_rule(eta_0: float, eta_g: float, batch_size: int, local_steps: int, rounds: int,
             picked: tuple | None = None) -> dict[str, str]:
    """Every method of the main runs -> why its runs at (``eta_0``, ``eta_g``), batch ``batch_size``,
    K = ``local_steps`` and T = ``rounds`` are outside App. H's settings (FedSUM's paper runs every
    method at one shared rate, eta_0 eta_g = 0.01 at batch 128, K = 10, T = 2000), or {} where the
    local step is App. H's. A method marked here that fails (diverges, collapses, never reaches the
    target) makes its comparisons "not tested" (:func:`fedlib.claims.paired`): the failure is the
    rate's, not the paper's. The why says where the clients' eta_0 comes from: at eta_g =
    :data:`APP_H_ETA_G`, from keeping App. H.2's reported eta_g at the matched product, and (given
    ``picked``, the grid's own pick (eta_0, eta_g): :func:`grid_pick`) the eta_0 that pick gives."""
    step, paper = eta_0 * eta_g, PAPER_RUN["product"]
    if math.isclose(step, paper, rel_tol=1e-9):
        return {}
    why = (f"local step eta_0 eta_g = {step:g}, {step / paper:.1f}x App. H's {paper:g} (batch "
           f"{batch_size} instead of 128, K = {local_steps}, T = {rounds} instead of "
           f"{PAPER_RUN['rounds']}: the summed step matched, not the step)")
    app_h_eta_0 = paper / APP_H_ETA_G
    if math.isclose(eta_g, APP_H_ETA_G):
        why += (f"; the clients' eta_0 = {eta_0:g} follows from keeping App. H.2's reported eta_g = "
                f"{APP_H_ETA_G:g} at the matched product")
    else:
        why += f"; eta_0 = {eta_0:g} at eta_g = {eta_g:g}, not App. H.2's reported eta_g = {APP_H_ETA_G:g}"
    if picked is not None:
        p0, pg = (float(x) for x in picked)
        why += (f"; the grid's own pick (eta_g = {pg:g}) gives the same eta_0" if math.isclose(p0, eta_0)
                else f"; the grid's own pick (eta_g = {pg:g}) would have given eta_0 = {p0:g} "
                     f"({p0 / app_h_eta_0:.1f}x App. H's eta_0 = {app_h_eta_0:g})")
    return dict.fromkeys([*OURS, *BASELINES], why)


def grid_pick(table: pd.DataFrame) -> tuple[float, float]:
    """The (eta_0, eta_g) the grid's rule chose in ``table`` (:func:`pick_rates`' table of one
    dataset: its ``chosen`` row), whatever the runs then use."""
    if "chosen" not in table or not table["chosen"].astype(bool).any():
        raise InputError("table: must be one dataset's rows of pick_rates' grid table, with a chosen row")
    row = table[table["chosen"].astype(bool)].iloc[0]
    return float(row["eta_0"]), float(row["eta_g"])


def fedsum_setup(profile: str, stand_in_rounds: int = 0, regime: str = "app_h") -> FedSumSetup:
    """FedSUM App. H settings at ``profile``; ``stand_in_rounds > 0`` keeps the profile's
    structure (N, S, K, B, models) on random data and cuts every run to that many rounds.

    ``regime="app_h"`` (default) keeps App. H's rules at every profile; ``"earlier"`` (quick
    profile only) is the quick profile of the first figures (see :data:`_EARLIER_QUICK`)."""
    check_profile(profile)
    stand_in_rounds = check_stand_in(stand_in_rounds)
    if regime not in REGIMES:
        raise InputError(f"regime: must be one of {', '.join(REGIMES)}; got {regime!r}")
    if regime == "earlier" and profile != "quick":
        raise InputError(f"regime: 'earlier' exists for the quick profile only, got profile {profile!r}")
    s = FedSumSetup(profile=profile, **(_EARLIER_QUICK if regime == "earlier" else _FEDSUM[profile]))
    if s.grid is None:
        p = matched_product(s.local_steps, s.rounds)
        s = replace(s, grid=tuple((float(f"{p / eg:.6g}"), eg) for eg in PAPER_GRID_ETA_G))
    if stand_in_rounds:
        s = replace(s, rounds=stand_in_rounds, grid_rounds=stand_in_rounds, eval_every=stand_in_rounds,
                    train_eval=2, grid=s.grid[:1], stand_in=stand_in_rounds, departure=None)
    n, k = s.num_clients, s.per_round
    patterns = {"P1": ("uniform", {"per_round": k}),
                "P2": ("bernoulli", {"p": k / n}),
                "P3": ("sine", {"per_round": k, "amplitude": 0.3, "period": 10.0})}
    return replace(s, patterns=patterns)


#: App. H's grid: eta_0 in {0.01, 0.005, 0.001, 0.0005} with eta_0 eta_g = 0.01, so these eta_g
PAPER_GRID_ETA_G = (1.0, 2.0, 10.0, 20.0)
#: App. H's run: T = 2000 rounds of K = 10 local steps, eta_0 eta_g = 0.01, eta_l(t) = eta_0 / sqrt(t/10 + 1)
PAPER_RUN = dict(product=0.01, local_steps=10, rounds=2000)


def summed_step(eta_0: float, eta_g: float, local_steps: int, rounds: int,
                schedule: str = "fedsum_sqrt") -> float:
    """The summed step length of a run, sum_{t<T} eta_g eta_l(t) K: how far the rates let a run
    move in all (App. H's run: about 26.4)."""
    from ..algorithms.base import lr_schedules
    if schedule not in lr_schedules:
        raise InputError(f"schedule: must be one of {', '.join(lr_schedules)}; got {schedule!r}")
    return float(eta_g * local_steps * sum(lr_schedules[schedule](eta_0, t) for t in range(rounds)))


def matched_product(local_steps: int, rounds: int, digits: int = 3) -> float:
    """The product eta_0 eta_g that gives a run of ``rounds`` rounds of ``local_steps`` steps (rate
    eta_0 / sqrt(t/10 + 1)) App. H's summed step, rounded to ``digits`` significant digits
    (K = 5, T = 200: 0.0733)."""
    target = summed_step(PAPER_RUN["product"], 1.0, PAPER_RUN["local_steps"], PAPER_RUN["rounds"])
    p = target / summed_step(1.0, 1.0, local_steps, rounds)
    return float(f"{p:.{digits}g}")


def pick_rates(df: pd.DataFrame, configs: dict, max_eta_g: float = APP_H_ETA_G,
               window: float | None = 0.1) -> tuple[pd.DataFrame, float, float]:
    """The grid's table and its choice, as App. H chooses: the lowest training loss at the end
    of the grid runs (our reading of "best performance", set before the runs), averaged over the
    last ``window`` fraction of the rounds (None: the last evaluation); a diverged or failed run is
    never chosen. The runs keep App. H.2's reported selection, eta_g = ``max_eta_g`` ("we select
    eta_g = 1.0 ... for all algorithms"), at the product of the grid's pick: a pick with a larger
    eta_g is used at the same product with eta_g = ``max_eta_g`` (inf: the pick as it is); the
    table's ``used`` column marks that pair and ``note`` says why. (FedSUM's theory gives no bound
    here: Thm. 4.1 sets eta_g = 1/sqrt(tau_max), see :data:`APP_H_ETA_G`; an earlier version read it
    as a cap.)

    Args:
        df: the :func:`fedlib.sweep` frame of ``configs``.
        configs: config -> (eta_0, eta_g), as :meth:`FedSumSetup.grid_configs` gives.

    Returns:
        (table with one row per pair and a ``chosen`` column -- and, when the pick was capped,
        ``used`` and ``note`` columns --, eta_0, eta_g used).
    """
    last = df.groupby("key").tail(1).set_index("key")
    runs = dict(tuple(df.groupby("key")))
    rows = []
    for c, (e0, eg) in configs.items():
        r = last.loc[c.key()]
        loss, acc = r["loss"], r["test_acc"]
        if window is not None and r["status"] == "ok":
            loss = late_mean(runs[c.key()], "loss", window, c.rounds)
            acc = late_mean(runs[c.key()], "test_acc", window, c.rounds)
        rows.append({"eta_0": e0, "eta_g": eg, "eta_0 x eta_g": e0 * eg,
                     "final train loss": loss, "final test acc": acc, "status": r["status"]})
    table = pd.DataFrame(rows)
    table["chosen"] = best_rows(table, "final train loss")
    best = table.index[table["chosen"]][0]
    eta_0, eta_g = float(table.loc[best, "eta_0"]), float(table.loc[best, "eta_g"])
    if eta_g > max_eta_g:
        product = eta_0 * eta_g
        eta_g, eta_0 = max_eta_g, product / max_eta_g
        table["used"] = np.isclose(table["eta_g"], eta_g) & np.isclose(table["eta_0 x eta_g"], product)
        table["note"] = ""
        table.loc[best, "note"] = (f"chosen by the grid (eta_0 = {table.loc[best, 'eta_0']:g}); the runs "
                                   f"keep App. H.2's reported eta_g = {max_eta_g:g} (\"{APP_H_SELECTION}\") "
                                   f"at the same product: eta_0 = {eta_0:g}")
        table.loc[table["used"], "note"] = (f"used by the runs: App. H.2's reported eta_g = {max_eta_g:g} at "
                                            "the chosen product (this row's own score does not choose it)")
        if not table["used"].any():
            extra = {"eta_0": eta_0, "eta_g": eta_g, "eta_0 x eta_g": product, "status": "not in the grid",
                     "chosen": False, "used": True,
                     "note": f"used: the chosen product at App. H.2's reported eta_g = {max_eta_g:g}"}
            table = pd.concat([table, pd.DataFrame([extra])], ignore_index=True)
    return table, eta_0, eta_g


#: Fig. 12: figure name -> (dataset, local rate, classes)
RESNET = {"CIFAR-10": ("cifar10", 0.01, 10), "CIFAR-100": ("cifar100", 0.001, 100)}


def resnet_configs(profile: str, stand_in_rounds: int = 0, seed: int = 0) -> dict:
    """Fig. 12 (ResNet-18 on CIFAR-10 / CIFAR-100; App. H: N = 50, S = 10, K = 10, batch 32; the
    rounds are not stated, 1,000 here): config -> (dataset name, method). The smoke profile runs
    one round of 4 clients on random stand-ins (FedSUM only for CIFAR-100), stand-in tests FedSUM
    only."""
    check_profile(profile)
    small = profile == "smoke"
    out = {}
    for name, (ds, lr, classes) in RESNET.items():
        sizes = [800, 40] if small else [20 * 50, 200]
        synthetic = {"synthetic": True, "synthetic_sizes": sizes} if small or stand_in_rounds else {}
        base = ExperimentConfig(
            algorithm="fedavg", problem="neural", participation="uniform",
            rounds=1 if small else (stand_in_rounds or 1000),
            problem_args={"dataset": ds, "partition": "dirichlet", "alpha": 0.1, "model": "resnet18",
                          "num_clients": 4 if small else 50, "batch_size": 4 if small else 32,
                          "train_eval_per_client": 2 if small else 100, "seed": seed, **synthetic},
            participation_args={"per_round": 2 if small else 10}, local_steps=1 if small else 10,
            lr_local=lr, lr_global=1.0, eval_every=1 if small else (stand_in_rounds or 10), seed=seed)
        runs = tuple(methods.algorithms(["FedSUM", "FedAvg", "SCAFFOLD"]).items())
        for label, algo in runs[:1] if (small and classes == 100) or stand_in_rounds else runs:
            out[base.replace(algorithm=algo)] = (name, label)
    return out


#: notebook 01 per profile: the horizons T of the delay estimates and the Monte Carlo seeds
DELAY_PROFILES = {"quick": ([10, 20, 50, 100, 200, 500], 20),
                  "paper": ([10, 20, 50, 100, 200, 500, 1000, 2000], 100)}


def delay_profile(profile: str) -> tuple[list, int]:
    """(horizons T, seeds) of notebook 01's delay estimates at ``profile`` (quick or paper)."""
    if profile not in DELAY_PROFILES:
        raise InputError(f"profile: must be one of {sorted(DELAY_PROFILES)}, got {profile!r}")
    return DELAY_PROFILES[profile]


def delay_patterns(num_clients: int, per_round: int) -> dict[str, dict]:
    """FedSUM Table 1 / App. F (notebook 01): each participation pattern's kind and arguments at N
    clients and S per round (delta = S / N), the lemma's bound on tau_max as a formula and as a
    function of T (NaN where the paper gives none)."""
    n, s = num_clients, per_round
    if s > n:
        raise InputError(f"per_round: must be at most num_clients ({n}), got {s}")
    delta = s / n
    sine_delta = float(min(sine_probs(np.arange(10), s / n, 0.3, 10.0)))
    biased_delta = float(biased_probs(n).min())
    return {
        "Case 1 / P1 uniform": dict(kind="uniform", args={"per_round": s}, formula="4N/S ln(NT)",
                                    bound=lambda T: delays.bound_uniform(n, s, T)),
        "Case 2 / P2 Bernoulli": dict(kind="bernoulli", args={"p": delta},
                                      formula="4/δ max{ln NT, ln 1/δ}, δ=S/N",
                                      bound=lambda T: delays.bound_bernoulli(n, T, delta)),
        "Case 3 cyclic": dict(kind="cyclic", args={"per_round": s}, formula="2N/S",
                              bound=lambda T: delays.bound_cyclic(n, s)),
        "Case 4 reshuffled cyclic": dict(kind="reshuffled_cyclic", args={"per_round": s}, formula="4N/S",
                                         bound=lambda T: delays.bound_reshuffled_cyclic(n, s)),
        "P3 sine": dict(kind="sine", args={"per_round": s}, formula=f"F.2 with δ=min p={sine_delta:.3f}",
                        bound=lambda T: delays.bound_bernoulli(n, T, sine_delta)),
        "Biased (H.8)": dict(kind="biased", args={}, formula=f"F.2 with δ=min p={biased_delta:.2f}",
                             bound=lambda T: delays.bound_bernoulli(n, T, biased_delta)),
        "Markov (FedAU)": dict(kind="markov", args={"p": delta, "on_rate": 0.05}, formula="none in the paper",
                               bound=lambda T: float("nan")),
    }


#: FedSUM App. F's lemmas on the delays (notebook 01): pattern of :func:`delay_patterns` -> (where,
#: the lemma's words; its formula, lost from the text we work from, transcribed from the paper).
#: App. F names the cyclic cases the other way round from Sec. 2.1 (whose names the patterns keep)
DELAY_LEMMAS = {
    "Case 1 / P1 uniform": (
        "App. F, Lemma F.1", "Suppose S_t are sampled uniformly at random from N with |S_t| = S < N for "
        "t = 0, ..., T, as described in Case 1 of Section 2. Then, we have E[tau_max] <= 4N/S ln(NT)."),
    "Case 2 / P2 Bernoulli": (
        "App. F, Lemma F.2", "Suppose each client independently participates in each round with a fixed "
        "probability p_i >= delta in (0, 1], as described in Case 2 of Section 2. Then, we have "
        "E[tau_max] <= 4/delta max{ln(NT), ln(1/delta)}."),
    "Case 4 reshuffled cyclic": (
        "App. F, Lemma F.3", "Suppose clients are selected in reshuffled cyclic order, as described in "
        "Case 3 of Section 2. Then, we have, E tau_max <= 4N/S."),
    "Case 3 cyclic": (
        "App. F, Lemma F.4", "Suppose clients are selected in deterministic cyclic order, as described in "
        "Case 4 of Section 2. Then, we have, tau_max <= 2N/S."),
}


def delay_claims(patterns: dict, num_clients: int, rounds: int, seeds: list,
                 setting: str = "") -> list[ClaimRow]:
    """App. F's lemmas (:data:`DELAY_LEMMAS`) on the patterns of :func:`delay_patterns`: per seed,
    the schedule's tau_max over ``rounds`` rounds (:func:`fedlib.delays.per_round_delay`), compared
    with the lemma's bound at T = ``rounds`` by the rule of :mod:`fedlib.claims` (the bound is the
    claimed side; margin one round, a delay's resolution): the lemma holds where the interval of
    bound - tau_max lies above 0. Where the lemma numbers its case otherwise than Sec. 2.1 (whose
    numbers the patterns keep: App. F swaps the cyclic cases), the claim says both. A pattern that
    draws nothing (the same schedule on every seed) is one run (:func:`fedlib.claims.one_run`)."""
    rows = []
    for name, (where, quote) in DELAY_LEMMAS.items():
        ours, theirs = re.match(r"Case (\d)", name), re.search(r"Case (\d) of Section 2", quote)
        swap = (f" (the lemma says Case {theirs[1]}; Sec. 2.1 numbers it {ours[1]})"
                if ours and theirs and ours[1] != theirs[1] else "")
        p = patterns[name]
        active = {int(k): build(p["kind"], num_clients, rounds, seed=int(k), **p["args"]).active
                  for k in seeds}
        tau = {k: float(delays.per_round_delay(a)[:rounds].max()) for k, a in active.items()}
        bound = dict.fromkeys(tau, float(p["bound"](rounds)))
        check = claims.paired(bound, tau, margin=claims.MARGINS["delay"],
                              names=(f"bound {p['formula']}", "tau_max"), digits=2)
        first = next(iter(active.values()))
        once = len(active) > 1 and all(np.array_equal(a, first) for a in active.values())
        rows.append(ClaimRow(where, quote, f"{name}{swap}: the measured tau_max stays below the lemma's "
                             f"bound {p['formula']}", claims.one_run(check, len(seeds)) if once else check,
                             setting=setting + (f"; this pattern draws nothing: its {len(seeds)} seeds "
                                                "repeat one schedule, counted once" if once else ""),
                             context={claims.IN_THE_PAPER: f"{where}: the bound {p['formula']}, no "
                                      "measured tau_max printed (a lemma, proved, not run); at this "
                                      f"N = {num_clients}, T = {rounds}: {float(p['bound'](rounds)):.4g}"}))
    return rows


from .base import guard_study  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_study(globals())

#: FedSUM's study (notebooks 02 and 03) in the registry of :mod:`fedlib.studies`
STUDY = register_study(Study(name="fedsum", paper="FedSUM",
                             notebooks=("02_fedsum_main", "03_fedsum_ablations"), setup=fedsum_setup,
                             methods=METHOD_NAMES, quotes=QUOTES, headline=headline_claims), replace=True)
