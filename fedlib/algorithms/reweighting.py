"""FedAvg variants that reweight or normalise client updates: FedAU, FedAWE, FedNova,
communication-aware FedAvg and FedAvg with known participation probabilities.

Example, FedAU recording an absence of 50 rounds as an interval (its K) (``prob``: any problem, e.g.
``fedlib.problems.random_quadratic(num_clients=10, dim=5, seed=0)``)::

    fedlib.run("fedau", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200, local_steps=5,
               lr_local=0.05, cutoff=50)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._validate import InputError, prob_matrix, warn
from .base import Algorithm, register
from .options import Options, SolverOptions, any_value, int_at_least, one_of, option, positive


@dataclass(frozen=True)
class FedAUOptions(SolverOptions):
    """FedAU's options: the interval cutoff and the local solver."""

    cutoff: int = option(50, *int_at_least(1),
                         doc="K of the paper: an absence this long is recorded as an interval")


@dataclass(frozen=True)
class FedAWEOptions(Options):
    """FedAWE's options (see :class:`FedAWE`)."""

    clip: float | None = option(None, *positive(none=True),
                                doc="clip the averaged echo's norm (the authors' code: 0.5); None: no clip")
    evaluate: str = option("server", *one_of("server", "mean_of_copies"),
                           doc="evaluate the server's x, or the mean of the clients' copies (authors' code)")


#: a probability table the server is assumed to know (checked against the schedule when it runs)
_PROBS = any_value("a probability: scalar, [N], [rounds, N] or a callable (checked against the schedule)")


@dataclass(frozen=True)
class KnownPOptions(Options):
    """FedAvg-known-p's option."""

    p: Any = option(None, *_PROBS, doc="the participation probabilities; None: the schedule's (or observed)")


@dataclass(frozen=True)
class UplinkPOptions(SolverOptions):
    """c-a-FedAvg's options: the upload success probabilities and the local solver."""

    uplink_p: Any = option(None, *_PROBS,
                           doc="the upload success probabilities; None: the schedule's (or observed)")


def known_probs(settings, key: str, schedule) -> np.ndarray:
    """Probabilities [T, N] the server is assumed to know, for ``key`` = ``"p"`` (participation)
    or ``"uplink_p"`` (upload success): the option ``key`` of ``settings`` (an algorithm's typed
    options; scalar, [N], [T, N] or callable) when given (not None); else the schedule's own true
    probabilities (``Schedule.probs`` / ``Schedule.uplink_probs``; uploads without an uplink model
    always succeed); else -- for kinds that define no probability (cyclic, periodic, traces, ...)
    -- the frequencies observed in the schedule, with a warning that says so (an oracle estimate)."""
    val = getattr(settings, key)
    if val is None:
        true = schedule.probs if key == "p" else schedule.uplink_probs
        if true is not None:
            return np.array(true, dtype=float)
        if key == "uplink_p":
            return np.ones((schedule.num_rounds, schedule.num_clients))
        warn(f"p: participation kind {schedule.kind!r} defines no probabilities; the known-p "
             "baseline uses each client's observed participation frequency (pass p= to set them)")
        freq = (schedule.active > 0).sum(0) / schedule.num_rounds
        val = np.clip(freq, 1e-12, 1)
    return np.array(prob_matrix(key, val, schedule.num_rounds, schedule.num_clients))


def arrival_share_factor(m: np.ndarray, pt: np.ndarray, at: np.ndarray, weights: np.ndarray,
                         rng: np.random.Generator, mc_samples: int) -> float:
    """E[sum_i share_i ||a_i||_1] over ``mc_samples`` seeded upload patterns (success
    probabilities ``pt``), with share_i the weight of client i among the arrivals (``weights``
    times the asked counts ``m``): the step factor of an average over the arrivals (theory)."""
    ok = rng.random((mc_samples, len(m))) < pt
    w = ok * m * weights
    tot = w.sum(1, keepdims=True)
    share = np.divide(w, tot, out=np.zeros_like(w), where=tot > 0)
    return float((share * at).sum(1).mean())


def uniform_expected_weights(p, a, weights, **_):
    """E[W_i] = 1/N: the division by p_i cancels upload failures on average (theory)."""
    return np.full(len(p), 1.0 / len(p))


def contacted_average_factor(m, pt, at, d, asked, **_):
    """``s^t = sum_i m_i ||a_i||_1 / |asked|``: updates divided by p_i, averaged over the asked (theory)."""
    return (m * at).sum() / asked


@register
class FedAU(Algorithm):
    """FedAU (Wang & Ji 2023, arXiv:2306.03401; as in the authors' public code, IBM/fedau main.py).

    Each client tracks S_n (rounds since it last took part) and its participation intervals.
    Arriving client: omega_n = mean of intervals recorded before this round (1 if none),
    c_n = omega_n Delta_n, record S_n + 1, reset S_n. Absent client: S_n += 1, and when
    S_n reaches ``cutoff`` the interval S_n is recorded and S_n reset. Server:
    x <- x + eta_g (1/N) sum_n c_n (divides by N, not ``|S_t|``).

    Options: cutoff (K of the paper, default 50). Messages: 1 up, 1 down.
    Memory: per client two scalars and a running interval sum/count (no vectors).
    """

    name = "fedau"
    description = "FedAU: weights updates by online estimates of participation intervals"

    # fedlib.theory's model: W_i^t = ok_i m_i omega_i / N with omega_i = 1/p_i, the limit of its
    # interval estimates; E[W_i] = 1/N (App. I.2 leaves FedAU's rate uncalibrated: no step factor)
    @staticmethod
    def theory_weights(m, uplink_p, **_):
        return m / (uplink_p * m.shape[1])

    theory_expected_weights = staticmethod(uniform_expected_weights)
    Options = FedAUOptions
    server_state = ("since", "isum", "icnt")

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        dev = x0.device
        self.since = torch.zeros(self.N, dtype=torch.long, device=dev)
        self.isum = torch.zeros(self.N, dtype=torch.float64, device=dev)
        self.icnt = torch.zeros(self.N, dtype=torch.long, device=dev)

    def interval_estimates(self) -> torch.Tensor:
        """Current omega_n (mean recorded interval, 1 where none): estimates of 1/p_n."""
        return torch.where(self.icnt > 0, self.isum / self.icnt.clamp(min=1), torch.ones_like(self.isum))

    def round(self, x, r):
        on = torch.zeros(self.N, dtype=torch.bool, device=x.device)
        S = r.delivered
        on[S] = True
        omega = self.interval_estimates().to(x.dtype)
        new_x = x
        if len(S):
            delta = self.local(x, S, r, r.lr_local).X - x
            new_x = x + r.lr_global * (omega[S, None] * delta).sum(0) / self.N
        self.isum[on] += (self.since[on] + 1).to(torch.float64)
        self.icnt[on] += 1
        self.since[on] = 0
        self.since[~on] += 1
        cut = (~on) & (self.since >= self.settings.cutoff)
        self.isum[cut] += self.since[cut].to(torch.float64)
        self.icnt[cut] += 1
        self.since[cut] = 0
        return new_x


@register
class FedAWE(Algorithm):
    """FedAWE (Xiang et al. 2024; as in the authors' public code, mingxiang12/FedAWE).

    Every client keeps its own (possibly stale) copy x_i (initially x^(0)) and the round tau_i
    it last took part (initially -1). Arriving client i starts from x_i, runs K SGD steps,
    G_i = x_i - x_i^(t,K), and echoes the innovation: x_i^dagger = x_i - eta_g (t - tau_i) G_i;
    tau_i <- t. Server: x^(t+1) = mean_{i in A_t} x_i^dagger and x_i <- x^(t+1) for i in A_t.
    A round with no arriving client leaves x unchanged.

    Options:
        clip (default None): clip the norm of the averaged echo mean_i (t - tau_i) G_i to this
            value before eta_g multiplies it (the authors' code uses 0.5).
        evaluate (default ``"server"``): the model the history evaluates: the server's
            x^(t+1), or ``"mean_of_copies"``, the mean of all N clients' copies x_i, as the
            authors' code evaluates (stale copies of absent clients included).
    Messages: 1 up, 1 down. Memory: clients x_i [p] each (kept by the clients).
    """

    name = "fedawe"
    description = "FedAWE: adaptive innovation echoing from stale client copies"
    Options = FedAWEOptions
    server_state = ("xi", "tau")            # the clients' copies, kept in tables

    def init(self, x0, nominal_steps):
        super().init(x0, nominal_steps)
        self.xi = self.client_table(x0, copies=True)
        self.tau = torch.full((self.N,), -1, dtype=torch.long, device=x0.device)

    def eval_params(self, x):
        return self.xi.mean(0) if self.settings.evaluate == "mean_of_copies" else x

    def round(self, x, r):
        A = r.delivered
        if len(A) == 0:
            return x
        start = self.xi[A]
        G = start - self.local(start, A, r, r.lr_local).X
        echo = ((r.t - self.tau[A]).to(x.dtype)[:, None] * G).mean(0)
        clip = self.settings.clip
        if clip is not None:
            norm = float(torch.linalg.vector_norm(echo))
            if norm > clip:
                echo = echo * (clip / norm)
        new_x = start.mean(0) - r.lr_global * echo
        self.tau[A] = r.t
        self.xi[A] = new_x
        return new_x


def nova_normaliser(steps: torch.Tensor, lr: float, momentum: float = 0.0,
                    prox_mu: float = 0.0) -> torch.Tensor:
    """FedNova's ||a_i||_1 for tau_i local steps (Wang et al. 2020, Sec. 5): tau for SGD;
    sum_k (1 - rho^(k+1)) / (1 - rho) with momentum rho; sum_k (1 - eta mu)^k with a proximal
    term mu."""
    if momentum and prox_mu:
        raise InputError("momentum / prox_mu: choose one local solver, not both")
    steps = steps.to(torch.float64)
    if momentum:
        rho = momentum
        return (steps - rho * (1 - rho ** steps) / (1 - rho)) / (1 - rho)
    if prox_mu:
        q = 1 - lr * prox_mu
        return (1 - q ** steps) / (1 - q) if q != 1 else steps
    return steps


@register
class FedNova(Algorithm):
    """FedNova (Wang et al. 2020, NeurIPS, arXiv:2007.07481; as in the authors' public code, JYWa/FedNova).

    Arriving client i runs tau_i local steps of its solver and sends Delta_i = x - x_i^(t,tau_i)
    with its normaliser a_i (:func:`nova_normaliser`). With p_i the data weights of the arriving
    clients renormalised to sum 1, tau_eff = sum_i p_i a_i and
    x <- x - eta_g tau_eff sum_i p_i Delta_i / a_i.

    Options: momentum (rho, default 0), prox_mu (default 0). Messages: 1 up, 1 down (plus the
    scalar a_i). Memory: none beyond the model.
    """

    name = "fednova"

    # fedlib.theory's model: W_i^t = tau_eff share_i / a_i over the arrivals (data shares)
    @staticmethod
    def theory_weights(m, schedule, eta, weights, momentum=0.0, prox_mu=0.0, **_):
        a = nova_normaliser(torch.tensor(np.array(schedule.local_steps)), eta, momentum, prox_mu).numpy()
        w = m * weights[None, :]
        tot = w.sum(1, keepdims=True)
        p = np.divide(w, tot, out=np.zeros_like(w, dtype=float), where=tot > 0)
        tau_eff = (p * a).sum(1, keepdims=True)
        return tau_eff * p / a

    @staticmethod
    def theory_expected_weights(p, a, weights, mc_samples=20000, seed=0, **_):
        ok = np.random.default_rng(seed).random((mc_samples, len(p))) < p
        w = ok * weights
        tot = w.sum(1, keepdims=True)
        share = np.divide(w, tot, out=np.zeros_like(w), where=tot > 0)
        return ((share * a).sum(1, keepdims=True) * share / a).mean(0)

    @staticmethod
    def theory_step_factor(m, pt, at, d, asked, rng, mc_samples, **_):
        return arrival_share_factor(m, pt, at, d, rng, mc_samples)
    description = "FedNova: normalised averaging for heterogeneous local steps"
    Options = SolverOptions

    def round(self, x, r):
        S = r.delivered
        if len(S) == 0:
            return x
        rho, mu = float(self.settings.momentum), float(self.settings.prox_mu)
        a = nova_normaliser(r.local_steps[S], r.lr_local, rho, mu).to(x.dtype)
        delta = x - self.local(x, S, r, r.lr_local).X
        w = self.problem.weights[S] * r.active[S].to(x.dtype)
        p = w / w.sum()
        tau_eff = (p * a).sum()
        return x - r.lr_global * tau_eff * (p / a) @ delta


@register
class FedAvgKnownP(Algorithm):
    """FedAvg dividing each update by its client's known participation probability
    (the FedAU / FedAWE baseline): x <- x + eta_g (1/N) sum_{i arriving} Delta_i / p_i^t,
    an unbiased estimate of the full-participation average update.

    Options: p (scalar, [N] or [rounds, N]); default: the schedule's ``p`` when numeric, else
    each client's observed participation frequency in the schedule (an oracle).
    Messages: 1 up, 1 down. Memory: the probabilities only.
    """

    name = "fedavg_known_p"
    description = "FedAvg with updates divided by known participation probabilities"
    Options = KnownPOptions

    def prepare_schedule(self, schedule, seed, lr_local):
        self.p = torch.as_tensor(known_probs(self.settings, "p", schedule))
        return schedule

    def round(self, x, r):
        S = r.delivered
        if len(S) == 0:
            return x
        delta = self.local(x, S, r, r.lr_local).X - x
        p = self.p[r.t, S.cpu()].to(x.device, x.dtype)
        return x + r.lr_global * (r.active[S].to(x.dtype) / p) @ delta / self.N


@register
class CAFedAvg(Algorithm):
    """Communication-aware FedAvg (FedACS baseline "c-a-FedAvg"): the server divides each
    arriving update by its uplink success probability and averages over the clients it
    contacted: ``x <- x + eta_g (1/|S_t|) sum_{i in S_t, upload ok} Delta_i / p_i^t``. This removes
    the bias of unreliable uplinks but not that of heterogeneous local steps.

    Options: uplink_p (scalar, [N] or [rounds, N]); default: the schedule's ``uplink_p`` when
    numeric, else each client's observed upload success rate (an oracle). Messages: 1 up, 1 down.
    Memory: the probabilities only.
    """

    name = "ca_fedavg"
    description = "communication-aware FedAvg: divides by the uplink success probability"
    Options = UplinkPOptions

    # fedlib.theory's model: W_i^t = ok_i m_i / (p_i N); E[W_i] = 1/N; step factor over the asked
    @staticmethod
    def theory_weights(m, uplink_p, **_):
        return m / (uplink_p * m.shape[1])

    theory_expected_weights = staticmethod(uniform_expected_weights)
    theory_step_factor = staticmethod(contacted_average_factor)

    def prepare_schedule(self, schedule, seed, lr_local):
        self.p = torch.as_tensor(known_probs(self.settings, "uplink_p", schedule))
        return schedule

    def round(self, x, r):
        contacted = r.contacted
        S = r.delivered
        if len(S) == 0:
            return x
        delta = self.local(x, S, r, r.lr_local).X - x
        p = self.p[r.t, S.cpu()].to(x.device, x.dtype)
        m = r.active[S].to(x.dtype)
        return x + r.lr_global * (m / p) @ delta / r.active[contacted].sum().to(x.dtype)
