"""Fingerprints of the code that computes a run, so that a stored run whose code computes something
else since it was stored is noticed (:class:`fedlib.store.Store` marks it stale).

A stored entry's ``meta["code"]`` holds two parts:

* **algorithm** -- a *behavioural* fingerprint, ``"b1:<sha256>"``: the digest of the trajectory the
  config's algorithm class computes, with the config's own algorithm options (its ``Options``
  filling in the defaults), on fixed small probe problems (:func:`probe_record`), in float64 on
  the CPU, through :func:`fedlib.run` and the vectorized engine that runs use. Every round's global
  model, the model the history evaluates (:meth:`~fedlib.algorithms.Algorithm.eval_params`), the
  messages and the algorithm's extra metrics, and the schedule it runs (after its
  ``prepare_schedule``), each value rounded to 9 significant digits, so that reassociated
  arithmetic (a relative 1e-15) or another CPU kind gives the same digest.
* **problem** -- the *source* fingerprint of the problem builder registered under the config's
  problem name (:func:`source_fingerprint`: its docstring-free, normalised source). A problem
  builds data (datasets, splits, models) that a probe cannot stand in for.

Why the algorithm part is behavioural rather than the source of the algorithm's classes (the
scheme before, still read as ``"sha256:..."``): it changes exactly when what the algorithm
computes changes, wherever the change is -- a changed default of its ``Options`` (a user's
algorithm included), a module-level helper it calls (``nova_normaliser``, a user's own), the shared
base class -- and it does not change when the code is refactored (a renamed variable, options
declared in the class body, a method moved), so built-in algorithms can be rewritten freely and no
version number needs bumping by hand. The config's own options are probed, so a change in a
branch that only some options take (``aggregation="contacted"``, ``rebuild="rate_sum"``) marks only
the entries that took it. The probes are built to reach every branch of the built-in algorithms
(``tests/test_fingerprint.py`` changes each option of each built-in and checks the digest moves):
partial and empty rounds, failed uploads, a client drawn twice, unequal client weights and local
step counts, gradient noise (stochastic and full-batch steps differ), a decaying learning rate,
one client absent for almost the whole run, and a run long enough that every integer option (a
period P, a cutoff, a budget) passes at least twice (:func:`probe_rounds`).

What a probe cannot see: a change that only shows on a problem unlike the probes (a rule
equivalent on quadratics and on a logistic regression but not on a neural network; a period longer
than :data:`MAX_PROBE_ROUNDS`). An algorithm that cannot run on the probes (a user's algorithm
that needs a neural problem, or options sized for another number of clients) gets its classes'
source fingerprint instead, ``"src:sha256:..."``, with a one-line warning.

Digests are computed once per (algorithm class, options) in a process (a few milliseconds to a
few hundred, :func:`algorithm_fingerprint`).
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings

import numpy as np
import torch

from ._source import capture, source_fingerprint

__all__ = ["BEHAVIOURAL", "MAX_PROBE_ROUNDS", "algorithm_fingerprint", "capture", "config_fingerprint",
           "legacy_algorithm_fingerprint", "probe_record", "probe_rounds", "same_legacy_code",
           "source_fingerprint", "stale_parts"]

#: the prefix of a behavioural algorithm fingerprint (bump it when the probes change: every entry
#: is then stale until ``python -m fedlib renew`` replays it)
BEHAVIOURAL = "b1:"
#: the prefix of the fallback for an algorithm that cannot run on the probes
SOURCE = "src:"
#: significant digits each recorded value keeps before hashing
DIGITS = 9
#: rounds of the shortest probe, and the cap of a probe stretched by integer options
MIN_PROBE_ROUNDS, MAX_PROBE_ROUNDS = 8, 512


def _algorithm_classes(cls: type) -> list[type]:
    from .algorithms.base import Algorithm
    return [c for c in cls.__mro__ if c is not Algorithm and issubclass(c, Algorithm)]


def legacy_algorithm_fingerprint(cls: type) -> str | None:
    """The fingerprint of the scheme before behavioural ones: the source of ``cls`` and of every
    class between it and :class:`~fedlib.algorithms.Algorithm` (``"sha256:..."``; None when a
    source cannot be read). Read by ``python -m fedlib renew`` to migrate entries."""
    return source_fingerprint(*_algorithm_classes(cls))


#: refactors of built-in algorithms that compute what they computed before, as the legacy source
#: fingerprint of the classes after the refactor -> those of the classes before it. An entry
#: stored before behavioural fingerprints with a source listed here is migrated without a replay
#: (:func:`same_legacy_code`); any later edit of the classes changes their source and ends it.
LEGACY_REFACTORS: dict[str, frozenset[str]] = {}


def same_legacy_code(stored: str | None, cls: type) -> bool:
    """Whether ``stored``, an algorithm fingerprint of the scheme before behavioural ones
    (``"sha256:..."``), is that of ``cls``'s classes as they are now (or of a source listed in
    :data:`LEGACY_REFACTORS` as refactored into them): the same code."""
    if not isinstance(stored, str) or not stored.startswith("sha256:"):
        return False
    now = legacy_algorithm_fingerprint(cls)
    return now is not None and (stored == now or stored in LEGACY_REFACTORS.get(now, frozenset()))


# --------------------------------------------------------------------------------------------
# The probe problems: fixed numbers from integer arithmetic (no generator whose stream a library
# version could change), float64 on the CPU
# --------------------------------------------------------------------------------------------
def _table(*shape: int, salt: int) -> np.ndarray:
    """Fixed numbers in [-0.5, 0.5): a multiplicative hash of each position and ``salt``."""
    idx = np.arange(int(np.prod(shape)), dtype=np.uint64).reshape(shape)
    h = (idx * np.uint64(2654435761) + np.uint64(salt) * np.uint64(40503)) % np.uint64(2 ** 32)
    h = (h * np.uint64(2246822519) + np.uint64(3266489917)) % np.uint64(2 ** 32)
    return h.astype(np.float64) / 2.0 ** 32 - 0.5


def _noise(salt: int, num_clients: int, dim: int, round: int, step: int) -> torch.Tensor:
    return torch.from_numpy(_table(num_clients, dim, salt=salt + 7919 * int(round) + 104729 * int(step)))


def _probe_quadratic():
    from .objectives import Quadratic

    class ProbeQuadratic(Quadratic):
        """16 heterogeneous quadratics in 3 dimensions, unequal weights, fixed gradient noise."""

        def _noise(self, round, step):
            return _noise(11, self.num_clients, self.dim, round, step)

    n, d = 16, 3
    M = _table(n, d, d, salt=1)
    A = np.einsum("nij,nkj->nik", M, M) + np.eye(d) * (0.5 + 0.1 * (np.arange(n) % 5))[:, None, None]
    c = 4 * _table(n, d, salt=2) + np.array([1.0, -0.5, 0.25])
    w = 1.0 + np.arange(n) % 4
    return ProbeQuadratic(A, c, weights=w / w.sum(), sigma=0.3)


def _probe_logistic():
    from .objectives import Problem

    class ProbeLogistic(Problem):
        """Regularised logistic regression of 16 clients (6 samples each, 3 features), unequal
        weights, fixed gradient noise when stochastic."""

        num_clients, dim, dtype, device = 16, 3, torch.float64, torch.device("cpu")

        def __init__(self):
            n = self.num_clients
            self.a = torch.from_numpy(3 * _table(n, 6, self.dim, salt=3))
            side = _table(n, 6, salt=4) + 0.03 * np.arange(n)[:, None]
            self.y = torch.from_numpy(np.where(side > 0, 1.0, -1.0))
            w = 1.0 + torch.arange(n, dtype=torch.float64) % 5
            self.weights = w / w.sum()

        def _grad(self, X, clients, round, step, stochastic):
            a, y = self.a[clients], self.y[clients]                     # [S, 6, d], [S, 6]
            z = y * torch.einsum("snd,sd->sn", a, X)
            G = -torch.einsum("sn,snd->sd", y * torch.sigmoid(-z), a) / a.shape[1] + 0.05 * X
            if stochastic:
                G = G + 0.2 * _noise(13, self.num_clients, self.dim, round, step)[clients]
            return G

        def grads(self, X, clients, round=0, step=0, stochastic=True):
            return self._grad(X, torch.as_tensor(clients), round, step, stochastic)

        def client_grad(self, x, client, round=0, step=0, stochastic=True):
            return self._grad(x[None], torch.tensor([int(client)]), round, step, stochastic)[0]

        def loss(self, x):
            z = self.y * torch.einsum("snd,d->sn", self.a, x)
            per = torch.nn.functional.softplus(-z).mean(1) + 0.025 * float(x @ x)
            return float(self.weights @ per)

        def initial_params(self, seed=0):
            return torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64)

    return ProbeLogistic()


def _probe_schedule(num_clients: int, rounds: int, salt: int):
    """Who takes part, whose upload arrives and how many local steps each runs: a pattern of 8
    rounds repeated (everyone, one client counted twice; a few; active clients whose uploads all
    fail; most; the other half; nobody; every other one, one counted three times; most, some
    uploads failing), the last client present only in the first and the last round."""
    from .participation import Schedule

    n = num_clients
    base_active = np.zeros((8, n), dtype=np.int64)
    base_ok = np.ones((8, n), dtype=bool)
    base_active[0] = 1
    base_active[0, 3 % n] = 2
    base_ok[0, 5 % n] = False
    base_active[1, : max(2, n // 3)] = 1
    base_ok[1, 1] = False
    base_active[2, [1, n // 2]] = 1
    base_ok[2] = False
    base_active[3, : n - 2] = 1
    base_active[3, 4 % (n - 2)] = 0
    base_active[4, n // 2:] = 1
    base_active[6, ::2] = 1
    base_active[6, 3 % n] = 3
    base_active[7, : n - 3] = 1
    base_ok[7, [0, n // 2]] = False
    reps = -(-rounds // 8)
    active = np.tile(base_active, (reps, 1))[:rounds]
    ok = np.tile(base_ok, (reps, 1))[:rounds]
    active[1:, n - 1] = 0
    active[-1, n - 1] = 1
    t, i = np.meshgrid(np.arange(rounds), np.arange(n), indexing="ij")
    steps = 1 + (t + 2 * i + salt) % 3
    probs = np.broadcast_to(0.3 + 0.05 * (np.arange(n) % 8), (rounds, n))
    uplink = np.broadcast_to(0.7 + 0.05 * (np.arange(n) % 5), (rounds, n))
    return Schedule(active, ok, steps, {"kind": "fingerprint_probe"}, probs, uplink)


#: the probes: (problem maker, learning-rate schedule, lr_local, lr_global, schedule salt)
_PROBES = ((_probe_quadratic, "fedsum_sqrt", 0.05, 0.9, 0), (_probe_logistic, "constant", 0.1, 1.1, 1))


def probe_rounds(settings) -> int:
    """Rounds of the probes for an algorithm's typed options: at least :data:`MIN_PROBE_ROUNDS`,
    and long enough that every integer option (a period, a cutoff, a budget) passes twice
    (2 v + 2 rounds), up to :data:`MAX_PROBE_ROUNDS`."""
    from dataclasses import fields
    ints = [int(v) for f in fields(settings) for v in [getattr(settings, f.name)]
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool)]
    return int(min(MAX_PROBE_ROUNDS, max([MIN_PROBE_ROUNDS, *(2 * v + 2 for v in ints)])))


def _quantised(values) -> str:
    """``values`` (a tensor, array or number) as text, each value rounded to :data:`DIGITS`
    significant digits; values below 1e-9 of the largest are written 0 (rounding noise around a
    zero has no significant digits)."""
    arr = np.atleast_1d(np.asarray(values.detach().cpu() if isinstance(values, torch.Tensor) else values,
                                   dtype=np.float64)).ravel()
    finite = arr[np.isfinite(arr)]
    floor = 1e-9 * float(np.abs(finite).max()) if finite.size else 0.0
    out = []
    for v in arr.tolist():
        if math.isfinite(v) and abs(v) <= floor:
            v = 0.0
        out.append(f"{v:.{DIGITS}g}")
    return ",".join(out)


def _recorder(lines: list[str]):
    from .runner import RunCallback

    class Record(RunCallback):
        def on_start(self, run):
            s = run.schedule
            arrays = (s.active, s.uplink_ok, s.local_steps)
            lines.append("schedule " + " ".join(_quantised(a) for a in arrays))

        def after_round(self, run):
            algo = run.algo
            extra = algo.extra_metrics()
            lines.append(f"{run.t} x {_quantised(run.x)} eval {_quantised(algo.eval_params(run.x))} "
                         f"messages {_quantised(algo.messages(run.round_input))} "
                         + " ".join(f"{k} {_quantised(extra[k])}" for k in sorted(extra)))
    return Record()


def probe_record(cls: type, options: dict) -> list[str]:
    """What ``cls`` computes with ``options`` on the probes: one line per probe's schedule and per
    round (model, evaluated model, messages, extra metrics), values rounded to :data:`DIGITS`
    significant digits. Raises what the algorithm raises where it cannot run on them."""
    from .runner import run
    rounds = probe_rounds(cls.check_options(options))
    lines = [f"rounds {rounds}"]
    for make, lr_schedule, lr_local, lr_global, salt in _PROBES:
        problem = make()
        lines.append(f"probe {type(problem).__name__}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")              # idle clients, oracle probabilities, divergence
            run(cls, problem, _probe_schedule(problem.num_clients, rounds, salt), lr_local=lr_local,
                lr_global=lr_global, lr_schedule=lr_schedule, eval_every=rounds, progress=False, seed=0,
                engine="vectorized", device="cpu", callbacks=[_recorder(lines)], **options)
    return lines


_CACHE: dict[tuple, str | None] = {}


def _options_key(options: dict) -> str:
    return json.dumps(options, sort_keys=True, default=lambda v: repr(np.asarray(v).tolist())
                      if isinstance(v, (np.ndarray, torch.Tensor)) else repr(v))


def algorithm_fingerprint(cls: type, options: dict | None = None) -> str | None:
    """``"b1:<sha256>"`` of :func:`probe_record` (``cls`` with ``options`` as a config gives them),
    computed once per process; ``"src:sha256:..."`` (the classes' source, with a warning) where the
    algorithm cannot run on the probes; None where neither can be had."""
    options = dict(options or {})
    key = (cls, _options_key(options))
    if key not in _CACHE:
        try:
            text = "\n".join(probe_record(cls, options))
            _CACHE[key] = BEHAVIOURAL + hashlib.sha256(text.encode()).hexdigest()
        except Exception as e:  # noqa: BLE001 - any failure of a user's algorithm on the probes
            src = legacy_algorithm_fingerprint(cls)
            warnings.warn(f"fingerprint: algorithm {getattr(cls, 'name', cls.__name__)!r} cannot run on the "
                          f"probe problems ({type(e).__name__}: {e}); its stored runs are fingerprinted by "
                          "its source instead", RuntimeWarning, stacklevel=3)
            _CACHE[key] = None if src is None else SOURCE + src
    return _CACHE[key]


def config_fingerprint(config) -> dict[str, str | None]:
    """``{"algorithm": ..., "problem": ...}`` as the code is now: the behavioural fingerprint of the
    config's algorithm with its options (:func:`algorithm_fingerprint`) and the source fingerprint
    of its problem builder (:func:`source_fingerprint`; None for a lambda)."""
    from . import algorithms, problems
    builder = problems.builder(config.problem)
    return {"algorithm": algorithm_fingerprint(algorithms.get(config.algorithm),
                                               config.arguments("algorithm_args")),
            "problem": None if builder.__name__ == "<lambda>" else source_fingerprint(builder)}


def stale_parts(stored: dict | None, config) -> list[str]:
    """Which parts of a stored fingerprint (an entry's ``meta["code"]``) differ from the code as
    it is now: ``[]`` when they agree, when the entry has none (stored before fingerprints) or
    when either side could not be computed."""
    if not stored:
        return []
    now = config_fingerprint(config)
    return [part for part, fp in stored.items() if fp and now.get(part) and now[part] != fp]
