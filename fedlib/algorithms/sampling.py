"""Algorithms that choose their own clients: FedACS (Weng, Ren, Xiao & Skoglund 2025,
arXiv:2505.11304) and optimal client sampling
(Chen, Horvath & Richtarik 2020, the FedACS baseline "OS").

The environment (the Schedule given to :func:`fedlib.run`) says who is *available*
(``active > 0``), whose upload succeeds (``uplink_ok``) and how many local steps each client
runs (``local_steps``). The algorithm decides whom the server asks and how it aggregates:
FedACS compiles its with-replacement draws into a new Schedule once, before the run
(:meth:`FedACS.prepare_schedule`), so the draws are data that can be saved and replayed; OS
samples inside the round because its probabilities depend on the clients' update norms.

Example, FedACS drawing 5 clients a round with replacement
(``prob``: any problem, e.g.
``fedlib.problems.random_quadratic(num_clients=10, dim=5, seed=0)``)::

    fedlib.run("fedacs", prob, {"kind": "bernoulli", "p": 0.3}, rounds=200, local_steps=5,
               lr_local=0.05, draws=5)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._validate import InputError
from ..participation import Schedule
from .base import Algorithm, register
from .options import Options, SolverOptions, any_value, int_at_least, one_of, option
from .reweighting import known_probs, nova_normaliser


@dataclass(frozen=True)
class FedACSOptions(SolverOptions):
    """FedACS's options (see :class:`FedACS`)."""

    draws: int = option(10, *int_at_least(1), doc="K: clients drawn with replacement per round")
    uplink_p: Any = option(None, *any_value("a probability: scalar, [N], [rounds, N] or a callable"),
                           doc="the server's knowledge of p_i^t; None: the schedule's (or observed)")
    weights: Any = option(None, *any_value("N non-negative client weights"),
                          doc="the data weights d_i [N]; None: the problem's")


@dataclass(frozen=True)
class OSOptions(Options):
    """OS's option (see :class:`OSSampling`)."""

    budget: int = option(10, *int_at_least(1), doc="expected number of uploads per round (water_filling) "
                         "or draws per round (with_replacement)")
    sampling: str = option("water_filling", *one_of("water_filling", "with_replacement"),
                           doc="water_filling: each client picked independently with p_i = min(1, c u_i) "
                               "(Chen et al. 2020, eq. (11)); with_replacement: ``budget`` draws with "
                               "replacement, q_i proportional to u_i (FedACS's App. B.1.3)")


@register
class FedACS(Algorithm):
    """FedACS: heterogeneity-aware client sampling (Weng et al. 2025, arXiv:2505.11304). INFERRED update rule.

    Formulas (3), (15), (16) and Alg. 1 of the paper were lost in the text we work from; this is
    our inference from the paper's own consistency argument. Round t:
    the server draws K clients with replacement among the available ones with

        q_i^t = (d_i / (p_i^t ||a_i^t||_1)) / sum_j (d_j / (p_j^t ||a_j^t||_1))   (inferred eq. 15)

    (d_i: client weight in the global objective, p_i^t: its uplink success probability,
    ||a_i^t||_1: the normaliser of its local solver for its tau_i^t steps, FedNova's a_i). A
    client drawn m_i times trains once and makes one upload attempt over its one link (Sec. 2:
    "the aggregation weight for each client corresponds to the frequency of its appearance";
    the link is a Bernoulli variable per selected client); the server aggregates anonymously,
    without counting successes:

        x^(t+1) = x^(t) + eta_g (1/K) sum_i m_i 1[upload of client i ok] Delta_i   (inferred eq. 3)

    (INFERRED: an attempt per draw would have the same expectation and a smaller variance, but
    it is not the text's model of one link per selected client.)

    so E[update] = eta_g sum_i q_i p_i Delta_i, proportional to -sum_i d_i grad f_i to first order
    in eta_l: both the communication (p_i) and the computation (tau_i) bias cancel. The tests
    check this on quadratics against closed-form fixed points instead of asserting it.

    Options: draws (K, default 10), uplink_p (the server's knowledge of p_i^t: scalar, [N] or
    [rounds, N]; default the schedule's ``uplink_p``, else observed success rates), weights
    (d_i, default the problem's), momentum / prox_mu (local solver, as FedNova), seed offset
    via ``fedlib.run(seed=...)``. Messages: 1 up, 1 down per distinct drawn client.
    Memory: none beyond the model (q is recomputed from p_i and the steps).
    """

    name = "fedacs"
    description = "FedACS: sampling with replacement by q_i ~ d_i/(p_i ||a_i||_1), anonymous aggregation"
    Options = FedACSOptions

    # fedlib.theory's model: W_i^t = ok_i m_i / K on its own sampled schedule; E[W_i] = q_i p_i
    @staticmethod
    def theory_weights(m, draws, **_):
        return m / float(draws)

    @staticmethod
    def theory_expected_weights(p, a, weights, **_):
        q = weights / (p * a)
        return q / q.sum() * p

    @staticmethod
    def theory_step_factor(m, pt, at, d, asked, **_):
        """K draws by q_i ~ d_i / (p_i ||a_i||_1) over the available clients: s = sum_i q_i p_i ||a_i||_1."""
        live = m > 0
        return d[live].sum() / (d[live] / (pt[live] * at[live])).sum() if d[live].sum() > 0 else 0.0

    def sampling_probs(self, schedule: Schedule, lr: float = 1.0) -> np.ndarray:
        """q [rounds, N] of inferred eq. (15) over the available clients of each round (a row
        of zeros where no client is available: nobody is drawn then)."""
        T, N = schedule.active.shape
        p = known_probs(self.settings, "uplink_p", schedule)
        given = self.settings.weights
        d = np.asarray(self.problem.weights.cpu().numpy() if given is None else given, dtype=float)
        if d.shape != (N,) or (d < 0).any():
            raise InputError(f"weights: expected {N} non-negative client weights")
        mu = float(self.settings.prox_mu)
        a = nova_normaliser(torch.tensor(np.array(schedule.local_steps)), lr,
                            float(self.settings.momentum), mu).numpy()
        if not np.isfinite(a).all() or (a[np.asarray(schedule.active) > 0] <= 0).any():
            raise InputError(f"lr_local: eta_l = {lr:g} with prox_mu = {mu:g} makes FedNova's normaliser "
                             "||a_i||_1 non-positive or not finite for some client's local steps, so eq. "
                             "(15) gives no sampling probabilities; FedProx's local steps contract only for "
                             f"eta_l * prox_mu < 1 (here {lr * mu:g})")
        score = np.where(schedule.active > 0, d / (p * a), 0.0)
        total = score.sum(1, keepdims=True)
        return np.divide(score, total, out=np.zeros_like(score), where=total > 0)

    def prepare_schedule(self, schedule, seed, lr_local):
        k = int(self.settings.draws)
        # the prox normaliser depends on eta_l: the draws use the run's base rate eta_0
        q = self.sampling_probs(schedule, lr=lr_local)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0xFEDAC5]))
        counts = np.stack([rng.multinomial(k, row) if row.sum() > 0 else np.zeros(len(row), int)
                           for row in q])
        return Schedule(counts, schedule.uplink_ok, schedule.local_steps,
                        {"kind": "fedacs_sampling", "draws": k, "seed": seed,
                         "environment": schedule.spec})

    def round(self, x, r):
        S = r.delivered
        if len(S) == 0:
            return x
        delta = self.local(x, S, r, r.lr_local).X - x
        m = r.active[S].to(x.dtype)
        return x + r.lr_global * m @ delta / int(self.settings.draws)


def os_probabilities(norms: torch.Tensor, budget: int) -> torch.Tensor:
    """Optimal client sampling probabilities (Chen, Horvath & Richtarik 2020, eq. (11)):
    p_i = min(1, c u_i) with c chosen so that sum_i p_i = budget (water-filling); clients with
    u_i = 0 get p_i = 0 (or share the leftover budget uniformly when all are 0)."""
    n = len(norms)
    if budget >= n:
        return torch.ones_like(norms)
    if float(norms.sum()) == 0:
        return torch.full_like(norms, budget / n)
    order = torch.argsort(norms, descending=True)
    u = norms[order]
    p = torch.empty_like(u)
    for l in range(n):                              # l clients capped at probability 1
        rest = u[l:].sum()
        c = (budget - l) / rest
        if l == n - 1 or float(c * u[l]) <= 1:
            p[:l] = 1
            p[l:] = (c * u[l:]).clamp(max=1)
            break
    out = torch.empty_like(p)
    out[order] = p
    return out


@register
class OSSampling(Algorithm):
    """Optimal client sampling, "OS" (Chen, Horvath & Richtarik 2020; FedACS baseline).

    Every available client trains and reports the norm of its weighted update
    u_i = d_i ||Delta_i|| (a scalar); the server picks client i with probability
    p_i = min(1, c u_i), sum_i p_i = ``budget`` (:func:`os_probabilities`), independently, and
    aggregates the uploads that arrive unbiasedly: x <- x + eta_g sum_{i picked, ok} d_i Delta_i / p_i
    with d_i the data weights renormalised over the available clients.

    With ``sampling="with_replacement"`` the server instead draws ``budget`` times with replacement,
    client i with probability q_i = u_i / sum_j u_j (uniform when every u_i is 0), as FedACS's App.
    B.1.3 describes OS ("clients are sampled with replacement according to sampling probability
    proportional to the norm of gradients"), and aggregates
    x <- x + eta_g (1/budget) sum_{draws j, upload ok} d_j Delta_j / q_j, unbiased as well; a client
    drawn twice uploads once and counts twice.

    Options: budget (expected number of uploads per round, or draws, default 10), sampling. The
    picks come from a generator keyed by (seed, round). Messages: 1 down per available client, 1 up per pick
    (the norms are scalars). Memory: none beyond the model.
    """

    name = "os_sampling"
    description = "optimal client sampling by update norms (Chen et al. 2020)"
    Options = OSOptions
    server_state = ("_picked",)             # the round's picks, read by messages()

    def prepare_schedule(self, schedule, seed, lr_local):
        self.seed = seed
        self._picked = 0
        return schedule

    def round(self, x, r):
        A = r.contacted
        self._picked = 0
        if len(A) == 0:
            return x
        delta = self.local(x, A, r, r.lr_local).X - x
        d = self.problem.weights[A].to(x.dtype)
        d = d / d.sum()
        norms = d * torch.linalg.vector_norm(delta, dim=1)
        if self.settings.sampling == "with_replacement":
            return self._drawn(x, r, A, d, norms, delta)
        p = os_probabilities(norms, int(self.settings.budget))
        u = torch.as_tensor(np.random.default_rng([self.seed, r.t]).random(len(A)), dtype=x.dtype,
                            device=x.device)
        pick = (u < p) & r.uplink_ok[A]
        self._picked = int((u < p).sum())
        if not bool(pick.any()):
            return x
        return x + r.lr_global * (d[pick] / p[pick]) @ delta[pick]

    def _drawn(self, x, r, A, d, norms, delta):
        """App. B.1.3's OS: ``budget`` draws with replacement, q_i proportional to u_i."""
        m = int(self.settings.budget)
        total = float(norms.sum())
        q = norms / total if total > 0 else torch.full_like(norms, 1.0 / len(A))
        qn = q.double().cpu().numpy()
        draws = np.random.default_rng([self.seed, r.t]).choice(len(A), size=m, p=qn / qn.sum())
        counts = torch.as_tensor(np.bincount(draws, minlength=len(A)), dtype=x.dtype, device=x.device)
        self._picked = int((counts > 0).sum())
        take = (counts > 0) & r.uplink_ok[A]
        if not bool(take.any()):
            return x
        return x + r.lr_global * (counts[take] * d[take] / (m * q[take])) @ delta[take]

    def messages(self, r):
        return self._picked, int((r.active > 0).sum())
