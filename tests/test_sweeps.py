"""fedlib.sweeps: a sweep stores each run once, goes on after failures, runs on executors and workers,
continues warm-ups, and a killed sweep stops its workers."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import fedlib
from fedlib import ExperimentConfig, config, store, sweeps
from fedlib.store import Store

from .run_helpers import QUAD, ROOT, failing_algorithm
from .run_helpers import base_config as _base
from .run_helpers import no_timing as _no_timing


def test_sweep_stores_each_run_once_and_loads_it_back(tmp_path):
    cs = config.grid(_base(), algorithm=["fedavg", "fedsum"], seed=[0, 1])
    cs += config.grid(_base(), algorithm="fedavg", seed=[0, 1])                     # duplicates
    df = fedlib.sweep(cs, tmp_path, progress=False)
    st = Store(tmp_path)
    assert len(st.keys()) == 4
    assert list(df.drop_duplicates("key")["algorithm"]) == ["fedavg", "fedavg", "fedsum", "fedsum"]
    assert (df["status"] == "ok").all() and df.groupby("key").size().eq(13).all()
    assert {"algorithm", "participation_args.p", "problem_args.dim", "round", "loss", "uplink"} <= set(df)
    entry = st.get(cs[0])
    assert set(os.listdir(entry.path)) == {"config.json", "history.csv", "meta.json"}   # no weights
    meta = entry.meta
    assert {"fedlib", "git_commit", "torch", "device", "wall_seconds", "date", "eval_fraction"} <= set(meta)
    mtimes = {k: (tmp_path / k / "history.csv").stat().st_mtime_ns for k in st.keys()}
    again = fedlib.sweep(cs, tmp_path, progress=False)
    assert mtimes == {k: (tmp_path / k / "history.csv").stat().st_mtime_ns for k in st.keys()}
    pd.testing.assert_frame_equal(df, again)                                       # bitwise, timing too
    direct = fedlib.run_config(cs[0]).history
    stored = df[df["key"] == cs[0].key()][direct.columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(_no_timing(stored), _no_timing(direct), check_exact=True)



def test_failures_are_stored_and_marked_and_the_sweep_goes_on(tmp_path):
    ok = _base(rounds=5)
    div = _base(algorithm="fedavg", lr_local=50.0, rounds=200)
    with failing_algorithm() as name:                             # raises inside its run
        boom = _base(algorithm=name, problem_args={**QUAD, "num_clients": 4}, participation="full",
                     participation_args={})
        said = (rf"^sweep: 1 run\(s\) raised and are stored with status error \(first: {boom.key()}: "
                r"RuntimeError: fails on purpose\); sweep\(\.\.\., retry_errors=True\) recomputes them$")
        with pytest.warns(RuntimeWarning, match=said):
            df = fedlib.sweep([boom, div, ok], tmp_path, progress=False)
    status = df.drop_duplicates("key").set_index("key")["status"]
    assert status[boom.key()] == "error" and status[div.key()] == "diverged" and status[ok.key()] == "ok"
    err = df[df["key"] == boom.key()]
    assert len(err) == 1 and np.isnan(err["round"].iloc[0]) and "fails on purpose" in err["error"].iloc[0]
    d = df[df["key"] == div.key()]
    assert d["diverged_at"].iloc[0] == d["round"].iloc[-1] < 200
    st = Store(tmp_path)
    assert st.get(boom).status == "error"                     # stored as such: not retried by default
    written = (tmp_path / boom.key() / "meta.json").stat().st_mtime_ns
    with failing_algorithm():
        fedlib.sweep([boom], tmp_path, progress=False)
        assert (tmp_path / boom.key() / "meta.json").stat().st_mtime_ns == written
        fedlib.sweep([boom], tmp_path, progress=False, retry_errors=True)
    assert (tmp_path / boom.key() / "meta.json").stat().st_mtime_ns != written



class _DyingExecutor(Executor):
    """An executor whose worker dies on every run it is given (killed, out of memory)."""

    def submit(self, fn, *args, **kwargs):
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool
        fut = Future()
        fut.set_exception(BrokenProcessPool("a worker died"))
        return fut


def test_runs_whose_worker_died_are_said_kept_out_of_the_store_and_computed_by_the_next_sweep(tmp_path):
    """A worker that dies (killed, out of memory) is the machine's failure, not the run's: the sweep
    warns, its runs are rows with status error and no entry, and sweeping again computes them."""
    cs = [_base(rounds=3), _base(rounds=3, seed=1)]
    said = (r"^sweep: 2 run\(s\) did not finish and have no entry \(first: fedsum-[0-9a-f]{16}: worker "
            r"failed: BrokenProcessPool: a worker died\); they are rows with status error in the frame, and "
            "sweeping again computes them$")
    with pytest.warns(RuntimeWarning, match=said):
        df = fedlib.sweep(cs, tmp_path, progress=False, executor=_DyingExecutor())
    assert list(df["status"]) == ["error", "error"] and Store(tmp_path).keys() == []
    again = fedlib.sweep(cs, tmp_path, progress=False)
    assert set(again["status"]) == {"ok"} and len(Store(tmp_path).keys()) == 2


def test_a_run_out_of_memory_in_this_process_is_not_stored_and_the_sweep_goes_on(tmp_path, monkeypatch):
    """Out of memory is the machine's: not stored as a failed run (a larger machine would need
    ``retry_errors`` to compute it), reported, and the other runs computed."""
    real = store.run_config
    big, small = _base(rounds=3, seed=1), _base(rounds=3)

    def run_config(config, **kwargs):
        if getattr(config, "config", config).seed == 1:          # a sweep's runs come Planned
            raise MemoryError("no room")
        return real(config, **kwargs)

    monkeypatch.setattr(store, "run_config", run_config)
    with pytest.warns(RuntimeWarning, match=rf"did not finish and have no entry \(first: {big.key()}: out of "
                                            r"memory \(MemoryError: no room\); not stored"):
        df = fedlib.sweep([big, small], tmp_path, progress=False)
    assert df.drop_duplicates("key")["status"].tolist() == ["error", "ok"]
    assert Store(tmp_path).keys() == [small.key()]
    with pytest.raises(MemoryError):
        Store(tmp_path).compute(big)                   # the store raises it: nothing written
    assert Store(tmp_path).keys() == [small.key()]


def test_bad_configs_fail_before_anything_runs(tmp_path):
    good = _base()
    with pytest.raises(ValueError, match=r"^configs\[1\]\.algorithm: unknown algorithm 'fedfoo'"):
        fedlib.sweep([good, _base(algorithm="fedfoo")], tmp_path, progress=False)
    with pytest.raises(ValueError, match=r"^configs\[0\]\.participation"):
        fedlib.sweep([_base(participation="sometimes")], tmp_path, progress=False)
    with pytest.raises(ValueError, match=r"^configs\[0\]\.algorithm_args\.clip"):
        fedlib.sweep([_base(algorithm_args={"clip": 1.0})], tmp_path, progress=False)
    with pytest.raises(ValueError, match=r"^configs\[0\]\.lr_local"):
        fedlib.sweep([_base(lr_local=-1)], tmp_path, progress=False)
    with pytest.raises(ValueError, match=r"^configs\[0\]: expected an ExperimentConfig"):
        fedlib.sweep([{"algorithm": "fedsum"}], tmp_path, progress=False)
    assert Store(tmp_path).keys() == []                       # nothing was computed



def test_compute_off_refuses_missing_runs(tmp_path, monkeypatch):
    fedlib.sweep([_base()], tmp_path, progress=False)
    monkeypatch.setenv("FEDLIB_NO_COMPUTE", "1")
    assert len(fedlib.sweep([_base()], tmp_path, progress=False))       # stored: fine
    with pytest.raises(ValueError, match="lacks 1 of 2 runs"):
        fedlib.sweep([_base(), _base(seed=3)], tmp_path, progress=False)



def test_process_pool_and_dask_give_the_serial_frame(tmp_path):
    distributed = pytest.importorskip("distributed")
    cs = config.grid(_base(rounds=8), algorithm=["fedavg", "fedsum", "mifa"], seed=[0, 1])
    # the workers compute with one torch thread each: so does the serial reference (like with like)
    serial = fedlib.sweep(cs, tmp_path / "serial", progress=False, torch_threads=1)
    with ProcessPoolExecutor(2) as ex:
        pool = fedlib.sweep(cs, tmp_path / "pool", executor=ex, progress=False, torch_threads=1)
    import dask
    with dask.config.set({"distributed.nanny.pre-spawn-environ": sweeps.DASK_WORKER_ENV}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        dask = fedlib.sweep(cs, tmp_path / "dask", executor=client.get_executor(), progress=False)
    cols = [c for c in serial if c not in store.TIMING_COLUMNS]
    for other in (pool, dask):
        assert other["error"].isna().all(), other["error"].dropna().unique()   # a worker that failed says why
        pd.testing.assert_frame_equal(serial[cols], other[cols], check_exact=True)
    assert sorted(os.listdir(tmp_path / "dask")) == sorted(Store(tmp_path / "serial").keys())



def test_workers_compute_in_local_processes_and_give_the_serial_frame(tmp_path):
    cs = config.grid(_base(rounds=6), algorithm=["fedavg", "fedsum", "mifa"])
    before = torch.get_num_threads()
    serial = fedlib.sweep(cs, tmp_path / "serial", progress=False, torch_threads=1)
    assert torch.get_num_threads() == before                    # the process's setting is restored
    spawned = fedlib.sweep(cs, tmp_path / "spawned", progress=False, workers=2)
    cols = [c for c in serial if c not in store.TIMING_COLUMNS]
    pd.testing.assert_frame_equal(serial[cols], spawned[cols], check_exact=True)
    threads = {Store(tmp_path / "spawned").get(c).meta["torch_threads"] for c in cs}
    assert threads == {1}                                       # one thread per worker by default
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="^workers"):
            fedlib.sweep(cs, tmp_path / "x", progress=False, workers=bad)
    with ProcessPoolExecutor(1) as ex, pytest.raises(ValueError, match="^workers"):
        fedlib.sweep(cs, tmp_path / "x", progress=False, workers=2, executor=ex)



def test_workers_keep_the_final_models_when_asked(tmp_path):
    """``keep_params`` reaches the worker processes: a run computed there keeps its final model, so
    that naming it as a warm-up later does not compute it again."""
    cs = config.grid(_base(rounds=4), algorithm=["fedavg", "fedsum"])
    fedlib.sweep(cs, tmp_path, progress=False, workers=2, keep_params=True)
    st = Store(tmp_path)
    for c in cs:
        kept = st.get(c).params()
        assert kept is not None and kept.shape == (c.build_problem().dim,), c.key()
    fedlib.sweep(cs, tmp_path / "plain", progress=False, workers=2)
    assert all(Store(tmp_path / "plain").get(c).params() is None for c in cs)



def test_a_phase_continues_its_warm_up(tmp_path):
    warm = _base(algorithm="fedavg", rounds=10, lr_local=0.1)
    cont = _base(algorithm="fedsum", rounds=15, init_from=warm)
    other = _base(algorithm="amplified_fedavg", rounds=15, init_from=warm,
                  algorithm_args={"P": 4, "gamma": 2.0})
    assert cont.warmup() == warm and cont.key() != _base(algorithm="fedsum", rounds=15).key()
    assert ExperimentConfig.from_dict(json.loads(json.dumps(cont.to_dict()))) == cont
    df = fedlib.sweep([cont, other], tmp_path, progress=False)
    st = Store(tmp_path)
    assert set(st.keys()) == {warm.key(), cont.key(), other.key()}        # the warm-up ran once
    w = st.get(warm)
    assert w.params() is not None and st.get(cont).params() is None       # its model was kept
    first = df[df["key"] == cont.key()].iloc[0]
    assert first["round"] == 0 and first["loss"] == w.history["loss"].iloc[-1]   # model carried over
    assert first["uplink"] == 0                                            # counts start afresh
    res = fedlib.run_config(cont, x0=w.params())
    full = _base(rounds=25).schedule()
    assert np.array_equal(res.schedule.active, full.active[10:25])        # the schedule continues
    assert fedlib.verify(st.get(cont)).ok



def test_a_phase_of_another_seed_starts_from_the_shared_warm_up(tmp_path):
    warm = _base(algorithm="fedavg", rounds=10, lr_local=0.1)
    phases = [_base(algorithm="fedavg", rounds=6, seed=k, init_from=warm) for k in (0, 1)]
    df = fedlib.sweep(phases, tmp_path, progress=False)
    st = Store(tmp_path)
    assert set(st.keys()) == {warm.key(), *(c.key() for c in phases)}      # one warm-up for both seeds
    start = df[df["round"] == 0].set_index("key")["loss"]
    assert start[phases[0].key()] == start[phases[1].key()] == st.get(warm).history["loss"].iloc[-1]
    res = fedlib.run_config(phases[1], x0=st.get(warm).params())
    own = _base(rounds=16, seed=1).schedule()                               # seed 1's pattern, rounds 10-15
    assert np.array_equal(res.schedule.active, own.active[10:16])
    assert not np.array_equal(res.schedule.active, _base(rounds=16).schedule().active[10:16])
    assert fedlib.verify(st.get(phases[1])).ok



def test_a_phase_whose_warm_up_diverged_says_so(tmp_path):
    """A warm-up that diverges starts none of its phases, and each says how it failed (notebook 09's
    smoke profile on seed 3 said only "warm-up ... failed")."""
    warm = _base(algorithm="fedavg", rounds=200, lr_local=50.0)
    phase = _base(algorithm="fedsum", rounds=5, init_from=warm)
    said = r"^sweep: 1 run\(s\) were not started: their warm-up failed \(first: .* diverged at round \d+; "
    with pytest.warns(RuntimeWarning, match=said):
        df = fedlib.sweep([phase], tmp_path, progress=False)
    at = Store(tmp_path).get(warm).meta["diverged_at"]
    assert df["error"].iloc[0] == f"warm-up {warm.key()} diverged at round {at}; this run was not started"


def test_a_warm_up_computed_alone_with_keep_params_is_not_computed_again(tmp_path):
    warm = _base(algorithm="fedavg", rounds=10, lr_local=0.1)
    phase = _base(algorithm="fedsum", rounds=5, init_from=warm)
    fedlib.sweep([warm], tmp_path, progress=False)                       # alone: no final model kept
    assert Store(tmp_path).get(warm).params() is None
    first = (tmp_path / warm.key() / "meta.json").read_text()
    fedlib.sweep([phase], tmp_path, progress=False)                      # ... so the phase recomputes it
    assert (tmp_path / warm.key() / "meta.json").read_text() != first
    other = tmp_path / "kept"
    fedlib.sweep([warm], other, progress=False, keep_params=True)
    kept = (other / warm.key() / "meta.json").read_text()
    assert Store(other).get(warm).params() is not None
    fedlib.sweep([phase], other, progress=False)
    assert (other / warm.key() / "meta.json").read_text() == kept        # loaded, not computed again
    assert Store(other).get(phase).status == "ok"



def test_missing_data_stops_a_sweep_in_one_line_before_the_store_exists(tmp_path, monkeypatch):
    from fedlib.data import DataNotFoundError
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path / "no-data"))
    cfg = ExperimentConfig(algorithm="fedavg", problem="neural", participation="uniform", rounds=2,
                           problem_args={"dataset": "mnist", "partition": "dirichlet", "alpha": 0.1,
                                         "model": "fedsum_mnist_cnn", "num_clients": 4},
                           participation_args={"per_round": 2}, lr_local=0.05)
    store = tmp_path / "store"
    with pytest.raises(DataNotFoundError, match=r"^problem_args.dataset: mnist: dataset files not") as e:
        sweeps.sweep([cfg], store, progress=False)
    assert e.value.__suppress_context__ and "nothing was computed" in str(e.value)
    assert not store.exists()
    # synthetic stand-ins need no data
    synthetic = cfg.replace(problem_args={**dict(cfg.problem_args), "synthetic": True,
                                          "synthetic_sizes": [80, 20]})
    assert len(sweeps.sweep([synthetic], store, progress=False)) > 0



_SWEEP_KILLABLE = textwrap.dedent("""
    import sys, fedlib
    if __name__ == "__main__":
        cs = [fedlib.ExperimentConfig("fedavg", "quadratic", "full", 10**7, seed=s,
                                      problem_args={"num_clients": 4, "dim": 3}) for s in range(4)]
        fedlib.sweep(cs, sys.argv[1], workers=2, progress=False)
""")



def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [int(k) for k in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            continue
        out += kids
        todo += kids
    return out



def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False



@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from /proc")
def test_the_workers_of_a_killed_sweep_stop_and_store_nothing(tmp_path):
    """The sweep's process is killed (SIGKILL: no chance to clean up) while its two worker processes
    compute: they exit within seconds instead of going on and storing entries of a sweep nobody
    runs any more (each run here would take hours)."""
    script = tmp_path / "sweep_job.py"
    script.write_text(_SWEEP_KILLABLE)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "store")],
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    workers: list[int] = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            workers = [p for p in _descendants(proc.pid)
                       if "spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")]
            if len(workers) == 2:
                break
            time.sleep(0.2)
        assert len(workers) == 2, "the sweep's two workers did not start"
        time.sleep(3)                                  # they import fedlib and start computing
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.time() + 15
        while any(_alive(p) for p in workers) and time.time() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in workers)
        assert not any((tmp_path / "store").glob("*/meta.json"))
    finally:
        for p in [proc.pid, *workers]:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass



def test_seeds_that_draw_nothing_are_not_passed_over_silently(tmp_path):
    trace = [[1, 1, 0, 1, 1], [0, 1, 1, 1, 1]] * 3
    base = _base(participation="trace", participation_args={"trace": trace}, rounds=6, algorithm="fedavg")
    with pytest.warns(RuntimeWarning, match=r"^seed: configs \[0, 1\] differ only in seed \(\[0, 1\]\), "
                                            r"which under participation 'trace' draws no schedule"):
        df = fedlib.sweep(fedlib.grid(base, seed=[0, 1]), tmp_path, progress=False)
    a, b = (g.drop(columns=["key", "seed", *store.TIMING_COLUMNS], errors="ignore").reset_index(drop=True)
            for _, g in df.groupby("key"))
    pd.testing.assert_frame_equal(a, b)                        # indeed the same run twice
    import warnings
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        df = fedlib.sweep(fedlib.grid(_base(rounds=3), seed=[0, 1]), tmp_path, progress=False)
    assert not [w for w in said if "differ only in seed" in str(w.message)]     # a seed that draws: none
    assert set(df["status"]) == {"ok"}


def test_devices_spread_runs_over_processes_and_give_the_serial_frame(tmp_path):
    """``devices=["cpu", "cpu"]``: two processes, each on its device, give the frame of one run at a
    time in this process (GPUs are named the same way: ``["cuda:0", "cuda:1"]``)."""
    cs = config.grid(_base(rounds=6), algorithm=["fedavg", "fedsum", "mifa"])
    serial = fedlib.sweep(cs, tmp_path / "serial", progress=False, torch_threads=1)
    spread = fedlib.sweep(cs, tmp_path / "spread", progress=False, devices=["cpu", "cpu"])
    cols = [c for c in serial if c not in store.TIMING_COLUMNS]
    assert spread["error"].isna().all(), spread["error"].dropna().unique()
    pd.testing.assert_frame_equal(serial[cols], spread[cols], check_exact=True)
    assert {Store(tmp_path / "spread").get(c).meta["device"] for c in cs} == {"cpu"}
    for bad in ("cpu", [], ["gpu:x"]):
        with pytest.raises(ValueError, match="^devices"):
            fedlib.sweep(cs, tmp_path / "x", progress=False, devices=bad)
    with pytest.raises(ValueError, match="^devices: give either"):
        fedlib.sweep(cs, tmp_path / "x", progress=False, devices=["cpu"], workers=2)


_USER_EXTENSIONS = textwrap.dedent('''
    """A user's participation kind (with a text argument) and dataset, in one file outside fedlib."""
    import numpy as np
    from fedlib import data, participation


    @participation.kind("shifts_sweep_test", description="the clients in three shifts, one shift a round",
                        args=[participation.Arg("mode", "text", "strict", choices=("strict", "flaky"))])
    def shifts(rng, rounds, n, mode):
        shift = np.arange(n) * 3 // n
        active = ((np.arange(rounds)[:, None] + shift[None, :]) % 3 == 0).astype(np.int64)
        if mode == "flaky":
            active = active * (rng.random((rounds, n)) < 0.8)
        return participation.Draw(active)


    def bars(root):
        out = {}
        for split, n, seed in (("train", 48, 0), ("test", 16, 1)):
            rng = np.random.default_rng(seed)
            y = rng.integers(0, 2, n)
            x = rng.integers(0, 40, (n, 28, 28)).astype(np.uint8)
            for i in range(n):
                if y[i]:
                    x[i, :, 10:14] = 255
                else:
                    x[i, 10:14, :] = 255
            out[split] = (x, y)
        return out


    data.register_dataset("bars_sweep_test", bars,
                          info=data.DatasetInfo((1, 28, 28), 2, mean=(0.2,), std=(0.35,)))
''')


def test_a_users_kind_and_dataset_reach_the_workers_of_a_sweep(tmp_path, monkeypatch):
    """Issue 53's done-when: a kind with a text argument and a dataset, defined by a user in one file,
    run through sweep(workers=2) into a store; the worker processes import that file as they do a
    user's algorithm, and the store reads back."""
    (tmp_path / "my_extensions.py").write_text(_USER_EXTENSIONS)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    from fedlib import data, participation
    importlib.import_module("my_extensions")
    try:
        base = ExperimentConfig(algorithm="fedavg", problem="neural", participation="shifts_sweep_test",
                                rounds=3, local_steps=2, lr_local=0.05,
                                problem_args={"dataset": "bars_sweep_test", "num_clients": 6,
                                              "partition": "iid", "batch_size": 4,
                                              "train_eval_per_client": 4},
                                participation_args={"mode": "flaky"})
        cs = config.grid(base, algorithm=["fedavg", "fedsum"],
                         **{"participation_args.mode": ["strict", "flaky"]})
        assert fedlib.extensions.worker_modules(cs) == ("my_extensions",)
        with ThreadPoolExecutor(1) as threads:                  # threads share this process's modules
            assert sweeps._worker_modules(cs, threads, "executor") == ()
        df = fedlib.sweep(cs, tmp_path / "store", progress=False, workers=2)
        assert set(df["status"]) == {"ok"} and df["error"].isna().all(), df["error"].dropna().unique()
        assert df["round"].max() == 3 and df["test_acc"].notna().any()
        entries = [Store(tmp_path / "store").get(c) for c in cs]
        assert all(e is not None and e.status == "ok" for e in entries)
        again = fedlib.load(tmp_path / "store")                                   # reading computes nothing
        assert sorted(again["key"].unique()) == sorted(c.key() for c in cs)
        # the workers' schedules are the ones this process builds from the user's kind
        strict = cs[0].schedule(num_clients=6).active
        assert strict.sum(axis=1).tolist() == [2, 2, 2]
        serial = fedlib.sweep(cs[:1], tmp_path / "serial", progress=False)
        cols = [c for c in serial if c not in store.TIMING_COLUMNS]
        pd.testing.assert_frame_equal(serial[cols], df[df["key"] == cs[0].key()][cols].reset_index(drop=True),
                                      check_exact=True)
    finally:
        participation._KINDS.pop("shifts_sweep_test", None)
        data._DATASETS.pop("bars_sweep_test", None)
        sys.modules.pop("my_extensions", None)


def test_a_kind_or_dataset_defined_in_main_is_refused_before_anything_is_stored(tmp_path):
    """A kind or dataset defined in a notebook cell validates in the sweep's process but cannot be
    imported by worker processes: the sweep refuses it before any entry is written (before issue 53
    the workers failed and wrote error entries into the store)."""
    from fedlib import data, participation

    def everyone(rng, rounds, n):
        return np.ones((rounds, n), dtype=np.int64)
    everyone.__module__ = "__main__"                                         # as a notebook cell defines it
    participation.register_kind("notebook_kind_test", everyone, description="everyone")

    def loader(root):
        return {"train": (np.zeros((8, 28, 28), np.uint8), np.arange(8) % 2),
                "test": (np.zeros((4, 28, 28), np.uint8), np.arange(4) % 2)}
    loader.__module__ = "__main__"
    data.register_dataset("notebook_data_test", loader, info=data.DatasetInfo((1, 28, 28), 2))
    try:
        kind_run = _base(participation="notebook_kind_test", participation_args={})
        with pytest.raises(ValueError, match=r"^workers: participation kind 'notebook_kind_test' is defined "
                                             r"in __main__ \(a notebook cell or a script\), which worker "
                                             r"processes cannot import"):
            fedlib.sweep([kind_run], tmp_path / "s", progress=False, workers=2)
        data_run = ExperimentConfig(algorithm="fedavg", problem="neural", participation="full", rounds=2,
                                    problem_args={"dataset": "notebook_data_test", "num_clients": 2,
                                                  "partition": "iid", "batch_size": 2})
        refused = r"^executor: dataset 'notebook_data_test' is defined in __main__"    # the argument given
        with ProcessPoolExecutor(1) as ex, pytest.raises(ValueError, match=refused):
            fedlib.sweep([data_run], tmp_path / "s", progress=False, executor=ex)
        assert not list((tmp_path / "s").glob("*/meta.json")) and not list((tmp_path / "s").glob("*-*"))
        # in this process (no workers) both run
        assert set(fedlib.sweep([kind_run, data_run], tmp_path / "here", progress=False)["status"]) == {"ok"}
    finally:
        participation._KINDS.pop("notebook_kind_test", None)
        data._DATASETS.pop("notebook_data_test", None)


def _count_keys_and_checks(monkeypatch) -> dict:
    """Count ExperimentConfig.key calls and validate calls (the latter by their ``where``)."""
    counts = {"key": 0, "validate": []}
    key, validate = ExperimentConfig.key, ExperimentConfig.validate

    def counted_key(self):
        counts["key"] += 1
        return key(self)

    def counted_validate(self, where="config", inputs=True):
        counts["validate"].append(where)
        return validate(self, where=where, inputs=inputs)

    monkeypatch.setattr(ExperimentConfig, "key", counted_key)
    monkeypatch.setattr(ExperimentConfig, "validate", counted_validate)
    return counts


def test_a_sweep_validates_and_keys_each_config_once(tmp_path, monkeypatch):
    # before issue 53 these sweeps called validate 11 times and key 63 times when computing (with
    # the duplicate), 3 and 42 when loading, and 19 and 104 with a shared warm-up (validate counts
    # the warm-up's check inside its run's)
    cs = [_base(rounds=4, seed=s) for s in range(3)]
    counts = _count_keys_and_checks(monkeypatch)
    computed = fedlib.sweep(cs + cs[:1], tmp_path / "a", progress=False)        # a duplicate too
    assert counts == {"key": 3, "validate": ["configs[0]", "configs[1]", "configs[2]"]}
    counts.update(key=0, validate=[])
    loaded = fedlib.sweep(cs, tmp_path / "a", progress=False)
    assert counts == {"key": 3, "validate": ["configs[0]", "configs[1]", "configs[2]"]}
    pd.testing.assert_frame_equal(_no_timing(loaded), _no_timing(computed.iloc[:len(loaded)]))
    warm = _base(rounds=3)
    phases = [_base(rounds=4, seed=s, init_from=warm) for s in range(3)]
    counts.update(key=0, validate=[])
    df = fedlib.sweep(phases, tmp_path / "b", progress=False)
    assert counts["key"] == 4                                     # three runs and their shared warm-up
    assert sorted(counts["validate"]) == sorted([f"configs[{i}]" for i in range(3)]
                                                + [f"configs[{i}].init_from" for i in range(3)])
    assert (df["status"] == "ok").all() and set(Store(tmp_path / "b").keys()) == {
        warm.key(), *(p.key() for p in phases)}


def test_a_planned_config_is_what_store_and_runner_take_as_checked(tmp_path, monkeypatch):
    c = _base(rounds=3)
    planned = config.Planned.of(c)
    assert planned.key == c.key() and planned.warmup is None
    counts = _count_keys_and_checks(monkeypatch)
    st = Store(tmp_path)
    entry = st.compute(planned)
    assert st.get(planned).history.equals(entry.history) and entry.path.name == planned.key
    assert counts == {"key": 0, "validate": []}                 # taken as planned
    st.get(c)
    assert counts == {"key": 1, "validate": []}                 # a plain config is keyed there
    fedlib.run_config(c, progress=False)
    assert counts["validate"] == ["config"]                     # and validated before it runs


def test_the_dask_preload_replaces_the_nannys_worker_environment():
    """``dask worker --preload-nanny fedlib.dask_preload``: the nanny spawns workers with
    ``DASK_WORKER_ENV`` alone; Dask's own default (which sets ``MALLOC_TRIM_THRESHOLD_``) is
    replaced, not merged into, as environment variables would."""
    pytest.importorskip("distributed")
    key = "'distributed.nanny.pre-spawn-environ'"
    code = (f"import dask, distributed; before = dict(dask.config.get({key})); "
            "import fedlib.dask_preload, fedlib.sweeps; "
            f"after = dask.config.get({key}); "
            "print('MALLOC_TRIM_THRESHOLD_' in before, after == fedlib.sweeps.DASK_WORKER_ENV)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]
