"""FedAvg with two-sided learning rates (McMahan et al. 2017; Yang et al. 2021 for eta_g).

Example, FedAvg whose local solver is SGD with heavy-ball momentum 0.9 (``prob``: any problem, e.g.
``fedlib.problems.random_quadratic(num_clients=10, dim=5, seed=0)``)::

    fedlib.run("fedavg", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200, local_steps=5,
               lr_local=0.05, momentum=0.9)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .._validate import InputError
from .base import Algorithm, RoundInput, register
from .options import Options, SolverOptions, any_value, one_of, option
from .reweighting import arrival_share_factor


@dataclass(frozen=True)
class AggregationOptions(Options):
    """How FedAvg aggregates the arriving updates (see :class:`FedAvg`)."""

    aggregation: str = option("participants", *one_of("participants", "contacted", "all", "weights"),
                              doc="divide by the arrivals, the clients asked, N, or use given weights")
    weights: Any = option(None, *any_value("client weights [N] (given exactly when aggregation='weights')"),
                          doc="client weights w_i [N] for aggregation='weights'; None: not given")

    def _check_together(self) -> None:
        if (self.aggregation == "weights") != (self.weights is not None):
            raise InputError("weights: give client weights [N] exactly when aggregation='weights'")


@dataclass(frozen=True)
class FedAvgOptions(AggregationOptions, SolverOptions):
    """FedAvg's options: its aggregation and its local solver."""


@register
class FedAvg(Algorithm):
    """FedAvg: K local SGD steps with eta_l, then x <- x + eta_g * aggregate(Delta_i).

    Delta_i = x_i^(t,K) - x^(t) for every client whose upload arrives (a client drawn m times
    counts m times). ``aggregation`` chooses the convention:

    * ``"participants"`` (default): mean over the arriving updates, sum_i m_i Delta_i / sum_i m_i;
    * ``"contacted"``: divide by the clients asked, failed uploads included,
      sum_i m_i Delta_i / sum_{i contacted} m_i (FedACS's FedAvg, eq. 6 as we read it: an upload
      that fails counts as a zero update);
    * ``"all"``: divide by N, sum_i m_i Delta_i / N (unbiased under uniform sampling of S of N
      only after scaling eta_g by N/S);
    * ``"weights"``: sum_i m_i w_i Delta_i with given client weights ``weights`` [N].

    A round in which no update arrives leaves x unchanged. Options momentum / prox_mu pick a
    heavy-ball or FedProx local solver. Messages: 1 up, 1 down.
    Memory: none beyond the model.
    """

    name = "fedavg"
    description = "FedAvg, two-sided learning rates, K local SGD steps"
    Options = FedAvgOptions

    # fedlib.theory's model (FedACS's FedAvg): W_i^t = ok_i m_i / N, anonymous over the N contacted
    @staticmethod
    def theory_weights(m, **_):
        return m / m.shape[1]

    @staticmethod
    def theory_expected_weights(p, a, weights, **_):
        return p / len(p)

    @staticmethod
    def theory_step_factor(m, pt, at, d, asked, rng, mc_samples, fedavg_aggregation="contacted", **_):
        """s^t with D = the contacted m_i ("contacted"), N ("all"), or the arrivals ("participants",
        Monte Carlo)."""
        if fedavg_aggregation in ("contacted", "all"):
            return (m * pt * at).sum() / (asked if fedavg_aggregation == "contacted" else len(m))
        if fedavg_aggregation == "participants":
            return arrival_share_factor(m, pt, at, 1.0, rng, mc_samples)
        raise InputError(f"fedavg_aggregation: must be one of contacted, participants, all; "
                         f"got {fedavg_aggregation!r}")

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        if self.settings.aggregation == "weights":      # its value was checked with the options
            w = torch.as_tensor(self.settings.weights, dtype=x0.dtype, device=x0.device)
            if w.shape != (self.N,):
                raise InputError(f"weights: expected shape ({self.N},), got {tuple(w.shape)}")
            self.w = w

    def round(self, x: torch.Tensor, r: RoundInput) -> torch.Tensor:
        clients = r.delivered
        if len(clients) == 0:
            return x
        delta = self.local(x, clients, r, r.lr_local).X - x
        m = r.active[clients].to(x.dtype)
        aggregation = self.settings.aggregation
        if aggregation == "participants":
            coef = m / m.sum()
        elif aggregation == "contacted":
            coef = m / r.active[r.contacted].sum().to(x.dtype)
        elif aggregation == "all":
            coef = m / self.N
        else:
            coef = m * self.w[clients]
        return x + r.lr_global * coef @ delta
