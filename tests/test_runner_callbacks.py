"""fedlib.run as a loop over callbacks: the user's hooks see every round, can stop the run early
(the stop is evaluated and checkpointed like an end), and a run with callbacks computes the same
bits as one without."""

import numpy as np
import pytest
import torch

import fedlib
from fedlib import participation


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


def test_a_divergence_stops_without_naming_a_callback(quad):
    with pytest.warns(RuntimeWarning, match="diverged"):
        res = fedlib.run("fedavg", quad, _sched(quad, 400), lr_local=50.0, progress=False)
    assert res.diverged and "stopped_by" not in res.info
