"""fedlib.flower: a fedlib algorithm run through Flower equals fedlib.run on the same schedule."""

import dataclasses
import re

import numpy as np
import pytest
import torch

import fedlib
from fedlib import ExperimentConfig, algorithms
from fedlib.runner import run_config
from fedlib.store import Store

flower = pytest.importorskip("fedlib.flower")
pytest.importorskip("flwr")


def _config(algorithm: str, **changes) -> ExperimentConfig:
    """10 clients of the digits CNN task, Bernoulli participation, 20 rounds."""
    base = ExperimentConfig(algorithm=algorithm, problem="digits_cnn", participation="bernoulli", rounds=20,
                            problem_args={"num_clients": 10, "train_eval_per_client": 20},
                            participation_args={"p": 0.3}, local_steps=2, lr_local=0.05, eval_every=5, seed=3)
    return base.replace(**changes)


def test_flower_simulation_equals_fedlib_run_bitwise():
    """FedAvg, FedSUM, SCAFFOLD, FedSUM-CR (their clients keep h_i, c_i, z_i and a_i in Flower's
    per-node state) and FOCUS (its server asks the clients for gradients at their local models)
    through Flower's simulation engine, one virtual node per client: the final models and every
    evaluation equal fedlib.run's. Bitwise, because each client runs the same
    kernels on the same row in one torch thread as the vectorized engine's per-client path does,
    and the server evaluates with one intra-op thread as fedlib.run does, whatever the thread count
    of its process (Flower's server runs with the machine's default; this process with one)."""
    configs = [_config("fedavg"), _config("fedsum"), _config("scaffold"), _config("fedsum_cr"),
               _config("focus", lr_local=0.005)]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        expected = [run_config(c) for c in configs]
    finally:
        torch.set_num_threads(threads)
    info = {}
    got = flower.simulate(configs, info=info)
    for c, e, g in zip(configs, expected, got, strict=True):
        assert torch.equal(e.params, g.params), c.algorithm
        cols = ["round", "loss", "test_acc", "uplink", "downlink", "client_steps"]
        assert e.history[cols].equals(g.history[cols]), c.algorithm
        assert not g.diverged and g.history["loss"].iloc[-1] < g.history["loss"].iloc[0]     # it trained
        # the clients' state (FedSUM's h, SCAFFOLD's ci, ...) lived on the nodes, not on the server
        assert all(hasattr(e.algorithm, k) and not hasattr(g.algorithm, k) for k in e.algorithm.client_state)
    assert info["connect_seconds"] > 0 and len(info["run_seconds"]) == len(configs)


def test_a_users_algorithm_runs_on_flower_imported_in_each_client_process(tmp_path, monkeypatch):
    """A user's algorithm whose clients keep state, defined in a module of the user's, runs through
    Flower's simulation (its client processes import the module, as a sweep's workers do) and
    equals fedlib.run's."""
    (tmp_path / "my_flower_algo.py").write_text(
        "from fedlib.algorithms import register\n"
        "from fedlib.algorithms.variance_reduced import Scaffold\n\n\n"
        "@register(replace=True)\n"
        "class MyScaffold(Scaffold):\n"
        "    name = 'my_scaffold_flower'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))            # the client processes find it there
    import my_flower_algo  # noqa: F401
    cfg = _config("my_scaffold_flower", rounds=5)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        expected = run_config(cfg)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(flower.simulate(cfg).params, expected.params)


@pytest.fixture
def in_process(monkeypatch):
    """Messages may be created outside a Flower process (Flower reads the run's identity)."""
    from flwr.supercore.task_identity import TaskIdentity
    for name in ("_run_id", "_node_id", "_task_id"):
        monkeypatch.setattr(TaskIdentity, name, 1)


class _Grid:
    """A stand-in for Flower's Grid: nodes answer the client app in this process; the nodes of
    ``silent`` (partition, round) pairs never get that round's message, those of ``lost`` pairs
    run it but their reply never arrives. ``sent`` records (message type, tensors sent, tensors
    replied) per message."""

    def __init__(self, app, partitions: list[int], silent: frozenset = frozenset(),
                 lost: frozenset = frozenset()):
        from flwr.app import Context, RecordDict
        self.silent, self.lost, self.sent = silent, lost, []
        self.app, self.ids = app, [1000 + i for i in range(len(partitions))]
        self.contexts = {n: Context(run_id=1, node_id=n, node_config={"partition-id": p}, state=RecordDict(),
                                    run_config={}) for n, p in zip(self.ids, partitions, strict=True)}

    def get_node_ids(self):
        return list(self.ids)

    @staticmethod
    def _tensors(content) -> list[str]:
        return sorted(content["arrays"].keys()) if "arrays" in content else []

    def send_and_receive(self, messages, timeout=None):
        out = []
        for m in messages:
            m.metadata.__dict__["_src_node_id"] = 0
            config = m.content["config"] if "config" in m.content else None
            who = None if config is None else (int(config["client"]), int(config["round"]))
            if who in self.silent:
                continue
            rep = self.app(m, self.contexts[m.metadata.dst_node_id])
            rep.metadata.__dict__["_src_node_id"] = m.metadata.dst_node_id
            self.sent.append((m.metadata.message_type, self._tensors(m.content), self._tensors(rep.content)))
            if who not in self.lost:
                out.append(rep)
        return out


def _single_thread(fn):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn()
    finally:
        torch.set_num_threads(threads)


def test_a_federation_that_does_not_match_the_schedule_stops_before_round_0(in_process):
    """9 nodes for a schedule of 10 clients, or two nodes claiming one client: a ValueError."""
    app = flower.client_app(_config("fedsum"))
    mismatch = r"^num_clients: the problem has 10 clients, the Flower federation 9 nodes"
    with pytest.raises(ValueError, match=mismatch):
        flower.identify_nodes(_Grid(app, list(range(9))), 10, wait=0.1)
    with pytest.raises(ValueError, match=r"partition-id: nodes 1003, 1004 all say they are client 3; "
                                         r"no node is client 4; each of 0..9 must be exactly one node"):
        flower.identify_nodes(_Grid(app, [0, 1, 2, 3, 3, 5, 6, 7, 8, 9]), 10, wait=0.1)
    # from all the replies, not the first duplicate: the client missing is 9, whatever the order
    with pytest.raises(ValueError, match=r"nodes 1000, 1001 all say they are client 3; no node is client 9;"):
        flower.identify_nodes(_Grid(app, [3, 3, 0, 1, 2, 4, 5, 6, 7, 8]), 10, wait=0.1)
    with pytest.raises(ValueError, match=r"partition-id: node 1009 says it is client 12; no node is "
                                         r"client 9; each of 0..9"):
        flower.identify_nodes(_Grid(app, [0, 1, 2, 3, 4, 5, 6, 7, 8, 12]), 10, wait=0.1)
    nodes = flower.identify_nodes(_Grid(app, list(range(10))[::-1]), 10, wait=0.1)
    assert sorted(nodes) == list(range(10)) and nodes[0] == 1009          # client 0 is the last node


def test_configs_of_one_federation_are_checked_before_any_node_starts():
    with pytest.raises(ValueError, match=r"^configs\[1\]\.problem_args: every config of one federation"):
        flower.server_app([_config("fedavg"), _config("fedsum", problem_args={"num_clients": 12})])
    with pytest.raises(ValueError, match=r"^configs\[0\]\.algorithm: unknown algorithm 'fedsumm'"):
        flower.server_app([_config("fedsumm")])
    with pytest.raises(ValueError, match="client_threads: must be an integer >= 1"):
        flower.simulate(_config("fedavg"), client_threads=0)
    with pytest.raises(ValueError, match="make_problem: expected an ExperimentConfig or a callable"):
        flower.client_app("digits_cnn")
    with pytest.raises(ValueError, match=r"make_problem: must take one argument, .* takes \(\)"):
        flower.client_app(lambda: None)
    with pytest.raises(ValueError, match=r"^configs: expected an ExperimentConfig or a list of them, got "
                                         r"dict \(ExperimentConfig.from_dict"):
        flower.server_app(_config("fedavg").to_dict())
    with pytest.raises(ValueError, match=r"^results: expected a dict .* got list"):
        flower.server_app(_config("fedavg"), results=[])


def test_the_engine_over_an_in_process_grid_equals_the_vectorized_engine(in_process):
    """FlowerEngine's messages (rows, corrections, rates, steps) reach the clients intact: over an
    in-process grid, FedSUM's run equals fedlib.run's."""
    from fedlib import run
    c = _config("fedsum", rounds=6)
    problem = c.build_problem()
    grid = _Grid(flower.client_app(c), list(range(10)))
    engine = flower.FlowerEngine(grid, flower.identify_nodes(grid, 10, wait=0.1))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        kw = dict(lr_local=c.lr_local, eval_every=c.eval_every, seed=c.seed, progress=False)
        a = run("fedsum", problem, c.schedule(10, problem), engine=engine, **kw)
        b = run("fedsum", problem, c.schedule(10, problem), **kw)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(a.params, b.params) and engine.exchanges > 0
    assert a.info["engine"] == "FlowerEngine"
    # the engine keeps the replies of one round only (to answer a round run again), not the run's
    last = max(t for t in range(6) if (c.schedule(10, problem).active[t] > 0).any())
    assert engine._replies and {key[1] for key in engine._replies} == {last}


def test_a_client_that_does_not_answer_is_the_schedules_failed_upload(in_process):
    """Client c never answers in round t: the run equals fedlib.run on the schedule whose uplink_ok
    is False for c in round t (the round is run again from the state before it; the other
    clients are not asked twice), and the result lists the unreachable client."""
    import dataclasses

    from fedlib import run
    cfg = _config("fedsum", rounds=5)
    problem = cfg.build_problem()
    sched = cfg.schedule(10, problem)
    t = int(sched.active.sum(1).argmax())                      # the round with most clients asked
    c = int(sched.active[t].nonzero()[0][0])
    grid = _Grid(flower.client_app(cfg), list(range(10)), silent=frozenset({(c, t)}))
    engine = flower.FlowerEngine(grid, flower.identify_nodes(grid, 10, wait=0.1))
    up = sched.uplink_ok.copy()
    up[t, c] = False
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        kw = dict(lr_local=cfg.lr_local, eval_every=1, seed=cfg.seed, progress=False)
        with pytest.warns(RuntimeWarning, match=rf"^round {t}: client\(s\) \[{c}\] did not answer \(their "
                                                r"node left .*; their uploads count as failed"):
            a = run("fedsum", problem, sched, engine=engine, **kw)
        b = run("fedsum", problem, dataclasses.replace(sched, uplink_ok=up), **kw)
        plain = run("fedsum", problem, sched, **kw)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(a.params, b.params) and not torch.equal(a.params, plain.params)
    assert a.info["unreachable"] == {str(t): [c]}
    # the run's start (every node sets up its h_i), then one exchange per round with active clients:
    # the repeated round asked no node again
    assert engine.exchanges == 1 + int((sched.active.sum(1) > 0).sum()) and int(sched.active[t].sum()) > 1


def test_a_reply_lost_after_the_client_trained_leaves_its_state_as_before(in_process):
    """Client c trains in round t and keeps the new h_i, but its reply never arrives: the server
    counts its upload as failed, and the client's next message tells it so; the client then drops
    the state of round t (as the schedule's failed upload leaves it untouched). Its next round
    starts from its old h_i, so the run equals fedlib.run with uplink_ok False for (t, c) -- were
    the lost round's state kept, FedSUM's y and the client's h_i would disagree from then on."""
    import dataclasses

    from fedlib import run
    cfg = _config("fedsum", rounds=12)
    problem = cfg.build_problem()
    sched = cfg.schedule(10, problem)
    act = sched.active > 0
    # a client active in round t and again later, and not alone in round t
    t, c = next((t, c) for t in range(12) for c in range(10)
                if act[t, c] and act[t + 1:, c].any() and act[t].sum() > 1)
    grid = _Grid(flower.client_app(cfg), list(range(10)), lost=frozenset({(c, t)}))
    engine = flower.FlowerEngine(grid, flower.identify_nodes(grid, 10, wait=0.1))
    up = sched.uplink_ok.copy()
    up[t, c] = False
    kw = dict(lr_local=cfg.lr_local, eval_every=1, seed=cfg.seed, progress=False)
    a = _single_thread(lambda: run("fedsum", problem, sched, engine=engine, **kw))
    b = _single_thread(lambda: run("fedsum", problem, dataclasses.replace(sched, uplink_ok=up), **kw))
    assert torch.equal(a.params, b.params)
    assert a.info["unreachable"] == {str(t): [c]}
    assert not hasattr(a.algorithm, "h")             # h_i lives on the nodes, not on the server


@pytest.mark.parametrize("algorithm,args,down,up", [
    ("fedsum", {}, ["down.x", "down.y"], ["delta"]),
    ("fedsum_b", {}, ["down.x"], ["delta"]),
    ("fedsum_cr", {}, ["down.x"], ["delta"]),
    ("scaffold", {}, ["down.c", "down.x"], ["dc", "dy"]),
    ("scaffold", {"uplink_vectors": 1}, ["down.c", "down.x"], ["dy"]),
    ("focus", {}, ["down.x"], ["dy"]),
    ("fedavg", {}, ["x0"], ["x"]),                          # clients without state: the local model
    ("fedvarp", {}, ["x0"], ["x"]),
])
def test_the_wire_carries_what_the_history_counts(in_process, algorithm, args, down, up):
    """Per asked client and round, the tensors sent down and back are exactly the algorithm's
    ``downlink`` and ``uplink`` model units (FedSUM: x and y down, delta_i up; FedSUM-CR: x down;
    SCAFFOLD with uplink_vectors=1: Delta y_i only, Delta c_i rebuilt by the server), and the run
    equals fedlib.run: bitwise, or, for the rebuilt Delta c_i, to float32 rounding (the server forms
    -c - Delta y / (K eta_l) where the client forms c_i+ - c_i: a few ulps of the control variates,
    which 6 rounds of SGD amplify to well under 1e-4 of the model's scale)."""
    from fedlib import algorithms, run
    cfg = _config(algorithm, rounds=6, algorithm_args=args)
    problem = cfg.build_problem()
    grid = _Grid(flower.client_app(cfg), list(range(10)))
    engine = flower.FlowerEngine(grid, flower.identify_nodes(grid, 10, wait=0.1))
    kw = dict(lr_local=cfg.lr_local, eval_every=6, seed=cfg.seed, progress=False, **args)
    a = _single_thread(lambda: run(algorithm, problem, cfg.schedule(10, problem), engine=engine, **kw))
    b = _single_thread(lambda: run(algorithm, problem, cfg.schedule(10, problem), **kw))
    kind = flower.STEP if algorithms.get(algorithm).client_state else flower.TRAIN
    steps = [(d, u) for k, d, u in grid.sent if k == kind]
    asked = int((cfg.schedule(10, problem).active > 0).sum())
    assert len(steps) == asked and all(st == (down, up) for st in steps)
    n_up = args.get("uplink_vectors", algorithms.get(algorithm).uplink)
    n_down = algorithms.get(algorithm).downlink
    assert (len(down), len(up)) == (n_down, n_up)
    assert a.history["uplink"].iloc[-1] == n_up * asked and a.history["downlink"].iloc[-1] == n_down * asked
    if "uplink_vectors" in args:
        scale = float(b.params.abs().max())
        assert float((a.params - b.params).abs().max()) <= 1e-4 * scale
    else:
        assert torch.equal(a.params, b.params)


def test_an_algorithm_that_cannot_split_stops_before_any_node_starts():
    """An algorithm that says its clients keep state but has no client_step: one message."""
    from fedlib import algorithms

    class Half(algorithms.get("fedavg")):
        name = "half_split_test"
        client_state = ("h",)

    algorithms.register(Half, replace=True)
    try:
        with pytest.raises(ValueError, match=r"^configs\[0\]\.algorithm: half_split_test lists client_state"):
            flower.server_app([_config("half_split_test")])
    finally:
        algorithms.base._REGISTRY.pop("half_split_test", None)


def test_a_schedule_of_ones_own_runs_instead_of_the_configs_participation(in_process):
    """server_app(config, schedule=...): the schedule a researcher recorded or modelled decides who
    is asked and whose upload counts; the run equals fedlib.run on that schedule. A schedule of
    another client count, or one schedule for several configs, stops before any node starts."""
    from fedlib import participation, run
    cfg = _config("fedsum", rounds=5)
    problem = cfg.build_problem()
    sched = participation.build("cyclic", 10, 5, per_round=3, local_steps=2, seed=1)
    out: dict = {}
    server = flower.server_app(cfg, out, schedule=sched, wait=0.1)
    _single_thread(lambda: server._main(_Grid(flower.client_app(cfg), list(range(10))), None))
    assert "error" not in out, out.get("error")
    expected = _single_thread(lambda: run("fedsum", problem, sched, lr_local=cfg.lr_local,
                                          eval_every=cfg.eval_every, seed=cfg.seed, progress=False))
    assert torch.equal(out["results"][0].params, expected.params)
    assert out["results"][0].schedule.kind == "cyclic"
    with pytest.raises(ValueError, match=r"^schedule\.num_clients: the schedule has 9 clients, the problem"):
        flower.server_app(cfg, schedule=participation.build("bernoulli", 9, 5, p=0.3))
    with pytest.raises(ValueError, match=r"^schedule: one schedule replaces the participation of one config"):
        flower.server_app([cfg, cfg.replace(seed=4)], schedule=sched)
    with pytest.raises(ValueError, match=r"^schedule: expected a fedlib.participation.Schedule"):
        flower.simulate(cfg, schedule="cyclic")
    with pytest.raises(ValueError, match=r"^schedule\.num_rounds: the schedule has 5 rounds, the config 2; "
                                         r"set the config's rounds=5"):
        flower.server_app(cfg.replace(rounds=2), schedule=sched)


def test_a_federation_smaller_than_the_schedule_stops_loudly(in_process):
    """Called through Flower's own run_simulation, server_app cannot raise into the caller: the
    error goes into results['error'] and is also warned, never only stored."""
    cfg = _config("fedavg", rounds=2)
    out: dict = {}
    server = flower.server_app(cfg, out, wait=0.1)
    with pytest.warns(RuntimeWarning, match=r"^fedlib server_app: the runs stopped: InputError: num_clients: "
                                            r"the problem has 10 clients, the Flower federation 4 nodes"):
        _single_thread(lambda: server._main(_Grid(flower.client_app(cfg), list(range(4))), None))
    assert isinstance(out["error"], ValueError) and "results" not in out


def test_a_deployment_raises_saves_its_results_and_warns_of_a_run_no_upload_reached(in_process, tmp_path,
                                                                                     capsys):
    """A deployed server_app (no results dict: its process exits with its run) raises what stops the
    runs, so that Flower marks the run failed; save= stores each run in a results store (its final
    model bitwise run_config's, and fedlib.verify replays it exactly) and the summary line is
    printed; a run in which every asked client was unreachable in every round is warned of, not
    returned as a normal result."""
    cfg = _config("fedavg", rounds=3)
    with pytest.raises(ValueError, match=r"^num_clients: the problem has 10 clients, the Flower federation"):
        flower.server_app(cfg, wait=0.1)._main(_Grid(flower.client_app(cfg), list(range(4))), None)
    server = flower.server_app(cfg, wait=0.1, save=tmp_path / "out")
    _single_thread(lambda: server._main(_Grid(flower.client_app(cfg), list(range(10))), None))
    entry = Store(tmp_path / "out").get(cfg)
    expected = _single_thread(lambda: run_config(cfg))
    assert torch.equal(entry.params(), expected.params) and entry.config == cfg
    assert list(entry.history["loss"]) == list(expected.history["loss"]) and entry.meta["engine"] == "flower"
    report = _single_thread(lambda: fedlib.verify(entry))
    assert report.ok and report.check == "exact", str(report)
    printed = capsys.readouterr().out
    assert "fedlib server_app: 1 of 1: Result(algorithm='fedavg'" in printed and str(entry.path) in printed
    everyone = frozenset((c, t) for c in range(10) for t in range(3))
    out: dict = {}
    with pytest.warns(RuntimeWarning, match=r"config 0: no upload counted in any of its 3 rounds .*; the "
                                            r"nodes failed or left"):      # no timeout to blame
        _single_thread(lambda: flower.server_app(cfg, out, wait=0.1)._main(
            _Grid(flower.client_app(cfg), list(range(10)), silent=everyone), None))
    assert torch.equal(out["results"][0].params, cfg.build_problem().initial_params(cfg.seed))  # never moved
    # a client whose scheduled upload fails (uplink_ok False) is not unreachable, and no upload of it counts
    problem = cfg.build_problem()
    sched = cfg.schedule(problem.num_clients, problem)
    uplink = sched.uplink_ok.copy()
    first = [int(np.flatnonzero(sched.active[t])[0]) for t in range(3)]
    uplink[range(3), first] = False
    lossy = dataclasses.replace(sched, uplink_ok=uplink)
    others = frozenset((c, t) for c in range(10) for t in range(3) if c != first[t])
    with pytest.warns(RuntimeWarning, match=r"config 0: no upload counted in any of its 3 rounds"):
        _single_thread(lambda: flower.server_app(cfg, {}, wait=0.1, schedule=lossy)._main(
            _Grid(flower.client_app(cfg), list(range(10)), silent=others), None))
    assert [p.name for p in (tmp_path / "out").iterdir()] == [entry.path.name]   # no temporary folder left


def test_a_save_the_server_cannot_use_is_refused_before_round_0(in_process, tmp_path, monkeypatch, capsys):
    """server_app(save=): with schedule= refused when the app is made (a store keys a run by its
    config, so another schedule's run would read as the config's); a relative folder taken from where
    the app is made, whatever folder the server later runs in; a file, or a folder that cannot be
    written, refused by the server before any node is asked (not after the runs, losing them); a run
    in which uploads were lost warns, when read, that it is not its config's run."""
    cfg = _config("fedavg", rounds=2)
    problem = cfg.build_problem()
    sched = cfg.schedule(problem.num_clients, problem)
    with pytest.raises(ValueError, match=r"^save: a run on schedule= is not its config's run"):
        flower.server_app(cfg, wait=0.1, schedule=sched, save=tmp_path / "s")
    monkeypatch.chdir(tmp_path)
    server = flower.server_app(cfg, {}, wait=0.1, save="rel")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    _single_thread(lambda: server._main(_Grid(flower.client_app(cfg), list(range(10))), None))
    assert Store(tmp_path / "rel").get(cfg) is not None and not (tmp_path / "elsewhere" / "rel").exists()
    assert f"stored in {tmp_path / 'rel'}" in capsys.readouterr().out
    (tmp_path / "afile").write_text("x")
    asked = []
    grid = _Grid(flower.client_app(cfg), list(range(10)))
    monkeypatch.setattr(grid, "get_node_ids", lambda: asked.append(1) or list(range(10)))
    with pytest.raises(ValueError, match=r"^store: .*afile is a file"):
        flower.server_app(cfg, wait=0.1, save=tmp_path / "afile")._main(grid, None)
    from fedlib import store as store_mod

    def refuse(*args, **kwargs):                   # a read-only folder (root ignores chmod, so fake it)
        raise PermissionError(30, "Read-only file system")
    with monkeypatch.context() as m:
        m.setattr(store_mod.tempfile, "mkstemp", refuse)
        with pytest.raises(ValueError, match=r"^store: cannot write to .*rel \(Read-only file system; .*\): "
                                             r"server_app\(save=\.\.\.\) stores each run there"):
            flower.server_app(cfg.replace(seed=4), wait=0.1, save=tmp_path / "rel")._main(grid, None)
    assert not asked                                              # no node was asked
    lost = frozenset((c, 0) for c in range(10))
    out: dict = {}
    app = flower.server_app(cfg.replace(seed=5), out, wait=0.1, save=tmp_path / "lost")
    _single_thread(lambda: app._main(_Grid(flower.client_app(cfg), list(range(10)), silent=lost), None))
    with pytest.warns(RuntimeWarning, match=r"lost/fedavg-[0-9a-f]{16} is a federated run in which uploads "
                                            r"were lost \(\d+ client\(s\) unreachable in 1 of its rounds"):
        assert Store(tmp_path / "lost").get(cfg.replace(seed=5)) is not None


_STATEFUL = [n for n in sorted(algorithms.available()) if algorithms.get(n).client_state]
_NODE_OPTIONS = {"fedsum_cr": {"rebuild": "rate_sum"}, "scaffold": {"uplink_vectors": 1, "dy_divisor": 3.0}}


@pytest.mark.parametrize("name", _STATEFUL)
def test_a_fresh_node_computes_the_simulations_client_step(name, quad):
    """A node builds the algorithm from its name and options only (``init`` never runs there): its
    ``client_step``, on the round input a node builds and the client's own state, equals the
    simulation's bit for bit, every round and client -- so the client side reads only its typed
    options, the downlink and its declared client state."""
    import json

    from fedlib import RunCallback, participation
    from fedlib.algorithms import RoundInput
    from fedlib.engine import get_engine

    opts = _NODE_OPTIONS.get(name, {})
    compared = []

    class CompareWithANode(RunCallback):
        def after_round(self, run):
            if run.t >= run.rounds:
                return
            r, sim = run.next_round(), run.algo
            down = sim.downlink_message(run.x, r)
            node = flower._client_algorithm(run.problem, get_engine("vectorized"), {
                "algorithm": name, "options": json.dumps(opts), "nominal_steps": sim.K})
            assert node is not sim and node.settings == sim.settings
            assert not any(hasattr(node, k) for k in (*sim.client_state, *sim.server_state))   # never init'ed
            for c in r.delivered.tolist():
                one = torch.tensor([c])
                steps = torch.zeros_like(r.local_steps)
                steps[c] = r.local_steps[c]
                at_node = RoundInput(r.t, torch.zeros_like(r.active), torch.ones_like(r.uplink_ok), steps,
                                     r.lr_local, r.lr_global)             # what a node knows of the round
                state = {k: getattr(sim, k)[one] for k in sim.client_state}
                up_s, new_s = sim.client_step(down, {k: v.clone() for k, v in state.items()}, one, r)
                up_n, new_n = node.client_step(down, {k: v.clone() for k, v in state.items()}, one, at_node)
                assert up_s.keys() == up_n.keys() and new_s.keys() == new_n.keys()
                assert all(torch.equal(up_s[k], up_n[k]) for k in up_s), (name, r.t, c)
                assert all(torch.equal(new_s[k], new_n[k]) for k in new_s), (name, r.t, c)
                compared.append((r.t, c))

    sched = participation.build("bernoulli", quad.num_clients, 10, seed=5, p=0.5, local_steps=3)
    fedlib.run(name, quad, sched, lr_local=0.02, lr_schedule="fedsum_sqrt", progress=False, **opts,
               callbacks=[CompareWithANode()])
    assert len({t for t, _ in compared}) >= 6, compared             # most rounds had someone to compare


def test_nodes_built_from_another_problem_are_refused_before_round_0(in_process, tmp_path):
    """Trial 5 (#3): clients whose client_app was built from a config of another problem (the same
    sizes, other data) trained silently, and save= stored the run as the server's config's. Now the
    nodes say which problem they built (flower.problem_identity) and the server refuses another one;
    a stored run records how many nodes' problems were checked."""
    cfg = _config("fedavg", rounds=2)
    other = cfg.replace(problem_args={"num_clients": 10, "train_eval_per_client": 10})
    assert flower.problem_identity(cfg) != flower.problem_identity(other)
    assert flower.problem_identity(cfg) == flower.problem_identity(cfg.replace(seed=9, lr_local=0.1))
    written = cfg.replace(problem_args={**dict(cfg.problem_args), "alpha": 0.1})     # a default written out
    assert written.key() != cfg.key() and flower.problem_identity(written) == flower.problem_identity(cfg)
    out: dict = {}
    _single_thread(lambda: flower.server_app(other, out, wait=0.1, save=tmp_path / "s")._main(
        _Grid(flower.client_app(cfg), list(range(10))), None))
    assert re.match(r"problem: node \d+ \(client \d+\) built its problem from a config of another problem",
                    str(out["error"])), out["error"]
    assert not (tmp_path / "s").exists() or not Store(tmp_path / "s").keys()
    _single_thread(lambda: flower.server_app(cfg, {}, wait=0.1, save=tmp_path / "s")._main(
        _Grid(flower.client_app(cfg), list(range(10))), None))
    assert Store(tmp_path / "s").get(cfg).meta["nodes_problem"] == \
        "10 of 10 nodes' problems checked against the server's config"
