"""Notebook conventions: parameters papermill can read, and runs with other parameters never
touching the committed figures."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedlib import notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_every_parameter_is_typed_and_commented_for_papermill(nb):
    import papermill
    params = papermill.inspect_notebook(str(ROOT / "notebooks" / f"{nb}.ipynb"))
    defaults = notebook.notebook_defaults(nb)
    assert list(params) == list(defaults)                         # papermill parsed every line
    for p in params.values():
        assert p["inferred_type_name"] not in ("None", "") and p["help"], p
    assert defaults["profile"] == "quick" and defaults["out_dir"] == ""


def test_output_dir_is_committed_only_at_the_defaults():
    d = notebook.notebook_defaults("01_participation_delays")
    assert notebook.notebook_output_dir("01_participation_delays", d) == "figures/01_participation_delays"
    assert notebook.notebook_output_dir("01_participation_delays", {**d, "progress": True}) \
        == "figures/01_participation_delays"
    other = notebook.notebook_output_dir("01_participation_delays", {**d, "per_round": 10})
    assert other == "results/notebooks/01_participation_delays-per_round=10"
    assert notebook.notebook_output_dir("01_participation_delays", {**d, "per_round": 10}, "x/y") == "x/y"
    # a long list of overrides is cut, and two that share their first 100 characters stay apart
    name = "07_fedacs_experiments"
    d7 = notebook.notebook_defaults(name)
    ten, twelve = (notebook.notebook_output_dir(name, {**d7, "seeds": list(range(n))}) for n in (40, 41))
    assert ten != twelve and max(len(ten), len(twelve)) <= len(f"results/notebooks/{name}-") + 113


def test_papermill_with_other_parameters_leaves_figures_alone(tmp_path):
    env = {**os.environ, "FEDLIB_OUT_ROOT": str(tmp_path)}
    out = tmp_path / "out.ipynb"
    subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks/01_participation_delays.ipynb"),
                    str(out), "-k", "python3", "--cwd", str(ROOT / "notebooks"), "-p", "per_round", "10",
                    "-p", "heatmap_rounds", "20", "--no-progress-bar"], env=env, check=True,
                   capture_output=True)
    assert not (tmp_path / "figures").exists()
    written = tmp_path / "results/notebooks/01_participation_delays-heatmap_rounds=20-per_round=10"
    assert (written / "delay_table.csv").exists() and (written / "delays_vs_T.png").exists()
    cells = json.loads(out.read_text())["cells"]
    text = "".join("".join(o.get("text", "")) for c in cells for o in c.get("outputs", []))
    assert "N = 100, S = 10" in text                           # commentary follows the parameters


def _tree(path: Path) -> dict:
    """Every file under ``path`` with its size and modification time (empty when absent)."""
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(path.rglob("*")) if p.is_file()} if path.exists() else {}


DEEP = [nb for nb in NOTEBOOKS       # the deep-learning notebooks: profiles smoke / quick / paper
        if any(mark in (ROOT / "notebooks" / f"{nb}.py").read_text()
               for mark in ("notebook.check_profile(profile)", "notebook.notebook_runs("))]


def _runs_its_smoke_profile(nb: str, tmp_path, extra: tuple = (), timeout: int = 300) -> None:
    """Every code path of the notebook on tiny settings (papermill, outputs in a temporary
    folder; its runs in a temporary store); ``extra``: more papermill arguments; ``timeout``:
    seconds before the run counts as hung."""
    # one intra-op thread in the kernel: its runs' bits do not depend on it (each client trains in one
    # thread anyway), and on 2 cores shared with the other test worker, two threads spin on the server
    # step's small ops (torch.cat, isfinite): notebook 08's smoke took 120 CPU-s with two, 61 with one
    env = {**os.environ, "FEDLIB_OUT_ROOT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    env.pop("FEDLIB_NO_COMPUTE", None)
    out = tmp_path / "out.ipynb"
    before = _tree(ROOT / "results" / nb)
    # two seeds: every code path (paired intervals need two), whatever the notebook's default
    seeds = ["-y", "seeds: [0, 1]"] if "seeds" in notebook.notebook_defaults(nb) else []
    subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{nb}.ipynb"), str(out),
                    "-k", "python3", "--cwd", str(ROOT / "notebooks"), "-p", "profile", "smoke", *seeds,
                    *extra, "--no-progress-bar"], env=env, check=True, capture_output=True, timeout=timeout)
    [written] = (tmp_path / "results" / "notebooks").glob(f"{nb}-*profile=smoke*")
    assert any(written.glob("*.png")) and any(written.glob("*.csv"))
    assert not (tmp_path / "figures").exists()
    assert _tree(ROOT / "results" / nb) == before                  # smoke runs leave no store behind


def _smoke_class(nb: str) -> type:
    """A test class of one notebook's smoke run: ``make test``'s workers (``--dist loadscope``)
    take each class as a unit of its own, so the notebook runs spread over both."""
    def test_runs_its_smoke_profile(self, tmp_path):
        _runs_its_smoke_profile(nb, tmp_path)
    test_runs_its_smoke_profile.__doc__ = _runs_its_smoke_profile.__doc__
    return type(f"TestSmoke_{nb}", (), {"test_runs_its_smoke_profile": test_runs_its_smoke_profile})


for _nb in DEEP:
    if _nb != "08_amplified_fedavg":                  # below, with what its smoke run must show
        globals()[f"TestSmoke_{_nb}"] = _smoke_class(_nb)


class TestSmoke_08_amplified_fedavg:
    def test_runs_its_smoke_profile(self, tmp_path):
        """Notebook 08's smoke profile: Fashion-MNIST's protocol (rates tuned on seeds that are
        not evaluated, one scoring window for every method) on random tensors of its shapes, then
        the earlier protocol on digits, put side by side as the quick profile puts MNIST."""
        # two datasets' smoke runs in one (35 CPU-s, 69 s of wall time measured on 2 cores under a load
        # of ~6, 2026-11-26, one intra-op thread, 2 local steps of 8; with two threads and
        # 5 steps of 16: 120 CPU-s): twice the others' wall-time limit, for a loaded machine
        _runs_its_smoke_profile("08_amplified_fedavg", tmp_path, timeout=600)
        [written] = (tmp_path / "results" / "notebooks").glob("08_amplified_fedavg-*profile=smoke*")
        grid = (written / "lr_grid.csv").read_text().splitlines()
        assert grid[0].startswith("method,lr,seed,") and all(",100," in row for row in grid[1:])
        compared = (written / "mnist_vs_fashion.csv").read_text()
        assert "digits" in compared and "FashionMNIST (random tensors)" in compared
        claims = (written / "mnist_vs_fashion_claims.csv").read_text().splitlines()
        assert "digits: verdict" in claims[0] and "FashionMNIST (random tensors): verdict" in claims[0]


def test_there_are_deep_learning_notebooks():
    expected = {"02_fedsum_main", "03_fedsum_ablations", "05_focus_cifar", "07_fedacs_experiments",
                "08_amplified_fedavg"}
    assert expected & set(NOTEBOOKS) <= set(DEEP)
    assert {"02_fedsum_main", "08_amplified_fedavg"} <= set(DEEP)


def test_parameters_of_another_type_or_unknown_names_stop_the_notebook():
    d = notebook.notebook_defaults("02_fedsum_main")
    notebook.check_parameters("02_fedsum_main", {**d, "np": np, "print": print, "_i": "x", "In": []})
    with pytest.raises(ValueError, match=r"^parameter seeds: expected list \(default \[0, 1.*got int 5$"):
        notebook.check_parameters("02_fedsum_main", {**d, "seeds": 5})
    with pytest.raises(ValueError, match=r"^parameter seed: not a parameter of 02_fedsum_main "
                                         r"\(its parameters: profile, seeds"):
        notebook.check_parameters("02_fedsum_main", {**d, "seed": 3})
    with pytest.raises(ValueError, match="parameter workers: expected int"):
        notebook.check_parameters("02_fedsum_main", {**d, "workers": True})      # a bool is not an int
    six = notebook.notebook_defaults("06_fedacs_toy")
    notebook.check_parameters("06_fedacs_toy", {**six, "lr": 1})                   # an int is a float
    with pytest.raises(ValueError, match="parameter lr: expected float"):
        notebook.check_parameters("06_fedacs_toy", {**six, "lr": "0.1"})


def test_papermill_with_an_unknown_parameter_stops_before_writing_anything(tmp_path):
    env = {**os.environ, "FEDLIB_OUT_ROOT": str(tmp_path)}
    out = tmp_path / "out.ipynb"
    src = ROOT / "notebooks/01_participation_delays.ipynb"
    r = subprocess.run([sys.executable, "-m", "papermill", str(src), str(out), "-k", "python3", "--cwd",
                        str(ROOT / "notebooks"), "-p", "sead", "3", "--no-progress-bar"],
                       env=env, capture_output=True, text=True)
    assert r.returncode != 0
    assert "parameter sead: not a parameter of 01_participation_delays" in r.stderr + r.stdout
    assert not (tmp_path / "figures").exists() and not (tmp_path / "results").exists()


def test_strip_run_metadata_makes_two_executions_byte_identical(tmp_path):
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("print(x * 2)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src = tmp_path / "nb.ipynb"
    nbformat.write(nb, src)
    outs = []
    for i in range(2):
        out = tmp_path / f"out{i}.ipynb"
        subprocess.run([sys.executable, "-m", "papermill", str(src), str(out), "-k", "python3",
                        "--no-progress-bar"], check=True, capture_output=True)
        outs.append(out)
    assert outs[0].read_bytes() != outs[1].read_bytes()          # papermill's timestamps differ
    subprocess.run([sys.executable, "-m", "fedlib", "strip", *map(str, outs)], check=True)
    assert outs[0].read_bytes() == outs[1].read_bytes()
    text = outs[0].read_text()
    assert "papermill" not in text and "iopub" not in text and text.endswith("}\n") and "2\\n" in text
    assert notebook.strip_run_metadata(outs[0]) is False                   # idempotent


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_committed_notebooks_carry_no_run_metadata(nb):
    text = (ROOT / "notebooks" / f"{nb}.ipynb").read_text()
    assert '"papermill": {' not in text and '"iopub.' not in text and text.endswith("\n")


def test_paper_profile_without_its_data_stops_before_creating_a_folder(tmp_path):
    env = {**os.environ, "FEDLIB_OUT_ROOT": str(tmp_path), "FEDLIB_DATA": str(tmp_path / "no-data")}
    env.pop("FEDLIB_NO_COMPUTE", None)
    results = ROOT / "results" / "02_fedsum_main"
    before = _tree(results)
    r = subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks/02_fedsum_main.ipynb"),
                        str(tmp_path / "out.ipynb"), "-k", "python3", "--cwd", str(ROOT / "notebooks"),
                        "-p", "profile", "paper", "--no-progress-bar"],
                       env=env, capture_output=True, text=True)
    assert r.returncode != 0
    # the first dataset whose runs are not all stored stops it (MNIST's App. H grid is committed
    # from a GPU window, so that may be SVHN's grid), before any run or folder is written
    assert re.search(r"problem_args\.dataset: (mnist|svhn|cifar10): dataset files not found",
                     r.stdout + r.stderr)
    assert _tree(results) == before                     # no paper entry or folder added, nothing touched
    assert not (tmp_path / "results").exists() and not (tmp_path / "figures").exists()


def test_the_paper_store_renders_the_block_it_holds_whole_and_names_every_pattern_left_out(tmp_path):
    """``make figures PROFILE=paper`` on notebook 02's committed paper store (computing nothing):
    it renders the patterns of the largest block of patterns x seeds stored whole, and each
    pattern left out has a "missing:" line and a "not tested" row for MNIST; no pattern is both."""
    env = {**os.environ, "FEDLIB_OUT_ROOT": str(tmp_path), "FEDLIB_NO_COMPUTE": "1"}
    results = ROOT / "results" / "02_fedsum_main"
    before = _tree(results)
    r = subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks/02_fedsum_main.ipynb"),
                        str(tmp_path / "out.ipynb"), "-k", "python3", "--cwd", str(ROOT / "notebooks"),
                        "-p", "profile", "paper", "--no-progress-bar", "--log-output"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout + r.stderr
    left = set(re.findall(r"^missing: (P\d): ", out, flags=re.M))
    [folder] = (tmp_path / "results" / "notebooks").glob("02_fedsum_main-*profile=paper*")
    rows = pd.read_csv(folder / "claims.csv")
    mnist = rows[rows["dataset"] == "MNIST"]
    cut = set(mnist.loc[mnist["cause"].str.contains("outside the largest block", na=False), "pattern"])
    assert cut == left and len(left) < 3                    # P1 of seed 0 is stored whole
    rendered = set(mnist["pattern"]) - cut
    assert rendered and rendered.isdisjoint(left) and rendered | left == {"P1", "P2", "P3"}
    assert _tree(results) == before                         # the store is read, never written


def test_notebook_08s_paper_store_renders_as_far_as_it_is_stored_and_names_the_rest(tmp_path):
    """``make figures PROFILE=paper`` on notebook 08's committed paper store (computing nothing):
    the warm-ups stored and the rate grid's runs stored so far are rendered (the table ``lr_grid``
    has one row per stored grid run, and marks the chosen rate of each method whose search is
    whole), every part left out has its "missing:" line
    (:func:`fedlib.campaign.stored_scope_08`), and a store with no seed whole stops after the
    grid, saying why; the store is read, never written."""
    from fedlib import campaign
    from fedlib.studies import amplified
    results = ROOT / "results" / "08_amplified_fedavg"
    seeds = [0, 1, 2, 3, 4]                                         # the notebook's default
    scope = campaign.stored_scope_08(amplified.amplified_setup("paper", seeds[0]), results / "paper", seeds)
    env = {**os.environ, "FEDLIB_OUT_ROOT": str(tmp_path), "FEDLIB_NO_COMPUTE": "1"}
    before = _tree(results)
    r = subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks/08_amplified_fedavg.ipynb"),
                        str(tmp_path / "out.ipynb"), "-k", "python3", "--cwd", str(ROOT / "notebooks"),
                        "-p", "profile", "paper", "--no-progress-bar", "--log-output"],
                       env=env, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert re.findall(r"^missing: .*$", out, flags=re.M) == scope.lines
    assert (r.returncode == 0) == bool(scope.seeds), out[-2000:]
    if not scope.seeds:
        assert "the store holds no seed whole" in out
    [folder] = (tmp_path / "results" / "notebooks").glob("08_amplified_fedavg-*profile=paper*")
    grid = pd.read_csv(folder / "lr_grid.csv")
    assert len(grid) == len(scope.grid)
    chosen = grid[grid["chosen"]].groupby("method")["lr"].unique()         # each whole search's pick, alone
    assert {m: list(r) for m, r in chosen.items()} == {m: [g.best] for m, g in scope.searches.items()}
    assert (folder / "warmup.png").exists()
    assert _tree(results) == before


def test_notebook_runs_save_figures_tables_and_claims_into_the_ledger(tmp_path):
    import matplotlib.pyplot as plt

    from fedlib import claims
    out = tmp_path / "figures" / "99_test"
    runs = notebook.NotebookRuns(str(out), tmp_path / "store", name="99_test")
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    assert runs.figure(fig, "f", "a title") is None                       # nothing machine-specific printed
    assert (out / "f.png").exists() and (out / "f.pdf").exists()
    assert fig._suptitle.get_text() == "a title"
    plt.close(fig)
    df = pd.DataFrame({"x": [1.5]})
    assert runs.table(df, "t") is df and (out / "t.md").exists()
    v = claims.paired({0: 0.9, 1: 0.8, 2: 0.85}, {0: 0.5, 1: 0.4, 2: 0.45})
    table = runs.claims([{"where": "Sec. 1", "quote": "it is better", "claim": "A beats B", "check": v,
                          "setting": "s"}], "a paper")
    assert table["verdict"].tolist() == [claims.HOLDS] and (out / "claims.csv").exists()
    ledger = pd.read_csv(tmp_path / "figures" / "claims_ledger.csv")
    got = ledger[["notebook", "paper", "claim", "verdict"]].values.tolist()
    assert got == [["99_test", "a paper", "A beats B", claims.HOLDS]]


def test_kept_tables_are_computed_when_their_inputs_are_here_else_read_as_committed(tmp_path, monkeypatch):
    """A table of inputs that are not committed (notebook 09's trace): computed and saved when
    they are here; else the committed ``figures/<notebook>/<name>.csv``; the same frame either way
    (read back from its CSV), and a clear error when nothing was committed."""
    monkeypatch.setenv("FEDLIB_OUT_ROOT", str(tmp_path))
    committed = ROOT / "figures" / "09_real_availability" / "trace_files.csv"
    runs = notebook.NotebookRuns("results/notebooks/k", tmp_path / "store", name="09_real_availability")
    if committed.exists():
        fresh = pd.read_csv(committed)
        calls = []
        kept = runs.kept_table("trace_files", lambda: calls.append(1) or fresh, fresh=False)
        assert not calls and kept.equals(pd.read_csv(committed))
        assert (tmp_path / "results" / "notebooks" / "k" / "trace_files.csv").exists()
    computed = runs.kept_table("t", lambda: pd.DataFrame({"x": [0.123456789], "y": ["a"]}), fresh=True)
    assert computed["x"].tolist() == [0.1235] and computed["y"].tolist() == ["a"]     # as its CSV holds it
    with pytest.raises(ValueError, match=r"^never: its inputs are not here and no table was committed at "):
        runs.kept_table("never", lambda: pd.DataFrame(), fresh=False)


def test_notebook_runs_show_tables_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDLIB_OUT_ROOT", str(tmp_path))
    with pd.option_context("display.max_columns", 5, "display.max_colwidth", 10, "display.max_rows", 5):
        notebook.notebook_runs("02_fedsum_main", {"profile": "smoke"}, str(tmp_path / "o"))
        wide = pd.DataFrame({f"c{i}": ["a long quote of a paper, " * 4] * 80 for i in range(30)})
        html = wide._repr_html_()                   # what a notebook shows (to_string ignores these options)
        assert "..." not in html and "<th>c29</th>" in html
        assert html.count("<tr>") == 80             # every body row (the header row is styled)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_notebooks_py_source_and_executed_ipynb_hold_the_same_cells(name):
    """The ``.py`` is the source and nbval executes the ``.ipynb``: an edit of one not synced to the
    other (``make sync``; ``make figures`` syncs each pair before it executes it) would test, or
    lose, code that is not the source. Every cell, code and Markdown, in order."""
    import jupytext
    import nbformat
    source = jupytext.read(ROOT / "notebooks" / f"{name}.py")
    executed = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    assert [(c.cell_type, c.source) for c in source.cells] == \
        [(c.cell_type, c.source) for c in executed.cells], f"{name}: .py and .ipynb differ; run make sync"


def test_a_notebook_says_how_many_runs_it_is_about_to_compute(tmp_path, capsys):
    """Without progress bars a cell computing missing runs could sit silent for minutes: it says how
    many runs are not in the store first; once they are, nothing."""
    from fedlib import ExperimentConfig
    runs = notebook.NotebookRuns(str(tmp_path / "99_test"), tmp_path / "store", name="99_test")
    cs = [ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=2, seed=s,
                           problem_args={"num_clients": 2, "dim": 2}) for s in (0, 1)]
    runs.compute(cs[:1])
    runs.compute(cs)
    assert capsys.readouterr().out.splitlines() == [
        f"computing 1 of 1 runs not in {tmp_path / 'store'} (progress=True shows progress bars)",
        f"computing 1 of 2 runs not in {tmp_path / 'store'} (progress=True shows progress bars)"]
    runs.compute(cs)
    assert capsys.readouterr().out == ""
