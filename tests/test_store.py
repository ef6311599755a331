"""fedlib.store: entries on disk, bad stores and bad entries, reading a store back."""

import tempfile

import pandas as pd
import pytest
import torch

import fedlib
from fedlib import runner
from fedlib.store import Store

from .run_helpers import base_config as _base
from .run_helpers import no_timing as _no_timing


def test_unwritable_store_fails_at_once_with_its_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match=rf"^store: cannot write to {blocker}/sub"):
        fedlib.sweep([_base()], blocker / "sub", progress=False)



def test_a_store_folder_is_created_by_its_first_write(tmp_path):
    """A store whose folder is missing is created by the first entry written, not when opened: a
    notebook that stops on missing data before storing a run leaves no empty store behind."""
    st = Store(tmp_path / "a" / "paper")
    assert st.writable and st.keys() == [] and not (tmp_path / "a").exists()
    st.derived_table("t", lambda: pd.DataFrame({"x": [1]}))
    assert (tmp_path / "a" / "paper" / "t.csv").is_file()
    entry = Store(tmp_path / "b").compute(_base(rounds=1))
    assert entry.status == "ok" and entry.path.parent == tmp_path / "b"


def test_a_store_whose_table_or_run_stops_on_missing_data_leaves_no_folder(tmp_path, monkeypatch):
    """Missing data stops a derived table's make() and a run before anything is stored: the store's
    folder is not created (a notebook at the paper profile without CIFAR-10 leaves no empty store)."""
    from fedlib import ExperimentConfig, data
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path / "no-data"))
    (tmp_path / "no-data").mkdir()
    with pytest.raises(data.DataNotFoundError):
        Store(tmp_path / "a" / "paper").derived_table(
            "t", lambda: pd.DataFrame({"n": [len(data.load("cifar10").train[1])]}))
    cfg = ExperimentConfig(algorithm="fedavg", problem="neural", participation="full", rounds=1,
                           problem_args={"dataset": "cifar10", "model": "fedsum_cifar10_cnn",
                                         "num_clients": 2, "partition": "iid"})
    with pytest.raises(data.DataNotFoundError):
        Store(tmp_path / "b" / "paper").compute(cfg)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_store_opened_to_read_only_creates_no_folder_and_refuses_a_write(tmp_path):
    from fedlib import ExperimentConfig
    st = Store(tmp_path / "none", create=False)
    assert not (tmp_path / "none").exists() and st.keys() == [] and not st.writable
    cfg = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=2,
                           problem_args={"num_clients": 2, "dim": 2, "seed": 0})
    assert st.get(cfg) is None
    with pytest.raises(ValueError, match=r"store: cannot write to .*none \(it does not exist"):
        st.compute(cfg)
    assert not (tmp_path / "none").exists()
    assert Store(tmp_path, create=False).writable                  # an existing folder: as usual


def test_a_store_opened_to_read_only_writes_nothing_into_an_existing_folder(tmp_path):
    """create=False reads: it asks the system whether the folder can be written instead of writing a
    probe file into it, so the folder's modification time stays as it was."""
    import os
    os.utime(tmp_path, (1_000_000_000, 1_000_000_000))
    st = Store(tmp_path, create=False)
    assert st.writable and st.keys() == [] and list(tmp_path.iterdir()) == []
    assert tmp_path.stat().st_mtime == 1_000_000_000


def test_corrupt_entries_are_reported_by_name_and_recomputed(tmp_path):
    c = _base()
    fedlib.sweep([c], tmp_path, progress=False)
    path = tmp_path / c.key() / "history.csv"
    good = path.read_text()
    path.write_text(good[: len(good) // 2])                    # truncated: no longer its sealed digest
    with pytest.warns(RuntimeWarning, match=rf"edited entry {tmp_path / c.key()}: history.csv was edited"):
        df = fedlib.sweep([c], tmp_path, progress=False)
    assert path.read_text().count("\n") == good.count("\n") and len(df) == 13
    (tmp_path / c.key() / "meta.json").write_text("{not json")             # unparsable meta.json
    with pytest.warns(RuntimeWarning, match=rf"unreadable entry {tmp_path / c.key()}: JSONDecodeError"):
        fedlib.sweep([c], tmp_path, progress=False)
    (tmp_path / c.key() / "meta.json").unlink()                # incomplete
    with pytest.warns(RuntimeWarning, match="incomplete entry"):
        fedlib.sweep([c], tmp_path, progress=False)
    assert Store(tmp_path).get(c) is not None



def test_load_reads_a_store_into_the_sweep_frame_without_computing(tmp_path):
    a, b = _base(rounds=3), _base(rounds=3, seed=1)
    computed = fedlib.sweep([a, b], tmp_path, progress=False)
    every = fedlib.load(tmp_path)                                  # every entry, in key order
    assert set(every["key"]) == {a.key(), b.key()}
    one = fedlib.load(tmp_path, b)
    pd.testing.assert_frame_equal(_no_timing(one).reset_index(drop=True),
                                  _no_timing(computed[computed["key"] == b.key()]).reset_index(drop=True))
    with pytest.raises(ValueError, match=r"^store: .* lacks 1 of 1 runs"):
        fedlib.load(tmp_path, _base(rounds=3, seed=2))
    c = _base(rounds=3, seed=2)
    assert Store(tmp_path).missing([a, c, b, c]) == [c, c]          # in their order, repeats kept
    assert Store(tmp_path).missing({c: "label", a: "label"}) == [c]     # a dict: its keys


def test_missing_counts_a_corrupt_entry_as_missing(tmp_path):
    a = _base(rounds=3)
    fedlib.sweep([a], tmp_path, progress=False)
    (tmp_path / a.key() / "history.csv").write_text("round\n0\n")
    with pytest.warns(RuntimeWarning, match="entry"):
        assert Store(tmp_path).missing([a]) == [a]




class _Killed(Exception):
    """Stands for the worker of a run being killed (the run is cut short, its checkpoint stays)."""


def test_a_run_finishing_never_breaks_the_checkpoint_another_run_is_writing(tmp_path, monkeypatch):
    """The race a process-pool sweep met (several workers checkpoint into one ``.checkpoints/``):
    run ``a`` has made the folder and is about to create its temporary file in it when run ``b``,
    in another worker, finishes and removes the folder, empty at that instant. The interleaving is
    injected, not left to timing: ``b`` runs whole inside ``a``'s first ``mkstemp`` call, and ``a``
    is then killed at its second checkpoint. ``a``'s first checkpoint must have been written, and
    a later compute must resume from it and store what an uninterrupted run stores, bit for bit."""
    st = Store(tmp_path / "store")
    a, b = _base(rounds=6), _base(rounds=6, seed=1)
    ck = st.checkpoint_path(a)
    real_mkstemp, injected = tempfile.mkstemp, []

    def mkstemp(*args, dir=None, prefix=None, **kw):
        if prefix == f".{ck.name}." and not injected:                    # a's first checkpoint (round 2)
            injected.append(True)
            assert ck.parent.is_dir() and not any(ck.parent.iterdir())   # a made the folder; it is empty
            assert st.compute(b, checkpoint_every=2).status == "ok"      # b checkpoints, ends, cleans up
            assert not ck.parent.exists()                                # ... removing the empty folder
        elif prefix == f".{ck.name}." and ck.exists():                   # a's second checkpoint (round 4)
            raise _Killed
        return real_mkstemp(*args, dir=dir, prefix=prefix, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    with pytest.raises(_Killed):
        runner.run_config(a, checkpoint=ck, checkpoint_every=2)
    assert ck.exists() and list(ck.parent.iterdir()) == [ck]            # a's round-2 state, no temporary file
    monkeypatch.setattr(tempfile, "mkstemp", real_mkstemp)
    resumed_from, read = [], runner._read_checkpoint

    def read_and_note(path):
        state = read(path)
        resumed_from.append(state["t"])
        return state

    monkeypatch.setattr(runner, "_read_checkpoint", read_and_note)
    entry = st.compute(a, checkpoint_every=2)
    assert resumed_from == [2] and entry.status == "ok", entry.meta["error"]
    assert not ck.parent.exists()                        # a's own cleanup: its checkpoint, then the folder
    whole = Store(tmp_path / "whole").compute(a, checkpoint_every=None)
    pd.testing.assert_frame_equal(_no_timing(entry.history), _no_timing(whole.history), check_exact=True)


def _fresh_history(config):
    return _no_timing(Store(tempfile.mkdtemp()).compute(config, checkpoint_every=None).history)


def test_a_stores_checkpoint_saved_by_other_code_is_not_resumed(tmp_path):
    """A run killed after its last checkpoint, its code then changed, computed again: the store
    passes the config's code fingerprint to the run, which saves it with every checkpoint, and a
    checkpoint saved under another one is started over (a warning names the part), so the entry is
    what the code as it is now computes. Under the same code the run resumes, and its entry says
    from which round (``resumed_at``)."""
    from fedlib.fingerprint import config_fingerprint
    a = _base(rounds=6)
    now = config_fingerprint(a)
    for code, resumes in ((now, True), ({**now, "algorithm": "b1:" + "0" * 64}, False)):
        st = Store(tmp_path / f"store-{resumes}")
        runner.run_config(a, checkpoint=st.checkpoint_path(a), checkpoint_every=2, checkpoint_code=code)
        assert torch.load(st.checkpoint_path(a), weights_only=True)["code"] == code
        if resumes:
            entry = st.compute(a, checkpoint_every=2)
        else:
            with pytest.warns(RuntimeWarning, match=r"\(round 6\) was saved by other code \(the code of its "
                                                    r"algorithm has changed since\); starting the run over"):
                entry = st.compute(a, checkpoint_every=2)
        assert entry.status == "ok" and entry.meta["resumed_at"] == (6 if resumes else None)
        assert entry.meta["code"] == now and not st.checkpoint_path(a).exists()
        pd.testing.assert_frame_equal(_no_timing(entry.history), _fresh_history(a), check_exact=True)


def test_a_stores_checkpoint_the_run_refuses_is_removed_and_the_run_started_over(tmp_path):
    """A store names a run's checkpoint by the run's key, so a checkpoint there that the run refuses
    as another run's (settings, schedule or start differ under a code fingerprint that does not:
    a change no fingerprint part names) is this run's before such a change. It is removed with a
    warning and the run computed from its start -- not stored as a failed run that asks the user to
    delete a checkpoint the store has already removed."""
    st = Store(tmp_path / "store")
    a = _base(rounds=6)
    from fedlib.fingerprint import config_fingerprint
    runner.run_config(a.replace(lr_local=0.07), checkpoint=st.checkpoint_path(a), checkpoint_every=2,
                      checkpoint_code=config_fingerprint(a))
    with pytest.warns(RuntimeWarning, match=r"is another run's \(what differs: lr_local: 0\.07 saved, "
                                            r"0\.05 now\), yet the store names it by this run's key: .* "
                                            "it is removed and the run started over"):
        entry = st.compute(a, checkpoint_every=2)
    assert entry.status == "ok" and entry.meta["resumed_at"] is None, entry.meta["error"]
    pd.testing.assert_frame_equal(_no_timing(entry.history), _fresh_history(a), check_exact=True)


def test_a_checkpoint_refused_again_after_its_removal_is_stored_as_the_runs_failure(tmp_path, monkeypatch):
    """The store removes a refused checkpoint once and starts the run over; a run that refuses a
    checkpoint again (there is none left: another writer put one back, or a bug) is not retried
    forever: it is stored as a failed run naming the refusal, after one warning."""
    from fedlib import store as store_module
    st, a = Store(tmp_path / "store"), _base(rounds=4)
    calls = []

    def refuses(config, checkpoint=None, **kwargs):
        calls.append(checkpoint)
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        checkpoint.write_bytes(b"another run's")
        raise runner.CheckpointMismatch(checkpoint, "what differs: lr_local")

    monkeypatch.setattr(store_module, "run_config", refuses)
    with pytest.warns(RuntimeWarning, match="it is removed and the run started over") as seen:
        entry = st.compute(a, checkpoint_every=2)
    assert len(calls) == 2 and len([w for w in seen if "started over" in str(w.message)]) == 1
    assert entry.status == "error" and "CheckpointMismatch" in entry.meta["error"]
    assert "belongs to another run (what differs: lr_local)" in entry.meta["error"]
    assert not st.checkpoint_path(a).exists()             # the refused checkpoint is not left behind


def test_a_run_another_writer_stored_first_keeps_that_entry(tmp_path, monkeypatch):
    """Two writers of one run (two sweeps over the same configs at once): the second finds the
    first's entry where it would write its own. An entry as good as its own stays as it is -- no
    reader of it ever finds it removed -- while a failure is mended by a run that did not fail, and
    a failed run never replaces an entry that did not fail."""
    from fedlib import store as store_module
    st, a = Store(tmp_path / "store"), _base(rounds=4)
    first = st.compute(a)
    files = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in first.path.iterdir()}
    second = st.compute(a)                                     # planned before the first was stored
    assert second.meta == first.meta and second.path == first.path
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in first.path.iterdir()} == files

    def raises(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(store_module, "run_config", raises)
    assert st.compute(a).meta == first.meta                   # a failure does not replace it
    failed = Store(tmp_path / "other").compute(a)
    assert failed.status == "error" and "RuntimeError: boom" in failed.meta["error"]
    monkeypatch.undo()
    mended = Store(tmp_path / "other").compute(a)
    assert mended.status == "ok" and mended.meta["error"] is None
    assert not [p for p in (tmp_path / "other").iterdir() if p.name.startswith(".")]   # nothing set aside


def test_a_run_written_with_an_argument_at_its_default_loads_the_entry_of_the_form_without_it(tmp_path):
    """One run, two forms (an option written out at its default, and left out): the second sweep
    loads the first's entry, computes nothing, and its frame shows the default in that column."""
    written = _base(algorithm="fedau", algorithm_args={"cutoff": 50}, rounds=3, participation_args={"p": 0.9})
    plain = _base(algorithm="fedau", rounds=3, participation_args={"p": 0.9})
    assert written.key() != plain.key()
    first = fedlib.sweep([written], tmp_path, progress=False)
    st = Store(tmp_path)
    assert st.keys() == [written.key()] and st.equivalent(plain) == written.key()
    assert st.get(plain).path.name == written.key() and st.missing([plain]) == []
    both = fedlib.sweep([plain, written], tmp_path, progress=False, compute=False)
    assert Store(tmp_path).keys() == [written.key()]                     # nothing computed
    assert (both["algorithm_args.cutoff"] == 50).all()                   # filled where left out
    assert both.groupby("key")["loss"].apply(tuple).nunique() == 1
    pd.testing.assert_frame_equal(_no_timing(both[both.key == written.key()]).reset_index(drop=True),
                                  _no_timing(first).reset_index(drop=True))
    # the other form, stored first, serves the written one as well
    other = tmp_path / "other"
    fedlib.sweep([plain], other, progress=False)
    assert Store(other).get(written).path.name == plain.key()
    # another run of the same algorithm is not taken for it
    assert Store(other).get(written.replace(algorithm_args={"cutoff": 49})) is None
