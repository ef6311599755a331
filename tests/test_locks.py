"""fedlib.locks: one writer holds a run's claim at a time; a claim ends with its process; a store's
compute waits for the writer that holds a run and returns its entry; sweeps and campaigns leave
held runs for last or to their writer."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fedlib import locks
from fedlib.config import Planned
from fedlib.store import Store

from .run_helpers import ROOT
from .run_helpers import base_config as _base

pytestmark = pytest.mark.skipif(locks.fcntl is None, reason="claims need fcntl (POSIX)")

#: a process that holds the claim on a key, says so in a file, and sleeps until killed
_HOLDER = """
import sys, time
from pathlib import Path
from fedlib import locks
from fedlib.config import Planned
with locks.claim(sys.argv[1], sys.argv[2]):
    Path(sys.argv[3]).write_text("held")
    time.sleep(float(sys.argv[4]))
"""


def _start_holder(tmp_path: Path, store: Path, key: str, seconds: float) -> subprocess.Popen:
    """A process holding ``key``'s claim for ``seconds``, returned once it holds it."""
    script, ready = tmp_path / "holder.py", tmp_path / f"ready-{key}"
    script.write_text(_HOLDER)
    proc = subprocess.Popen([sys.executable, str(script), str(store), key, str(ready), str(seconds)],
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.time() + 60
    while not ready.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert ready.exists(), "the holder process did not claim the key"
    return proc


def test_a_claim_names_its_holder_while_held_and_leaves_nothing_behind(tmp_path):
    assert locks.holder(tmp_path, "k") is None
    with locks.claim(tmp_path, "k") as waited:
        assert waited is None                          # it was free
        other = locks.holder(tmp_path, "k")            # a lock is per open file: this process too
        assert other is not None and other.pid == os.getpid() and str(other.pid) in str(other)
    assert locks.holder(tmp_path, "k") is None
    assert not (tmp_path / locks.FOLDER).exists()      # the file and its empty folder removed


def test_a_claim_held_by_another_process_is_waited_for_and_named(tmp_path):
    proc = _start_holder(tmp_path, tmp_path / "store", "k", 1.5)
    try:
        other = locks.holder(tmp_path / "store", "k")
        assert other is not None and other.pid == proc.pid
        told = []
        t0 = time.time()
        with locks.claim(tmp_path / "store", "k", on_wait=told.append) as waited:
            assert time.time() - t0 > 1.0              # held only once the holder's 1.5 s were over
            assert waited == other and told == [other]
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holders_claim_is_free_at_once(tmp_path):
    """SIGKILL leaves the holder no chance to clean up: the kernel releases its lock, so there is
    no stale claim to expire (its file is still there, and is claimed again)."""
    proc = _start_holder(tmp_path, tmp_path, "k", 600)
    assert locks.holder(tmp_path, "k").pid == proc.pid
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert locks.lock_path(tmp_path, "k").exists() and locks.holder(tmp_path, "k") is None
    with locks.claim(tmp_path, "k") as waited:
        assert waited is None


def test_two_writers_never_hold_one_key_at_once(tmp_path):
    """Four threads (each its own open file, so they exclude each other as processes do) claim one
    key 50 times each; the holder removes the file as it releases it, so writers that opened the
    removed file must claim again: at most one is ever inside, and every claim was taken."""
    inside, most, taken = [0], [0], []
    guard = threading.Lock()

    def writer(i: int) -> None:
        for _ in range(50):
            with locks.claim(tmp_path, "k"):
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.0005)
                with guard:
                    inside[0] -= 1
                taken.append(i)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and len(taken) == 200


#: a process that computes one run into a store, slowed so that the test can reach it mid-run
_WRITER = """
import json, sys, time
from pathlib import Path
import fedlib.store as s
from fedlib import ExperimentConfig
run = s._run
def slow(*a, **k):
    Path(sys.argv[2]).write_text("computing")
    time.sleep(2.0)
    return run(*a, **k)
s._run = slow
entry = s.Store(sys.argv[1]).compute(ExperimentConfig.from_dict(json.loads(sys.argv[3])))
print(entry.meta["date"], entry.meta["wall_seconds"])
"""


def test_a_store_waits_for_the_writer_computing_a_run_and_returns_its_entry(tmp_path, monkeypatch):
    """Two sweeps over one config: the second finds the run claimed, waits, and returns the first's
    entry without computing it (before claims, both computed and one entry was dropped)."""
    from fedlib import store as store_module
    cfg, store = _base(rounds=3), tmp_path / "store"
    script, ready = tmp_path / "writer.py", tmp_path / "computing"
    script.write_text(_WRITER)
    proc = subprocess.Popen([sys.executable, str(script), str(store), str(ready), json.dumps(cfg.to_dict())],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not ready.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), "the other writer did not start its run"
        ran = []
        monkeypatch.setattr(store_module, "_run", lambda *a, **k: ran.append(a))
        with pytest.warns(RuntimeWarning, match=rf"{cfg.key()}: process {proc.pid} on .* is computing this "
                                                r"run; waiting for its entry"):
            entry = Store(store).compute(cfg)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert ran == [] and entry.status == "ok"
    date, wall = out.split()
    assert entry.meta["date"] == date and entry.meta["wall_seconds"] == float(wall)


def test_a_sweep_starts_the_runs_nobody_else_holds_first(tmp_path):
    from fedlib import sweeps
    from fedlib.config import Planned
    st = Store(tmp_path)
    runs = [Planned.of(_base(seed=s)) for s in range(4)]
    with locks.claim(tmp_path, runs[1].key), locks.claim(tmp_path, runs[2].key):
        order = sweeps.unclaimed_first(runs, st)
    assert [p.key for p in order] == [runs[i].key for i in (0, 3, 1, 2)]
    assert sweeps.unclaimed_first(runs, st) == runs


@pytest.mark.parametrize("key", ["", ".", "..", "a/b", "../x", 3, None])
def test_a_key_that_is_not_one_file_name_is_refused_naming_the_field(tmp_path, key):
    with pytest.raises(ValueError, match=r"^key: must be a run's key, one file name"):
        locks.holder(tmp_path, key)
    with pytest.raises(ValueError, match=r"^key: must be a run's key"), locks.claim(tmp_path, key):
        pass
    assert list(tmp_path.iterdir()) == []


#: a sweep over configs given as JSON, each run it computes written down, slowed to overlap
_SWEEP = """
import json, os, sys, time
import fedlib, fedlib.store as s
from fedlib import ExperimentConfig
run = s._run
def counted(config, *a, **k):
    with open(sys.argv[2], "a") as f:
        f.write(f"{os.getpid()} {config.key}\\n")
    time.sleep(0.5)
    return run(config, *a, **k)
s._run = counted
configs = [ExperimentConfig.from_dict(d) for d in json.loads(sys.argv[3])]
open(f"{sys.argv[2]}.ready-{sys.argv[4]}", "w").close()          # both imported: start together
while not all(os.path.exists(f"{sys.argv[2]}.ready-{n}") for n in (0, 1)):
    time.sleep(0.01)
df = fedlib.sweep(configs, sys.argv[1], progress=False)
print(len(set(df["seed"])))
"""


def test_two_sweeps_at_once_over_the_same_configs_compute_each_run_once(tmp_path):
    """The case claims are for: two sweeps started together over the same 6 runs (in opposite
    orders, so that they meet in the middle) each return all 6, and every run was computed once."""
    script, log = tmp_path / "sweep.py", tmp_path / "computed.txt"
    script.write_text(_SWEEP)
    configs = [_base(rounds=3, seed=s).to_dict() for s in range(6)]
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "store"), str(log),
                               json.dumps(order), str(n)], env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n, order in enumerate((configs, configs[::-1]))]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    assert [out.split() for out, _ in outs] == [["6"], ["6"]]
    computed = log.read_text().split("\n")[:-1]
    keys = [line.split()[1] for line in computed]
    assert sorted(keys) == sorted(Planned.of(_base(rounds=3, seed=s)).key for s in range(6))
    assert len({line.split()[0] for line in computed}) == 2       # both sweeps computed some
    assert Store(tmp_path / "store").keys() == sorted(keys)


def test_a_store_that_is_a_file_is_refused_naming_the_field(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match=r"^store: must be a store folder .*, got the file "), \
            locks.claim(f, "k"):
        pass
    assert locks.holder(f, "k") is None and f.read_text() == "x"


def test_a_claim_this_thread_holds_is_refused_rather_than_waited_for_forever(tmp_path):
    """Store.compute claims its run: code that holds the run's claim and computes it would wait for
    itself. It is refused at once; another thread still waits as another writer does."""
    cfg = _base(rounds=2)
    key = Planned.of(cfg).key
    with locks.claim(tmp_path, key):
        with pytest.raises(RuntimeError, match=rf"^{key}: this thread holds the claim on this run already"):
            Store(tmp_path).compute(cfg)
        other = threading.Thread(target=lambda: Store(tmp_path).compute(cfg))
        other.start()
        other.join(timeout=1.0)
        assert other.is_alive()                        # waiting for this thread's claim
    other.join(timeout=60)
    assert not other.is_alive() and Store(tmp_path).get(cfg) is not None
