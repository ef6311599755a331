"""The store, sweeps, verify, checkpoints and resume (fedlib.store, .sweeps, .verification)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import fedlib
from fedlib import ExperimentConfig, analysis, config, notebook, store, sweeps
from fedlib.store import Store

from .conftest import TINY_CNN_REDUCTION, assert_kernels_agree

ROOT = Path(__file__).resolve().parents[1]
QUAD = {"num_clients": 5, "dim": 3, "seed": 1}


def _base(**kw):
    d = dict(algorithm="fedsum", problem="quadratic", participation="bernoulli", rounds=12,
             problem_args=QUAD, participation_args={"p": 0.5}, local_steps=2, lr_local=0.05)
    d.update(kw)
    return ExperimentConfig(**d)


def _no_timing(df):
    return df.drop(columns=[c for c in store.TIMING_COLUMNS if c in df])


# ------------------------------------------------------------------------------ configs and grid
def test_config_forms_are_canonical_and_keys_ignore_defaults_and_version(monkeypatch):
    a = _base()
    b = ExperimentConfig(**{**a.to_dict(), "problem_args": (("seed", 1), ("dim", 3), ("num_clients", 5))})
    assert a == b and hash(a) == hash(b) and a.key() == b.key()
    assert a.key() == _base(seed=0, eval_every=1, lr_schedule="constant").key()   # defaults spelled out
    assert a.key().startswith("fedsum-") and a.key() != _base(seed=1).key()
    monkeypatch.setattr(fedlib, "__version__", "9.9.9")
    assert a.key() == b.key()                                                    # version not hashed
    assert ExperimentConfig.from_dict(json.loads(json.dumps(a.to_dict()))) == a
    nested = _base(problem="neural", problem_args={"model_args": {"dropout": 0.1}, "alpha": 0.1})
    assert nested.to_dict()["problem_args"] == {"alpha": 0.1, "model_args": {"dropout": 0.1}}


def test_grid_is_the_product_of_its_axes():
    cs = config.grid(_base(), algorithm=["fedavg", "fedsum"], **{"participation_args.p": [0.2, 0.4, 0.6]})
    assert len(cs) == 6 and len({c.key() for c in cs}) == 6
    assert [c.algorithm for c in cs[:3]] == ["fedavg"] * 3
    assert [dict(c.participation_args)["p"] for c in cs[:3]] == [0.2, 0.4, 0.6]
    with pytest.raises(ValueError, match="^colour"):
        config.grid(_base(), colour=["red"])
    with pytest.raises(ValueError, match=r"^rounds\.x"):
        config.grid(_base(), **{"rounds.x": [1]})


# ------------------------------------------------------------------------------ sweep and store
def test_sweep_stores_each_run_once_and_loads_it_back(tmp_path):
    cs = config.grid(_base(), algorithm=["fedavg", "fedsum", "fedavg"], seed=[0, 1])   # duplicates
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
    boom = _base(problem_args={**QUAD, "sigma": -1.0})            # only the problem's builder refuses it
    div = _base(algorithm="fedavg", lr_local=50.0, rounds=200)
    df = fedlib.sweep([boom, div, ok], tmp_path, progress=False)
    status = df.drop_duplicates("key").set_index("key")["status"]
    assert status[boom.key()] == "error" and status[div.key()] == "diverged" and status[ok.key()] == "ok"
    err = df[df["key"] == boom.key()]
    assert len(err) == 1 and np.isnan(err["round"].iloc[0]) and "sigma" in err["error"].iloc[0]
    d = df[df["key"] == div.key()]
    assert d["diverged_at"].iloc[0] == d["round"].iloc[-1] < 200
    st = Store(tmp_path)
    assert st.get(boom).status == "error"                     # stored as such: not retried by default
    written = (tmp_path / boom.key() / "meta.json").stat().st_mtime_ns
    fedlib.sweep([boom], tmp_path, progress=False)
    assert (tmp_path / boom.key() / "meta.json").stat().st_mtime_ns == written
    fedlib.sweep([boom], tmp_path, progress=False, retry_errors=True)
    assert (tmp_path / boom.key() / "meta.json").stat().st_mtime_ns != written


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


def test_unwritable_store_fails_at_once_with_its_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match=rf"^store: cannot write to {blocker}/sub"):
        fedlib.sweep([_base()], blocker / "sub", progress=False)


def test_compute_off_refuses_missing_runs(tmp_path, monkeypatch):
    fedlib.sweep([_base()], tmp_path, progress=False)
    monkeypatch.setenv("FEDLIB_NO_COMPUTE", "1")
    assert len(fedlib.sweep([_base()], tmp_path, progress=False))       # stored: fine
    with pytest.raises(ValueError, match="lacks 1 of 2 runs"):
        fedlib.sweep([_base(), _base(seed=3)], tmp_path, progress=False)


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


def test_run_cached_is_a_store_with_params(tmp_path):
    c = _base()
    first = fedlib.run_cached(c, cache_dir=tmp_path)
    assert (tmp_path / c.key() / "params.npy").exists()
    again = fedlib.run_cached(c, cache_dir=tmp_path)
    assert torch.equal(first.params, again.params)
    pd.testing.assert_frame_equal(first.history, again.history)
    assert torch.equal(first.params, fedlib.run_config(c).params)


# ------------------------------------------------------------------------------ verify
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


# ------------------------------------------------------------------------------ executors
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


def test_notebook_store_keeps_quick_and_paper_stores_and_smoke_runs_in_a_temporary_folder():
    kept = notebook.store_path("02_fedsum_main", "quick")
    assert notebook.notebook_store("02_fedsum_main", "quick") == kept
    tmp = notebook.notebook_store("02_fedsum_main", "smoke")
    assert tmp.is_dir() and "results" not in tmp.parts and not any(tmp.iterdir())
    other = notebook.notebook_store("02_fedsum_main", "paper", committed=False)
    assert other != tmp and other.is_dir()
    with pytest.raises(ValueError, match="^profile"):
        notebook.notebook_store("02_fedsum_main", "fast")


def test_notebook_runs_set_up_a_notebook_from_its_parameters():
    params = {**notebook.notebook_defaults("05_focus_cifar"), "profile": "smoke"}
    runs = notebook.notebook_runs("05_focus_cifar", params)
    assert runs.out_dir == "results/notebooks/05_focus_cifar-profile=smoke"     # not the committed figures
    assert "results" not in runs.store.parts and runs.workers == 1 and not runs.progress
    quick = notebook.notebook_runs("05_focus_cifar", {**params, "profile": "quick", "stand_in_rounds": 2})
    assert "results" not in quick.store.parts                                       # stand-ins: temporary
    cfg = ExperimentConfig("fedavg", "quadratic", "full", 3, problem_args={"num_clients": 3, "dim": 2})
    df = runs.compute([cfg])
    assert set(df["key"]) == {cfg.key()} and (runs.store / cfg.key()).is_dir()
    with pytest.raises(ValueError, match="^profile"):
        notebook.notebook_runs("05_focus_cifar", {**params, "profile": "fast"})


# ------------------------------------------------------------------------------ checkpoints
_KILLABLE = textwrap.dedent("""
    import sys, time, fedlib
    from fedlib import problems
    prob = problems.digits_cnn(num_clients=6, alpha=0.5, batch_size=8, seed=0)     # with dropout
    slow = sys.argv[2] == "slow"
    def cb(t, x):
        if slow:
            time.sleep(0.15)
    res = fedlib.run("fedsum_cr", prob, {"kind": "bernoulli", "p": 0.5}, rounds=30, local_steps=2,
                     lr_local=0.05, eval_every=4, progress=False, seed=3, checkpoint=sys.argv[1],
                     checkpoint_every=3, callback=cb)
    import torch
    torch.save({"x": res.params, "h": res.history.drop(columns=["seconds", "eval_seconds"])
               .to_dict("list")}, sys.argv[1] + ".out")
""")


def test_a_killed_run_resumes_to_the_same_bits(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(_KILLABLE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ck = tmp_path / "run.ckpt"
    proc = subprocess.Popen([sys.executable, str(script), str(ck), "slow"], env=env)
    deadline = time.time() + 120
    while not ck.exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert ck.exists() and not (tmp_path / "run.ckpt.out").exists()
    t_saved = torch.load(ck, weights_only=True)["t"]
    assert 0 < t_saved < 30
    subprocess.run([sys.executable, str(script), str(ck), "fast"], env=env, check=True)
    ref = tmp_path / "ref.ckpt"
    subprocess.run([sys.executable, str(script), str(ref), "fast"], env=env, check=True)
    a = torch.load(str(ck) + ".out", weights_only=False)
    b = torch.load(str(ref) + ".out", weights_only=False)
    assert torch.equal(a["x"], b["x"])
    assert a["h"] == b["h"]


def test_checkpoint_of_another_run_is_refused(tmp_path, quad):
    ck = tmp_path / "c.pt"
    fedlib.run("fedsum", quad, "full", rounds=4, progress=False, checkpoint=ck, checkpoint_every=2)
    done = fedlib.run("fedsum", quad, "full", rounds=4, progress=False, checkpoint=ck)   # resumes at end
    assert len(done.history) == 5
    with pytest.raises(ValueError, match=rf"^checkpoint: {ck} belongs to another run"):
        fedlib.run("fedsum", quad, "full", rounds=4, lr_local=0.02, progress=False, checkpoint=ck)
    ck.write_bytes(b"garbage")
    with pytest.warns(RuntimeWarning, match="cannot read"):
        fedlib.run("fedsum", quad, "full", rounds=4, progress=False, checkpoint=ck)


@pytest.mark.parametrize("name", ["fedsum_cr", "scaffold", "fedau", "fedawe", "amplified_fedavg",
                                  "fedacs", "os_sampling", "focus"])
def test_resume_equals_uninterrupted_for_stateful_algorithms(name, tmp_path, quad):
    """Stop after 5 of 9 rounds (truncated schedule + checkpoint), resume on the full schedule."""
    from fedlib import participation
    sched = participation.build("bernoulli", quad.num_clients, 9, seed=2, p=0.5, local_steps=2,
                                uplink_p=0.8)
    kw = dict(lr_local=0.02, progress=False, seed=1)
    opts = {"amplified_fedavg": {"P": 2, "gamma": 1.5}}.get(name, {})
    full = fedlib.run(name, quad, sched, **kw, **opts)
    ck = tmp_path / "c.pt"
    with pytest.raises(_Stop):
        fedlib.run(name, quad, sched, **kw, **opts, checkpoint=ck, checkpoint_every=5, callback=_stop_at(5))
    assert torch.load(ck, weights_only=True)["t"] == 5
    resumed = fedlib.run(name, quad, sched, **kw, **opts, checkpoint=ck)
    assert torch.equal(full.params, resumed.params)
    pd.testing.assert_frame_equal(_no_timing(full.history), _no_timing(resumed.history), check_exact=True)


class _Stop(Exception):
    pass


def _stop_at(n):
    def cb(t, x):
        if t + 1 > n:
            raise _Stop
    return cb


# ------------------------------------------------------------------------------ profiles, stores
def test_profiles_and_store_paths():
    assert notebook.check_profile("quick") == "quick"
    with pytest.raises(ValueError, match="^profile: must be one of smoke, quick, paper"):
        notebook.check_profile("full")
    p = notebook.store_path("02_fedsum_main", "quick", root="/x")
    assert p == Path("/x/results/02_fedsum_main/quick")


def _committed_stores():
    return sorted(p for p in (ROOT / "results").glob("*/quick") if p.is_dir())


@pytest.mark.parametrize("store", _committed_stores(), ids=lambda p: p.parent.name)
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


def test_neural_training_metrics_on_a_weighted_subset():
    from fedlib import problems

    def build(m):
        return problems.digits_cnn(num_clients=8, alpha=0.5, batch_size=8, seed=0, train_eval_per_client=m)
    full, sub, big = build(None), build(20), build(10_000)
    sizes = np.array([len(p) for p in sub.partition])
    assert len(sub._train_eval_idx) == np.minimum(sizes, 20).sum() < sizes.sum()
    for prob in (sub, full):
        assert abs(float(prob._train_eval_w.sum()) - 1) < 1e-12
    x = full.initial_params()
    m_full, m_sub = full.metrics(x), sub.metrics(x)
    idx = torch.cat(full.partition)                              # every sample, equal weights
    with torch.no_grad():
        ref = torch.nn.functional.cross_entropy(full.model.eval()(full.train.x[idx]), full.train.y[idx])
    # one forward pass over all samples vs batches of 512: other kernels, other summation orders; the
    # mean of n fp32 losses and the forward's own reductions bound the difference (conftest)
    terms = len(idx) + TINY_CNN_REDUCTION
    assert_kernels_agree(torch.tensor(m_full["loss"]), ref.double(), terms, "loss, batched vs whole")
    assert m_full["test_acc"] == m_sub["test_acc"]               # test metrics: whole test split
    assert m_sub["loss"] != m_full["loss"] and abs(m_sub["loss"] - m_full["loss"]) < 0.05 * m_full["loss"]
    assert_kernels_agree(torch.tensor(big.metrics(x)["loss"]), torch.tensor(m_full["loss"]), terms,
                         "m >= n_i: every sample")


# ------------------------------------------------------------------------------ phases (warm-up)
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


def test_phase_errors_name_init_from(tmp_path):
    warm = _base(algorithm="fedavg", rounds=10)
    same = r"^configs\[0\]\.init_from: the warm-up must have the same participation_args"
    with pytest.raises(ValueError, match=same):
        fedlib.sweep([_base(participation_args={"p": 0.9}, init_from=warm)], tmp_path, progress=False)
    with pytest.raises(ValueError, match="^init_from: a run that continues a warm-up needs"):
        fedlib.run_config(_base(init_from=warm))
    with pytest.raises(ValueError, match="^init_from: expected"):
        _base(init_from=42)


def test_finals_average_the_last_evaluations_and_blank_diverged_runs(tmp_path):
    ok = _base(rounds=12, eval_every=3)
    bad = _base(algorithm="fedavg", rounds=12, eval_every=3, lr_local=1e12)   # overflows
    df = fedlib.sweep([ok, bad], tmp_path, progress=False)
    f = analysis.finals(df)
    hist = Store(tmp_path).get(ok).history
    assert f.loc[ok.key(), "loss"] == hist["loss"].iloc[-1] and f.loc[ok.key(), "round"] == 12
    assert np.isclose(analysis.finals(df, last=2).loc[ok.key(), "loss"], hist["loss"].iloc[-2:].mean())
    assert f.loc[ok.key(), "outcome"] == "ok"
    div = Store(tmp_path).get(bad).meta["diverged_at"]
    assert f.loc[bad.key(), "outcome"] == f"diverged at round {div}" and np.isnan(f.loc[bad.key(), "loss"])
    assert "seconds" not in f and "lr_local" not in f
    with pytest.raises(ValueError, match="^last"):
        analysis.finals(df, last=0)
    with pytest.raises(ValueError, match="^df"):
        analysis.finals(df.drop(columns="diverged_at"))


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
    with warnings.catch_warnings():
        warnings.simplefilter("error")                         # a seed that draws: no warning
        fedlib.sweep(fedlib.grid(_base(rounds=3), seed=[0, 1]), tmp_path, progress=False)
