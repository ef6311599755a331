"""fedlib.notebook: profiles, store paths and the setup of a notebook from its parameters."""

from pathlib import Path

import pytest

import fedlib
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
    for bad, match in (({}, r"^params: must be the notebook's parameters \(its globals\(\), with profile\)"),
                       ({**params, "workers": 0}, r"^workers: must be an integer >= 1, got 0"),
                       ({**params, "stand_in_rounds": -5}, r"^stand_in_rounds: must be an integer >= 0"),
                       ({**params, "progress": "yes"}, r"^progress: must be True or False")):
        with pytest.raises(fedlib.InputError, match=match):      # a KeyError, or stored as given
            notebook.notebook_runs("05_focus_cifar", bad)



def test_profiles_and_store_paths():
    assert notebook.check_profile("quick") == "quick"
    with pytest.raises(ValueError, match="^profile: must be one of smoke, quick, paper"):
        notebook.check_profile("full")
    p = notebook.store_path("02_fedsum_main", "quick", root="/x")
    assert p == Path("/x/results/02_fedsum_main/quick")


def _nesting(markup: str) -> list[tuple[str, tuple[str, ...]]]:
    """Each start tag of ``markup`` with the tags it sits inside (outermost first)."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        def __init__(self):
            super().__init__()
            self.open, self.seen = [], []

        def handle_starttag(self, tag, attrs):
            self.seen.append((tag, tuple(t for t, _ in self.open), dict(attrs)))
            self.open.append((tag, dict(attrs)))

        def handle_endtag(self, tag):
            assert self.open and self.open[-1][0] == tag, f"</{tag}> closes {self.open[-1:]}"
            self.open.pop()

    p = P()
    p.feed(markup)
    assert not p.open, f"unclosed tags {p.open}"
    return p.seen


def test_folded_tables_put_each_table_in_a_sideways_scroll_inside_details():
    import pandas as pd
    a = pd.DataFrame({"method": ["FedACS", "FedAvg"], "acc": [0.123456789, None]}, index=["r1", "r2"])
    b = pd.DataFrame({"claim": ["holds <always> & more"]})
    out = notebook.folded_tables("Rates & <b>why</b>", [a, b], text="The **rule**.",
                                 lead="**Decision**: keep", index=False, digits=3, na_rep="-").data
    assert out.startswith("**Decision**: keep\n\n<details><summary>"
                          "Rates &amp; &lt;b&gt;why&lt;/b&gt;</summary>")
    inside = out.split("</summary>", 1)[1]
    assert inside.index("The **rule**.") < inside.index("<table") and out.endswith("</details>")
    tags = _nesting(out)
    tables = [outer for tag, outer, _ in tags if tag == "table"]
    assert tables == [("details", "div")] * 2                  # each table in its own div inside the details
    divs = [attrs for tag, _, attrs in tags if tag == "div"]
    assert divs == [{"style": "overflow-x: auto"}] * 2
    assert not any(tag == "b" for tag, _, _ in tags)           # the title's markup is text
    for cell in ("FedACS", "FedAvg", "0.123", "-", "holds &lt;always&gt; &amp; more"):
        assert f">{cell}<" in out, cell
    assert "0.1235" not in out and ">r1<" not in out           # 3 digits; no index
    assert all("\n" not in line for line in out.split("\n\n") if line.startswith("<div"))  # one line each
    one = notebook.folded_tables("t", a).data                   # defaults: the index, pandas' floats, NaN
    assert one.startswith("<details><summary>t</summary>\n\n<div") and ">r1<" in one and ">NaN<" in one
    assert ">0.123457<" in one


@pytest.mark.parametrize("kwargs, match", [
    ({"title": "", "tables": []}, "^title: must be a non-empty string"),
    ({"title": "t", "tables": []}, "^tables: must be a DataFrame or a non-empty list or tuple of DataFrames"),
    ({"title": "t", "tables": [{"a": 1}]}, "^tables: must be a DataFrame"),
    ({"title": "t", "tables": "x"}, "^tables: must be a DataFrame"),
    ({"title": "t", "text": 3}, "^text: must be a string"),
    ({"title": "t", "index": "no"}, "^index: must be True or False"),
    ({"title": "t", "digits": 0}, "^digits: must be None or an integer in 1..17"),
    ({"title": "t", "digits": True}, "^digits: must be None or an integer in 1..17"),
    # what the runtime guard (fedlib._validate.guard_module) would let through or name less clearly:
    # it judges the hints only after a call fails, and reads ``str`` as "a string or a path"
    ({"title": Path("t")}, "^title: must be a non-empty string"),         # else: AttributeError
    ({"title": "t", "tables": {"a": "b"}}, "^tables: must be a DataFrame"),  # else: "or a sequence"
    ({"title": "t", "lead": None}, "^lead: must be a string"),             # else: no lead, silently
    ({"title": "t", "na_rep": 0}, "^na_rep: must be a string"),
    ({"title": "t", "index": 1}, "^index: must be True or False"),
    ({"title": "t", "digits": "3"}, "^digits: must be None or an integer in 1..17"),
    ({"title": "t", "digits": 18}, "^digits: must be None or an integer in 1..17"),
])
def test_folded_tables_refuse_bad_input_naming_the_argument(kwargs, match):
    """Each bad argument is refused by folded_tables' own checks, naming it; the runtime guard
    wraps the function too, but lets these through (or names them less precisely)."""
    import pandas as pd
    assert getattr(notebook.folded_tables, "__fedlib_guarded__", False)
    kwargs.setdefault("tables", pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError, match=match):
        notebook.folded_tables(**kwargs)


def test_a_lagging_seed_list_is_narrowed_to_the_notebooks_seeds_and_says_so():
    assert notebook.seeds_among([0, 1, 2], [0, 1, 2, 3], "alpha_seeds") == ([0, 1, 2], "")
    kept, note = notebook.seeds_among([0, 1, 2], [0, 2], "other_seeds")
    assert kept == [0, 2]
    assert note == "other_seeds [0, 1, 2]: 1 not among seeds [0, 2]; those cells run on [0, 2]"
    assert notebook.seeds_among([3, 4], [0], "alpha_seeds")[0] == [0]        # none among them: all of seeds
    # a list the user set (not the notebook's default) that names other seeds and does not hold all of
    # seeds would run its cells on seeds not asked: refused; the default follows seeds as before
    name = "07_fedacs_experiments"
    default = notebook.notebook_defaults(name)["alpha_seeds"]
    said = (f"alpha_seeds {default}: {', '.join(map(str, default))} not among seeds [6, 7]; those cells run "
            "on [6, 7]")
    assert notebook.seeds_among(default, [6, 7], "alpha_seeds", name) == ([6, 7], said)
    for some, seeds in (([7], [0, 1, 2, 3, 4, 5]), ([0, 7], [0, 1])):
        with pytest.raises(ValueError, match=r"^alpha_seeds: 7 not among seeds \["):
            notebook.seeds_among(some, seeds, "alpha_seeds", name)


def test_fedlib_no_compute_reads_any_case_and_refuses_a_value_it_does_not_know(monkeypatch):
    from fedlib import sweeps
    for value, off in (("1", True), ("True", True), ("YES", True), (" on ", True), ("", False), ("0", False),
                       ("false", False), ("No", False), ("off", False)):
        monkeypatch.setenv("FEDLIB_NO_COMPUTE", value)
        assert sweeps.no_compute_env() is off and notebook.computing_off() is off, value
    monkeypatch.setenv("FEDLIB_NO_COMPUTE", "ture")
    with pytest.raises(ValueError, match=r"^FEDLIB_NO_COMPUTE: must be 1, true, yes or on .* got 'ture'"):
        notebook.computing_off()
    with pytest.raises(ValueError, match="^alpha_seeds: each seed once"):
        notebook.seeds_among([1, 1], [0, 1], "alpha_seeds")


def test_a_smoke_store_is_removed_when_its_process_exits():
    """Smoke runs and stand-in tests compute into a temporary store that leaves nothing behind: it
    is removed when the kernel (here a process) that made it exits."""
    import subprocess
    import sys
    from pathlib import Path
    code = ("from fedlib import notebook; p = notebook.notebook_store('02_fedsum_main', 'smoke'); "
            "print(p, p.is_dir())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = out.stdout.split()
    assert out[1] == "True" and not Path(out[0]).exists()
