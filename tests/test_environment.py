"""The conda environment.yml covers every runtime dependency declared in pyproject.toml."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch"}   # pip name -> conda-forge/pytorch channel name


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req.strip(), maxsplit=1)[0].lower()


def test_environment_yml_lists_every_runtime_dependency():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {_name(d) for d in env["dependencies"] if isinstance(d, str)}
    pip_section = [d for d in env["dependencies"] if isinstance(d, dict)]
    assert pip_section and "-e ." in pip_section[0]["pip"], "environment.yml must install fedlib"
    wanted = [_name(d) for d in meta["dependencies"] + meta["optional-dependencies"]["vision"]]
    missing = [w for w in wanted if CONDA_NAMES.get(w, w) not in conda]
    assert not missing, f"environment.yml lacks {missing}"
    pip = {_name(d) for d in pip_section[0]["pip"]}
    for name in ("flower", "docs"):
        extra = [_name(d) for d in meta["optional-dependencies"][name]]
        assert set(extra) <= pip, f"environment.yml's pip section lacks the {name} extra {extra}"


def test_environment_yml_has_the_design_card_stack():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {_name(d) for d in env["dependencies"] if isinstance(d, str)}
    for pkg in ["jupyterlab", "papermill", "pytorch", "torchvision", "numpy", "seaborn",
                "jupytext", "nbval", "pandas", "tqdm"]:
        assert pkg in conda, pkg


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make figures" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_out_root_redirects_relative_output(monkeypatch, tmp_path):
    from fedlib import paths

    monkeypatch.setenv("FEDLIB_OUT_ROOT", str(tmp_path))
    assert paths.output_dir("figures/x") == tmp_path / "figures" / "x"
    monkeypatch.delenv("FEDLIB_OUT_ROOT")
    assert paths.output_dir(tmp_path / "abs") == tmp_path / "abs"
    assert (tmp_path / "figures" / "x").is_dir()
