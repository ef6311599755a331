"""FedACS App. C's quadratic model (notebook 06): closed-form fixed points of each aggregation
next to the end points of simulated runs, in the static and the dynamic environment (Weng, Ren,
Xiao & Skoglund 2025, arXiv:2505.11304, App. C)."""

from __future__ import annotations

import numpy as np

from .. import theory
from ..participation import build
from ..problems import Quadratic
from ..runner import run
from . import methods

__all__ = ["TOY_METHODS", "TOY_SOLVERS", "Toy"]

#: local solvers of the toy: label -> options
TOY_SOLVERS = {"SGD": {}, "momentum 0.5": {"momentum": 0.5}, "prox mu=0.1": {"prox_mu": 0.1},
               "prox mu=1": {"prox_mu": 1.0}}
#: the toy's methods, label -> algorithm (from the catalogue, :mod:`fedlib.studies.methods`)
TOY_METHODS = methods.algorithms(["FedAvg", "c-a-FedAvg", "FedVARP", "FedAU", "FedNova", "FedACS"])


class Toy:
    """FedACS App. C's model: N quadratics f_i = 1/2 (x - c_i)^T A_i (x - c_i) with optima on a
    circle (d = 2), upload probabilities p_i from 0.2 to 1, local steps tau_i from N down to 1;
    the static environment keeps them, the dynamic one redraws p_i^t (+-0.15) and tau_i^t
    (+-2) every round. Everyone is asked every round (kind ``full``)."""

    #: rounds of the simulated runs per profile (their second half is averaged)
    ROUNDS = {"quick": 1500, "paper": 6000}

    def __init__(self, num_clients: int = 10, dim: int = 2, lr: float = 0.02, draws: int = 10,
                 seed: int = 0, rounds: int | None = None, profile: str = "quick"):
        if profile not in self.ROUNDS:
            raise ValueError(f"profile: must be one of {sorted(self.ROUNDS)}, got {profile!r}")
        rounds = self.ROUNDS[profile] if rounds is None else rounds
        self.N, self.dim, self.lr, self.draws = num_clients, dim, lr, draws
        self.seed, self.rounds = seed, rounds
        rng = np.random.default_rng(seed)
        n = num_clients
        angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
        self.c = np.stack([np.cos(angles), np.sin(angles)], 1) * 2.0 + rng.normal(0, 0.3, (n, dim))
        self.A = np.stack([np.diag(rng.uniform(0.5, 2.0, dim)) for _ in range(n)])
        self.prob = Quadratic(self.A, self.c)
        self.d = self.prob.weights.numpy()
        self.x_star = self.prob.optimum().numpy()
        self.p_up = np.linspace(0.2, 1.0, n)
        self.tau = np.arange(1, n + 1)[::-1].copy()
        self.tau_range = np.stack([np.maximum(self.tau - 2, 1), self.tau + 2], 1)
        self.p_dyn = np.clip(self.p_up[None, :] + rng.uniform(-0.15, 0.15, (rounds, n)), 0.05, 1.0)

    def environment(self, kind: str):
        """(schedule, upload probabilities) of the ``static`` or the ``dynamic`` environment."""
        if kind == "static":
            return build("full", self.N, self.rounds, seed=self.seed, uplink_p=self.p_up,
                         local_steps=self.tau), self.p_up
        return build("full", self.N, self.rounds, seed=self.seed, uplink_p=self.p_dyn,
                     local_steps_range=self.tau_range), self.p_dyn

    def method_options(self, method: str, p, solver: str = "SGD") -> dict:
        """fedlib.run options of a method in an environment with upload probabilities p."""
        opts = dict(TOY_SOLVERS[solver])
        if method == "fedavg":
            opts["aggregation"] = "all"                     # anonymous: divide by the N asked
        if method in ("ca_fedavg", "fedacs"):
            opts["uplink_p"] = p
        if method == "fedacs":
            opts["draws"] = self.draws
        return opts

    def evaluate(self, env_kind: str, method: str, solver: str, progress: bool = False):
        """(closed-form fixed point, mean iterate over the second half of a simulated run)."""
        env, p = self.environment(env_kind)
        acc = []
        res = run(method, self.prob, env, lr_local=self.lr, progress=progress, eval_every=self.rounds,
                  callback=lambda t, x: acc.append(x.numpy().copy()) if t >= self.rounds // 2 else None,
                  **self.method_options(method, p, solver))
        W = theory.aggregation_weights(method, res.schedule, p, self.lr, self.d, draws=self.draws,
                                       **TOY_SOLVERS[solver])
        xbar = theory.fixed_point(self.A, self.c, W, res.schedule, self.lr, **TOY_SOLVERS[solver])
        return xbar, np.mean(acc, axis=0)

    def single_source(self, source: str, method: str, eta: float) -> float:
        """Distance to x* of the closed-form fixed point with exact expected weights when only one
        source of inconsistency acts: ``communication`` (p_i, tau = 5) or ``computation`` (tau_i, p = 1)."""
        n = self.N
        p, steps = (self.p_up, np.full(n, 5)) if source == "communication" else (np.ones(n), self.tau)
        w = theory.expected_weights(method, p, steps, eta, self.d, seed=self.seed)
        return float(np.linalg.norm(theory.fixed_point_static(self.A, self.c, w, steps, eta) - self.x_star))


from .._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
