"""Wang & Ji 2022 (notebook 08): the shared FedAvg warm-up under periodic availability and the
phases after it (amplification, no amplification, wait-minibatch, wait-full), per profile."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..config import ExperimentConfig
from ..notebook import check_profile

__all__ = ["AmplifiedSetup", "amplified_setup"]

#: per profile: data, model, N, availability window, warm-up, horizon and grid horizon (rounds),
#: evaluation interval, the P of Fig. 2, the grid's multiples of the warm-up rate, training-loss
#: samples per client (quick: MNIST standing in for FashionMNIST, time scaled down 5x)
SETTINGS = {
    "smoke": dict(dataset="digits", model="fedsum_mnist_cnn", num_clients=10, window=2, warmup=6,
                  horizon=8, grid_horizon=4, eval_every=2, P_values=(1, 5, 10), grid=(1.0, 0.1),
                  train_eval=10),
    "quick": dict(dataset="mnist", model="fedsum_mnist_cnn", num_clients=250, window=20, warmup=300,
                  horizon=300, grid_horizon=100, eval_every=20, P_values=(1, 20, 60, 100, 140, 180),
                  grid=(1.0, 0.1, 0.01, 0.001, 0.0001), train_eval=20),
    "paper": dict(dataset="fashion_mnist", model="wj_fmnist_cnn", num_clients=250, window=100,
                  warmup=2000, horizon=5000, grid_horizon=1000, eval_every=100,
                  P_values=(1, 100, 300, 500, 700, 900), grid=(1.0, 0.1, 0.01, 0.001, 0.0001),
                  train_eval=100),
}
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

    def phase(self, label: str, horizon: int, lr: float, **extra) -> ExperimentConfig:
        """Method ``label`` continuing the warm-up for ``horizon`` rounds of time (a wait round
        costs a cycle)."""
        algo, opts = self.methods[label]
        wait = algo.startswith("wait")
        rounds = horizon // self.cycle if wait and not self.stand_in else horizon
        return self.base().replace(algorithm=algo, algorithm_args={**opts, **extra}, rounds=max(rounds, 1),
                                   lr_local=lr, eval_every=1 if wait else self.eval_every,
                                   init_from=self.base())

    def grid_configs(self) -> dict[ExperimentConfig, tuple[str, float]]:
        """Every method at every rate of the grid over ``grid_horizon``: config -> (method, rate)."""
        return {self.phase(label, self.grid_horizon, self.lr0 * g): (label, self.lr0 * g)
                for label in self.methods for g in self.grid}

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
