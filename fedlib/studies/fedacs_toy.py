"""FedACS App. C's quadratic model (notebook 06): closed-form fixed points of each aggregation
next to the end points of simulated runs, in the static and the dynamic environment (Weng, Ren,
Xiao & Skoglund 2025, arXiv:2505.11304, App. C)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import claims, theory
from .._validate import InputError
from ..claims import ClaimRow, Verdict
from ..participation import build
from ..problems import Quadratic
from ..runner import run
from . import methods

__all__ = ["DIMENSION_CLAIM", "DIMENSION_REASON", "DYNAMIC_CLAIMS", "DYNAMIC_MC", "FIG7_NOTE",
           "NONSTATIONARY_CLAIM", "NONSTATIONARY_REASON", "PAIRED_KINDS", "SOURCES", "STEP_TOLERANCE",
           "TOY_CLAIMS", "TOY_METHODS", "TOY_PAIRING", "TOY_PAIRINGS", "TOY_SOLVERS", "Toy", "UNRUN_CLAIMS",
           "UNRUN_REASON", "dynamic_claims", "dynamic_values", "pairing_words", "toy_claims", "toy_values",
           "unrun_claims"]

#: local solvers of the toy: label -> options
TOY_SOLVERS = {"SGD": {}, "momentum 0.5": {"momentum": 0.5}, "prox mu=0.1": {"prox_mu": 0.1},
               "prox mu=1": {"prox_mu": 1.0}}
#: the sources of objective inconsistency of :meth:`Toy.single_source` (one alone, or both)
SOURCES = ("communication", "computation", "both")
#: the toy's methods, label -> algorithm (from the catalogue, :mod:`fedlib.studies.methods`)
TOY_METHODS = methods.algorithms(["FedAvg", "c-a-FedAvg", "FedVARP", "FedAU", "FedNova", "FedACS"])
#: Monte Carlo uplink patterns per round of FedNova's expected weights in the dynamic environment
#: (:meth:`Toy.dynamic_source`; each round its own draws, so over the rounds they add up)
DYNAMIC_MC = 200
#: how the upload probabilities p_i (0.2 up to 1 over the clients) and the local steps tau_i (a
#: permutation of 1..N) are paired: the paper's p_i and tau_i were lost, so which pairing its Fig.
#: 7 had is unknown. ``crossed`` and ``same`` are notebook 07's pairings of weak uplinks and weak
#: computation (:data:`fedlib.studies.fedacs.PAIRINGS`); ``shuffled`` draws tau_i apart from p_i
TOY_PAIRINGS = {
    "crossed": "anti-correlated, the reliable clients do the least work (tau_i from N down to 1 as p_i "
               "rises), as notebook 07's crossed",
    "same": "positively correlated, the reliable clients do the most work (tau_i from 1 up to N as p_i "
            "rises), as notebook 07's same",
    "shuffled": "independent, tau_i a random permutation of 1..N per instance seed, drawn apart from p_i",
}
#: the pairing of the toy's first instance (notebook 06's tables, figures and first claim rows)
TOY_PAIRING = "crossed"
#: the kinds of check of :data:`TOY_CLAIMS` that compare distances to x* with both sources acting at
#: once: the ones the pairing of p_i and tau_i can decide (a method that removes one source keeps the
#: other, whose pull on its fixed point may add to or cancel the pull FedAvg's two biases leave)
PAIRED_KINDS = ("closer", "farther", "farther_all_solvers")
#: what the setting of every App. I.4 (Fig. 7) row says of where its model comes from
FIG7_NOTE = ("Fig. 7 on App. C's quadratic model is our reconstruction, its match to the paper's Fig. 7 "
             "uncertain: App. I.4 shows Fig. 7 'under both static and dynamic heterogeneous settings', "
             "the settings of App. I.3.1's experiments, so the paper's figure may come from its CNN runs")


def pairing_words(pairing: str) -> str:
    """The pairing of p_i and tau_i (:data:`TOY_PAIRINGS`) as the rows' setting names it."""
    if pairing not in TOY_PAIRINGS:
        raise InputError(f"pairing: must be one of {', '.join(TOY_PAIRINGS)}; got {pairing!r}")
    return f"p_i and tau_i {pairing}: {TOY_PAIRINGS[pairing]}"


class Toy:
    """FedACS App. C's model: N quadratics f_i = 1/2 (x - c_i)^T A_i (x - c_i) with optima on a
    circle (d = 2), upload probabilities p_i from 0.2 to 1, local steps tau_i a permutation of 1..N
    paired with them by ``pairing`` (:data:`TOY_PAIRINGS`; ``crossed``: from N down to 1); the
    static environment keeps them, the dynamic one redraws p_i^t (+-0.15) and tau_i^t (+-2) every
    round. Everyone is asked every round (kind ``full``). The pairing does not change the optima,
    the curvatures or the draws of p_i^t (``shuffled`` draws its permutation from a stream of its own)."""

    #: rounds of the simulated runs per profile (their second half is averaged)
    ROUNDS = {"quick": 1500, "paper": 6000}

    def __init__(self, num_clients: int = 10, dim: int = 2, lr: float = 0.02, draws: int = 10,
                 seed: int = 0, rounds: int | None = None, profile: str = "quick",
                 pairing: str = TOY_PAIRING):
        if profile not in self.ROUNDS:
            raise InputError(f"profile: must be one of {sorted(self.ROUNDS)}, got {profile!r}")
        pairing_words(pairing)                                          # checks it
        rounds = self.ROUNDS[profile] if rounds is None else rounds
        self.N, self.dim, self.lr, self.draws = num_clients, dim, lr, draws
        self.seed, self.rounds, self.pairing = seed, rounds, pairing
        rng = np.random.default_rng(seed)
        n = num_clients
        angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
        self.c = np.stack([np.cos(angles), np.sin(angles)], 1) * 2.0 + rng.normal(0, 0.3, (n, dim))
        self.A = np.stack([np.diag(rng.uniform(0.5, 2.0, dim)) for _ in range(n)])
        self.prob = Quadratic(self.A, self.c)
        self.d = self.prob.weights.numpy()
        self.x_star = self.prob.optimum().numpy()
        self.p_up = np.linspace(0.2, 1.0, n)
        self.tau = self._steps(n, seed, pairing)
        self.tau_range = np.stack([np.maximum(self.tau - 2, 1), self.tau + 2], 1)
        self.p_dyn = np.clip(self.p_up[None, :] + rng.uniform(-0.15, 0.15, (rounds, n)), 0.05, 1.0)

    @staticmethod
    def _steps(n: int, seed: int, pairing: str) -> np.ndarray:
        """tau_i of ``pairing`` beside p_i rising over the clients (:data:`TOY_PAIRINGS`)."""
        steps = np.arange(1, n + 1)
        if pairing == "crossed":
            return steps[::-1].copy()
        if pairing == "same":
            return steps
        return np.random.default_rng(np.random.SeedSequence([seed, 0x7A0])).permutation(steps)

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

    def single_source(self, source: str, method: str, eta: float, solver: str = "SGD") -> float:
        """Distance to x* of the closed-form fixed point with exact expected weights in the static
        environment when only one source of inconsistency acts: ``communication`` (p_i, tau = 5) or
        ``computation`` (tau_i, p = 1); or ``both`` (p_i and tau_i), under the local ``solver``."""
        if source not in SOURCES:
            raise InputError(f"source: must be one of {', '.join(SOURCES)}; got {source!r}")
        n = self.N
        p, steps = {"communication": (self.p_up, np.full(n, 5)), "computation": (np.ones(n), self.tau),
                    "both": (self.p_up, self.tau)}[source]
        return self._distance(method, p, steps, eta, solver)

    def _distance(self, method: str, p: np.ndarray, steps: np.ndarray, eta: float,
                  solver: str = "SGD") -> float:
        """Distance to x* of the closed-form static fixed point with exact expected weights."""
        opts = TOY_SOLVERS[solver]
        w = theory.expected_weights(method, p, steps, eta, self.d, seed=self.seed, **opts)
        x = theory.fixed_point_static(self.A, self.c, w, steps, eta, **opts)
        return float(np.linalg.norm(x - self.x_star))

    def balanced_p(self) -> np.ndarray:
        """Upload probabilities that satisfy our reading of FedACS Cor. 2.2's lost condition (13):
        p_i tau_i proportional to the data weight d_i (the largest p_i 1), with the toy's tau_i, so
        communication and computation stay heterogeneous while their product matches the weights."""
        r = self.d / self.tau
        return r / r.max()

    def share_kept_balanced(self, method: str) -> float:
        """:meth:`share_kept` of ``method`` with both sources at once, p_i of :meth:`balanced_p`."""
        p = self.balanced_p()
        return self._distance(method, p, self.tau, self.lr / 2) / self._distance(method, p, self.tau, self.lr)

    def dynamic_source(self, source: str, method: str, eta: float) -> float:
        """Distance to x* of the closed-form fixed point in the dynamic environment, SGD solver, when
        only one source of inconsistency acts: ``communication`` (this round's p_i^t, tau = 5) or
        ``computation`` (this round's tau_i^t, p = 1); or ``both`` (p_i^t and tau_i^t). The weights are
        each round's exact expectation over the uplink draws given that round's p_i^t and tau_i^t
        (:func:`fedlib.theory.expected_weights`, FedNova's by :data:`DYNAMIC_MC` Monte Carlo
        patterns a round), the local maps those of the round's realised tau_i^t, both averaged over
        the rounds (:func:`fedlib.theory.fixed_point`): no noise of realised uplinks, so what is left
        at eta -> 0 is the method's own bias, as :meth:`single_source` in the static environment."""
        if source not in SOURCES:
            raise InputError(f"source: must be one of {', '.join(SOURCES)}; got {source!r}")
        dyn, _ = self.environment("dynamic")
        p = np.ones((self.rounds, self.N)) if source == "computation" else self.p_dyn
        sched = build("full", self.N, self.rounds, local_steps=np.full(self.N, 5)) \
            if source == "communication" else dyn
        steps = np.array(sched.local_steps)            # a writable copy: torch reads its rows
        W = np.stack([theory.expected_weights(method, p[t], steps[t], eta, self.d, mc_samples=DYNAMIC_MC,
                                              seed=t) for t in range(self.rounds)])
        x = theory.fixed_point(self.A, self.c, W, sched, eta)
        return float(np.linalg.norm(x - self.x_star))

    def share_kept(self, source: str, method: str) -> float:
        """The distance to x* (:meth:`single_source`, SGD) at half the toy's rate over that at its
        rate: 1/2 where ``method`` removes ``source`` (what is left is first order in eta), 1 where
        it keeps it."""
        return self.single_source(source, method, self.lr / 2) / self.single_source(source, method, self.lr)


# --------------------------------------------------------------------------------------------
# FedACS's claims on the toy (notebook 06): each baseline's objective inconsistency
# --------------------------------------------------------------------------------------------
_I4 = "App. I.4, Fig. 7"
_Q_AVG = ("As shown, FedAvg fails to resolve any form of objective inconsistency, resulting in the "
          "largest deviation from the global optimum.")
_Q_CA = ("In contrast, c-a-FedAvg and FedAU address statistical objective inconsistency by adapting to "
         "heterogeneous communication conditions, allowing them to converge more closely to the optimal "
         "global model.")
_Q_NOVA = ("FedNova, by normalizing local updates, mitigates structural objective inconsistency, thereby "
           "improving convergence under heterogeneous computation.")
_Q_REL = ("The relative performance of c-a-FedAvg/FedAU versus FedNova depends on which type of "
          "heterogeneity\u2014communication or computation\u2014dominates.")
_Q_ACS = ("Our proposed method, FedACS, effectively addresses both types of objective inconsistency, "
          "achieving the closest proximity to the true global optimum.")
_Q_DIM = ("Its remaining distance from the optimum is primarily bounded by the model\u2019s dimensionality "
          "and the learning rate.")
_Q_NOVA6 = ("The FedNova addresses computational heterogeneity, but its performance degrades under "
            "heterogeneous communication due to the resulting increase in variance.")
_NEITHER = "removes neither the communication nor the computation inconsistency"
#: Sec. 4.1's "existing works [41, 37, 26, 38, 10]" that leverage statistical properties, those of
#: them this model runs: c-a-FedAvg [26], FedAU [37], FedVARP [10] (Sec. 6's references)
_STATISTICAL = ("c-a-FedAvg", "FedAU", "FedVARP")
_STATISTICAL_WORKS = "c-a-FedAvg ([26]), FedAU ([37]) and FedVARP ([10])"
#: the methods that keep a source of inconsistency in the toy (every one but FedACS: the rows
#: "removes" / "keeps" show which source each keeps)
_BIASED = tuple(m for m in TOY_METHODS if m != "FedACS")
#: App. I.2's "does not determine the final convergence point", as a tolerance on the share kept at
#: eta/2 (:meth:`Toy.share_kept`): a kept source leaves it at 1, a removed one at 1/2 (first order in
#: eta); within 1/4 of 1 it lies nearer the first, the midpoint the "removes" / "keeps" rows use
STEP_TOLERANCE = 0.25
#: the "source" of FedAvg's share kept with p_i tau_i proportional to d_i (:meth:`Toy.balanced_p`)
BALANCED = "balanced"
#: FedACS's statements about each method's objective inconsistency (Sec. 3, Sec. 4.1, Sec. 6, App. I.4),
#: checked on App. C's model: (where, quote, claim, check); a check is (kind, method, argument),
#: read by :func:`toy_claims`: removes / keeps (a source: :meth:`Toy.share_kept` against 3/4,
#: midway between removed (1/2) and kept (1); a tuple of methods: each one's, combined), closer /
#: farther (than a method, or than every
#: other method with "every": the distance to x* with both sources), closer_under (than a method,
#: with one source alone), farther_all_solvers (than a method, under every local solver), unchanged
#: (methods: each one's share kept within :data:`STEP_TOLERANCE` of 1, both sources at once)
TOY_CLAIMS = (
    ("Sec. 3, Fig. 4",
     "With this toy example, Figure 4 shows the distance between the pursued true global minimum and "
     "the convergence point achieved by various local solvers and our proposed FedACS under "
     "heterogeneous settings. The results imply that can deviate largely from if the system "
     "heterogeneity is not properly handled.",
     "FedAvg's fixed point lies farther from x* than FedACS's under every local solver (the quote's "
     "symbols, the fixed point and x*, are lost from the text)",
     ("farther_all_solvers", "FedAvg", "FedACS")),
    ("Sec. 6", "The FedAvg fails to address any form of objective inconsistency.", f"FedAvg {_NEITHER}",
     ("keeps", "FedAvg", "both")),
    ("Sec. 6", _Q_NOVA6, "FedNova removes the computation inconsistency",
     ("removes", "FedNova", "computation")),
    ("Sec. 4.1", "In contrast, [34] resolves structural inconsistency but is invalid to statistical "
                 "inconsistency.",
     "FedNova ([34]) keeps the communication inconsistency (the statistical one: Sec. 4.1 and App. I.4 tie "
     "it to heterogeneous communication)", ("keeps", "FedNova", "communication")),
    ("Sec. 4.1", "Existing works [41, 37, 26, 38, 10] leverage statistical properties to eliminate objective "
                 "inconsistency are ineffective against structural inconsistency.",
     f"{_STATISTICAL_WORKS} keep the computation inconsistency (the structural one: Sec. 4.1 ties it to "
     "heterogeneous computation; [41] (FedAWE) and [38] are not in this model)",
     ("keeps", _STATISTICAL, "computation")),
    (_I4, _Q_AVG, f"FedAvg {_NEITHER}", ("keeps", "FedAvg", "both")),
    (_I4, _Q_AVG, "FedAvg's fixed point lies farther from x* than every other method's",
     ("farther", "FedAvg", "every")),
    (_I4, "Similarly, FedVarp is ineffective at mitigating inconsistency, as the reuse of local updates "
          "does not correct the aggregation direction at PS.",
     f"FedVARP {_NEITHER}", ("keeps", "FedVARP", "both")),
    (_I4, _Q_CA, "c-a-FedAvg removes the communication inconsistency",
     ("removes", "c-a-FedAvg", "communication")),
    (_I4, _Q_CA, "FedAU removes the communication inconsistency", ("removes", "FedAU", "communication")),
    (_I4, _Q_CA, "c-a-FedAvg's fixed point lies closer to x* than FedAvg's",
     ("closer", "c-a-FedAvg", "FedAvg")),
    (_I4, _Q_CA, "FedAU's fixed point lies closer to x* than FedAvg's", ("closer", "FedAU", "FedAvg")),
    (_I4, _Q_NOVA, "FedNova removes the computation inconsistency", ("removes", "FedNova", "computation")),
    (_I4, _Q_NOVA, "FedNova's fixed point lies closer to x* than FedAvg's with heterogeneous computation "
                   "alone", ("closer_under", "FedNova", ("FedAvg", "computation"))),
    (_I4, _Q_REL, "with heterogeneous communication alone, c-a-FedAvg's fixed point lies closer to x* "
                  "than FedNova's", ("closer_under", "c-a-FedAvg", ("FedNova", "communication"))),
    (_I4, _Q_REL, "with heterogeneous computation alone, FedNova's fixed point lies closer to x* than "
                  "c-a-FedAvg's", ("closer_under", "FedNova", ("c-a-FedAvg", "computation"))),
    (_I4, _Q_REL, "with heterogeneous communication alone, FedAU's fixed point lies closer to x* than "
                  "FedNova's", ("closer_under", "FedAU", ("FedNova", "communication"))),
    (_I4, _Q_REL, "with heterogeneous computation alone, FedNova's fixed point lies closer to x* than "
                  "FedAU's", ("closer_under", "FedNova", ("FedAU", "computation"))),
    (_I4, _Q_ACS, "FedACS removes both the communication and the computation inconsistency",
     ("removes", "FedACS", "both")),
    (_I4, _Q_ACS, "FedACS's fixed point lies closer to x* than every other method's",
     ("closer", "FedACS", "every")),
    (_I4, _Q_DIM,
     "FedACS's remaining distance shrinks when the learning rate is halved (the share it keeps at eta/2 "
     "is below 3/4; the learning-rate half of the statement only)", ("removes", "FedACS", "both together")),
    ("Sec. 4.2, Cor. 2.2",
     "In heterogeneous FL, the objective is consistent in regular participation schemes, e.g., IS, US, OS, "
     "and full participation in Appendix B.2 and the subsequent methods evolved from them, if the "
     "heterogeneous communication and computation satisfy (13) Note that homogeneous communication and "
     "computation is a special case that satisfies this condition.",
     "with full participation, FedAvg removes both inconsistencies where heterogeneous p_i and tau_i "
     "satisfy our reading of the lost condition (13), p_i tau_i proportional to d_i (here p_i = d_i / "
     "tau_i scaled to a largest p_i of 1, tau_i the toy's: every client's p_i tau_i the same; IS, US and OS "
     "are not checked; the condition's formula is lost from the text)",
     ("removes", "FedAvg", BALANCED)),
    ("App. I.2",
     "The step size influences the convergence speed, either accelerating or decelerating the "
     "optimization process, but does not determine the final convergence point.",
     f"halving eta leaves the distance to x* of each method that keeps a source ({', '.join(_BIASED)}) "
     "unchanged: share kept at eta/2 within 1/4 of 1 (FedACS, which removes both, is left out: its "
     "remaining distance is first order in eta, as its own row checks)",
     ("unchanged", _BIASED, "both together")),
)
#: Sec. 6 on FedVARP, which puts its failure on non-stationary statistics: (claim, quote)
NONSTATIONARY_CLAIM = (
    f"FedVARP {_NEITHER} under non-stationary statistics across rounds",
    "The FedVarp reuses previously observed local updates; however, due to non-stationary statistics "
    "across training rounds, it fails to resolve any form of objective inconsistency as well.")
#: Fig. 7's statements that App. I.4 makes "under both static and dynamic heterogeneous settings",
#: checked in the dynamic environment by :func:`dynamic_claims`: every App. I.4 row of
#: :data:`TOY_CLAIMS`, in their order (none left out: each check has its numbers in
#: :func:`dynamic_values`); closer / farther with both sources read the fixed points over each run's
#: realised schedule, removes / keeps and closer_under those with each round's expected weights
#: (:meth:`Toy.dynamic_source`). FedAU's expected weights are its declared ones, omega_i = 1/p_i^t (the
#: limit of its interval estimates): in the dynamic environment its estimates follow the long-run mean
#: of p_i^t instead, E[W_i^t] = p_i^t / (N mean_t p_i^t), which has the same mean over the rounds, and
#: p_i^t is drawn apart from tau_i^t, so the fixed point it leads to over many rounds is the same
DYNAMIC_CLAIMS = tuple(c for c in TOY_CLAIMS if c[0] == _I4)
#: what a row of a method adds to its cause where it does not hold
_CAUSES = {"FedVARP": ("the model's statistics are stationary (its fixed points are exact), where Sec. 6 "
                       "puts FedVARP's failure on non-stationary ones; at a fixed point FedVARP's aggregate "
                       "is c-a-FedAvg's (App. I.2, eq. 115)")}
#: what a row of a method adds to its cause in the dynamic environment where it does not hold
_DYNAMIC_CAUSES = {"FedVARP": (
    "p_i^t and tau_i^t change every round here, but with exact gradients a client's stored update at a "
    "fixed point has the same expected local map as a fresh one (tau_i^t does not depend on whether its "
    "upload arrives), so each round's expected aggregate is c-a-FedAvg's (App. I.2, eq. 115); the noisy "
    "stochastic training of Sec. 6's experiments is not in this model")}


def toy_values(seeds: Sequence[int], **toy_args) -> dict:
    """Per instance seed (:class:`Toy` ``seed=k``: its own optima c_i and curvatures A_i), the
    numbers :data:`TOY_CLAIMS` read, all closed forms with exact expected weights in the static
    environment: ``("kept", method, source)`` -> seed -> :meth:`Toy.share_kept` (FedAvg's also at
    ``source`` :data:`BALANCED`: :meth:`Toy.share_kept_balanced`);
    ``("dist", method, source, solver)`` -> seed -> :meth:`Toy.single_source` at the toy's rate."""
    out: dict = {}
    for k in seeds:
        toy = Toy(seed=int(k), **toy_args)
        out.setdefault(("kept", "FedAvg", BALANCED), {})[k] = toy.share_kept_balanced(TOY_METHODS["FedAvg"])
        for label, m in TOY_METHODS.items():
            for src in SOURCES:
                out.setdefault(("kept", label, src), {})[k] = toy.share_kept(src, m)
                for sv in (TOY_SOLVERS if src == "both" else ("SGD",)):
                    out.setdefault(("dist", label, src, sv), {})[k] = toy.single_source(src, m, toy.lr, sv)
    return out


def toy_claims(values: dict, setting: str = "", kinds: tuple[str, ...] | None = None) -> list[ClaimRow]:
    """:data:`TOY_CLAIMS` checked on :func:`toy_values` by the rule of :mod:`fedlib.claims`, seed by
    seed (instances of the model): "removes" / "keeps" a source compares :meth:`Toy.share_kept` with
    3/4 (margin ``MARGINS['share kept at half the rate']``; "both" combines the two sources, "both
    together" takes them acting at once; several methods combine theirs); "closer" / "farther"
    compare distances to x* (margin ``MARGINS['distance to the optimum']``), against every other
    method where the claim says so; each row gets ``setting``, an App. I.4 (Fig. 7) row
    :data:`FIG7_NOTE` after it. ``kinds``: only the claims whose check is of one of these kinds
    (e.g. :data:`PAIRED_KINDS`); None: all."""
    return [ClaimRow(where, quote, claim, _toy_check(values, *check), setting=_setting(where, setting),
                     cause=_step_cause(values) if check[0] == "unchanged" else _CAUSES.get(check[1], ""))
            for where, quote, claim, check in TOY_CLAIMS if kinds is None or check[0] in kinds]


def _setting(where: str, setting: str) -> str:
    """``setting``, with :data:`FIG7_NOTE` after it on a row of App. I.4's Fig. 7."""
    return "; ".join(x for x in (setting, FIG7_NOTE if where == _I4 else "") if x)


def _step_cause(values: dict) -> str:
    """What App. I.2's row adds: FedACS's own share kept, where the step size does set the end point."""
    q = list(values[("kept", "FedACS", "both")].values())
    return (f"FedACS's share kept is {min(q):.3f}-{max(q):.3f}: its remaining distance is first order in eta "
            "(halving eta halves it), so for FedACS the step size does set how near x* it ends")


def dynamic_values(seeds: Sequence[int], progress: bool = False, shares: bool = True, **toy_args) -> dict:
    """Per instance seed (:class:`Toy` ``seed=k``), the numbers :data:`DYNAMIC_CLAIMS` read in the
    dynamic environment (p_i^t and tau_i^t redrawn every round), SGD solver: ``("dist", method,
    "both", "SGD")`` -> seed -> the distance to x* of the closed-form fixed point at the toy's rate
    with the expectations over the run's realised schedule (:meth:`Toy.evaluate`, one simulated run
    per method: FedACS draws its own schedule); where ``shares``, also ``("kept", method, source)``
    -> seed -> the share of :meth:`Toy.dynamic_source`'s distance kept at half the rate, and
    ``("dist", method, source, "SGD")`` -> seed -> that distance at the toy's rate, for one source
    alone (without them only the checks of :data:`PAIRED_KINDS` can be made)."""
    out: dict = {}
    for k in seeds:
        toy = Toy(seed=int(k), **toy_args)
        for label, m in TOY_METHODS.items():
            xbar, _ = toy.evaluate("dynamic", m, "SGD", progress)
            out.setdefault(("dist", label, "both", "SGD"), {})[k] = float(np.linalg.norm(xbar - toy.x_star))
            for src in (SOURCES if shares else ()):
                d1, d2 = (toy.dynamic_source(src, m, eta) for eta in (toy.lr, toy.lr / 2))
                out.setdefault(("kept", label, src), {})[k] = d2 / d1
                if src != "both":
                    out.setdefault(("dist", label, src, "SGD"), {})[k] = d1
    return out


def dynamic_claims(values: dict, setting: str = "", kinds: tuple[str, ...] | None = None) -> list[ClaimRow]:
    """:data:`DYNAMIC_CLAIMS` checked on :func:`dynamic_values` by the tests of :func:`toy_claims`
    (removes / keeps: the share kept against 3/4; closer / farther and closer_under: distances to
    x*), each row with ``setting`` and :data:`FIG7_NOTE`; ``kinds`` as :func:`toy_claims`'."""
    return [ClaimRow(where, quote, claim, _toy_check(values, *check), setting=_setting(where, setting),
                     cause=_DYNAMIC_CAUSES.get(check[1], ""))
            for where, quote, claim, check in DYNAMIC_CLAIMS if kinds is None or check[0] in kinds]


#: why this notebook tests no statement of a method's variance (the start of each reason in
#: :data:`UNRUN_CLAIMS`)
UNRUN_REASON = ("a variance over draws: this notebook's claims are closed-form fixed points with exact "
                "expected weights (no draws, so no variance)")
#: Sec. 6's statements about the variance a method adds, which no run here measures: (claim, quote,
#: reason), each reason :data:`UNRUN_REASON` and where else the statement is (or cannot be) tested
UNRUN_CLAIMS = (
    ("FedNova's performance degrades under heterogeneous communication, through an increase in variance",
     _Q_NOVA6,
     UNRUN_REASON + "; notebook 07 runs every method under heterogeneous communication and computation "
     "together: no arm with homogeneous communication to compare FedNova's performance with"),
    ("c-a-FedAvg's global model has a larger variance than FedAvg's",
     "In contrast, c-a-FedAvg accounts for communication heterogeneity and yields slight performance "
     "gains, albeit with increased variance in the global model.",
     UNRUN_REASON + "; notebook 07 tests it on its runs, per regime cell (the late-round fluctuation of "
     "test accuracy around its trend, a stand-in for the global model's variance)"),
)


#: why no computation here tests :data:`NONSTATIONARY_CLAIM`
NONSTATIONARY_REASON = (
    "the dynamic environment redraws p_i^t and tau_i^t every round independently from fixed ranges, so its "
    "statistics are the same every round (stationary in distribution), and with exact gradients a stored "
    "update at a fixed point has the same expected local map as a fresh one: at a fixed point FedVARP's "
    "aggregate is c-a-FedAvg's by construction (App. I.2, eq. 115), whatever the rows show, so neither "
    "environment can show Sec. 6's mechanism (stale updates under noisy, non-stationary training)")


#: App. I.4's dimensionality half of FedACS's remaining distance, which no computation here varies
DIMENSION_CLAIM = "FedACS's remaining distance grows with the model's dimensionality"
#: why no computation here tests :data:`DIMENSION_CLAIM`
DIMENSION_REASON = (
    "App. C's instance of this notebook places the client optima on a circle, so it is defined in d = 2 "
    "only; the paper's Fig. 7 setting and App. C's formulas are lost from the text, which says nothing more "
    "of how the dimension enters; with exact gradients no term of a fixed point here grows with d by "
    "itself, so a family of instances of ours in growing d would test our choice of instances, not the "
    "paper's statement")


#: Sec. 4.2's statements that no computation here can test (paper read 1, FOCUS and FedACS finding
#: 7): (where, quote, claim, reason)
THEORY_UNRUN = (
    ("Sec. 4.2, Cor. 2.1",
     "The Euclidean distance between the resulting inconsistent convergence point from heterogeneous FL "
     "and the true target in (1) is bounded by , where . This indicates that can diverge arbitrarily far "
     "from .",
     "the distance between the inconsistent convergence point and the true optimum is bounded, and the "
     "point can lie arbitrarily far from it (the quote's bound and symbols are lost from the text)",
     "the bound and its constants are lost from the text (eqs. (78), (92)), so there is no number to "
     "compare a distance with; 'can diverge arbitrarily far' is a statement over all instances, and on "
     "App. C's model the distance grows with the spread of the client optima by construction, so a family "
     "of instances of ours would test our choice of instances (as the dimensionality row's reason says); "
     "the rows of App. I.4 measure the distance on this notebook's instances"),
    ("Sec. 4.2",
     "No Convergence Guarantee in Dynamic Heterogeneous FL. Under the same condition in Theorem 1, but "
     "with time-varying and , the surrogate functions in each round are statistically non-identical for "
     ", leading to a potential divergence.",
     "with time-varying communication and computation there is no convergence guarantee: a potential "
     "divergence (the quote's symbols are lost from the text)",
     "it states that a guarantee is absent and a divergence possible: no run can refute a possibility, and "
     "one that stays bounded (the dynamic environment's FedAvg here) does not contradict it; the dynamic "
     "rows of App. I.4 measure the bias that remains"),
)


def unrun_claims(setting: str = "the global model's variance over draws, not run",
                 dimension_setting: str = "the model's dimensionality, not varied",
                 nonstationary_setting: str = "non-stationary statistics across rounds, not in this model",
                 theory_setting: str = "Sec. 4.2's theory, its formulas lost from the text"
                 ) -> list[ClaimRow]:
    """:data:`UNRUN_CLAIMS`, each "not tested" with its reason (:func:`fedlib.claims.not_run`),
    with ``setting``; then :data:`NONSTATIONARY_CLAIM`, "not tested" with
    :data:`NONSTATIONARY_REASON`, with ``nonstationary_setting``; then :data:`DIMENSION_CLAIM`,
    "not tested" with :data:`DIMENSION_REASON`, with ``dimension_setting``; then
    :data:`THEORY_UNRUN`, each with its reason, with ``theory_setting``."""
    return [*(ClaimRow("Sec. 6", quote, claim, claims.not_run(reason), setting=setting)
              for claim, quote, reason in UNRUN_CLAIMS),
            ClaimRow("Sec. 6", NONSTATIONARY_CLAIM[1], NONSTATIONARY_CLAIM[0],
                     claims.not_run(NONSTATIONARY_REASON), setting=nonstationary_setting),
            ClaimRow(_I4, _Q_DIM, DIMENSION_CLAIM, claims.not_run(DIMENSION_REASON),
                     setting=dimension_setting),
            *(ClaimRow(where, quote, claim, claims.not_run(reason), setting=theory_setting)
              for where, quote, claim, reason in THEORY_UNRUN)]


def _toy_check(values: dict, kind: str, method: str, arg) -> Verdict:
    """One check of :data:`TOY_CLAIMS` (see :func:`toy_claims`)."""
    kept_margin = claims.MARGINS["share kept at half the rate"]
    dist_margin = claims.MARGINS["distance to the optimum"]

    def dist(m, src="both", solver="SGD"):
        return values[("dist", m, src, solver)]
    if kind in ("removes", "keeps"):
        sources = {"both": ("communication", "computation"), "both together": ("both",)}.get(arg, (arg,))
        several = not isinstance(method, str)              # several methods: one verdict each, combined
        checks = {}
        for m in (method if several else (method,)):
            for src in sources:
                q = values[("kept", m, src)]
                key = (m if len(sources) == 1 else f"{m} ({src})") if several else src
                checks[key] = claims.paired(
                    q, dict.fromkeys(q, 0.75), higher=(kind == "keeps"), margin=kept_margin,
                    names=(f"{m}'s share kept ({src})", "3/4"))
        return claims.combine(checks)
    if kind in ("closer", "farther"):
        rivals = [m for m in TOY_METHODS if m != method] if arg == "every" else [arg]
        return claims.against_all(dist(method), {r: dist(r) for r in rivals}, method,
                                  higher=(kind == "farther"), margin=dist_margin)
    if kind == "closer_under":
        rival, src = arg
        return claims.paired(dist(method, src), dist(rival, src), higher=False, margin=dist_margin,
                             names=(method, rival))
    if kind == "unchanged":                   # method: the methods, each within STEP_TOLERANCE of 1
        checks = {}
        for m in method:
            q = values[("kept", m, "both")]
            off = {k: abs(v - 1.0) for k, v in q.items()}
            checks[m] = claims.paired(off, dict.fromkeys(off, STEP_TOLERANCE), higher=False,
                                      names=(f"{m}'s |share kept - 1|", "1/4"))
        return claims.combine(checks)
    if kind == "farther_all_solvers":
        return claims.combine({sv: claims.paired(dist(method, "both", sv), dist(arg, "both", sv),
                                                 margin=dist_margin, names=(method, arg))
                               for sv in TOY_SOLVERS})
    raise InputError(f"kind: must be one of removes, keeps, closer, farther, closer_under, "
                     f"farther_all_solvers, unchanged; got {kind!r}")


from .base import guard_study  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_study(globals())
