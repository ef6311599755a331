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


@pytest.mark.parametrize("key", ["", ".", "..", "a/b", "../x", 3, None, b"k", " k\n", ".hidden", ".claims",
                                 "a" * 201])
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


@pytest.mark.parametrize("below", ["", "sub", "sub/deeper"])
def test_a_store_that_is_a_file_or_below_one_is_refused_naming_the_field(tmp_path, below):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match=rf"^store: must be a store folder .*, got .* \({f} is a file\)"), \
            locks.claim(f / below, "k"):
        pass
    assert locks.holder(f / below, "k") is None and f.read_text() == "x"


@pytest.mark.parametrize("store", [None, 3, ""])
def test_a_store_that_is_not_a_path_is_refused_naming_the_field(store):
    with pytest.raises(ValueError, match=r"^store: must be a store folder's path"):
        locks.lock_path(store, "k")
    with pytest.raises(ValueError, match=r"^store: must be a store folder's path"):
        locks.holder(store, "k")


def test_on_wait_that_is_not_a_function_is_refused_before_anything(tmp_path):
    with pytest.raises(ValueError, match=r"^on_wait: must be a function"), \
            locks.claim(tmp_path, "k", on_wait=5):
        pass
    assert list(tmp_path.iterdir()) == []


def test_a_home_relative_store_is_the_stores_folder_and_a_linked_claim_is_still_this_threads(
        tmp_path, monkeypatch):
    """``~`` is expanded as Store expands it, and a claim taken through another name of the folder
    (a symbolic link) is the same claim: computing it in the thread that holds it is refused."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert locks.lock_path("~/s", "k") == tmp_path / "s" / locks.FOLDER / "k.lock"
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    cfg = _base(rounds=2)
    with locks.claim("~/real", Planned.of(cfg).key), pytest.raises(RuntimeError, match="holds the claim"):
        Store(tmp_path / "link").compute(cfg)


def test_a_writer_does_not_report_a_look_at_the_claim_as_a_holder(tmp_path):
    """``holder`` looks at a claim by holding it shared for an instant (a sweep's ordering, a
    campaign): a writer claiming at that instant waits it out without reporting a holder -- the
    file's record then names its last holder, perhaps long dead (a killed writer's); and a record
    naming an ended process of this host is never reported by name."""
    import socket
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()       # a pid of this host that has ended
    record = f'{{"pid": {dead}, "host": "{socket.gethostname()}", "since": "2020-01-01T00:00:00+00:00"}}'
    path = locks.lock_path(tmp_path, "k")
    path.parent.mkdir()
    path.write_text(record)
    told, stop = [], threading.Event()

    def look() -> None:
        while not stop.is_set():
            locks.holder(tmp_path, "k")

    looker = threading.Thread(target=look)
    looker.start()
    try:
        for _ in range(300):
            if not path.exists():
                path.parent.mkdir(exist_ok=True)
                path.write_text(record)
            with locks.claim(tmp_path, "k", on_wait=told.append):
                pass
    finally:
        stop.set()
        looker.join()
    assert all(h.pid is None for h in told), told        # (a look that lasted past 50 ms: unnamed)
    assert str(locks.Holder(None, "h", "?")) == "another writer (not recorded: it has just begun)"


def test_a_waiter_returns_the_failure_the_writer_it_waited_for_stored(tmp_path, monkeypatch):
    """The run the other writer computed failed (stored with status error): the same run by the
    same code a moment ago, so the waiter returns that failure rather than computing it again
    (before, it recomputed it and replaced the entry)."""
    from fedlib import store as store_module
    cfg = _base(rounds=2)
    key, ran = Planned.of(cfg).key, []
    real = store_module._run

    def fails(*a, **k):
        ran.append(threading.current_thread().name)
        time.sleep(0.5)
        return None, "RuntimeError: fails on purpose"

    monkeypatch.setattr(store_module, "_run", fails)
    first = threading.Thread(target=lambda: Store(tmp_path).compute(cfg), name="first")
    first.start()
    while not ran:                                       # the first writer is computing, its claim held
        time.sleep(0.01)
    assert locks.holder(tmp_path, key) is not None
    with pytest.warns(RuntimeWarning, match="waiting for its entry"):
        entry = Store(tmp_path).compute(cfg)
    first.join()
    assert ran == ["first"] and entry.status == "error" and "fails on purpose" in entry.meta["error"]
    monkeypatch.setattr(store_module, "_run", real)
    assert Store(tmp_path).compute(cfg).status == "ok"          # not waited for: a failure is mended


def test_a_read_only_store_returns_a_stored_run_without_claiming_it(tmp_path):
    cfg = _base(rounds=2)
    stored = Store(tmp_path / "s").compute(cfg)
    again = Store(tmp_path / "s", create=False)
    again.writable, again._why = False, "opened to read only here"        # as a read-only mount reads
    assert again.compute(cfg).meta == stored.meta and not (tmp_path / "s" / locks.FOLDER).exists()


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


def test_every_key_an_algorithm_name_allows_is_a_key_claims_take(tmp_path):
    """Keys are ``<algorithm>-<hash>``, and a registered algorithm's name may hold '+', '_', '-'."""
    from fedlib.algorithms.base import NAME_PATTERN
    for name in ("fedavg", "my+algo", "A_b-2"):
        assert NAME_PATTERN.fullmatch(name)
        with locks.claim(tmp_path, f"{name}-0123456789abcdef") as waited:
            assert waited is None
