"""Generalized FedAvg with amplified updates and the wait-for-all baselines
(Wang & Ji 2022, NeurIPS, arXiv:2205.13648, Alg. 1 and Secs. 5-6).

Example, Wang & Ji's amplification every P = 10 rounds by gamma = 2 (``prob``: any problem, e.g.
``fedlib.problems.random_quadratic(num_clients=10, dim=5, seed=0)``)::

    fedlib.run("amplified_fedavg", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200, local_steps=5,
               lr_local=0.05, P=10, gamma=2.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..participation import Schedule
from .base import register
from .fedavg import AggregationOptions, FedAvg, FedAvgOptions
from .options import int_at_least, option, positive


@dataclass(frozen=True)
class AmplifiedOptions(FedAvgOptions):
    """Generalized FedAvg's options: FedAvg's, and the amplification (Wang & Ji 2022, Alg. 1)."""

    P: int = option(1, *int_at_least(1), doc="rounds between amplifications (P = 1 with gamma = 1 is FedAvg)")
    gamma: float = option(1.0, *positive(),
                          doc="amplification factor of the update accumulated over P rounds")


@dataclass(frozen=True)
class WaitOptions(AggregationOptions):
    """The wait-for-all baselines' options: FedAvg's aggregation and the waiting cost."""

    cycle: int = option(1, *int_at_least(1),
                        doc="rounds of wall-clock waiting one round costs (500 in the paper: a full period)")


@register
class AmplifiedFedAvg(FedAvg):
    """Generalized FedAvg with amplification (Wang & Ji 2022, arXiv:2205.13648, Alg. 1).

    Every round is a FedAvg round (mean of the arriving updates, scaled by eta_g). Every P
    rounds the model accumulated since the last amplification is amplified:
    x <- x_prev + gamma (x - x_prev), x_prev <- x. P = 1, gamma = 1 is FedAvg.

    Options: P (default 1), gamma (default 1), and FedAvg's aggregation options.
    Messages: 1 up, 1 down. Memory: server x_prev [p].
    """

    name = "amplified_fedavg"
    description = "generalized FedAvg: amplify the update accumulated over P rounds by gamma"
    Options = AmplifiedOptions
    server_state = ("x_prev", "count")

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.x_prev, self.count = x0.clone(), 0

    def round(self, x, r):
        x = super().round(x, r)
        self.count += 1
        if self.count % self.settings.P == 0:
            x = self.x_prev + float(self.settings.gamma) * (x - self.x_prev)
            self.x_prev = x.clone()
        return x


@register
class WaitMinibatch(FedAvg):
    """Wait-for-all baseline with minibatch local steps (Wang & Ji 2022, Secs. 5-6): the
    server waits until every client has been available, so each round uses all N clients,
    and one such round costs ``cycle`` rounds of wall-clock waiting (500 in the paper:
    a full period of the availability pattern). The history column ``waited_rounds`` counts
    that cost. Uploads always succeed.

    Options: cycle (default 1) and FedAvg's aggregation options. Messages: N up, N down per
    round. Memory: none beyond the model.
    """

    name = "wait_minibatch"
    description = "wait for all clients each round (minibatch steps); cost in waited rounds"
    Options = WaitOptions
    server_state = ("rounds_done",)
    full_batch = False

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.rounds_done = 0

    def prepare_schedule(self, schedule, seed, lr_local):
        ones = np.ones_like(schedule.active)
        return Schedule(ones, ones.astype(bool), schedule.local_steps,
                        {"kind": f"{self.name}", "environment": schedule.spec})

    def local(self, x_start, clients, r, lr, correction=None, grads_at_start=False, steps=None, **solver):
        return super().local(x_start, clients, r, lr, correction, grads_at_start, steps,
                             full_batch=self.full_batch, **solver)

    def round(self, x, r):
        self.rounds_done += 1
        return super().round(x, r)

    def extra_metrics(self):
        return {"waited_rounds": self.rounds_done * self.settings.cycle}


@register
class WaitFull(WaitMinibatch):
    """As ``wait_minibatch``, but every local step uses the client's whole dataset (full local
    gradients; Wang & Ji 2022's "wait-full")."""

    name = "wait_full"
    description = "wait for all clients each round (full-batch steps); cost in waited rounds"
    full_batch = True


__all__ = ["AmplifiedFedAvg", "AmplifiedOptions", "WaitFull", "WaitMinibatch", "WaitOptions"]


from .._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
