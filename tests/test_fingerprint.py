"""A stored run remembers the code that computed it (fedlib.fingerprint): a changed update rule is
reported, and recomputed where computing is allowed."""

import textwrap
import warnings

import pytest

import fedlib
from fedlib import algorithms, fingerprint
from fedlib.store import Store

BASE = fedlib.ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="uniform",
                               rounds=3, problem_args={"num_clients": 4, "dim": 3},
                               participation_args={"per_round": 2}, lr_local=0.05)


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

    def round(self, *args, **kwargs):
        # a comment {doc}
        scale = 1.0{extra}
        return super().round(*args, **kwargs)
'''


def test_docstrings_comments_and_layout_do_not_count_but_code_does(tmp_path, monkeypatch):
    a = _module(tmp_path, monkeypatch, RULE.format(doc="one", extra=""), "fp_a")
    b = _module(tmp_path, monkeypatch, RULE.format(doc="two, longer", extra=""), "fp_b")
    c = _module(tmp_path, monkeypatch, RULE.format(doc="one", extra=" * scale"), "fp_c")
    fa, fb, fc = (fingerprint.source_fingerprint(m.Mine) for m in (a, b, c))
    assert fa == fb and fa != fc and fa.startswith("sha256:")
    # a subclass covers its parent's rule too (FedAvg here), not the shared Algorithm base
    parent = algorithms.fedavg.FedAvg
    assert fingerprint.source_fingerprint(a.Mine) != fingerprint.source_fingerprint(a.Mine, parent)
    fp = fingerprint.config_fingerprint(BASE.replace(algorithm="mine_fp"))
    assert fp["algorithm"] == fingerprint.source_fingerprint(c.Mine, algorithms.fedavg.FedAvg)  # c: the last
    assert fp["problem"] and fp["problem"].startswith("sha256:")


def test_a_changed_rule_is_reported_and_recomputed_or_loaded_when_computing_is_off(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, RULE.format(doc="v1", extra=""), "fp_v1")
    cfg = BASE.replace(algorithm="mine_fp")
    store = tmp_path / "store"
    fedlib.sweep([cfg], store, progress=False)
    first = Store(store).read(cfg.key())
    assert first.meta["code"]["algorithm"] == fingerprint.config_fingerprint(cfg)["algorithm"]
    # the same code: loaded silently
    fedlib.sweep([cfg], store, progress=False, compute=False)
    # the rule changes (a researcher edits their algorithm): reported by name
    _module(tmp_path, monkeypatch, RULE.format(doc="v1", extra=" * scale"), "fp_v2")
    stale = r"stale entry .*the code of its algorithm 'mine_fp' has changed"
    with pytest.warns(RuntimeWarning, match=stale):
        fedlib.sweep([cfg], store, progress=False, compute=False)          # loaded as it is
    assert Store(store).read(cfg.key()).meta["date"] == first.meta["date"]
    with pytest.warns(RuntimeWarning, match="stale entry"):
        fedlib.sweep([cfg], store, progress=False)                          # recomputed
    again = Store(store).read(cfg.key())
    assert again.meta["code"]["algorithm"] != first.meta["code"]["algorithm"]
    assert fingerprint.stale_parts(again.meta["code"], cfg) == []


def test_entries_without_a_fingerprint_are_not_flagged():
    assert fingerprint.stale_parts(None, BASE) == []
    assert fingerprint.stale_parts({"algorithm": None, "problem": None}, BASE) == []
    assert fingerprint.stale_parts({"algorithm": "sha256:0"}, BASE) == ["algorithm"]


def test_the_fingerprint_is_of_the_code_loaded_not_of_the_file_edited_since(tmp_path, monkeypatch):
    # a long sweep's process keeps running the code it imported while its files are edited: its
    # later entries must carry the fingerprint of that code (inspect would read the new file at
    # the old line numbers)
    import linecache
    _module(tmp_path, monkeypatch, RULE.format(doc="live", extra=""), "fp_live")
    cfg = BASE.replace(algorithm="mine_fp")
    before = fingerprint.config_fingerprint(cfg)
    path = tmp_path / "fp_live.py"
    path.write_text("\n\nX = 1\n" + path.read_text().replace("scale = 1.0", "scale = 2.0"))
    linecache.checkcache()
    assert fingerprint.config_fingerprint(cfg) == before
    edited = _module(tmp_path, monkeypatch, path.read_text(), "fp_live_edited")   # a new import sees it
    assert algorithms.get("mine_fp") is edited.Mine
    assert fingerprint.config_fingerprint(cfg)["algorithm"] != before["algorithm"]


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


def test_renewing_fingerprints_needs_a_bitwise_replay(tmp_path, monkeypatch):
    """A refactor that cannot move a bit (here: the step multiplied by the integer 1) leaves the
    entry stale until renew_fingerprints replays it with zero tolerance; then it carries the new
    fingerprint, the old one and the evidence, and its results and digests are untouched. A change
    of the arithmetic (x 0.5) is found by the replay and left stale, to be recomputed."""
    from fedlib.verification import renew_fingerprints
    _module(tmp_path, monkeypatch, RENEW.format(extra=""), "fp_renew_v1")
    cfg = BASE.replace(algorithm="mine_renew", rounds=4, eval_every=1)
    store = tmp_path / "store"
    fedlib.sweep([cfg], store, progress=False)
    before = Store(store).read(cfg.key())
    history = (before.path / "history.csv").read_bytes()
    assert renew_fingerprints(store) == {}                            # nothing stale: nothing to do

    _module(tmp_path, monkeypatch, RENEW.format(extra=" * 1"), "fp_renew_v2")
    assert fingerprint.stale_parts(before.meta["code"], cfg) == ["algorithm"]
    assert renew_fingerprints(store) == {cfg.key(): "renewed"}
    after = Store(store).read(cfg.key())
    assert fingerprint.stale_parts(after.meta["code"], cfg) == []
    assert (after.path / "history.csv").read_bytes() == history
    assert after.meta["digests"] == before.meta["digests"]
    (rec,) = after.meta["renewed"]
    assert rec["from"] == before.meta["code"] and rec["to"] == after.meta["code"]
    assert rec["rounds_replayed"] >= 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                # no stale warning any more
        fedlib.sweep([cfg], store, progress=False, compute=False)

    _module(tmp_path, monkeypatch, RENEW.format(extra=" * 0.5"), "fp_renew_v3")
    out = renew_fingerprints(store)
    assert out[cfg.key()].startswith("differs: ")
    assert fingerprint.stale_parts(Store(store).read(cfg.key()).meta["code"], cfg) == ["algorithm"]
