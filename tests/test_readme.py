"""The README's code stays true: its "Add your own" examples (algorithm, participation kind,
dataset) run as printed."""

import re
from pathlib import Path

import torch

import fedlib
from fedlib import algorithms

README = Path(__file__).resolve().parents[1] / "README.md"


def _section_code(title: str) -> str:
    text = README.read_text()
    section = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_add_your_own_algorithm_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    try:
        exec(compile(_section_code("Add your own algorithm"), "README.md", "exec"), ns)
        printed = capsys.readouterr().out.splitlines()
        assert printed[0].startswith("Result(algorithm='fedavg_server_momentum', rounds=300")
        assert printed[1].startswith("Result(algorithm='fedsum', rounds=300")
        assert (tmp_path / "my_schedule.npz").exists()
        cls = ns["FedAvgServerMomentum"]
        assert algorithms.get("fedavg_server_momentum") is cls
        prob, sched = ns["prob"], fedlib.participation.load("my_schedule.npz")
        mine = fedlib.run(cls, prob, sched, lr_local=0.02, progress=False)
        fedsum = ns["res"]                                       # the loop's last run
        assert fedsum.history["rel_dist_to_opt"].iloc[-1] < 1e-10    # FedSUM: exact under this pattern
        assert 1e-3 < mine.history["rel_dist_to_opt"].iloc[-1] < 10  # FedAvg-type: noisy, no exact limit
        # beta = 0 is FedAvg over the arriving clients, exactly
        plain = fedlib.run("fedavg", prob, sched, lr_local=0.02, rounds=20, progress=False)
        zero = fedlib.run(cls, prob, sched, lr_local=0.02, rounds=20, progress=False, beta=0.0)
        assert torch.allclose(plain.params, zero.params, rtol=1e-12, atol=1e-12)
    finally:
        algorithms.base._REGISTRY.pop("fedavg_server_momentum", None)


def test_deploy_with_flower_example_builds_both_apps():
    """The "Deploy with Flower" module builds a ServerApp and a ClientApp for the same problem (its
    simulation under __main__ is what tests/test_flower.py checks)."""
    import pytest
    pytest.importorskip("flwr")
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    ns: dict = {"__name__": "my_federation"}
    exec(compile(_section_code("Deploy with Flower"), "README.md", "exec"), ns)
    assert isinstance(ns["server"], ServerApp) and isinstance(ns["client"], ClientApp)
    assert ns["make_problem"](None).num_clients == dict(ns["config"].problem_args)["num_clients"] == 10


def test_trace_example_runs_as_printed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(_section_code("Your own availability trace, and reading a store"), "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "fedavg" in printed and "fedsum" in printed
    df = fedlib.load(tmp_path / "my_store")
    assert sorted(df["algorithm"].unique()) == ["fedavg", "fedsum"] and df["round"].max() == 50
    sched = fedlib.participation.read_trace(tmp_path / "my_trace.csv")
    assert sched.shape == (50, 10)


def test_add_your_own_participation_kind_example_runs(tmp_path, monkeypatch, capsys):
    """The kind with a text argument runs through a sweep into a store as printed, its declared
    checks refuse a wrong mode in one line, and its schedule is what the text says."""
    from fedlib import participation
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    try:
        exec(compile(_section_code("Add your own participation kind"), "README.md", "exec"), ns)
        printed = capsys.readouterr().out
        assert "fedavg" in printed and "fedsum" in printed
        assert printed.strip().splitlines()[-1] == ("config.participation_args.mode: must be one of strict, "
                                                    "flaky; got 'lazy' (participation kind 'office_hours')")
        df = fedlib.load(tmp_path / "my_kind_store")
        assert set(df["status"]) == {"ok"} and df["round"].max() == 96
        strict = participation.build("office_hours", 12, 48, mode="strict").active
        assert (strict.sum(axis=1) == 4).all()                       # one zone of three online each hour
        assert (strict.sum(axis=0) == 16).all()                      # 8 of every 24 hours, each client
        flaky = participation.build("office_hours", 12, 48, seed=1, mode="flaky").active
        assert (flaky <= strict).all() and 0.6 < flaky.sum() / strict.sum() < 0.95
    finally:
        participation._KINDS.pop("office_hours", None)


def test_add_your_own_dataset_example_runs(tmp_path, monkeypatch, capsys):
    """The dataset written to the data folder and registered with its loader runs through a sweep
    as a neural problem, and the networks learn it (the bars are easy: far above chance)."""
    from fedlib import data
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path / "data"))
    ns: dict = {}
    try:
        exec(compile(_section_code("Add your own dataset"), "README.md", "exec"), ns)
        printed = capsys.readouterr().out
        assert "fedavg" in printed and "fedsum" in printed
        assert (tmp_path / "data" / "bars.npz").is_file()
        ds = data.load("bars")
        assert ds.train[0].shape == (600, 1, 28, 28) and ds.test[0].shape == (200, 1, 28, 28)
        df = fedlib.load(tmp_path / "my_bars_store")
        final = df[df["round"] == df["round"].max()].groupby("algorithm")["test_acc"].last()
        assert set(df["status"]) == {"ok"} and (final > 0.8).all(), final
    finally:
        data._DATASETS.pop("bars", None)


def test_your_algorithm_beside_a_notebooks_runs_example_runs(tmp_path, monkeypatch, capsys):
    """The recipe runs as printed, on notebook 02's quick structure cut to 3 rounds of random data
    (fedsum_setup(..., stand_in_rounds=3)) and a store of such runs standing in for the committed
    one: it prints one verdict per rival, each over the three seeds."""
    import pandas as pd  # noqa: F401  (the recipe imports it)

    from fedlib import studies
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    try:
        exec(compile(_section_code("Add your own algorithm"), "README.md", "exec"), ns)
        capsys.readouterr()
        code = _section_code("Your algorithm beside a notebook's runs")
        assert code.count('studies.fedsum_setup("quick", 0)') == 1 and code.count("fedlib.load(STORE") == 2
        setup = studies.fedsum_setup("quick", 3)
        stored = str(tmp_path / "stored")              # the notebook's runs, computed here at 3 rounds
        rates, _ = setup.choose_rates(lambda configs: fedlib.sweep(configs, stored, progress=False))
        labels = setup.main_configs(rates, ["P1"], [0, 1, 2])
        rivals = [c for c, lab in labels.items() if lab[3] in ("FedAvg", "FedSUM")]
        fedlib.sweep(rivals, stored, progress=False)
        code = code.replace('studies.fedsum_setup("quick", 0)', 'studies.fedsum_setup("quick", 3)')
        code = code.replace('"results/02_fedsum_main/quick"', repr(stored))
        exec(compile(code, "README.md", "exec"), {})
        printed = capsys.readouterr().out
        for rival in ("FedAvg", "FedSUM"):
            assert f"FedAvg+SM vs {rival}" in printed
        assert printed.count("seed 2:") == 2 and (tmp_path / "results" / "my_study" / "quick").is_dir()
    finally:
        algorithms.base._REGISTRY.pop("fedavg_server_momentum", None)
