"""The paper profile of every deep-learning notebook, on stand-ins (a file of its own so that
``make test``'s pytest-xdist workers share the long notebook runs: ``--dist loadscope`` keeps a
file in one worker)."""

import os
import subprocess
import sys

import pytest

from fedlib import notebook

from .test_notebooks import DEEP, ROOT, _tree

# stand-ins that take minutes on 2 cores (`make test-slow`): ResNet-18 of FedSUM Fig. 12 (03); three
# datasets x nine methods on N = 100 (02: ~3.5-5 min); the paper's CNN through warm-up, grid and
# phases (08: ~3.5-6 min). `make test` keeps the others and every notebook's smoke run.
SLOW_STAND_INS = {"02_fedsum_main", "03_fedsum_ablations", "08_amplified_fedavg"}


def _runs_on_stand_ins(nb: str, tmp_path) -> None:
    """The paper profile's settings (datasets, models, N, S, schedules) build and run: every phase
    cut to 2 rounds on synthetic stand-ins of the papers' datasets (``stand_in_rounds``)."""
    assert "stand_in_rounds" in notebook.notebook_defaults(nb)
    env = {**os.environ, "FEDLIB_OUT_ROOT": str(tmp_path)}
    env.pop("FEDLIB_NO_COMPUTE", None)
    one_seed = ["-y", "seeds: [0]"] if "seeds" in notebook.notebook_defaults(nb) else []
    before = _tree(ROOT / "results" / nb)       # a user's own paper-profile store may be there: unchanged
    subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{nb}.ipynb"),
                    str(tmp_path / "out.ipynb"), "-k", "python3", "--cwd", str(ROOT / "notebooks"),
                    "-p", "profile", "paper", "-p", "stand_in_rounds", "2", *one_seed, "--no-progress-bar"],
                   env=env, check=True, capture_output=True, timeout=900)
    [written] = (tmp_path / "results" / "notebooks").glob(f"{nb}-profile=paper-*stand_in_rounds=2")
    assert any(written.glob("*.png")) and (written / "claims.csv").exists()
    assert _tree(ROOT / "results" / nb) == before                  # stand-in runs leave no store behind


def _per_notebook(nb: str) -> type:
    """A test class of one notebook's stand-in run: ``make test``'s workers (``--dist loadscope``)
    take each class as a unit of its own, so the long notebook runs spread over both."""
    def test_paper_profile_runs_on_stand_ins(self, tmp_path):
        _runs_on_stand_ins(nb, tmp_path)
    test_paper_profile_runs_on_stand_ins.__doc__ = _runs_on_stand_ins.__doc__
    cls = type(f"TestStandIns_{nb}", (), {test_paper_profile_runs_on_stand_ins.__name__:
                                          test_paper_profile_runs_on_stand_ins})
    return pytest.mark.slow(cls) if nb in SLOW_STAND_INS else cls


for _nb in DEEP:
    globals()[f"TestStandIns_{_nb}"] = _per_notebook(_nb)
