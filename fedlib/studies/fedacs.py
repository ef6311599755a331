"""FedACS Sec. 6 / App. I (notebook 07): its environments (static and dynamic heterogeneity of
local work and uplinks), the methods with App. I.2's step-length calibration, per profile."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .. import theory
from ..config import ExperimentConfig
from ..notebook import check_profile
from ..store import Store

__all__ = ["DATASETS", "METHODS", "FedAcsSetup", "fedacs_setup"]

#: per profile: datasets of Figs. 6 / 9, N, clients asked per round, rounds, Fig. 10's rounds and
#: alphas, training / test evaluation sizes, base local rate (the text lost most of these numbers:
#: our choices, stated in the notebook's settings table)
SETTINGS = {
    "smoke": dict(datasets=("digits",), num_clients=10, per_round=4, rounds=4, alpha_rounds=3, alphas=(0.5,),
                  train_eval=10, test_eval=None, lr=0.05),
    "quick": dict(datasets=("mnist",), num_clients=100, per_round=10, rounds=200, alpha_rounds=60,
                  alphas=(0.1,), train_eval=10, test_eval=2000, lr=0.05),
    "paper": dict(datasets=("mnist", "cifar10", "cinic10"), num_clients=100, per_round=10, rounds=200,
                  alpha_rounds=200, alphas=(0.1, 0.5, 1.0), train_eval=100, test_eval=None, lr=0.05),
}
#: dataset -> (model, batch, partition of Sec. 6, target accuracy, label)
DATASETS = {
    "digits": ("fedsum_mnist_cnn", 64, {"partition": "one_class"}, 0.5, "digits (smoke test)"),
    "mnist": ("fedsum_mnist_cnn", 512, {"partition": "one_class"}, 0.70, "MNIST"),
    "cifar10": ("fedsum_cifar10_cnn", 1024, {"partition": "dirichlet", "alpha": 0.5}, 0.40, "CIFAR-10"),
    "cinic10": ("fedsum_cifar10_cnn", 1024, {"partition": "dirichlet", "alpha": 0.5}, 0.35, "CINIC-10"),
}
_ALPHA_DATASET = {"smoke": "digits", "quick": "mnist", "paper": "cifar10"}
#: Table 4 (right): targets per alpha, in the order of the alphas
_ALPHA_TARGETS = {"cifar10": (0.35, 0.35, 0.40)}
#: the weak and the strong half: local epochs and upload-success probability ranges
WEAK, STRONG = {"epochs": (1, 2), "p": (0.2, 0.5)}, {"epochs": (2, 4), "p": (0.6, 1.0)}


def _methods(per_round: int) -> dict[str, tuple[str, dict, str]]:
    """Label -> (algorithm, options, environment kind): FedACS chooses among all available clients."""
    return {"FedACS": ("fedacs", {"draws": per_round}, "full"),
            "FedAvg": ("fedavg", {"aggregation": "contacted"}, "uniform"),
            "c-a-FedAvg": ("ca_fedavg", {}, "uniform"),
            "FedVARP": ("fedvarp", {}, "uniform"),
            "FedNova": ("fednova", {}, "uniform"),
            "FedAU": ("fedau", {}, "uniform"),
            "OS": ("os_sampling", {"budget": per_round // 2}, "uniform")}


METHODS = tuple(_methods(10))


@dataclass(frozen=True)
class FedAcsSetup:
    """FedACS's experiments at one profile (see :data:`SETTINGS`)."""

    profile: str
    datasets: tuple
    num_clients: int
    per_round: int
    rounds: int
    alpha_rounds: int
    alphas: tuple
    train_eval: int
    test_eval: int | None
    lr: float
    seed: int = 0
    stand_in: int = 0
    methods: dict = field(default_factory=dict)

    @property
    def alpha_dataset(self) -> str:
        """The dataset of Fig. 10 (the first dataset on stand-ins or where it is missing)."""
        ds = _ALPHA_DATASET[self.profile]
        return ds if ds in self.datasets else self.datasets[0]

    def problem_args(self, ds: str, split: dict) -> dict:
        model, batch = DATASETS[ds][:2]
        synthetic = {}
        if self.stand_in:
            synthetic = {"synthetic": True, "synthetic_sizes": [40 * self.num_clients, 200]}
        args = {"dataset": ds, "model": model, "num_clients": self.num_clients, "batch_size": batch,
                "train_eval_per_client": self.train_eval, "seed": self.seed, **split, **synthetic}
        if self.test_eval is not None:
            args["test_eval_size"] = self.test_eval
        return args

    def client_sizes(self, ds: str, split: dict, store: Store) -> np.ndarray:
        """n_i of the split, computed from the data once and kept beside the store's runs."""
        tag = "_".join(f"{k}{v}" for k, v in sorted(split.items()))

        def sizes() -> pd.DataFrame:
            probe = ExperimentConfig(algorithm="fedavg", problem="neural", participation="full", rounds=1,
                                     problem_args=self.problem_args(ds, split))
            return pd.DataFrame({"n": probe.build_problem().sizes.numpy().astype(int)}).rename_axis("client")
        return store.derived_table(f"client_sizes_{ds}_{tag}_seed{self.seed}", sizes)["n"].to_numpy()

    def weak_half(self, split: dict) -> np.ndarray:
        """True for the clients of the weak half: on one-class splits the clients of digits 0-4
        (client i holds digit i mod 10), else the first half."""
        n = self.num_clients
        if split["partition"] == "one_class":
            return (np.arange(n) % 10) < 5
        return np.arange(n) < n // 2

    def environment(self, setting: str, weak: np.ndarray) -> dict:
        """participation_args of the static or the dynamic setting (App. I.3.1, our ranges)."""
        ep = np.where(weak[:, None], WEAK["epochs"], STRONG["epochs"])
        pr = np.where(weak[:, None], WEAK["p"], STRONG["p"])
        if setting == "dynamic":
            return {"local_epochs_range": ep.tolist(), "uplink_p_range": pr.tolist()}
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 0xAC5]))
        epochs = rng.integers(ep[:, 0], ep[:, 1] + 1)
        p = rng.uniform(pr[:, 0], pr[:, 1]).round(4)
        return {"local_epochs": epochs.tolist(), "uplink_p": p.tolist()}

    def experiment(self, ds: str, split: dict, setting: str, rounds: int,
                   store: Store) -> tuple[dict, pd.DataFrame]:
        """Configs {label: config} of every method in one environment, and their calibrated rates."""
        sizes = self.client_sizes(ds, split, store)
        env = {**self.environment(setting, self.weak_half(split)), "client_sizes": sizes.tolist(),
               "batch_size": DATASETS[ds][1]}
        base = ExperimentConfig(algorithm="fedavg", problem="neural", participation="uniform", rounds=rounds,
                                problem_args=self.problem_args(ds, split), lr_local=self.lr, lr_global=1.0,
                                eval_every=1, seed=self.seed)
        kinds = {"uniform": {**env, "per_round": self.per_round}, "full": env}
        n = self.num_clients
        scheds = {k: base.replace(participation=k, participation_args=a).schedule(num_clients=n)
                  for k, a in kinds.items()}
        algos = tuple(a for a, _, _ in self.methods.values())
        rates = theory.calibrated_rates(self.lr, scheds["uniform"], algos,
                                        schedules={"fedacs": scheds["full"]}, weights=sizes / sizes.sum())
        configs = {m: base.replace(algorithm=a, algorithm_args=o, participation=k,
                                   participation_args=kinds[k], lr_local=round(rates[a], 6))
                   for m, (a, o, k) in self.methods.items()}
        table = pd.DataFrame({"method": list(self.methods), "learning rate": [configs[m].lr_local
                                                                             for m in self.methods]})
        alpha = f", alpha {split.get('alpha')}" if split["partition"] == "dirichlet" else ""
        table.insert(0, "setting", f"{DATASETS[ds][4]}, {setting}{alpha}")
        return configs, table

    def experiments(self, store: Store) -> tuple[dict, pd.DataFrame]:
        """Every environment: {(dataset, setting, alpha or None): {label: config}} (Figs. 6, 9, 10) and
        the calibrated rates of all of them."""
        out, tables = {}, []
        for ds in self.datasets:
            for setting in ("dynamic", "static"):
                out[ds, setting, None], t = self.experiment(ds, DATASETS[ds][2], setting, self.rounds, store)
                tables.append(t)
        if _ALPHA_DATASET[self.profile] in self.datasets or self.stand_in:
            for alpha in self.alphas:
                ds = self.alpha_dataset
                out[ds, "dynamic", alpha], t = self.experiment(ds, {"partition": "dirichlet", "alpha": alpha},
                                                               "dynamic", self.alpha_rounds, store)
                tables.append(t)
        return out, pd.concat(tables, ignore_index=True)

    def env_name(self, key: tuple) -> str:
        """'MNIST, dynamic', or for Fig. 10 'MNIST (for CIFAR-10), alpha 0.1' where MNIST stands in."""
        ds, setting, alpha = key
        if alpha is None:
            return f"{DATASETS[ds][4]}, {setting}"
        return DATASETS[ds][4] + (" (for CIFAR-10)" if ds != "cifar10" else "") + f", alpha {alpha}"

    def target(self, key: tuple) -> float:
        """The target accuracy of an environment (Tables 1 and 4)."""
        ds, _, alpha = key
        if alpha is None:
            return DATASETS[ds][3]
        return _ALPHA_TARGETS.get(ds, (DATASETS[ds][3],) * len(self.alphas))[list(self.alphas).index(alpha)]


def fedacs_setup(profile: str, seed: int = 0, stand_in_rounds: int = 0) -> FedAcsSetup:
    """FedACS's settings at ``profile``; ``stand_in_rounds > 0`` keeps the profile's structure on
    random data, every run cut to that many rounds, the first dataset only."""
    s = FedAcsSetup(profile=check_profile(profile), seed=seed, **SETTINGS[profile])
    s = replace(s, methods=_methods(s.per_round))
    if stand_in_rounds:
        s = replace(s, rounds=stand_in_rounds, alpha_rounds=stand_in_rounds, train_eval=2,
                    datasets=s.datasets[:1], stand_in=stand_in_rounds)
    return s
