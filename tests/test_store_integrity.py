"""The store notices what it did not write: sealed content digests, strict history columns and
numbers, whole-run verification, and a warning for schedules in which clients never take part."""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedlib
from fedlib import ExperimentConfig, config, participation
from fedlib.__main__ import main
from fedlib.store import META_SEAL, CorruptEntry, EditedEntry, Store, meta_seal, write_meta

ROOT = Path(__file__).resolve().parents[1]


def _stored(tmp_path, n=2):
    base = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="bernoulli", rounds=20,
                            problem_args={"num_clients": 4, "dim": 3, "seed": 1},
                            participation_args={"p": 0.5},
                            local_steps=2, lr_local=0.05, eval_every=5)
    cs = config.grid(base, seed=list(range(n)))
    fedlib.sweep(cs, tmp_path, progress=False)
    return Store(tmp_path), cs


def _unseal(entry_path: Path, keep_columns: bool = True):
    meta = json.loads((entry_path / "meta.json").read_text())
    meta.pop("digests")
    meta.pop(META_SEAL, None)                                     # an older fedlib sealed no meta.json
    if not keep_columns:
        meta.pop("columns")
    (entry_path / "meta.json").write_text(json.dumps(meta))


def test_new_entries_are_sealed_with_digests_and_columns(tmp_path):
    st, cs = _stored(tmp_path)
    e = st.get(cs[0])
    assert set(e.meta["digests"]) == {"config.json", "history.csv"}
    assert all(v.startswith("sha256:") and len(v) == 71 for v in e.meta["digests"].values())
    assert e.meta["columns"] == list(e.history.columns) and e.meta["columns"][0] == "round"
    cached = fedlib.run_cached(cs[0], cache_dir=tmp_path / "cache")                 # params.npy sealed too
    assert cached.params.numel() and "params.npy" in Store(tmp_path / "cache").get(cs[0]).meta["digests"]


def test_a_hand_edited_value_is_caught_by_name_and_never_loaded(tmp_path, monkeypatch):
    st, cs = _stored(tmp_path)
    e = st.get(cs[0])
    hist = e.history.copy()
    hist.loc[hist["round"] == 20, "loss"] *= 0.5                  # late in the run: a replay would not see it
    hist.to_csv(e.path / "history.csv", index=False)
    with pytest.raises(EditedEntry, match=rf"^{e.path}: history.csv was edited"):
        st.read(e.path.name)
    rep = fedlib.verify(e.path)
    assert rep.failed and rep.check == "digest" and rep.rounds == 0 and "history.csv was edited" in str(rep)
    assert "stored file(s) differ from the digests sealed with the run, nothing replayed" in str(rep)
    assert "nan" not in str(rep)
    monkeypatch.setenv("FEDLIB_NO_COMPUTE", "1")                  # refused, not recomputed, and named
    refused = rf"lacks 1 of 2 runs .* 1 of them is stored but was refused: edited entry {e.path}"
    with pytest.warns(RuntimeWarning, match=f"edited entry {e.path}"), \
            pytest.raises(ValueError, match=refused):
        fedlib.sweep(cs, tmp_path, progress=False)
    monkeypatch.delenv("FEDLIB_NO_COMPUTE")
    with pytest.warns(RuntimeWarning, match="edited entry"):
        df = fedlib.sweep(cs, tmp_path, progress=False)           # computing allowed: recomputed
    assert not (df.loc[df["key"] == cs[0].key(), "loss"] == hist["loss"].to_numpy()).all()
    assert fedlib.verify(st.get(cs[0]).path, rounds=None).ok


def test_a_swapped_history_an_edited_config_and_removed_params_are_caught(tmp_path):
    st, cs = _stored(tmp_path)
    a, b = st.get(cs[0]), st.get(cs[1])
    assert len(a.history) == len(b.history)
    (a.path / "history.csv").write_bytes((b.path / "history.csv").read_bytes())       # same rows, another run
    with pytest.raises(EditedEntry, match="history.csv was edited"):
        st.read(a.path.name)
    cfg = json.loads((b.path / "config.json").read_text())
    cfg["lr_local"] = 0.05                                        # the same value, written differently
    (b.path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(EditedEntry, match="config.json was edited"):
        st.read(b.path.name)
    np.save(b.path / "params.npy", np.zeros(3))
    with pytest.raises(EditedEntry, match="params.npy was added"):
        st.read(b.path.name)


def test_a_renamed_or_missing_column_is_an_error_naming_entry_and_column(tmp_path):
    st, cs = _stored(tmp_path, 1)
    e = st.get(cs[0])
    e.history.rename(columns={"loss": "Loss"}).to_csv(e.path / "history.csv", index=False)
    with pytest.raises(EditedEntry):                             # sealed: the digest catches it first
        st.read(e.path.name)
    _unseal(e.path)                                               # unsealed: the recorded columns catch it
    with pytest.raises(CorruptEntry, match=rf"^{e.path}: history.csv: column 'loss' is missing"):
        st.read(e.path.name)
    e.history.drop(columns=["uplink"]).to_csv(e.path / "history.csv", index=False)
    with pytest.raises(CorruptEntry, match="column 'uplink' is missing"):
        st.read(e.path.name)
    e.history.assign(extra=1.0).to_csv(e.path / "history.csv", index=False)
    with pytest.raises(CorruptEntry, match="column 'extra' is not one it was stored with"):
        st.read(e.path.name)


def test_text_in_a_numeric_column_is_an_error_naming_column_and_value(tmp_path):
    st, cs = _stored(tmp_path, 1)
    e = st.get(cs[0])
    _unseal(e.path, keep_columns=False)                           # as stored by an older fedlib
    hist = e.history.astype({"loss": object})
    hist.loc[2, "loss"] = "0.41 (approx)"
    hist.to_csv(e.path / "history.csv", index=False)
    with pytest.raises(CorruptEntry, match=r"column 'loss' holds '0.41 \(approx\)' in row 2 \(round 10\), "
                                           "not a number"):
        st.read(e.path.name)
    with pytest.raises(ValueError, match=f"^entry: {e.path}: history.csv: column 'loss'"):
        fedlib.verify(e.path)


def test_sealing_is_idempotent_and_refuses_edited_entries_without_force(tmp_path, capsys):
    st, cs = _stored(tmp_path)
    before = {k: (st.path / k / "meta.json").read_bytes() for k in st.keys()}
    assert set(st.seal().values()) == {"unchanged"}
    assert {k: (st.path / k / "meta.json").read_bytes() for k in st.keys()} == before
    _unseal(st.get(cs[0]).path, keep_columns=False)              # an entry of an older fedlib
    assert fedlib.verify(st.get(cs[0]).path).ok and "not sealed" in fedlib.verify(st.get(cs[0]).path).reason
    assert st.seal() == {cs[0].key(): "sealed", cs[1].key(): "unchanged"}
    assert (st.path / cs[0].key() / "meta.json").read_bytes() == before[cs[0].key()]   # the same seal
    assert set(st.seal().values()) == {"unchanged"}
    e = st.get(cs[1])
    e.history.assign(loss=e.history["loss"] + 1).to_csv(e.path / "history.csv", index=False)
    assert st.seal()[cs[1].key()].startswith("edited: history.csv was edited")
    assert main(["seal", str(tmp_path)]) == 1 and "--force re-seals them" in capsys.readouterr().out
    assert main(["seal", str(tmp_path), "--force"]) == 0
    assert "1 sealed, 1 already sealed, 0 edited" in capsys.readouterr().out
    assert st.read(cs[1].key()).history["loss"].iloc[0] == pytest.approx(e.history["loss"].iloc[0] + 1)


def test_meta_json_is_sealed_and_entries_of_the_older_seal_still_read_until_resealed(tmp_path, capsys):
    st, cs = _stored(tmp_path, 2)
    e = st.get(cs[0])
    assert e.meta[META_SEAL] == meta_seal(e.meta)                 # status, timings, code: all sealed
    meta = json.loads((e.path / "meta.json").read_text())
    meta["wall_seconds"] = 0.001                                  # a faster run, typed in
    (e.path / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    with pytest.raises(EditedEntry, match=r"meta.json was edited"):
        st.read(e.path.name)
    rep = fedlib.verify(e.path)
    assert rep.failed and rep.check == "digest" and "meta.json was edited" in str(rep)
    assert st.seal()[cs[0].key()].startswith("edited: meta.json was edited")   # refused without --force
    # an entry sealed by the older scheme (files' digests, no digest of meta.json) reads and verifies
    old = st.get(cs[1]).path
    meta = json.loads((old / "meta.json").read_text())
    meta.pop(META_SEAL)
    (old / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    assert st.read(cs[1].key()).status == "ok" and fedlib.verify(old).ok
    assert st.seal([cs[1].key()]) == {cs[1].key(): "sealed"}    # ... and sealing upgrades it
    assert json.loads((old / "meta.json").read_text())[META_SEAL] == meta_seal(meta)
    assert st.seal([cs[1].key()]) == {cs[1].key(): "unchanged"}
    # code that changes a meta after it was stored re-seals it (as renew_fingerprints does)
    meta = json.loads((old / "meta.json").read_text())
    write_meta(old, {**meta, "renewed": [{"from": "a", "to": "b"}]})
    assert st.read(cs[1].key()).meta["renewed"] == [{"from": "a", "to": "b"}]
    assert main(["seal", str(tmp_path), "--force"]) == 0
    assert st.read(cs[0].key()).meta["wall_seconds"] == 0.001              # resealed as it is, by request


def test_verify_replays_a_whole_run(tmp_path, capsys):
    st, cs = _stored(tmp_path, 1)
    e = st.get(cs[0])
    whole = fedlib.verify(e, rounds=None)
    assert whole.ok and whole.rounds == 20 and whole.compared == [0, 5, 10, 15, 20]
    assert fedlib.verify(e).compared == [0, 5]
    assert main(["verify", str(e.path), "--rounds", "all"]) == 0 and "1 of 1 entries reproduce" in \
        capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["verify", str(e.path), "--rounds", "some"])
    assert "--rounds: must be an integer >= 1, 'auto' or 'all', got 'some'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="^rounds: must be 'auto', 'all' or None"):
        fedlib.verify(e, rounds=0)


def test_schedules_where_clients_never_take_part_warn_once_with_the_counts(quad):
    nobody = participation.Schedule(np.zeros((6, quad.num_clients), dtype=bool),
                                    np.ones((6, quad.num_clients), dtype=bool),
                                    np.full((6, quad.num_clients), 2), {"kind": "trace"})
    with pytest.warns(RuntimeWarning, match=r"^participation: no client is active in any of the 6 rounds of "
                                            r"this 'trace' schedule: the model will not move") as rec:
        res = fedlib.run("fedavg", quad, nobody, progress=False)
    assert len([w for w in rec if "participation" in str(w.message)]) == 1
    assert (res.params == quad.initial_params(0)).all()
    some = nobody.active.copy()
    some[:, :3] = True
    sched = participation.Schedule(some, nobody.uplink_ok, nobody.local_steps, {"kind": "trace"})
    n = quad.num_clients
    with pytest.warns(RuntimeWarning, match=rf"^participation: {n - 3} of {n} clients are never active in "
                                            r"the 6 rounds of this 'trace' schedule \(clients 3, "):
        fedlib.run("fedavg", quad, sched, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                            # everyone takes part: no warning
        fedlib.run("fedavg", quad, "full", rounds=3, progress=False)
        # a wait-for-all baseline asks every client whatever the pattern: the check reads the
        # schedule the algorithm runs, not the pattern it was given
        res = fedlib.run("wait_minibatch", quad, sched, progress=False, cycle=2)
    assert (np.asarray(res.schedule.active) > 0).all()


#: the committed stores: every notebook's quick store, the paper-profile stores that a GPU
#: window filled (``python -m fedlib campaign``, issue 48) and the pilots beside them (issue 50)
COMMITTED_STORES = sorted(p for pat in ("*/quick", "*/paper", "*/pilot_*")
                          for p in (ROOT / "results").glob(pat) if p.is_dir())


@pytest.mark.parametrize("store", COMMITTED_STORES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_committed_stores_are_sealed_and_read_cleanly(store):
    st = Store(store)
    for key in st.keys():
        e = st.read(key)                                          # digests, columns and numbers checked
        assert e.meta.get("digests") and e.meta["columns"] == list(e.history.columns), key
        assert all(pd.api.types.is_numeric_dtype(e.history[c]) for c in e.history.columns), key


@pytest.mark.parametrize("store", COMMITTED_STORES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_committed_stores_were_computed_by_the_code_as_it_is(store):
    """Every committed entry carries the fingerprint of today's algorithm and problem code: a
    change of an update rule is recomputed, or renewed after a bitwise replay (python -m fedlib
    renew), before it lands."""
    from fedlib.fingerprint import stale_parts
    st = Store(store)
    stale = [key for key in st.keys() if stale_parts(st.read(key).meta.get("code"), st.read(key).config)]
    assert not stale, f"{len(stale)} stale entries, e.g. {stale[:3]}"


def test_a_derived_table_is_computed_once_and_read_back(tmp_path):
    st = Store(tmp_path)
    calls = []

    def make():
        calls.append(1)
        return pd.DataFrame({"n": [3, 5]}).rename_axis("client")
    first = st.derived_table("client_sizes_x", make)
    again = st.derived_table("client_sizes_x", make)
    assert calls == [1] and first["n"].tolist() == again["n"].tolist() == [3, 5]
    assert (tmp_path / "client_sizes_x.csv").read_text().splitlines()[0] == "client,n"
    assert st.keys() == []                                        # not an entry of the store


def test_a_derived_table_is_not_kept_when_computing_is_off(tmp_path, monkeypatch):
    """With computing off a store is read, not added to: a notebook that computes a table and then
    stops on a missing run (the paper profile without CIFAR-10) leaves nothing behind; the table it
    gets is the one it would read back."""
    monkeypatch.setenv("FEDLIB_NO_COMPUTE", "1")
    st = Store(tmp_path)
    got = st.derived_table("client_sizes_x", lambda: pd.DataFrame({"n": [3, 5]}).rename_axis("client"))
    assert got.index.name == "client" and got["n"].tolist() == [3, 5]
    assert list(tmp_path.iterdir()) == []


def test_a_gpu_computed_entry_replays_on_this_cpu():
    """An entry a GPU computed (TF32 off, deterministic algorithms; issue 48) replays its anchor
    rounds on this CPU within the cross-arithmetic tolerance derived for fp32 kernels
    (:data:`fedlib.arithmetic.CROSS_RTOL`), with the same keyed draws: one entry per algorithm."""
    gpu = {}
    for store in COMMITTED_STORES:
        st = Store(store)
        for key in st.keys():
            e = st.read(key)
            if e.meta.get("device", "cpu").startswith("cuda"):
                gpu.setdefault(e.config.algorithm, e)
    if not gpu:
        pytest.skip("no committed entry was computed on a GPU")
    try:
        from fedlib import data
        data.load("mnist")
    except Exception as exc:  # noqa: BLE001 -- the dataset is absent on this machine
        pytest.skip(f"MNIST not here to replay GPU entries: {exc}")
    for _name, e in sorted(gpu.items()):
        rep = fedlib.verify(e.path)
        assert rep.ok and rep.check == "cross-cpu", str(rep)
