"""Fingerprints of the code that computes a run, so that a stored run whose code computes something
else since it was stored is noticed (:class:`fedlib.store.Store` marks it stale).

A stored entry's ``meta["code"]`` holds three parts:

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
* **participation** -- the source fingerprint of the function that draws the config's
  participation kind (:func:`fedlib.participation.kind_function`; its decorator included, so an
  edited description counts too; a helper it calls does not), so that a user's kind whose body
  changes marks its runs stale as a changed algorithm does. Entries stored before this part
  existed carry none, and a part an entry does not carry is never compared (:func:`stale_parts`).
  A kind's files (a trace) enter the run's store key by their content, not here; a dataset's
  files enter neither.

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
from ._validate import warn

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
#: Issue 53's refactor (options and state declared in the class bodies, ``self.settings`` the one
#: way to read options, ``fixed_point`` and ``declare`` gone): every built-in's behavioural digest,
#: with its default options and with the options of every committed store's entries, is the same
#: before and after it, and every committed store verifies after it.
LEGACY_REFACTORS: dict[str, frozenset[str]] = {
    # amplified_fedavg
    "sha256:7eb245c124c3ac8ba8744e2f972d0b72d9e0d77026f309486d9000cdc2caea1e":
        frozenset({"sha256:f3f9bd55c182a107ffd8014e51947aedc9c94292ca7a2c20ee46754d6c8f6296"}),
    # ca_fedavg
    "sha256:d070769297de66cb98a968025244e272bfcae610285b8b2d7b1f19e65edbb4a5":
        frozenset({"sha256:77a263b568490e268726b0daceb2ec7ec97e84121646db3f7d9c3308de4b17a9"}),
    # fedacs
    "sha256:8aec610a0ce93cf157606d422776d23b3a2fbea36c154a826dc6ec203b197774":
        frozenset({"sha256:e03d2075b0256077fd00eda5f5b0512957a40535a8d2105e27839c9d80f7bb59"}),
    # fedau
    "sha256:5f98c56bdd3def076718c3eb4c4c8f051ee1aa3c3a16dc9cc9a6c826a8e44651":
        frozenset({"sha256:2d57428339b5c1d47652ed20946a583f6dc5d96694b75c398b46710b1c4ff707"}),
    # fedavg
    "sha256:52a1d62be5d9afec6a6f48fe28a352724183e647af5512a6d12ee5b642a252d1":
        frozenset({"sha256:b9033feb559b082dce611309f0c65e7d4d6ab6925551316f8e27c4fdaf093017"}),
    # fedavg_known_p
    "sha256:83fad23bbdf272c54af7c029aed9a717e011be1fffdfc055ca19ad83c4c4c32d":
        frozenset({"sha256:f47dd1ab6cb38409a3f45eb19d7a1f4d2ecc5fdae520361d8d425d105f3ce9e0"}),
    # fedawe
    "sha256:a764156afb0299e4f81b18476d01ee67ffe22dfa23fd6c26dbc74040d35c86b7":
        frozenset({"sha256:8a3857b4e12ea2507f19bf7af121b447fcfc0d2943afbeaeecd6b4d076f95464"}),
    # fednova
    "sha256:a54ac5077b51a4bc08beede8d9e1bc6c4ff1440c20452d224cd7baaf8b75a9b3":
        frozenset({"sha256:7ca0b1283ac8c6384bad8028c3a9531d4033733e7613b4ac7e70759d20fda0b6"}),
    # fedsum
    "sha256:f616ddfcfcae0801e6360bcbbaf2e0fb6955587a3b9b13344302c775495cab7a":
        frozenset({"sha256:300a28c4588a4708ffa28d25a67d6189eb161c6f46cf8f70959465a5c1fe80fe"}),
    # fedsum_b
    "sha256:4380f1e8583da1161607a0417f1bbe3f0378a15192a19ed4df40cd2bf8113f28":
        frozenset({"sha256:bd2e7d123b14ab8cbf4c270172d54a0fda592bf57d67b793491e3673cc962fa6"}),
    # fedsum_cr
    "sha256:1074279c143a6a84c0ab16df0c00b304f1daf556e9b9440bd637e79e39f2de49":
        frozenset({"sha256:2eb433bb8aef006407a085131c51d6fb3491a160a20ce353276b9e2588cc187f"}),
    # fedvarp
    "sha256:1c8bf2d63b32454156fac5d683014338ac75f024b35268803058f94be32a1489":
        frozenset({"sha256:68e75f7f9a02f3f350dfd3af678ef6f43a1f4d8223e206ea3a95d3c96372b315"}),
    # focus
    "sha256:03783c82508cb088be868cf00624142c06e46b72bb2d5196fae98e47c83e5100":
        frozenset({"sha256:a9e9aef4f02da6deaa25fce9ba1f7eabadcde10513f8abad822fd70647bb2f7d"}),
    # mifa
    "sha256:2fcad01d2c35f816ca947b56b99688c38ae855b8a4d104d18ea3a8c225fa0452":
        frozenset({"sha256:c444b918eba7766a5e044022f21034b73c327b6c8a142bb25bf8fb6a86110642"}),
    # os_sampling
    "sha256:58ee32e6e8ff2066ae3a6a183f44cc61b76156cc759d068aa9ab87f9b71b7461":
        frozenset({"sha256:8a1cc38bf69528c174ed3eb72a617c4bf3dbc539f14f40ca5983f9a8b42f02bc"}),
    # scaffold
    "sha256:8477b2cd79436bdd1013c1581507f067a42f968fae24c5f11f69210f3ad5eb5a":
        frozenset({"sha256:f72065795defa524fe97bd3f5f87e88570129f86acd04736c26c4914ab7ec5b1"}),
    # sg_focus
    "sha256:9d69cdcc58cd50a06918821372fb4a972b0a4c0c4496feceaaf51af00191bc04":
        frozenset({"sha256:3ae3e94597470fac78710b72778f17055b4b9422df0e571c0bd61dc878755578"}),
    # wait_full
    "sha256:217d48f86752c4750f4e2ead893edca2e431a5c4fa3a5c8668063e0107462242":
        frozenset({"sha256:31237b4b05afa00f1353d9b9f91bec4dcdc9d7202d7eb0d8015db64f5e0f3840"}),
    # wait_minibatch
    "sha256:08e941a9586896d7361a64b47442e162a9ee1262fba79f05e44ad3e54e741645":
        frozenset({"sha256:6a5aea78594fae3d6ac0aefc207f772c590b2c126c821ffdde4f8d2935783a7b"}),
}


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
    from dataclasses import fields, is_dataclass
    if not is_dataclass(settings) or isinstance(settings, type):
        from ._validate import InputError
        raise InputError(f"settings: must be an algorithm's Options instance (a dataclass), got "
                         f"{type(settings).__name__} {settings!r}")
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
            warn(f"fingerprint: algorithm {getattr(cls, 'name', cls.__name__)!r} cannot run on the "
                 f"probe problems ({type(e).__name__}: {e}); its stored runs are fingerprinted by "
                 "its source instead")
            _CACHE[key] = None if src is None else SOURCE + src
    return _CACHE[key]


def config_fingerprint(config) -> dict[str, str | None]:
    """``{"algorithm": ..., "problem": ..., "participation": ...}`` as the code is now: the
    behavioural fingerprint of the config's algorithm with its options
    (:func:`algorithm_fingerprint`) and the source fingerprints of its problem builder and of its
    participation kind's function (:func:`source_fingerprint`; None for a lambda or a source that
    cannot be read)."""
    from . import algorithms, participation, problems
    _check_config(config)
    builder = problems.builder(config.problem)
    known = config.participation in participation.available()     # a user's kind not imported: not compared
    draw = participation.kind_function(config.participation) if known else None
    return {"algorithm": algorithm_fingerprint(algorithms.get(config.algorithm),
                                               config.arguments("algorithm_args")),
            "problem": _source_or_none(builder), "participation": draw and _source_or_none(draw)}


def _source_or_none(fn) -> str | None:
    """:func:`source_fingerprint` of a function; None for a lambda (no name to tell it by)."""
    return None if getattr(fn, "__name__", "<lambda>") == "<lambda>" else source_fingerprint(fn)


def stale_parts(stored: dict | None, config) -> list[str]:
    """Which parts of a stored fingerprint (an entry's ``meta["code"]``) differ from the code as
    it is now: ``[]`` when they agree, when the entry has none (stored before fingerprints) or
    when either side could not be computed."""
    _check_config(config)
    if stored is not None and not isinstance(stored, dict):
        from ._validate import InputError
        raise InputError(f"stored: must be an entry's meta['code'] (a dict) or None, got "
                         f"{type(stored).__name__} {stored!r}")
    if not stored:
        return []
    from .runner import changed_parts
    return changed_parts(stored, config_fingerprint(config))


def _check_config(config) -> None:
    from ._validate import InputError
    from .config import ExperimentConfig
    if not isinstance(config, ExperimentConfig):
        raise InputError(f"config: must be a fedlib.ExperimentConfig, got {type(config).__name__} {config!r}")


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
