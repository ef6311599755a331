"""fedlib.runner: ``fedlib.run`` and ``run_cached`` (input checks, divergence, the on-disk cache),
its loop over callbacks (the user's hooks see every round and can stop the run early; a run with
callbacks computes the same bits as one without), checkpoints and resuming."""

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import fedlib
from fedlib import ExperimentConfig, participation, problems, runner

from .run_helpers import ROOT
from .run_helpers import base_config as _base
from .run_helpers import no_timing as _no_timing


def test_run_from_spec_builds_the_schedule(quad):
    res = fedlib.run("fedavg", quad, {"kind": "uniform", "per_round": 2}, rounds=5, local_steps=3,
                     progress=False, seed=4)
    sched = participation.build("uniform", quad.num_clients, 5, seed=4, per_round=2, local_steps=3)
    assert res.info["schedule"] == sched.spec
    assert list(res.history["round"]) == [0, 1, 2, 3, 4, 5]
    assert {"loss", "grad_norm_sq", "dist_to_opt", "uplink", "downlink", "seconds"} <= set(res.history)


def test_eval_every_and_final_round(quad):
    res = fedlib.run("fedavg", quad, "full", rounds=7, eval_every=3, progress=False)
    assert list(res.history["round"]) == [0, 3, 6, 7]


def test_rounds_truncate_a_schedule_and_local_steps_override(quad):
    sched = participation.build("full", quad.num_clients, 10, local_steps=2)
    a = fedlib.run("fedavg", quad, sched, rounds=4, progress=False)
    assert a.history["round"].iloc[-1] == 4
    b = fedlib.run("fedavg", quad, sched, rounds=4, local_steps=5, progress=False)
    assert b.info["schedule"]["local_steps"] == 5
    assert not torch.equal(a.params, b.params)


@pytest.mark.parametrize("kwargs,field", [
    (dict(lr_local=0.0), "lr_local"), (dict(lr_local=-1.0), "lr_local"),
    (dict(lr_global=float("nan")), "lr_global"), (dict(rounds=0), "rounds"),
    (dict(rounds=99), "rounds"), (dict(eval_every=0), "eval_every"),
    (dict(lr_schedule="cosine"), "lr_schedule"), (dict(local_steps=0), "local_steps"),
    (dict(engine="turbo"), "engine"),
])
def test_bad_input_names_the_field(kwargs, field, quad):
    sched = participation.build("full", quad.num_clients, 10)
    with pytest.raises(ValueError, match=rf"^{field}"):
        fedlib.run("fedavg", quad, sched, progress=False, **kwargs)


@pytest.mark.parametrize("field", ["device", "devices"])
def test_a_device_this_machine_lacks_is_named_by_the_argument_that_gave_it(field):
    """One helper checks ``sweep``'s and the campaign's ``device`` and ``devices``: its message
    starts with the field's name, whatever the fault."""
    with pytest.raises(ValueError, match=rf"^{field}: 'gpu0' is not a device name"):
        runner._device("gpu0", field=field)
    absent = "cuda:99" if torch.cuda.is_available() else "cuda"
    with pytest.raises(ValueError, match=rf"^{field}: '{absent}' (does not exist|asked for, but this machine "
                                         "has no CUDA device)"):
        runner._device(absent, field=field)
    assert runner._device("cpu", field=field) == torch.device("cpu")


def test_schedule_of_wrong_size(quad):
    sched = participation.build("full", quad.num_clients + 1, 10)
    with pytest.raises(ValueError, match="^participation"):
        fedlib.run("fedavg", quad, sched, progress=False)


def test_divergence_is_reported_not_raised(quad):
    with pytest.warns(RuntimeWarning, match="diverged"):
        res = fedlib.run("fedavg", quad, "full", rounds=500, lr_local=10.0, progress=False)
    assert res.diverged and res.info["diverged_at"] < 500
    assert np.isnan(res.history["loss"].iloc[-1])


def test_warnings_name_the_line_that_called_fedlib(quad, tmp_path):
    """A warning points at the user's line, not into fedlib: through the guard wrapper of the
    public boundary and the helpers below it (a fixed stacklevel pointed at the wrapper once the
    functions were guarded), for run, for a schedule's idle clients and for a store's entry."""
    nobody = participation.Schedule(np.zeros((4, quad.num_clients), dtype=bool),
                                    np.ones((4, quad.num_clients), dtype=bool),
                                    np.full((4, quad.num_clients), 2), {"kind": "trace"})
    cfg = _base(rounds=2)
    (tmp_path / "store" / cfg.key()).mkdir(parents=True)          # an entry with no meta.json
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        fedlib.run("fedavg", quad, "full", rounds=500, lr_local=10.0, progress=False)
        fedlib.run("fedavg", quad, nobody, progress=False)
        assert fedlib.store.Store(tmp_path / "store").get(cfg) is None
    seen = {(str(w.message).split(":")[0], w.filename, w.lineno) for w in rec}
    assert ("fedavg", __file__, line) in seen
    assert ("participation", __file__, line + 1) in seen
    assert ("store", __file__, line + 2) in seen
    assert all(f == __file__ for _, f, _ in seen), seen
    with warnings.catch_warnings(record=True) as rec:        # called by the standard library (as
        warnings.simplefilter("always")                      # runpy calls the command line): fedlib's
        with contextlib.ExitStack() as stack:                # outermost function, not the guard's wrapper
            stack.callback(fedlib.run, "fedavg", quad, nobody, progress=False)
    assert [w.filename for w in rec] == [runner.__file__]


def test_run_cached_hits_and_recovers_from_corruption(tmp_path):
    cfg = ExperimentConfig(algorithm="fedsum", problem="quadratic", participation="bernoulli",
                           rounds=20, problem_args=(("num_clients", 5), ("dim", 3), ("seed", 1)),
                           participation_args=(("p", 0.5),), local_steps=2, lr_local=0.05)
    first = fedlib.run_cached(cfg, cache_dir=tmp_path)
    entries = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1 and entries[0].name == cfg.key()
    hist = entries[0] / "history.csv"
    mtime = hist.stat().st_mtime_ns
    again = fedlib.run_cached(cfg, cache_dir=tmp_path)
    assert hist.stat().st_mtime_ns == mtime              # served from the store
    pd.testing.assert_frame_equal(first.history, again.history)
    assert torch.equal(first.params, again.params)
    (entries[0] / "params.npy").write_bytes(b"garbage")  # corrupt entry -> reported, recomputed
    (entries[0] / "meta.json").write_text("{")
    with pytest.warns(RuntimeWarning, match=f"unreadable entry {entries[0]}"):
        fixed = fedlib.run_cached(cfg, cache_dir=tmp_path)
    assert torch.equal(fixed.params, first.params)
    assert fedlib.run_cached(cfg, cache_dir=tmp_path).history.shape == first.history.shape


def test_config_key_is_stable_and_sensitive():
    a = ExperimentConfig("fedavg", "quadratic", "full", 10)
    b = ExperimentConfig("fedavg", "quadratic", "full", 10)
    assert a.key() == b.key() and a.key().startswith("fedavg-") and len(a.key()) == len("fedavg-") + 16
    assert a.key() != ExperimentConfig("fedavg", "quadratic", "full", 11).key()
    with pytest.raises(AttributeError):
        a.rounds = 3  # frozen


def test_neural_run_improves_on_digits():
    prob = problems.digits_cnn(num_clients=10, alpha=0.5, batch_size=32, seed=0)
    res = fedlib.run("fedsum", prob, {"kind": "uniform", "per_round": 5}, rounds=30, local_steps=5,
                     lr_local=0.05, progress=False, eval_every=10)
    h = res.history
    assert h["loss"].iloc[-1] < h["loss"].iloc[0]
    assert h["test_acc"].iloc[-1] > h["test_acc"].iloc[0] + 0.2


@pytest.mark.parametrize("problem,args", [
    ("focus_toy", (("n", 80), ("d", 4), ("num_clients", 4))),
    ("quadratic", (("num_clients", 4), ("dim", 3))),
])
def test_run_cached_builds_named_problems_on_a_device(problem, args, tmp_path):
    cfg = ExperimentConfig("focus", problem, "uniform", 3, problem_args=args,
                           participation_args=(("per_round", 2),), local_steps=2, lr_local=1e-3)
    res = fedlib.run_cached(cfg, cache_dir=tmp_path, device="cpu")
    assert list(res.history["round"]) == [0, 1, 2, 3] and res.params.device.type == "cpu"


def test_a_non_finite_metric_with_a_finite_model_is_divergence(quad):
    """The iterates grow ~5x per step: x^T A x overflows (loss = inf) long before x itself does."""
    with pytest.warns(RuntimeWarning, match="diverged") as record:
        res = fedlib.run("fedavg", quad, "full", rounds=2000, lr_local=3.0, local_steps=1, progress=False)
    assert len([w for w in record if "diverged" in str(w.message)]) == 1          # warned once
    assert res.diverged and bool(torch.isfinite(res.params).all())
    last = res.history.iloc[-1]
    assert not np.isfinite(last["loss"]) and res.info["diverged_at"] == last["round"] < 2000
    assert np.isfinite(res.history["loss"].iloc[:-1]).all()                       # rows before it kept


def test_run_accepts_names_classes_and_instances(quad):
    from fedlib import algorithms
    by_name = fedlib.run("fedavg", quad, "full", rounds=3, progress=False, lr_local=0.1)
    by_class = fedlib.run(algorithms.get("fedavg"), quad, "full", rounds=3, progress=False, lr_local=0.1)
    inst = algorithms.get("fedavg")(quad, None, aggregation="all")
    by_inst = fedlib.run(inst, quad, "full", rounds=3, progress=False, lr_local=0.1)
    assert torch.equal(by_name.params, by_class.params)
    assert by_inst.info["options"] == {"aggregation": "all"}
    named = fedlib.run("fedavg", "quadratic", "full", rounds=2, progress=False)
    assert named.info["problem"]["num_clients"] == problems.random_quadratic().num_clients


def test_history_counts_the_local_steps_of_asked_clients(quad):
    """client_steps: cumulative local steps of every client the server asked (failed uploads
    were computed too); for FedACS the clients it drew, once each however often drawn."""
    n = quad.num_clients
    steps = np.arange(1, n + 1)
    sched = participation.build("uniform", n, 12, seed=2, per_round=3, local_steps=steps, uplink_p=0.5)
    res = fedlib.run("fedavg", quad, sched, eval_every=4, progress=False)
    per_round = ((sched.active > 0) * sched.local_steps).sum(1)
    assert list(res.history["client_steps"]) == [0, *np.cumsum(per_round)[[3, 7, 11]]]
    full = participation.build("full", n, 12, seed=2, local_steps=steps, uplink_p=0.5)
    acs = fedlib.run("fedacs", quad, full, progress=False, draws=n)
    drawn = acs.schedule.active
    assert (drawn.sum(1) == n).all() and (drawn > 1).any()                # with replacement
    assert acs.history["client_steps"].iloc[-1] == ((drawn > 0) * steps).sum()


class Recorder(fedlib.RunCallback):
    def __init__(self):
        self.calls = []

    def on_start(self, run):
        self.calls.append(("start", run.t))

    def after_round(self, run):
        self.calls.append(("round", run.t, run.round_input.t))

    def on_end(self, run):
        self.calls.append(("end", run.t))


class StopAt(fedlib.RunCallback):
    def __init__(self, t):
        self.t = t

    def after_round(self, run):
        return run.t == self.t


def _sched(quad, rounds=12):
    return participation.build("bernoulli", quad.num_clients, rounds, seed=3, p=0.5, local_steps=2)


def test_callbacks_see_every_round_and_change_no_bit(quad):
    rec = Recorder()
    kw = dict(lr_local=0.05, progress=False, eval_every=4)
    with_cb = fedlib.run("fedsum", quad, _sched(quad), callbacks=[rec], round_offset=5, **kw)
    plain = fedlib.run("fedsum", quad, _sched(quad), round_offset=5, **kw)
    assert rec.calls == [("start", 0), *[("round", t, t + 4) for t in range(1, 13)], ("end", 12)]
    assert torch.equal(with_cb.params, plain.params)
    assert with_cb.history.drop(columns=["seconds", "eval_seconds"]).equals(
        plain.history.drop(columns=["seconds", "eval_seconds"]))
    assert "stopped_by" not in with_cb.info


def test_an_early_stop_is_evaluated_counted_and_named(quad):
    res = fedlib.run("fedavg", quad, _sched(quad), lr_local=0.05, progress=False, eval_every=4,
                     callbacks=[StopAt(6)])
    h = res.history
    assert list(h["round"]) == [0, 4, 6]                  # the stop round is evaluated
    assert res.info["stopped_by"] == "StopAt" and not res.diverged
    full = fedlib.run("fedavg", quad, _sched(quad), lr_local=0.05, progress=False, eval_every=1)
    # the messages of the stop round are counted, and the model is the one after round 6
    assert h["uplink"].iloc[-1] == full.history.set_index("round").loc[6, "uplink"]
    assert np.isclose(h["loss"].iloc[-1], full.history.set_index("round").loc[6, "loss"], rtol=1e-12)


def test_an_early_stop_checkpoints_where_it_stopped(quad, tmp_path):
    ck = tmp_path / "run.pt"
    res = fedlib.run("fedsum", quad, _sched(quad), lr_local=0.05, progress=False, checkpoint=ck,
                     callbacks=[StopAt(5)])
    assert res.info["stopped_by"] == "StopAt" and ck.exists()
    resumed = fedlib.run("fedsum", quad, _sched(quad), lr_local=0.05, progress=False, checkpoint=ck)
    whole = fedlib.run("fedsum", quad, _sched(quad), lr_local=0.05, progress=False)
    assert torch.equal(resumed.params, whole.params)       # resumed from round 5, bitwise
    assert resumed.info["resumed_at"] == 5 and "resumed_at" not in whole.info


def test_a_divergence_stops_without_naming_a_callback(quad):
    with pytest.warns(RuntimeWarning, match="diverged"):
        res = fedlib.run("fedavg", quad, _sched(quad, 400), lr_local=50.0, progress=False)
    assert res.diverged and "stopped_by" not in res.info


def test_run_cached_is_a_store_with_params(tmp_path):
    c = _base()
    first = fedlib.run_cached(c, cache_dir=tmp_path)
    assert (tmp_path / c.key() / "params.npy").exists()
    again = fedlib.run_cached(c, cache_dir=tmp_path)
    assert torch.equal(first.params, again.params)
    pd.testing.assert_frame_equal(first.history, again.history)
    assert torch.equal(first.params, fedlib.run_config(c).params)



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
    with pytest.raises(ValueError, match=rf"^checkpoint: {ck} belongs to another run \(what differs: "
                                         r"lr_local: 0\.01 saved, 0\.02 now\)"):
        fedlib.run("fedsum", quad, "full", rounds=4, lr_local=0.02, progress=False, checkpoint=ck)
    with pytest.raises(ValueError, match=r"schedule\.rounds: 4 saved, 6 now; its schedule\)"):
        fedlib.run("fedsum", quad, "full", rounds=6, progress=False, checkpoint=ck)
    state = torch.load(ck, weights_only=False)                   # as the code before parts saved it
    del state["parts"]
    torch.save(state, ck)
    with pytest.raises(ValueError, match=r"another run \(its algorithm, problem, schedule, rates or starting "
                                         r"point differ\)"):
        fedlib.run("fedsum", quad, "full", rounds=6, progress=False, checkpoint=ck)
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



def test_a_checkpoint_saved_under_another_arithmetic_starts_the_run_over(tmp_path, quad):
    """A checkpoint records the arithmetic its rounds computed with, but the thread count (a run's
    bits do not depend on it); a run resumes from one of its own arithmetic (fewer rounds
    computed: also under another thread count, as a campaign's pool of one-thread processes and
    a call in one process) and starts over from one of another (a store's ``.checkpoints`` moved
    between machines) or one without a record, saying so: its rounds then all compute under one
    arithmetic, and the run ends with the bits of an uninterrupted one. ``checkpoint_round``
    (the campaign's estimate) agrees."""
    sched = participation.build("bernoulli", quad.num_clients, 9, seed=2, p=0.5, local_steps=2)
    kw = dict(lr_local=0.02, progress=False, seed=1)
    full = fedlib.run("fedsum_cr", quad, sched, **kw)
    ck = tmp_path / "c.pt"
    here = list(runner.checkpoint_arithmetic("cpu"))
    threads = torch.get_num_threads()
    for case in ("same", "another thread count", "a GPU's", "no record"):
        torch.set_num_threads(1 if case == "another thread count" else threads)
        with pytest.raises(_Stop):
            fedlib.run("fedsum_cr", quad, sched, **kw, checkpoint=ck, checkpoint_every=5,
                       callback=_stop_at(5))
        torch.set_num_threads(threads)
        state = torch.load(ck, weights_only=True)
        assert state["t"] == 5 and state["arithmetic"] == here          # no thread count in it
        if case == "a GPU's":
            state["arithmetic"][0] = "cuda"
        if case == "no record":
            del state["arithmetic"]
        torch.save(state, ck)
        resumes = case in ("same", "another thread count")
        assert runner.checkpoint_round(ck, [tuple(here)]) == (5 if resumes else 0)
        computed = []
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            res = fedlib.run("fedsum_cr", quad, sched, **kw, checkpoint=ck,
                             callback=lambda t, x, c=computed: c.append(t))
        over = [w for w in said if "saved under another arithmetic" in str(w.message)]
        assert (len(computed), len(over)) == ((4, 0) if resumes else (9, 1)), case
        assert torch.equal(res.params, full.params)
        ck.unlink()


def test_a_checkpoint_is_not_resumed_across_the_clients_layout(tmp_path, quad):
    """``VectorizedEngine(clients_innermost=True)`` computes with other kernels on CUDA, so a
    checkpoint of a problem that takes it (a neural problem's vmap strategy) records it: a run with
    it starts over from a checkpoint saved without it (and its estimate counts no rounds done).
    A problem that ignores it (the quadratics) computes as without it: its checkpoint does not
    record it and its run resumes across it. The options that keep the plain path's bits (graphs,
    compiled draws) leave the record as it was, so earlier checkpoints still resume."""
    from fedlib.engine import VectorizedEngine
    laid = VectorizedEngine(clients_innermost=True)
    plain = runner.checkpoint_arithmetic("cpu")
    cnn = problems.digits_cnn(num_clients=4, alpha=0.5, batch_size=8, seed=0, dropout=0.0)
    cnn.strategy = "vmap"
    assert runner.checkpoint_arithmetic("cpu", VectorizedEngine(graphs=True, compiled_draws=True)) == plain
    assert runner.checkpoint_arithmetic("cpu", laid) == (*plain, "clients_innermost")
    assert runner.checkpoint_arithmetic("cpu", laid, cnn) == (*plain, "clients_innermost")
    assert runner.checkpoint_arithmetic("cpu", laid, quad) == plain
    kw = dict(lr_local=0.02, progress=False, seed=1)
    for prob, resumes in ((cnn, False), (quad, True)):
        sched = participation.build("bernoulli", prob.num_clients, 9, seed=2, p=0.5, local_steps=2)
        full = fedlib.run("fedsum_cr", prob, sched, **kw, engine=laid)
        ck = tmp_path / f"c{int(resumes)}.pt"
        with pytest.raises(_Stop):
            fedlib.run("fedsum_cr", prob, sched, **kw, checkpoint=ck, checkpoint_every=5,
                       callback=_stop_at(5), engine=VectorizedEngine())
        assert runner.checkpoint_round(ck, [plain]) == 5
        assert runner.checkpoint_round(ck, [runner.checkpoint_arithmetic("cpu", laid, prob)]) == 5 * resumes
        computed = []
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            res = fedlib.run("fedsum_cr", prob, sched, **kw, checkpoint=ck, engine=laid,
                             callback=lambda t, x, c=computed: c.append(t))
        assert len(computed) == (4 if resumes else 9)
        assert any("saved under another arithmetic" in str(w.message) for w in said) != resumes
        assert torch.equal(res.params, full.params)        # every round under one arithmetic


class _Stop(Exception):
    pass



def _stop_at(n):
    def cb(t, x):
        if t + 1 > n:
            raise _Stop
    return cb


def test_run_goes_through_one_checked_frozen_plan(quad):
    import dataclasses

    from fedlib.runner import RunPlan, _run_plan
    algo = fedlib.algorithms.get("fedavg")(quad, None, aggregation="all")
    plan = RunPlan.checked(algo, quad, {"kind": "bernoulli", "p": 0.5}, options={"momentum": 0.5},
                           rounds=np.int64(4), lr_local=1, local_steps=2, round_offset=np.int64(0))
    assert plan.algorithm is type(algo) and plan.options == {"aggregation": "all", "momentum": 0.5}
    assert (plan.rounds, plan.lr_local, plan.round_offset) == (4, 1.0, 0)
    assert type(plan.rounds) is int and type(plan.lr_local) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.rounds = 5
    res = fedlib.run(algo, quad, {"kind": "bernoulli", "p": 0.5}, rounds=4, lr_local=1.0, local_steps=2,
                     momentum=0.5, progress=False)
    pd.testing.assert_frame_equal(_no_timing(_run_plan(plan).history), _no_timing(res.history))
    with pytest.raises(ValueError, match="^lr_global: must be a positive finite number"):
        RunPlan.checked("fedavg", quad, "full", rounds=2, lr_global=0.0)


@pytest.mark.parametrize("given, message", [
    ({"lr": 0.1}, r"^lr: not an option of algorithm 'fedavg'; its options: momentum, prox_mu, aggregation, "
                  r"weights \(fedlib.run takes lr_local, lr_global, lr_schedule itself\)$"),
    ({"local_step": 3}, r"^local_step: not an option .* \(fedlib.run takes local_steps itself\)$"),
    ({"zzz": 1}, r"^zzz: not an option of algorithm 'fedavg'; its options: momentum, prox_mu, aggregation, "
                 r"weights$"),
])
def test_a_guessed_keyword_that_is_runs_own_is_named(given, message, quad):
    with pytest.raises(ValueError, match=message):
        fedlib.run("fedavg", quad, "full", rounds=2, progress=False, **given)


def test_the_checkpoint_digest_is_the_one_earlier_checkpoints_recorded(quad):
    """The digest and its parts come from one pass; the whole digest is the formula checkpoints have
    always recorded (so a checkpoint written before the parts existed still resumes)."""
    import hashlib
    import json

    from fedlib.participation import build
    from fedlib.runner import _fingerprint
    sched = build("bernoulli", quad.num_clients, 5, seed=3, p=0.5, local_steps=2)
    x0 = torch.arange(quad.dim, dtype=torch.float64)
    info = {"algorithm": "fedsum", "lr_local": 0.05, "schedule": {"kind": "bernoulli", "rounds": 5}}
    h = hashlib.sha256(json.dumps({**info, "eval_every": 2}, sort_keys=True, default=str).encode())
    for arr in (sched.active, sched.uplink_ok, sched.local_steps):
        h.update(np.ascontiguousarray(arr).tobytes())
    h.update(x0.numpy().tobytes())
    digest, parts = _fingerprint(info, sched, x0, 2)
    assert digest == h.hexdigest()
    assert parts["settings"] == {**info, "eval_every": 2}
    assert parts["starting point"] == hashlib.sha256(x0.numpy().tobytes()).hexdigest()


def test_a_checkpoint_saved_on_other_data_starts_the_run_over(tmp_path, quad):
    """A checkpoint records the content digests of its problem's data (Problem.data_digests): the
    same run on data whose content changed does not resume rounds computed on the old data but
    starts over, saying so; on the same data it resumes."""
    import copy
    sched = participation.build("bernoulli", quad.num_clients, 9, seed=2, p=0.5, local_steps=2)
    kw = dict(lr_local=0.02, progress=False, seed=1)
    ck = tmp_path / "c.pt"
    on = {name: copy.copy(quad) for name in ("a", "b")}
    for name, prob in on.items():
        prob.data_digests = {"mnist": f"sha256:{name}"}
    for data, resumes in (("a", True), ("b", False)):
        with pytest.raises(_Stop):
            fedlib.run("fedavg", on["a"], sched, **kw, checkpoint=ck, checkpoint_every=5,
                       callback=_stop_at(5))
        assert torch.load(ck, weights_only=True)["data"] == {"mnist": "sha256:a"}
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            res = fedlib.run("fedavg", on[data], sched, **kw, checkpoint=ck)
        over = [str(w.message) for w in said if "saved on other data" in str(w.message)]
        assert over == ([] if resumes else [
            f"checkpoint: {ck} (round 5) was saved on other data (the content of mnist has changed since); "
            "starting the run over, so that all its rounds compute on the data it records"])
        assert res.info.get("resumed_at") == (5 if resumes else None)
        assert res.info["data"] == {"mnist": f"sha256:{data}"}
        ck.unlink(missing_ok=True)


def test_a_checkpoint_saved_by_other_code_starts_the_run_over(tmp_path, quad):
    """A checkpoint records the code fingerprint of its run (a direct run, with no store: the source
    of its algorithm's classes): the same run under an edited algorithm -- same name, settings,
    schedule and start, so the same digest -- does not resume the old code's rounds but starts
    over, saying so, and ends as a fresh run of the edited code; the unedited code resumes."""
    fedavg = fedlib.algorithms.get("fedavg")

    class Edited(fedavg):             # the same algorithm by name, its server step edited since
        name = "fedavg"

        def round(self, x, r):
            return x + 0.5 * (super().round(x, r) - x)

    sched = participation.build("bernoulli", quad.num_clients, 9, seed=2, p=0.5, local_steps=2)
    kw = dict(lr_local=0.02, progress=False, seed=1)
    ck = tmp_path / "c.pt"
    for algo, resumes in ((fedavg, True), (Edited, False)):
        with pytest.raises(_Stop):
            fedlib.run(fedavg, quad, sched, **kw, checkpoint=ck, checkpoint_every=5, callback=_stop_at(5))
        saved = torch.load(ck, weights_only=True)
        assert saved["t"] == 5 and list(saved["code"]) == ["algorithm source"]
        assert saved["code"]["algorithm source"].startswith("sha256:")
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            res = fedlib.run(algo, quad, sched, **kw, checkpoint=ck)
        over = [str(w.message) for w in said if "saved by other code" in str(w.message)]
        start_over = (f"checkpoint: {ck} (round 5) was saved by other code (the code of its algorithm source "
                      "has changed since); starting the run over, so that all its rounds are computed by the "
                      "code as it is now")
        assert over == ([] if resumes else [start_over])
        assert res.info.get("resumed_at") == (5 if resumes else None)
        assert torch.equal(res.params, fedlib.run(algo, quad, sched, **kw).params)
        ck.unlink()
    # another algorithm's checkpoint (its code differs too) is another run's: refused, not overwritten
    with pytest.raises(_Stop):
        fedlib.run(fedavg, quad, sched, **kw, checkpoint=ck, checkpoint_every=5, callback=_stop_at(5))
    saved = ck.read_bytes()
    with pytest.raises(runner.CheckpointMismatch, match=r"another run \(what differs: algorithm: "):
        fedlib.run("fedsum", quad, sched, **kw, checkpoint=ck)
    assert ck.read_bytes() == saved
