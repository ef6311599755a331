"""A catalogue of bad inputs across the package: each raises the right exception with one message
that names the field (or the file), and nothing is written or changed on the way."""

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import fedlib
from fedlib import (
    ExperimentConfig,
    algorithms,
    claims,
    data,
    delays,
    models,
    notebook,
    participation,
    partition,
    problems,
    traces,
)
from fedlib.algorithms import Algorithm, register
from fedlib.studies import real as real_study

from .run_helpers import failing_algorithm

ROOT = Path(__file__).resolve().parents[1]
QUAD = problems.random_quadratic(num_clients=4, dim=3, seed=0)
LABELS = np.repeat(np.arange(10), 20)
BASE = ExperimentConfig("fedavg", "quadratic", "full", 3, problem_args={"num_clients": 4, "dim": 3})


def _files(tmp: Path):
    return sorted(p for p in tmp.rglob("*"))


def _write_truncated_npz(tmp: Path) -> Path:
    d = tmp / "trunc"
    d.mkdir()
    np.savez(d / "mnist.npz", x_train=np.zeros((4, 28, 28), np.uint8), y_train=np.zeros(4, np.uint8),
             x_test=np.zeros((2, 28, 28), np.uint8), y_test=np.zeros(2, np.uint8))
    blob = (d / "mnist.npz").read_bytes()
    (d / "mnist.npz").write_bytes(blob[: len(blob) // 2])
    return d


def _write_other_keys_npz(tmp: Path) -> Path:
    d = tmp / "keys"
    d.mkdir()
    np.savez(d / "mnist.npz", images=np.zeros((4, 28, 28), np.uint8))
    return d


def _garbage(tmp: Path) -> Path:
    f = tmp / "schedule.npz"
    f.write_bytes(b"this is not a schedule")
    return f


def _error_entry(tmp: Path) -> Path:
    st = tmp / "store"
    with failing_algorithm() as name:                # the run fails, and is stored as an error
        fedlib.sweep([BASE.replace(algorithm=name, problem_args={"num_clients": 4, "dim": 3})], st, progress=False)
    return next(p for p in st.iterdir() if not p.name.startswith("."))


def _not_a_store(tmp: Path) -> Path:
    d = tmp / "store" / "notes"
    d.mkdir(parents=True)
    (d / "todo.txt").write_text("not a stored run")
    return d


class _Mine(Algorithm):
    name = "fedavg"
    description = "a user's algorithm that clashes with a built-in name"


class _Nameless(Algorithm):
    description = "a user's algorithm that sets no name"


class _StatelessMomentum(Algorithm):
    """Declares server state that its init never creates (a user's mistake)."""
    name = "stateless_momentum"
    description = "declares v, sets nothing"
    server_state = ("v",)

    def round(self, x, r):
        return x


class _UndecoratedOptions(algorithms.Options):           # @dataclass(frozen=True) forgotten
    beta: float = algorithms.option(0.9, "a real number in [0, 1)", lambda v: 0 <= v < 1, doc="momentum")


class _Undecorated(Algorithm):
    name = "undecorated"
    description = "its Options class is not a dataclass"
    Options = _UndecoratedOptions

    def round(self, x, r):
        return x


def _folder(tmp: Path, name: str) -> Path:
    d = tmp / "store" / name                          # under an input folder the catalogue allows
    d.mkdir(parents=True)
    return d


def _run(**kw):
    args = dict(algorithm="fedavg", problem=QUAD, participation="full", rounds=2, progress=False)
    args.update(kw)
    return fedlib.run(**args)


# (id, function of tmp_path, exception type, regex the message must match at its start)
CASES = [
    # participation
    ("kind", lambda t: participation.build("sometimes", 10, 5), ValueError, "kind: unknown"),
    ("num_clients", lambda t: participation.build("uniform", 0, 5, per_round=1), ValueError, "num_clients"),
    ("rounds", lambda t: participation.build("uniform", 10, 0, per_round=2), ValueError, "rounds"),
    ("per_round>N", lambda t: participation.build("uniform", 10, 5, per_round=11), ValueError, "per_round"),
    ("per_round str", lambda t: participation.build("uniform", 10, 5, per_round="2"), ValueError, "per_round"),
    ("p>1", lambda t: participation.build("bernoulli", 10, 5, p=1.5), ValueError, "p:"),
    ("p shape", lambda t: participation.build("bernoulli", 10, 5, p=[0.5] * 3), ValueError, "p:"),
    ("p missing", lambda t: participation.build("bernoulli", 10, 5), ValueError, "p:"),
    ("uplink_p", lambda t: participation.build("full", 10, 5, uplink_p=0.0), ValueError, "uplink_p"),
    ("local_steps", lambda t: participation.build("full", 10, 5, local_steps=0), ValueError, "local_steps"),
    ("unknown arg", lambda t: participation.build("full", 10, 5, colour=1), ValueError, "colour"),
    ("seed", lambda t: participation.build("full", 10, 5, seed=-1), ValueError, "seed"),
    ("q negative", lambda t: participation.build("weighted", 4, 5, per_round=2, q=[0.5, 0.7, -0.2, 0.0]),
     ValueError, r"q: .*entry 2 .*-0\.2"),
    ("huge schedule", lambda t: participation.build("uniform", 10**6, 10**6, per_round=1), ValueError,
     r"rounds x num_clients: .*GiB"),
    ("active fraction", lambda t: participation.Schedule([[0.7, 1.0]], [[True, True]], [[1, 1]]),
     ValueError, "active: .*integer"),
    ("active negative", lambda t: participation.Schedule([[1, -1]], [[True, True]], [[1, 1]]), ValueError,
     "active"),
    ("uplink shape", lambda t: participation.Schedule([[1, 1]], [[True]], [[1, 1]]), ValueError, "uplink_ok"),
    ("steps fraction", lambda t: participation.Schedule([[1, 1]], [[True, True]], [[1.5, 1]]), ValueError,
     "local_steps"),
    ("garbage schedule file", lambda t: participation.load(_garbage(t)), ValueError,
     r"schedule: .*schedule\.npz"),
    ("missing schedule file", lambda t: participation.load(t / "none.npz"), ValueError, r"schedule: .*none\.npz"),
    # delays
    ("delay fractions", lambda t: delays.delay_metrics(np.array([[0.5, 1.0]])), ValueError, "active: .*count"),
    ("delay 1-D", lambda t: delays.delay_metrics(np.ones(5)), ValueError, "active"),
    ("delay negative", lambda t: delays.delay_metrics(np.array([[-1, 1]])), ValueError, "active"),
    # problems
    ("focus_toy N=0", lambda t: problems.build("focus_toy", num_clients=0), ValueError, "num_clients"),
    ("focus_toy N>n", lambda t: problems.build("focus_toy", n=10, num_clients=11), ValueError, "num_clients"),
    ("problem name", lambda t: problems.build("cubic"), ValueError, "problem: unknown"),
    ("quadratic N=0", lambda t: problems.random_quadratic(num_clients=0), ValueError, "num_clients"),
    ("quadratic dim", lambda t: problems.random_quadratic(dim=-1), ValueError, "dim"),
    ("quadratic sigma", lambda t: problems.random_quadratic(sigma=-1.0), ValueError, "sigma"),
    ("quadratic curvature", lambda t: problems.random_quadratic(curvature=(0.0, 1.0)), ValueError,
     "curvature"),
    ("Quadratic A", lambda t: problems.Quadratic(-np.eye(2)[None], np.zeros((1, 2))), ValueError, "A:"),
    ("dataset name", lambda t: problems.neural(dataset="imagenet"), ValueError, "dataset: unknown"),
    ("model name", lambda t: problems.neural(dataset="digits", model="vgg"), ValueError, "model: unknown"),
    ("partition name", lambda t: problems.neural(dataset="digits", partition="random"), ValueError,
     "partition: unknown"),
    ("model shape", lambda t: problems.neural(dataset="digits", model="fedsum_cifar10_cnn"), ValueError,
     "model: .*expects"),
    ("batch_size str", lambda t: problems.digits_cnn(batch_size="64"), ValueError, "batch_size"),
    ("batch_size 0", lambda t: problems.digits_cnn(batch_size=0), ValueError, "batch_size"),
    ("alpha str", lambda t: problems.neural(dataset="digits", num_clients=5, alpha="0.1"), ValueError, "alpha"),
    ("alpha negative", lambda t: problems.neural(dataset="digits", num_clients=5, alpha=-1.0), ValueError,
     "alpha"),
    ("train_eval", lambda t: problems.digits_cnn(num_clients=5, train_eval_per_client=0), ValueError,
     "train_eval_per_client"),
    # data
    ("truncated npz", lambda t: data.load("mnist", data_root=_write_truncated_npz(t)), ValueError,
     r"mnist: .*trunc/mnist\.npz"),
    ("npz keys", lambda t: data.load("mnist", data_root=_write_other_keys_npz(t)), ValueError,
     r"mnist: .*keys/mnist\.npz.*x_train"),
    ("dataset unknown", lambda t: data.load("imagenet"), ValueError, "dataset: unknown"),
    ("synthetic unknown", lambda t: data.synthetic_like("imagenet"), ValueError, "dataset: unknown"),
    ("data missing", lambda t: data.load("svhn", data_root=t), data.DataNotFoundError, "svhn"),
    # partition
    ("partition unknown", lambda t: partition.build("random", LABELS, 10), ValueError, "partition: unknown"),
    ("partition N=0", lambda t: partition.build("dirichlet", LABELS, 0, alpha=0.1), ValueError, "num_clients"),
    ("majority N", lambda t: partition.build("majority_label", LABELS, 7), ValueError, "num_clients"),
    ("partition alpha str", lambda t: partition.build("dirichlet", LABELS, 5, alpha="0.1"), ValueError, "alpha"),
    ("partition arg", lambda t: partition.build("iid", LABELS, 5, alpha=0.1), ValueError, "alpha"),
    # models
    ("model unknown", lambda t: models.build("vgg"), ValueError, "model: unknown"),
    ("resnet norm", lambda t: models.build("resnet18", norm="layer"), ValueError, "norm"),
    ("dropout", lambda t: models.build("fedsum_mnist_cnn", dropout=1.5), ValueError, "dropout"),
    # algorithms
    ("not an option", lambda t: _run(algorithm="fedsum", momentum=0.9), ValueError, "momentum: not an option"),
    ("run with a config's algorithm_args", lambda t: _run(algorithm="fedavg", algorithm_args={"momentum": 0.5}),
     ValueError, r"algorithm_args: not an option .* \(fedlib\.run takes the algorithm's options as keywords: "
                 r"fedlib\.run\(\.\.\., momentum=0\.5\)"),
    ("momentum<0", lambda t: _run(momentum=-3.0), ValueError, r"momentum: .*\[0, 1\)"),
    ("momentum>=1", lambda t: _run(momentum=1.0), ValueError, r"momentum: .*\[0, 1\)"),
    ("prox_mu<0", lambda t: _run(prox_mu=-50.0), ValueError, "prox_mu: .*>= 0"),
    ("register clash", lambda t: register(_Mine), ValueError, "name: algorithm 'fedavg' is the built-in algorithm"),
    ("register replaces a built-in", lambda t: register(_Mine, replace=True), ValueError,
     r"name: algorithm 'fedavg' is the built-in algorithm 'fedavg' \(fedlib\.algorithms\.fedavg\.FedAvg\); choose another"),
    ("algorithm unknown", lambda t: algorithms.get("fedfoo"), ValueError, "algorithm: unknown"),
    ("aggregation", lambda t: _run(aggregation="median"), ValueError, "aggregation"),
    ("algorithm type", lambda t: _run(algorithm=3), ValueError, "algorithm"),
    # run
    ("lr_local 0", lambda t: _run(lr_local=0.0), ValueError, "lr_local"),
    ("lr_local str", lambda t: _run(lr_local="0.1"), ValueError, "lr_local"),
    ("lr_global nan", lambda t: _run(lr_global=float("nan")), ValueError, "lr_global"),
    ("device cuda", lambda t: _run(device="cuda") if not torch.cuda.is_available() else _run(device="cuda:99"),
     ValueError, "device"),
    ("device name", lambda t: _run(device="gpu-please"), ValueError, "device"),
    ("problem name run", lambda t: _run(problem="cubic"), ValueError, "problem: unknown"),
    ("problem type", lambda t: _run(problem=42), ValueError, "problem: expected"),
    ("eval_every", lambda t: _run(eval_every=0), ValueError, "eval_every"),
    ("x0 shape", lambda t: _run(x0=torch.zeros(5)), ValueError, "x0"),
    ("checkpoint_every", lambda t: _run(checkpoint_every=0), ValueError, "checkpoint_every"),
    ("engine", lambda t: _run(engine="turbo"), ValueError, "engine"),
    ("schedule size", lambda t: _run(participation=participation.build("full", 5, 3)), ValueError,
     "participation"),
    # sweep, configs, store
    ("sweep algorithm", lambda t: fedlib.sweep([BASE, BASE.replace(algorithm="x")], t / "s", progress=False),
     ValueError, r"configs\[1\]\.algorithm"),
    ("sweep store", lambda t: fedlib.sweep([BASE], _garbage(t) / "sub", progress=False), ValueError, "store"),
    ("sweep item", lambda t: fedlib.sweep(["fedavg"], t / "s", progress=False), ValueError, r"configs\[0\]"),
    ("grid axis", lambda t: fedlib.grid(BASE, colour=["red"]), ValueError, "colour"),
    ("config field", lambda t: ExperimentConfig.from_dict({**BASE.to_dict(), "colour": 1}), ValueError,
     "colour"),
    ("config args", lambda t: ExperimentConfig("fedavg", "quadratic", "full", 3, problem_args=5), ValueError,
     "problem_args"),
    ("config rounds", lambda t: BASE.replace(rounds=0).validate(), ValueError, r"config\.rounds"),
    ("verify error entry", lambda t: fedlib.verify(_error_entry(t)), ValueError, "entry: .*failed run"),
    ("verify missing", lambda t: fedlib.verify(t / "nothing-here"), ValueError, r"entry: .*nothing-here"),
    ("profile", lambda t: notebook.check_profile("full"), ValueError, "profile"),
    # *_args checked before anything runs, naming configs[i].<field>.<argument>
    ("problem arg name", lambda t: fedlib.sweep([BASE.replace(problem_args={"num_client": 4})], t / "s",
                                                  progress=False), ValueError, r"configs\[0\]\.problem_args\.num_client"),
    ("participation arg name", lambda t: fedlib.sweep([BASE.replace(participation="uniform",
                                                                    participation_args={"per_rnd": 2})],
                                                      t / "s", progress=False), ValueError,
     r"configs\[0\]\.participation_args\.per_rnd: not an argument of participation kind 'uniform'"),
    ("algorithm arg type", lambda t: fedlib.sweep([BASE.replace(algorithm_args={"momentum": "high"})], t / "s",
                                                  progress=False), ValueError,
     r"configs\[0\]\.algorithm_args\.momentum: must be a real number"),
    ("problem arg type", lambda t: fedlib.sweep([BASE.replace(problem_args={"num_clients": 4, "dim": 4.0})],
                                                t / "s", progress=False), ValueError,
     r"configs\[0\]\.problem_args\.dim: must be an integer, got 4.0"),
    ("partition arg name", lambda t: ExperimentConfig("fedavg", "neural", "full", 3, problem_args={
        "dataset": "digits", "partition": "dirichlet", "similarity": 0.1}).validate(), ValueError,
     r"config\.problem_args\.similarity: not an argument of problem 'neural'"),
    ("grid empty axis", lambda t: fedlib.grid(BASE, seed=[]), ValueError, "seed: an axis of grid needs"),
    ("checkpoint folder", lambda t: _run(checkpoint=t), ValueError, "checkpoint: .* is a folder"),
    # values of *_args checked before any run of a sweep (these once failed late, inside a run)
    ("sweep p>1", lambda t: _sweep(participation="bernoulli", participation_args={"p": 1.5}), ValueError,
     r"configs\[1\]\.participation_args\.p: probabilities must lie in \(0, 1\]"),
    ("sweep p str", lambda t: _sweep(participation="bernoulli", participation_args={"p": "0.5"}), ValueError,
     r"configs\[1\]\.participation_args\.p: must be numbers"),
    ("sweep p bool list", lambda t: _sweep(participation="bernoulli", participation_args={"p": [True] * 4}),
     ValueError, r"configs\[1\]\.participation_args\.p: must be numbers"),
    ("sweep per_round 0", lambda t: _sweep(participation="uniform", participation_args={"per_round": 0}),
     ValueError, r"configs\[1\]\.participation_args\.per_round: must be an integer in 1\.\.4, got 0"),
    ("sweep num_clients 0", lambda t: _sweep(problem_args={"num_clients": 0, "dim": 3}), ValueError,
     r"configs\[1\]\.problem_args\.num_clients: must be an integer >= 1, got 0"),
    ("sweep batch_size 0", lambda t: _sweep(problem="neural", problem_args={"dataset": "digits", "batch_size": 0}),
     ValueError, r"configs\[1\]\.problem_args\.batch_size: must be an integer >= 1"),
    ("sweep alpha 0", lambda t: _sweep(problem="neural", problem_args={"dataset": "digits", "alpha": 0.0}),
     ValueError, r"configs\[1\]\.problem_args\.alpha: must be a real number > 0"),
    ("sweep similarity", lambda t: _sweep(problem="neural", problem_args={
        "dataset": "digits", "partition": "majority_label", "similarity": 1.5}), ValueError,
     r"configs\[1\]\.problem_args\.similarity: must be a real number in \[0, 1\]"),
    ("sweep trace nan", lambda t: _sweep(participation="trace", participation_args={
        "trace": [[1, float("nan"), 1, 1]] * 3}), ValueError, r"configs\[1\]\.participation_args\.trace: entries"),
    ("sweep trace 2", lambda t: _sweep(participation="trace", participation_args={"trace": [[1, 2, 1, 1]] * 3}),
     ValueError, r"configs\[1\]\.participation_args\.trace: entries must be 0 or 1"),
    ("sweep trace short", lambda t: _sweep(participation="trace", participation_args={"trace": [[1] * 4] * 2}),
     ValueError, r"configs\[1\]\.participation_args\.trace: expected shape \(3, 4\), got \(2, 4\)"),
    ("sweep q sum", lambda t: _sweep(participation="weighted", participation_args={
        "per_round": 2, "q": [5.0, 5.0, 0.0, 0.0]}), ValueError,
     r"configs\[1\]\.participation_args\.q: weights must be >= 0 and sum to 1, got sum 10"),
    ("sweep on_rate", lambda t: _sweep(participation="markov", participation_args={"p": 0.5, "on_rate": 1.5}),
     ValueError, r"configs\[1\]\.participation_args\.on_rate"),
    ("sweep amplitude", lambda t: _sweep(participation="sine", participation_args={"per_round": 2, "amplitude": 2.0}),
     ValueError, r"configs\[1\]\.participation_args\.amplitude: must lie in \[0, 1\)"),
    ("sweep window", lambda t: _sweep(participation="periodic", participation_args={
        "per_round": 2, "groups": 2, "window": 0}), ValueError, r"configs\[1\]\.participation_args\.window"),
    ("sweep uplink_p", lambda t: _sweep(participation_args={"uplink_p": 1.5}), ValueError,
     r"configs\[1\]\.participation_args\.uplink_p"),
    ("trace cell", lambda t: participation.read_trace(_csv(t, "a,b\n1,x\n")), ValueError,
     r"trace: .*trace\.csv row 2, column 2: 'x' is not a number"),
    ("trace ragged", lambda t: participation.read_trace(_csv(t, "1,0,1\n1,0\n")), ValueError,
     r"trace: .*trace\.csv row 2 has 2 columns, the rows above 3"),
    ("trace empty", lambda t: participation.read_trace(_csv(t, "\n")), ValueError, r"trace: .*trace\.csv is empty"),
    ("trace header only", lambda t: participation.read_trace(_csv(t, "a,b\n")), ValueError,
     r"trace: .*has a header but no rows"),
    ("trace missing file", lambda t: participation.read_trace(t / "none.csv"), ValueError,
     r"trace: no such file .*none\.csv"),
    ("trace strings", lambda t: participation.read_trace([["1", "0"]]), ValueError, r"trace: entries must be"),
    ("sweep not configs", lambda t: fedlib.sweep(5, t / "s", progress=False), ValueError,
     "configs: expected ExperimentConfig objects"),
    ("sweep a dict", lambda t: fedlib.sweep(BASE.to_dict(), t / "s", progress=False), ValueError,
     "configs: expected ExperimentConfig objects .*got dict"),
    # a second trial of mistakes: option values, recorded traces, API misuse
    ("option value", lambda t: _sweep(algorithm="fedau", algorithm_args={"cutoff": -1}), ValueError,
     r"configs\[1\]\.algorithm_args\.cutoff: must be an integer >= 1 \(algorithm 'fedau'\), got -1"),
    ("option choice", lambda t: _sweep(algorithm="fedsum_cr", algorithm_args={"rebuild": "exact"}), ValueError,
     r"configs\[1\]\.algorithm_args\.rebuild: must be one of 'eq11', 'rate_sum'"),
    ("option bool", lambda t: _sweep(algorithm="scaffold", algorithm_args={"uplink_vectors": True}), ValueError,
     r"configs\[1\]\.algorithm_args\.uplink_vectors: must be one of 1, 2"),
    ("amplify P 0", lambda t: _sweep(algorithm="amplified_fedavg", algorithm_args={"P": 0}), ValueError,
     r"configs\[1\]\.algorithm_args\.P: must be an integer >= 1"),
    ("recorded missing file", lambda t: _sweep(participation="recorded",
                                               participation_args={"path": str(t / "none.txt")}),
     ValueError, r"configs\[1\]\.participation_args\.path: no such trace file .*none\.txt"),
    ("recorded rule", lambda t: _sweep(participation="recorded",
                                       participation_args={"path": str(_week_file(t)), "rule": "half"}),
     ValueError, r"configs\[1\]\.participation_args\.rule: must be one of start, whole; got 'half'"),
    ("recorded sha256", lambda t: _sweep(participation="recorded",
                                         participation_args={"path": str(_week_file(t)), "sha256": "ab" * 32}),
     ValueError, r"configs\[1\]\.participation_args\.sha256: the trace file .* has SHA-256 "),
    ("recorded too many", lambda t: _sweep(participation="recorded", participation_args={"path": str(_week_file(t))},
                                           problem_args={"num_clients": 9, "dim": 3}),
     ValueError, r"configs\[1\]\.problem_args\.num_clients: 9 clients asked of .*, which has 5 records"),
    ("recorded offset", lambda t: _sweep(participation="recorded",
                                         participation_args={"path": str(_week_file(t)), "offset": 168}),
     ValueError, r"configs\[1\]\.participation_args\.offset: must be an integer in 0\.\.167"),
    ("replace unknown field", lambda t: BASE.replace(colour=1), ValueError,
     "colour: not a field of ExperimentConfig"),
    ("load missing store", lambda t: fedlib.load(t / "nostore"), ValueError, r"store: no such folder .*nostore"),
    ("paired no common seed", lambda t: fedlib.claims.paired({0: 1.0}, {1: 0.5}), ValueError,
     r"a, b: no seed in common \(a: \[0\], b: \[1\]\)"),
    ("event strings", lambda t: fedlib.claims.event_count({0: "yes", 1: "no"}), ValueError,
     "events: seed -> True .* seed 0 has 'yes'"),
    ("seeds repeated", lambda t: notebook.check_seeds([0, 0, 1]), ValueError, "seeds: each seed once .* 0 repeated"),
    ("synthetic records 0", lambda t: traces.write_synthetic_stunner(t / "x.txt", records=0), ValueError,
     "records: must be an integer >= 1, got 0"),
    ("availability round str", lambda t: traces.availability(_week_file(t), round_minutes="60"),
     ValueError, "round_minutes: must be a positive number, got '60'"),
    ("sessions format", lambda t: traces.sessions(_week_file(t), format="gossip"), ValueError,
     "format: must be one of stunner, fedscale; got 'gossip'"),
    ("curves unknown hue", lambda t: _curves("algo"), ValueError, "hue: 'algo' is not a column of data"),
    ("real profile", lambda t: real_study.real_setup("fast", "traces/x.txt"), ValueError,
     "profile: must be one of smoke, quick, paper; got 'fast'"),
    # a third trial (issue 51): claims and analysis helpers given a percent, an array, a list, a missing file
    ("reach level percent", lambda t: fedlib.claims.paired_reach({0: _hist()}, {0: _hist()}, level=98), ValueError,
     r"level: must be a fraction in \(0, 1\] .*got 98"),
    ("event array", lambda t: fedlib.claims.event_count(np.array([True, False])), ValueError,
     "events: must be a mapping seed -> True .*got ndarray"),
    ("ledger missing", lambda t: fedlib.claims.what_holds(t / "none.csv"), ValueError,
     r"ledger: no such file .*none\.csv"),
    ("first_reach percent", lambda t: fedlib.analysis.first_reach(_sweep_like(), 90), ValueError,
     r"target: test_acc is a fraction, .*\[0, 1\].*got 90"),
    ("best_rows score", lambda t: fedlib.analysis.best_rows(_sweep_like(), score="losss"), ValueError,
     "score: 'losss' is not a column of table"),
    ("finals list", lambda t: fedlib.analysis.finals([1, 2, 3]), ValueError,
     "df: expected a frame of fedlib.sweep, got list"),
    # plotting helpers and models given values they once accepted silently or crashed on
    ("heatmap rounds", lambda t: _plot("participation_heatmap", np.ones((10, 3)), rounds=-5), ValueError,
     "rounds: must be an integer >= 1, got -5"),
    ("loss axis 0", lambda t: _plot("log_loss_axis", 0.0), ValueError, r"start: must be the starting loss, .*> 0"),
    ("figure name folder", lambda t: _save_figure(t / "figs", "a/b"), ValueError,
     "name: must be a file name without a folder .*got 'a/b'"),
    ("model num_classes str", lambda t: models.build("fedsum_mnist_cnn", num_classes="10"), ValueError,
     "num_classes: must be an integer, got '10'"),
    ("model width", lambda t: models.build("fedsum_mnist_cnn", width=64), ValueError,
     "width: not an argument of model 'fedsum_mnist_cnn'; its arguments: dropout"),
    # files and folders of the wrong kind
    ("data_root int", lambda t: data.load("mnist", data_root=5), ValueError,
     "data_root: must be a folder path .*got int 5"),
    ("availability npz", lambda t: traces.availability(_npz(t)), ValueError,
     r"path: .*x\.npz is not a Stunner session file"),
    ("strip not json", lambda t: notebook.strip_run_metadata(_csv(t, "not a notebook")), ValueError,
     r"path: .*trace\.csv is not an executed notebook"),
]

# Issue 51's third trial, its remaining cases by class. Late: values that passed validate, then
# stored an error entry; now refused before any run of the sweep (the harness checks that the
# store holds no entry). Silent: accepted and computed wrong. Crash: a raw TypeError /
# AttributeError / MemoryError / numpy error. Confusing: an error (or a new empty store) that
# points elsewhere.
LATE = [
    ("late: more clients than digits", lambda t: _sweep(problem="digits_cnn", problem_args={"num_clients": 5000}),
     ValueError, r"configs\[1\]\.problem_args\.num_clients: must be an integer in 1\.\.1437 \(dataset 'digits' "
     r"has 1437 training samples"),
    ("late: problem beyond memory", lambda t: _sweep(problem_args={"num_clients": 4, "dim": 10**5}), ValueError,
     r"configs\[1\]\.problem_args: problem 'quadratic' with .*'dim': 100000.* needs about 1,192\.1 GiB of memory "
     r"to build; this machine has .* GiB available"),
    ("late: flat x_train", lambda t: _sweep(**_mnist_run(t, x_train=np.zeros((200, 784), np.uint8))), ValueError,
     r"configs\[1\]\.problem_args\.dataset: dataset 'mnist', train split: images of shape \(200, 784\); "
     r"expected \[n, 1, 28, 28\] or \[n, 28, 28\]"),
    ("late: labels 10..19", lambda t: _sweep(**_mnist_run(t, y_train=np.arange(200) % 10 + 10)), ValueError,
     r"configs\[1\]\.problem_args\.dataset: dataset 'mnist', train split: labels must lie in 0\.\.9 "
     r"\(info\.classes 10\); label 10 at index 0"),
    ("late: labels -1..8", lambda t: _sweep(**_mnist_run(t, y_train=np.arange(200) % 10 - 1)), ValueError,
     r"configs\[1\]\.problem_args\.dataset: dataset 'mnist', train split: .*label -1 at index 0"),
    ("late: more clients than a file's samples", lambda t: _sweep(**_mnist_run(t, num_clients=201)), ValueError,
     r"configs\[1\]\.problem_args\.num_clients: must be an integer in 1\.\.200 \(dataset 'mnist'"),
    # values only the problem's builder checked: now built (small) in validate, or checked without data
    *[(f"late: quadratic {k}={v!r}", lambda t, k=k, v=v: _sweep(problem_args={"num_clients": 4, "dim": 3, k: v}),
       ValueError, rf"configs\[1\]\.problem_args\.{k}: {m}") for k, v, m in [
        ("dim", 0, r"must be an integer >= 1, got 0"),
        ("sigma", -1.0, r"must be a finite number >= 0, got -1\.0"),
        ("curvature", (2.0, 0.5), r"must be \(lo, hi\) with 0 < lo <= hi, got \(2\.0, 0\.5\)"),
        ("curvature", (-2.0, -0.5), r"must be a finite number > 0, got -2\.0"),
        ("spread", -1.0, r"must be a finite number >= 0, got -1\.0"),
        ("dtype", "float46", r"must be a dtype .*got str 'float46'"),
        ("device", "gpu", r"must be a torch device such as 'cpu' or 'cuda', got 'gpu'")]],
    ("late: unknown model", lambda t: _sweep(problem="neural", problem_args={
        "dataset": "mnist", "num_clients": 4, "model": "fedsum_mnist_cn", "alpha": 0.5, "synthetic": True}),
     ValueError, r"configs\[1\]\.problem_args\.model: must be one of fedsum_mnist_cnn, .*got 'fedsum_mnist_cn'"),
    ("late: a CIFAR model on MNIST", lambda t: _sweep(problem="neural", problem_args={
        "dataset": "mnist", "num_clients": 4, "model": "focus_cifar10_cnn", "alpha": 0.5, "synthetic": True}),
     ValueError, r"configs\[1\]\.problem_args\.model: must take dataset 'mnist''s inputs \(1, 28, 28\); got "
     r"'focus_cifar10_cnn', which expects \(3, 32, 32\)"),
    ("late: focus_toy given a dataset", lambda t: _sweep(problem="focus_toy", problem_args={"dataset": "mnist"}),
     ValueError, r"configs\[1\]\.problem_args\.dataset: not an argument of problem 'focus_toy'; its arguments: "
     r"normalized, device, n, d, num_clients, seed"),
    # a fourth trial (3b): values a run depends on, refused before the sweep stores an error entry
    ("late: local epochs on a quadratic", lambda t: _sweep(participation_args={"local_epochs": 1}), ValueError,
     r"configs\[1\]\.participation_args\.local_epochs: local work in epochs needs the clients' sample counts and "
     r"the batch size, which problem 'quadratic' does not have: give client_sizes and batch_size too"),
    ("late: one_class with fewer clients than classes", lambda t: _sweep(problem="neural", problem_args={
        "dataset": "digits", "model": "fedsum_mnist_cnn", "num_clients": 4, "partition": "one_class"}), ValueError,
     r"configs\[1\]\.problem_args\.num_clients: partition 'one_class' needs at least one client per class "
     r"\(dataset 'digits' has 10\), got 4"),
    ("late: devices this machine lacks", lambda t: fedlib.sweep([BASE], Path("s"), progress=False,
                                                               devices=["cuda:99", "cuda:99"]), ValueError,
     r"devices: 'cuda:99' (asked for, but this machine has no CUDA device|does not exist)"),
]
SILENT = [
    ("silent: pixels already in [0, 1]", lambda t: _sweep(**_mnist_run(
        t, x_train=np.random.default_rng(0).random((200, 28, 28)).astype(np.float32))), ValueError,
     r"configs\[1\]\.problem_args\.dataset: dataset 'mnist', train split: pixels are floats in .*already "
     r"scaled to \[0, 1\]; fedlib scales 0\.\.255 pixels by 1/255 itself"),
    ("silent: 100 labels for 200 images", lambda t: data.load("mnist", data_root=_mnist_root(
        t, y_train=np.arange(100) % 10)), ValueError,
     r"dataset 'mnist', train split: labels of shape \(100,\); expected one per image, \[200\]"),
    ("silent: misspelled notebook", lambda t: notebook.store_path("02_fedsum_mian", "quick"), ValueError,
     r"notebook: no notebook '02_fedsum_mian' in .*notebooks; its notebooks: 01_participation_delays, "),
    ("silent: load a folder that is not a store", lambda t: fedlib.load(_not_a_store(t)), ValueError,
     r"store: .*store[/\\]notes is not a store \(no stored entry, no entry folder with a meta\.json, in it\)"),
    ("silent: load an entry folder", lambda t: fedlib.load(_error_entry(t)), ValueError,
     r"store: .*store[/\\]fails_in_a_run-[0-9a-f]{16} is one stored entry, not a store; its store is .*store$"),
    ("silent: sweep retry_errors 'yes'", lambda t: fedlib.sweep([BASE], Path("s"), progress=False,
                                                               retry_errors="yes"), ValueError,
     r"retry_errors: must be True or False, got str 'yes'"),
    ("silent: sweep checkpoint_every 0", lambda t: fedlib.sweep([BASE], Path("s"), progress=False,
                                                               checkpoint_every=0), ValueError,
     r"checkpoint_every: must be an integer >= 1, got 0"),
    ("silent: sweep torch_threads 0", lambda t: fedlib.sweep([BASE], Path("s"), progress=False, torch_threads=0),
     ValueError, r"torch_threads: must be an integer >= 1, got 0"),
    ("silent: Arg default outside its range", lambda t: participation.Arg("q", "number", 5, low=0, high=1),
     ValueError, r"q: default must be allowed by its own check, got 5 \(q: must lie in \[0, 1\]"),
    ("silent: Arg default outside its choices", lambda t: participation.Arg("m", "text", "z", choices=("x", "y")),
     ValueError, r"m: default must be allowed by its own check, got 'z'"),
    ("silent: Arg low above high", lambda t: participation.Arg("q", "number", 0.5, low=2, high=1), ValueError,
     r"q: low must be <= high, got low 2 > high 1"),
    ("silent: campaign seeds -1", lambda t: _campaign(t, seeds=[-1]), ValueError,
     r"seeds: must be a non-empty list of non-negative integers, got \[-1\]"),
    ("silent: paired int lists", lambda t: claims.paired([5, 2, 3], [4, 1, 2]), ValueError,
     r"a: must be a mapping seed -> value .*got list \[5, 2, 3\]"),
    ("silent: decide NaN threshold", lambda t: claims.decide([0.1, 0.2, 0.3], float("nan"), 0.005), ValueError,
     r"threshold: must be a finite number, got nan"),
    ("silent: seeds_needed of one value", lambda t: claims.seeds_needed([0.3]), ValueError,
     r"d: must hold at least two values \(one value has no spread\), got 1"),
    ("silent: negative label counts", lambda t: _plot("label_distribution_bars", -np.ones((3, 2))), ValueError,
     r"counts: must be finite counts >= 0, got values such as \[-1\.0"),
    ("silent: NaN bubble counts", lambda t: _plot("label_distribution_bubbles", np.full((3, 2), np.nan)),
     ValueError, r"counts: must be finite counts >= 0, got values such as \[nan"),
    ("silent: bubbles max_size 0", lambda t: _plot("label_distribution_bubbles", np.ones((3, 2)), max_size=0),
     ValueError, r"max_size: must be a finite number > 0, got 0"),
    ("silent: register a class without a name", lambda t: register(_Nameless), ValueError,
     r"name: must be set on _Nameless \(a non-empty string class attribute 'name'.*it would run as '_nameless'"),
    ("silent: Options default failing its check", lambda t: _bad_options(), ValueError,
     r"lr: default must be a positive number \(its own check\), got -1\.0 \(in _BadOptions\)"),
    # a fourth trial (3b)
    ("silent: verify with a negative rtol", lambda t: fedlib.verify(_error_entry(t), rtol=-1), ValueError,
     r"rtol: must be a finite number >= 0 \(a tolerance\), got -1$"),
    ("silent: chance as a percent", lambda t: claims.summarize(_sweep_like(), {}, [], chance=10), ValueError,
     r"chance: must be an accuracy in \[0, 1\) \(0\.1 for ten classes, not 10\), got 10$"),
    ("silent: a Flower timeout of 0", lambda t: __import__("fedlib.flower").flower.simulate(BASE, timeout=0),
     ValueError, r"timeout: must be a number of seconds > 0 or None \(no limit\), got 0$"),
    ("silent: server_state init never sets", lambda t: _run(algorithm=_StatelessMomentum), ValueError,
     r"server_state: algorithm 'stateless_momentum' declares 'v', which its init\(\) did not set"),
    ("silent: progress as text", lambda t: _run(progress="no"), ValueError,
     r"progress: must be True or False, got str 'no'$"),
]
CRASH = [
    ("crash: device gpu", lambda t: fedlib.sweep([BASE], Path("s"), progress=False, device="gpu"), ValueError,
     r"device: must be a torch device such as 'cpu' or 'cuda', got 'gpu'"),
    ("crash: run_config None", lambda t: fedlib.run_config(None), ValueError,
     r"config: must be an ExperimentConfig or a Planned \(argument of runner\.run_config\), got NoneType None"),
    ("crash: load a number", lambda t: fedlib.load(5), ValueError, r"store: must be a string or a path or a Store"),
    ("crash: verify None", lambda t: fedlib.verify(None), ValueError, r"entry: must be "),
    ("crash: Dirichlet without alpha", lambda t: problems.neural(dataset="digits", num_clients=5), ValueError,
     r"alpha: partition 'dirichlet' needs it"),
    ("crash: dropout p NaN", lambda t: __import__("fedlib.keyed").keyed.drop_threshold(float("nan")), ValueError,
     r"p: must be a finite number >= 0 and <= 1, got nan"),
    ("crash: focus toy beyond memory", lambda t: __import__("fedlib.objectives").objectives.focus_toy_data(n=10**7),
     ValueError, r"n, d: the 10,000,000 x 50 toy needs about 7.*GiB to build"),
    ("crash: Quadratic of None", lambda t: __import__("fedlib.objectives").objectives.Quadratic(None, None),
     ValueError, r"A: must be an array \(or list\) of numbers \(argument of objectives\.Quadratic\), got NoneType None"),
    ("crash: palette of None", lambda t: __import__("fedlib.plotting").plotting.method_palette(None), ValueError,
     r"labels: must be an iterable"),
    ("crash: grid of None", lambda t: fedlib.grid(None), ValueError, r"base: must be an ExperimentConfig"),
    ("crash: notebook defaults of a typo", lambda t: notebook.notebook_defaults("01_participation"), ValueError,
     r"notebook: no notebook '01_participation' in "),
    ("crash: reseal a folder without meta", lambda t: __import__("fedlib.store").store.reseal(t), ValueError,
     r"folder: .* is not a stored entry \(no meta\.json there\)"),
    ("crash: load an .npy as a schedule", lambda t: participation.load(_npy(t)), ValueError,
     r"schedule: .*x\.npy is not a schedule file \(\.npz written by Schedule\.save\)"),
    ("crash: save a schedule in a missing folder", lambda t: participation.build("full", 3, 4).save(t / "no" / "s.npz"),
     ValueError, r"path: must be in an existing folder; .*no does not exist"),
    ("crash: campaign of an unknown dataset", lambda t: _campaign(t, datasets=["mnst"]), ValueError,
     r"datasets: must be datasets of profile 'paper' \(mnist, svhn, cifar10\), got unknown dataset 'mnst'"),
    ("crash: interval of strings", lambda t: claims.interval(["a", "b"]), ValueError,
     r"d: must be numbers, got \['a', 'b'\]"),
    ("crash: evaluate returning a list", lambda t: __import__("fedlib.analysis").analysis.search_log_grid(
        lambda rs: [1.0 for r in rs], [0.1, 0.2]), ValueError,
     r"evaluate: must return a mapping rate -> score, got list"),
    ("crash: heatmap of a vector", lambda t: _plot("participation_heatmap", np.ones(5)), ValueError,
     r"active: must be a participation matrix, expected \[T, N\], got shape \(5,\)"),
    ("crash: label bars of a vector", lambda t: _plot("label_distribution_bars", np.ones(3)), ValueError,
     r"counts: must be a label-count matrix, expected \[clients, classes\], got shape \(3,\)"),
    ("crash: save_figure into a file", lambda t: _save_figure(_csv(t, "x"), "x"), ValueError,
     r"out_dir: must be a folder, got .*trace\.csv', which is a file"),
    ("crash: paired digits -1", lambda t: claims.paired({0: 1.0, 1: 2.0}, {0: 0.5, 1: 1.0}, digits=-1), ValueError,
     r"digits: must be an integer >= 0, got -1"),
    ("crash: negative synthetic sizes", lambda t: problems.neural(
        dataset="mnist", synthetic=True, synthetic_sizes=(-5, 10), num_clients=4, batch_size=8), ValueError,
     r"synthetic_sizes: must be None or two positive integers \(n_train, n_test\), got \(-5, 10\)"),
    # a fourth trial (3b)
    ("crash: a DataFrame as a trace", lambda t: _sweep(participation="trace", participation_args={
        "trace": __import__("pandas").DataFrame(np.ones((3, 4), int))}), ValueError,
     r"participation_args\.trace: must be plain data \(numbers, text, lists, arrays\), got a pandas DataFrame; "
     r"give its values \(\.to_numpy\(\)\) or a file"),
    ("crash: a device index this machine lacks", lambda t: fedlib.sweep([BASE], Path("s"), progress=False,
                                                                        device="cuda:99"), ValueError,
     r"device: 'cuda:99' (asked for, but this machine has no CUDA device|does not exist)"),
    ("crash: Schedule.save onto a folder", lambda t: participation.build("full", 4, 5).save(_folder(t, "d.npz")),
     ValueError, r"path: must be a file name, got .*d\.npz', which is a folder"),
]
CONFUSING = [
    ("confusing: unknown algorithm when computing", lambda t: _sweep(algorithm="my_fedadam"), ValueError,
     r"configs\[1\]\.algorithm: unknown algorithm 'my_fedadam'; known: .*\(a user's Algorithm class must be "
     r"imported and registered \(fedlib\.algorithms\.register\) before its runs are computed; its stored runs "
     r"read without it\)"),
    ("confusing: init_from with an unknown field", lambda t: BASE.replace(init_from={"foo": 1}).validate(),
     ValueError, r"init_from\.foo: not a field of ExperimentConfig; fields: algorithm, "),
    ("confusing: load of runs not stored", lambda t: fedlib.load(_error_entry(t).parent, configs=[BASE]),
     ValueError, r"store: .* lacks 1 of 1 runs \(first: fedavg-[0-9a-f]{16}\); fedlib\.load only reads stored "
     r"runs: compute them with fedlib\.sweep\(configs, store\)$"),
    ("confusing: load a file", lambda t: fedlib.load(_garbage(t)), ValueError,
     r"store: .*schedule\.npz is a file, not a store folder"),
    ("confusing: a text file as a FedScale trace", lambda t: traces.availability(_csv(t, "1 2 3\nabc\n"),
                                                                                 format="fedscale"),
     ValueError, r"path: .*trace\.csv is not a FedScale trace \(a pickle expected"),
    ("confusing: an .npz trace", lambda t: participation.build("trace", 3, 4, trace=_npz(t)), ValueError,
     r"trace: .*x\.npz is not a CSV or \.npy file \(\.npz not supported; CSV or \.npy\)"),
    ("confusing: ragged trace rows", lambda t: participation.build("trace", 3, 4, trace=[[1, 0, 1, 1], [1, 0]]),
     ValueError, r"trace: rows of unequal length \(row 1 has 2, expected 4, as row 0\)"),
    ("confusing: float local_steps_range", lambda t: participation.build("full", 3, 4, local_steps_range=(1.5, 3)),
     ValueError, r"local_steps_range: must be integers \(lo, hi\) or an \[N, 2\] array of integers, got \(1\.5, 3\)"),
    ("confusing: mean_std of strings", lambda t: __import__("fedlib.analysis").analysis.mean_std(["a", "b"]),
     ValueError, r"values: must be numbers, got \['a', 'b'\]"),
    ("confusing: paired with one name", lambda t: claims.paired({0: 1.0, 1: 2.0}, {0: 0.5, 1: 1.0}, names=("A",)),
     ValueError, r"names: must be two names \(for a and b\), got \('A',\)"),
    ("confusing: paired comparing a method with itself", lambda t: claims.paired(
        {0: 1.0, 1: 2.0}, {0: 0.5, 1: 1.0}, names=("SG-FOCUS", "SG-FOCUS")), ValueError,
     r"names: a paired comparison compares two different methods or settings; got 'SG-FOCUS' for both a and b$"),
    ("confusing: against_all with the method among its rivals", lambda t: claims.against_all(
        {0: 1.0}, {"B": {0: 0.5}, "A": {0: 1.0}}, "A"), ValueError,
     r"others: 'A' is the method the claim is about; its rivals are the other methods \(got 'B', 'A'\)$"),
    ("confusing: paired_reach naming a failed run by nothing", lambda t: claims.paired_reach(
        {0: None}, {0: None}, missing=""), ValueError,
     r"missing: must be a non-empty text naming a run with no value \(e\.g\. 'failed'\), got ''$"),
    ("confusing: a text file as a schedule", lambda t: participation.load(_csv(t, "1,0\n")), ValueError,
     r"schedule: .*trace\.csv is not a schedule file \(\.npz written by Schedule\.save\)"),
    # a fourth trial (3b)
    ("confusing: a ';'-separated trace", lambda t: participation.build(
        "trace", 3, 2, trace=_csv(t, "1;0;1\n0;1;1\n")), ValueError,
     r"trace: .*trace\.csv row 2, column 1: '0;1;1' is not a number \(this file separates its values by ';'; a "
     r"trace file is comma-separated"),
    ("confusing: a True/False trace", lambda t: participation.build(
        "trace", 2, 2, trace=_csv(t, "True,False\nFalse,True\n")), ValueError,
     r"trace: .*row 2, column 1: 'False' is not a number \(entries are 0 or 1: write booleans as integers, e\.g\. "
     r"DataFrame\.astype\(int\)\.to_csv; row 1 was read as a header\)"),
    ("confusing: data_root a file", lambda t: data.load("mnist", data_root=_npz(t)), ValueError,
     r"data_root: must be the folder that holds the datasets' files, got .*x\.npz, which is a file \(give its "
     r"folder, .*store\)"),
    ("confusing: Options without @dataclass", lambda t: _run(algorithm=_Undecorated, beta=0.5), ValueError,
     r"Options: _UndecoratedOptions declares beta but is not a dataclass; decorate it with "
     r"@dataclass\(frozen=True\) \(algorithm 'undecorated'\)"),
    ("confusing: a store that is a file", lambda t: fedlib.sweep([BASE], _csv(t, "x"), progress=False), ValueError,
     r"store: .*trace\.csv is a file, not a store folder"),
    ("confusing: a kind's function without rng", lambda t: participation.register_kind(
        "no_rng_test", lambda rounds, n, zones: np.ones((rounds, n), int), description="d",
        args=[participation.Arg("zones", "integer", 3)]), ValueError,
     r"args: kind 'no_rng_test' declares zones; its function takes none after its first three parameters "
     r"\(rounds, n, zones\), which must be \(rng, rounds, n\)"),
    ("confusing: a NaN starting model", lambda t: _run(x0=torch.tensor([math.nan, 0.0, 0.0], dtype=torch.float64)),
     ValueError, r"x0: must be finite \(a starting model\); entry 0 is nan$"),
]
#: a fresh-eyed trial of bad inputs (2026-12-02): each was accepted and overrode, ignored or
#: misplaced something, or failed inside numpy
TRIAL = [
    ("trial: an empty store path", lambda t: fedlib.sweep([BASE], "", progress=False), ValueError,
     r"store: must be a folder path, new or existing, got '' \(an empty path would be the current folder\)"),
    ("trial: a stored entry as the store", lambda t: fedlib.sweep([BASE.replace(seed=1)], _error_entry(t),
                                                                  progress=False), ValueError,
     r"store: .*store/fails_in_a_run-[0-9a-f]{16} is one stored entry, not a store; its store is .*store$"),
    ("trial: the schedule's seed in participation_args",
     lambda t: BASE.replace(participation_args={"seed": 7}).validate(), ValueError,
     r"config\.participation_args\.seed: the schedule takes the config's own seed field \(0\); set seed=7 "
     r"there instead"),
    ("trial: local_steps in participation_args",
     lambda t: BASE.replace(participation_args={"local_steps": 5}, local_steps=2).validate(), ValueError,
     r"config\.participation_args\.local_steps: the schedule takes the config's own local_steps field \(2\)"),
    ("trial: local_steps beside a drawn range",
     lambda t: BASE.replace(participation_args={"local_steps_range": (1, 4)}, local_steps=2).validate(),
     ValueError, r"config\.local_steps: unused where participation_args\.local_steps_range sets the local "
     r"work; leave it at its default \(10\), got 2"),
    ("trial: build with local_steps and a range",
     lambda t: participation.build("full", 3, 4, local_steps=3, local_steps_range=(1, 4)), ValueError,
     r"local_steps / local_steps_range: give local work either as steps or as a range to draw them from, "
     r"not both \(got local_steps=3 and local_steps_range=\(1, 4\)\)"),
    ("trial: run's local_steps and the spec's", lambda t: fedlib.run(
        "fedavg", QUAD, {"kind": "uniform", "per_round": 2, "local_steps": 4}, rounds=3, local_steps=2,
        progress=False), ValueError,
     r"local_steps: given both as an argument \(2\) and by the participation spec \(local_steps=4\)"),
    ("trial: run's seed and the spec's", lambda t: fedlib.run(
        "fedavg", QUAD, {"kind": "uniform", "per_round": 2, "seed": 4}, rounds=3, seed=2, progress=False),
     ValueError, r"seed: the argument \(2\) and the participation spec's seed \(4\) differ; give the seed once"),
    ("trial: monte_carlo over no horizon", lambda t: delays.monte_carlo("uniform", 10, [], per_round=3),
     ValueError, r"rounds: expected a horizon T >= 1 or a non-empty sequence of them, got \[\]"),
    ("trial: monte_carlo over a float horizon", lambda t: delays.monte_carlo("uniform", 10, 50.0, per_round=3),
     ValueError, r"rounds: expected a horizon T >= 1 or a non-empty sequence of them, got 50\.0"),
    ("trial: monte_carlo with a seed twice",
     lambda t: delays.monte_carlo("uniform", 10, [5], seeds=[1, 1], per_round=3), ValueError,
     r"seeds: each seed once \(a repeated seed repeats its run and narrows the spread\), got \[1\] more "
     r"than once"),
    ("trial: a trace path that is a folder", lambda t: participation.build("trace", 3, 4, trace=str(t)),
     ValueError, r"trace: .* is a folder; give the CSV or \.npy file of the trace"),
    ("trial: a whole array in a message", lambda t: participation.build("uniform", 10, 5,
                                                                        per_round=np.zeros((300, 300))),
     ValueError, r"per_round: must be an integer, got ndarray of shape \(300, 300\) and dtype float64$"),
]
TRIAL += [
    ("trial: a value twice on a grid axis", lambda t: fedlib.grid(BASE, seed=[0, 0, 1]), ValueError,
     r"seed: each value of an axis once \(a value twice makes the same runs twice\), got 0 more than once"),
]


def _algorithm(name, **attrs) -> type:
    """A class to register: FedAvg's round under ``name`` unless ``attrs`` say otherwise."""
    return type("Trial5", (algorithms.get("fedavg"),), {"name": name, **attrs})


def _bare(**attrs) -> type:
    """An Algorithm subclass with only ``attrs`` (no round of its own)."""
    return type("Bare", (Algorithm,), {"name": "bare_trial", **attrs})


def _write(t: Path, meta: dict | None = None, config: ExperimentConfig = BASE, result_config=BASE):
    from fedlib.store import Store
    res = fedlib.run_config(result_config)
    return Store(t / "s").write(config, res, {"status": "ok"} if meta is None else meta)


class _NoNodes:
    def get_node_ids(self):
        return []


def _flower():
    from fedlib import flower
    return flower


#: a fresh-eyed trial of the newest surfaces (2026-12-03, docs/trials/bad-inputs-5.md): each was
#: accepted and stored something wrong, or crashed without naming the argument
TRIAL5 = [
    ("trial5: an algorithm name with a slash", lambda t: register(_algorithm("a/b")), ValueError,
     r"name: must be ASCII letters, digits, '_', '\+' or '-', starting with a letter or digit \(it names "
     r"the store's folders\), got 'a/b'"),
    ("trial5: an algorithm name leaving the store", lambda t: register(_algorithm("../../escape")),
     ValueError, r"name: must be ASCII letters, .*got '\.\./\.\./escape'"),
    ("trial5: a built-in's name in capitals", lambda t: register(_algorithm("FedAvg")), ValueError,
     r"name: algorithm 'FedAvg' is in all but case the built-in algorithm 'fedavg'"),
    ("trial5: a name that is not a string", lambda t: register(_algorithm(5)), ValueError,
     r"name: must be set on Trial5 .* got int 5"),
    ("trial5: a class with no round", lambda t: register(_bare()), ValueError,
     r"round: Bare has neither round\(\) nor client_state; implement round\(x, r\), or list "
     r"client_state and implement client_init, downlink_message, client_step, server_step"),
    ("trial5: client state without a client step", lambda t: register(_bare(client_state=("h",))),
     ValueError, r"round: Bare has client_state \('h',\) without client_init, downlink_message, "
     r"client_step, server_step"),
    ("trial5: Options that are not Options", lambda t: register(_algorithm("opts_trial", Options=dict)),
     ValueError, r"Options: must be a subclass of fedlib\.algorithms\.Options"),
    ("trial5: replace as a word", lambda t: register(replace="yes"), ValueError,
     r"replace: must be True or False, got str 'yes'"),
    ("trial5: a write without run_meta's record", lambda t: _write(t, meta={}), ValueError,
     r"meta: must be the dict fedlib\.store\.run_meta returns, with a status of ok, diverged, error; "
     r"got None"),
    ("trial5: another config's run written", lambda t: _write(t, result_config=BASE.replace(rounds=5)),
     ValueError, r"result: its history ends at round 5, the config runs 3 rounds: not this config's run"),
    ("trial5: another algorithm's run written",
     lambda t: _write(t, config=BASE.replace(algorithm="fedsum")), ValueError,
     r"result: a run of algorithm 'fedavg', not of the config's 'fedsum'"),
    ("trial5: a key given to get", lambda t: _store(t).get(BASE.key()), ValueError,
     r"config: expected an ExperimentConfig, got str \(Store\.read\(key\) reads an entry by its key\)"),
    ("trial5: an absent key read", lambda t: _store(t).read("nope"), ValueError,
     r"key: no entry 'nope' in store .*s \(its keys: Store\.keys\(\)\)"),
    ("trial5: compute of an invalid config", lambda t: _store(t).compute(BASE.replace(lr_local=-1.0)),
     ValueError, r"config\.lr_local: "),
    ("trial5: compute on an unknown engine", lambda t: _store(t).compute(BASE, engine="x"), ValueError,
     r"engine: unknown engine 'x'"),
    ("trial5: compute with checkpoints every 0 rounds",
     lambda t: _store(t).compute(BASE, checkpoint_every=0), ValueError, r"checkpoint_every: must be an integer >= 1"),
    ("trial5: compute with progress as a word", lambda t: _store(t).compute(BASE, progress="no"), ValueError,
     r"progress: must be True or False, got str 'no'"),
    ("trial5: identify no clients", lambda t: _flower().identify_nodes(_NoNodes(), 0, 1.0), ValueError,
     r"num_clients: must be an integer >= 1, got 0"),
    ("trial5: identify with a negative wait", lambda t: _flower().identify_nodes(_NoNodes(), 4, -1.0),
     ValueError, r"wait: must be a number of seconds > 0, got -1\.0"),
]

TRIAL5 += [
    ("trial5: reach with no seed in common",
     lambda t: claims.paired_reach({("m", 0, "A"): _curve()}, {("m", 0, "B"): _curve()}), ValueError,
     r"a, b: no seed in common \(a: .*\); a paired comparison compares the two methods' runs of the same "
     r"seeds \(key each method's runs by seed alone\)"),
    ("trial5: reach of nothing", lambda t: claims.paired_reach({}, {}), ValueError, r"a, b: both empty"),
    ("trial5: paired of nothing", lambda t: claims.paired({}, {}), ValueError, r"a, b: both empty"),
    ("trial5: reach at two evaluation intervals",
     lambda t: claims.paired_reach({0: _curve(every=50)}, {0: _curve(every=10)}), ValueError,
     r"a, b: seed 0: A's run is evaluated at 3 rounds, B's at 11 other ones"),
    ("trial5: reach on the loss as if higher were better",
     lambda t: claims.paired_reach({0: _curve()}, {0: _curve()}, metric="loss"), ValueError,
     r"higher_metric: 'loss' is lower-is-better: pass higher_metric=False"),
    ("trial5: reach of two runs in one history",
     lambda t: claims.paired_reach({0: pd.concat([_curve(), _curve()])}, {0: _curve()}), ValueError,
     r"a, b: seed 0: A's history has round 0 more than once: one run per history"),
    ("trial5: reach of arrays", lambda t: claims.paired_reach({0: np.zeros(3)}, {0: _curve()}), ValueError,
     r"a: seed 0: a history is a DataFrame .* got ndarray"),
    ("trial5: decide with a NaN difference", lambda t: claims.decide([np.nan, 0.1, 0.2], 0, 0.01), ValueError,
     r"diffs: entry 0 is nan; the differences of seeds where both runs have a value"),
    ("trial5: decide with a negative margin", lambda t: claims.decide([0.1, 0.2], 0, -0.5), ValueError,
     r"margin: must be a finite number >= 0, got -0\.5"),
    ("trial5: decide with another threshold", lambda t: claims.decide([0.1, 0.2], 5, 0.01), ValueError,
     r"threshold: a 'better' claim's threshold is 0 \(0 for 'better', -margin for 'no worse'\), got 5"),
    ("trial5: paired with higher as a word",
     lambda t: claims.paired({0: .9, 1: .8}, {0: .7, 1: .6}, higher="no"), ValueError,
     r"higher: must be True or False \(is a higher value better\?\), got 'no'"),
    ("trial5: paired of strings", lambda t: claims.paired({0: "0.9", 1: .8}, {0: .7, 1: .6}), ValueError,
     r"a: seed 0: a value must be a real number \(NaN or None: the run has no value\), got str '0\.9'"),
    ("trial5: paired of an infinite value", lambda t: claims.paired({0: np.inf, 1: .8}, {0: .7, 1: .6}),
     ValueError, r"a: seed 0: an infinite value is not a run's value"),
    ("trial5: margin_for every 0 rounds", lambda t: claims.margin_for("rounds to target", eval_every=0),
     ValueError, r"eval_every: must be a finite number >= 1, got 0"),
    ("trial5: margin_for a fixed margin with an interval",
     lambda t: claims.margin_for("test accuracy", eval_every=5), ValueError,
     r"eval_every, per_round: the margin of 'test accuracy' is fixed \(0\.005\)"),
    ("trial5: summarize with fewer labels than names",
     lambda t: claims.summarize(_frame(), {BASE: ("fedavg",)}, ["method", "seed"], chance=0.1), ValueError,
     r"labels: run .* has 1 value\(s\) \('fedavg',\), names has 2 \(method, seed\)"),
    ("trial5: summarize of percent accuracies",
     lambda t: claims.summarize(_frame(100), {BASE: ("fedavg", 0)}, ["method", "seed"], chance=0.1),
     ValueError, r"df: test_acc must be a fraction in \[0, 1\] \(0\.91, not 91\)"),
    ("trial5: summarize stable from past the end",
     lambda t: claims.summarize(_frame(), {BASE: ("fedavg", 0)}, ["method", "seed"], chance=0.1,
                                stable_from=5), ValueError,
     r"stable_from: must be a finite number >= 0 and < 1, got 5"),
]


def _curve(every: int = 10, rounds: int = 100):
    """One run's history: test accuracy rising to 0.9, the loss falling, evaluated every ``every``."""
    r = np.arange(0, rounds + 1, every)
    return pd.DataFrame({"round": r, "test_acc": 0.9 * (1 - np.exp(-r / 20)), "loss": np.exp(-r / 20)})


def _frame(scale: float = 1.0):
    """A one-run sweep frame of BASE's key, its accuracy times ``scale``."""
    h = _curve().assign(key=BASE.key(), status="ok")
    return h.assign(test_acc=h["test_acc"] * scale)


def _store(t: Path):
    from fedlib.store import Store
    return Store(t / "s")


CASES += TRIAL
CASES += TRIAL5
CASES += LATE + SILENT + CRASH + CONFUSING


def _npy(tmp: Path) -> Path:
    f = tmp / "store" / "x.npy"                      # under an input folder the catalogue allows
    f.parent.mkdir(exist_ok=True)
    np.save(f, np.ones(3))
    return f


def _campaign(tmp: Path, **kw):
    from fedlib.campaign import run_campaign
    return run_campaign("02_fedsum_main", budget_min=0, root=tmp / "store", echo=lambda s: None, **kw)


def _bad_options():
    from dataclasses import dataclass

    from fedlib.algorithms.options import Options, option, positive

    @dataclass(frozen=True)
    class _BadOptions(Options):
        lr: float = option(-1.0, *positive(), doc="a default its own check refuses")
    return _BadOptions


def _npz(tmp: Path) -> Path:
    f = tmp / "store" / "x.npz"                      # under an input folder the catalogue allows
    f.parent.mkdir(exist_ok=True)
    np.savez(f, a=np.arange(1000))
    return f


def _plot(helper: str, *args, **kwargs):
    import matplotlib.pyplot as plt

    from fedlib import plotting
    fig, ax = plt.subplots()
    try:
        return getattr(plotting, helper)(ax, *args, **kwargs)
    finally:
        plt.close(fig)


def _save_figure(out_dir: Path, name: str):
    import matplotlib.pyplot as plt

    from fedlib import plotting
    fig = plt.figure()
    try:
        return plotting.save_figure(fig, out_dir, name)
    finally:
        plt.close(fig)


def _hist():
    import pandas as pd
    return pd.DataFrame({"round": range(10), "test_acc": np.linspace(0.0, 0.9, 10)})


def _sweep_like():
    import pandas as pd
    return pd.DataFrame({"key": ["a"] * 3, "round": [0, 1, 2], "loss": [1.0, 0.5, 0.2], "test_acc": [0.1, 0.5, 0.9]})


def _week_file(tmp: Path) -> Path:
    """Five full-week Stunner records (under an input folder the catalogue allows)."""
    f = tmp / "store" / "sessions.txt"
    f.parent.mkdir(exist_ok=True)
    h, week = 3600 * 1000, 7 * 24 * 3600 * 1000
    f.write_text("".join(f"u{i} 1 1398902400000 2 {(i + 1) * h} {week - (i + 1) * h}\n" for i in range(5)))
    return f


def _curves(hue: str):
    import pandas as pd

    from fedlib import plotting
    return plotting.curves(pd.DataFrame({"round": [0], "loss": [1.0], "test_acc": [0.1], "method": ["a"]}), hue, None)


def _csv(tmp: Path, text: str) -> Path:
    f = tmp / "store" / "trace.csv"                  # under an input folder the catalogue allows
    f.parent.mkdir(exist_ok=True)
    f.write_text(text)
    return f


def _mnist_root(tmp: Path, **arrays) -> Path:
    """A user's mnist.npz (Keras layout, 200 + 50 images) with ``arrays`` replaced, in an input
    folder the catalogue allows."""
    d = tmp / "store"
    d.mkdir(exist_ok=True)
    z = {"x_train": np.random.default_rng(0).integers(0, 256, (200, 28, 28)).astype(np.uint8),
         "y_train": np.arange(200) % 10, "x_test": np.zeros((50, 28, 28), np.uint8), "y_test": np.arange(50) % 10}
    np.savez(d / "mnist.npz", **{**z, **arrays})
    return d


def _mnist_run(tmp: Path, num_clients: int = 5, **arrays) -> dict:
    """The changes to ``BASE`` that train on :func:`_mnist_root`'s file."""
    return {"problem": "neural", "problem_args": {"dataset": "mnist", "num_clients": num_clients, "alpha": 1.0,
                                                  "data_root": str(_mnist_root(tmp, **arrays))}}


def _sweep(**changes):
    """A sweep of a good config and a bad one (``BASE`` with ``changes``): refused before either runs."""
    return fedlib.sweep([BASE, BASE.replace(**changes)], Path("s"), progress=False)


def _snapshot():
    out = {}
    for top in ("figures", "results", "notebooks"):
        for p in (ROOT / top).rglob("*"):
            if p.is_file():
                out[p] = p.stat().st_mtime_ns
    return out


_BEFORE = {}


@pytest.fixture(scope="module", autouse=True)
def _project_untouched():
    _BEFORE.update(_snapshot())
    yield
    assert _snapshot() == _BEFORE, "a bad input wrote or changed a project file"


def test_catalogue_has_at_least_fifty_cases():
    assert len(CASES) >= 50 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_error_and_writes_nothing(case, tmp_path, monkeypatch):
    _, fn, exc, pattern = case
    monkeypatch.chdir(tmp_path)
    before = set(_files(tmp_path))
    registry = dict(algorithms.base._REGISTRY)
    with pytest.raises(exc) as info:
        fn(tmp_path)
    if exc is ValueError:                                     # fedlib's refusals are one class
        assert isinstance(info.value, fedlib.InputError), type(info.value)
    msg = str(info.value)
    assert "\n" not in msg.strip(), msg                        # one line
    assert re.match(pattern, msg), msg
    assert algorithms.base._REGISTRY == registry              # nothing registered or replaced
    made = set(_files(tmp_path)) - before
    inputs = {"trunc", "keys", "schedule.npz", "store"}        # files the case itself created as input
    stray = [p for p in made if p.relative_to(tmp_path).parts[0] not in inputs]
    assert not stray, stray
    for store in (tmp_path / "s",):                           # refused sweeps leave no entry
        assert not store.exists() or not [p for p in store.iterdir() if not p.name.startswith(".")]


def test_garbage_input_files_are_named(tmp_path):
    f = _garbage(tmp_path)
    with pytest.raises(ValueError) as info:
        participation.load(f)
    assert str(f) in str(info.value)


def test_real_numbers_of_any_type_are_accepted():
    r = _run(lr_local=np.float32(0.1), lr_global=np.float64(1.0))
    assert r.info["lr_local"] == pytest.approx(0.1)
    assert problems.digits_cnn(num_clients=5, batch_size=np.int64(8)).batch_size == 8
    assert len(participation.build("uniform", np.int64(5), np.int32(3), per_round=np.int64(2)).active) == 3


def test_natural_forms_of_a_value_are_accepted_as_the_value():
    """What the trial found refused: a numpy scalar equal to an allowed option, the library's own
    Schedule for delay_metrics, a boolean trace; each gives what its plain form gives."""
    plain = fedlib.run("fedavg", QUAD, "full", rounds=2, aggregation="all", progress=False).params
    numpy = fedlib.run("fedavg", QUAD, "full", rounds=2, aggregation=np.str_("all"), progress=False).params
    assert torch.equal(plain, numpy)
    fedlib.run("scaffold", QUAD, "full", rounds=2, uplink_vectors=np.int64(1), progress=False)
    with pytest.raises(fedlib.InputError, match=r"^uplink_vectors: must be one of 1, 2 .*got np\.float64\(1\.0\)"):
        fedlib.run("scaffold", QUAD, "full", rounds=2, uplink_vectors=np.float64(1.0), progress=False)
    sched = participation.build("uniform", 10, 30, per_round=3)
    assert delays.delay_metrics(sched).tau_max == delays.delay_metrics(sched.active).tau_max
    on = np.random.default_rng(0).random((6, 4)) < 0.5
    as_bool = participation.build("trace", 4, 6, trace=on)
    assert (as_bool.active == participation.build("trace", 4, 6, trace=on.astype(float)).active).all()
    assert participation.trace_digest(on) == participation.trace_digest(on.astype(int))


# ------------------------------------------------------------------------------ a researcher's own code
def test_a_scalar_grid_axis_is_one_value_and_an_empty_sweep_is_an_empty_frame(tmp_path):
    assert [c.algorithm for c in fedlib.grid(BASE, algorithm="fedsum")] == ["fedsum"]
    assert [c.seed for c in fedlib.grid(BASE, seed=0)] == [0]
    one = fedlib.grid(BASE.replace(participation="bernoulli"), **{"participation_args.p": 0.5})
    assert [dict(c.participation_args) for c in one] == [{"p": 0.5}]
    empty = fedlib.sweep([], tmp_path / "s", progress=False)
    assert empty.empty and {"key", "status", "round"} <= set(empty.columns)


def test_an_algorithm_without_a_name_is_named_after_its_class():
    class MyAveraging(Algorithm):
        options = ()

        def init(self, x0, nominal_steps):
            pass

        def round(self, x, r):
            return x
    assert MyAveraging.name == "myaveraging"
    res = fedlib.run(MyAveraging, QUAD, "full", rounds=2, progress=False)
    assert res.info["algorithm"] == "myaveraging" and "myaveraging" in repr(res)
    assert algorithms.get("fedavg").name == "fedavg"                      # the library's keep theirs


def test_stored_errors_count_as_failed_and_say_how_to_retry(tmp_path):
    with failing_algorithm() as name:
        bad = BASE.replace(algorithm=name)                                           # fails inside the run
        fedlib.sweep([bad], tmp_path, progress=False)
        with pytest.warns(RuntimeWarning, match=r"^sweep: 1 stored run\(s\) failed .* retry_errors=True"):
            df = fedlib.sweep([bad], tmp_path, progress=False)
    assert df["status"].tolist() == ["error"]


def test_workers_refuse_an_algorithm_they_cannot_import(tmp_path):
    class NotebookAlgo(Algorithm):
        name = "notebook_algo_for_workers"

        def init(self, x0, nominal_steps):
            pass

        def round(self, x, r):
            return x
    NotebookAlgo.__module__ = "__main__"                                  # as a notebook cell defines it
    register(NotebookAlgo)
    try:
        with pytest.raises(ValueError, match=r"^workers: algorithm 'notebook_algo_for_workers' is defined in "
                                             r"__main__ .* cannot import"):
            fedlib.sweep([BASE.replace(algorithm="notebook_algo_for_workers")], tmp_path / "s", progress=False,
                         workers=2)
        assert not any((tmp_path / "s").glob("notebook_algo*"))         # before any run
    finally:
        algorithms.base._REGISTRY.pop("notebook_algo_for_workers", None)


def test_a_notebooks_store_refuses_a_run_of_your_algorithm_before_anything_runs(tmp_path):
    """Bad inputs, trial 5 (finding 4's remainder): the README recipe reads a notebook's committed
    store and sweeps the user's algorithm into a store of its own; a sweep of the user's algorithm
    into the notebook's store is refused, naming one, while built-in algorithms compute there (the
    notebook's own runs) and any other folder takes the user's runs."""
    class Mine(Algorithm):
        name = "mine_into_notebook_store"

        def init(self, x0, nominal_steps):
            pass

        def round(self, x, r):
            return x
    register(Mine)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "02_fedsum_main.py").write_text("# a notebook\n")
    nb_store = tmp_path / "results" / "02_fedsum_main" / "quick"
    mine = BASE.replace(algorithm="mine_into_notebook_store")
    try:
        with pytest.raises(ValueError, match=r"^store: .*02_fedsum_main/quick is notebook 02_fedsum_main's "
                                             r"store, .* 1 run\(s\) to compute are of your algorithm "
                                             r"\(mine_into_notebook_store\): sweep them into a store of your "
                                             r"own \(e.g. .*results/my_study/quick\)"):
            fedlib.sweep([BASE, mine], nb_store, progress=False)
        assert not any(nb_store.glob("*/meta.json"))                     # nothing ran
        assert fedlib.sweep([BASE], nb_store, progress=False)["status"].eq("ok").all()
        assert fedlib.sweep([mine], tmp_path / "results" / "my_study" / "quick",
                            progress=False)["status"].eq("ok").all()
        (tmp_path / "results" / "not_a_notebook").mkdir(parents=True)
        assert fedlib.sweep([mine], tmp_path / "results" / "not_a_notebook" / "quick",
                            progress=False)["status"].eq("ok").all()
    finally:
        algorithms.base._REGISTRY.pop("mine_into_notebook_store", None)


def test_one_config_is_a_sweep_of_one_and_a_tilde_store_is_in_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    one = fedlib.sweep(BASE, "~/fedlib_store", progress=False)
    assert one["key"].unique().tolist() == [BASE.key()]
    assert (tmp_path / "home" / "fedlib_store" / BASE.key()).is_dir() and not (tmp_path / "~").exists()


def test_a_read_only_store_reads_and_refuses_to_write_naming_the_folder(tmp_path, monkeypatch):
    from fedlib import store as store_mod
    fedlib.sweep([BASE], tmp_path / "s", progress=False)

    def refuse(*args, **kwargs):                   # a read-only folder (root ignores chmod, so fake it)
        raise PermissionError(13, "Read-only file system")
    monkeypatch.setattr(store_mod.tempfile, "mkstemp", refuse)
    st = store_mod.Store(tmp_path / "s")
    assert not st.writable and st.get(BASE) is not None
    got = fedlib.sweep([BASE], tmp_path / "s", progress=False, compute=False)   # reading works
    assert got["key"].unique().tolist() == [BASE.key()]
    got = fedlib.sweep([BASE], tmp_path / "s", progress=False)                  # nothing to compute
    assert got["status"].eq("ok").all()
    other = BASE.replace(seed=1)
    with pytest.raises(ValueError, match=r"^store: cannot write to .*/s \(Read-only file system; a read-only "
                                         r"store can be read, not added to\): 1 of 2 runs are missing"):
        fedlib.sweep([BASE, other], tmp_path / "s", progress=False)
    assert not (tmp_path / "s" / other.key()).exists()


@pytest.mark.parametrize("returns, got", [
    (lambda x: None, r"NoneType None"),
    (lambda x: x[:-1], r"a tensor of shape \(2,\), dtype torch\.float\d+"),
    (lambda x: x.to(torch.float16), r"a tensor of shape \(3,\), dtype torch\.float16"),
    (lambda x: x.numpy(), r"ndarray"),
])
def test_a_user_algorithm_returning_no_model_is_named_with_its_round(returns, got):
    class Broken(Algorithm):
        name = "broken_for_the_catalogue"

        def round(self, x, r):
            return returns(x)
    with pytest.raises(ValueError, match=rf"^algorithm 'broken_for_the_catalogue': round\(\) of round 0 returned "
                                         rf"{got}.*; expected the new model, a tensor of shape \(3,\)"):
        fedlib.run(Broken, QUAD, "full", rounds=2, progress=False)


def test_strip_refuses_a_py_source_and_a_broken_notebook_before_rewriting_any(tmp_path, capsys):
    from fedlib.__main__ import main
    good = tmp_path / "good.ipynb"
    good.write_text('{"cells": [], "metadata": {"papermill": {"duration": 1.0}}}')
    src = tmp_path / "01_x.py"
    src.write_text("# %% [markdown]\n# a jupytext source\n")
    broken = tmp_path / "broken.ipynb"
    broken.write_text("not json")
    before = {p: p.read_bytes() for p in (good, src, broken)}
    for bad, says in ((src, r"01_x\.py is not an executed notebook \(\.ipynb\)"),
                      (broken, r"broken\.ipynb is not an executed notebook \(\.ipynb JSON\)")):
        with pytest.raises(SystemExit) as info:
            main(["strip", str(good), str(bad)])
        assert info.value.code == 2
        assert re.search(rf"error: notebooks: .*{says}", capsys.readouterr().err)
        assert {p: p.read_bytes() for p in before} == before               # refused before any rewrite
    assert main(["strip", str(good)]) == 0 and good.read_bytes() != before[good]   # the good one alone strips


# ------------------------------------------------------------------------------ stores read anywhere
def test_a_store_with_a_relative_trace_reads_from_another_directory(tmp_path, monkeypatch, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    traces.write_synthetic_stunner(tmp_path / "a" / "trace.txt", records=6)
    monkeypatch.chdir(tmp_path / "a")
    c = BASE.replace(participation="recorded", participation_args={"path": "trace.txt"})
    with pytest.warns(RuntimeWarning):                       # (the synthetic week may leave rounds idle)
        fedlib.sweep([c], "store", progress=False)
    key = c.key()
    monkeypatch.chdir(tmp_path / "b")                        # elsewhere: the path means nothing here
    got = fedlib.load(tmp_path / "a" / "store")
    assert got["key"].unique().tolist() == [key] and got["status"].eq("ok").all()
    entry = next((tmp_path / "a" / "store").glob("fedavg-*"))
    stored = __import__("json").loads((entry / "config.json").read_text())["participation_args"]
    assert stored["path"] == "trace.txt" and len(stored["sha256"]) == 64   # named by its content too
    from fedlib.__main__ import main  # replaying needs the file: not checkable here
    assert main(["verify", str(tmp_path / "a" / "store")]) == 0
    assert "1 not checkable here; 0 differ" in capsys.readouterr().out


def test_a_user_algorithms_store_reads_without_its_class_and_computes_only_with_it(tmp_path):
    class MyAveraging(Algorithm):
        name = "my_averaging_for_the_catalogue"

        def round(self, x, r):
            return x
    register(MyAveraging)
    c = BASE.replace(algorithm="my_averaging_for_the_catalogue")
    try:
        fedlib.sweep([c], tmp_path / "s", progress=False)
    finally:
        algorithms.base._REGISTRY.pop("my_averaging_for_the_catalogue", None)   # a new session: not imported
    got = fedlib.load(tmp_path / "s")                                           # its frame, without the class
    assert got["key"].unique().tolist() == [c.key()] and got["status"].eq("ok").all()
    with pytest.raises(ValueError, match=r"^configs\[0\]\.algorithm: unknown algorithm "
                                         r"'my_averaging_for_the_catalogue'.*fedlib\.algorithms\.register"):
        fedlib.sweep([c.replace(seed=1)], tmp_path / "s", progress=False)       # computing needs it
    assert len(list((tmp_path / "s").glob("my_averaging*"))) == 1


def test_notebook_stores_are_the_projects_whatever_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert notebook.store_path("02_fedsum_main", "quick") == ROOT / "results" / "02_fedsum_main" / "quick"
    assert notebook.store_path("anything", "quick", root=tmp_path) == tmp_path / "results" / "anything" / "quick"
    assert not (tmp_path / "results").exists()


def test_late_inputs_of_a_user_file_also_stop_data_load(tmp_path):
    floats = np.random.default_rng(0).random((200, 28, 28)).astype(np.float32)
    with pytest.raises(ValueError, match=r"already scaled to \[0, 1\].*or declare their range: "
                                         r"DatasetInfo\(pixels=\(0, 1\)\)$"):
        data.load("mnist", data_root=_mnist_root(tmp_path, x_train=floats))
    good = data.load("mnist", data_root=_mnist_root(tmp_path))                 # uint8 0..255: as before
    assert good.train[0].shape == (200, 1, 28, 28) and float(good.train[0].std()) > 0.5
    as_255 = data.load("mnist", data_root=_mnist_root(tmp_path, x_train=floats * 255))   # floats 0..255 too
    assert float(as_255.train[0].std()) > 0.5


def test_verify_counts_failed_runs_as_such_not_as_differ(tmp_path, capsys):
    from fedlib.__main__ import main
    store = _error_entry(tmp_path).parent
    assert main(["verify", str(store)]) == 0
    out = capsys.readouterr().out
    assert "0 differ" in out and "1 are failed runs (stored with status error): nothing to verify" in out, out


def test_paired_names_the_seeds_one_method_lacks():
    v = claims.paired({0: 1.0, 1: 2.0, 2: 3.0}, {0: 0.5, 5: 1.0})
    assert "seeds in one method only, left out (a: [1, 2]; b: [5])" in v.reason


def test_dataset_sizes_are_synthetic_defaults_not_a_check_of_the_files(tmp_path):
    """``DatasetInfo.n_train`` is documented as the synthetic stand-in's default size: a user's
    file of another size loads (the checks before a run count the file's own samples)."""
    assert "Files are not checked against them" in data.DatasetInfo.__doc__
    ds = data.load("mnist", data_root=_mnist_root(tmp_path))
    assert len(ds.train[0]) == 200 != data.info("mnist").n_train


# ------------------------------------------------------------------------------ a fourth trial (3b)
def test_load_names_the_incomplete_entries_it_leaves_out(tmp_path):
    """An entry folder without its meta.json (a damaged or unfinished run) is not read as data,
    and fedlib.load says so by name instead of returning the other runs as if that were all."""
    store = tmp_path / "s"
    other = BASE.replace(problem_args={"num_clients": 4, "dim": 3, "seed": 1})
    fedlib.sweep([BASE, other], store, progress=False)
    (store / BASE.key() / "meta.json").unlink()
    with pytest.warns(RuntimeWarning, match=rf"store: 1 incomplete entry in .*s \(no meta\.json: {BASE.key()}\) "
                                            r"not loaded"):
        df = fedlib.load(store)
    assert df["key"].unique().tolist() == [other.key()]


def test_a_schedule_saved_without_its_suffix_loads_by_the_same_name(tmp_path):
    sched = participation.build("bernoulli", 4, 6, seed=3, p=0.5)
    sched.save(tmp_path / "my_schedule")                    # numpy writes my_schedule.npz
    again = participation.load(tmp_path / "my_schedule")
    assert (tmp_path / "my_schedule.npz").is_file() and np.array_equal(again.active, sched.active)


def test_a_kind_drawing_probabilities_is_named():
    @participation.kind("probabilities_test", description="returns probabilities, not draws", args=[])
    def probabilities(rng, rounds, n):
        return rng.random((rounds, n))
    try:
        with pytest.raises(ValueError, match=r"^kind: participation kind 'probabilities_test' \(tests\.test_bad_inputs\) "
                                             r"drew activity that is not counts \(integers >= 0: 0/1 for who takes "
                                             r"part; draw from rng for probabilities\): got .* at index \(0, 0\)$"):
            participation.build("probabilities_test", 4, 3)
    finally:
        participation._KINDS.pop("probabilities_test", None)
        participation._document_kinds()


def test_campaign_list_still_checks_its_budget(tmp_path, capsys):
    from fedlib.__main__ import main
    with pytest.raises(SystemExit):
        main(["campaign", "02_fedsum_main", "--list", "--budget-min", "-5", "--root", str(tmp_path)])
    assert "--budget-min: must be a finite number of minutes >= 0, got -5.0" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_missing_short_name_and_passive_name_a_wrong_argument(tmp_path):
    from fedlib import models
    from fedlib.store import Store
    from fedlib.studies import focus
    st = Store(tmp_path)
    for bad, msg in (([1], r"^configs\[0\]: expected an ExperimentConfig, got int$"),
                     ("abc", r"^configs: expected an iterable of ExperimentConfig objects, got str$"),
                     (None, r"^configs: expected an iterable of ExperimentConfig objects, got NoneType$")):
        with pytest.raises(ValueError, match=msg):
            st.missing(bad)
    with pytest.raises(ValueError, match=r"^name: must be a model's name \(a string\), got NoneType None$"):
        models.short_name(None)
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match=r"^passive: must be True or False, got "):
            focus.focus_setup("quick").configs([0], passive=bad)
    assert not any(tmp_path.iterdir())


def test_verify_names_a_file_a_store_a_device_and_a_switch(tmp_path):
    """Trial 5 (#23): fedlib.verify on a file of an entry, on a store, on a CUDA device that this
    machine lacks, and with check_digests as a word: one error naming the argument each ('all' is
    the command line's word for the whole run, and is taken here too)."""
    from fedlib.store import Store
    entry = Store(tmp_path / "s").compute(BASE)
    with pytest.raises(fedlib.InputError, match=r"entry: .*meta\.json is a file of a stored run; give the entry's "
                                                r"folder"):
        fedlib.verify(entry.path / "meta.json")
    with pytest.raises(fedlib.InputError, match=r"entry: .*s is a store, not one stored run"):
        fedlib.verify(tmp_path / "s")
    with pytest.raises(fedlib.InputError, match=r"check_digests: must be True or False, got 'no'"):
        fedlib.verify(entry.path, check_digests="no")
    if not torch.cuda.is_available():
        with pytest.raises(fedlib.InputError, match=r"device: 'cuda' asked for, but this machine has no CUDA"):
            fedlib.verify(entry.path, device="cuda")
    assert fedlib.verify(entry.path, rounds="all").ok


def test_reach_smoothed_beyond_the_runs_is_not_tested():
    """Trial 5 (#8): smooth longer than the runs' evaluations read every run as "failed or never";
    no run can reach a smoothed target there, so the comparison is not made (not tested, saying why)."""
    v = claims.paired_reach({0: _curve(), 1: _curve()}, {0: _curve(), 1: _curve()}, smooth=100)
    assert v.verdict == claims.NOT_TESTED and v.seeds == 0
    assert v.reason == ("not tested: seed 0's runs have 11 evaluation(s), fewer than the 100 a smoothed target "
                        "needs (smooth): no run can reach it, so round to target cannot be compared")
