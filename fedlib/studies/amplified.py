"""Wang & Ji 2022 (notebook 08): the shared FedAvg warm-up under periodic availability and the
phases after it (amplification, no amplification, wait-minibatch, wait-full), per profile."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..analysis import GridSearch, search_log_grid
from ..config import ExperimentConfig
from ..notebook import check_profile

__all__ = ["AmplifiedSetup", "amplified_setup"]

#: per profile: data, model, N, availability window, warm-up, horizon and grid horizon (rounds),
#: evaluation interval, the P of Fig. 2, the grid's multiples of the warm-up rate, training-loss
#: samples per client (quick: MNIST standing in for FashionMNIST, the availability time scaled
#: down 5x; the warm-up runs to its plateau, 1,500 rounds; the grid and the figures over two
#: cycles, so the grid's runs at the chosen rates are the figures' runs of the first seed)
SETTINGS = {
    "smoke": dict(dataset="digits", model="fedsum_mnist_cnn", num_clients=10, window=2, warmup=6,
                  horizon=8, grid_horizon=4, eval_every=2, P_values=(1, 5, 10), grid=(1.0, 0.1),
                  train_eval=10),
    "quick": dict(dataset="mnist", model="fedsum_mnist_cnn", num_clients=250, window=20, warmup=1500,
                  horizon=200, grid_horizon=200, eval_every=20, P_values=(1, 20, 60, 100, 140, 180),
                  grid=(1.0, 0.1, 0.01, 0.001, 0.0001), train_eval=20),
    "paper": dict(dataset="fashion_mnist", model="wj_fmnist_cnn", num_clients=250, window=100,
                  warmup=2000, horizon=5000, grid_horizon=1000, eval_every=100,
                  P_values=(1, 100, 300, 500, 700, 900), grid=(1.0, 0.1, 0.01, 0.001, 0.0001),
                  train_eval=100),
}
#: the rates of the authors' FashionMNIST runs after the warm-up (their README and config):
#: method label's algorithm and gamma -> rate; the wait-for-all baselines keep the warm-up's rate
AUTHORS_RATES = {("amplified_fedavg", 10.0): 1e-5, ("amplified_fedavg", 1.0): 1e-5,
                 ("wait_minibatch", None): 0.1, ("wait_full", None): 0.1}
_NAMES = {"mnist": "MNIST, standing in for FashionMNIST", "digits": "digits (smoke test)",
          "fashion_mnist": "FashionMNIST"}


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
        return _NAMES[self.dataset]

    @property
    def methods(self) -> dict[str, tuple[str, dict]]:
        """Label -> (algorithm, options) of Fig. 1."""
        c = self.cycle
        return {f"amplification (eta=10, P={c})": ("amplified_fedavg", {"P": c, "gamma": 10.0}),
                "no amplification (eta=1)": ("amplified_fedavg", {"P": c, "gamma": 1.0}),
                "wait-minibatch": ("wait_minibatch", {"cycle": c}),
                "wait-full": ("wait_full", {"cycle": c})}

    def base(self) -> ExperimentConfig:
        """The shared warm-up: FedAvg (eta = 1) at the initial rate for ``warmup`` rounds."""
        synthetic = {}
        if self.stand_in:
            synthetic = {"synthetic": True, "synthetic_sizes": [20 * self.num_clients, 200]}
        model_args = {"dropout": 0.0} if self.model == "fedsum_mnist_cnn" else {}
        return ExperimentConfig(
            algorithm="fedavg", problem="neural", participation="periodic", rounds=self.warmup,
            problem_args={"dataset": self.dataset, "partition": "majority_label", "similarity": 0.05,
                          "model": self.model, "model_args": model_args, "num_clients": self.num_clients,
                          "batch_size": self.batch, "train_eval_per_client": self.train_eval,
                          "seed": self.seed, **synthetic},
            participation_args={"per_round": self.per_round, "groups": self.groups, "window": self.window},
            local_steps=self.local_steps, lr_local=self.lr0, eval_every=self.eval_every, seed=self.seed)

    def phase(self, label: str, horizon: int, lr: float, seed: int | None = None,
              **extra) -> ExperimentConfig:
        """Method ``label`` continuing the shared warm-up for ``horizon`` rounds of time (a wait
        round costs a cycle); ``seed`` (default: the setup's) seeds the schedule after the
        warm-up (availability offset, selection walk); the split, the model, the minibatch
        streams and the warm-up run stay the setup's."""
        if label not in self.methods:
            raise ValueError(f"label: must be one of {', '.join(map(repr, self.methods))}; got {label!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                                 or seed < 0):
            raise ValueError(f"seed: must be a non-negative integer, got {seed!r}")
        algo, opts = self.methods[label]
        wait = algo.startswith("wait")
        rounds = horizon // self.cycle if wait and not self.stand_in else horizon
        return self.base().replace(algorithm=algo, algorithm_args={**opts, **extra}, rounds=max(rounds, 1),
                                   lr_local=float(lr), eval_every=1 if wait else self.eval_every,
                                   seed=self.seed if seed is None else int(seed), init_from=self.base())

    @property
    def grid_rates(self) -> list[float]:
        """The starting rates of the grid: the warm-up rate times each of :attr:`grid`."""
        return [float(f"{self.lr0 * g:.6g}") for g in self.grid]

    def grid_config(self, label: str, lr: float) -> ExperimentConfig:
        """Method ``label`` at rate ``lr`` over the grid's horizon, after the shared warm-up (at
        the setup's seed)."""
        return self.phase(label, self.grid_horizon, lr)

    def grid_configs(self) -> dict[ExperimentConfig, tuple[str, float]]:
        """Every method at every starting rate of the grid: config -> (method, rate)."""
        return {self.grid_config(label, r): (label, r) for label in self.methods for r in self.grid_rates}

    def late_window(self, df: pd.DataFrame, config: ExperimentConfig, metric: str = "loss") -> float:
        """The mean of ``metric`` over the last cycle of time of ``config``'s run in ``df`` (every
        evaluation at time >= horizon - cycle, a wait round charged a cycle; at least the last
        evaluation); NaN if the run diverged or failed. Averaging over a whole cycle keeps the
        availability's periodic swing out of the score."""
        t = self.timeline(df, {config.key(): "run"})
        if t.empty or (t["status"] != "ok").any():
            return float("nan")
        t = t.sort_values("time")
        end = float(t["time"].iloc[-1])
        tail = t[t["time"] >= end - self.cycle + (1 if end >= self.cycle else 0)]
        tail = tail if len(tail) else t.tail(1)
        return float(tail[metric].mean())

    def search_rates(self, compute: Callable[[list], pd.DataFrame],
                     max_extensions: int = 3) -> dict[str, GridSearch]:
        """Each method's rate: :func:`fedlib.analysis.search_log_grid` over :attr:`grid_rates`,
        scored by the late-window training loss (:meth:`late_window`) of a run over the grid's
        horizon (two cycles at the quick and paper profiles, so the score covers a whole cycle
        after the first amplification), extended by 10x past an edge; ``compute`` maps a list of
        configs to their :func:`fedlib.sweep` frame. Returns method label -> the search."""
        def evaluate(label: str):
            def scores(rates: list[float]) -> dict[float, float]:
                configs = [self.grid_config(label, r) for r in rates]
                df = compute(configs)
                return {r: self.late_window(df, c) for r, c in zip(rates, configs, strict=True)}
            return scores
        return {m: search_log_grid(evaluate(m), self.grid_rates, lower=True, max_extensions=max_extensions)
                for m in self.methods}

    def authors_rates(self) -> dict[str, float]:
        """Method label -> the rate of the authors' FashionMNIST runs (:data:`AUTHORS_RATES`)."""
        out = {}
        for label, (algo, opts) in self.methods.items():
            out[label] = AUTHORS_RATES[(algo, opts.get("gamma"))]
        return out

    def fig1_configs(self, rates: dict[str, float], seeds) -> dict[ExperimentConfig, tuple[int, str]]:
        """Fig. 1: every method at ``rates[label]`` over the horizon, per schedule seed after the
        shared warm-up: config -> (seed, method)."""
        missing = [m for m in self.methods if m not in rates]
        if missing:
            raise ValueError(f"rates: no rate for {', '.join(map(repr, missing))}")
        return {self.phase(m, self.horizon, rates[m], seed=k): (int(k), m)
                for k in seeds for m in self.methods}

    def fig2_configs(self, lr: float, seeds) -> dict[ExperimentConfig, tuple[int, int]]:
        """Fig. 2: amplification (eta = 10) with each P of :attr:`P_values` at rate ``lr``, per seed:
        config -> (seed, P)."""
        amp = next(m for m, (a, o) in self.methods.items() if a == "amplified_fedavg" and o["gamma"] != 1.0)
        return {self.phase(amp, self.horizon, lr, seed=k, P=int(P)): (int(k), int(P))
                for k in seeds for P in self.P_values}

    @staticmethod
    def timeline(df: pd.DataFrame, labels: dict) -> pd.DataFrame:
        """The runs of ``labels`` (key -> method label) on one time axis: rounds after the
        warm-up, a wait round charged as a cycle (``time``)."""
        out = df.assign(method=df["key"].map(labels)).dropna(subset=["method"])
        waited = out["waited_rounds"] if "waited_rounds" in out else np.nan
        out["time"] = np.where(out["algorithm"].str.startswith("wait"), waited, out["round"])
        return out


def amplified_setup(profile: str, seed: int = 0, stand_in_rounds: int = 0) -> AmplifiedSetup:
    """Wang & Ji's settings at ``profile``; ``stand_in_rounds > 0`` keeps the profile's structure on
    random data, every phase cut to that many rounds, one grid rate and P in {1, cycle}."""
    s = AmplifiedSetup(profile=check_profile(profile), seed=seed, **SETTINGS[profile])
    if stand_in_rounds:
        s = replace(s, warmup=stand_in_rounds, horizon=stand_in_rounds, grid_horizon=stand_in_rounds,
                    eval_every=stand_in_rounds, train_eval=2, grid=s.grid[:1], P_values=(1, s.cycle),
                    stand_in=stand_in_rounds)
    return s
