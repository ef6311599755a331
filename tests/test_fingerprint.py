"""A stored run remembers what its code computes (fedlib.fingerprint): the algorithm by its trajectory
on the probe problems (behavioural), the problem by its builder's source. A refactor of an algorithm
changes nothing; a changed rule, option default or helper marks its entries stale, and they are
recomputed where computing is allowed."""

import ast
import inspect
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import fedlib
from fedlib import algorithms, fingerprint
from fedlib.algorithms.base import _REGISTRY
from fedlib.store import Store

ROOT = Path(__file__).resolve().parents[1]
BUILT_INS = sorted(name for name, cls in _REGISTRY.items() if cls.__module__.startswith("fedlib.algorithms"))
BASE = fedlib.ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="uniform",
                               rounds=3, problem_args={"num_clients": 4, "dim": 3},
                               participation_args={"per_round": 2}, lr_local=0.05)


@pytest.fixture
def fresh(monkeypatch):
    """An empty digest cache: the digests below are of the code as the test has patched it."""
    monkeypatch.setattr(fingerprint, "_CACHE", {})


def digest(cls, **options) -> str:
    return fingerprint.algorithm_fingerprint(cls, options)


# ------------------------------------------------------------------ refactors and changed rules
class _RenameLocals(ast.NodeTransformer):
    """Every local variable of every method renamed (``x`` -> ``renamed_x``): a pure refactor."""

    def visit_FunctionDef(self, node):
        args = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                                node.args.vararg, node.args.kwarg) if a is not None}
        stored = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        local = stored - args
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in local:
                n.id = f"renamed_{n.id}"
        return node


def refactored_copy(cls, edit=lambda src: src):
    """A copy of ``cls`` built from its own source with every local variable renamed, after
    ``edit`` (a text edit of the source, e.g. a changed coefficient), in its module's namespace,
    unregistered. Its options and state declarations are those of ``cls``."""
    src = textwrap.dedent(inspect.getsource(cls))
    tree = ast.parse(edit(src))
    (node,) = tree.body
    node.decorator_list = []
    tree = ast.fix_missing_locations(_RenameLocals().visit(tree))
    namespace = dict(vars(sys.modules[cls.__module__]))
    exec(compile(tree, f"<refactored {cls.__name__}>", "exec"), namespace)   # noqa: S102 - our own source
    copy = namespace[cls.__name__]
    assert copy is not cls and ast.unparse(tree) != ast.unparse(ast.parse(src))
    for attr in ("Options", "options", "server_state", "client_state"):
        if attr not in copy.__dict__:
            setattr(copy, attr, getattr(cls, attr))
    return copy


@pytest.mark.parametrize("name", BUILT_INS)
def test_a_pure_refactor_keeps_the_digest_and_a_changed_rule_moves_it(name, fresh):
    cls, algo = algorithms.get(name), name
    before = digest(cls)
    assert before.startswith("b1:") and digest(cls) == before                  # cached, the same
    assert digest(refactored_copy(cls)) == before                              # renamed locals

    class Tiny(cls):                        # the same rule, every step off by a relative 1e-15
        name = f"{algo}_tiny"

        def round(self, x, r):
            return super().round(x, r) * (1 + 1e-15)

    assert digest(Tiny) == before

    class Server(cls):                      # the server's step scaled by 1.02
        name = f"{algo}_server"

        def round(self, x, r):
            return x + 1.02 * (super().round(x, r) - x)

    class Local(cls):                       # the clients' local rate scaled by 1.01
        name = f"{algo}_local"

        def local(self, x_start, clients, r, lr, *args, **kwargs):
            return super().local(x_start, clients, r, lr * 1.01, *args, **kwargs)

    assert len({before, digest(Server), digest(Local)}) == 3


#: a text edit of each family's source that changes its update rule (a coefficient or a term)
RULE_EDITS = {
    "fedavg": ("coef = m / m.sum()", "coef = m / (m.sum() + 0.01)"),
    "fedsum": ('- state["h"], r)', '- 1.01 * state["h"], r)'),
    "scaffold": ("ci_new = ci - c +", "ci_new = ci - 1.01 * c +"),
    "focus": ("self.ys + up", "0.99 * self.ys + up"),
    "mifa": ("self.U.mean(0)", "self.U.mean(0) * 1.01"),
    "fedvarp": ("v = ybar + (delta", "v = 1.01 * ybar + (delta"),
    "fedau": ("(self.since[on] + 1)", "(self.since[on] + 2)"),
    "fedawe": ("(r.t - self.tau[A])", "(r.t - self.tau[A] + 1)"),
    "fednova": ("tau_eff = (p * a).sum()", "tau_eff = (p * a).sum() * 1.01"),
    "fedavg_known_p": ("/ p) @ delta", "/ p.sqrt()) @ delta"),
    "ca_fedavg": ("(m / p) @ delta", "(m / p ** 2) @ delta"),
    "fedacs": ("m @ delta / int(self.settings.draws)", "m @ delta / (int(self.settings.draws) + 1)"),
    "os_sampling": ("(d[pick] / p[pick])", "(d[pick] / p[pick] ** 2)"),
    "amplified_fedavg": ("float(self.settings.gamma) * (x", "float(self.settings.gamma) ** 2 * (x"),
    "fedsum_cr": ("(state[\"z\"] - x) / gap", "(state[\"z\"] - 1.01 * x) / gap"),
    "wait_minibatch": ("self.rounds_done += 1", "self.rounds_done += 2"),
}
#: options with which an edited rule is reached (the default skips it)
RULE_OPTIONS = {"amplified_fedavg": {"gamma": 2.0}}


@pytest.mark.parametrize("name", sorted(RULE_EDITS))
def test_an_edited_update_rule_in_the_source_moves_the_digest(name, fresh):
    cls = algorithms.get(name)
    old, new = RULE_EDITS[name]
    src = inspect.getsource(cls)
    assert src.count(old) == 1, (name, old)
    opts = RULE_OPTIONS.get(name, {})
    assert digest(refactored_copy(cls), **opts) == digest(cls, **opts)
    assert digest(refactored_copy(cls, lambda s: s.replace(old, new)), **opts) != digest(cls, **opts)


def test_a_changed_module_level_helper_moves_the_digests_of_the_algorithms_that_call_it(fresh, monkeypatch):
    """Issue 51: the code an algorithm calls counts (FedNova's and FedACS's normaliser, OS's sampling
    probabilities), not only its class."""
    from fedlib.algorithms import reweighting, sampling
    nova, os_probs = reweighting.nova_normaliser, sampling.os_probabilities
    cases = {"fednova": {}, "fedacs": {}, "os_sampling": {"budget": 3}, "fedavg": {}}
    before = {n: digest(algorithms.get(n), **o) for n, o in cases.items()}
    changed = lambda *args, **kwargs: nova(*args, **kwargs) + 0.5      # noqa: E731 (a scale would cancel)
    monkeypatch.setattr(reweighting, "nova_normaliser", changed)
    monkeypatch.setattr(sampling, "nova_normaliser", changed)
    monkeypatch.setattr(sampling, "os_probabilities", lambda norms, budget: os_probs(norms, budget).sqrt())
    monkeypatch.setattr(fingerprint, "_CACHE", {})
    after = {n: digest(algorithms.get(n), **o) for n, o in cases.items()}
    assert [n for n in cases if after[n] != before[n]] == ["fednova", "fedacs", "os_sampling"]


# ------------------------------------------------------------------ every option reaches the probes
W1 = list(np.linspace(0.5, 2.0, 16) / np.linspace(0.5, 2.0, 16).sum())
W2 = list(np.full(16, 1 / 16))
_AGG = {"aggregation": [({}, {"aggregation": a}) for a in ("contacted", "all")]
        + [({}, {"aggregation": "weights", "weights": W1})],
        "weights": [({"aggregation": "weights", "weights": W1}, {"aggregation": "weights", "weights": W2})],
        "momentum": [({}, {"momentum": 0.5})], "prox_mu": [({}, {"prox_mu": 0.5})]}
#: per option: pairs (options, the same with this option changed from its default or its first value)
OPTION_CHANGES = {
    **_AGG,
    "P": [({"gamma": 2.0}, {"gamma": 2.0, "P": 3})],
    "gamma": [({}, {"gamma": 2.0}), ({"P": 3}, {"P": 3, "gamma": 0.5})],
    "cycle": [({}, {"cycle": 3})],
    "rebuild": [({}, {"rebuild": "rate_sum"})],
    "cutoff": [({}, {"cutoff": 2}), ({"cutoff": 3}, {"cutoff": 4})],
    "clip": [({}, {"clip": 0.05})],
    "evaluate": [({}, {"evaluate": "mean_of_copies"})],
    "p": [({}, {"p": 0.5})],
    "uplink_p": [({}, {"uplink_p": 0.5})],
    "draws": [({}, {"draws": 3})],
    "budget": [({}, {"budget": 3}), ({"budget": 4}, {"budget": 5})],
    "sampling": [({}, {"sampling": "with_replacement"})],
    "uplink_vectors": [({}, {"uplink_vectors": 1})],
    "dy_divisor": [({}, {"dy_divisor": 3.0})],
}
#: the FedACS weights: the problem's (default) against given ones
FEDACS_WEIGHTS = [({}, {"weights": W2})]
#: changes that cannot change what an algorithm computes, with the reason
CANNOT_MATTER = {
    # the wait-for-all baselines ask every client and every upload arrives: the arrivals, the
    # clients asked and N are one number
    ("wait_minibatch", "aggregation", "contacted"), ("wait_minibatch", "aggregation", "all"),
    ("wait_full", "aggregation", "contacted"), ("wait_full", "aggregation", "all"),
}


@pytest.mark.parametrize("name", BUILT_INS)
def test_every_option_of_every_built_in_changes_what_the_probes_record(name):
    cls = algorithms.get(name)
    for option in cls.Options.names():
        changes = FEDACS_WEIGHTS if (name, option) == ("fedacs", "weights") else OPTION_CHANGES[option]
        for a, b in changes:
            if set(a) | set(b) <= set(cls.Options.names()) and \
                    (name, option, str(b.get(option))) not in CANNOT_MATTER:
                ra, rb = fingerprint.probe_record(cls, a), fingerprint.probe_record(cls, b)
                assert ra != rb, (name, option, a, b)


def test_the_probes_reach_the_branches_the_rules_take():
    """The probe's schedule has what the algorithms branch on: rounds where nobody delivers, failed
    uploads among active clients, a client counted more than once, unequal local steps, and a client
    absent for almost the whole probe."""
    s = fingerprint._probe_schedule(16, 102, 0)
    delivered = (s.active > 0) & s.uplink_ok
    assert (~delivered.any(1)).sum() >= 2 and ((s.active > 0) & ~s.uplink_ok).any()
    assert s.active.max() >= 3 and len(np.unique(s.local_steps)) == 3
    assert ((s.active > 0).sum(1) >= 12).any() and ((s.active > 0).sum(1) <= 3).any()
    assert np.flatnonzero(s.active[:, 15]).tolist() == [0, 101]
    assert fingerprint.probe_rounds(algorithms.get("fedau").check_options({})) == 102
    fedavg = algorithms.get("fedavg").check_options({})
    assert fingerprint.probe_rounds(fedavg) == fingerprint.MIN_PROBE_ROUNDS


def test_the_digest_is_the_same_with_another_instruction_set():
    """Values are rounded to 9 significant digits before hashing: the AVX2 kernels (instead of
    AVX-512 where the CPU has it) give the same digests."""
    code = ("import json, fedlib; from fedlib import algorithms, fingerprint; print(json.dumps("
            f"{{n: fingerprint.algorithm_fingerprint(algorithms.get(n), {{}}) for n in {BUILT_INS!r}}}))")
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=ROOT)
    other = json.loads(out.stdout.strip().splitlines()[-1])
    assert other == {n: digest(algorithms.get(n)) for n in BUILT_INS}


# ------------------------------------------------------------------ users' algorithms
def _module(tmp_path, monkeypatch, body: str, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    return importlib.import_module(name)


RULE = '''
from fedlib.algorithms import register
from fedlib.algorithms.fedavg import FedAvg

@register(replace=True)
class Mine(FedAvg):
    """Docstring {doc}."""
    name = "mine_fp"

    def round(self, x, r):
        # a comment {doc}
        {local} = super().round(x, r)
        return x + {factor} * ({local} - x)
'''


def test_docstrings_comments_and_refactors_do_not_count_but_the_rule_does(tmp_path, monkeypatch):
    a = _module(tmp_path, monkeypatch, RULE.format(doc="one", local="new", factor="1.0"), "fp_a")
    b = _module(tmp_path, monkeypatch, RULE.format(doc="two, longer", local="stepped", factor="1"), "fp_b")
    c = _module(tmp_path, monkeypatch, RULE.format(doc="one", local="new", factor="1.5"), "fp_c")
    fa, fb, fc = (digest(m.Mine) for m in (a, b, c))
    assert fa == fb != fc
    assert fa == digest(algorithms.get("fedavg"))                   # x + 1.0 (y - x) is FedAvg's rule
    fp = fingerprint.config_fingerprint(BASE.replace(algorithm="mine_fp"))
    assert fp["algorithm"] == fc                                    # c: the last registered
    assert fp["problem"] and fp["problem"].startswith("sha256:")


HELPER = '''
from dataclasses import dataclass
from fedlib.algorithms import option, register
from fedlib.algorithms.fedavg import FedAvg, FedAvgOptions
from fedlib.algorithms.options import positive


def damping():
    return {damping}


@dataclass(frozen=True)
class MineOptions(FedAvgOptions):
    scale: float = option({default}, *positive(), doc="the server step's scale")


@register(replace=True)
class Mine(FedAvg):
    name = "mine_helper"
    Options = MineOptions

    def round(self, x, r):
        return x + self.settings.scale * damping() * (super().round(x, r) - x)
'''


def test_a_users_changed_helper_or_options_default_makes_the_stored_entries_stale(tmp_path, monkeypatch):
    """Issue 51: the source of the class alone did not change, so the old fingerprint missed both."""
    v1 = _module(tmp_path, monkeypatch, HELPER.format(damping="1.0", default="1.0"), "fp_helper_v1")
    cfg = BASE.replace(algorithm="mine_helper")
    store = tmp_path / "store"
    fedlib.sweep([cfg], store, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fedlib.sweep([cfg], store, progress=False, compute=False)            # current: no warning
    v2 = _module(tmp_path, monkeypatch, HELPER.format(damping="0.9", default="1.0"), "fp_helper_v2")
    source = fingerprint.legacy_algorithm_fingerprint
    assert source(v2.Mine) == source(v1.Mine)
    with pytest.warns(RuntimeWarning, match=r"stale entry .*algorithm 'mine_helper'"):
        fedlib.sweep([cfg], store, progress=False, compute=False)
    v3 = _module(tmp_path, monkeypatch, HELPER.format(damping="1.0", default="1.2"), "fp_helper_v3")
    assert source(v3.Mine) == source(v1.Mine)
    with pytest.warns(RuntimeWarning, match=r"stale entry .*algorithm 'mine_helper'"):
        fedlib.sweep([cfg], store, progress=False, compute=False)
    # a config that gives the old default's value computes what it computed: current
    given = cfg.replace(algorithm_args=(("scale", 1.0),))
    fedlib.sweep([given], store, progress=False)
    _module(tmp_path, monkeypatch, HELPER.format(damping="1.0", default="1.0"), "fp_helper_v4")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fedlib.sweep([cfg, given], store, progress=False, compute=False)     # back to v1's behaviour


def test_a_changed_rule_is_reported_and_recomputed_or_loaded_when_computing_is_off(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, RULE.format(doc="v1", local="new", factor="1.0"), "fp_v1")
    cfg = BASE.replace(algorithm="mine_fp")
    store = tmp_path / "store"
    fedlib.sweep([cfg], store, progress=False)
    first = Store(store).read(cfg.key())
    assert first.meta["code"]["algorithm"] == fingerprint.config_fingerprint(cfg)["algorithm"]
    fedlib.sweep([cfg], store, progress=False, compute=False)               # the same code: silent
    _module(tmp_path, monkeypatch, RULE.format(doc="v1", local="new", factor="1.5"), "fp_v2")
    stale = r"stale entry .*the code of its algorithm 'mine_fp' has changed"
    with pytest.warns(RuntimeWarning, match=stale):
        fedlib.sweep([cfg], store, progress=False, compute=False)          # loaded as it is
    assert Store(store).read(cfg.key()).meta["date"] == first.meta["date"]
    with pytest.warns(RuntimeWarning, match="stale entry"):
        fedlib.sweep([cfg], store, progress=False)                          # recomputed
    again = Store(store).read(cfg.key())
    assert again.meta["code"]["algorithm"] != first.meta["code"]["algorithm"]
    assert fingerprint.stale_parts(again.meta["code"], cfg) == []


KIND = """
import numpy as np
from fedlib import participation

@participation.kind("mine_kind", description="the first clients, every round", replace=True)
def mine_kind(rng, rounds, n):
    active = np.zeros((rounds, n), dtype=np.int64)
    active[:, :{k}] = 1
    return participation.Draw(active)
"""


def test_a_users_changed_participation_kind_makes_its_stored_entries_stale(tmp_path, monkeypatch):
    """A kind is part of what computes a run: its body edited, the runs stored of it are stale
    (named by the kind), recomputed where computing is allowed, and then current again."""
    from fedlib import participation
    monkeypatch.setattr(participation, "_KINDS", dict(participation._KINDS))    # the registry as it was
    _module(tmp_path, monkeypatch, KIND.format(k=2), "fp_kind_v1")
    cfg = BASE.replace(participation="mine_kind", participation_args={})
    store = tmp_path / "store"
    first = fedlib.sweep([cfg], store, progress=False)
    code = Store(store).read(cfg.key()).meta["code"]
    assert code["participation"] == fingerprint.config_fingerprint(cfg)["participation"] is not None
    assert fingerprint.stale_parts({k: v for k, v in code.items() if k != "participation"}, cfg) == []
    _module(tmp_path, monkeypatch, KIND.format(k=3), "fp_kind_v2")                 # the body edited
    assert fingerprint.stale_parts(code, cfg) == ["participation"]
    with pytest.warns(RuntimeWarning, match=r"stale entry .*participation kind 'mine_kind' has changed"):
        again = fedlib.sweep([cfg], store, progress=False)                      # recomputed
    assert not np.isclose(again["loss"].iloc[-1], first["loss"].iloc[-1])
    assert fingerprint.stale_parts(Store(store).read(cfg.key()).meta["code"], cfg) == []


def test_a_kind_without_a_readable_source_or_not_imported_is_not_compared(monkeypatch):
    """A lambda, an instance with __call__ (unhashable) or a kind not registered in this process
    (a user's module not imported) has no participation part: nothing to compare, nothing stale."""
    from fedlib import participation
    monkeypatch.setattr(participation, "_KINDS", dict(participation._KINDS))

    class Everyone:
        __hash__ = None                                         # an unhashable callable

        def __call__(self, rng, rounds, n):
            return participation.Draw(np.ones((rounds, n), dtype=np.int64))

    participation.register_kind("lambda_kind", lambda rng, rounds, n: np.ones((rounds, n), dtype=np.int64),
                                description="everyone")
    participation.register_kind("callable_kind", Everyone(), description="everyone")
    for name in ("lambda_kind", "callable_kind"):
        cfg = BASE.replace(participation=name, participation_args={})
        assert fingerprint.config_fingerprint(cfg)["participation"] is None
        assert fingerprint.stale_parts({"participation": "sha256:0"}, cfg) == []
    cfg = BASE.replace(participation="lambda_kind", participation_args={})
    del participation._KINDS["lambda_kind"]                     # as in a process that did not import it
    assert fingerprint.config_fingerprint(cfg)["participation"] is None


def test_an_algorithm_that_cannot_run_on_the_probes_is_fingerprinted_by_its_source(tmp_path, monkeypatch):
    body = '''
    from fedlib.algorithms import register
    from fedlib.algorithms.fedavg import FedAvg

    @register(replace=True)
    class NeedsNeural(FedAvg):
        name = "needs_neural"

        def init(self, x0, nominal_steps):
            if not self.problem.has_module:
                raise ValueError("problem: needs a neural problem")
            super().init(x0, nominal_steps)
    '''
    m = _module(tmp_path, monkeypatch, body, "fp_neural")
    with pytest.warns(RuntimeWarning, match="^fingerprint: algorithm 'needs_neural' cannot run on the probe "
                                            r"problems \(ValueError: problem: needs a neural problem\)"):
        fp = digest(m.NeedsNeural)
    assert fp == "src:" + fingerprint.legacy_algorithm_fingerprint(m.NeedsNeural)


def test_entries_without_a_fingerprint_are_not_flagged():
    assert fingerprint.stale_parts(None, BASE) == []
    assert fingerprint.stale_parts({"algorithm": None, "problem": None}, BASE) == []
    assert fingerprint.stale_parts({"algorithm": "sha256:0"}, BASE) == ["algorithm"]


def test_the_fingerprint_is_of_the_code_loaded_not_of_the_file_edited_since(tmp_path, monkeypatch):
    # a long sweep's process keeps running the code it imported while its files are edited: its
    # later entries must carry the fingerprint of that code
    import linecache
    _module(tmp_path, monkeypatch, RULE.format(doc="live", local="new", factor="1.0"), "fp_live")
    cfg = BASE.replace(algorithm="mine_fp")
    before = fingerprint.config_fingerprint(cfg)
    path = tmp_path / "fp_live.py"
    path.write_text("\n\nX = 1\n" + path.read_text().replace("1.0 *", "2.0 *"))
    linecache.checkcache()
    assert fingerprint.config_fingerprint(cfg) == before
    edited = _module(tmp_path, monkeypatch, path.read_text(), "fp_live_edited")   # a new import sees it
    assert algorithms.get("mine_fp") is edited.Mine
    assert fingerprint.config_fingerprint(cfg)["algorithm"] != before["algorithm"]


# ------------------------------------------------------------------ renewing stored fingerprints
RENEW = '''
from fedlib.algorithms import register
from fedlib.algorithms.fedavg import FedAvg

@register(replace=True)
class Mine(FedAvg):
    name = "mine_renew"

    def round(self, x, r):
        out = super().round(x, r)
        return out{extra}
'''


def _rewrite_code(entry, algorithm_fp):
    meta = json.loads((entry.path / "meta.json").read_text())
    meta["code"]["algorithm"] = algorithm_fp
    from fedlib.store import write_meta
    write_meta(entry.path, meta)        # sealed again, as an entry stored under the old scheme was


def test_renew_migrates_the_same_code_and_replays_the_rest(tmp_path, monkeypatch):
    """An entry that records the source fingerprint of its algorithm's classes as they are (the
    scheme before behavioural fingerprints) is migrated without a replay; one that records another
    source is replayed with zero tolerance: renewed when no bit moved, else left stale. Results and
    digests are untouched, and a second run changes nothing."""
    from fedlib.verification import renew_fingerprints
    v1 = _module(tmp_path, monkeypatch, RENEW.format(extra=""), "fp_renew_v1")
    cfgs = [BASE.replace(algorithm="mine_renew", rounds=4, eval_every=1, seed=s) for s in (0, 1)]
    store = tmp_path / "store"
    fedlib.sweep(cfgs, store, progress=False)
    assert renew_fingerprints(store) == {}                            # nothing stale: nothing to do
    same, other = (Store(store).read(c.key()) for c in cfgs)
    history = (same.path / "history.csv").read_bytes()
    _rewrite_code(same, fingerprint.legacy_algorithm_fingerprint(v1.Mine))      # as stored before "b1:"
    _rewrite_code(other, "sha256:" + "0" * 64)                                  # another source
    assert renew_fingerprints(store) == {cfgs[0].key(): "migrated", cfgs[1].key(): "renewed"}
    after = Store(store).read(cfgs[0].key())
    assert fingerprint.stale_parts(after.meta["code"], cfgs[0]) == []
    assert after.meta["code"]["algorithm"].startswith("b1:")
    assert (after.path / "history.csv").read_bytes() == history
    assert after.meta["digests"] == same.meta["digests"]
    (rec,) = after.meta["renewed"]
    assert rec["from"]["algorithm"].startswith("sha256:") and rec["to"] == after.meta["code"]
    assert rec["rounds_replayed"] == 0 and rec["check"].startswith("migrated")
    (rec,) = Store(store).read(cfgs[1].key()).meta["renewed"]
    assert rec["rounds_replayed"] >= 1 and rec["check"].startswith("replay")
    before = {c.key(): (Store(store).path / c.key() / "meta.json").read_bytes() for c in cfgs}
    assert renew_fingerprints(store) == {}                            # idempotent
    assert {c.key(): (Store(store).path / c.key() / "meta.json").read_bytes() for c in cfgs} == before

    _module(tmp_path, monkeypatch, RENEW.format(extra=" * 0.5"), "fp_renew_v3")  # another rule
    out = renew_fingerprints(store)
    assert set(out) == {c.key() for c in cfgs} and all(v.startswith("differs: ") for v in out.values())
    assert fingerprint.stale_parts(Store(store).read(cfgs[0].key()).meta["code"], cfgs[0]) == ["algorithm"]


def test_renew_migrates_a_source_recorded_as_refactored_into_the_current_one(tmp_path, monkeypatch):
    """LEGACY_REFACTORS: an entry stored with the source of the classes before a refactor that was
    shown to keep what they compute is migrated without a replay; an unlisted source is replayed."""
    from fedlib.verification import renew_fingerprints
    v1 = _module(tmp_path, monkeypatch, RENEW.format(extra=""), "fp_renew_table")
    cfg = BASE.replace(algorithm="mine_renew", rounds=3)
    store = tmp_path / "store"
    fedlib.sweep([cfg], store, progress=False)
    before = "sha256:" + "1" * 64
    _rewrite_code(Store(store).read(cfg.key()), before)
    now = fingerprint.legacy_algorithm_fingerprint(v1.Mine)
    monkeypatch.setitem(fingerprint.LEGACY_REFACTORS, now, frozenset({before}))
    assert fingerprint.same_legacy_code(before, v1.Mine) and not fingerprint.same_legacy_code("b1:0", v1.Mine)
    assert renew_fingerprints(store) == {cfg.key(): "migrated"}


def test_renew_from_the_command_line_prints_the_counts(tmp_path, monkeypatch, capsys):
    from fedlib.__main__ import main
    v1 = _module(tmp_path, monkeypatch, RENEW.format(extra=""), "fp_renew_cli")
    cfg = BASE.replace(algorithm="mine_renew", rounds=3)
    store = tmp_path / "store"
    fedlib.sweep([cfg], store, progress=False)
    _rewrite_code(Store(store).read(cfg.key()), fingerprint.legacy_algorithm_fingerprint(v1.Mine))
    assert main(["renew", str(store)]) == 0
    assert "1 stale entries of 1: 1 migrated" in capsys.readouterr().out
    assert main(["renew", str(store)]) == 0
    assert "0 stale entries of 1: 0 migrated" in capsys.readouterr().out


# ------------------------------------------------------------------ issue 53's "done when"
def test_a_renamed_variable_in_fedavg_round_leaves_every_committed_entry_current_and_a_changed_rule_does_not(
        monkeypatch):
    """FedAvg rebuilt from its own source with every local variable renamed, registered in its
    place: no committed fedavg entry is stale. Its 'participants' rule changed (a term added to the
    divisor): exactly the entries that aggregate that way are stale; those that divide by the clients
    asked ('contacted') computed nothing the change touches and stay current."""
    from fedlib.algorithms.fedavg import FedAvg
    stores = sorted(p for pat in ("*/quick", "*/paper") for p in (ROOT / "results").glob(pat) if p.is_dir())
    entries = [e for p in stores for st in [Store(p)] for k in st.keys() if k.startswith("fedavg-")
               for e in [st.read(k)] if e.meta.get("code")]
    assert len(entries) >= 20

    def stale_keys(cls):
        monkeypatch.setitem(_REGISTRY, "fedavg", cls)
        monkeypatch.setattr(fingerprint, "_CACHE", {})
        found = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for e in entries:
                st = Store(e.path.parent)
                assert st.get(e.config) is not None
                found.update(st.stale)
        return set(found)

    assert stale_keys(refactored_copy(FedAvg)) == set()
    changed = refactored_copy(FedAvg, lambda src: src.replace("coef = m / m.sum()",
                                                              "coef = m / (m.sum() + 0.01)"))
    participants = {e.path.name for e in entries if e.config.arguments("algorithm_args").get(
        "aggregation", "participants") == "participants"}
    assert participants and participants != {e.path.name for e in entries}
    assert stale_keys(changed) == participants
