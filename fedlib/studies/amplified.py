"""Wang & Ji 2022 (notebook 08): a FedAvg warm-up per seed under periodic availability and the
phases after it (amplification, no amplification, wait-minibatch, wait-full), per profile."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import claims, models
from .._validate import InputError, check_int, check_real
from ..analysis import GridSearch, mean_std, search_log_grid
from ..claims import ClaimRow
from ..config import ExperimentConfig
from ..notebook import check_profile, check_seed, check_seeds, check_stand_in
from . import methods
from .base import Frames, Study, check_accuracies, register_study

__all__ = ["AUTHORS_HORIZON", "AUTHORS_RATES", "DATASETS", "FASHION", "FIG2_RATES", "FIG2_VS_FIG1_RATES",
           "MEASURED_SECONDS", "METHOD_NAMES", "QUOTES", "RATE_SETS", "RATE_SOURCES", "STUDY",
           "AmplifiedSetup", "Evaluation", "WAIT_METHODS", "amplified_setup", "compare_claims",
           "compare_datasets", "headline_claims"]

#: per profile: data, model, N, availability window, warm-up, horizon and grid horizon (rounds),
#: evaluation interval, the P of Fig. 2, the grid's multiples of the warm-up rate, training-loss
#: samples per client (quick: MNIST standing in for FashionMNIST, the availability time scaled
#: down 5x; the warm-up runs to its plateau, 1,500 rounds; the grid and the figures over two
#: cycles, so the grid's runs at the chosen rates are the figures' runs of the first seed). The smoke
#: profile (here and in :data:`FASHION`) takes 2 local steps of minibatch 8 instead of I = 5 of 16:
#: every code path stays, at about 3/4 of the CPU (measured 2026-11-26 on 2 shared cores). The
#: paper profile keeps Wang & Ji's settings (Sec. 6 of arXiv:2205.13648 and their code) but the
#: time: 5,000 rounds after the warm-up where the authors' code runs 298,000 (1,500,000 iterations
#: of 5 a round, 10,000 of them the warm-up), and grid runs of 2 cycles; and its CNN keeps
#: PyTorch's default init, not the authors' Kaiming (``fedlib.models``; notebook 08, "The paper
#: profile")
SETTINGS = {
    "smoke": dict(dataset="digits", model="fedsum_mnist_cnn", num_clients=10, window=2, warmup=6,
                  horizon=8, grid_horizon=4, eval_every=2, P_values=(1, 5, 10), grid=(1.0, 0.1),
                  train_eval=10, local_steps=2, batch=8),
    "quick": dict(dataset="mnist", model="fedsum_mnist_cnn", num_clients=250, window=20, warmup=1500,
                  horizon=200, grid_horizon=200, eval_every=20, P_values=(1, 20, 60, 100, 140, 180),
                  grid=(1.0, 0.1, 0.01, 0.001, 0.0001), train_eval=20),
    "paper": dict(dataset="fashion_mnist", model="wj_fmnist_cnn", num_clients=250, window=100,
                  warmup=2000, horizon=5000, grid_horizon=1000, eval_every=100,
                  P_values=(1, 100, 300, 500, 700, 900), grid=(1.0, 0.1, 0.01, 0.001, 0.0001),
                  train_eval=100),
}
#: Fashion-MNIST, Wang & Ji's own dataset (issue 50), per profile, under the protocol of issue 49:
#: the rate grid searched on tuning seeds that are never evaluated (100, 101: their own splits,
#: models, schedules and warm-ups), and every method scored on the same points of time, the ends of
#: the last ``score_cycles`` cycles (a wait round ends exactly at a cycle's end; Alg. 1 is evaluated
#: there too). The quick profile keeps FedSUM's small CNN (the paper's costs ~4-5x more per round
#: here: notebook 08 gives the arithmetic), the time scaled down 5x (cycle 100), a warm-up of 2,000
#: rounds (the paper's count), 3 cycles after it (the grid's runs as long as the figures'), scored
#: at the ends of cycles 2 and 3. The smoke profile runs the same protocol on random tensors of
#: Fashion-MNIST's shapes (a wait-full round on the real data costs ~45 s; the files' reading is
#: tested in tests/test_data.py).
FASHION = {
    "smoke": dict(dataset="fashion_mnist", num_clients=10, window=2, warmup=6, horizon=20, grid_horizon=20,
                  eval_every=2, P_values=(1, 5, 10, 15), grid=(1.0, 0.1), train_eval=10, tuning_seeds=(100,),
                  score_cycles=2, synthetic_sizes=(400, 100), local_steps=2, batch=8),
    "quick": dict(dataset="fashion_mnist", model="fedsum_mnist_cnn", num_clients=250, window=20, warmup=2000,
                  horizon=300, grid_horizon=300, eval_every=20, P_values=(1, 20, 60, 100, 140, 180),
                  grid=(1.0, 0.1, 0.01, 0.001, 0.0001), train_eval=20, tuning_seeds=(100, 101),
                  score_cycles=2),
    "paper": dict(SETTINGS["paper"], tuning_seeds=(100, 101), score_cycles=2),
}
#: seconds on one torch thread of an AMD EPYC (family 25 model 17, Zen 4, AVX-512; torch 2.13 CPU), measured
#: 2026-11-26 06:49-07:01 UTC by ``benchmarks/amplified_cost.py`` on Fashion-MNIST (the cost depends
#: on the model and the data's shape, not on the pixels): model -> (an Alg. 1 / FedAvg round of
#: S = 10 clients, one evaluation, a wait-minibatch round, a wait-full round), the inputs of
#: :meth:`AmplifiedSetup.store_cost`. The 2 cores were shared: load average ~0.3 while FedSUM's CNN
#: was timed, 1.5-4.6 for the two larger CNNs (their figures may be up to ~2x high); FedSUM's CNN
#: took 0.41 s per round in the MNIST store's runs, recorded on a Zen 3 (AVX2) under a shared load
MEASURED_SECONDS = {
    "fedsum_mnist_cnn": (0.176, 0.60, 4.5, 46.5),
    "fedau_fmnist_cnn": (0.376, 3.58, 15.7, 116.2),
    "wj_fmnist_cnn": (0.498, 2.29, 14.2, 426.7),
}
#: the datasets each profile runs on (the first: the profile's default). The quick profile runs
#: Wang & Ji's own Fashion-MNIST (issue 50); its MNIST runs, MNIST standing in for it under the
#: earlier protocol, stay in the store and notebook 08 compares the two (:func:`compare_datasets`).
#: The smoke profile mirrors it (random tensors of Fashion-MNIST's shapes under its protocol, then
#: scikit-learn's digits under the earlier one), so that one smoke run takes every code path
DATASETS = {"smoke": ("fashion_mnist", "digits"), "quick": ("fashion_mnist", "mnist"),
            "paper": ("fashion_mnist",)}
#: the two rate sets of Fig. 1 in notebook 08: each method at its own best grid rate, and at the
#: authors' rates (:data:`AUTHORS_RATES`); Fig. 2 runs at the first's rate of amplification
RATE_SETS = ("each method's best grid rate", "the authors' rates")
#: where each rate set's rates come from, in its claim rows' setting ("": the paper's own rule, Sec. 6
#: of Wang & Ji 2022, arXiv:2205.13648: "The best learning rate γ of each approach was separately
#: found on a grid"); the authors' rates are not in the paper's text
RATE_SOURCES = {RATE_SETS[0]: "",
                RATE_SETS[1]: "from their code, not the paper (Sec. 6 tunes each on a grid)"}
#: the rates of Fig. 2's rows: Sec. 6 runs every P "with the same learning rate γ that is obtained from
#: grid search in the previous experiment", the rate amplification's grid picked for Fig. 1
FIG2_RATES = "every P at amplification's grid rate (Sec. 6)"
#: the rates of the row that sets Fig. 2's runs beside Fig. 1's run without amplification
FIG2_VS_FIG1_RATES = ("every P at amplification's grid rate (Sec. 6), no amplification at its own grid rate "
                      "(Fig. 1): two rates")
#: the authors' horizon after the warm-up, in rounds of time: Sec. 6 of Wang & Ji 2022 (arXiv:2205.13648)
#: gives none; their code (IBM/fl-arbitrary-participation, README, FashionMNIST) runs ``-iters-warmup 10000
#: -iters-total 1500000`` at 5 iterations a round (``config.py``: ``-iters-per-round 5``), the warm-up's
#: 10,000 iterations being the text's 2,000 rounds: (1,500,000 - 10,000) / 5 rounds after it
AUTHORS_HORIZON = (1_500_000 - 10_000) // 5
#: the rates of the authors' FashionMNIST runs after the warm-up (their README and config):
#: method label's algorithm and gamma -> rate; the wait-for-all baselines keep the warm-up's rate
AUTHORS_RATES = {("amplified_fedavg", 10.0): 1e-5, ("amplified_fedavg", 1.0): 1e-5,
                 ("wait_minibatch", None): 0.1, ("wait_full", None): 0.1}
_NAMES = {"mnist": "MNIST, standing in for FashionMNIST", "digits": "digits (smoke test)",
          "fashion_mnist": "FashionMNIST, Wang & Ji's own dataset"}
_SHORT = {"mnist": "MNIST", "digits": "digits", "fashion_mnist": "FashionMNIST"}
#: Sec. 6's words behind notebook 08's claims
#: Sec. 2's and Sec. 5's statements of the analysis that no run here tests (paper read 1, FedSUM and
#: Wang & Ji finding 7): key -> (where, quote, claim, what the paper prints behind it)
THEORY_UNRUN = {
    "speedup": (
        "Sec. 5",
        "It essence, it means that the same convergence error can be achieved by increasing the number of "
        "participating clients S (with S <= N) and reducing the number of rounds T, while keeping the "
        "product ST unchanged. ... This shows that we can achieve linear speedup in S in this special case.",
        "linear speedup: with S clients of equal weight a round, the same error is reached with S T fixed "
        "(more clients, fewer rounds)",
        "Table 1 and Corollaries 4.3, 4.8: orders of bounds, no experimental number"),
    "P": (
        "Sec. 2",
        "Also note that although P is a parameter in our algorithm, the dominant terms of our convergence "
        "upper bounds shown in Table 1 do not depend on P.",
        "the dominant terms of the convergence bounds do not depend on P",
        "Table 1: orders of bounds, no experimental number"),
}
QUOTES = {
    "best": "we clearly see that Algorithm 1 with amplification gives the best performance",
    "wait": 'we observe that the "wait-minibatch" and "wait-full" methods perform worse than Algorithm 1 '
            "with amplification",
    "full": '"wait-full", which computes the gradient on the entire dataset, does not provide substantial '
            'gain compared to "wait-minibatch"',
    "lowest": "standard FedAvg (i.e., Algorithm 1 without amplification) gives the lowest performance",
    "P1": 'P=1, which corresponds to the "classical" setting of FedAvg with two-sided learning rates '
          "[18, 36], does not give the best performance",
    "smaller": "compared to P=500, we see that P=100 and P=300 give a similar performance",
    "larger": "the performances of P=700 and P=900 are even worse",
    "partial": "The results suggest that amplifying such partial contributions by multiple subsets of "
               "clients can still improve performance.",
    "smaller rate": "Nevertheless, we expect that choosing a smaller learning rate γ can improve the "
                    "performance for large P values.",
    "cifar": "compared to P=500, we see that P=100 and P=300 give a similar performance, and even slightly "
             "better performance in the case of CIFAR-10 data",
}
#: test accuracy at chance (10 classes)
CHANCE = 0.1


@dataclass(frozen=True)
class AmplifiedSetup:
    """Wang & Ji 2022 at one profile (see :data:`SETTINGS`): 5 availability groups, S = 10 sampled
    from the available ones, I = 5 local steps, minibatch 16, warm-up rate 0.1."""

    profile: str
    dataset: str
    model: str
    num_clients: int
    window: int
    warmup: int
    horizon: int
    grid_horizon: int
    eval_every: int
    P_values: tuple
    grid: tuple
    train_eval: int
    seed: int = 0
    stand_in: int = 0
    #: seeds whose runs pick each method's rate and are never evaluated; () (MNIST's quick
    #: protocol): the grid runs at the setup's own seed, the first evaluated seed
    tuning_seeds: tuple = ()
    #: 0 (MNIST's quick protocol): the late window is every evaluation in the last cycle of time
    #: (a wait method has one there, Alg. 1 five); k > 0: every method is scored on the same k
    #: points of time, the ends of the last k cycles (:meth:`window_times`)
    score_cycles: int = 0
    #: (train, test) sizes of random stand-in tensors with the dataset's shapes; () for the real data
    synthetic_sizes: tuple = ()
    groups: int = 5
    lr0: float = 0.1
    per_round: int = 10
    local_steps: int = 5
    batch: int = 16

    @property
    def cycle(self) -> int:
        """Rounds until every group has been available once."""
        return self.groups * self.window

    @property
    def data_name(self) -> str:
        if self.synthetic_sizes:
            return f"random tensors of {_SHORT[self.dataset]}'s shapes (smoke test)"
        return _NAMES[self.dataset]

    @property
    def data_label(self) -> str:
        """The dataset's short name (MNIST, FashionMNIST, digits; random tensors: said so)."""
        return _SHORT[self.dataset] + (" (random tensors)" if self.synthetic_sizes or self.stand_in else "")

    @property
    def methods(self) -> dict[str, tuple[str, dict]]:
        """Label -> (algorithm, options) of Fig. 1."""
        c = self.cycle
        amp, mb, full = (methods.method(n) for n in METHOD_NAMES)
        return {f"amplification (eta=10, P={c})": amp.spec(P=c, gamma=10.0),
                "no amplification (eta=1)": amp.spec(P=c, gamma=1.0),
                "wait-minibatch": mb.spec(cycle=c), "wait-full": full.spec(cycle=c)}

    def base(self) -> ExperimentConfig:
        """This seed's warm-up: FedAvg (eta = 1) at the initial rate for ``warmup`` rounds."""
        synthetic = {}
        if self.stand_in:
            synthetic = {"synthetic": True, "synthetic_sizes": [20 * self.num_clients, 200]}
        elif self.synthetic_sizes:
            synthetic = {"synthetic": True, "synthetic_sizes": list(self.synthetic_sizes)}
        model_args = {"dropout": 0.0} if self.model == "fedsum_mnist_cnn" else {}
        return ExperimentConfig(
            algorithm="fedavg", problem="neural", participation="periodic", rounds=self.warmup,
            problem_args={"dataset": self.dataset, "partition": "majority_label", "similarity": 0.05,
                          "model": self.model, "model_args": model_args, "num_clients": self.num_clients,
                          "batch_size": self.batch, "train_eval_per_client": self.train_eval,
                          "seed": self.seed, **synthetic},
            participation_args={"per_round": self.per_round, "groups": self.groups, "window": self.window},
            local_steps=self.local_steps, lr_local=self.lr0, eval_every=self.eval_every, seed=self.seed)

    def at_seed(self, seed: int) -> AmplifiedSetup:
        """The same setup at ``seed``: its own split, model, minibatch streams, availability offset,
        selection walk and warm-up run (seeds are independent runs, each with its own warm-up)."""
        return replace(self, seed=check_seed(seed))

    def phase(self, label: str, horizon: int, lr: float, **extra) -> ExperimentConfig:
        """Method ``label`` continuing this setup's warm-up (:meth:`base`) for ``horizon`` rounds
        of time (a wait round costs a cycle), everything seeded by the setup's ``seed``; ``extra``:
        options of the method's algorithm (e.g. ``P``).

        Raises:
            InputError: an unknown ``label``; ``horizon`` not an integer >= 1; ``lr`` not a positive
                finite number; an ``extra`` that is not an option of the algorithm, or a value it refuses.
        """
        if label not in self.methods:
            raise InputError(f"label: must be one of {', '.join(map(repr, self.methods))}; got {label!r}")
        horizon, lr = check_int("horizon", horizon, 1), check_real("lr", lr, 0, low_open=True)
        algo, opts = self.methods[label]
        wait = algo.startswith("wait")
        rounds = horizon // self.cycle if wait and not self.stand_in else horizon
        c = self.base().replace(algorithm=algo, algorithm_args={**opts, **extra}, rounds=max(rounds, 1),
                                lr_local=float(lr), eval_every=1 if wait else self.eval_every,
                                init_from=self.base())
        if extra:
            c.validate(where="phase", inputs=False)              # the extra options, named
        return c

    def warmups(self, seeds) -> list[ExperimentConfig]:
        """The warm-up run of each seed (:meth:`at_seed`, :meth:`base`)."""
        return [self.at_seed(k).base() for k in seeds]

    @property
    def grid_seeds(self) -> tuple[int, ...]:
        """The seeds whose runs pick the rates: :attr:`tuning_seeds`, else the setup's own seed."""
        return tuple(self.tuning_seeds) or (self.seed,)

    def check_seeds(self, seeds) -> list[int]:
        """Evaluated ``seeds`` as a list of ints: a non-empty list of distinct non-negative integers
        (:func:`fedlib.notebook.check_seeds`) none of which is a tuning seed (the rates would be picked
        on runs that are then scored: issue 49's leakage)."""
        seeds = check_seeds(seeds)
        shared = sorted(set(seeds) & set(self.tuning_seeds))
        if shared:
            raise InputError(f"seeds: {', '.join(map(str, shared))} also tune the rates (tuning seeds "
                             f"{', '.join(map(str, self.tuning_seeds))}); evaluate other seeds")
        return seeds

    def window_times(self, horizon: int | None = None) -> list[int]:
        """The points of time (rounds after the warm-up, a wait round charged a cycle) at which
        every method is scored when :attr:`score_cycles` > 0: the ends of the last ``score_cycles``
        cycles of ``horizon`` (default :attr:`horizon`), the same for every method."""
        h = self.horizon if horizon is None else horizon
        if not self.score_cycles:
            raise InputError("score_cycles: 0 scores every evaluation of the last cycle (late_window)")
        if h % self.cycle or h // self.cycle < self.score_cycles:
            raise InputError(f"horizon: {h} must be a multiple of the cycle ({self.cycle}) covering at least "
                             f"score_cycles = {self.score_cycles} cycles")
        return [h - j * self.cycle for j in reversed(range(self.score_cycles))]

    def warmup_table(self, warm: pd.DataFrame, earlier: int) -> pd.DataFrame:
        """Per seed of ``warm`` (warm-up curves with a ``seed`` column): the test accuracy averaged
        over the cycle of evaluations ending at round ``earlier`` (an earlier, shorter warm-up),
        one cycle before the end and at the end, and the gain over the last cycle (a plateau
        gains little)."""
        rows = []
        for k, h in warm.groupby("seed", sort=False):
            end = int(h["round"].max())

            def near(r: float, h=h) -> float:
                sel = h[(h["round"] > r - self.cycle) & (h["round"] <= r)]
                return float(sel["test_acc"].mean()) if len(sel) else float("nan")
            at = {"earlier": near(min(earlier, end)), "cycle before": near(max(end - self.cycle, 0)),
                  "end": near(end)}
            rows.append({"seed": k, f"test acc, cycle to round {min(earlier, end)}": at["earlier"],
                         f"test acc, cycle to round {max(end - self.cycle, 0)}": at["cycle before"],
                         f"test acc, cycle to round {end}": at["end"],
                         "gain over the last cycle": at["end"] - at["cycle before"]})
        return pd.DataFrame(rows)

    @property
    def setting(self) -> str:
        """The setting of the claim rows whose rates the grid tuned (:meth:`setting_at`)."""
        return self.setting_at(tuned=True)

    def setting_at(self, tuned: bool = True) -> str:
        """The setting of the claim rows (a stand-in or smoke run reproduces nothing): the data, the
        model, the cycle, the horizon after the warm-up against the authors' (:attr:`horizon_words`),
        where each method is scored and, where ``tuned`` (rates the grid picked here, not the
        authors' fixed ones), the seeds that tuned them."""
        if self.stand_in or self.profile == "smoke":
            return f"{claims.scale_cause(self.profile, self.stand_in, self.horizon, '')} ({self.data_name})"
        scored = ""
        if self.score_cycles:
            ends = ", ".join(str(t // self.cycle) for t in self.window_times())
            scored = f", scored at the ends of cycles {ends}"
            if tuned:
                scored += f", rates tuned on seeds {', '.join(map(str, self.tuning_seeds))}"
        model = models.short_name(self.model)
        if self.dataset == "fashion_mnist" and self.model != "wj_fmnist_cnn":
            model += " for Wang & Ji's CNN"
        return (f"{self.profile} profile ({self.data_name}, {model}, "
                f"cycle {self.cycle}, {self.horizon_words}{scored})")

    @property
    def horizon_words(self) -> str:
        """This setup's horizon after the warm-up in cycles, against the authors' (:data:`AUTHORS_HORIZON`
        in cycles of Sec. 6's 500 rounds): "3 cycles after warm-up, 0.50% of the authors' 596 (their
        code: 298,000 rounds, cycle 500)". Time is scaled as the cycle is, so cycles compare the two."""
        paper_cycle, theirs = authors_cycles()
        here = self.horizon / self.cycle
        return (f"{here:g} cycles after warm-up, {here / theirs:.2%} of the authors' {theirs:g} (their code: "
                f"{AUTHORS_HORIZON:,} rounds, cycle {paper_cycle})")

    def outcome(self, df: pd.DataFrame, config: ExperimentConfig) -> dict:
        """The outcome of ``config``'s run in ``df`` (ok, diverged, error, or collapsed:
        :func:`fedlib.claims.collapse`) and, if ok, its late-window test accuracy and training
        loss (:meth:`late_window`); NaN otherwise."""
        h = df[df["key"] == config.key()].sort_values("round")
        status = h["status"].iloc[-1]
        start, stuck = claims.collapse(h, CHANCE)
        outcome = (f"collapsed at round {int(start)}" if status == "ok" and stuck else
                   "ok" if status == "ok" else str(status))
        ok = outcome == "ok"
        return {"outcome": outcome, "acc": self.late_window(df, config, "test_acc") if ok else np.nan,
                "loss": self.late_window(df, config, "loss") if ok else np.nan}

    @staticmethod
    def outcome_table(values: dict, groups: dict, seeds: list) -> pd.DataFrame:
        """Per group (``groups``: name -> {column: value} naming it, its runs keyed by
        ``key(seed)`` in ``values`` under ``"key"``): late test accuracy and training loss (mean
        +- std over the runs that are ok), runs ok, and the runs that are not."""
        rows = []
        for cols in groups.values():
            cols = dict(cols)
            key = cols.pop("key")
            v = [_outcome_of(values, key(k)) for k in seeds]
            okv = [x for x in v if x["outcome"] == "ok"]
            rows.append({**cols, "late test acc": mean_std(pd.Series([x["acc"] for x in okv], dtype=float)),
                         "late train loss": mean_std(pd.Series([x["loss"] for x in okv], dtype=float)),
                         "runs ok": f"{len(okv)} of {len(v)}",
                         "not ok": "; ".join(f"seed {k}: {x['outcome']}"
                                             for k, x in zip(seeds, v, strict=True)
                                             if x["outcome"] != "ok") or "-"})
        return pd.DataFrame(rows)

    def claims(self, vals1: dict, vals2: dict, seeds: list, rate_sets: dict) -> list[ClaimRow]:
        """Sec. 6's claims: about Fig. 2 (:meth:`fig2_claims`) and about Fig. 1 under each of
        ``rate_sets`` (:meth:`fig1_claims`; the first: the grid's picks), each row's setting this
        setup's (:meth:`setting_at`: its horizon against the authors'; the tuning seeds only where
        the grid picked the rates), after where its rates come from where the paper's text does not
        give them (:data:`RATE_SOURCES`); a row that does not hold names the horizon in its cause too,
        and the grid's picks that differ from the authors' rates (:meth:`horizon_cause`).

        Raises:
            InputError: ``seeds`` not a non-empty list of distinct integers >= 0; ``rate_sets`` empty.
        """
        seeds = check_seeds(seeds)
        if not isinstance(rate_sets, dict) or not rate_sets:
            raise InputError(f"rate_sets: expected a non-empty dict name -> (method -> rate) "
                             f"(:meth:`rate_sets`), got {rate_sets!r}")
        rows = [*self.fig2_claims(vals1, vals2, seeds, next(iter(rate_sets))),
                *self.fig1_claims(vals1, seeds, rate_sets)]
        return [replace(r, setting=", ".join(x for x in (RATE_SOURCES.get(r.context["rates"]),
                                                         self.setting_at(r.context["rates"] != RATE_SETS[1]))
                                             if x),
                        cause=self.horizon_cause(r, rate_sets[next(iter(rate_sets))])) for r in rows]

    def horizon_cause(self, row: ClaimRow, best: dict) -> str:
        """``row``'s cause, and where it does not hold (at the quick or paper profile) the horizon
        against the authors' (:attr:`horizon_words`) and, for the rates the grid picked (``best``:
        method label -> rate) that differ from the authors' (:meth:`authors_rates`), each pick beside
        theirs: the methods of the row's rates (:data:`RATE_SETS` first: all four; :data:`FIG2_RATES`:
        amplification; :data:`FIG2_VS_FIG1_RATES`: amplification and no amplification)."""
        if row.check.verdict != claims.NOT_HOLDS or self.stand_in or self.profile == "smoke":
            return row.cause
        amp, no_amp, *_ = self.methods
        tuned = {RATE_SETS[0]: tuple(self.methods), FIG2_RATES: (amp,), FIG2_VS_FIG1_RATES: (amp, no_amp)}
        authors = self.authors_rates()
        picks = [f"{m} {best[m]:g} where the authors' code runs {authors[m]:g}"
                 for m in tuned.get(row.context.get("rates"), ()) if not np.isclose(best[m], authors[m])]
        grid = (f"the grid (runs of {self.grid_horizon / self.cycle:g} cycles) picked {'; '.join(picks)}"
                if picks else "")
        return "; ".join(x for x in (row.cause, f"horizon: {self.horizon_words}", grid) if x)

    def fig2_claims(self, vals1: dict, vals2: dict, seeds: list, best: str) -> list[ClaimRow]:
        """Sec. 6's claims about Fig. 2 from ``vals2`` ((seed, P) -> :meth:`outcome`), every P at the
        rate amplification's grid picked (:data:`FIG2_RATES`), as Sec. 6 runs them: P = 1 is not the
        best, an existential claim ("some P beats it"): every other P of Fig. 2 against P = 1, each by
        the one rule, joined by :func:`fedlib.claims.combine_any` (holds if some P holds; not tested if
        none holds and one was not made; inconclusive if none holds and one is inconclusive;
        equivalent if each P is equivalent or does not hold and one is equivalent; does not hold only
        if every P does not hold; until a review read the quote as it stands, the row compared the
        cycle's P alone with P = 1); a smaller P performs similarly to the cycle (no worse by more than
        the margin both ways: within +-margin); a larger P is worse; amplifying over a P below the
        cycle improves performance, read two ways, a row each: over P = 1 at the same rate (Fig. 2's
        own baseline, the "classical" setting), and over no amplification at its own grid rate from
        ``vals1`` ((rate set, seed, method); ``best``: the grid's rate set), as Fig. 1 compares methods
        (:data:`FIG2_VS_FIG1_RATES`: two rates, a comparison Sec. 6's text does not make)."""
        margin, _, no_amp, *_ = claims.MARGINS["test accuracy"], *self.methods
        c = self.cycle
        acc2 = {P: check_accuracies({k: _outcome_of(vals2, (k, P))["acc"] for k in seeds}, f"vals2: P = {P}")
                for P in self.P_values}

        def vs_p(a: int, b: int, **kw):
            return claims.paired(acc2[a], acc2[b], margin=margin, names=(f"P={a}", f"P={b}"), **kw)
        smaller = [P for P in self.P_values if 1 < P < c]
        larger = [P for P in self.P_values if P > c]
        below = ", ".join(map(str, smaller))
        similar = {f"P={a} no worse than P={b}": vs_p(a, b, kind="no worse")
                   for P in smaller for a, b in ((P, c), (c, P))}
        plain = {k: vals1[(best, k, no_amp)]["acc"] for k in seeds}
        others = [P for P in self.P_values if P != 1]
        fig2 = [("P1", f"P = 1 is not the best: some P ({', '.join(map(str, others))}) beats it",
                 {f"P={P}": vs_p(P, 1) for P in others}, FIG2_RATES),
                ("smaller", f"a smaller P ({below}) performs similarly to P = {c}: no worse than it, nor it "
                            f"than them, by more than the margin ({margin:g})", similar, FIG2_RATES),
                ("larger", f"a larger P ({', '.join(map(str, larger))}) is worse than P = {c} (the sentence "
                           "follows one on CIFAR-10 and does not say whether it covers FashionMNIST; our "
                           "reading applies it here)",
                 {f"P={P}": vs_p(c, P) for P in larger}, FIG2_RATES),
                ("partial", f"amplification with P below the cycle ({below}) ends above P = 1 (amplifying "
                            "each round's clients alone, the paragraph's \"classical\" setting), at the same "
                            "rate",
                 {f"P={P}": vs_p(P, 1) for P in smaller}, FIG2_RATES),
                ("partial", f"amplification with P below the cycle ({below}) ends above no amplification "
                            "(eta=1, Fig. 1's run at its own grid rate; Sec. 6 does not set the two side by "
                            "side)",
                 {f"P={P}": claims.paired(acc2[P], plain, margin=margin, names=(f"P={P}", no_amp))
                  for P in smaller}, FIG2_VS_FIG1_RATES)]
        shown = claims.curves_only("Fig. 2")
        return [ClaimRow("Sec. 6, Fig. 2", QUOTES[q], claim,
                         (claims.combine_any if q == "P1" else claims.combine)(checks),
                         context={"rates": rates, "in the paper": shown})
                for q, claim, checks, rates in fig2 if checks]  # a profile without P values on a side: no row

    def fig1_claims(self, vals1: dict, seeds: list, rate_sets: dict) -> list[ClaimRow]:
        """Sec. 6's claims about Fig. 1 from ``vals1`` ((rate set, seed, method) -> :meth:`outcome`)
        under each of ``rate_sets`` (name -> method -> rate; a row at a rate set other than the
        first says which rates in its cause): amplification is the best (it beats each of the three
        other methods), the wait baselines are worse than amplification, wait-full gains nothing over
        wait-minibatch, FedAvg without amplification is the lowest."""
        margin, amp, no_amp, wait_mb, wait_full = claims.MARGINS["test accuracy"], *self.methods
        best, rows = next(iter(rate_sets)), []
        for rname in rate_sets:
            def vs(m, other, rname=rname, **kw):
                def acc(x):
                    return check_accuracies({k: _outcome_of(vals1, (rname, k, x))["acc"] for k in seeds},
                                            f"vals1: {x!r} at {rname!r}")
                return claims.paired(acc(m), acc(other), margin=margin, names=(m, other), **kw)
            cause = ("" if rname == best else
                     f"at {rname} ({', '.join(f'{m} {v:g}' for m, v in rate_sets[rname].items())})")
            fig1 = [(QUOTES["best"], "amplification is the best: it beats each other method of Fig. 1",
                     claims.combine({m: vs(amp, m) for m in (no_amp, wait_mb, wait_full)})),
                    (QUOTES["wait"], "wait-minibatch and wait-full are worse than amplification",
                     claims.combine({m: vs(amp, m) for m in (wait_mb, wait_full)})),
                    (QUOTES["full"],
                     f"wait-full gives no substantial gain over wait-minibatch (margin {margin:g})",
                     vs(wait_mb, wait_full, kind="no worse")),
                    (QUOTES["lowest"], "FedAvg without amplification is the lowest",
                     claims.combine({m: vs(m, no_amp) for m in self.methods if m != no_amp}))]
            rows += [ClaimRow("Sec. 6, Fig. 1", q, claim, check, cause,
                              context={"rates": rname,
                                       "in the paper": claims.curves_only("Fig. 1")})
                     for q, claim, check in fig1]
        return rows

    def early_phase_words(self, warm: pd.DataFrame, vals1: dict, vals2: dict, early_loss: float) -> str:
        """Whether notebook 09's horizon rule (``fedlib.studies.real.early_phase``, set for FOCUS's
        claims: where a run is shorter than its paper's, a run whose late-window training loss is still
        above ``early_loss`` times its loss at round 0 -- the initial model's, about ln 10 at chance --
        has not left its early phase and its comparisons are "not tested") covers any run behind
        the claims here, in one sentence computed from the runs: ``warm``, the warm-ups with a
        ``seed`` column (their round 0 is each seed's initial model, which every phase continues),
        ``vals1`` ((rate set, seed, method) -> :meth:`outcome`) and ``vals2`` ((seed, P) -> outcome).
        Every run here is shorter than the authors' (:attr:`horizon_words`), so the criterion alone
        decides. A phase's own round 0 is the warm-up's end, already at its plateau: measured from it
        the rule would ask a continuation to halve a loss the warm-up has already brought down, which
        is not the early phase the rule names."""
        h = warm[warm["round"] == 0]
        start = {k: float(g["loss"].iloc[0]) for k, g in h.groupby("seed")}
        late = [(k, v["loss"]) for (_, k, _), v in vals1.items()]
        late += [(k, v["loss"]) for (k, _), v in vals2.items()]
        missing = sorted({k for k, _ in late} - set(start))
        if missing:
            raise InputError(f"warm: no loss at round 0 for seed(s) {', '.join(map(str, missing))}")
        share = np.array([x / start[k] for k, x in late], dtype=float)
        ok = share[np.isfinite(share)]
        if not len(ok):
            return "No Fig. 1 or Fig. 2 run here ended ok: notebook 09's horizon rule has no run to read."
        start = {k: start[k] for k, _ in late}                  # the seeds evaluated, not the tuning ones
        above = int((ok > early_loss).sum())
        verdict = ("so by the same criterion no run has stayed in its early phase and no row is set aside"
                   if not above else f"so by the same criterion {above} run(s) have not left their early "
                   "phase (notebook 08 applies no horizon rule: read their rows with this)")
        return (f"Notebook 09's horizon rule sets aside, where a run is shorter than its paper's, a run "
                f"whose late-window training loss is above {early_loss:g} x its loss at round 0 (the initial "
                f"model's); every Fig. 1 and Fig. 2 run here is shorter than the authors', "
                f"{self.horizon_words}, but continues its seed's {self.warmup:,}-round warm-up and ends at "
                f"{ok.min():.2f} to {ok.max():.2f} of that loss ({min(start.values()):.2f} to "
                f"{max(start.values()):.2f} by seed), {len(share) - len(ok)} run(s) failed, {verdict}.")

    def _theory_unrun(self) -> list[ClaimRow]:
        """Sec. 2's and Sec. 5's statements of the analysis (:data:`THEORY_UNRUN`), "not tested" with
        the reason computed from this setup (its clients a round and its P values)."""
        ps = ", ".join(map(str, self.P_values))
        why = {"speedup": f"notebook 08 runs one number of clients a round (S = {self.per_round}) at one "
                          "horizon; the statement needs runs at several S with S T held fixed, at large T "
                          "and at the rates Cor. 3.2 sets for each S (a rate chosen per S here would be "
                          "tuning), and it concerns a bound's order",
               "P": "it concerns the leading term of an upper bound as T grows (P stays in the smaller "
                    "terms, and Cor. 4.8 ties P to sqrt(I T)); at this horizon the smaller terms matter and "
                    f"the paper itself reports P's effect (Fig. 2), which the P = {ps} rows test"}
        return [ClaimRow(where, quote, claim, claims.not_run(why[k]), setting="a statement of the analysis, "
                         "not run", context={"rates": "none (no run)", "in the paper": shown})
                for k, (where, quote, claim, shown) in THEORY_UNRUN.items()]

    def unrun_claims(self) -> list[ClaimRow]:
        """Sec. 6's claims that no run here tests, each "not tested" with its reason
        (:func:`fedlib.claims.not_run`): Fig. 1's and Fig. 2's claims on CIFAR-10 (Sec. 6 runs both
        datasets); on CIFAR-10 alone, a smaller P slightly better than the cycle there; and its
        expectation that
        a smaller rate improves a P above the cycle."""
        why = claims.not_had("Sec. 6 runs CIFAR-10 beside FashionMNIST", "every profile of notebook 08 runs "
                             "FashionMNIST (the quick one MNIST too)", ["CIFAR-10"], paper_profile=False)
        larger = [P for P in self.P_values if P > self.cycle] or ["none"]
        slower = ("Sec. 6 states it as an expectation, with no run; notebook 08 runs Fig. 2's P values at "
                  "the one rate its grid picked for amplification at P = the cycle, as Sec. 6 does, and no "
                  "run at a smaller rate")
        fig1 = " ... ".join(QUOTES[k] for k in ("best", "wait", "full", "lowest"))   # each verbatim
        fig2 = " ... ".join(QUOTES[k] for k in ("P1", "partial", "larger"))          # in the paper's order
        return [ClaimRow("Sec. 6, Fig. 1", fig1,
                         "Fig. 1's claims on CIFAR-10 (checked here on FashionMNIST)",
                         why, setting="CIFAR-10, cycle 500 (Sec. 6), not run",
                         context={"rates": RATE_SETS[0],
                                  "in the paper": claims.curves_only("Fig. 1")}),
                ClaimRow("Sec. 6, Fig. 2", fig2,
                         "Fig. 2's claims on CIFAR-10 (checked here on FashionMNIST)",
                         why, setting="CIFAR-10, cycle 500 (Sec. 6), not run",
                         context={"rates": FIG2_RATES,
                                  "in the paper": claims.curves_only("Fig. 2")}),
                ClaimRow("Sec. 6, Fig. 2", QUOTES["cifar"],
                         "on CIFAR-10, P = 100 and P = 300 perform slightly better than P = 500 (the cycle)",
                         why, setting="CIFAR-10, cycle 500 (Sec. 6), not run",
                         context={"rates": FIG2_RATES,
                                  "in the paper": claims.curves_only("Fig. 2")}),
                ClaimRow("Sec. 6, Fig. 2", QUOTES["smaller rate"],
                         f"a P above the cycle (here {', '.join(map(str, larger))}) does better at a smaller "
                         "rate than the grid's",
                         claims.not_run(slower), setting=f"{self.data_label}, P above the cycle, not run",
                         context={"rates": "a smaller rate than the best grid rate",
                                  "in the paper": "an expectation: no run printed"}),
                *self._theory_unrun()]

    @property
    def test_size(self) -> int:
        """Test images the accuracy is counted on (its resolution is one image of these)."""
        if self.stand_in:
            return 200
        if self.synthetic_sizes:
            return int(self.synthetic_sizes[1])
        from ..data import info
        return int(info(self.dataset).n_test)

    def rate_sets(self, best: dict) -> dict[str, dict[str, float]]:
        """Fig. 1's two rate sets (:data:`RATE_SETS`): ``best`` (method label -> the grid's pick)
        and the authors' rates (:meth:`authors_rates`)."""
        return {RATE_SETS[0]: dict(best), RATE_SETS[1]: self.authors_rates()}

    def evaluate(self, compute: Callable[..., pd.DataFrame], seeds) -> Evaluation:
        """Every number notebook 08 judges the claims by, at ``seeds``, without its figures: the
        warm-ups (the tuning seeds' too), the rate search (:meth:`search_rates`), Fig. 1 at both
        rate sets (:meth:`rate_sets`), Fig. 2 at the rate amplification picked, each run's
        :meth:`outcome` and the claim rows (:meth:`claims`). ``compute`` maps a list of configs
        (and ``keep_params``) to their :func:`fedlib.sweep` frame; ``keys`` of the result lists
        every run read."""
        seeds = self.check_seeds(seeds)
        warm = compute(self.warmups([*self.tuning_seeds, *seeds]), keep_params=True)
        searches = self.search_rates(compute)
        best = {m: g.best for m, g in searches.items()}
        grid = {self.grid_config(m, r, k) for m, g in searches.items() for r in g.scores   # past an edge too
                for k in self.grid_seeds}
        rates = self.rate_sets(best)
        labels1 = {}
        for rname, r in rates.items():
            for c, (k, m) in self.fig1_configs(r, seeds).items():
                labels1.setdefault(c, []).append((rname, k, m))
        df1 = compute(list(labels1))
        vals1 = {lab: self.outcome(df1, c) for c, labs in labels1.items() for lab in labs}
        labels2 = self.fig2_configs(best[next(iter(self.methods))], seeds)
        df2 = compute(list(labels2))
        vals2 = {lab: self.outcome(df2, c) for c, lab in labels2.items()}
        keys = {*warm["key"], *(c.key() for c in grid), *df1["key"], *df2["key"]}
        return Evaluation(self, tuple(seeds), best, rates, vals1, vals2,
                          tuple(self.claims(vals1, vals2, seeds, rates)), frozenset(keys))

    def earlier_picks(self, df_grid: pd.DataFrame, grid: dict, best: dict) -> pd.DataFrame:
        """Per method: the rate picked here (``best``) beside the rate the earlier one-cycle rule
        picks from the same grid runs (``grid``: config -> (method, rate); the lowest training
        loss at the last evaluation within the first cycle of time, averaged over the grid's
        seeds)."""
        def score(c: ExperimentConfig) -> float:
            tl = self.timeline(df_grid, {c.key(): "run"})
            at = tl[tl["time"] <= self.cycle].sort_values("time")
            return float(at["loss"].iloc[-1]) if len(at) and (tl["status"] == "ok").all() else float("nan")
        scores = pd.DataFrame([{"method": m, "lr": r, "score": score(c)} for c, (m, r) in grid.items()])
        # per rate, the mean over the grid's seeds (NaN if any of them failed)
        scores = scores.groupby(["method", "lr"], sort=False)["score"].agg(
            lambda v: v.mean(skipna=False)).reset_index()
        earlier = {m: g.loc[g["score"].idxmin(), "lr"] if g["score"].notna().any() else np.nan
                   for m, g in scores.groupby("method", sort=False)}
        here = "pick: last cycle of 2 (here)"
        if self.score_cycles:
            ends = ", ".join(str(t // self.cycle) for t in self.window_times(self.grid_horizon))
            here = f"pick: ends of cycles {ends} of {self.grid_horizon // self.cycle} (here)"
        return pd.DataFrame([{"method": m, here: best[m],
                              "pick: loss after one cycle (earlier rule)": earlier[m]} for m in self.methods])

    @property
    def grid_rates(self) -> list[float]:
        """The starting rates of the grid: the warm-up rate times each of :attr:`grid`."""
        return [float(f"{self.lr0 * g:.6g}") for g in self.grid]

    def grid_config(self, label: str, lr: float, seed: int | None = None) -> ExperimentConfig:
        """Method ``label`` at rate ``lr`` over the grid's horizon, after the warm-up of ``seed``
        (default: the setup's seed; notebook 08 on MNIST: its first seed)."""
        return (self if seed is None else self.at_seed(seed)).phase(label, self.grid_horizon, lr)

    def grid_configs(self) -> dict[ExperimentConfig, tuple[str, float]]:
        """Every method at every starting rate of the grid, at every seed of :attr:`grid_seeds`:
        config -> (method, rate)."""
        return {self.grid_config(label, r, k): (label, r)
                for k in self.grid_seeds for label in self.methods for r in self.grid_rates}

    def late_window(self, df: pd.DataFrame, config: ExperimentConfig, metric: str = "loss") -> float:
        """The mean of ``metric`` over the late window of ``config``'s run in ``df``; NaN if the
        run diverged or failed. With :attr:`score_cycles` > 0 the window is the same points of
        time for every method (:meth:`window_times` of the run's horizon): each at the end of a
        cycle, where a wait round ends and where the availability has passed every group once.
        Otherwise (MNIST's quick protocol) the last cycle of time: every evaluation at time >=
        horizon - cycle, a wait round charged a cycle, at least the last evaluation; averaging over
        a whole cycle keeps the availability's periodic swing out of the score."""
        if metric not in ("loss", "test_acc"):
            raise InputError(f"metric: must be one of 'loss', 'test_acc', got {metric!r}")
        t = self.timeline(df, {config.key(): "run"})
        if t.empty or (t["status"] != "ok").any():
            return float("nan")
        t = t.sort_values("time")
        if self.score_cycles:
            wait = config.algorithm.startswith("wait")
            horizon = config.rounds * self.cycle if wait else config.rounds
            want = self.window_times(horizon)
            at = t[t["time"].isin(want)]
            if sorted(at["time"]) != want:
                raise InputError(f"score_cycles: run {config.key()} has no evaluation at time "
                                 f"{', '.join(str(w) for w in want if w not in set(at['time']))}")
            return float(at[metric].mean())
        end = float(t["time"].iloc[-1])
        tail = t[t["time"] >= end - self.cycle + (1 if end >= self.cycle else 0)]
        tail = tail if len(tail) else t.tail(1)
        return float(tail[metric].mean())

    def search_rates(self, compute: Callable[[list], pd.DataFrame],
                     max_extensions: int = 3) -> dict[str, GridSearch]:
        """Each method's rate (:meth:`search_rate`), in the order of :attr:`methods`; ``compute``
        maps a list of configs to their :func:`fedlib.sweep` frame. Returns method label -> the
        search."""
        return {m: self.search_rate(m, compute, max_extensions) for m in self.methods}

    def search_rate(self, label: str, compute: Callable[[list], pd.DataFrame],
                    max_extensions: int = 3) -> GridSearch:
        """Method ``label``'s rate: :func:`fedlib.analysis.search_log_grid` over :attr:`grid_rates`,
        scored by the late-window training loss (:meth:`late_window`) of a run over the grid's
        horizon (at least two cycles at the quick and paper profiles, so the score covers a whole
        cycle after the first amplification), averaged over :attr:`grid_seeds`, extended by 10x
        past an edge."""
        def scores(rates: list[float]) -> dict[float, float]:
            configs = {r: [self.grid_config(label, r, k) for k in self.grid_seeds] for r in rates}
            df = compute([c for cs in configs.values() for c in cs])
            # the mean over the tuning seeds (NaN if any of them failed: a rate is not picked
            # on the seeds it survived)
            return {r: float(np.mean([self.late_window(df, c) for c in cs])) for r, cs in configs.items()}
        return search_log_grid(scores, self.grid_rates, lower=True, max_extensions=max_extensions)

    def authors_rates(self) -> dict[str, float]:
        """Method label -> the rate of the authors' FashionMNIST runs (:data:`AUTHORS_RATES`)."""
        out = {}
        for label, (algo, opts) in self.methods.items():
            out[label] = AUTHORS_RATES[(algo, opts.get("gamma"))]
        return out

    def fig1_configs(self, rates: dict[str, float], seeds) -> dict[ExperimentConfig, tuple[int, str]]:
        """Fig. 1: every method at ``rates[label]`` over the horizon, per seed after that
        seed's own warm-up (:meth:`at_seed`): config -> (seed, method)."""
        missing = [m for m in self.methods if m not in rates]
        if missing:
            raise InputError(f"rates: no rate for {', '.join(map(repr, missing))}")
        extra = [m for m in rates if m not in self.methods]
        if extra:
            raise InputError(f"rates: {', '.join(map(repr, extra))} is not a method of Fig. 1 "
                             f"({', '.join(map(repr, self.methods))})")
        seeds = self.check_seeds(seeds)
        return {self.at_seed(k).phase(m, self.horizon, rates[m]): (int(k), m)
                for k in seeds for m in self.methods}

    def fig2_configs(self, lr: float, seeds) -> dict[ExperimentConfig, tuple[int, int]]:
        """Fig. 2: amplification (eta = 10) with each P of :attr:`P_values` at rate ``lr``, per seed:
        each after its seed's own warm-up: config -> (seed, P)."""
        amp = next(m for m, (a, o) in self.methods.items() if a == "amplified_fedavg" and o["gamma"] != 1.0)
        seeds = self.check_seeds(seeds)
        return {self.at_seed(k).phase(amp, self.horizon, lr, P=int(P)): (int(k), int(P))
                for k in seeds for P in self.P_values}

    def compute_in_order(self, compute: Callable[[list], pd.DataFrame], seeds) -> dict[str, float]:
        """Every run of notebook 08 at ``seeds``, in the order a long sweep should take them: the
        tuning seeds' warm-ups and the rate grid first (:meth:`search_rates`: the rates every
        evaluated seed needs), then each evaluated seed whole (its warm-up, Fig. 1 at the best and
        at the authors' rates, Fig. 2), so that a sweep cut short leaves whole seeds. The configs
        are those the notebook asks for; ``compute`` maps a list of configs (and ``keep_params``,
        passed for the warm-ups) to their :func:`fedlib.sweep` frame. Returns the rates picked
        (method label -> rate)."""
        seeds = self.check_seeds(seeds)
        # warm-ups keep their final models (keep_params): a warm-up stored without it is computed
        # again by the first sweep that continues it
        compute(self.warmups(self.grid_seeds), keep_params=True)
        best = {m: g.best for m, g in self.search_rates(compute).items()}
        amp = next(iter(self.methods))
        for k in seeds:
            compute(self.warmups([k]), keep_params=True)
            compute([*self.fig1_configs(best, [k]), *self.fig1_configs(self.authors_rates(), [k]),
                     *self.fig2_configs(best[amp], [k])])
        return best

    def store_cost(self, seeds, seconds: tuple[float, float, float, float],
                   extensions: int = 1) -> pd.DataFrame:
        """What the store of notebook 08 costs at ``seeds`` (evaluated) and :attr:`grid_seeds`,
        from ``seconds`` (an Alg. 1 / FedAvg round, one evaluation, a wait-minibatch round, a
        wait-full round: :data:`MEASURED_SECONDS`): per part, the runs, their rounds and CPU-hours
        on one core. The grid counts ``extensions`` rates past an edge per method; the authors'
        rates are counted as runs of their own (an upper bound: a rate the grid picks too is
        one run)."""
        if (isinstance(seconds, (str, bytes)) or len(seconds) != 4
                or not all(isinstance(x, (int, float, np.number)) and not isinstance(x, bool)
                           and math.isfinite(x) and x > 0 for x in seconds)):
            raise InputError(f"seconds: must be 4 positive seconds (a round of Alg. 1 / FedAvg, an "
                             f"evaluation, a wait-minibatch round, a wait-full round: MEASURED_SECONDS), got "
                             f"{seconds!r}")
        amp_round, evaluation, mb_round, full_round = seconds
        amp, no_amp, wait_mb, wait_full = self.methods
        per_round = {amp: amp_round, no_amp: amp_round, wait_mb: mb_round, wait_full: full_round}

        def run(label: str | None, horizon: int) -> tuple[int, float]:
            if label is None:                                   # a warm-up
                return horizon, horizon * amp_round + (horizon // self.eval_every + 1) * evaluation
            cfg = self.phase(label, horizon, 0.1)
            evals = cfg.rounds // cfg.eval_every + 1
            return cfg.rounds, cfg.rounds * per_round[label] + evals * evaluation
        n_seeds, n_grid, n_rates = len(list(seeds)), len(self.grid_seeds), len(self.grid) + extensions
        n_p = n_seeds * (len(self.P_values) - 1)
        warmups = n_grid + n_seeds if self.tuning_seeds else n_seeds
        parts = [("warm-ups", [(None, self.warmup, warmups)]),
                 ("rate grid", [(m, self.grid_horizon, n_grid * n_rates) for m in self.methods]),
                 ("Fig. 1, best rates", [(m, self.horizon, n_seeds) for m in self.methods]),
                 ("Fig. 1, authors' rates", [(m, self.horizon, n_seeds) for m in self.methods]),
                 ("Fig. 2, P other than the cycle", [(amp, self.horizon, n_p)])]
        rows = []
        for name, items in parts:
            runs = sum(n for _, _, n in items)
            rounds = sum(n * run(m, h)[0] for m, h, n in items)
            secs = sum(n * run(m, h)[1] for m, h, n in items)
            rows.append({"part": name, "runs": runs, "rounds": rounds, "CPU-hours": secs / 3600})
        total = {k: sum(r[k] for r in rows) for k in ("runs", "rounds", "CPU-hours")}
        rows.append({"part": "total", **total})
        return pd.DataFrame(rows)

    @staticmethod
    def timeline(df: pd.DataFrame, labels: dict) -> pd.DataFrame:
        """The runs of ``labels`` (key -> method label) on one time axis: rounds after the
        warm-up, a wait round charged as a cycle (``time``)."""
        out = df.assign(method=df["key"].map(labels)).dropna(subset=["method"])
        waited = out["waited_rounds"] if "waited_rounds" in out else np.nan
        out["time"] = np.where(out["algorithm"].str.startswith("wait"), waited, out["round"])
        return out


@dataclass(frozen=True)
class Evaluation:
    """What :meth:`AmplifiedSetup.evaluate` computed for one setup (one dataset and its protocol).

    Attributes:
        setup: the setup evaluated.
        seeds: the evaluated seeds.
        best: method label -> the rate its grid picked.
        rates: Fig. 1's rate sets (:data:`RATE_SETS` -> method label -> rate).
        vals1: (rate set, seed, method) -> :meth:`AmplifiedSetup.outcome` of Fig. 1's run.
        vals2: (seed, P) -> the outcome of Fig. 2's run.
        rows: the claim rows (:meth:`AmplifiedSetup.claims`).
        keys: the store keys of every run read (warm-ups, grid, Fig. 1, Fig. 2).
    """

    setup: AmplifiedSetup
    seeds: tuple
    best: dict
    rates: dict
    vals1: dict
    vals2: dict
    rows: tuple
    keys: frozenset


def compare_datasets(evaluations: dict) -> pd.DataFrame:
    """Fig. 1's methods on several datasets side by side (``evaluations``: a name per dataset ->
    its :class:`Evaluation`): per dataset, rate set and method, the late-window test accuracy
    (mean and sample std over the seeds whose run is ok, scored by that dataset's protocol, given
    in ``protocol``), the runs ok; then per dataset and rate set the spread between the best and
    the worst method's mean, in accuracy, in test images and in multiples of the claims' accuracy
    margin (:data:`fedlib.claims.MARGINS`)."""
    margin = claims.MARGINS["test accuracy"]
    rows = []
    for name, ev in evaluations.items():
        s = ev.setup
        protocol = (f"scored at the ends of cycles {', '.join(str(t // s.cycle) for t in s.window_times())}; "
                    f"rates tuned on seeds {', '.join(map(str, s.tuning_seeds))} (not evaluated)"
                    if s.score_cycles else
                    f"scored over every evaluation of the last cycle; rates tuned on seed {s.grid_seeds[0]} "
                    f"(evaluated too)")
        for rname in ev.rates:
            means = {}
            for m in s.methods:
                acc = pd.Series([ev.vals1[(rname, k, m)]["acc"] for k in ev.seeds], dtype=float)
                means[m] = acc.mean()
                rows.append({"data": name, "protocol": protocol, "rates": rname, "method": m,
                             "lr": ev.rates[rname][m], "late test acc": acc.mean(),
                             "std over seeds": acc.std(),
                             "runs ok": f"{int(acc.notna().sum())} of {len(acc)}"})
            spread = max(means.values()) - min(means.values())
            rows.append({"data": name, "protocol": protocol, "rates": rname,
                         "method": "spread: best - worst method", "late test acc": spread,
                         "test images": spread * s.test_size, "margins": spread / margin})
    return pd.DataFrame(rows)


def compare_claims(evaluations: dict) -> pd.DataFrame:
    """The claim rows of several datasets side by side (``evaluations``: a name per dataset -> its
    :class:`Evaluation`): per claim (where, rates, claim), each dataset's verdict (inconclusive
    with its direction), mean effect and 95% interval, as :func:`fedlib.claims.claims_table`
    computes them; a claim one dataset has no row for (a profile without a larger P) shows "-"."""
    keys, parts = ["where", "rates", "claim"], []
    for name, ev in evaluations.items():
        t = claims.claims_table(list(ev.rows))
        lean = t["direction"].fillna("")
        verdict = t["verdict"].where(lean == "", t["verdict"] + " (" + lean + ")")
        ci = [f"[{lo:.4f}, {hi:.4f}]" for lo, hi in zip(t["ci_low"], t["ci_high"], strict=True)]
        parts.append(pd.DataFrame({"where": t["where"], "rates": t["rates"], "claim": t["claim"],
                                   f"{name}: verdict": verdict, f"{name}: effect": t["effect"],
                                   f"{name}: interval": ci}))
    # every claim once, in the order the datasets first give it (a left merge keeps that order)
    order = list(dict.fromkeys(k for p in parts for k in zip(*(p[c] for c in keys), strict=True)))
    out = pd.DataFrame(order, columns=keys)
    for p in parts:
        out = out.merge(p, on=keys, how="left")
    out = out.fillna({c: "-" for c in out.columns if not c.endswith(": effect")})
    return out.reset_index(drop=True)


def _outcome_of(values: dict, key: tuple) -> dict:
    """``values[key]`` (an :meth:`AmplifiedSetup.outcome`), or one InputError naming the key that
    ``values`` lacks (a seed, P, rate set or method with no run)."""
    if key not in values:
        held = list(values)
        raise InputError(f"values: no run at {key!r} (it holds {len(held)} run(s)"
                         + (f", e.g. {held[0]!r})" if held else ")"))
    return values[key]


def headline_claims(frames: Frames, amplified: str, plain: str, warmup: str = "") -> list[ClaimRow]:
    """Sec. 6's "we clearly see that Algorithm 1 with amplification gives the best performance"
    (Fig. 1) on ``frames`` (runs by seed and method): the run with amplification (label
    ``amplified``) ends above every other method of Fig. 1 -- the same algorithm without it
    (``plain``) and the wait baselines (:data:`WAIT_METHODS`, by those names) -- late-window test
    accuracy with its margin, the comparisons combined (:func:`fedlib.claims.combine`); a wait
    baseline that ``frames`` does not hold is "not tested: not run here", so the claim cannot hold
    without it. ``warmup`` names the warm-up they all continue. A comparison where a method of
    ``frames.off_rule`` failed is "not tested". Fig. 1 prints curves only (the row's "in the paper")."""
    def vs(m: str) -> claims.Verdict:
        return claims.paired(frames.values(amplified), frames.values(m),
                             margin=claims.MARGINS["test accuracy"], names=(amplified, m),
                             off_rule=frames.off_rule, missing=frames.missing)
    rivals = claims.against_rivals((plain, *WAIT_METHODS), vs, lambda m: m == plain or frames.has(m),
                                   "(Fig. 1) is not among the methods run here")
    claim = f"{amplified} ends above every other method of Fig. 1 {rivals.words}"
    return [ClaimRow("Sec. 6, Fig. 1", QUOTES["best"], f"after {warmup}, {claim}" if warmup else claim,
                     rivals.check, context={claims.IN_THE_PAPER: claims.curves_only("Fig. 1")})]


def authors_cycles() -> tuple[int, float]:
    """The authors' horizon in cycles, as notebooks 08 and 09 compare theirs with it: the paper
    profile's cycle (Sec. 6's 500 rounds) and :data:`AUTHORS_HORIZON` in such cycles."""
    cycle = amplified_setup("paper").cycle
    return cycle, AUTHORS_HORIZON / cycle


def amplified_setup(profile: str, seed: int = 0, stand_in_rounds: int = 0,
                    dataset: str | None = None) -> AmplifiedSetup:
    """Wang & Ji's settings at ``profile`` on ``dataset`` (one of :data:`DATASETS` of the profile;
    None: the profile's first); Fashion-MNIST runs the protocol of :data:`FASHION`.
    ``stand_in_rounds > 0`` keeps the profile's structure on random data, every phase cut to that
    many rounds, one grid rate and P in {1, cycle}, each run scored at its last evaluation."""
    check_profile(profile)
    seed, stand_in_rounds = check_seed(seed), check_stand_in(stand_in_rounds)
    dataset = DATASETS[profile][0] if dataset is None else dataset
    if dataset not in DATASETS[profile]:
        allowed = " or ".join(map(repr, DATASETS[profile]))
        raise InputError(f"dataset: the {profile} profile runs on {allowed}; got {dataset!r}")
    settings = {**SETTINGS[profile], **FASHION[profile]} if dataset == "fashion_mnist" else SETTINGS[profile]
    s = AmplifiedSetup(profile=profile, seed=seed, **settings)
    if stand_in_rounds:
        s = replace(s, warmup=stand_in_rounds, horizon=stand_in_rounds, grid_horizon=stand_in_rounds,
                    eval_every=stand_in_rounds, train_eval=2, grid=s.grid[:1], P_values=(1, s.cycle),
                    stand_in=stand_in_rounds, score_cycles=0)   # no whole cycle to score at: the last point
    return s


#: Wang & Ji's methods (catalogue names, :mod:`fedlib.studies.methods`): Alg. 1, wait-minibatch, wait-full
METHOD_NAMES = ("amplified FedAvg", "wait-minibatch", "wait-full")
#: Fig. 1's wait baselines (Sec. 5), rivals of "amplification gives the best performance"
WAIT_METHODS = METHOD_NAMES[1:]


def main(argv: list[str] | None = None) -> None:
    """``main(["quick", "--dataset", "fashion_mnist", "--seeds", "0", "1", "2", "3", "4"])``:
    compute notebook 08's runs into its store (``results/08_amplified_fedavg/<profile>/``) in the
    order of :meth:`AmplifiedSetup.compute_in_order` (the tuning grid first, then seed by seed),
    with one worker on one torch thread. Resumes from the store: runs already there are loaded."""
    import argparse

    import torch

    from ..notebook import notebook_store, require_ok
    from ..sweeps import sweep

    ap = argparse.ArgumentParser(prog="fedlib.studies.amplified.main",
                                 description="compute notebook 08's runs into its store, in order")
    ap.add_argument("profile", choices=["quick", "paper"])
    ap.add_argument("--dataset", default=None, help="one of the profile's DATASETS (default: its first)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    setup = amplified_setup(args.profile, args.seeds[0], dataset=args.dataset)
    store = notebook_store("08_amplified_fedavg", args.profile)
    print(f"store {store}; {setup.data_name}; tuning seeds {list(setup.grid_seeds)}; seeds {args.seeds}",
          flush=True)

    def compute(configs: list, keep_params: bool = False) -> pd.DataFrame:
        return require_ok(sweep(list(configs), store, progress=True, workers=1, torch_threads=1,
                                keep_params=keep_params))
    best = setup.compute_in_order(compute, args.seeds)
    print("rates picked: " + "; ".join(f"{m}: {r:g}" for m, r in best.items()), flush=True)


from .base import guard_study  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_study(globals())

#: Wang & Ji's study (notebook 08) in the registry of :mod:`fedlib.studies`
STUDY = register_study(Study(name="amplified", paper="Wang & Ji 2022", notebooks=("08_amplified_fedavg",),
                             setup=amplified_setup, methods=METHOD_NAMES, quotes=QUOTES,
                             headline=headline_claims), replace=True)
