"""fedlib.verification: replaying stored runs; every committed store's configs build and one entry
reproduces."""


import pytest

import fedlib
from fedlib import sweeps
from fedlib.store import Store

from .run_helpers import ROOT
from .run_helpers import base_config as _base


def test_verify_passes_on_a_true_entry_and_names_what_differs_on_a_false_one(tmp_path):
    c = _base(rounds=30, eval_every=5)
    fedlib.sweep([c], tmp_path, progress=False)
    entry = Store(tmp_path).get(c)
    rep = fedlib.verify(entry)
    assert rep.ok and rep.rounds == 5 and rep.compared == [0, 5]
    assert fedlib.verify(entry.path, rounds=12).compared == [0, 5, 10]
    hist = entry.history.copy()
    hist.loc[hist["round"] == 5, "loss"] *= 1.001              # a run that no longer reproduces
    hist.to_csv(entry.path / "history.csv", index=False)
    assert fedlib.verify(entry.path).check == "digest"          # caught without a replay ...
    Store(tmp_path).seal(force=True)                           # ... and, sealed as if fedlib wrote it, by one
    bad = fedlib.verify(entry.path, rounds=10)
    assert not bad.ok and list(bad.mismatches["metric"]) == ["loss"]
    assert list(bad.mismatches["round"]) == [5]
    assert "round 5, loss" in str(bad) and "relative difference 9.99e-04" in str(bad)



def test_verify_tells_a_replay_on_other_data_from_other_code(tmp_path):
    """An entry records its datasets' content digests (meta's ``data``); a replay on a dataset one
    label of which changed differs and says the data, not the code, changed. The data back as they
    were: it reproduces."""
    import numpy as np

    from fedlib import data
    rng = np.random.default_rng(0)
    parts = {split: (rng.integers(0, 256, (n, 28, 28)).astype(np.uint8), np.arange(n) % 2)
             for split, n in (("train", 24), ("test", 8))}
    info = data.DatasetInfo((1, 28, 28), 2)
    data.register_dataset("verify_data_test", lambda root: parts, info=info)
    try:
        c = fedlib.ExperimentConfig(algorithm="fedavg", problem="neural", participation="full", rounds=2,
                                    local_steps=1, lr_local=0.05, eval_every=1,
                                    problem_args={"dataset": "verify_data_test", "num_clients": 3,
                                                  "partition": "iid", "batch_size": 4,
                                                  "train_eval_per_client": 4})
        entry = Store(tmp_path).compute(c)
        assert entry.meta["data"] == {"verify_data_test": data.load("verify_data_test").digest}
        assert fedlib.verify(entry).ok
        other = {**parts, "train": (parts["train"][0], 1 - parts["train"][1])}
        data.register_dataset("verify_data_test", lambda root: other, info=info, replace=True)
        bad = fedlib.verify(entry)
        assert bad.failed and "data.verify_data_test" in set(bad.mismatches["metric"])
        assert "other data" in bad.reason and "stored with sha256:" in str(bad)
        assert "1 dataset(s) differ" in str(bad).splitlines()[0]
        data.register_dataset("verify_data_test", lambda root: parts, info=info, replace=True)
        assert fedlib.verify(entry).ok
    finally:
        data._DATASETS.pop("verify_data_test", None)


def test_a_synthetic_stand_in_that_changed_is_not_blamed_on_the_files():
    """A run on fedlib.data.synthetic_like's stand-in records its digest under the dataset's name;
    a replay on another stand-in says the stand-in changed, and a data-only difference is counted
    as a dataset, not as (round, metric) pairs."""
    from fedlib.verification import _data_differs
    rows, why = _data_differs({"mnist": "sha256:a"}, {"mnist": "sha256:b"}, synthetic=True)
    assert [r["metric"] for r in rows] == ["data.mnist"] and "synthetic stand-in for mnist" in why
    assert "copy or version of the files" not in why
    assert "copy or version of the files" in _data_differs({"mnist": "sha256:a"}, {"mnist": "sha256:b"})[1]
    assert _data_differs({"mnist": "sha256:a"}, {"mnist": "sha256:a"}) == ([], "")
    assert _data_differs(None, {"mnist": "sha256:a"}) == ([], "")


def _committed_stores():
    return sorted(p for pat in ("*/quick", "*/pilot_*") for p in (ROOT / "results").glob(pat) if p.is_dir())



def test_a_replay_computes_with_the_clients_layout_its_entry_records(tmp_path, monkeypatch):
    """An entry computed with ``VectorizedEngine(clients_innermost=True)`` (another arithmetic on
    CUDA) is replayed with that option, so that the exact check on the same GPU model compares
    like with like; the options that keep the plain path's bits (graphs, compiled draws) are not
    carried, and an entry without the option replays with the default engine."""
    from fedlib import verification
    from fedlib.engine import VectorizedEngine
    laid = verification.replay_engine(
        {"engine": "VectorizedEngine(graphs=True, compiled_draws=True, clients_innermost=True)"})
    assert isinstance(laid, VectorizedEngine) and laid.clients_innermost and not laid.graphs
    for recorded in ("VectorizedEngine(graphs=True, compiled_draws=True)", "vectorized", None):
        assert verification.replay_engine({"engine": recorded}) == "vectorized"
    c = _base(rounds=6, eval_every=3)
    entry = Store(tmp_path).compute(c, engine=VectorizedEngine(clients_innermost=True))
    assert entry.meta["engine"] == "VectorizedEngine(graphs=False, clients_innermost=True)"
    engines, real = [], verification.run_config

    def replay(*args, **kw):
        engines.append(kw["engine"])
        return real(*args, **kw)
    monkeypatch.setattr(verification, "run_config", replay)
    assert fedlib.verify(entry).ok and engines[0].clients_innermost


@pytest.mark.parametrize("store", _committed_stores(), ids=lambda p: f"{p.parent.name}-{p.name}")
def test_committed_store_configs_build_and_one_entry_reproduces(store):
    configs = sweeps.stored_configs(store)
    assert configs
    for i, c in enumerate(configs):
        c.validate(where=f"{store.parent.name}[{i}]")
    st = Store(store)
    cheapest = min((st.read(c.key()) for c in configs if st.read(c.key()).status == "ok"),
                   key=lambda e: (e.config.problem != "quadratic", e.meta.get("wall_seconds", 0)))
    from fedlib.data import DataNotFoundError
    try:
        rep = fedlib.verify(cheapest)
    except DataNotFoundError as e:                     # replaying needs the real dataset
        pytest.skip(f"cannot replay {cheapest.path.name} here: {str(e).splitlines()[0][:120]}")
    assert not rep.failed, str(rep)
    if rep.status == "unchecked":                      # another CPU and an entry without an anchor
        pytest.skip(str(rep))
    assert rep.ok and rep.check in ("exact", "cross-cpu"), str(rep)
