"""fedlib.run and run_cached: input checks, divergence, the on-disk cache."""

import numpy as np
import pandas as pd
import pytest
import torch

import fedlib
from fedlib import ExperimentConfig, participation, problems


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


def test_schedule_of_wrong_size(quad):
    sched = participation.build("full", quad.num_clients + 1, 10)
    with pytest.raises(ValueError, match="^participation"):
        fedlib.run("fedavg", quad, sched, progress=False)


def test_divergence_is_reported_not_raised(quad):
    with pytest.warns(RuntimeWarning, match="diverged"):
        res = fedlib.run("fedavg", quad, "full", rounds=500, lr_local=10.0, progress=False)
    assert res.diverged and res.info["diverged_at"] < 500
    assert np.isnan(res.history["loss"].iloc[-1])


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
