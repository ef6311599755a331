"""fedlib.config: canonical config forms, store keys, grids and the checks of a config."""

import json

import pytest

import fedlib
from fedlib import ExperimentConfig, config

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
