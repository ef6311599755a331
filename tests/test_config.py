"""fedlib.config: canonical config forms, store keys, grids and the checks of a config."""

import dataclasses
import inspect
import json
from pathlib import Path

import numpy as np
import pytest

import fedlib
from fedlib import ExperimentConfig, config, participation, problems

from .run_helpers import base_config as _base


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



def test_an_argument_written_at_its_declared_default_is_the_same_run_written_another_way():
    """ExperimentConfig.canonical leaves out what the algorithm's Options, the kind's Args and the
    problem builder declare as defaults, so that two forms of one run compare equal (the keys still
    hash the form as written: committed entries keep theirs)."""
    plain = _base(algorithm="fedau", participation="sine", participation_args={"p": 0.5})
    opts = {f.name: f.default for f in dataclasses.fields(fedlib.algorithms.get("fedau").options_type())}
    kind = {a.name: a.default for a in participation.get_kind("sine").args
            if a.default not in (participation.REQUIRED, None)}
    built = inspect.signature(problems.get_problem("quadratic").builder).parameters
    written = plain.replace(algorithm_args=opts, participation_args={"p": 0.5, **kind},
                            problem_args={**dict(plain.problem_args), "spread": built["spread"].default})
    assert opts and kind and written.key() != plain.key()
    assert written.canonical() == plain.canonical() == plain and written.canonical().key() == plain.key()
    # the same type only: an int where the default is a float is another form, kept
    assert plain.replace(algorithm_args={"momentum": 0}).canonical() != plain
    # a device or draws a run may take from elsewhere stays as written
    for arg in ({"device": "cpu"}, {"draws": "legacy"}):
        kept = plain.replace(problem_args={**dict(plain.problem_args), **arg})
        assert kept.canonical() == kept
    # an algorithm not registered in this process: its arguments stay as written
    unknown = plain.replace(algorithm="not_registered_here", algorithm_args=opts)
    assert unknown.canonical() == unknown
    # a warm-up's arguments too
    phase = _base(algorithm="fedau", init_from=written.replace(rounds=4), participation="sine",
                  participation_args=dict(written.participation_args))
    assert phase.canonical().warmup() == plain.replace(rounds=4)
    assert phase.canonical() == _base(algorithm="fedau", init_from=plain.replace(rounds=4),
                                      participation="sine", participation_args={"p": 0.5})


def test_no_committed_store_holds_one_run_written_two_ways():
    """Store.get takes an entry of the same run written another way as the config's: in every
    committed store each entry is the only one of its canonical form, so no lookup is ambiguous."""
    root = Path(__file__).resolve().parents[1] / "results"
    stored = sorted(root.glob("*/*/*/config.json"))
    if not stored:
        pytest.skip("no committed stores in this checkout")
    forms: dict = {}
    for path in stored:
        c = ExperimentConfig.from_dict(json.loads(path.read_text()))
        forms.setdefault((path.parents[1], c.canonical().key()), []).append(path.parent.name)
    assert len(forms) == len(stored), {k: v for k, v in forms.items() if len(v) > 1}


def test_grid_is_the_product_of_its_axes():
    cs = config.grid(_base(), algorithm=["fedavg", "fedsum"], **{"participation_args.p": [0.2, 0.4, 0.6]})
    assert len(cs) == 6 and len({c.key() for c in cs}) == 6
    assert [c.algorithm for c in cs[:3]] == ["fedavg"] * 3
    assert [dict(c.participation_args)["p"] for c in cs[:3]] == [0.2, 0.4, 0.6]
    with pytest.raises(ValueError, match="^colour"):
        config.grid(_base(), colour=["red"])
    with pytest.raises(ValueError, match=r"^rounds\.x"):
        config.grid(_base(), **{"rounds.x": [1]})



def test_phase_errors_name_init_from(tmp_path):
    warm = _base(algorithm="fedavg", rounds=10)
    same = r"^configs\[0\]\.init_from: the warm-up must have the same participation_args"
    with pytest.raises(ValueError, match=same):
        fedlib.sweep([_base(participation_args={"p": 0.9}, init_from=warm)], tmp_path, progress=False)
    with pytest.raises(ValueError, match="^init_from: a run that continues a warm-up needs"):
        fedlib.run_config(_base(init_from=warm))
    with pytest.raises(ValueError, match="^init_from: expected"):
        _base(init_from=42)


def test_every_committed_store_keeps_its_keys_and_its_config_form():
    """The kinds' declarations replaced the name lists of validate and key (issue 53): every stored
    config of every committed store still gives its folder's key and the same dict, and validates
    as a stored run is read (without its inputs)."""
    root = Path(__file__).resolve().parents[1] / "results"
    stored = sorted(p for pat in ("*/quick/*/config.json", "*/pilot_*/*/config.json") for p in root.glob(pat))
    if not stored:
        pytest.skip("no committed stores in this checkout")
    kinds = set()
    for path in stored:
        d = json.loads(path.read_text())
        c = ExperimentConfig.from_dict(d)
        assert c.key() == path.parent.name and c.to_dict() == d, path
        c.validate(where=str(path.parent.name), inputs=False)
        kinds.add(c.participation)
    assert {"trace", "recorded"} & kinds or len(stored) < 10       # the kinds keyed by content are covered


@pytest.fixture
def text_kind():
    """A user's kind with text arguments (a mode name, a file) whose names are not in any list of
    fedlib, and a number argument called ``path`` in another kind (names decide nothing)."""
    @participation.kind("modes_test", description="all, or the first half of the clients",
                        args=[participation.Arg("mode", "text", "all", choices=("all", "half")),
                              participation.Arg("note", "path", None)])
    def modes(rng, rounds, n, mode, note):
        active = np.ones((rounds, n), dtype=np.int64)
        if mode == "half":
            active[:, n // 2:] = 0
        return active

    @participation.kind("numeric_path_test", description="a number called path",
                        args=[participation.Arg("path", "number", 0.5, low=0, high=1)])
    def numeric(rng, rounds, n, path):
        return (rng.random((rounds, n)) < path).astype(np.int64) + 1
    yield "modes_test"
    for k in ("modes_test", "numeric_path_test"):
        participation._KINDS.pop(k, None)


def test_a_kind_with_text_arguments_validates_from_its_declarations(text_kind):
    c = _base(participation=text_kind, participation_args={"mode": "half", "note": "notes.txt"})
    c.validate()
    assert c.schedule(num_clients=4).active[0].tolist() == [1, 1, 0, 0]
    with pytest.raises(ValueError, match=r"^config\.participation_args\.mode: must be one of all, half; got "
                                         r"'most' \(participation kind 'modes_test'\)$"):
        _base(participation=text_kind, participation_args={"mode": "most"}).validate()
    with pytest.raises(ValueError, match=r"^config\.participation_args\.mode: must be a text \(str\), got 2"):
        _base(participation=text_kind, participation_args={"mode": 2}).validate()
    with pytest.raises(ValueError, match=r"^config\.participation_args\.path: must be numbers \(a number; "
                                         r"not strings or bools\), got 'x.csv'"):
        _base(participation="numeric_path_test", participation_args={"path": "x.csv"}).validate()
    with pytest.raises(ValueError, match=r"^config\.participation_args\.path: must lie in \[0, 1\], got 2"):
        _base(participation="numeric_path_test", participation_args={"path": 2}).validate()


def test_config_validation_has_no_kind_names():
    """Nothing in config.py names a participation kind or lists text arguments: validate and key ask
    the kind (fedlib.participation)."""
    source = inspect.getsource(config)
    assert "_TEXT_ARGS" not in source
    for name in participation.available():
        assert f'"{name}"' not in source and f"'{name}'" not in source, name


def test_config_validation_has_no_problem_names():
    """Nothing in config.py names a problem: what validate checks beyond a builder's signature (a
    rule between arguments, a small build, the target of ``**kw``) is declared with the problem
    (fedlib.problems.register_problem)."""
    source = inspect.getsource(config)
    assert "_FORWARDS" not in source
    for name in problems.available():
        assert f'"{name}"' not in source and f"'{name}'" not in source, name


def test_an_unknown_dataset_is_named_before_anything_runs():
    c = ExperimentConfig(algorithm="fedavg", problem="neural", participation="full", rounds=2,
                         problem_args={"dataset": "imagenet_tiny", "num_clients": 4})
    with pytest.raises(ValueError, match=r"^config\.problem_args\.dataset: unknown dataset "
                                         r"'imagenet_tiny'; known: mnist, .* \(or register one: "
                                         r"fedlib\.data\.register_dataset\)"):
        c.validate()


def test_a_missing_required_participation_argument_names_its_field():
    c = ExperimentConfig("fedavg", "quadratic", "uniform", 3, problem_args={"num_clients": 4, "dim": 3})
    with pytest.raises(ValueError, match=r"^config\.participation_args\.per_round: required by kind "
                                         r"'uniform' \(an integer in 1\.\.4\)$"):
        c.validate()


def test_the_problem_cache_builds_again_after_a_dataset_or_problem_is_registered(monkeypatch):
    """build_problem reuses the last problem built, but not once the dataset it reads was replaced
    (register_dataset(..., replace=True) in a notebook), a problem registered, or FEDLIB_DATA
    changed: the cached problem would compute on the old data."""
    from fedlib import data
    parts = {s: (np.zeros((n, 28, 28), np.uint8), np.arange(n) % 2) for s, n in (("train", 8), ("test", 4))}
    info = data.DatasetInfo((1, 28, 28), 2)
    data.register_dataset("cache_test", lambda root: parts, info=info)
    try:
        c = ExperimentConfig(algorithm="fedavg", problem="neural", participation="full", rounds=1,
                             problem_args={"dataset": "cache_test", "num_clients": 2, "partition": "iid",
                                           "batch_size": 2})
        first = c.build_problem()
        assert c.build_problem() is first
        data.register_dataset("cache_test", lambda root: parts, info=info, replace=True)
        second = c.build_problem()
        assert second is not first and c.build_problem() is second
        problems.register_problem("cache_test_problem", problems.random_quadratic, description="a copy")
        assert c.build_problem() is not second
        third = c.build_problem()
        monkeypatch.setenv("FEDLIB_DATA", "/nonexistent-cache-test")
        assert c.build_problem() is not third
    finally:
        data._DATASETS.pop("cache_test", None)
        problems._PROBLEMS.pop("cache_test_problem", None)
