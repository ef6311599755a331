"""fedlib.notebook: profiles, store paths and the setup of a notebook from its parameters."""

from pathlib import Path

import pytest

from fedlib import ExperimentConfig, notebook


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



def test_profiles_and_store_paths():
    assert notebook.check_profile("quick") == "quick"
    with pytest.raises(ValueError, match="^profile: must be one of smoke, quick, paper"):
        notebook.check_profile("full")
    p = notebook.store_path("02_fedsum_main", "quick", root="/x")
    assert p == Path("/x/results/02_fedsum_main/quick")
