"""What the notebooks share: profiles, their parameters' defaults, where they write figures and
keep runs, and the set-up of a deep-learning notebook (:func:`notebook_runs`).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ._validate import InputError, check_int
from .analysis import require_ok
from .config import ExperimentConfig
from .paths import fedlib_project, project_root
from .store import equivalent_key, no_compute_env
from .sweeps import sweep

__all__ = ["NotebookRuns", "PROFILES", "RUN_METADATA", "check_parameters", "check_profile", "check_seeds",
           "computing_off", "folded_tables", "notebook_defaults",
           "notebook_output_dir", "notebook_runs", "notebook_store", "store_path", "strip_run_metadata"]


#: the profiles of the deep-learning notebooks (DEVELOPERS.md): every code path on tiny settings,
#: reduced real-MNIST runs committed in a store, the papers' exact settings
PROFILES = ("smoke", "quick", "paper")


def check_profile(profile: str) -> str:
    """``profile`` if it is one of :data:`PROFILES`, else a ValueError naming the choices."""
    if profile not in PROFILES:
        raise InputError(f"profile: must be one of {', '.join(PROFILES)}; got {profile!r}")
    return profile


def check_seeds(seeds, name: str = "seeds") -> list[int]:
    """``seeds`` as a list of ints if it is a non-empty list of distinct non-negative integers (a
    notebook's ``seeds`` parameter, or the one ``name`` says), else a ValueError that says so."""
    import numpy as np
    if not isinstance(seeds, (str, bytes)) and hasattr(seeds, "__iter__"):
        seeds = list(seeds)
    if not isinstance(seeds, list) or not seeds or any(
            isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0 for k in seeds):
        raise InputError(f"{name}: must be a non-empty list of non-negative integers, got {seeds!r}")
    big = [int(k) for k in seeds if k >= 2 ** 63]
    if big:
        raise InputError(f"{name}: each seed below 2**63 (numpy's and torch's seeds are 64-bit), "
                         f"got {big[0]}")
    twice = sorted({int(k) for k in seeds if seeds.count(k) > 1})
    if twice:
        raise InputError(f"{name}: each seed once (a seed twice would count one run twice in every "
                         f"interval); {', '.join(map(str, twice))} repeated in {seeds!r}")
    return [int(k) for k in seeds]


def check_seed(seed, name: str = "seed") -> int:
    """``seed`` as an int if it is one integer in [0, 2**63) (a run's seed: numpy's and torch's are
    64-bit), else an InputError that names ``name``."""
    import numpy as np
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 63:
        raise InputError(f"{name}: must be an integer in [0, 2**63), got {seed!r}")
    return int(seed)


def check_stand_in(rounds, name: str = "stand_in_rounds") -> int:
    """``rounds`` as an int if it is an integer >= 0 (a setup's ``stand_in_rounds``: 0 runs the
    profile's own data, n > 0 random data cut to n rounds), else an InputError that names ``name``."""
    import numpy as np
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 0:
        raise InputError(f"{name}: must be an integer >= 0 (0: the profile's own data), got {rounds!r}")
    return int(rounds)


def seeds_among(some, seeds: list[int], name: str, notebook: str = "") -> tuple[list[int], str]:
    """A notebook's lagging seed list ``some`` (parameter ``name``: the cells computed on fewer
    seeds so far) narrowed to those among ``seeds`` (both checked by :func:`check_seeds`), with a
    line that says what was dropped ("" where nothing was); all of ``seeds`` where none is among
    them (e.g. a test's ``seeds [0]``: the lagging cells follow it).

    Raises:
        InputError: ``notebook`` is given and ``some`` was set (it is not that notebook's default of
            parameter ``name``), names a seed outside ``seeds`` and does not hold them all: a user's
            ``alpha_seeds [7]`` beside ``seeds 0-5`` would run its cells on other seeds than asked.
    """
    some, seeds = check_seeds(some, name), check_seeds(seeds)
    if set(some) <= set(seeds):
        return some, ""
    default = notebook_defaults(notebook).get(name) if notebook else None
    if notebook and some != default and not set(seeds) <= set(some):
        outside = ", ".join(str(k) for k in some if k not in seeds)
        raise InputError(f"{name}: {outside} not among seeds {seeds}; "
                         f"{name} lists the seeds, among seeds, that its cells run on")
    kept = [k for k in some if k in seeds] or seeds
    return kept, (f"{name} {some}: {', '.join(str(k) for k in some if k not in seeds)} not among seeds "
                  f"{seeds}; those cells run on {kept}")


def computing_off() -> bool:
    """Whether ``$FEDLIB_NO_COMPUTE`` forbids computing missing runs (``make test``'s nbval, ``make
    figures PROFILE=paper``): a notebook then renders what its store holds."""
    return no_compute_env()


def store_path(notebook: str, profile: str, root: str | os.PathLike | None = None) -> Path:
    """``<root>/results/<notebook>/<profile>`` (root: the project this fedlib was imported from,
    whatever the working directory; for an installed package, the project above the working
    directory). The stores of the ``quick`` profile are committed in git; the others are ignored
    caches.

    Raises:
        InputError: a profile that is not one of :data:`PROFILES`; a notebook name the project has
            no notebook of (a misspelled name would otherwise be a new, empty store).
    """
    check_profile(profile)
    if not isinstance(notebook, str) or not notebook or "/" in notebook or notebook.startswith("."):
        raise InputError(f"notebook: must be a notebook's name such as '02_fedsum_main', got {notebook!r}")
    if root is not None and not isinstance(root, (str, os.PathLike)):
        raise InputError(f"root: must be a folder path or None, got {type(root).__name__} {root!r}")
    project = fedlib_project()
    if root is None and project is not None:
        known = sorted(p.stem for p in (project / "notebooks").glob("[0-9]*.py"))
        if known and notebook not in known:
            raise InputError(f"notebook: no notebook {notebook!r} in {project / 'notebooks'}; its notebooks: "
                             f"{', '.join(known)}")
    return Path(root or project or project_root()) / "results" / notebook / profile


def notebook_store(notebook: str, profile: str, committed: bool = True) -> Path:
    """Where a notebook keeps its runs: :func:`store_path` for a store that is kept (the quick
    profile's is committed; created by the first run stored there, so a notebook that stops
    early, e.g. on missing data, leaves no folder), else a new temporary folder (smoke runs and
    stand-in tests leave nothing behind)."""
    if committed and check_profile(profile) != "smoke":
        return store_path(notebook, profile)          # created by the first run stored in it
    folder = tempfile.mkdtemp(prefix=f"fedlib-{notebook}-{check_profile(profile)}-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)      # removed when the kernel exits
    return Path(folder)


def notebook_defaults(notebook: str) -> dict:
    """The literal defaults of a notebook's ``parameters`` cell, read from
    ``notebooks/<notebook>.ipynb`` (or its ``.py`` pair) of the project."""
    root = project_root(Path(__file__).parent)
    ipynb = root / "notebooks" / f"{notebook}.ipynb"
    if not ipynb.exists() and not (root / "notebooks" / f"{notebook}.py").exists():
        known = sorted(p.stem for p in (root / "notebooks").glob("[0-9]*.py"))
        raise InputError(f"notebook: no notebook {notebook!r} in {root / 'notebooks'}; its notebooks: "
                         f"{', '.join(known) or '(none)'}")
    if ipynb.exists():
        cells = json.loads(ipynb.read_text())["cells"]
        src = next(("".join(c["source"]) for c in cells
                    if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    else:
        text = (root / "notebooks" / f"{notebook}.py").read_text()
        src = text.split('# %% tags=["parameters"]', 1)[1].split("# %%", 1)[0]
    if src is None:
        raise InputError(f"notebook: {ipynb} has no cell tagged 'parameters'")
    ns: dict = {}
    exec(compile(src, f"{notebook} parameters", "exec"), ns)   # literals only, by convention
    return {k: v for k, v in ns.items() if not k.startswith("__")}


#: names a Jupyter kernel defines by itself (not parameters)
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


def check_parameters(notebook: str, params: dict) -> None:
    """Stop a notebook at its parameters: a ValueError on the first parameter whose value has
    another type than its default (an int is accepted for a float), or on a name papermill
    injected that the notebook does not have (papermill only warns, then runs the defaults).

    Args:
        notebook: the notebook's name (its ``parameters`` cell gives names and types).
        params: the notebook's globals right after its parameters cell (modules, functions,
            classes and names starting with ``_`` are not parameters).
    """
    import inspect
    defaults = notebook_defaults(notebook)
    for name, default in defaults.items():
        if name not in params:
            continue
        value, want = params[name], type(default)
        ok = isinstance(value, want) and not (isinstance(value, bool) and want is not bool)
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            hint = (f" (papermill -p passes text; a list goes as YAML: -y \"{name}: {default!r}\")"
                    if want in (list, dict) and isinstance(value, str) else "")
            raise InputError(f"parameter {name}: expected {want.__name__} (default {default!r}), got "
                             f"{type(value).__name__} {value!r}{hint}")
    unknown = sorted(k for k, v in params.items()
                     if k not in defaults and not k.startswith("_") and k not in _KERNEL_NAMES
                     and not (inspect.ismodule(v) or callable(v)))
    if unknown:
        raise InputError(f"parameter {unknown[0]}: not a parameter of {notebook} (its parameters: "
                         f"{', '.join(defaults)})")


def notebook_output_dir(notebook: str, params: dict, out_dir: str = "",
                        ignore: tuple[str, ...] = ("progress", "out_dir", "workers")) -> str:
    """Where a notebook writes its figures and tables.

    ``out_dir`` if given; else ``figures/<notebook>`` -- the committed figures -- only when
    every parameter has its default value (``ignore`` lists parameters that do not change
    results); else ``results/notebooks/<notebook>-<overrides>/``, so that a run with other
    parameters (``papermill -p ...``) never overwrites the committed figures. Prints the choice.
    The parameters are checked first (:func:`check_parameters`).
    """
    check_parameters(notebook, params)
    if out_dir:
        return out_dir
    defaults = notebook_defaults(notebook)
    changed = {k: params[k] for k, v in defaults.items()
               if k not in ignore and k in params and params[k] != v}
    if not changed:
        return f"figures/{notebook}"
    tag = "-".join(f"{k}={v}" for k, v in sorted(changed.items()))
    tag = "".join(c if c.isalnum() or c in "=-_." else "_" for c in tag)
    if len(tag) > 120:                            # cut, and told apart by a digest of the whole
        tag = f"{tag[:100]}-{hashlib.sha256(tag.encode()).hexdigest()[:12]}"
    target = f"results/notebooks/{notebook}-{tag}"
    print(f"parameters differ from the defaults ({', '.join(f'{k}={v!r}' for k, v in changed.items())}): "
          f"figures and tables go to {target}/, not to the committed figures/{notebook}/")
    return target


def folded_tables(title: str, tables: pd.DataFrame | Sequence[pd.DataFrame], text: str = "", lead: str = "",
                  index: bool = True, digits: int | None = None, na_rep: str = "NaN"):
    """Tables folded into a ``<details>`` block of a notebook's output (a long or wide table kept off
    the page's height), each inside ``<div style="overflow-x: auto">`` so that a table wider than
    the page's column scrolls sideways within it instead of widening the page.

    The output, as Markdown: ``lead`` (if any), then ``<details><summary>title</summary>``, ``text``
    (if any), the tables one after the other, ``</details>``; each table is one line of HTML
    (pandas' ``to_html`` with ``border=0``), so that Markdown does not read its indented lines as
    code.

    Args:
        title: the fold's summary line (HTML's ``&``, ``<`` and ``>`` in it are escaped; a title is
            plain text).
        tables: one DataFrame, or a non-empty list or tuple of them (shown in that order).
        text: Markdown shown inside the fold, above the tables (e.g. the rules that made them).
        lead: Markdown shown above the fold, always visible (e.g. the decision the tables explain).
        index: whether the tables show their index.
        digits: significant digits of the floats (``f"{v:.<digits>g}"``); None: pandas' default.
        na_rep: how a missing value is shown.

    Returns:
        An ``IPython.display.Markdown`` object (a notebook cell ending with it renders it).

    Raises:
        InputError: an argument of another type or value than the above, naming it.
    """
    import html

    from IPython.display import Markdown
    # the checks stay though guard_module wraps this function: it judges the hints only after a
    # call fails (a wrong ``text``, ``lead``, ``na_rep``, ``index`` or ``digits`` would pass silently)
    # and reads ``str`` as "a string or a path" (a Path title would end in an AttributeError)
    if not isinstance(title, str) or not title.strip():
        raise InputError(f"title: must be a non-empty string, got {title!r}")
    frames = [tables] if isinstance(tables, pd.DataFrame) else tables
    if not isinstance(frames, (list, tuple)) or not frames \
            or not all(isinstance(t, pd.DataFrame) for t in frames):
        raise InputError(f"tables: must be a DataFrame or a non-empty list or tuple of DataFrames, got "
                         f"{type(tables).__name__} {tables!r}"[:300])
    for name, value in (("text", text), ("lead", lead), ("na_rep", na_rep)):
        if not isinstance(value, str):
            raise InputError(f"{name}: must be a string, got {type(value).__name__} {value!r}")
    if not isinstance(index, bool):
        raise InputError(f"index: must be True or False, got {index!r}")
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int)
                               or not 1 <= digits <= 17):
        raise InputError(f"digits: must be None or an integer in 1..17, got {digits!r}")
    fmt = None if digits is None else (lambda v: f"{v:.{digits}g}")
    body = "\n\n".join('<div style="overflow-x: auto">' + t.to_html(
        index=index, border=0, float_format=fmt, na_rep=na_rep).replace("\n", "") + "</div>" for t in frames)
    return Markdown((f"{lead}\n\n" if lead else "") + f"<details><summary>{html.escape(title, quote=False)}"
                    f"</summary>\n\n" + (f"{text}\n\n" if text else "") + f"{body}\n\n</details>")


#: metadata an execution writes that differ from run to run (papermill's timings, Jupyter's
#: execution timestamps): notebook level and cell level
RUN_METADATA = ("papermill", "execution")


def _read_notebook(path: str | os.PathLike) -> tuple[str, dict]:
    """The text of an .ipynb file and its JSON; a ValueError naming ``path`` if it is not one."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"path: {path} is not an executed notebook (.ipynb JSON): {e}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise InputError(f"path: {path} is not an executed notebook (.ipynb JSON with a list of cells)")
    if not isinstance(nb.get("metadata", {}), dict):
        raise InputError(f"path: {path} is not an executed notebook (its metadata is not a JSON object)")
    odd = next((i for i, c in enumerate(nb["cells"])
                if not isinstance(c, dict) or not isinstance(c.get("metadata", {}), dict)), None)
    if odd is not None:
        raise InputError(f"path: {path} is not an executed notebook (cell {odd} is not a cell: a JSON object "
                         "with a metadata object)")
    return text, nb


def strip_run_metadata(path: str | os.PathLike) -> bool:
    """Remove :data:`RUN_METADATA` from an executed notebook (its own and its cells') and write it
    back in nbformat's layout (sorted keys, one-space indent, a final newline), so that executing
    a notebook twice, or on another machine, leaves the same bytes when its outputs are the same.
    Returns whether the file changed."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"path: no such notebook file {path}")
    text, nb = _read_notebook(path)
    for key in RUN_METADATA:
        nb.get("metadata", {}).pop(key, None)
        for cell in nb.get("cells", []):
            cell.get("metadata", {}).pop(key, None)
    out = json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    if out != text:
        path.write_text(out, encoding="utf-8")
    return out != text


@dataclass(frozen=True)
class NotebookRuns:
    """What a deep-learning notebook sets up from its parameters (see :func:`notebook_runs`).

    Attributes:
        out_dir: where its figures and tables go (:func:`notebook_output_dir`).
        store: where its runs are kept (:func:`notebook_store`).
        workers: worker processes computing missing runs (1: in the kernel).
        progress: progress bars of the sweeps.
        name: the notebook's name (the ledger's ``notebook`` column).
    """

    out_dir: str
    store: Path
    workers: int = 1
    progress: bool = False
    name: str = ""

    def compute(self, configs: Iterable[ExperimentConfig], keep_params: bool = False) -> pd.DataFrame:
        """Load or compute ``configs`` in the store (``workers`` processes with one thread
        each) and return their histories; a run that failed raises (:func:`require_ok`).
        ``keep_params``: keep the final models (a warm-up computed before its phases). Without
        progress bars, runs about to be computed are announced first (how many, where), so that a
        cell that computes for minutes does not look stuck."""
        configs = list(configs)
        if not self.progress and not computing_off():
            seen: dict = {}
            absent = sum(not (Path(self.store) / c.key() / "meta.json").exists()
                         and equivalent_key(Path(self.store), c, seen=seen) is None for c in configs)
            if absent:
                print(f"computing {absent} of {len(configs)} runs not in {self.store} (progress=True shows "
                      "progress bars)")
        return require_ok(sweep(configs, self.store, progress=self.progress, workers=self.workers,
                                keep_params=keep_params))

    def figure(self, fig, name: str, suptitle: str | None = None) -> None:
        """Give ``fig`` its title (if any), lay it out and save it as ``name`` (PNG + PDF) in
        :attr:`out_dir`. Returns nothing, so that a cell ending with it prints no paths (they
        differ from machine to machine)."""
        from . import plotting
        if suptitle:
            fig.suptitle(suptitle)
        fig.tight_layout()
        plotting.save_figure(fig, self.out_dir, name)

    def table(self, df: pd.DataFrame, name: str, **kwargs) -> pd.DataFrame:
        """Save ``df`` as ``name`` (CSV + Markdown, :func:`fedlib.plotting.save_table`) in
        :attr:`out_dir` and return it, for display."""
        from . import plotting
        plotting.save_table(df, self.out_dir, name, **kwargs)
        return df

    def kept_table(self, name: str, compute: Callable[[], pd.DataFrame], fresh: bool) -> pd.DataFrame:
        """A table whose inputs are not committed (a trace file of the data folder): when
        ``fresh`` (the inputs are here), ``compute()`` saved as ``name``; else the committed
        ``figures/<notebook>/<name>.csv``, saved again in :attr:`out_dir`. Either way the table
        comes back as read from its CSV, so a notebook shows the same numbers with or without
        the inputs (nbval compares them).

        Raises:
            InputError: the inputs are absent and no table was committed.
        """
        from .paths import output_dir
        if fresh:
            self.table(compute(), name)
            return pd.read_csv(output_dir(self.out_dir) / f"{name}.csv")
        kept = project_root() / "figures" / self.name / f"{name}.csv"
        if not kept.is_file():
            raise InputError(f"{name}: its inputs are not here and no table was committed at {kept}")
        self.table(pd.read_csv(kept), name)
        return pd.read_csv(kept)

    def summary(self):
        """What the committed runs say (:func:`fedlib.claims.summary_markdown`), for the top of the
        notebook, as Markdown; a run at other parameters than the defaults (its figures not in
        ``figures/<notebook>``) is told first that this is not what it computes."""
        from IPython.display import Markdown

        from . import claims
        text = claims.summary_markdown(self.name)
        if Path(self.out_dir) != Path("figures") / self.name:
            text = (f"*This run's parameters differ from the defaults, so the summary below is of the "
                    f"committed runs, not of this run: this run's claims are checked at the end and saved "
                    f"in `{self.out_dir}/claims.md`.*\n\n" + text)
        return Markdown(text)

    def claims(self, rows, paper: str, setting: Sequence[str] = ()) -> pd.DataFrame:
        """The notebook's claim rows as a :func:`fedlib.claims.claims_table`, saved as ``claims``
        and put into the ledger of all notebooks (:func:`fedlib.claims.update_ledger`) under this
        notebook and ``paper``; ``setting`` names the table's context columns."""
        from . import claims
        table = self.table(claims.claims_table(rows), "claims")
        claims.update_ledger(table, self.name, paper, self.out_dir, setting=setting)
        return table


def notebook_runs(notebook: str, params: dict, out_dir: str = "") -> NotebookRuns:
    """The set-up shared by the deep-learning notebooks, from their parameters ``params``
    (``globals()``: ``profile``, ``stand_in_rounds``, ``workers``, ``progress``): the seaborn
    style, pandas showing tables whole (no column, cell or row cut to "..."), a checked profile,
    the output folder and the store (a temporary one for smoke runs and stand-in tests, which
    leave nothing behind)."""
    from . import plotting
    plotting.set_style()
    for option in ("display.max_columns", "display.max_colwidth", "display.max_rows"):
        pd.set_option(option, None)                  # tables whole: no column, cell or row cut to "..."
    if not isinstance(params, dict) or "profile" not in params:
        raise InputError(f"params: must be the notebook's parameters (its globals(), with profile), got "
                         f"{type(params).__name__} without profile")
    profile = check_profile(params["profile"])
    stand_in = check_stand_in(params.get("stand_in_rounds", 0))
    workers = check_int("workers", params.get("workers", 1), 1)
    progress = params.get("progress", False)
    if not isinstance(progress, bool):
        raise InputError(f"progress: must be True or False, got {progress!r}")
    store = notebook_store(notebook, profile, committed=stand_in == 0)
    return NotebookRuns(notebook_output_dir(notebook, params, out_dir), store, workers, progress, notebook)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
