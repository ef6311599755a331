"""Real availability (notebook 09): the four papers' algorithms under a recorded smartphone trace,
the Stunner sessions of 2014 (Szabó, Téglás, Berta, Jelasity and Bilicki, "Stunner: A Smart Phone
Trace for Developing Decentralized Edge Systems", DAIS 2019, doi 10.1007/978-3-030-22496-7_7),
per profile.

None of the four papers ran on a recorded trace: their headline claims are asked again here,
where the participation is real, with FedSUM App. H's rules for the rates (the same grid, the
same choice, the same summed step) and its local-work settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from .. import claims, delays, traces
from .._validate import InputError
from ..analysis import GridSearch, search_log_grid
from ..claims import ClaimRow
from ..config import ExperimentConfig
from ..notebook import check_profile
from . import methods
from .amplified import AUTHORS_HORIZON, AUTHORS_RATES, authors_cycles
from .base import Frames, Study, get, register_study
from .fedacs import BENCHMARKS as FEDACS_BENCHMARKS
from .fedacs import QUOTES as FEDACS_QUOTES
from .fedacs import RIVALS as FEDACS_RIVALS
from .fedsum import PAPER_GRID_ETA_G, matched_product, pick_rates, summed_step
from .fedsum import off_rule as fedsum_off_rule
from .focus import ETA as FOCUS_ETA
from .focus import focus_setup

__all__ = [
    "ASKED",
    "CALIBRATION_TOL",
    "CITATION",
    "EARLY_LOSS",
    "METHODS",
    "METHOD_NAMES",
    "STUDY",
    "SETTINGS",
    "TRACE_FILES",
    "RealSetup",
    "early_phase",
    "grid_picks",
    "off_calibration",
    "without",
    "have",
    "hourly_share",
    "real_setup",
    "sample_week",
    "session_lengths",
    "trace_files",
    "trace_table",
]

#: the paper behind the trace, cited wherever its numbers appear
CITATION = (
    "Stunner smartphone trace of 2014 (Szabó, Téglás, Berta, Jelasity, Bilicki, DAIS 2019, "
    "doi 10.1007/978-3-030-22496-7_7)"
)
#: the two files of the Stunner trace in the data folder: what separates them is not documented
#: (23% vs 35% of the time online: likely a stricter and a looser filter of the same sessions)
TRACE_FILES = {"sessions_100.txt": "Stunner _100", "sessions_80.txt": "Stunner _80"}
#: their SHA-256 (the data folder's README): the runs' configs name them, so a store's keys are the
#: same on every machine and another version of a file is refused
TRACE_SHA256 = {
    "sessions_100.txt": "a501fe6e281cf267eeed6506f065211e2a3e7cd125fa73b6d58c66995e90a057",
    "sessions_80.txt": "e10857c5f01e7656719206a1056fd2f3b1a2162a096254dd42f05aa011725f86",
}

#: per profile: data, N (records drawn per seed), K, batch, round length (minutes), T, evaluation
#: interval, training-loss samples per client, the rate grid's eta_g values and its rounds. quick:
#: two-hour rounds so that a week (84 rounds) fits the CPU budget, FedSUM App. H's K and batch of
#: notebook 02's quick profile; paper: App. H's K = 10, batch 128 and T = 2000 hour-long rounds
#: (12 weeks: the records wrap around)
SETTINGS = {
    "smoke": dict(dataset="digits", num_clients=10, local_steps=2, batch=16, round_minutes=60, rounds=14,
                  eval_every=7, train_eval=10, grid_eta_g=(1.0, 2.0), grid_rounds=4, amplify_every=2,
                  tuning_seeds=(100,), amplified_grid=(1.0, 0.1)),
    "quick": dict(dataset="mnist", num_clients=100, local_steps=5, batch=32, round_minutes=120, rounds=84,
                  eval_every=4, train_eval=20, grid_eta_g=PAPER_GRID_ETA_G, grid_rounds=21, amplify_every=12,
                  tuning_seeds=(100, 101), amplified_grid=(1.0, 0.1, 0.01, 0.001, 0.0001)),
    "paper": dict(dataset="mnist", num_clients=100, local_steps=10, batch=128, round_minutes=60,
                  rounds=2000, eval_every=10, train_eval=100, grid_eta_g=PAPER_GRID_ETA_G, grid_rounds=500,
                  amplify_every=24, tuning_seeds=(100, 101), amplified_grid=(1.0, 0.1, 0.01, 0.001, 0.0001)),
}
#: the smoke profile's eta_0 eta_g: a test of the code path, not App. H's summed step, which over the
#: smoke profile's 14 rounds of 2 local steps on the digits (a product of 1.18) made the warm-up of
#: some of the default seeds 0-4 diverge (one at round 5), stopping the smoke run
SMOKE_PRODUCT = 0.3
#: Wang & Ji's amplification factor (their eta, "we set $\eta=10$"; the option ``gamma`` of fedlib's
#: ``amplified_fedavg``, where their gamma is the learning rate) and their warm-up in cycles (FedAvg
#: for 2,000 rounds of a 500-round cycle before the phases of their Fig. 1)
GAMMA, WARMUP_CYCLES = 10.0, 4
#: Wang & Ji's Fig. 1 after the warm-up: label (in their notation, eta the amplification factor) ->
#: the factor (amplification every P = one day of rounds, and the same algorithm without it), both at
#: the same rate, as in their runs
AMPLIFIED = {f"amplification (eta={GAMMA:g}, P=1 day)": GAMMA, "no amplification (eta=1)": 1.0}
#: Wang & Ji's own rule (Wang & Ji 2022, arXiv:2205.06730, Sec. 6: every method at the rate its grid
#: picks): each phase of :data:`AMPLIFIED` -> the label of its runs at its own grid rate
TUNED = {label: f"{label} at its grid rate" for label in AMPLIFIED}
#: the methods run from scratch over the whole horizon (catalogue names, :mod:`fedlib.studies.methods`: FedSUM
#: App. H's and its baselines as App. H runs them, FOCUS's SG-FOCUS, FedACS with 10 draws), and
#: each label with its (algorithm, options)
METHOD_NAMES = ("FedSUM", "FedSUM-CR", "FedAvg", "FedAU", "FedAWE", "MIFA", "FedVARP", "SCAFFOLD", "SG-FOCUS",
                "FedACS")
METHODS = methods.specs(METHOD_NAMES)
#: FOCUS's own rule (Ying, Li & Yang 2025, arXiv:2503.20117, App. F): SG-FOCUS and the two rivals of
#: its claim at one constant rate eta = 2e-3, as App. F runs them (the rivals as the paper names them,
#: SCAFFOLD with its two uplink vectors; notebook 05 also asks the variants the authors' code ran):
#: claim name -> (label of the run, catalogue name)
FOCUS_RULE = {"SG-FOCUS": ("SG-FOCUS at FOCUS's eta", "SG-FOCUS"),
              "FedAU": ("FedAU at FOCUS's eta", "FedAU"),
              "SCAFFOLD": ("SCAFFOLD at FOCUS's eta", "SCAFFOLD (FOCUS)")}
#: the studies whose headline claims notebook 09 asks again under the trace (:func:`fedlib.studies.get`)
ASKED = ("fedsum", "focus", "fedacs", "amplified")
#: the labels of the runs; test accuracy at chance; the late window
NAMES, CHANCE, WINDOW = ["seed", "method"], 0.1, 0.1
#: the setting every claim row of notebook 09 names (not the papers' own experiments)
SETTING = "real availability (Stunner 2014)"
#: FOCUS's horizon rule here (:func:`early_phase`): a run at FOCUS's eta, set by App. F for 10,000 rounds,
#: has left its early phase once its late-window training loss is below this share of its loss at round 0
#: (the initial model's, about ln 10 = 2.30 at chance); a run shorter than App. F's that has not is no
#: value: it tests the horizon, not the paper
EARLY_LOSS = 0.5
#: the relative tolerance within which a run's rate is FedACS App. I.2's calibrated rate (rates are kept
#: to 6 significant digits): :func:`off_calibration`
CALIBRATION_TOL = 1e-6


def without(frames: Frames, runs: dict[str, tuple[list, str]]) -> Frames:
    """``frames`` with the runs named in ``runs`` (method -> (its seeds, why)) as runs that have no
    value (final values NaN, curve None) and each such method marked in ``off_rule`` with its why:
    their comparisons are "not tested" (:func:`fedlib.claims.paired`), the why in their reason. A
    run set aside has not failed: the comparisons name a run with no value "failed or set aside"
    (:attr:`Frames.missing`), the why says which."""
    if not runs:
        return frames
    for method, entry in runs.items():
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            raise InputError(f"runs: each method maps to (its seeds, why), got {method!r}: {entry!r}")
        seeds, why = entry
        if not frames.has(method):
            raise InputError(f"runs: {method!r} has no run at every seed of the frames (seeds "
                             f"{list(frames.seeds)!r}); a run set aside must be one of them")
        odd = [k for k in seeds if k not in frames.seeds]
        if odd or not seeds:
            raise InputError(f"runs: {method!r}'s seeds must be seeds of the frames "
                             f"({list(frames.seeds)!r}), at least one; got {list(seeds)!r}")
        if not isinstance(why, str) or not why.strip():
            raise InputError(f"runs: {method!r} must say why its runs are set aside, as text; got {why!r}")
    summary, curves = frames.summary.copy(), dict(frames.curves)
    for method, (seeds, _) in runs.items():
        for k in seeds:
            summary.loc[frames.at(k, method), ["final_acc", "final_loss"]] = np.nan
            curves[frames.at(k, method)] = None
    off = {**(frames.off_rule or {}), **{m: why for m, (_, why) in runs.items()}}
    missing = frames.missing if "set aside" in frames.missing else f"{frames.missing} or set aside"
    return replace(frames, summary=summary, curves=curves, off_rule=off, missing=missing)


def early_phase(frames: Frames, methods: tuple, rounds: int,
                paper_rounds: int) -> dict[str, tuple[list, str]]:
    """FOCUS's horizon rule (:data:`EARLY_LOSS`): per method of ``methods`` run at FOCUS's eta for
    ``rounds`` rounds, the seeds whose run (ok in ``frames``) has not left its early phase -- its
    late-window training loss above :data:`EARLY_LOSS` times its loss at round 0 -- and why, for
    :func:`without`, where ``rounds`` is shorter than App. F's ``paper_rounds`` (none otherwise:
    at App. F's horizon a run that never learns is a result). A method with such a run has its
    runs that failed (collapsed, diverged) counted with them: the horizon, not the paper, is tested."""
    if isinstance(methods, (str, bytes)) or not all(isinstance(m, str) for m in methods):
        raise InputError(f"methods: must be a sequence of method labels, e.g. ('FedAU', 'SCAFFOLD'), got "
                         f"{methods!r}")
    unknown = [m for m in methods if frames.methods and m not in frames.methods]
    if unknown:
        raise InputError(f"methods: {', '.join(map(repr, unknown))} is not a method of the frames "
                         f"({', '.join(map(repr, frames.methods))})")
    if rounds >= paper_rounds:
        return {}
    out = {}
    for m in methods:
        stuck, failed = {}, []                           # stuck: seed -> its numbers
        for k in frames.seeds:
            h = frames.curves.get(frames.at(k, m))
            if h is None:                                 # failed (or absent): no value already
                failed.append(k)
                continue
            start = float(h.sort_values("round")["loss"].iloc[0])
            loss, acc = (float(frames.summary.loc[frames.at(k, m), c]) for c in ("final_loss", "final_acc"))
            if loss > EARLY_LOSS * start:
                stuck[k] = f"seed {k}: {loss:.2f} of {start:.2f}, {acc:.3f}"
        if stuck:
            seen = [k for k in frames.seeds if k in stuck or k in failed]
            out[m] = (seen, f"eta = {FOCUS_ETA:g} is FOCUS App. F's rate for {paper_rounds:,} rounds; at "
                            f"T = {rounds} ({rounds / paper_rounds:.2%} of them) {len(stuck)} of "
                            f"{len(frames.seeds)} runs have not left their early phase (late-window training "
                            f"loss above {EARLY_LOSS:g} x its loss at round 0, ln 10 = {np.log(10):.2f} at "
                            f"chance; by seed, that loss of the start and test accuracy, chance {CHANCE:g}: "
                            f"{'; '.join(stuck.values())})"
                            + (f"; its run failed (diverged or collapsed) on seed(s) "
                               f"{', '.join(map(str, failed))}" if failed else ""))
    return out


def off_calibration(table: pd.DataFrame) -> dict[str, tuple[list, str]]:
    """FedACS App. I.2's rule on :meth:`RealSetup.calibration`'s ``table``: per method whose run's rate
    is not its calibrated rate (relative difference above :data:`CALIBRATION_TOL`) on a seed, those
    seeds and why, for :func:`without` (none: every run is at App. I.2's rate)."""
    ratio = "App. I.2 rate / shared"
    missing = [c for c in ("method", "seed", ratio) if c not in table.columns]
    if missing:
        raise InputError(f"table: must be RealSetup.calibration's table; it lacks "
                         f"{', '.join(map(repr, missing))}")
    values = pd.to_numeric(table[ratio], errors="coerce")
    odd = table[~np.isfinite(values) | ~(values > 0)]
    if len(odd):
        r = odd.iloc[0]
        raise InputError(f"table: {ratio!r} must be a positive finite ratio; {r['method']!r} at seed "
                         f"{r['seed']} has {r[ratio]}")
    off = table[(table[ratio] - 1).abs() > CALIBRATION_TOL]
    return {m: (list(g["seed"]), "run at the shared rate, not FedACS App. I.2's calibrated rate ("
                + "; ".join(f"seed {k}: {r:.4g}x the shared"
                            for k, r in zip(g["seed"], g[ratio], strict=True))
                + ")")
            for m, g in off.groupby("method", sort=False)}


def grid_picks(searches: dict[str, GridSearch]) -> dict[str, float]:
    """The rate each of Wang & Ji's grids picked (:meth:`RealSetup.search_amplified`): phase label of
    :data:`AMPLIFIED` -> its search's best rate, the ``picks`` of :meth:`RealSetup.own_configs`."""
    return {label: g.best for label, g in searches.items()}


@dataclass(frozen=True)
class RealSetup:
    """Notebook 09 at one profile (see :data:`SETTINGS`): N records of a Stunner file drawn per seed
    (:mod:`fedlib.traces`, participation kind ``recorded``), MNIST split by Dirichlet(0.1) labels,
    FedSUM's MNIST CNN, eta_l(t) = eta_0 / sqrt(t/10 + 1) at the rates App. H's rule picks."""

    profile: str
    trace: str
    dataset: str
    num_clients: int
    local_steps: int
    batch: int
    round_minutes: int
    rounds: int
    eval_every: int
    train_eval: int
    grid_eta_g: tuple
    grid_rounds: int
    amplify_every: int
    rule: str = "whole"
    alpha: float = 0.1
    stand_in: int = 0
    tuning_seeds: tuple = (100, 101)
    amplified_grid: tuple = (1.0, 0.1, 0.01, 0.001, 0.0001)

    @property
    def data_name(self) -> str:
        if self.stand_in:
            return "random stand-in data, synthetic Stunner-layout trace"
        return "digits (smoke test, synthetic Stunner-layout trace)" if self.profile == "smoke" else "MNIST"

    @property
    def trace_name(self) -> str:
        return TRACE_FILES.get(Path(self.trace).name, Path(self.trace).name)

    @property
    def weeks(self) -> float:
        """The run's length in weeks of the trace."""
        return self.rounds * self.round_minutes / (7 * 24 * 60)

    @property
    def setting(self) -> str:
        """The setting of the claim rows: the trace, the profile and the scale."""
        scale = (
            f"{self.profile} profile ({self.data_name}, {self.trace_name}, N={self.num_clients}, "
            f"{self.round_minutes}-minute rounds, T={self.rounds} "
            f"({self.weeks:g} week{'s' if self.weeks != 1 else ''}), "
            f"K={self.local_steps}, batch {self.batch})"
        )
        if self.profile == "smoke" or self.stand_in:
            return claims.scale_cause(self.profile, self.stand_in, self.rounds, "")
        return f"{SETTING}, {scale}"

    @property
    def title(self) -> str:
        return (
            f"({self.profile} profile; {self.trace_name}, N={self.num_clients}, "
            f"{self.round_minutes}-minute rounds, T={self.rounds}, K={self.local_steps}, batch {self.batch}; "
            f"{self.data_name})"
        )

    @property
    def product(self) -> float:
        """eta_0 eta_g of the grid: App. H's summed step over this profile's T and K (the
        profile's T, also when stand-in runs are cut shorter); at the smoke profile
        :data:`SMOKE_PRODUCT`."""
        if self.profile == "smoke":
            return SMOKE_PRODUCT
        return matched_product(self.local_steps, SETTINGS[self.profile]["rounds"])

    def participation(self, offset: int = 0) -> tuple[str, dict]:
        """The recorded kind: ``num_clients`` records of :attr:`trace` drawn by the schedule's seed
        (a real file with its SHA-256, so that another version of it is refused)."""
        args = {
            "path": self.trace,
            "format": "stunner",
            "round_minutes": self.round_minutes,
            "rule": self.rule,
            "offset": offset,
        }
        digest = TRACE_SHA256.get(Path(self.trace).name) if not Path(self.trace).is_absolute() else None
        return ("recorded", {**args, "sha256": digest} if digest else args)

    def base(self, seed: int = 0) -> ExperimentConfig:
        """FedAvg under the trace at seed ``seed`` (its own records, split, model and minibatches)."""
        kind, args = self.participation()
        synthetic = (
            {"synthetic": True, "synthetic_sizes": [20 * self.num_clients, 200]} if self.stand_in else {}
        )
        return ExperimentConfig(
            algorithm="fedavg",
            problem="neural",
            participation=kind,
            rounds=self.rounds,
            problem_args={
                "dataset": self.dataset,
                "partition": "dirichlet",
                "alpha": self.alpha,
                "model": "fedsum_mnist_cnn",
                "num_clients": self.num_clients,
                "batch_size": self.batch,
                "train_eval_per_client": self.train_eval,
                "seed": seed,
                **synthetic,
            },
            participation_args=args,
            local_steps=self.local_steps,
            lr_local=0.01,
            lr_global=1.0,
            lr_schedule="fedsum_sqrt",
            eval_every=self.eval_every,
            seed=seed,
        )

    def grid_configs(self) -> dict:
        """App. H's grid under the trace: FedAvg, seed 0, a quarter of the run, eta_0 eta_g =
        :attr:`product` at each eta_g of the grid: config -> (eta_0, eta_g)."""
        b = self.base().replace(rounds=self.grid_rounds)
        pairs = [(float(f"{self.product / eg:.6g}"), eg) for eg in self.grid_eta_g]
        return {b.replace(lr_local=e0, lr_global=eg): (e0, eg) for e0, eg in pairs}

    def choose_rates(self, compute: Callable[[list], pd.DataFrame]) -> tuple[tuple, pd.DataFrame]:
        """App. H's choice (:func:`fedlib.studies.fedsum.pick_rates`): the lowest training loss over
        the grid runs' last tenth, the runs keeping App. H.2's reported selection, eta_g = 1 ("we select
        eta_g = 1.0 ... for all algorithms"), at the product of the grid's pick (not a bound of FedSUM's
        theory, which sets eta_g = 1/sqrt(tau_max): :data:`fedlib.studies.fedsum.APP_H_ETA_G`). Returns
        (eta_0, eta_g) and the grid's table (its ``chosen`` row: the grid's own pick,
        :func:`fedlib.studies.fedsum.grid_pick`)."""
        grid = self.grid_configs()
        table, eta0, eta_g = pick_rates(compute(list(grid)), grid)
        table["summed step over T"] = [
            summed_step(e0, eg, self.local_steps, self.rounds)
            for e0, eg in zip(table["eta_0"], table["eta_g"], strict=True)
        ]
        return (eta0, eta_g), table

    @property
    def warmup_rounds(self) -> int:
        """Wang & Ji's warm-up: :data:`WARMUP_CYCLES` cycles (days) of FedAvg before the phases
        (half the run, at least one round, when the run is shorter: stand-ins)."""
        w = WARMUP_CYCLES * self.amplify_every
        return w if w < self.rounds else max(1, self.rounds // 2)

    def warmup(self, rates: tuple, seed: int) -> ExperimentConfig:
        """Seed ``seed``'s warm-up: FedAvg at the shared rates for :attr:`warmup_rounds` rounds."""
        eta0, eta_g = rates
        return self.base(seed).replace(lr_local=eta0, lr_global=eta_g, rounds=self.warmup_rounds)

    def configs(self, rates: tuple, seeds: list) -> dict:
        """Every method of :data:`METHODS` at the chosen ``rates`` (eta_0, eta_g) over the whole run,
        and Wang & Ji's two phases of :data:`AMPLIFIED` continuing each seed's :meth:`warmup` to the
        end of the run (Alg. 1 every P = one day of rounds, amplification factor eta 10 or 1 --
        option ``gamma`` of ``amplified_fedavg`` --, both at eta_0 / 10 so that eta_0 eta is the product
        the others use with eta_g -- App. H keeps eta_0 eta_g fixed;
        our inference for Wang & Ji's factor), for each seed: config -> (seed, method)."""
        eta0, eta_g = rates
        out = {}
        for seed in seeds:
            b = self.base(seed).replace(lr_local=eta0, lr_global=eta_g)
            for label, (algo, opts) in METHODS.items():
                out[b.replace(algorithm=algo, algorithm_args=dict(opts))] = (seed, label)
            for label in AMPLIFIED:
                out[self.phase(label, eta0 / GAMMA, seed, rates)] = (seed, label)
        return out

    def phase(self, label: str, lr: float, seed: int, rates: tuple,
              constant: bool = False) -> ExperimentConfig:
        """Wang & Ji's phase ``label`` of :data:`AMPLIFIED` at local rate ``lr`` (Alg. 1 every P = one
        day of rounds, option ``gamma`` of ``amplified_fedavg`` its amplification factor), continuing
        seed ``seed``'s :meth:`warmup` at the shared ``rates`` (eta_0, eta_g) to the end of the run:
        with App. H's decaying schedule of the shared runs, or with ``constant`` at the constant rate
        of Wang & Ji's Alg. 1 (their gamma)."""
        if label not in AMPLIFIED:
            raise InputError(f"label: must be one of {', '.join(map(repr, AMPLIFIED))}; got {label!r}")
        warm = self.warmup(rates, seed)
        c = self.base(seed).replace(
            algorithm="amplified_fedavg",
            algorithm_args={"P": self.amplify_every, "gamma": AMPLIFIED[label]},
            lr_local=lr,
            lr_global=rates[1],
            rounds=self.rounds - warm.rounds,
            init_from=warm,
        )
        return c.replace(lr_schedule="constant") if constant else c

    # ------------------------------------------------------------------ each paper's own rates
    def focus_configs(self, seeds: list) -> dict:
        """FOCUS's own rule (:data:`FOCUS_RULE`; Ying, Li & Yang 2025, arXiv:2503.20117, App. F):
        SG-FOCUS, FedAU and SCAFFOLD at one constant rate eta = 2e-3, eta_g = 1, this profile's K,
        batch and horizon, per seed: config -> (seed, label)."""
        out = {}
        for seed in seeds:
            b = self.base(seed).replace(lr_local=FOCUS_ETA, lr_global=1.0, lr_schedule="constant")
            for label, name in FOCUS_RULE.values():
                algo, opts = methods.method(name).spec()
                out[b.replace(algorithm=algo, algorithm_args=dict(opts))] = (seed, label)
        return out

    def amplified_rates(self, rates: tuple) -> list[float]:
        """The starting rates of Wang & Ji's grid: the warm-up's eta_0 (``rates[0]``) times each of
        :attr:`amplified_grid` (notebook 08's multiples)."""
        return [float(f"{rates[0] * g:.6g}") for g in self.amplified_grid]

    def amplified_score(self, df: pd.DataFrame, config: ExperimentConfig) -> float:
        """A grid run's score: the mean training loss over its evaluations in the phase's last day
        (the last ``amplify_every`` rounds, at least the last evaluation); NaN if the run is missing
        from ``df`` or did not end "ok" (diverged or failed)."""
        r = df[df["key"] == config.key()]
        if r.empty or (r["status"] != "ok").any():
            return float("nan")
        last = r[r["round"] >= min(config.rounds - self.amplify_every, int(r["round"].max()))]
        v = float(last["loss"].mean())
        return v if np.isfinite(v) else float("nan")

    def amplified_grid_configs(self, rates: tuple, lrs: list[float]) -> dict:
        """Every phase of :data:`AMPLIFIED` at each rate of ``lrs`` on every tuning seed:
        config -> (label, rate)."""
        return {self.phase(label, lr, k, rates, constant=True): (label, lr)
                for label in AMPLIFIED for lr in lrs for k in self.tuning_seeds}

    def search_amplified(self, rates: tuple, compute: Callable[[list], pd.DataFrame],
                         max_extensions: int = 3) -> dict[str, GridSearch]:
        """Wang & Ji's rule (Sec. 6: each method at its grid's best rate) for the two phases after
        the warm-up: per phase, :func:`fedlib.analysis.search_log_grid` over :meth:`amplified_rates`,
        scored by :meth:`amplified_score` averaged over :attr:`tuning_seeds` (their own records,
        splits, models and warm-ups; never evaluated; NaN if a run on any of them failed), extended
        10x past an edge. ``compute`` maps a list of configs to their :func:`fedlib.sweep` frame.
        Returns phase label -> the search."""
        def evaluate(label: str):
            def scores(lrs: list[float]) -> dict[float, float]:
                cs = {lr: [self.phase(label, lr, k, rates, constant=True) for k in self.tuning_seeds]
                      for lr in lrs}
                df = compute([c for v in cs.values() for c in v])
                return {lr: float(np.mean([self.amplified_score(df, c) for c in v])) for lr, v in cs.items()}
            return scores
        return {label: search_log_grid(evaluate(label), self.amplified_rates(rates), lower=True,
                                       max_extensions=max_extensions) for label in AMPLIFIED}

    def own_configs(self, rates: tuple, seeds: list, picks: dict) -> dict:
        """The runs at each paper's own rates: :meth:`focus_configs`, and each phase of
        :data:`AMPLIFIED` at its grid's pick (``picks``: label -> rate, :func:`grid_picks` of
        :meth:`search_amplified`) after each seed's warm-up at the shared ``rates``: config -> (seed,
        label of :data:`TUNED`)."""
        missing = [label for label in AMPLIFIED if label not in picks]
        if missing:
            raise InputError(f"picks: needs a rate for {', '.join(map(repr, missing))}")
        out = self.focus_configs(seeds)
        for seed in seeds:
            for label in AMPLIFIED:
                out[self.phase(label, float(picks[label]), seed, rates, constant=True)] = (seed, TUNED[label])
        return out

    def stored_configs(self, rates: tuple, seeds: list, searches: dict[str, GridSearch]) -> list:
        """Every run notebook 09 reads at ``seeds``: App. H's grid, the runs at the shared ``rates``,
        every seed's warm-up (the tuning seeds' too), Wang & Ji's grid runs (every rate each search
        tried) and the runs at each paper's own rates (:meth:`own_configs`)."""
        out = [*self.grid_configs(), *self.configs(rates, seeds)]
        out += [self.warmup(rates, k) for k in (*seeds, *self.tuning_seeds)]
        out += [self.phase(label, lr, k, rates, constant=True) for label, g in searches.items()
                for lr in g.scores for k in self.tuning_seeds]
        out += list(self.own_configs(rates, seeds, grid_picks(searches)))
        return list(dict.fromkeys(out))

    @staticmethod
    def grid_table(searches: dict[str, GridSearch]) -> pd.DataFrame:
        """Wang & Ji's grid as a table: one row per phase and rate tried (score NaN: a run failed),
        whether it was added past an edge, and the pick."""
        rows = []
        for label, g in searches.items():
            for lr, v in sorted(g.scores.items()):
                rows.append({"phase": label, "rate": lr, "score (training loss, last day)": v,
                             "added past an edge": lr in g.extended, "picked": lr == g.best})
        return pd.DataFrame(rows)

    def late_window(self, rounds: int) -> float:
        """The late window of a run of ``rounds`` rounds (the final values its claims compare):
        the last :data:`WINDOW` of its rounds, widened where that would hold fewer than two
        evaluations to the last 1.5 evaluation intervals (its last two evaluations, the window's
        edge half an interval from either; :data:`fedlib.claims.MARGINS`: a late-window mean is
        never one evaluation). T = 84, every 4: 0.1 (rounds 76-84, three evaluations); a phase of
        36 rounds: 1/6 (rounds 32 and 36), where 0.1 would hold round 36 alone."""
        return min(1.0, max(WINDOW, 1.5 * self.eval_every / rounds))

    def tidy(self, df: pd.DataFrame, labels: dict) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
        """:func:`fedlib.claims.tidy` of the runs, with model units (uplink + downlink), each run's
        final values over its :meth:`late_window`; the curves of the phases after the warm-up are
        drawn from the round they start at (a phase's history counts its own rounds from 0; its
        summary keeps them)."""
        tidy, summary, curves = claims.tidy(
            df, labels, NAMES, CHANCE, WINDOW, derived={"model units": lambda t: t["uplink"] + t["downlink"]}
        )
        for rounds in sorted({c.rounds for c in labels}):        # a window of >= 2 evaluations per run
            window = self.late_window(rounds)
            if window != WINDOW:
                part = {c: lab for c, lab in labels.items() if c.rounds == rounds}
                s = claims.summarize(df[df["key"].isin([c.key() for c in part])], part, NAMES, CHANCE, window)
                s = s.set_index(NAMES)
                summary.loc[s.index, ["final_acc", "final_loss"]] = s[["final_acc", "final_loss"]].to_numpy()
        phase = tidy["method"].isin([*AMPLIFIED, *TUNED.values()])
        tidy.loc[phase, "round"] += self.warmup_rounds
        return tidy, summary, curves

    # ------------------------------------------------------------------ the trace and its delays
    def schedules(self, seeds: list) -> dict[int, np.ndarray]:
        """The availability [rounds, N] each seed replays (its own draw of records)."""
        return {k: s.active for k, s in self.schedules_of(seeds).items()}

    def delay_table(self, seeds: list) -> pd.DataFrame:
        """FedSUM's tau_max and tau_avg (eqs. 2-4) of the real schedules (one row per seed) beside
        the synthetic patterns of notebook 01 (Cases 1-4, P3, Markov) at the same N, T and mean
        number of clients per round S, each with the lemma's bound on tau_max where the paper
        gives one (:func:`fedlib.studies.fedsum.delay_patterns`), and the Bernoulli bound
        (FedSUM Lemma F.2) with delta = the least available client's long-run share."""
        from ..participation import build
        from .fedsum import delay_patterns

        real = self.schedules(seeds)
        rows = []
        shares = []
        for k, a in real.items():
            m = delays.delay_metrics(a)
            share = a.mean(axis=0)
            shares.append(a.sum(axis=1).mean())
            delta = float(share[share > 0].min()) if (share > 0).any() else float("nan")
            rows.append(
                {
                    "pattern": f"real: {self.trace_name}, seed {k}",
                    "S (mean clients per round)": round(float(a.sum(axis=1).mean()), 1),
                    "tau_max": m.tau_max,
                    "tau_avg": round(m.tau_avg, 3),
                    "bound on tau_max": round(
                        delays.bound_bernoulli(self.num_clients, self.rounds, delta), 1
                    ),
                    "bound": f"F.2 with δ = least client's share ({delta:.3f}), ours",
                }
            )
        s = max(1, int(round(float(np.mean(shares)))))
        for name, p in delay_patterns(self.num_clients, s).items():
            ms = [
                delays.delay_metrics(
                    build(p["kind"], self.num_clients, self.rounds, seed=k, **p["args"]).active
                )
                for k in seeds
            ]
            rows.append(
                {
                    "pattern": f"synthetic: {name}",
                    "S (mean clients per round)": s,
                    "tau_max": float(np.mean([m.tau_max for m in ms])),
                    "tau_avg": round(float(np.mean([m.tau_avg for m in ms])), 3),
                    "bound on tau_max": round(float(p["bound"](self.rounds)), 1),
                    "bound": p["formula"],
                }
            )
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ the claims
    def off_rule(self, rates: tuple, picked: tuple | None = None) -> dict[str, str]:
        """Every method of this notebook -> why its runs are outside its own paper's settings: all run at
        the rates App. H's rule picked for FedAvg under the trace (``rates``: eta_0, eta_g); FedSUM's
        methods and baselines at that local step (:func:`fedlib.studies.fedsum.off_rule`), SG-FOCUS at
        that rate against FOCUS App. F's (FedACS: App. I.2's calibration of that rate, :meth:`calibration`),
        amplification at eta_0 / eta (eta: Wang & Ji's amplification factor) against Wang & Ji's rate.
        A marked method that fails makes its comparisons "not tested" (:func:`fedlib.claims.paired`).
        FOCUS's and Wang & Ji's claims read the runs at their own rates (:meth:`own_configs`) instead.
        ``picked``: the grid's own pick (eta_0, eta_g) (:func:`fedlib.studies.fedsum.grid_pick`), named
        beside the eta_0 the runs use."""
        eta0, eta_g = rates
        out = dict.fromkeys(METHODS, f"the shared rates (eta_0, eta_g) = ({eta0:g}, {eta_g:g}) App. H's rule "
                                     "picked for FedAvg under the trace")
        out.update(fedsum_off_rule(eta0, eta_g, self.batch, self.local_steps, self.rounds, picked))
        out["SG-FOCUS"] = (f"eta = {eta0 * eta_g:g}, {eta0 * eta_g / FOCUS_ETA:.1f}x FOCUS App. F's eta = "
                           f"{FOCUS_ETA:g} for SG-FOCUS")
        authors = AUTHORS_RATES[("amplified_fedavg", GAMMA)]
        for label in AMPLIFIED:
            out[label] = (f"eta_0 / eta = {eta0 / GAMMA:g}, {eta0 / GAMMA / authors:,.0f}x the rate Wang & "
                          f"Ji pick by a grid after the warm-up ({authors:g} in their FashionMNIST runs)")
        return out

    def calibration(self, rates: tuple, seeds: list) -> pd.DataFrame:
        """FedACS App. I.2's rule under the trace: per seed, each method of FedACS's claims that runs
        here at the local rate that gives it FedAvg's effective step length on that seed's schedule
        (:func:`fedlib.theory.calibrated_rates`, FedAvg's rate the shared eta_0 of ``rates``), beside the
        shared eta_0 it runs at: columns seed, method, shared eta_0, App. I.2 eta_0, App. I.2 rate /
        shared."""
        from .. import theory
        names = [m for m in dict.fromkeys(("FedACS", *FEDACS_RIVALS, "FedAU", *FEDACS_BENCHMARKS))
                 if m in METHODS]
        algos = {m: METHODS[m][0] for m in names}
        rows = []
        for k, schedule in self.schedules_of(seeds).items():
            cal = theory.calibrated_rates(rates[0], schedule, methods=tuple(dict.fromkeys(algos.values())))
            rows += [{"seed": k, "method": m, "shared eta_0": rates[0], "App. I.2 eta_0": cal[a],
                      "App. I.2 rate / shared": cal[a] / rates[0]} for m, a in algos.items()]
        return pd.DataFrame(rows)

    def schedules_of(self, seeds: list) -> dict:
        """Each seed's :class:`fedlib.participation.Schedule` (its own draw of records)."""
        return {k: self.base(k).schedule(num_clients=self.num_clients) for k in seeds}

    def _fedacs_rows(self, frames: Frames, calibration: pd.DataFrame) -> list[ClaimRow]:
        """FedACS's Sec. 6 claims (:func:`fedlib.studies.fedacs.headline_claims`) against every rival
        the paper names: each rival that runs here compared alone, each one that does not "not tested:
        not run here", :func:`fedlib.claims.combine`-d (none left out); a method off App. I.2's
        calibrated rate (:func:`off_calibration` of ``calibration``) makes its comparisons "not tested".
        The setting says what App. I.2's calibration gives here."""
        study = get("fedacs")
        frames = without(frames, off_calibration(calibration))
        named = {FEDACS_QUOTES["rounds"].quote: (*FEDACS_RIVALS, "FedAU"),
                 FEDACS_QUOTES["accuracy"].quote: FEDACS_BENCHMARKS}
        # every rival of the speed claim is a benchmark (Sec. 6's six: the four rivals, FedAU and OS)
        alone = {m: study.claims(replace(frames, methods=("FedACS", m))) for m in (*FEDACS_RIVALS, "FedAU")
                 if m in frames.methods}
        ratio = calibration["App. I.2 rate / shared"]
        setting = (f"{self.setting}; FedACS App. I.2's rule: its calibration gives "
                   + ("every method FedAvg's rate here (each upload arrives, K = "
                      f"{self.local_steps} for all)" if ((ratio - 1).abs() <= CALIBRATION_TOL).all()
                      else f"rates {ratio.min():.4g}-{ratio.max():.4g}x the shared"))
        rows = []
        for row in study.claims(frames):
            rivals = named.get(row.quote)
            if rivals is None:
                rows.append(replace(row, setting=setting))
                continue
            own = {m: next(r.check for r in rs if r.quote == row.quote) for m, rs in alone.items()}
            every = claims.against_rivals(rivals, own.__getitem__, own.__contains__,
                                          "is not among notebook 09's methods")
            claim = f"{row.claim.split(' than ')[0]} than every rival of the claim {every.words}"
            rows.append(replace(row, claim=claim, check=every.check, setting=setting))
        return rows

    def _own_rule_words(self, rates: tuple, searches: dict[str, GridSearch]) -> tuple[str, str, str, str]:
        """The cause and the setting of FOCUS's rows and of Wang & Ji's (:meth:`claims`): each paper's
        rule as run here, where it departs from the paper and which parts are ours."""
        f = focus_setup("paper")                    # App. F's own settings (notebook 05's paper profile)
        focus = (f"SG-FOCUS, FedAU and SCAFFOLD at FOCUS App. F's rule: one constant rate eta = "
                 f"{FOCUS_ETA:g} for all three (App. F and the authors' code, which sets the batch: "
                 f"N = {f.num_clients}, K = {f.local_steps}, batch {f.batch}, {f.rounds:,} rounds; here this "
                 f"profile's N = {self.num_clients}, "
                 f"K = {self.local_steps}, batch {self.batch}, T = {self.rounds}); SG-FOCUS's server step "
                 "sums every client's last gradient, so its step grows with N, the rivals' does not")
        focus_setting = (f"{self.setting}; FOCUS App. F's rule: SG-FOCUS, FedAU and SCAFFOLD at one constant "
                         f"eta = {FOCUS_ETA:g}, App. F's rate for {f.rounds:,} rounds of N = {f.num_clients} "
                         "clients")
        edge = " (on the grid's edge after its extensions)"
        chosen = grid_picks(searches)
        picks = "; ".join(f"{label}: {chosen[label]:g}" + (edge if g.on_edge else "")
                          for label, g in searches.items())
        grid = ", ".join(f"{g:g}" for g in self.amplified_grid)
        phases = (f"each phase at the constant rate its own grid picks (Wang & Ji Sec. 6: a grid of "
                  f"({grid}) times the initial rate, here the warm-up's eta_0 = {rates[0]:g}); ours, as "
                  "Sec. 6 does not say how the best rate was judged: scored by the mean training loss over "
                  f"the phase's last day on tuning seeds {', '.join(map(str, self.tuning_seeds))} (never "
                  f"evaluated), extended 10x past an edge; picks {picks} (Wang & Ji: "
                  f"{AUTHORS_RATES[('amplified_fedavg', GAMMA)]:g} in their FashionMNIST runs)")
        phases += f"; horizon: {self.horizon_words}"
        phase_setting = (f"{self.setting}; Wang & Ji's rule: each phase at the constant rate its own grid "
                         f"picks, {self.horizon_words}")
        return focus, focus_setting, phases, phase_setting

    @property
    def horizon_words(self) -> str:
        """Wang & Ji's phases' horizon after the warm-up against the authors' (as notebook 08 gives
        it): here in rounds and in cycles of P = one day of rounds (one amplification each), against
        :data:`fedlib.studies.amplified.AUTHORS_HORIZON` rounds in cycles of Sec. 6's FashionMNIST
        cycle (the paper profile of notebook 08); time is scaled as the cycle is, so cycles compare
        the two."""
        after = self.rounds - self.warmup_rounds
        here, (cycle, theirs) = after / self.amplify_every, authors_cycles()
        return (f"{after} rounds after the warm-up ({here:g} cycles of P = {self.amplify_every} rounds, "
                f"{after // self.amplify_every} amplifications), {here / theirs:.2%} of the authors' "
                f"{theirs:g} cycles (their code: {AUTHORS_HORIZON:,} rounds after its warm-up, cycle "
                f"{cycle})")

    def horizon_rule_words(self, curves: dict, own_summary: pd.DataFrame, seeds: list) -> str:
        """Why FOCUS's horizon rule (:func:`early_phase`) is not applied to Wang & Ji's row, with the
        numbers its bar would read: the rule's criterion covers runs at a rate fixed for a far longer
        horizon (FOCUS's eta, set by App. F for its 10,000 rounds) that have not left the early phase
        of training from an initial model; Wang & Ji's phases continue a warmed-up model at rates
        their own grid picked at this horizon. Their late-window training loss over the seed's
        initial model's loss (round 0 of its FedAvg run at the shared rates, whose first rounds the
        warm-up repeats), per phase of :data:`TUNED` over ``seeds``, against the rule's bar
        :data:`EARLY_LOSS`. ``curves``: the shared-rate runs' curves; ``own_summary``: the runs at
        each paper's own rates."""
        ratios = {}
        for label in TUNED.values():
            r = []
            for k in seeds:
                h = curves.get((k, "FedAvg"))
                if h is not None:
                    r.append(float(own_summary.loc[(k, label), "final_loss"])
                             / float(h.sort_values("round")["loss"].iloc[0]))
            ratios[label] = [x for x in r if np.isfinite(x)]
        shown = "; ".join(f"{label}: {min(v):.2f}-{max(v):.2f}" for label, v in ratios.items() if v) or "none"
        return (f"FOCUS's horizon rule (late-window training loss above {EARLY_LOSS:g} x the initial "
                "model's: not tested) is not applied: its criterion covers runs at a rate fixed for a far "
                "longer horizon that have not left their early phase, and these phases continue the "
                "warm-up's model at rates their own grid picked at this horizon; their late-window training "
                f"loss / the seed's initial model's loss (round 0 of its FedAvg run) over seeds {seeds}: "
                f"{shown}")

    def claims(self, summary: pd.DataFrame, curves: dict, seeds: list, per_round: float,
               rates: tuple, own_summary: pd.DataFrame, own_curves: dict,
               searches: dict[str, GridSearch], calibration: pd.DataFrame,
               picked: tuple | None = None) -> list[ClaimRow]:
        """Each paper's headline claims under the trace, seed by seed, asked through its registered
        study (:data:`ASKED`, :meth:`fedlib.studies.Study.claims`), each at its own paper's rates;
        every row names its paper (the ledger's ``paper`` column) and this profile's setting:

        * FedSUM (Sec. 5, :func:`fedlib.studies.fedsum.headline_claims`), on the runs at the rates
          App. H's rule picked (``summary``, ``curves``): FedSUM and FedSUM-CR faster (rounds) and
          more stable than every baseline, fewer model units, FedSUM-CR keeps FedSUM's accuracy with
          fewer units (margins from this profile's evaluation interval and its mean clients per round);
        * FOCUS (App. F.2), on the runs at FOCUS's eta (``own_summary``, :data:`FOCUS_RULE`): SG-FOCUS
          has a higher test accuracy and converges faster than FedAU and SCAFFOLD; a run that has not
          left its early phase at this horizon (:func:`early_phase`) makes its comparisons "not tested";
        * FedACS (Sec. 6), on the shared-rate runs, at App. I.2's calibration of the shared rate
          (``calibration``: :meth:`calibration`; a run off it is "not tested"): fewer rounds to the
          70% target than every rival of its claim, and the highest late-window accuracy among its
          benchmarks, each rival not run here "not tested" (:meth:`_fedacs_rows`);
        * Wang & Ji (Sec. 6): FedAvg without amplification gives the lowest performance -- here:
          after the warm-up, amplification every day of rounds ends above the same algorithm
          without it (their Fig. 1's pair), each at the rate its grid picked (``own_summary``,
          :data:`TUNED`; ``searches``: :meth:`search_amplified`).

        ``per_round``: the mean number of clients per round of the real schedules (the model-unit
        margin is two rounds' worth of them, as notebook 02's is 2 S); ``rates``: the shared
        (eta_0, eta_g), named in the causes of the rows whose methods another paper tunes, and the
        initial rate of Wang & Ji's grid; ``picked``: the grid's own pick (:meth:`off_rule`). FOCUS's
        and Wang & Ji's rows name their paper's rule in their setting (kept whatever the verdict);
        Wang & Ji's, its horizon against the authors' and why FOCUS's horizon rule is not applied
        (:meth:`_amplified_rows`).
        """
        own_label = {**{name: label for name, (label, _) in FOCUS_RULE.items()}, **TUNED}
        frames = Frames(summary, curves, seeds, self.eval_every, max(1, int(round(per_round))),
                        off_rule=self.off_rule(rates, picked), methods=tuple(METHODS))
        own = Frames(own_summary, own_curves, seeds, self.eval_every, max(1, int(round(per_round))),
                     methods=tuple(own_label), key=lambda k, m: (k, own_label[m]))
        early = early_phase(own, tuple(FOCUS_RULE), self.rounds, focus_setup("paper").rounds)
        focus, focus_setting, phases, phase_setting = self._own_rule_words(rates, searches)
        focus_rows = get("focus").claims(without(own, early))
        if early:                                   # what the horizon rule sets aside, named
            focus_rows = _lifted(focus_rows, get("focus").claims(own), "the horizon rule")
        asked = {"fedsum": (get("fedsum").claims(frames), "", self.setting),
                 "focus": (focus_rows, focus, focus_setting),
                 "fedacs": (self._fedacs_rows(frames, calibration), "", None),
                 "amplified": (self._amplified_rows(own, curves, own_summary, seeds), phases, phase_setting)}
        rows = []
        for name in ASKED:
            found, cause, setting = asked[name]
            rows += [replace(r, setting=setting or r.setting,
                             cause="; ".join(c for c in (r.cause, cause) if c)) for r in found]
        return rows


    def _amplified_rows(self, own: Frames, curves: dict, own_summary: pd.DataFrame,
                        seeds: list) -> list[ClaimRow]:
        """Wang & Ji's headline rows (:func:`fedlib.studies.amplified.headline_claims`) on the runs at
        their own rates (``own``), each naming why FOCUS's horizon rule is not applied to it
        (:meth:`horizon_rule_words`); the rows say that their figure prints no number."""
        amp, plain = AMPLIFIED
        rule = self.horizon_rule_words(curves, own_summary, seeds)
        rows = get("amplified").claims(own, amplified=amp, plain=plain,
                                       warmup=f"a {WARMUP_CYCLES}-day FedAvg warm-up")
        return [replace(r, cause="; ".join(c for c in (r.cause, rule) if c)) for r in rows]


def _lifted(rows: list[ClaimRow], lifted: list[ClaimRow], rule: str) -> list[ClaimRow]:
    """``rows`` of a rule set after the runs were read, each "not tested" one whose verdict the rule
    decided naming in its cause the verdict of the same claim in ``lifted`` (the rows computed
    without ``rule``), so that what the rule sets aside is never hidden."""
    out = []
    for r, free in zip(rows, lifted, strict=True):
        if r.check.verdict == claims.NOT_TESTED and free.check.verdict != claims.NOT_TESTED:
            r = replace(r, cause="; ".join(c for c in (r.cause, f"without {rule}: {free.check.words}") if c))
        out.append(r)
    return out


def closest_pattern(delay_table: pd.DataFrame) -> dict:
    """The synthetic pattern of :meth:`RealSetup.delay_table` nearest to the real schedules (the
    mean over seeds): the smallest sum of absolute log-ratios of tau_max and tau_avg. Returns the
    pattern's row (``pattern``, ``tau_max``, ``tau_avg``) with the real means (``real tau_max``,
    ``real tau_avg``) and the real rows' mean bound (``real bound``)."""
    is_real = delay_table["pattern"].str.startswith("real")
    real_rows, synth = delay_table[is_real], delay_table[~is_real]
    rmax, ravg = float(real_rows["tau_max"].mean()), float(real_rows["tau_avg"].mean())
    dist = (np.log(synth["tau_max"] / rmax).abs() + np.log(synth["tau_avg"] / ravg).abs()).to_numpy()
    row = synth.iloc[int(np.argmin(dist))]
    return {
        "pattern": str(row["pattern"]).removeprefix("synthetic: "),
        "tau_max": float(row["tau_max"]),
        "tau_avg": float(row["tau_avg"]),
        "real tau_max": rmax,
        "real tau_avg": ravg,
        "real bound": float(real_rows["bound on tau_max"].mean()),
    }


def cost_hours(df: pd.DataFrame) -> float:
    """CPU-hours of the runs of a sweep frame: each run's measured seconds at its last round
    (one torch thread per run), summed."""
    return float(df.groupby("key")["seconds"].max().sum() / 3600)


def cost_hours_of(configs: list, loaded: list, compute: Callable[[list], pd.DataFrame]) -> float:
    """:func:`cost_hours` of the runs ``configs``, none read twice: their rows of the sweep frames
    ``loaded`` (the runs read already), and the runs in none of them read by ``compute``."""
    keys = {c.key(): c for c in configs}
    frames = [df.loc[df["key"].isin(keys), ["key", "seconds"]] for df in loaded]
    seen = set().union(*(f["key"] for f in frames))
    rest = [c for k, c in keys.items() if k not in seen]
    frames += [compute(rest)[["key", "seconds"]]] if rest else []
    return cost_hours(pd.concat(frames)) if frames else 0.0


def trace_files(profile: str, synthetic: bool = False) -> dict[str, Path]:
    """The trace files notebook 09 describes, name -> path: the two Stunner files as paths
    relative to the data folder (``traces/<name>``, found by :func:`fedlib.traces.resolve`; they
    may be absent: :func:`have`), or -- at the smoke profile and with ``synthetic`` (stand-in
    tests) -- two small synthetic traces in the Stunner layout
    (:func:`fedlib.traces.write_synthetic_stunner`, seeds 0 and 1, twice as many full weeks as
    the profile's N) in a new temporary folder, so that the notebook's tests need no real file."""
    import tempfile

    if check_profile(profile) == "smoke" or synthetic:
        tmp = Path(tempfile.mkdtemp(prefix=f"fedlib-09-{profile}-"))
        n = SETTINGS[profile]["num_clients"]
        return {
            name: traces.write_synthetic_stunner(tmp / name, records=max(40, 2 * n), seed=i)
            for i, name in enumerate(TRACE_FILES)
        }
    return {n: Path("traces") / n for n in TRACE_FILES}


def have(files: dict[str, Path]) -> bool:
    """Whether every file of ``files`` is here (:func:`fedlib.traces.resolve`)."""
    return all(traces.resolve(p).is_file() for p in files.values())


def hourly_share(files: dict[str, Path]) -> pd.DataFrame:
    """The share of full-week records online at the start of each hour of the day, in UTC and in
    each device's local time (its record's offset), per file: columns file, clock, hour, share."""
    rows = []
    for name, path in files.items():
        m = traces.availability(path, round_minutes=60, rule="start")  # [records, 168 hours]
        tz = np.array([r["tz_hours"] for r in traces.stunner_records(path)])
        utc = np.arange(m.shape[1]) % 24
        local = (utc[None, :] + np.floor(tz)[:, None]).astype(int) % 24
        for clock, hours in (("UTC", np.broadcast_to(utc, m.shape)), ("local time", local)):
            for h in range(24):
                rows.append(
                    {
                        "file": TRACE_FILES.get(name, name),
                        "clock": clock,
                        "hour": h,
                        "share online": float(m[hours == h].mean()),
                    }
                )
    return pd.DataFrame(rows)


def trace_table(files: dict[str, Path], round_minutes: int, rule: str) -> pd.DataFrame:
    """Per file: its full-week records, the devices (users) behind them, the share of time online
    at the start of an hour, the share of rounds a device is available by the notebook's round
    length and rule, the records ever available by that rule, the median and 90th percentile of
    sessions and gaps (minutes) and the sessions per record."""
    rows = []
    for name, path in files.items():
        recs = traces.stunner_records(path)
        hourly = traces.availability(path, round_minutes=60, rule="start")
        run = traces.availability(path, round_minutes=round_minutes, rule=rule)
        on, off = traces.sessions(path)
        rows.append(
            {
                "file": TRACE_FILES.get(name, name),
                "full-week records": len(recs),
                "devices": len({r["user"] for r in recs}),
                "share online (hour starts)": round(float(hourly.mean()), 3),
                f"share available ({round_minutes}-min rounds, rule '{rule}')": round(float(run.mean()), 3),
                f"records ever available ({rule})": int(run.any(axis=1).sum()),
                "median session (min)": round(float(np.median(on)), 1),
                "90% of sessions below (min)": round(float(np.quantile(on, 0.9)), 1),
                "median gap (min)": round(float(np.median(off)), 1),
                "90% of gaps below (min)": round(float(np.quantile(off, 0.9)), 1),
                "sessions per record": round(len(on) / max(len(recs), 1), 1),
            }
        )
    return pd.DataFrame(rows)


def session_lengths(files: dict[str, Path]) -> pd.DataFrame:
    """Every session and gap (minutes) of every file (:func:`fedlib.traces.sessions`): columns
    file, kind ("online session" / "offline gap"), minutes."""
    if not files:
        raise InputError("files: no trace file to read (name -> path, as trace_files gives them)")
    parts = []
    for name, path in files.items():
        on, off = traces.sessions(path)
        f = TRACE_FILES.get(name, name)
        parts += [
            pd.DataFrame({"file": f, "kind": "online session", "minutes": on}),
            pd.DataFrame({"file": f, "kind": "offline gap", "minutes": off}),
        ]
    return pd.concat(parts, ignore_index=True)


def sample_week(path: Path, records: int = 100, seed: int = 0) -> pd.DataFrame:
    """Hour-long rounds of a week of ``records`` full-week records drawn by ``seed`` (all of them
    if the file has fewer), rule "start", for a heat-map: one row per hour, one 0/1 column per
    record drawn (named by its row in the file's full-week records)."""
    m = traces.availability(path, round_minutes=60, rule="start")
    pick = np.sort(np.random.default_rng(seed).choice(len(m), size=min(records, len(m)), replace=False))
    return pd.DataFrame(m[pick].T.astype(int), columns=[f"record {i}" for i in pick])


def session_quantiles(files: dict[str, Path], points: int = 201) -> pd.DataFrame:
    """The distributions of :func:`session_lengths` as ``points`` quantiles each (an ECDF drawn
    from them): columns file, kind, quantile, minutes."""
    lengths = session_lengths(files)
    q = np.linspace(0, 1, points)
    parts = [
        pd.DataFrame({"file": f, "kind": k, "quantile": q, "minutes": np.quantile(g["minutes"], q)})
        for (f, k), g in lengths.groupby(["file", "kind"], sort=False)
    ]
    return pd.concat(parts, ignore_index=True)


def real_setup(profile: str, trace: str | Path = "traces/sessions_100.txt",
               stand_in_rounds: int = 0) -> RealSetup:
    """Notebook 09's settings at ``profile`` replaying the Stunner-layout file ``trace`` (a path
    relative to the data folder, e.g. ``traces/sessions_100.txt``, the default, keeps the runs'
    configs the same on every machine; the file is read when a schedule is built); ``stand_in_rounds > 0``
    keeps the profile's N, K, batch and model on random data and cuts the runs (and the grid's)
    to that many rounds."""
    check_profile(profile)
    if isinstance(stand_in_rounds, bool) or not isinstance(stand_in_rounds, int) or stand_in_rounds < 0:
        raise InputError(f"stand_in_rounds: must be an integer >= 0, got {stand_in_rounds!r}")
    s = RealSetup(profile=profile, trace=str(trace), **SETTINGS[profile])
    if stand_in_rounds:
        s = replace(
            s,
            rounds=stand_in_rounds,
            grid_rounds=stand_in_rounds,
            eval_every=stand_in_rounds,
            train_eval=2,
            grid_eta_g=s.grid_eta_g[:1],
            tuning_seeds=s.tuning_seeds[:1],
            amplified_grid=s.amplified_grid[:1],
            stand_in=stand_in_rounds,
        )
    return s


def _shared_rates(name: str, value: object) -> None:
    """``rates`` in this module: the shared (eta_0, eta_g) of App. H's rule."""
    check_rate_pair(name, value, "be the shared rates (eta_0, eta_g), two positive numbers "
                                 "(RealSetup.choose_rates gives them)")


from .base import check_rate_pair, guard_study  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_study(globals(), {"rates": _shared_rates})

#: the study of notebook 09 in the registry of :mod:`fedlib.studies` (its claims are the other
#: papers', each row naming its own)
STUDY = register_study(Study(name="real", paper="FedSUM, FOCUS, FedACS, Wang & Ji 2022",
                             notebooks=("09_real_availability",), setup=real_setup, methods=METHOD_NAMES),
                       replace=True)
