"""FOCUS App. F (notebook 05): SG-FOCUS against FedAU and SCAFFOLD (faithful and as the authors
ran them) under "bern", "uniform 4 of 32" and the authors' "markov" (p = 0.2), per profile, as
labelled configs."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from .. import analysis, claims, models
from .._validate import InputError, check_real
from ..claims import ClaimRow, Verdict
from ..config import ExperimentConfig
from ..notebook import check_profile, check_seed, check_seeds, check_stand_in
from ..participation import build
from ..problems import LeastSquares, focus_arbitrary_weights, focus_toy_data
from . import methods
from .base import Frames, Study, register_study

__all__ = ["ETA", "LABEL_QUOTE", "MAINLY", "MARKOV_QUOTE", "ROUGHLY_EACH", "METHODS", "METHOD_NAMES",
           "PILOT_NAMES", "PILOT_RIVALS", "PILOT_RULE",
           "PILOT_SEEDS", "QUOTE", "RIVALS", "STUDY", "EXACT_QUOTE", "FEDAVG_LOST", "FEDAVG_QUOTE",
           "TOY_ADDED",
           "INTRO_QUOTE", "INTRO_RIVALS", "LEARNED_QUOTE",
           "MARKOV_ON_RATE", "MARKOV_P", "MARKOV_PANEL", "PASSIVE", "PASSIVE_P", "TOY_CHECKS", "TOY_CLIENTS",
           "TOY_METHODS",
           "TOY_QUOTE",
           "TOY_FIGURE", "TOY_RATES", "TOY_RIVALS", "TOY_UNRUN", "AUTHORS_TOY_FEDAU_CUTOFF", "FocusSetup",
           "exact_floor",
           "focus_setup",
           "headline_claims", "late_swing", "pilot_causes", "pilot_checks", "pilot_decision", "rate_kept",
           "rivals_words", "toy_beyond",
           "toy_claims", "toy_curves", "toy_exact_claims", "toy_floor", "toy_markov_claims",
           "toy_intro_claims", "toy_rivals_note",
           "toy_markov_panel", "toy_panels"]

#: per profile: data, model, N, S of "uniform", batch, rounds, evaluation interval, training-loss
#: samples per client (App. F and the authors' run script; quick: MNIST standing in for CIFAR-10)
SETTINGS = {
    "smoke": dict(dataset="digits", model="fedsum_mnist_cnn", num_clients=8, per_round=2, batch=16,
                  rounds=6, eval_every=2, train_eval=10),
    "quick": dict(dataset="mnist", model="fedsum_mnist_cnn", num_clients=32, per_round=4, batch=128,
                  rounds=1000, eval_every=25, train_eval=50),
    "paper": dict(dataset="cifar10", model="focus_cifar10_cnn", num_clients=32, per_round=4, batch=128,
                  rounds=10_000, eval_every=25, train_eval=100),
}
#: the faithful methods and the authors' variants (catalogue names, :mod:`fedlib.studies.methods`), and each
#: label with its (algorithm, options)
METHOD_NAMES = ("SG-FOCUS", "FedAU", "SCAFFOLD (FOCUS)", "FedAU as in the authors' code (= FedAvg)",
                "SCAFFOLD as in the authors' code (sum / fixed S)")
METHODS = methods.specs(METHOD_NAMES)
#: App. F's rate eta of every method
ETA = 2e-3
#: the smaller rates of the sensitivity panel (SG-FOCUS under "bern"; the paper's rate is 2e-3)
SENSITIVITY_ETAS = (1e-3,)
_NAMES = {"mnist": "MNIST, standing in for CIFAR-10",
          "fashion_mnist": "Fashion-MNIST, standing in for CIFAR-10",
          "digits": "digits (smoke test)", "cifar10": "CIFAR-10"}
#: App. F.2's words behind notebook 05's claims
QUOTE = ("our SG-FOCUS shows the best performance on convergence speed and test accuracy, compared to FedAU "
         "and SCAFFOLD")
#: SG-FOCUS's rivals: as the paper names them, and as the authors' code ran them
RIVALS = {"FedAU and SCAFFOLD": ["FedAU", "SCAFFOLD"],
          "the authors' variants": ["FedAU as in the authors' code (= FedAvg)",
                                    "SCAFFOLD as in the authors' code (sum / fixed S)"]}


def rivals_words(group: str) -> str:
    """How a claim row names the rivals of ``group`` (a key of :data:`RIVALS`): the group itself, and
    for "the authors' variants" what they are (review finding 13: the quote names "FedAU and SCAFFOLD",
    the curves the authors plotted are these): their FedAU, which as coded gives every participant the
    same weight (FedAvg), and their SCAFFOLD, which steps by the sum of the arrivals' Delta y over a
    fixed S (the catalogue's ``dy_divisor`` where the number that arrive varies), SCAFFOLD itself under
    "uniform", where their S is the number that arrive every round (:func:`_as_authors_ran`).

    Raises:
        InputError: ``group`` is not a key of :data:`RIVALS`.
    """
    if group not in RIVALS:
        raise InputError(f"group: must be one of {', '.join(map(repr, RIVALS))}, got {group!r}")
    if group != "the authors' variants":
        return group
    s = METHODS[RIVALS[group][1]][1]["dy_divisor"]
    return (f"{group} (their FedAU as coded: every participant weighted alike, i.e. FedAvg; their SCAFFOLD "
            f"as coded: the arrivals' Delta y summed over a fixed S, {s} where the number that arrive "
            "varies; under \"uniform\" their S is the number that arrive every round, so it is SCAFFOLD "
            "itself)")


def _as_authors_ran(opts: dict, kind: str) -> dict | None:
    """``opts`` of a method as the authors ran it under a pattern of ``kind``, or None where that
    run is another method's (:meth:`FocusSetup.same_runs`). Their SCAFFOLD divides the sum of the
    arrivals' Delta y by a fixed S, their ``num_sample_clients``
    (:class:`fedlib.algorithms.variance_reduced.Scaffold`'s ``dy_divisor``): 10, their default and
    the catalogue entry's, in their "bern" and "markov" runs whatever the number that arrive; their
    run script passes the S of "uniform" (``--num-sample-clients=4``), where exactly S arrive every
    round, so the sum over S is the mean: SCAFFOLD's own run. Other options as given."""
    if "dy_divisor" in opts and kind == "uniform":
        return None
    return opts


def _run_of(label: str) -> str:
    """The label of :data:`METHODS` whose run is ``label``'s where :func:`_as_authors_ran` drops it:
    the same algorithm with the same options less ``dy_divisor`` (the sum over a fixed S that equals
    the number that arrive is the mean)."""
    algo, opts = METHODS[label]
    rest = {k: v for k, v in opts.items() if k != "dy_divisor"}
    return next(other for other, (a, o) in METHODS.items() if other != label and a == algo and o == rest)


#: the authors' "markov" participation, the runs their plotting notebook draws as Fig. 9's "Passive
#: Arbitrary Client Participation" panel ("bern" is its "Active" one): each client a two-state chain
#: with transition matrix [[0.8, 0.2], [0.8, 0.2]]. Both rows are equal, so the next state does not
#: depend on the current one: every client is present with probability PASSIVE_P in every round,
#: independently (the p_i ~ U(0.1, 0.9) their code draws set only the state before the first round,
#: which no round uses). Here: Bernoulli participation at PASSIVE_P for every client, the same law
PASSIVE_P = 0.2
PASSIVE = f"markov (p = {PASSIVE_P:g})"
#: the labels of :meth:`FocusSetup.configs`; test accuracy at chance (10 classes); the late
#: window (the last fifth: the curves swing); "converges faster" compares the rounds to this
#: fraction of the plateau both runs reach
NAMES, CHANCE, WINDOW, LEVEL = ["pattern", "seed", "method"], 0.1, 0.2, 0.98
#: App. F.1's words on Fig. 8 (the label distribution of the split)
LABEL_QUOTE = ("From Figure 8, we can roughly observe that the data of each client mainly covers 1-2 "
               "classes, so the degree of non-iid data is quite high.")
#: our reading of App. F.1's "each client mainly covers 1-2 classes":
#: a client "mainly covers" its two largest classes when they hold at least MAINLY of its data (the
#: other eight classes together at most a tenth: no more than one class's share of an even split),
#: and "roughly ... each client" asks it of at least ROUGHLY_EACH of the clients (three in four; the
#: 95% Clopper-Pearson count over the clients, as events are counted over seeds: 13 clients or
#: more can decide it, Fig. 8 has 32)
MAINLY, ROUGHLY_EACH = 0.9, 0.75
#: issue 50's pilot: SG-FOCUS against the rivals whose MNIST rows were inconclusive under "bern" when it
#: was planned
#: (:meth:`FocusSetup.pilot_configs`, :func:`pilot_checks`), on these seeds; the labels of its runs
PILOT_RIVALS = ("SCAFFOLD", "SCAFFOLD as in the authors' code (sum / fixed S)")
PILOT_SEEDS = (0, 1)
PILOT_NAMES = ["dataset", "seed", "method"]
#: the pilot's decision rule, fixed before its runs were read (:func:`pilot_decision`)
PILOT_RULE = ("Per rival of the pilot and per check (late-window test accuracy, margin 0.005; rounds to "
              "98% of the lower plateau, margin one evaluation interval), the per-seed differences d on "
              "the pilot's seeds, as the claims compute them, on each dataset, and the seeds an interval "
              "with their spread would need to decide (fedlib.claims.seeds_needed; never: infinitely "
              "many). The harder dataset decides a comparison better if it needs fewer seeds than MNIST "
              "on the same seeds. Switch the quick profile if it decides at least 3 of the 4 comparisons "
              "better and none of its runs diverges or collapses; otherwise keep MNIST.")


def late_swing(frame: pd.DataFrame, rounds: int, window: float = WINDOW) -> pd.Series:
    """Per run key of a sweep frame: the standard deviation of test accuracy over the last
    ``window`` of ``rounds`` (how much the curve swings on its plateau)."""
    tail = frame[frame["round"] >= rounds - window * rounds]
    return tail.groupby("key")["test_acc"].std()


@dataclass(frozen=True)
class FocusSetup:
    """FOCUS App. F at one profile (see :data:`SETTINGS`); eta = 2e-3 for every method, K = 3,
    Dirichlet prior 0.05 (the authors' code)."""

    profile: str
    dataset: str
    model: str
    num_clients: int
    per_round: int
    batch: int
    rounds: int
    eval_every: int
    train_eval: int
    seed: int = 0
    stand_in: int = 0
    eta: float = ETA
    local_steps: int = 3
    alpha: float = 0.05

    @property
    def data_name(self) -> str:
        """How the figures name the data (and what it stands for)."""
        return _NAMES[self.dataset] + (" (random stand-in data)" if self.stand_in else "")

    def label_claim(self, counts: np.ndarray) -> ClaimRow:
        """App. F.1's reading of Fig. 8 on this setup's split (``counts``: clients x classes, the
        samples of each class at each client, e.g. the problem's ``label_counts``): per client,
        whether its two largest classes hold at least :data:`MAINLY` of its data, counted over the
        clients by :func:`fedlib.claims.event_count` at the rate :data:`ROUGHLY_EACH`. One split
        (the seed's, as Fig. 8 draws one): the clients are the units the count is over, and the
        row's numbers say so. Each client's share is exact, so the row needs no run. The split is
        ours: the same Dirichlet prior as Fig. 8's, drawn by another procedure on this setup's data, so
        the row checks the stand-in split, not the paper's (its claim and setting say so; review
        finding 11); the paper's split is :meth:`unrun_claims`' row."""
        try:
            counts = np.asarray(counts, dtype=float)
        except (TypeError, ValueError):
            raise InputError("counts: must be clients x classes of sample counts, got "
                             f"{type(counts).__name__}") from None
        if (counts.ndim != 2 or counts.shape[1] < 2 or not np.isfinite(counts).all() or (counts < 0).any()
                or (counts.sum(axis=1) <= 0).any()):
            raise InputError(f"counts: must be clients x classes (at least 2) of finite sample counts >= 0, "
                             f"every client with data; got shape {counts.shape}"
                             + (" with NaN or inf" if counts.size and not np.isfinite(counts).all() else ""))
        top2 = np.sort(counts, axis=1)[:, ::-1][:, :2].sum(axis=1) / counts.sum(axis=1)
        what = f"a client's two largest classes hold >= {MAINLY:.0%} of its data"
        check = claims.event_count({i: bool(v >= MAINLY) for i, v in enumerate(top2)}, what,
                                   level=ROUGHLY_EACH)
        n, k = len(top2), int((top2 >= MAINLY).sum())
        shares = ", ".join(f"client {i}: {v:.3f}" for i, v in enumerate(top2))
        numbers = (f"{what}: {k} of {n} clients, rate {ROUGHLY_EACH:g}, 95% Clopper-Pearson interval "
                   f"[{check.ci_low:.3f}, {check.ci_high:.3f}]; least share {top2.min():.3f} (two largest "
                   f"classes' share: {shares})")
        check = replace(check, numbers=numbers, reason=check.reason.replace(" seeds", " clients"))
        data = _NAMES[self.dataset].split(",")[0]
        stand_in = self.stand_in or self.dataset != SETTINGS["paper"]["dataset"]
        what = "a check of the stand-in split, not of Fig. 8's" if stand_in else "not Fig. 8's own split"
        setting = (f"the split of {self.data_name} (Dirichlet prior alpha = {self.alpha}, N = "
                   f"{self.num_clients} clients, seed {self.seed}): the same Dirichlet prior as Fig. 8's, "
                   f"another procedure; {data}: the row checks our split, not the paper's; the clients are "
                   "the units counted")
        return ClaimRow("App. F.1, Fig. 8", LABEL_QUOTE,
                        f"on our split of {data} ({what}), each client mainly covers 1-2 classes: its two "
                        f"largest classes hold >= {MAINLY:.0%} of its data, in at least "
                        f"{ROUGHLY_EACH:.0%} of the clients (our reading of 'roughly')",
                        check, context={"pattern": ""}, setting=setting)

    def unrun_claims(self) -> list[ClaimRow]:
        """App. F's claims on CIFAR-10, the dataset of its runs (App. F.1: "a three-layer convolutional
        neural network" on CIFAR-10), where this setup runs a stand-in: one "not tested" row each
        (:func:`fedlib.claims.not_run`) for App. F.2's comparison and App. F.1's reading of Fig. 8, the
        reason naming the stand-in; none where the setup runs CIFAR-10 (the paper profile)."""
        paper = SETTINGS["paper"]
        if self.dataset == paper["dataset"] and not self.stand_in:
            return []
        name = _NAMES[paper["dataset"]]
        why = claims.not_had(f"App. F runs {name}", f"the {self.profile} profile runs {self.data_name}",
                             [name])
        setting = (f"{name}, App. F.1's CNN, N = {paper['num_clients']}, T = {paper['rounds']:,} (the paper "
                   f"profile), not run at the {self.profile} profile")
        return [ClaimRow("App. F.2, Fig. 9", QUOTE, f"on {name}, SG-FOCUS the best on convergence speed and "
                         "test accuracy, compared to FedAU and SCAFFOLD", why,
                         context={"pattern": "bern"}, setting=setting),
                ClaimRow("App. F.1, Fig. 8", LABEL_QUOTE, f"on {name}'s split, each client mainly covers 1-2 "
                         "classes", why, context={"pattern": ""}, setting=setting)]

    def bern_p(self) -> np.ndarray:
        """The "bern" pattern's p_i: the first int(0.9 N) clients U(0.1, 0.3), the rest U(0.1, 0.9),
        drawn from a generator seeded by the setup's seed (the authors used numpy's global state)."""
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 0xF0C5]))
        n, first = self.num_clients, int(0.9 * self.num_clients)
        return np.concatenate([rng.uniform(0.1, 0.3, first), rng.uniform(0.1, 0.9, n - first)]).round(6)

    @property
    def patterns(self) -> dict[str, tuple[str, dict]]:
        """Label -> (participation kind, arguments)."""
        uniform = f"uniform ({self.per_round} of {self.num_clients})"
        return {"bern": ("bernoulli", {"p": self.bern_p().tolist()}),
                uniform: ("uniform", {"per_round": self.per_round})}

    def base(self) -> ExperimentConfig:
        """SG-FOCUS under "uniform" (every config of the study varies this one)."""
        synthetic = {}
        if self.stand_in:
            synthetic = {"synthetic": True, "synthetic_sizes": [40 * self.num_clients, 200]}
        return ExperimentConfig(
            algorithm="sg_focus", problem="neural", participation="uniform", rounds=self.rounds,
            problem_args={"dataset": self.dataset, "partition": "dirichlet_prior", "alpha": self.alpha,
                          "model": self.model, "num_clients": self.num_clients, "batch_size": self.batch,
                          "train_eval_per_client": self.train_eval, "seed": self.seed, **synthetic},
            local_steps=self.local_steps, lr_local=self.eta, lr_global=1.0, eval_every=self.eval_every,
            seed=self.seed)

    @property
    def passive_pattern(self) -> dict[str, tuple[str, dict]]:
        """Fig. 9's passive panel, the authors' "markov" runs (:data:`PASSIVE_P`): label ->
        (participation kind, arguments)."""
        return {PASSIVE: ("bernoulli", {"p": PASSIVE_P})}

    def configs(self, seeds: Sequence[int] | None = None, passive: bool = False
                ) -> dict[ExperimentConfig, tuple[str, int, str]]:
        """Every run of Fig. 9 for each of ``seeds`` (default: the setup's seed): config ->
        (pattern, seed, method). A seed draws the split, the model, the "bern" p_i, the schedule
        and the minibatches. ``passive``: the runs of :attr:`passive_pattern` instead of
        :attr:`patterns`.

        Raises:
            InputError: a seed that is not an integer >= 0; ``passive`` not a bool.
        """
        if not isinstance(passive, (bool, np.bool_)):
            raise InputError(f"passive: must be True or False, got {type(passive).__name__} {passive!r}")
        out = {}
        for k in self._seeds(seeds):
            s = replace(self, seed=int(k))
            b = s.base()
            for pname, (kind, args) in (s.passive_pattern if passive else s.patterns).items():
                for label, (algo, opts) in METHODS.items():
                    if (theirs := _as_authors_ran(opts, kind)) is None:
                        continue                                # another method's run (same_runs)
                    c = b.replace(algorithm=algo, algorithm_args=theirs, participation=kind,
                                  participation_args=args)
                    out[c] = (pname, int(k), label)
        return out

    def pilot_configs(self, dataset: str, seeds: Sequence[int] = PILOT_SEEDS, label: str = ""
                      ) -> dict[ExperimentConfig, tuple[str, int, str]]:
        """Issue 50's pilot: SG-FOCUS and :data:`PILOT_RIVALS` under "bern" with ``dataset`` in
        place of the setup's, every other setting kept (the runs of :meth:`configs` that the
        switched profile would compute): config -> (``label`` or the dataset, seed, method).

        Raises:
            InputError: a ``dataset`` this study does not know; a ``label`` that is not a string.
        """
        if not isinstance(dataset, str) or dataset not in _NAMES:
            raise InputError(f"dataset: must be one of {', '.join(map(repr, _NAMES))}, got {dataset!r}")
        if not isinstance(label, str):
            raise InputError(f"label: must be a string (\"\": the dataset's name), got {label!r}")
        s = replace(self, dataset=dataset)
        keep = ("SG-FOCUS", *PILOT_RIVALS)
        return {c: (label or dataset, k, m) for c, (p, k, m) in s.configs(seeds).items()
                if p == "bern" and m in keep}

    def sensitivity_configs(self, seeds: Sequence[int] | None = None, etas: Sequence[float] = SENSITIVITY_ETAS
                            ) -> dict[ExperimentConfig, tuple[float, int]]:
        """SG-FOCUS under "bern" at the smaller rates ``etas`` (the paper's own rate is in
        :meth:`configs`): config -> (eta, seed).

        Raises:
            InputError: a seed that is not an integer >= 0; an eta that is not a positive finite number.
        """
        for i, eta in enumerate(etas):
            check_real(f"etas[{i}]", eta, 0, low_open=True)
        out = {}
        for k in self._seeds(seeds):
            s = replace(self, seed=int(k))
            kind, args = s.patterns["bern"]
            for eta in etas:
                out[s.base().replace(participation=kind, participation_args=args, lr_local=float(eta))] = (
                    float(eta), int(k))
        return out

    @property
    def setting(self) -> str:
        """The setting of the claim rows (a stand-in or smoke run reproduces nothing)."""
        if self.stand_in or self.profile == "smoke":
            return claims.scale_cause(self.profile, self.stand_in, self.rounds, "")
        model = models.short_name(self.model)
        return f"{self.profile} profile ({self.data_name}, {model}, {self.rounds:,} of 10,000 rounds)"

    def claims(self, summary: pd.DataFrame, curves: dict, pattern: str, seeds: list,
               ours: tuple | None = None, then: dict | None = None,
               pending: dict[str, str] | None = None) -> list[ClaimRow]:
        """:func:`headline_claims` under ``pattern`` against each group of :data:`RIVALS`, from a
        :func:`fedlib.claims.tidy` summary and its curves (labels :data:`NAMES`). ``ours`` =
        (summary, curves, seed -> label) takes SG-FOCUS's values from other runs (the same seeds);
        a row gets ``then[claim]`` as its cause when given; a comparison with a method of
        ``pending`` (label -> reason, :meth:`pending`) is a "not tested" row with that reason; each
        row names its pattern and the setting, with :meth:`pattern_note` where the pattern has one."""
        frames = Frames(summary, curves, seeds, self.eval_every, prefix=(pattern,))
        own = None if ours is None else Frames(ours[0], ours[1], seeds, key=lambda k, _m: ours[2](k))
        then = then or {}
        note = self.pattern_note(pattern)
        odd = [m for m in (pending or {}) if m not in METHODS]
        if odd:
            raise InputError(f"pending: keys must be method labels ({', '.join(map(repr, METHODS))}), as "
                             f"FocusSetup.pending(...)[pattern] gives them; got {odd[0]!r}")
        setting = f"{self.setting}; {note}" if note else self.setting
        return [replace(r, context={"pattern": pattern}, setting=setting, cause=then.get(r.claim, ""))
                for r in headline_claims(frames, tuple(RIVALS), own, same=self.same_runs(pattern),
                                         pending=pending)]

    def pending(self, labels: dict, store) -> dict[str, dict[str, str]]:
        """Per pattern of ``labels`` (config -> (pattern, seed, method)), its methods whose runs
        ``store`` does not all hold, each with the reason its comparisons wait ("3 of the 5 runs of
        ... under ... are in the quick store"): with computing off, a notebook leaves them out and
        their claims are "not tested" until all are in (:meth:`claims`, ``pending=out[pattern]``).
        The store is only read (a folder that does not exist holds no run).

        Raises:
            InputError: ``labels`` is not a dict of configs -> (pattern, seed, method).
        """
        from ..store import Store
        if not isinstance(labels, dict):
            raise InputError(f"labels: expected a dict config -> (pattern, seed, method), got "
                             f"{type(labels).__name__}")
        for c, v in labels.items():
            if not isinstance(c, ExperimentConfig) or not (isinstance(v, tuple) and len(v) == 3):
                raise InputError(f"labels: expected a dict config -> (pattern, seed, method), got "
                                 f"{type(c).__name__} -> {v!r}")
        lacking = Store(store, create=False).missing(labels)
        out: dict[str, dict[str, str]] = {}
        for pattern, method in dict.fromkeys((v[0], v[2]) for v in labels.values()):
            total = sum((v[0], v[2]) == (pattern, method) for v in labels.values())
            short = sum((labels[c][0], labels[c][2]) == (pattern, method) for c in lacking)
            if short:
                out.setdefault(pattern, {})[method] = (
                    f"{total - short} of the {total} runs of {method} under {pattern} are in the "
                    f"{self.profile} store; its comparisons are checked once all are")
        return out

    @property
    def _all_patterns(self) -> dict:
        """:attr:`patterns` and :attr:`passive_pattern`: name -> (kind, args)."""
        return {**self.patterns, **self.passive_pattern}

    def _kind(self, pattern: str) -> str:
        """The participation kind of ``pattern``, a name of :attr:`patterns` or :attr:`passive_pattern`."""
        both = self._all_patterns
        if not isinstance(pattern, str) or pattern not in both:
            raise InputError(f"pattern: must be one of {', '.join(map(repr, both))}, got {pattern!r}")
        return both[pattern][0]

    def same_runs(self, pattern: str) -> dict[str, str]:
        """Method labels whose runs under ``pattern`` are another label's (:meth:`configs` computes
        them once): under "uniform" the authors' SCAFFOLD is SCAFFOLD (their fixed S is the number
        that arrive every round).

        Raises:
            InputError: ``pattern`` is not one of the setup's patterns.
        """
        kind = self._kind(pattern)
        return {label: _run_of(label) for label, (_, opts) in METHODS.items()
                if _as_authors_ran(opts, kind) is None}

    def pattern_note(self, pattern: str) -> str:
        """What a claim row under ``pattern`` says of where the pattern comes from: "uniform" (a fixed
        number of clients a round) is an option of the authors' code and not a panel of Fig. 9, while
        App. F.1 states "we do not restrict the number of participating clients in each round"
        ("bern" is that test); :data:`PASSIVE` is the authors' "markov", Fig. 9's passive panel; ""
        for "bern".

        Raises:
            InputError: ``pattern`` is not one of the setup's patterns.
        """
        kind = self._kind(pattern)
        if pattern == PASSIVE:
            return (f"the authors' \"markov\" (Fig. 9's passive panel in their plotting notebook): as their "
                    f"code draws it, each client present with probability {PASSIVE_P:g} in every round, "
                    "independently: one p for every client, the uniform case of Sec. 3.1's Case 2, not the "
                    "non-uniform participation App. F.2 speaks of")
        return ("the pattern is the authors' code's option, not a panel of Fig. 9; the paper states "
                "unrestricted participation (App. F.1); the authors' SCAFFOLD is SCAFFOLD here (their fixed "
                f"S, {self.per_round}, is the number that arrive every round)" if kind == "uniform" else "")

    def horizon_check(self, df: pd.DataFrame, labels: dict, rows: list[ClaimRow], seeds: list,
                      cut: int, pending: dict[str, dict[str, str]] | None = None
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The claims of ``rows`` (at the full horizon) beside the same claims on the runs of
        ``labels`` cut at round ``cut`` (``pending``: per pattern, as :meth:`pending` returns it).
        Returns the verdict table and the cut runs' summary."""
        odd = [p for p in (pending or {}) if p not in self._all_patterns]
        if odd:
            raise InputError(f"pending: keys must be patterns ({', '.join(map(repr, self._all_patterns))}), "
                             f"as FocusSetup.pending gives them; got {odd[0]!r}")
        cut_labels = {c.key(): v for c, v in labels.items()}         # keyed by run: the horizon is the cut
        _, cut_summary, cut_curves = claims.tidy(df[df["round"] <= cut], cut_labels, NAMES, CHANCE, WINDOW)
        cut_rows = {(r.context["pattern"], r.claim): r.check
                    for p in dict.fromkeys(r.context["pattern"] for r in rows)
                    for r in self.claims(cut_summary, cut_curves, p, seeds, pending=(pending or {}).get(p))}
        table = pd.DataFrame([{"pattern": r.context["pattern"], "claim": r.claim,
                               f"at T = {self.rounds}": r.check.verdict,
                               f"cut at {cut}": cut_rows[(r.context["pattern"], r.claim)].verdict}
                              for r in rows])
        return table, cut_summary

    @staticmethod
    def plateau_table(cases: list[tuple[str, pd.DataFrame, list]]) -> pd.DataFrame:
        """Per case (name, summary with a ``swing`` column, index of its runs): late training
        loss, late test accuracy and the accuracy's swing (mean +- std over the runs), runs ok,
        and the bare means (``_loss``, ``_swing``) for the text."""
        out = []
        for name, s, index in cases:
            rows = s.loc[index]
            out.append({"SG-FOCUS under bern": name, "late train loss": analysis.mean_std(rows["final_loss"]),
                        "late test acc": analysis.mean_std(rows["final_acc"]),
                        "test acc swing (std in window)": analysis.mean_std(rows["swing"]),
                        "runs ok": f"{(rows['outcome'] == 'ok').sum()} of {len(rows)}",
                        "_loss": rows["final_loss"].mean(), "_swing": rows["swing"].mean()})
        return pd.DataFrame(out)

    def _seeds(self, seeds: Sequence[int] | None) -> list[int]:
        return check_seeds([self.seed] if seeds is None else seeds)


def headline_claims(frames: Frames, groups: tuple[str, ...] = ("FedAU and SCAFFOLD",),
                    ours: Frames | None = None, same: dict[str, str] | None = None,
                    pending: dict[str, str] | None = None) -> list[ClaimRow]:
    """App. F.2's claims on ``frames`` (runs by seed and method): SG-FOCUS has a higher final test
    accuracy and converges faster (rounds to the plateau, margin one evaluation interval) than each
    group of :data:`RIVALS` named in ``groups`` (default: the rivals as the paper names them);
    ``ours`` takes SG-FOCUS's values from other runs of the same seeds; ``same`` (rival -> label)
    takes a rival's values from another label's runs, where they are the same runs
    (:meth:`FocusSetup.same_runs`); a comparison where a method of ``frames.off_rule`` failed is
    "not tested", and so is one with a method of ``pending`` (label -> reason: its runs are not all
    stored, :meth:`FocusSetup.pending`), with that reason."""
    ours = ours or frames
    same, pending = same or {}, pending or {}
    rounds_margin = claims.margin_for("rounds to target", frames.eval_every)
    rows = []
    for group in groups:
        rivals = RIVALS[group]
        waiting = [pending[m] for m in ("SG-FOCUS", *rivals) if m in pending and m not in same]
        words = rivals_words(group)
        if waiting:
            rows += [ClaimRow("App. F.2, Fig. 9", QUOTE, f"SG-FOCUS {what} than {words}",
                              claims.not_run("; ".join(waiting)))
                     for what in ("has higher test accuracy", "converges faster")]
            continue
        rows += [ClaimRow("App. F.2, Fig. 9", QUOTE, f"SG-FOCUS has higher test accuracy than {words}",
                          claims.against_all(ours.values("SG-FOCUS"),
                                             {r: frames.values(same.get(r, r)) for r in rivals},
                                             "SG-FOCUS", margin=claims.MARGINS["test accuracy"],
                                             off_rule=frames.off_rule, missing=frames.missing)),
                 ClaimRow("App. F.2, Fig. 9", QUOTE, f"SG-FOCUS converges faster than {words}",
                          claims.against_all(ours.hist("SG-FOCUS"),
                                             {r: frames.hist(same.get(r, r)) for r in rivals},
                                             "SG-FOCUS", compare=claims.paired_reach, level=LEVEL,
                                             margin=rounds_margin, off_rule=frames.off_rule,
                                             missing=frames.missing_or_never))]
    return rows


def pilot_checks(frames: Frames, rivals: Sequence[str] = PILOT_RIVALS) -> pd.DataFrame:
    """Issue 50's pilot on one dataset: per rival of ``rivals`` the two checks of
    :func:`headline_claims` (Ying, Li & Yang 2025, arXiv:2503.20117, App. F.2: higher late-window
    test accuracy; fewer rounds to 98% of the lower plateau), one row each: the difference d of
    every seed of ``frames`` (positive favours SG-FOCUS; NaN where a run failed), their mean, the
    verdict on these seeds and the seeds an interval with their spread would need
    (:func:`fedlib.claims.seeds_to_decide`; NaN: never, or fewer than two seeds with a value)."""
    def accuracy(a, b, **kw):
        return claims.paired(a, b, margin=claims.MARGINS["test accuracy"], **kw)

    def speed(a, b, **kw):
        return claims.paired_reach(a, b, level=LEVEL, **kw,
                                   margin=claims.margin_for("rounds to target", frames.eval_every))
    rows, diffs = [], []
    for rival in rivals:
        for check, compare, get in (("test accuracy", accuracy, frames.values),
                                    ("rounds to plateau", speed, frames.hist)):
            ours, theirs = get("SG-FOCUS"), get(rival)
            whole = compare(ours, theirs, names=("SG-FOCUS", rival), off_rule=frames.off_rule)
            per_seed = {}
            for k in frames.seeds:          # one seed alone: its own difference, none if a run failed
                d = compare({k: ours[k]}, {k: theirs[k]}, names=("SG-FOCUS", rival)).diffs
                per_seed[f"d seed {k}"] = d[0] if d else math.nan
            diffs.append(whole.diffs)
            rows.append({"rival": rival, "check": check, **per_seed, "mean d": whole.effect,
                         "verdict": whole.verdict})
    for row, need in zip(rows, claims.seeds_to_decide(dict(enumerate(diffs))), strict=True):
        row["seeds needed"] = math.nan if math.isinf(need) else int(need)     # never: NaN
    return pd.DataFrame(rows)


def pilot_decision(checks: pd.DataFrame, base: str, other: str, other_ok: bool, at_least: int = 3
                   ) -> tuple[pd.Series, bool]:
    """:data:`PILOT_RULE` on :func:`pilot_checks` tables stacked with a ``dataset`` column:
    whether ``other`` decides each (rival, check) better than ``base`` (fewer seeds needed, a tie
    is not; a need of NaN or None, never, counts as infinitely many: :func:`fedlib.claims.fewer_seeds`),
    and whether to switch (at least ``at_least`` comparisons decided better, and ``other_ok``: none
    of ``other``'s runs diverged or collapsed).

    Raises:
        InputError: a dataset that is not in ``checks``, or the two datasets' rows do not pair; an
            ``at_least`` that is not an integer >= 0; ``other_ok`` not a bool.
    """
    if not isinstance(other_ok, (bool, np.bool_)):
        raise InputError(f"other_ok: must be True or False, got {type(other_ok).__name__} {other_ok!r}")
    needs = checks.set_index(["dataset", "rival", "check"])["seeds needed"]
    fewer = claims.fewer_seeds(needs, base, other, at_least, name="checks")
    return fewer.better, bool(fewer.enough and other_ok)


def pilot_causes(frames: Frames, data_name: str, groups: Sequence[str] = tuple(RIVALS)) -> dict[str, str]:
    """What issue 50's pilot on a second stand-in says of the "bern" claims of :func:`headline_claims`
    (Ying, Li & Yang 2025, arXiv:2503.20117, App. F.2): claim -> a note for the row's cause. ``frames``:
    the pilot's runs on that stand-in (SG-FOCUS and :data:`PILOT_RIVALS` under "bern", its seeds),
    ``data_name``: how the note names the stand-in. Per rival of the claim's group that the pilot ran,
    the same check by the same rule (:data:`fedlib.claims.RULE`, margins of ``MARGINS``) on the pilot's
    seeds: its verdict, how many seeds go against the claim, and its numbers; the group's rivals the pilot
    did not run are named. A note, not a row: the pilot's seeds are few and it runs one pattern (review
    finding 1: the contrary pilot on the harder stand-in belongs beside the rows it bears on)."""
    def accuracy(rival):
        return claims.paired(frames.values("SG-FOCUS"), frames.values(rival), names=("SG-FOCUS", rival),
                             margin=claims.MARGINS["test accuracy"], off_rule=frames.off_rule,
                             missing=frames.missing)

    def speed(rival):
        return claims.paired_reach(frames.hist("SG-FOCUS"), frames.hist(rival), level=LEVEL,
                                   names=("SG-FOCUS", rival),
                                   margin=claims.margin_for("rounds to target", frames.eval_every),
                                   off_rule=frames.off_rule, missing=frames.missing_or_never)
    seeds = list(frames.seeds)
    head = (f"on {data_name}, the notebook's pilot (issue 50: \"bern\", seeds {seeds}, every other setting "
            f"of this row unchanged; {len(seeds)} seeds, so a note beside the row, not a row)")
    out = {}
    for group in groups:
        ran = [r for r in RIVALS[group] if r in PILOT_RIVALS]
        unrun = [r for r in RIVALS[group] if r not in PILOT_RIVALS]
        for what, check in (("has higher test accuracy", accuracy), ("converges faster", speed)):
            parts = []
            for rival in ran:
                v = check(rival)
                against = sum(d < v.threshold for d in v.diffs)
                parts.append(f"against {rival}: {v.words}, {against} of {len(v.diffs)} seeds against the "
                             f"claim ({v.numbers}{_own_target(frames, rival) if check is speed else ''})")
            if unrun:
                parts.append(f"{' and '.join(unrun)} not run in the pilot")
            out[f"SG-FOCUS {what} than {rivals_words(group)}"] = f"{head}: {'; '.join(parts)}"
    return out


def _own_target(frames: Frames, rival: str) -> str:
    """What a "converges faster" note of :func:`pilot_causes` adds: on how many seeds the target (a
    fraction :data:`LEVEL` of the lower of the two late-window accuracies) is SG-FOCUS's own plateau."""
    ours, theirs = frames.values("SG-FOCUS"), frames.values(rival)
    own = sum(1 for k in frames.seeds if ours[k] < theirs[k])
    return (f"; the target, {LEVEL:g} of the lower plateau, is SG-FOCUS's own on {own} of "
            f"{len(frames.seeds)} seeds")


def focus_setup(profile: str, seed: int = 0, stand_in_rounds: int = 0) -> FocusSetup:
    """FOCUS App. F settings at ``profile``; ``stand_in_rounds > 0`` keeps the profile's structure
    on random data and cuts every run to that many rounds."""
    stand_in_rounds = check_stand_in(stand_in_rounds)
    s = FocusSetup(profile=check_profile(profile), seed=check_seed(seed), **SETTINGS[profile])
    if stand_in_rounds:
        s = replace(s, rounds=stand_in_rounds, eval_every=stand_in_rounds, train_eval=2,
                    stand_in=stand_in_rounds)
    return s


# --------------------------------------------------------------------------------------------
# FOCUS Fig. 4 (notebook 04): least squares, full / uniform / arbitrary participation
# --------------------------------------------------------------------------------------------
#: Fig. 4's methods (* = not in the paper's figure): label -> algorithm. The figure's own are those of the
#: authors' plotting notebook and of every panel's legend in their committed figure (:data:`TOY_FIGURE`):
#: FOCUS, FedAvg, FedAU, SCAFFOLD, ProxSkip (not in fedlib: :data:`TOY_UNRUN`) and MIFA
TOY_METHODS = {**methods.algorithms(["FedAvg", "FedAU", "SCAFFOLD", "MIFA", "FOCUS"]),
               **methods.algorithms(["FedSUM", "FedSUM-CR"], star=True)}


def toy_panels(rounds: int, local_steps: int, seed: int = 0):
    """FOCUS's least-squares toy (n = 8000, d = 50, N = 16, unnormalised f_i, as in the paper) and
    Fig. 4's panels: label -> (schedule, local rate): full participation, uniform 4 of 16, and
    arbitrary (4 of 16 drawn with the paper's weights q)."""
    prob = LeastSquares(*focus_toy_data())
    n = prob.num_clients
    q = focus_arbitrary_weights(n, seed=5)
    full, uniform, arbitrary = TOY_RATES
    return prob, {
        full: (build("full", n, rounds, local_steps=local_steps), TOY_RATES[full]),
        uniform: (build("uniform", n, rounds, seed=seed, per_round=_PER_ROUND, local_steps=local_steps),
                  TOY_RATES[uniform]),
        arbitrary: (build("weighted", n, rounds, seed=seed, per_round=_PER_ROUND, q=q,
                          local_steps=local_steps), TOY_RATES[arbitrary]),
    }


#: the uniform panel of Fig. 4: clients a round and the step size (the authors' notebook)
_PER_ROUND, _UNIFORM_LR = 4, 1.5e-4
#: Fig. 4's panels and each one's step size, one for every algorithm (the authors' notebook,
#: BichengYing/FedASL figures/focus.ipynb: eta = 0.0006, 0.00015, 0.0001)
#: the toy's N (FOCUS Sec. 5: 16 clients; :func:`fedlib.objectives.focus_toy_data` splits its rows among them)
TOY_CLIENTS = 16
TOY_RATES = {"full participation": 6e-4, f"uniform ({_PER_ROUND} of {TOY_CLIENTS})": _UNIFORM_LR,
             f"arbitrary ({_PER_ROUND} of {TOY_CLIENTS}, weighted by q)": 1e-4}
#: FOCUS Sec. 5.3's Markov participation on the toy (ours: the paper runs none): fedlib's ``markov``
#: kind (FedAU's two-state chain per client), every client's stationary probability that of the
#: uniform panel (4 of 16 a round on average), and the chain's on-rate (P(off -> on), fedlib's
#: default, Wang & Ji 2023's)
MARKOV_P, MARKOV_ON_RATE = _PER_ROUND / TOY_CLIENTS, 0.05
MARKOV_PANEL = "Markov participation"


def toy_markov_panel(rounds: int, local_steps: int, seed: int = 0):
    """(schedule, local rate) of Sec. 5.3's Markov participation on the toy's 16 clients: each client
    a two-state chain (:data:`MARKOV_P`, :data:`MARKOV_ON_RATE`), started stationary, so on average
    as many clients a round as the uniform panel, whose step size it takes."""
    return (build("markov", TOY_CLIENTS, rounds, seed=seed, p=MARKOV_P, on_rate=MARKOV_ON_RATE,
                  local_steps=local_steps), _UNIFORM_LR)


#: FOCUS Sec. 5's words on Fig. 4 (notebook 04)
TOY_QUOTE = ("Three distinct sampling scenarios were examined: full client participation, uniform "
             "participation, and arbitrary participation. Notably, our FOCUS exhibits linear convergence "
             "and outperforms the other algorithms in all scenarios, particularly under arbitrary "
             "participation.")
TOY_WHERE = "Sec. 5, Fig. 4"
#: where Fig. 4's algorithms are named: the paper's text does not name them; the authors' code does
TOY_FIGURE = ("the authors' repository BichengYing/FedASL: figures/focus.ipynb (its ALG_MAP) runs and "
              "plots, and every panel's legend of figures/FOCUS-Comparison.pdf (commit 3280b83) reads, "
              "FOCUS, FedAvg, FedAU, SCAFFOLD, ProxSkip, MIFA")
#: FOCUS's rivals in Fig. 4: "the other algorithms" of Sec. 5 are those of the paper's figure
#: (:data:`TOY_FIGURE`; review finding 2: an earlier version compared FedAvg and SCAFFOLD only), in its
#: legend's order, less those not run here (:data:`TOY_UNRUN`)
TOY_RIVALS = {"FedAvg, FedAU, SCAFFOLD and MIFA": ["FedAvg", "FedAU", "SCAFFOLD", "MIFA"]}
#: Fig. 4's algorithms that no run here makes: name -> why (a "not tested" row each, :func:`toy_claims`)
TOY_UNRUN = {"ProxSkip": "ProxSkip (Mishchenko et al. 2022), in every panel of the authors' Fig. 4, is not "
                         "implemented in fedlib"}
#: FedAU's interval cutoff in the authors' toy notebook (BichengYing/FedASL figures/focus.ipynb,
#: FedAUClient: ``self.K = 10``); the toy here runs fedlib's default, FedAU's paper's K = 50
#: (:class:`fedlib.algorithms.reweighting.FedAUOptions`): the rows with FedAU say so in their setting
AUTHORS_TOY_FEDAU_CUTOFF = 10
#: the methods notebook 04 adds to Fig. 4 (* = not in the paper's figure): FOCUS made no claim about
#: them, so their comparisons with FOCUS are a table beyond the paper (:func:`toy_beyond`), not claims
TOY_ADDED = ("FedSUM*", "FedSUM-CR*")


@functools.cache
def toy_floor() -> float:
    """The floor below which the comparisons on the toy count an error as the floor, derived from the
    same bound as the exact-convergence rows: one decade above :func:`exact_floor` of the toy's data
    (float64 rounding's worst-case bound, a power of ten; 1e-11 here, so 1e-10). The two floors do two
    jobs. :func:`toy_exact_claims` asks whether an error lies *at* the bound (a factor-2 margin: last
    bits cannot move that decision). The comparisons (:func:`toy_claims`, :func:`toy_beyond`, the rates
    of :func:`rate_kept`, the late fall of :func:`toy_markov_claims`) *read* errors and print effects to
    four digits or more, so they stop a decade above the bound: there x*'s last bits (LAPACK's, which
    differ between processes; an absolute ~2e-15 in the relative error, the level the exact methods end
    at) still moved a printed effect when the comparisons read errors down to the bound itself (0.010938
    against 0.010935 in two executions of notebook 04). No verdict of notebook 04 differs between the two
    floors (its commit records the check)."""
    return 10.0 ** (round(math.log10(exact_floor(LeastSquares(*focus_toy_data())))) + 1)


def toy_curves(hist: pd.DataFrame, floor: float | None = None) -> dict:
    """(panel, seed, method) -> the run's curve with ``error`` (the relative distance to x*,
    errors below ``floor`` (default :func:`toy_floor`) counted as ``floor``) and ``log10_error``,
    from a frame of Fig. 4's runs (columns panel, seed, method, round, rel_dist_to_opt)."""
    floor = toy_floor() if floor is None else floor
    out = {}
    for key, h in hist.groupby(["panel", "seed", "method"], sort=False):
        e = h["rel_dist_to_opt"].clip(lower=floor)
        out[key] = h.assign(error=e, log10_error=np.log10(e)).sort_values("round")
    return out


def rate_kept(h: pd.DataFrame, floor: float | None = None) -> float:
    """The slope of log10 error per round over the late half of the rounds where the error lies
    above ``floor`` (default :func:`toy_floor`; round > 0), over the slope of the early half: 1 for
    a linear rate, near 0 for a rate that slows down (sublinear) or a plateau. NaN with fewer than 4
    such rounds, or where the early half does not fall (its fitted fall over its rounds is under
    1e-9 decades: rounding)."""
    floor = toy_floor() if floor is None else floor
    d = h[(h["rel_dist_to_opt"] > floor) & (h["round"] > 0)]
    if len(d) < 4:
        return math.nan
    half = len(d) // 2
    early, late = d.iloc[:half], d.iloc[half:]
    slope = [np.polyfit(x["round"], np.log10(x["rel_dist_to_opt"]), 1)[0] for x in (early, late)]
    span = float(early["round"].iloc[-1] - early["round"].iloc[0])
    return float(slope[1] / slope[0]) if -slope[0] * span > 1e-9 else math.nan


def toy_claims(hist: pd.DataFrame, seeds: Sequence[int], setting: str = "",
               floor: float | None = None) -> list[ClaimRow]:
    """FOCUS Sec. 5's claims on Fig. 4 from its runs (``hist``: panel, seed, method, round,
    rel_dist_to_opt; one run per panel, seed and method), per scenario (panel): FOCUS converges
    linearly (:func:`rate_kept`, a "no worse" claim against a rate kept whole, margin
    ``MARGINS['rate kept']``); it ends with a lower error (late-window mean of log10 error, margin
    a factor 2), reaches the plateau both reach in fewer rounds (:func:`fedlib.claims.paired_reach`
    on the error, lower is better, margin one round) and with less communication than the other
    algorithms of the paper's figure (:data:`TOY_RIVALS`, named by :data:`TOY_FIGURE`; the methods
    added here are :func:`toy_beyond`'s, not claims); a "not tested" row (:func:`fedlib.claims.not_run`)
    for each of the figure's algorithms not run here (:data:`TOY_UNRUN`); and "particularly under
    arbitrary participation" (:func:`_particularly`, two readings). The rows that compare rivals say in
    their setting where the rivals come from and FedAU's cutoff (:func:`toy_rivals_note`). Errors below
    ``floor`` (default :func:`toy_floor`) count as it."""
    floor = toy_floor() if floor is None else floor
    curves = toy_curves(hist, floor)
    panels = list(dict.fromkeys(hist["panel"]))
    note = toy_rivals_note()
    rows = []
    for p in panels:
        repeat = _one_run(curves, p, seeds)
        rows += [replace(r, context={"panel": p}, setting=setting + (r.setting or "") + repeat,
                         check=_once(r.check, repeat, seeds))
                 for r in _toy_panel_claims(curves, p, seeds, floor, note)]
    rows += [ClaimRow(TOY_WHERE, TOY_QUOTE, f"FOCUS outperforms {m} (in every panel of Fig. 4) in all "
                      "scenarios", claims.not_run(why), context={"panel": "all"},
                      setting=f"{setting}; Fig. 4's algorithms (the paper's text names none): {TOY_FIGURE}")
             for m, why in TOY_UNRUN.items()]
    arbitrary = next((p for p in panels if p.startswith("arbitrary")), None)
    if arbitrary is not None:
        rates = ", ".join(f"{p.split(' (')[0]} {TOY_RATES[p]:g}" for p in panels if p in TOY_RATES)
        mixed = (f"; each panel at the authors' rate for it ({rates}): a lead compared across panels mixes "
                 "the participation with the rate, as Fig. 4's panels do") if rates else ""
        rows += [replace(r, context={"panel": "all"}, setting=setting + note + mixed)
                 for r in _particularly(curves, panels, arbitrary, seeds, floor)]
    return rows


def toy_rivals_note() -> str:
    """What the setting of a row that compares FOCUS with Fig. 4's other algorithms adds: where they
    come from (:data:`TOY_FIGURE`) and FedAU's interval cutoff, its paper's here, the authors' toy
    notebook's (:data:`AUTHORS_TOY_FEDAU_CUTOFF`) there."""
    return f"; rivals: Fig. 4's other algorithms (the paper's text names none): {TOY_FIGURE}{_fedau_note()}"


def _fedau_note() -> str:
    """What the setting of a row with FedAU on the toy says of its interval cutoff: its paper's here
    (fedlib's default), the authors' toy notebook's there (:data:`AUTHORS_TOY_FEDAU_CUTOFF`)."""
    from ..algorithms.reweighting import FedAUOptions
    return (f"; FedAU with its paper's interval cutoff K = {FedAUOptions().cutoff} (fedlib's default; the "
            f"authors' toy notebook sets {AUTHORS_TOY_FEDAU_CUTOFF})")


def _particularly(curves: dict, panels: Sequence[str], arbitrary: str, seeds: Sequence[int], floor: float
                  ) -> list[ClaimRow]:
    """FOCUS Sec. 5's "outperforms the other algorithms in all scenarios, particularly under arbitrary
    participation" (Ying, Li & Yang 2025, arXiv:2503.20117, Fig. 4): FOCUS's lead on each rival of
    :data:`TOY_RIVALS` is larger under ``arbitrary`` than under each other panel, per (rival, panel)
    a paired comparison over the seeds (:func:`fedlib.claims.paired`), all :func:`fedlib.claims.combine`-d
    (each keeps its verdict, the weakest decides), in two readings:

    * Fig. 4's axis: the lead in communication to the plateau both reach (per seed the rival's model
      units minus FOCUS's, :func:`_reach_lead`; margin one round of FOCUS's, one unit). Each panel runs
      at the authors' own rate, so a lead is in that panel's units, as the figure draws it;
    * the final error: the lead in log10 final error (:func:`_final_lead`, margin a factor 2). A rival
      that ends at the floor with FOCUS on every seed of both panels has a lead of 0 in each by
      construction, so that comparison is set aside (:func:`fedlib.claims.set_aside`): the final error
      cannot tell the panels apart against it.

    Review finding 6: the earlier row took the least lead over the rivals on the final error, which
    SCAFFOLD, at the floor in every panel, held at 0 everywhere: it could only come out "equivalent".
    The per-rival readings replace it (read from the claim, not from the verdicts)."""
    short = {p: p.split(" (")[0] for p in panels}
    others = [p for p in panels if p != arbitrary]
    (group, rivals), = TOY_RIVALS.items()
    level = math.log10(floor)

    def at_floor(m, p):
        return all(abs(claims.late_mean(curves[(p, k, m)], "log10_error") - level) < 1e-9 for k in seeds)
    comm, final, tied = {}, {}, []
    for r in rivals:
        reach = {p: _reach_lead(curves, p, seeds, r) for p in panels}
        ends = {p: _final_lead(curves, p, seeds, r) for p in panels}
        for p in others:
            key = f"{r}, {short[arbitrary]} vs {short[p]}"
            names = (f"lead on {r} ({short[arbitrary]})", f"lead on {r} ({short[p]})")
            comm[key] = claims.paired(reach[arbitrary], reach[p], names=names, digits=0,
                                      missing="never reached",
                                      margin=claims.margin_for("model units to target", 1, per_round=1.0))
            final[key] = claims.paired(ends[arbitrary], ends[p], margin=claims.MARGINS["log10 error"],
                                       names=names)
            if all(at_floor(m, q) for m in ("FOCUS", r) for q in (arbitrary, p)):
                tied.append(r)
                final[key] = claims.set_aside(final[key], (
                    f"{r} ends at the floor ({floor:g}) with FOCUS on every seed under {short[arbitrary]} "
                    f"and {short[p]}: its lead is 0 in both by construction, so the final error cannot tell "
                    "the panels apart against it (the communication row reads it)"))
    tied = list(dict.fromkeys(tied))
    plateau = [r for r in rivals if r not in tied]
    why = ("kept as a second reading: against the rivals that end above the floor "
           f"({', '.join(plateau) or 'none'}) the final error tells the panels apart; "
           f"{', '.join(tied) or 'no rival'} ends at the floor with FOCUS, and those comparisons are not "
           "tested")
    what = (f"FOCUS leads each of {group} by more under {short[arbitrary]} participation than under "
            f"{' and '.join(short[p] for p in others)}")
    return [ClaimRow(TOY_WHERE, TOY_QUOTE, f"{what} (communication to the plateau both reach, Fig. 4's axis)",
                     claims.combine(comm)),
            ClaimRow(TOY_WHERE, TOY_QUOTE, f"{what} (log10 final error; a rival at the floor with FOCUS is "
                     "not tested)", claims.combine(final), cause=why)]


#: FOCUS Sec. 5 and Sec. 5.1 on exact convergence, the property Fig. 4's synthetic experiment verifies
EXACT_QUOTE = ("we conducted a numerical experiment using synthetic data since this is the common approach "
               "to verify the exact convergence property. ... Hence, any client participation scheme, as "
               "long as each client participates with a non-zero probability, will still guarantee exact "
               "convergence.")
EXACT_WHERE = "Sec. 5, Fig. 4; Sec. 5.1"
#: FOCUS Sec. 4.1 on FedAvg's limiting point (App. C's Theorem 2; the text lost its symbols)
FEDAVG_QUOTE = ("When the algorithm , the limiting point of FedAvg is around an irreducible neighborhood "
                "depending on the local update steps , data heterogeneity , and the extra bias introduced "
                "due to non-uniform participation probabilities.")
FEDAVG_WHERE = "Sec. 4.1; App. C"


def exact_floor(prob: LeastSquares) -> float:
    """The relative error to x* that rounding alone can leave in the toy's arithmetic, rounded up to
    a power of ten so that it does not move with LAPACK's last bits. Every method's gradient rests
    on ``H_bar = sum_i w_i H_i``, ``H_i = s_i A_i^T A_i``: each entry a sum of a client's ``n_i``
    products, then ``N`` weighted terms, so the computed ``H_bar`` carries a componentwise error
    ``|dH| <= gamma_m |H|_abs`` with ``m = max_i n_i + N`` and ``|H|_abs = sum_i w_i s_i |A_i|^T |A_i|``
    (``gamma_m = m u / (1 - m u)``, ``u`` the unit roundoff of the problem's dtype; Higham 2002,
    Accuracy and Stability of Numerical Algorithms, Lemma 3.1 and Sec. 3.5); the same holds for
    ``r_bar``. A perturbation of relative norm ``e = gamma_m ||H|_abs||_2 / ||H_bar||_2`` in both moves
    the solution of ``H_bar x = r_bar`` by at most ``2 kappa_2(H_bar) e / (1 - kappa_2 e)`` relative to
    ``x*`` (Higham 2002, Thm. 7.2, first order: ``2 kappa_2(H_bar) e``). A worst-case bound fixed by
    the data and the dtype: an error at or below it is the floor; a method that converges exactly
    ends there."""
    u = torch.finfo(prob.dtype).eps / 2
    owner, A = prob.client_of_row.cpu(), prob.A_rows.cpu()
    counts = torch.bincount(owner)
    m = int(counts.max()) + len(counts)
    gamma = m * u / (1 - m * u)
    scale = (1.0 / counts.to(A.dtype)) if prob.normalized else torch.ones(len(counts), dtype=A.dtype)
    w = prob.weights.cpu().to(A.dtype)
    habs = sum(w[i] * scale[i] * A[owner == i].abs().T @ A[owner == i].abs() for i in range(len(counts)))
    e = gamma * float(torch.linalg.matrix_norm(habs, 2) / torch.linalg.matrix_norm(prob.H_bar.cpu(), 2))
    ev = torch.linalg.eigvalsh(prob.H_bar.cpu())
    bound = 2 * float(ev[-1] / ev[0]) * e
    return float(10.0 ** math.ceil(math.log10(bound)))


def toy_exact_claims(hist: pd.DataFrame, seeds: Sequence[int], floor: float, setting: str = ""
                     ) -> list[ClaimRow]:
    """FOCUS's exact convergence (Sec. 5, Sec. 5.1) and FedAvg's lack of it (Sec. 4.1, App. C) on Fig.
    4's runs (``hist`` as :func:`toy_claims` reads it), per scenario (panel), seed by seed, the
    relative error at the last round clipped at ``floor`` (:func:`exact_floor`) and compared in log10
    with the floor (margin ``MARGINS['log10 error']``, a factor 2): FOCUS's error lies at the floor (a
    "no worse" claim: no more than the margin above it); FedAvg's stays above it (a "better" claim:
    equivalent where it ends at the floor). SCAFFOLD gets no row: the paper never says it fails to
    converge exactly (Table 1 lists the participation its analysis assumes). The FedAvg rows' quote
    lost its symbols in extraction; the claim says so (review finding 8)."""
    curves = toy_curves(hist, floor)
    rows = []
    for p in dict.fromkeys(hist["panel"]):
        repeat = _one_run(curves, p, seeds)
        rows += [ClaimRow(EXACT_WHERE, EXACT_QUOTE, "FOCUS converges exactly: its relative error at the last "
                          f"round lies at the floating-point floor ({floor:g}, float64 rounding's bound)",
                          _once(_at_floor(curves, p, seeds, "FOCUS", floor, at=True), repeat, seeds),
                          context={"panel": p}, setting=setting + repeat),
                 ClaimRow(FEDAVG_WHERE, FEDAVG_QUOTE, "FedAvg does not converge exactly: its relative error "
                          f"at the last round stays above the floating-point floor ({floor:g}) {FEDAVG_LOST}",
                          _once(_at_floor(curves, p, seeds, "FedAvg", floor, at=False), repeat, seeds),
                          context={"panel": p}, setting=setting + repeat)]
    return rows


#: what the claim of a row quoting :data:`FEDAVG_QUOTE` says of the symbols the text lost
FEDAVG_LOST = ("(the quote's symbols, the condition on the algorithm and those of the local update steps and "
               "the data heterogeneity, are lost from the text)")


def _at_floor(curves: dict, panel: str, seeds: Sequence[int], method: str, floor: float, at: bool
              ) -> Verdict:
    """``method``'s relative error at the last round of ``panel`` against the floating-point ``floor``,
    seed by seed in log10 (margin ``MARGINS['log10 error']``, a factor 2): ``at``, it lies at the floor
    (a "no worse" claim: no more than the margin above it); else it stays above it (a "better" claim,
    equivalent where it ends at the floor)."""
    level, margin = math.log10(floor), claims.MARGINS["log10 error"]
    end = {k: float(curves[(panel, k, method)]["log10_error"].iloc[-1]) for k in seeds}
    names = (f"{method} log10 error", "floor")
    return claims.paired(end, dict.fromkeys(seeds, level), higher=not at, kind="no worse" if at else "better",
                         margin=margin, names=names)


#: FOCUS Sec. 1 on the push-pull approach against the two other approaches to unknown participation
INTRO_QUOTE = ("Compared to the variance reduction technique (Johnson and Zhang, 2013; Defazio et al., 2014) "
               "or the adaptively learning participation probabilities, the push-pull approach handles the "
               "unknown client participation scenario much better both empirically and theoretically.")
#: FOCUS Sec. 2 on the methods that know or learn the participation probabilities
LEARNED_QUOTE = ("To address the challenges posed by non-uniformity, a common approach involves either "
                 "explicitly knowing or adaptively learning the client participation probabilities during "
                 "the iterative process and subsequently modifying the averaging weights accordingly (Wang "
                 "and Ji, 2023; Wang et al., 2024; Xiang et al., 2024). However, neither of them can achieve "
                 "exact convergence, and the learning process may slow down the convergence.")
#: the toy's methods of each approach of Sec. 1: variance reduction (SCAFFOLD, which Sec. 2 calls "inspired by
#: variance reduction techniques (Johnson and Zhang, 2013)", and MIFA, a SAGA-type memory of every client's
#: latest update, Defazio et al. 2014's SAGA) and adaptively learned participation probabilities (FedAU)
INTRO_RIVALS = {"variance reduction": ["SCAFFOLD", "MIFA"], "learned participation probabilities": ["FedAU"]}


def toy_intro_claims(hist: pd.DataFrame, seeds: Sequence[int], exact: float, setting: str = "",
                     floor: float | None = None) -> list[ClaimRow]:
    """FOCUS Sec. 1 and Sec. 2 (Ying, Li & Yang 2025, arXiv:2503.20117) on Fig. 4's runs (``hist`` as
    :func:`toy_claims` reads it; review finding 7):

    * Sec. 1, the push-pull approach "handles the unknown client participation scenario much better"
      than variance reduction and learned participation probabilities (:data:`INTRO_RIVALS`): under
      arbitrary participation, FOCUS against every method of both, by :func:`_toy_checks`' checks
      (errors below ``floor``, default :func:`toy_floor`, count as it): a lower final error and less
      communication to the plateau both reach (Fig. 4's axis). "Much" is not quantified: read as
      "better" (threshold 0); "theoretically" is no run's to test;
    * Sec. 2, the approaches that learn participation probabilities "can[not] achieve exact
      convergence": per scenario, FedAU's (Wang and Ji, 2023) relative error at the last round stays
      above the floating-point floor ``exact`` (:func:`exact_floor`), as the FedAvg rows of
      :func:`toy_exact_claims` ask. The other works cited are not run on the toy; "may slow down" is
      no claim a run can refute.
    """
    floor = toy_floor() if floor is None else floor
    curves, note = toy_curves(hist, floor), toy_rivals_note()
    panels = list(dict.fromkeys(hist["panel"]))
    rows = []
    arbitrary = next((p for p in panels if p.startswith("arbitrary")), None)
    if arbitrary is not None:
        rivals = [m for ms in INTRO_RIVALS.values() for m in ms]
        lower, _, cheaper = _toy_checks(curves, arbitrary, seeds, rivals)
        words = " and ".join(f"{k} ({', '.join(v)})" for k, v in INTRO_RIVALS.items())
        what = f"FOCUS handles arbitrary participation better ('much' read as better) than {words}"
        rows += [ClaimRow("Sec. 1", INTRO_QUOTE, f"{what}: a lower final error", lower),
                 ClaimRow("Sec. 1", INTRO_QUOTE, f"{what}: less communication to the plateau both reach "
                          "(Fig. 4's axis)", cheaper)]
        rows = [replace(r, context={"panel": arbitrary}, setting=setting + note) for r in rows]
    exact_curves = toy_curves(hist, exact)
    for p in panels:
        repeat = _one_run(exact_curves, p, seeds)
        check = _at_floor(exact_curves, p, seeds, "FedAU", exact, at=False)
        rows.append(ClaimRow("Sec. 2", LEARNED_QUOTE, "FedAU (Wang and Ji, 2023, which learns the "
                             "participation probabilities) does not converge exactly: its relative error at "
                             f"the last round stays above the floating-point floor ({exact:g})",
                             _once(check, repeat, seeds), context={"panel": p},
                             setting=setting + _fedau_note() + repeat))
    return rows


#: FOCUS Sec. 5.3 on Markov participation: stated as a belief, no experiment in the paper
MARKOV_QUOTE = ("We believe FOCUS still converges exactly under this scenario since the stochastic matrix "
                "modeling and push-pull strategy still hold for any realizations.")


def toy_markov_claims(hist: pd.DataFrame, seeds: Sequence[int], floor: float, setting: str = ""
                      ) -> list[ClaimRow]:
    """FOCUS Sec. 5.3's belief that FOCUS "still converges exactly" under Markov participation, on the
    toy's runs under :func:`toy_markov_panel` (``hist`` as :func:`toy_claims` reads it, one panel, FOCUS
    and FedAvg), seed by seed, two readings: (a) as Fig. 4's rows (:func:`toy_exact_claims`), the
    relative error at the last round, clipped at ``floor`` (:func:`exact_floor`), lies at it (no more
    than ``MARGINS['log10 error']`` above it); (b) it has no irreducible neighbourhood within the run:
    over the late half of its rounds above the comparisons' floor (:func:`toy_floor`) its log10 error
    falls (the fitted fall, :func:`_late_fall`, above 0; margin the same factor 2), as FedAvg's, whose
    limit Sec. 4.1 puts in a neighbourhood, does not. Each row's cause gives both methods' last errors
    and late falls, and for FOCUS the rounds its late pace would still need to reach the floor (on the
    seeds where it stops above the floor and its late fall exceeds the margin)."""
    curves, read = toy_curves(hist, floor), toy_floor()
    (panel,) = dict.fromkeys(hist["panel"])
    margin = claims.MARGINS["log10 error"]
    both = ("FOCUS", "FedAvg")
    end = {m: {k: float(curves[(panel, k, m)]["log10_error"].iloc[-1]) for k in seeds} for m in both}
    fall = {m: {k: _late_fall(curves[(panel, k, m)], read) for k in seeds} for m in both}
    last = int(hist["round"].max())
    pace = {k: _late_fall(curves[(panel, k, "FOCUS")], read, per_round=True) for k in seeds}
    need = [(v - math.log10(floor)) / pace[k] for k, v in end["FOCUS"].items()     # where it still falls
            if fall["FOCUS"][k] > margin and v > math.log10(floor)]

    def span(d):
        return f"{min(d.values()):.2f} to {max(d.values()):.2f}"
    cause = (f"at round {last}, log10 error: FOCUS {span(end['FOCUS'])}, FedAvg {span(end['FedAvg'])} "
             f"(floor {math.log10(floor):.0f}); fall over the late half of the rounds above {read:g} "
             f"(decades): FOCUS {span(fall['FOCUS'])}, FedAvg {span(fall['FedAvg'])}"
             + (f"; at its late pace FOCUS would reach the floor in about {min(need):.0f}-{max(need):.0f} "
                "more rounds" if need else ""))
    claim = "FOCUS converges exactly under Markov participation: "
    at_floor = claims.paired(end["FOCUS"], dict.fromkeys(seeds, math.log10(floor)), higher=False,
                             kind="no worse", margin=margin, names=("FOCUS log10 error", "floor"))
    above = [k for k, v in end["FOCUS"].items() if v > math.log10(floor) + margin]
    if at_floor.verdict != claims.HOLDS and above and all(fall["FOCUS"][k] > margin for k in above):
        # still falling where it ends above the floor: the horizon, not FOCUS, stops it short
        at_floor = claims.set_aside(at_floor, (
            f"the horizon cannot decide it: FOCUS ends above the floor on {len(above)} of "
            f"{len(end['FOCUS'])} seeds and still falls there (more than the margin, {margin:g} decades, "
            "over the late half of its rounds); the other row reads the claim within the run"))
    return [ClaimRow("Sec. 5.3", MARKOV_QUOTE, claim + f"its relative error at the last round (round {last}) "
                     f"lies at the floating-point floor ({floor:g}), as Fig. 4's rows ask",
                     at_floor, cause=cause, context={"panel": panel}, setting=setting),
            ClaimRow("Sec. 5.3", MARKOV_QUOTE, claim + "no irreducible neighbourhood: its log10 error still "
                     f"falls over the late half of its rounds above {read:g} (the comparisons' floor); a "
                     "weaker reading, within the run's horizon, than the row at the floor",
                     claims.paired(fall["FOCUS"], dict.fromkeys(seeds, 0.0), margin=margin,
                                   names=("FOCUS late fall (decades)", "0")),
                     cause=cause, context={"panel": panel}, setting=setting)]


def _one_run(curves: dict, panel: str, seeds: Sequence[int]) -> str:
    """What a row's setting adds where every method's run of ``panel`` is the same on every seed (a
    scenario with no draws, e.g. full participation: its seeds repeat one deterministic run, and
    its interval is that run's difference); "" where the seeds' runs differ."""
    methods = {m for (p, _, m) in curves if p == panel}
    same = len(seeds) > 1 and all(
        np.array_equal(curves[(panel, k, m)]["rel_dist_to_opt"].to_numpy(),
                       curves[(panel, seeds[0], m)]["rel_dist_to_opt"].to_numpy())
        for m in methods for k in seeds[1:])
    return (f"; this scenario draws nothing: its {len(seeds)} seeds repeat one run, counted once (the "
            "interval is that run's difference)") if same else ""


def _once(check: Verdict, repeat: str, seeds: Sequence[int]) -> Verdict:
    """``check`` counted as one run where its scenario draws nothing (``repeat``, :func:`_one_run`'s
    words, not empty): :func:`fedlib.claims.one_run`."""
    return claims.one_run(check, len(seeds)) if repeat else check


def _late_fall(h: pd.DataFrame, floor: float, per_round: bool = False) -> float:
    """The fall of log10 error (decades, positive where it falls) over the late half of the rounds
    where the error lies above ``floor`` (round > 0), from the least-squares slope times the span of
    those rounds (``per_round``: the slope alone, decades a round); NaN with fewer than 4 such rounds."""
    d = h[(h["rel_dist_to_opt"] > floor) & (h["round"] > 0)]
    if len(d) < 4:
        return math.nan
    late = d.iloc[len(d) // 2:]
    slope = np.polyfit(late["round"], np.log10(late["rel_dist_to_opt"]), 1)[0]
    return float(-slope if per_round else -slope * (late["round"].iloc[-1] - late["round"].iloc[0]))


def _toy_panel_claims(curves: dict, panel: str, seeds: Sequence[int], floor: float, note: str = ""
                      ) -> list[ClaimRow]:
    """:func:`toy_claims`' rows of one scenario (errors at or below ``floor`` are the floor); ``note``
    is the setting of the rows that compare rivals (:func:`toy_rivals_note`)."""
    kept = {k: rate_kept(curves[(panel, k, "FOCUS")], floor) for k in seeds}
    kept_margin = claims.MARGINS["rate kept"]
    rows = [ClaimRow(TOY_WHERE, TOY_QUOTE, "FOCUS converges linearly: its log10 error falls in the late "
                     f"half of its descent to the floor at least {1 - kept_margin:g} times as fast as in the "
                     "early half (1 for a linear rate)",
                     claims.paired(kept, dict.fromkeys(kept, 1.0), kind="no worse",
                                   margin=kept_margin, names=("late / early rate", "1")))]
    for group, rivals in TOY_RIVALS.items():
        lower, faster, cheaper = _toy_checks(curves, panel, seeds, rivals)
        rows += [ClaimRow(TOY_WHERE, TOY_QUOTE, f"FOCUS ends with a lower error than {group}", lower,
                          setting=note),
                 ClaimRow(TOY_WHERE, TOY_QUOTE, f"FOCUS converges faster than {group} (rounds)", faster,
                          setting=note),
                 ClaimRow(TOY_WHERE, TOY_QUOTE, f"FOCUS converges faster than {group} (communication cost, "
                          "Fig. 4's axis)", cheaper, setting=note)]
    return rows


#: the comparisons of :func:`toy_claims` against a rival, as :func:`toy_beyond` names them
TOY_CHECKS = ("FOCUS ends with a lower error", "FOCUS converges faster (rounds)",
              "FOCUS converges faster (communication cost)")


def _toy_checks(curves: dict, panel: str, seeds: Sequence[int], rivals: Sequence[str]
                ) -> tuple[claims.Verdict, claims.Verdict, claims.Verdict]:
    """FOCUS against every method of ``rivals`` in one scenario: a lower final error (late-window
    mean of log10 error, margin a factor 2), fewer rounds to the plateau both reach (margin one
    round) and less communication to it (the curves' ``comm``, uplink model units per slot: one a
    round for FOCUS, two for SCAFFOLD; margin one round of FOCUS's), each
    :func:`fedlib.claims.against_all`."""
    def hist(m):
        return {k: curves[(panel, k, m)] for k in seeds}

    def final(m):
        return {k: claims.late_mean(h, "log10_error") for k, h in hist(m).items()}

    def reach(x: str, margin: float) -> claims.Verdict:
        return claims.against_all(hist("FOCUS"), {r: hist(r) for r in rivals}, "FOCUS",
                                  compare=claims.paired_reach, metric="error", higher_metric=False, x=x,
                                  margin=margin)
    return (claims.against_all(final("FOCUS"), {r: final(r) for r in rivals}, "FOCUS", higher=False,
                               margin=claims.MARGINS["log10 error"]),
            reach("round", claims.margin_for("rounds to target", 1)),
            reach("comm", claims.margin_for("model units to target", 1, per_round=1.0)))


def toy_beyond(hist: pd.DataFrame, seeds: Sequence[int], floor: float | None = None,
               added: Sequence[str] = TOY_ADDED) -> pd.DataFrame:
    """FOCUS against the methods notebook 04 adds to Fig. 4 (``added``, default :data:`TOY_ADDED`),
    beyond the paper: Sec. 5's "outperforms the other algorithms" speaks of its own figure's
    algorithms, so these comparisons are no claim of FOCUS's and never enter the ledger. The same
    two checks as :func:`toy_claims` (the rule of :data:`fedlib.claims.RULE`), one row per scenario
    (panel), added method and check: panel, method, check, verdict (an inconclusive one with its
    direction), effect, ci_low, ci_high, seeds (per seed: the rival's value minus FOCUS's, log10
    error or rounds; positive favours FOCUS). Errors below ``floor`` (default :func:`toy_floor`)
    count as it."""
    curves = toy_curves(hist, floor)
    rows = []
    for p in dict.fromkeys(hist["panel"]):
        for m in added:
            for check, v in zip(TOY_CHECKS, _toy_checks(curves, p, seeds, [m]), strict=True):
                rows.append({"panel": p, "method": m, "check": check,
                             "verdict": v.words,
                             "effect": v.effect, "ci_low": v.ci_low, "ci_high": v.ci_high, "seeds": v.seeds})
    return pd.DataFrame(rows, columns=["panel", "method", "check", "verdict", "effect", "ci_low", "ci_high",
                                       "seeds"])


def _final_lead(curves: dict, panel: str, seeds: Sequence[int], rival: str) -> dict:
    """seed -> the log10 final error (late-window mean) FOCUS gains on ``rival`` in ``panel`` (0 when
    both end at the floor)."""
    def final(m, k):
        return claims.late_mean(curves[(panel, k, m)], "log10_error")
    return {k: final(rival, k) - final("FOCUS", k) for k in seeds}


def _reach_lead(curves: dict, panel: str, seeds: Sequence[int], rival: str, x: str = "comm") -> dict:
    """seed -> what ``rival`` spends in ``x`` (the curves' ``comm``, model units per slot, or rounds)
    beyond FOCUS to reach the plateau both reach in ``panel`` (the per-seed difference of
    :func:`fedlib.claims.paired_reach` on the error, as :func:`_toy_checks` compares them; NaN where one
    never gets there)."""
    out = {}
    for k in seeds:
        v = claims.paired_reach({k: curves[(panel, k, "FOCUS")]}, {k: curves[(panel, k, rival)]},
                                metric="error", higher_metric=False, x=x, names=("FOCUS", rival))
        out[k] = v.diffs[0] if v.diffs else math.nan
    return out


from .base import guard_study  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_study(globals())

#: FOCUS's study (notebooks 04 and 05) in the registry of :mod:`fedlib.studies`
STUDY = register_study(Study(name="focus", paper="FOCUS", notebooks=("04_focus_toy", "05_focus_cifar"),
                             setup=focus_setup, methods=METHOD_NAMES,
                             quotes={"App. F.2": QUOTE, TOY_WHERE: TOY_QUOTE},
                             headline=headline_claims), replace=True)
