"""The FedSUM family (fedsum.txt, Sec. 3): FedSUM-B (Alg. 1), FedSUM (Alg. 2), FedSUM-CR (Alg. 3).

State, as in the algorithm boxes: per-client control variables h_i [N, p] (the client's latest
aggregated gradient, eq. 5 / eq. 8), the server's y [p] (the SUM of the clients' latest
aggregated gradients, eq. 7), and for FedSUM-CR the last round a_i [N] and last received model
z_i [N, p] (eq. 10). All start at 0 (a_i = -1, z_i = x^(0)).

Server update of every member (line 13 / 14 / 15):
    y^(t) = y^(t-1) + sum_{i in S_t} delta_i^(t);   x^(t+1) = x^(t) - (eta_g eta_l K / N) y^(t).

S_t is the set of clients whose upload arrives (a failed upload leaves the client's state
untouched). With heterogeneous local steps K_i, a client normalises by its own K_i and the
server uses the schedule's mean K (equal to K when steps are constant).
"""

from __future__ import annotations

import torch

from .base import Algorithm, RoundInput, register


class _FedSUMBase(Algorithm):
    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.h = torch.zeros(self.N, x0.numel(), dtype=x0.dtype, device=x0.device)
        self.y = torch.zeros_like(x0)

    def _server(self, x, clients, delta, r: RoundInput):
        self.y = self.y + delta.sum(0)
        return x - (r.lr_global * r.lr_local * self.K / self.N) * self.y

    def _corrected_round(self, x, clients, y_i, r: RoundInput):
        """Lines 7-12 of Alg. 2 / 7-12 of Alg. 3 for all clients at once."""
        K_i = r.local_steps[clients].to(x.dtype)[:, None]
        res = self.local(x, clients, r, r.lr_local / self.N, correction=y_i)
        h_new = self.N * (x - res.X) / (r.lr_local * K_i) - y_i          # line 12
        delta = h_new - self.h[clients]                                    # line 11
        self.h[clients] = h_new
        return delta


@register
class FedSUMB(_FedSUMBase):
    """FedSUM-B (fedsum.txt Alg. 1): no local moves. Each active client takes K minibatch
    gradients at x^(t) (line 7), forms x_i^(t,1) = x^(t) - eta_l sum_k g_i^(t,k) (line 9),
    sends delta_i = (x^(t) - x_i^(t,1))/(eta_l K) - h_i (line 10) and sets
    h_i = (x^(t) - x_i^(t,1))/(eta_l K) (line 11, eq. 5). Messages: 1 up, 1 down.
    Memory: server y [p]; clients h_i [p] each."""

    name = "fedsum_b"
    description = "FedSUM-B (FedSUM Alg. 1): stochastic uplink-merge, no local updates"

    def round(self, x, r):
        clients = r.delivered
        if len(clients) == 0:
            return self._server(x, clients, torch.zeros(0, x.numel(), dtype=x.dtype), r)
        K_i = r.local_steps[clients].to(x.dtype)[:, None]
        res = self.local(x, clients, r, r.lr_local, fixed_point=True)
        h_new = (x - res.X) / (r.lr_local * K_i)
        delta = h_new - self.h[clients]
        self.h[clients] = h_new
        return self._server(x, clients, delta, r)


@register
class FedSUM(_FedSUMBase):
    """FedSUM (fedsum.txt Alg. 2). The server sends x^(t) and y^(t-1) (line 3); client i forms
    y_i = y^(t-1) - h_i (line 6, eq. 9), runs K steps x <- x - (eta_l/N)(g + y_i) (line 9),
    sends delta_i = N(x^(t) - x_i^(t,K))/(eta_l K) - y_i - h_i (line 11) and sets
    h_i = N(x^(t) - x_i^(t,K))/(eta_l K) - y_i (line 12). Messages: 1 up, 2 down.
    Memory: server y [p]; clients h_i [p] each."""

    name = "fedsum"
    description = "FedSUM (FedSUM Alg. 2): stochastic uplink-merge with corrected local steps"
    downlink = 2

    def round(self, x, r):
        clients = r.delivered
        if len(clients) == 0:
            return self._server(x, clients, torch.zeros(0, x.numel(), dtype=x.dtype), r)
        y_i = self.y.unsqueeze(0) - self.h[clients]
        return self._server(x, clients, self._corrected_round(x, clients, y_i, r), r)


@register
class FedSUMCR(_FedSUMBase):
    """FedSUM-CR (fedsum.txt Alg. 3). Only x^(t) goes down. Client i rebuilds its correction
    from its last round a_i and the model z_i it received then (line 6, eq. 11):
    y_i = N/(eta_g eta_l K) * (z_i - x^(t)) / (t - a_i) - h_i, then proceeds as FedSUM and sets
    a_i = t, z_i = x^(t) (line 12). Messages: 1 up, 1 down. Memory: server y [p]; clients
    h_i, z_i [p] each and a_i.

    The rebuilt direction averages y over rounds a_i..t-1 exactly only for a constant eta_l:
    with a decaying schedule the current eta_l(t) is used to undo steps taken with larger
    rates (the paper's analysis assumes a constant eta_l)."""

    name = "fedsum_cr"
    description = "FedSUM-CR (FedSUM Alg. 3): FedSUM with single-vector downlink"

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.a = torch.full((self.N,), -1, dtype=torch.long, device=x0.device)
        self.z = x0.expand(self.N, -1).clone()

    def round(self, x, r):
        clients = r.delivered
        if len(clients) == 0:
            return self._server(x, clients, torch.zeros(0, x.numel(), dtype=x.dtype), r)
        gap = (r.t - self.a[clients]).to(x.dtype)[:, None]
        scale = self.N / (r.lr_global * r.lr_local * self.K)
        y_i = scale * (self.z[clients] - x) / gap - self.h[clients]
        delta = self._corrected_round(x, clients, y_i, r)
        self.a[clients] = r.t
        self.z[clients] = x
        return self._server(x, clients, delta, r)
