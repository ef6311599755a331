"""The FedSUM family (You & Pu 2025, arXiv:2512.18275, Sec. 3): FedSUM-B (Alg. 1), FedSUM (Alg. 2),
FedSUM-CR (Alg. 3).

State, as in the algorithm boxes: per-client control variables h_i [N, p] (the client's latest
aggregated gradient, eq. 5 / eq. 8), the server's y [p] (the SUM of the clients' latest
aggregated gradients, eq. 7), and for FedSUM-CR the last round a_i [N] and last received model
z_i [N, p] (eq. 10). All start at 0 (a_i = -1, z_i = x^(0)).

Server update of every member (line 13 / 14 / 15):
    y^(t) = y^(t-1) + sum_{i in S_t} delta_i^(t);   x^(t+1) = x^(t) - (eta_g eta_l K / N) y^(t).

S_t is the set of clients whose upload arrives (a failed upload leaves the client's state
untouched). With heterogeneous local steps K_i, a client normalises by its own K_i and the
server uses the schedule's mean K (equal to K when steps are constant).

Example, FedSUM-CR with the exact rate sum of eq. 11 (``prob``: any problem, e.g.
``fedlib.problems.random_quadratic(num_clients=10, dim=5, seed=0)``)::

    fedlib.run("fedsum_cr", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200, local_steps=5,
               lr_local=0.05, rebuild="rate_sum")
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import Algorithm, RoundInput, register
from .options import Options, one_of, option


@dataclass(frozen=True)
class FedSUMCROptions(Options):
    """FedSUM-CR's options (see :class:`FedSUMCR`)."""

    rebuild: str = option("eq11", *one_of("eq11", "rate_sum"),
                          doc="the paper's eq. 11, or divide by the summed rates (exact for decaying eta_l)")


class _FedSUMBase(Algorithm):
    """Shared state and server step; a member supplies the clients' new h_i (:meth:`_new_h`).

    The round as its clients and its server run it: the server sends x^(t) (FedSUM: and
    y^(t-1)); a client whose upload arrives computes its new h_i, keeps it and sends
    delta_i = h_i^new - h_i; the server adds the deltas to y and steps."""

    client_state = ("h",)
    server_state = ("y",)

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.y = torch.zeros_like(x0)

    def client_init(self, x0):
        return {"h": torch.zeros_like(x0)}

    def downlink_message(self, x, r):
        return {"x": x}

    def client_step(self, down, state, S, r):
        h_new = self._new_h(down, state, S, r)
        return {"delta": h_new - state["h"]}, {**self._other_state(down, state, S, r), "h": h_new}

    def _other_state(self, down, state, S, r) -> dict:
        return {}

    def server_step(self, x, up, S, r):
        if up is not None:
            self.y = self.y + up["delta"].sum(0)                # y += sum_i delta_i
        return x - (r.lr_global * r.lr_local * self.K / self.N) * self.y

    def _new_h(self, down, state, S, r: RoundInput) -> torch.Tensor:
        raise NotImplementedError

    def _corrected_h(self, x, S, y_i, r: RoundInput):
        """Lines 7-12 of Alg. 2 / Alg. 3 for all clients at once: K steps of
        x <- x - (eta_l/N)(g + y_i), then h_i = N(x^(t) - x_i^(t,K))/(eta_l K_i) - y_i."""
        K_i = r.local_steps[S].to(x.dtype)[:, None]
        res = self.local(x, S, r, r.lr_local / self.N, correction=y_i)
        return self.N * (x - res.X) / (r.lr_local * K_i) - y_i


@register
class FedSUMB(_FedSUMBase):
    """FedSUM-B (You & Pu 2025, Alg. 1): no local moves. Each active client takes K minibatch
    gradients at x^(t) (line 7), forms x_i^(t,1) = x^(t) - eta_l sum_k g_i^(t,k) (line 9),
    sends delta_i = (x^(t) - x_i^(t,1))/(eta_l K) - h_i (line 10) and sets
    h_i = (x^(t) - x_i^(t,1))/(eta_l K) (line 11, eq. 5). Messages: 1 up, 1 down.
    Memory: server y [p]; clients h_i [p] each."""

    name = "fedsum_b"
    description = "FedSUM-B (FedSUM Alg. 1): stochastic uplink-merge, no local updates"

    def _new_h(self, down, state, S, r):
        x = down["x"]
        K_i = r.local_steps[S].to(x.dtype)[:, None]
        res = self.local(x, S, r, r.lr_local, grads_at_start=True)
        return (x - res.X) / (r.lr_local * K_i)


@register
class FedSUM(_FedSUMBase):
    """FedSUM (You & Pu 2025, Alg. 2). The server sends x^(t) and y^(t-1) (line 3); client i forms
    y_i = y^(t-1) - h_i (line 6, eq. 9), runs K steps x <- x - (eta_l/N)(g + y_i) (line 9),
    sends delta_i = N(x^(t) - x_i^(t,K))/(eta_l K) - y_i - h_i (line 11) and sets
    h_i = N(x^(t) - x_i^(t,K))/(eta_l K) - y_i (line 12). Messages: 1 up, 2 down.
    Memory: server y [p]; clients h_i [p] each."""

    name = "fedsum"
    description = "FedSUM (FedSUM Alg. 2): stochastic uplink-merge with corrected local steps"
    downlink = 2

    def downlink_message(self, x, r):
        return {"x": x, "y": self.y}

    def _new_h(self, down, state, S, r):
        return self._corrected_h(down["x"], S, down["y"].unsqueeze(0) - state["h"], r)


@register
class FedSUMCR(_FedSUMBase):
    """FedSUM-CR (You & Pu 2025, Alg. 3). Only x^(t) goes down. Client i rebuilds its correction
    from its last round a_i and the model z_i it received then (line 6, eq. 11):
    y_i = N/(eta_g eta_l K) * (z_i - x^(t)) / (t - a_i) - h_i, then proceeds as FedSUM and sets
    a_i = t, z_i = x^(t) (line 12). Messages: 1 up, 1 down. Memory: server y [p]; clients
    h_i, z_i [p] each and a_i.

    Option ``rebuild``: the rebuilt direction of eq. 11, (z_i - x^(t)) / ((t - a_i) eta_l(t)),
    is the average of the server's y over rounds a_i..t-1 only for a constant eta_l: with a
    decaying schedule the current eta_l(t) undoes steps taken with larger rates and
    over-weights y_i (by sqrt((t/10+1)/((t-g)/10+1)) for ``fedsum_sqrt`` and a client away g
    rounds). ``rebuild="eq11"`` (default) is the paper's formula; ``rebuild="rate_sum"``
    divides by sum_{s=a_i}^{t-1} eta_l(s) instead, the exact rate-weighted average (equal to
    eq. 11 for a constant rate; round a_i = -1, the paper's x^(-1) := x^(0), counts with
    eta_l(0))."""

    name = "fedsum_cr"
    description = "FedSUM-CR (FedSUM Alg. 3): FedSUM with single-vector downlink"
    Options = FedSUMCROptions
    client_state = ("h", "a", "z", "lr_sum_at")
    server_state = ("y", "lr_sum", "lr0")

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.lr_sum = 0.0                       # sum of eta_l(s) over the rounds s < t
        self.lr0 = None

    def client_init(self, x0):
        return {"h": torch.zeros_like(x0), "a": torch.tensor(-1, dtype=torch.long, device=x0.device),
                "z": x0.clone(),                 # ... and the sum of eta_l(s) over s < a_i
                "lr_sum_at": torch.tensor(0.0, dtype=torch.float64, device=x0.device)}

    def round(self, x, r):
        if self.lr0 is None:
            self.lr0 = float(r.lr_local)
        x_new = super().round(x, r)
        self.lr_sum += float(r.lr_local)
        return x_new

    def downlink_message(self, x, r):
        return {"x": x, "lr_sum": self.lr_sum, "lr0": self.lr0}

    def _new_h(self, down, state, S, r):
        x = down["x"]
        if self.settings.rebuild == "eq11":
            gap = (r.t - state["a"]).to(x.dtype)[:, None]
            y_i = self.N / (r.lr_global * r.lr_local * self.K) * (state["z"] - x) / gap - state["h"]
        else:
            never = state["a"] < 0
            rates = torch.where(never, down["lr_sum"] + down["lr0"], down["lr_sum"] - state["lr_sum_at"])
            y_i = self.N / (r.lr_global * self.K) * (state["z"] - x) / rates.to(x.dtype)[:, None] - state["h"]
        return self._corrected_h(x, S, y_i, r)

    def _other_state(self, down, state, S, r):
        n = len(S)
        return {"a": torch.full_like(state["a"], r.t), "z": down["x"].expand(n, -1).clone(),
                "lr_sum_at": torch.full_like(state["lr_sum_at"], down["lr_sum"])}
