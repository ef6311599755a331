"""Algorithms that correct client drift or stale participation with stored vectors:
SCAFFOLD, MIFA, FedVARP, and FOCUS / SG-FOCUS (push-pull).

Each keeps per-client tables [N, p] and updates them only for the clients whose upload
arrives in the round (a failed upload leaves the client's entries untouched).

Example, SCAFFOLD counted as FedSUM counts it (one uplink vector), then FOCUS (``prob``: any problem, e.g.
``fedlib.problems.random_quadratic(num_clients=10, dim=5, seed=0)``)::

    fedlib.run("scaffold", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200, local_steps=5,
               lr_local=0.05, uplink_vectors=1)
    fedlib.run("focus", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200, local_steps=5, lr_local=0.05)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .base import Algorithm, register
from .options import Options, SolverOptions, one_of, option, positive
from .reweighting import contacted_average_factor, uniform_expected_weights


@dataclass(frozen=True)
class ScaffoldOptions(Options):
    """SCAFFOLD's options (see :class:`Scaffold`)."""

    uplink_vectors: int = option(2, *one_of(1, 2),
                                 doc="model units per upload: 2 (SCAFFOLD's, FOCUS's) or 1 (FedSUM's)")
    dy_divisor: float | None = option(None, *positive(none=True),
                                      doc="divide the sum of the arrivals' Delta y by this; None: their "
                                          "count (the mean, the paper)")


@register
class Scaffold(Algorithm):
    """SCAFFOLD, option II (Karimireddy et al. 2020, ICML, arXiv:1910.06378, Alg. 1).

    Client i: K steps y <- y - eta_l (g_i(y) - c_i + c); c_i+ = c_i - c + (x - y)/(K_i eta_l);
    sends Delta y = y - x and Delta c = c_i+ - c_i. Server: x <- x + eta_g mean_{i in S} Delta y_i;
    c <- c + (1/N) sum_{i in S} Delta c_i. c and c_i start at 0.
    Messages: 2 up, 2 down. Memory: server c [p]; clients c_i [p] each.

    Options:
        uplink_vectors: model units counted per upload, 2 (Delta y and Delta c: SCAFFOLD's and
            FOCUS's count, the default) or 1 (FedSUM's count: under option II the server can
            rebuild Delta c_i from Delta y_i, "single-variable uplink communication").
        dy_divisor: the server step x <- x + eta_g (1/dy_divisor) sum_{i in S} Delta y_i instead
            of the mean over the arrivals: the FOCUS authors' code (BichengYing/FedASL, ``server.py``,
            ``ScaffoldServer``) divides by its ``num_sample_clients`` argument (10 by default, 4 in
            their "uniform" runs) however many clients arrived, while it divides the control
            update by N as the paper does; default None, the mean, as in the paper.
    """

    name = "scaffold"
    description = "SCAFFOLD (option II): control variates against client drift"
    uplink = downlink = 2
    Options = ScaffoldOptions
    client_state = ("ci",)
    server_state = ("c",)

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.uplink = int(self.settings.uplink_vectors)         # the model units messages() counts
        self.c = torch.zeros_like(x0)

    def client_init(self, x0):
        return {"ci": torch.zeros_like(x0)}

    def downlink_message(self, x, r):
        return {"x": x, "c": self.c}

    def client_step(self, down, state, S, r):
        x, c, ci = down["x"], down["c"], state["ci"]
        K = r.local_steps[S].to(x.dtype)[:, None]
        res = self.local(x, S, r, r.lr_local, correction=c - ci)
        ci_new = ci - c + (x - res.X) / (K * r.lr_local)
        return {"dy": res.X - x, "dc": ci_new - ci}, {"ci": ci_new}

    def uplink_sent(self):
        return ("dy",) if self.uplink == 1 else None

    def rebuild_uplink(self, x, down, up, S, r):
        """Option II's Delta c_i from Delta y_i alone: -c - Delta y_i / (K_i eta_l) (equal to the
        client's own Delta c_i up to float rounding: the client subtracts c_i from c_i+)."""
        if "dc" in up:
            return up
        K = r.local_steps[S].to(x.dtype)[:, None]
        return {**up, "dc": -down["c"] - up["dy"] / (K * r.lr_local)}

    def server_step(self, x, up, S, r):
        if up is None:
            return x
        self.c = self.c + up["dc"].sum(0) / float(self.N)
        divisor = self.settings.dy_divisor
        step = up["dy"].mean(0) if divisor is None else up["dy"].sum(0) / float(divisor)
        return x + r.lr_global * step


@register
class MIFA(Algorithm):
    """MIFA (Gu et al. 2021): a server table U_n of every client's latest update, averaged
    over all N clients each round.

    U_n <- Delta_n / eta_l(t) for arriving clients (Delta_n = x_n^(t,K) - x^(t)); then
    x <- x + eta_g eta_l(t) (1/N) sum_n U_n. Storing Delta / eta_l and rescaling by the current
    eta_l is the paper's form for decaying rates; for a constant rate it is U_n <- Delta_n.
    Messages: 1 up, 1 down. Memory: server table U [N, p].
    """

    name = "mifa"
    description = "MIFA: average of every client's latest update (memory table)"
    server_state = ("U",)

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.U = self.client_table(x0)

    def round(self, x, r):
        S = r.delivered
        if len(S):
            self.U[S] = (self.local(x, S, r, r.lr_local).X - x) / r.lr_local
        return x + r.lr_global * r.lr_local * self.U.mean(0)


@register
class FedVARP(Algorithm):
    """FedVARP (Jhunjhunwala et al. 2022): SAGA-style server correction.

    ``v = ybar + (1/|S|) sum_{n in S} (Delta_n - y_n)``; x <- x + eta_g v; then y_n <- Delta_n for
    n in S and ybar = (1/N) sum_n y_n (all y_n start at 0). A round with no arriving update
    uses v = ybar. Options: momentum / prox_mu (the local solver, as FedAvg's). Messages: 1 up,
    1 down. Memory: server table y [N, p].
    """

    name = "fedvarp"
    description = "FedVARP: SAGA-style variance reduction over stale updates"
    Options = SolverOptions
    server_state = ("y",)

    # fedlib.theory's model: at a fixed point the server table holds every client's update at x_bar
    # and the fresh-minus-stored correction has mean zero, so W_i^t = 1/N for every client (App. I.2
    # eq. 115 as we read it: c-a-FedAvg's expected aggregate); its step factor is c-a-FedAvg's
    @staticmethod
    def theory_weights(m, **_):
        return np.full(m.shape, 1.0 / m.shape[1])

    theory_expected_weights = staticmethod(uniform_expected_weights)
    theory_step_factor = staticmethod(contacted_average_factor)

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.y = self.client_table(x0)

    def round(self, x, r):
        S = r.delivered
        ybar = self.y.mean(0)
        if len(S) == 0:
            return x + r.lr_global * ybar
        delta = self.local(x, S, r, r.lr_local).X - x
        v = ybar + (delta - self.y[S]).mean(0)
        self.y[S] = delta
        return x + r.lr_global * v


@register
class Focus(Algorithm):
    """FOCUS (Ying, Li & Yang 2025, arXiv:2503.20117; the rule of the authors' public code): push-pull.

    Server: x and a tracker y_s = 0 (never reset). Client i keeps g_prev_i (its last gradient).
    Round: every arriving client pulls x_i = x, y_i = 0 and for k = 0..K-1: if k > 0,
    x_i <- x_i - eta y_i; g <- grad f_i(x_i); y_i <- y_i + g - g_prev_i; g_prev_i <- g. It pushes
    y_i and the server sets y_s <- y_s + sum_i y_i, x <- x - eta_g eta y_s. A round with no
    arriving client does nothing.

    Because y_i telescopes to g_last - g_prev_i(old), the K - 1 local moves are plain local SGD
    with correction -g_prev_i(old), followed by one more gradient; y_s is the sum over clients
    of each one's latest gradient, so the effective step on f = (1/N) sum f_i is eta * N.
    "K local steps" are K gradient evaluations and K - 1 moves (as in the authors' code).
    ``lr_local`` is eta; ``lr_global`` (default 1) scales the server step.
    Messages: 1 up, 1 down. Memory: server y_s [p]; clients g_prev_i [p] each.
    """

    name = "focus"
    description = "FOCUS: push-pull gradient tracking, exact under arbitrary participation"
    client_state = ("gprev",)
    server_state = ("ys",)

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.ys = torch.zeros_like(x0)

    def client_init(self, x0):
        return {"gprev": torch.zeros_like(x0)}

    def downlink_message(self, x, r):
        return {"x": x}

    def client_step(self, down, state, S, r):
        x, old = down["x"], state["gprev"]
        K = r.local_steps[S]
        X = self.local(x, S, r, r.lr_local, correction=-old, steps=K - 1).X
        g_last = torch.empty_like(X)
        for k in torch.unique(K).tolist():        # one batched call per distinct step count
            rows = (K == k).nonzero().squeeze(1)
            g_last[rows] = self.problem.grads(X[rows], S[rows], r.t, k - 1)
        return {"dy": g_last - old}, {"gprev": g_last}       # the pushed y_i = g_last - g_prev_i(old)

    def server_step(self, x, up, S, r):
        if up is None:
            return x
        self.ys = self.ys + up["dy"].sum(0)
        return x - r.lr_global * r.lr_local * self.ys


@register
class SGFocus(Focus):
    """SG-FOCUS (Ying, Li & Yang 2025, App. F): FOCUS with one minibatch gradient per evaluation. In
    fedlib the problem supplies the stochasticity, so the update is FOCUS's; the separate
    name keeps the papers' labels in figures and tables. Messages: 1 up, 1 down. Memory: as FOCUS."""

    name = "sg_focus"
    description = "SG-FOCUS: FOCUS with stochastic (minibatch) gradients"
