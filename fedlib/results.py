"""Results store and sweeps: every run computed once, stored as small human-diffable files,
loaded by every notebook that needs it, verifiable by replaying its first rounds.

A store is a folder (by convention ``results/<notebook>/<profile>/``, see :func:`store_path`);
one entry per run, a sub-folder named by :meth:`ExperimentConfig.key`::

    <key>/config.json    the config (ExperimentConfig.to_dict())
    <key>/history.csv    every evaluated round (round, metrics, uplink, downlink, seconds, ...)
    <key>/meta.json      status (ok / diverged / error), error text or divergence round,
                         fedlib and torch versions, git commit, device, wall time, date, rows
    <key>/params.npy     the final model, only when asked for (``save_params=True``)

Entries are written into a temporary folder and renamed into place, so a worker killed mid-way
leaves no partial entry, and several workers (processes, Dask or SLURM jobs) can share one
store folder. A truncated or unreadable entry is reported by name and recomputed.

::

    configs = fedlib.grid(base, algorithm=["fedavg", "fedsum"], seed=[0, 1])
    df = fedlib.sweep(configs, store="results/02_fedsum_main/quick")
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime as _dt
import functools
import hashlib
import itertools
import json
import math
import os
import platform
import shutil
import subprocess
import tempfile
import time
import traceback
import uuid
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from . import __version__, arithmetic
from .data import DataNotFoundError
from .experiment import ExperimentConfig, Result, run_config

__all__ = ["DASK_WORKER_ENV", "PROFILES", "TIMING_COLUMNS", "Entry", "NotebookRuns", "Store", "VerifyReport",
           "check_profile", "finals", "grid", "notebook_runs", "notebook_store", "require_ok", "store_path",
           "stored_arithmetic", "stored_configs", "sweep", "verify"]

#: the profiles of the deep-learning notebooks (DEVELOPERS.md): every code path on tiny settings,
#: reduced real-MNIST runs committed in a store, the papers' exact settings
PROFILES = ("smoke", "quick", "paper")
#: history columns that measure time (they differ between two runs of the same config)
TIMING_COLUMNS = ("seconds", "eval_seconds")


#: environment for Dask worker processes running fedlib on CPUs: Dask's default also sets
#: ``MALLOC_TRIM_THRESHOLD_=65536``, which turns off glibc's adaptive mmap threshold and makes torch's
#: CPU training about 2x slower (measured in ``benchmarks/sweep.py``); use
#: ``dask.config.set({"distributed.nanny.pre-spawn-environ": fedlib.results.DASK_WORKER_ENV})``
#: before starting the workers.
DASK_WORKER_ENV = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}


def check_profile(profile: str) -> str:
    """``profile`` if it is one of :data:`PROFILES`, else a ValueError naming the choices."""
    if profile not in PROFILES:
        raise ValueError(f"profile: must be one of {', '.join(PROFILES)}; got {profile!r}")
    return profile


def store_path(notebook: str, profile: str, root: str | os.PathLike | None = None) -> Path:
    """``<root>/results/<notebook>/<profile>`` (root: the project folder). The stores of the
    ``quick`` profile are committed in git; the others are ignored caches."""
    from .plotting import project_root
    return Path(root or project_root()) / "results" / notebook / check_profile(profile)


def notebook_store(notebook: str, profile: str, committed: bool = True) -> Path:
    """Where a notebook keeps its runs, created if missing: :func:`store_path` for a store that
    is kept (the quick profile's is committed), else a new temporary folder (smoke runs and
    stand-in tests leave nothing behind)."""
    if committed and check_profile(profile) != "smoke":
        path = store_path(notebook, profile)
        path.mkdir(parents=True, exist_ok=True)
        return path
    import tempfile
    return Path(tempfile.mkdtemp(prefix=f"fedlib-{notebook}-{check_profile(profile)}-"))


@dataclass(frozen=True)
class NotebookRuns:
    """What a deep-learning notebook sets up from its parameters (see :func:`notebook_runs`).

    Attributes:
        out_dir: where its figures and tables go (:func:`fedlib.plotting.notebook_output_dir`).
        store: where its runs are kept (:func:`notebook_store`).
        workers: worker processes computing missing runs (1: in the kernel).
        progress: progress bars of the sweeps.
    """

    out_dir: str
    store: Path
    workers: int = 1
    progress: bool = False

    def compute(self, configs: Iterable[ExperimentConfig]) -> pd.DataFrame:
        """Load or compute ``configs`` in the store (``workers`` processes with one thread
        each) and return their histories; a run that failed raises (:func:`require_ok`)."""
        return require_ok(sweep(list(configs), self.store, progress=self.progress, workers=self.workers))


def notebook_runs(notebook: str, params: dict, out_dir: str = "") -> NotebookRuns:
    """The set-up shared by the deep-learning notebooks, from their parameters ``params``
    (``globals()``: ``profile``, ``stand_in_rounds``, ``workers``, ``progress``): the seaborn
    style, a checked profile, the output folder and the store (a temporary one for smoke runs
    and stand-in tests, which leave nothing behind)."""
    from . import plotting
    plotting.set_style()
    profile = check_profile(params["profile"])
    return NotebookRuns(plotting.notebook_output_dir(notebook, params, out_dir),
                        notebook_store(notebook, profile, committed=params.get("stand_in_rounds", 0) == 0),
                        int(params.get("workers", 1)), bool(params.get("progress", False)))


def grid(base: ExperimentConfig, **axes: Iterable) -> list[ExperimentConfig]:
    """The product of ``axes`` over ``base``: ``grid(base, algorithm=[...], seed=[0, 1])``.

    An axis is a config field, or ``<args field>.<name>`` to vary one argument, e.g.
    ``**{"participation_args.p": [0.1, 0.5]}`` or ``{"algorithm_args.clip": [None, 0.5]}``.
    A value of ``None`` for an argument removes it (the builder's default applies). The first
    axis varies slowest.
    """
    names = {f.name for f in fields(ExperimentConfig)}
    for axis in axes:
        head = axis.split(".", 1)[0]
        if head not in names or ("." in axis) != head.endswith("_args"):
            raise ValueError(f"{axis}: not an axis of grid; use a field of ExperimentConfig "
                             f"({', '.join(sorted(names))}) or '<*_args>.<name>'")
    out = []
    values = [list(v) for v in axes.values()]
    for combo in itertools.product(*values):
        d = base.to_dict()
        for axis, v in zip(axes, combo, strict=True):
            if "." in axis:
                head, arg = axis.split(".", 1)
                d[head] = dict(d[head])
                if v is None:
                    d[head].pop(arg, None)
                else:
                    d[head][arg] = v
            else:
                d[axis] = v
        out.append(ExperimentConfig.from_dict(d))
    return out


# --------------------------------------------------------------------------------------------
# Entries
# --------------------------------------------------------------------------------------------
@dataclass
class Entry:
    """One stored run.

    Attributes:
        config: its config.
        history: evaluated rounds (empty for a run that raised).
        meta: status (``ok`` / ``diverged`` / ``error``), ``error``, ``diverged_at``, versions,
            git commit, device, ``wall_seconds``, ``eval_fraction``, ``date``, ``rows``.
        path: the entry's folder.
    """

    config: ExperimentConfig
    history: pd.DataFrame
    meta: dict
    path: Path

    @property
    def status(self) -> str:
        return self.meta["status"]

    def params(self) -> torch.Tensor | None:
        """The final model if it was saved (``save_params=True``), else None."""
        f = self.path / "params.npy"
        return torch.from_numpy(np.load(f, allow_pickle=False)) if f.exists() else None


class CorruptEntry(Exception):
    """An entry folder that cannot be read back (reported by name, then recomputed)."""


class EditedEntry(CorruptEntry):
    """An entry whose files no longer match the content digests sealed in its ``meta.json``."""


#: the files of an entry that its ``meta.json`` seals with a content digest (params.npy when saved)
SEALED_FILES = ("config.json", "history.csv", "params.npy")


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def entry_digests(folder: str | os.PathLike) -> dict[str, str]:
    """The content digests of an entry folder's sealed files (:data:`SEALED_FILES` present)."""
    d = Path(folder)
    return {name: _digest(d / name) for name in SEALED_FILES if (d / name).is_file()}


def digest_problems(folder: str | os.PathLike, meta: dict) -> list[str]:
    """What differs between an entry's files and the digests sealed in its ``meta``: one line
    per file edited, added or removed since it was stored; empty when they match (or when the
    entry was never sealed: see :meth:`Store.seal`)."""
    sealed = meta.get("digests")
    if not sealed:
        return []
    now = entry_digests(folder)
    out = []
    for name in SEALED_FILES:
        if name in sealed and name not in now:
            out.append(f"{name} was removed")
        elif name in now and name not in sealed:
            out.append(f"{name} was added")
        elif name in now and now[name] != sealed[name]:
            out.append(f"{name} was edited (its content digest differs from the one sealed in meta.json)")
    return out


def _read_history(d: Path, meta: dict) -> pd.DataFrame:
    """``history.csv`` with the columns ``meta.json`` lists (when it lists them) and numbers
    only; anything else is a :class:`CorruptEntry` naming the entry, the column and the value."""
    hist = pd.read_csv(d / "history.csv")
    expected = meta.get("columns")
    if expected is not None and list(hist.columns) != list(expected):
        missing = [c for c in expected if c not in hist.columns]
        extra = [c for c in hist.columns if c not in expected]
        what = (f"column {missing[0]!r} is missing" if missing else f"column {extra[0]!r} is not one it was "
                f"stored with" if extra else "its columns are in another order")
        raise CorruptEntry(f"{d}: history.csv: {what} (meta.json lists {', '.join(expected)})")
    if "round" not in hist.columns:
        raise CorruptEntry(f"{d}: history.csv: column 'round' is missing")
    for c in hist.columns:
        if not pd.api.types.is_numeric_dtype(hist[c]):
            num = pd.to_numeric(hist[c], errors="coerce")
            bad = np.flatnonzero(num.isna() & hist[c].notna())
            if not len(bad):                             # empty (a failed run's history): no value to blame
                hist[c] = num.astype(float)
                continue
            i = int(bad[0])
            raise CorruptEntry(f"{d}: history.csv: column {c!r} holds {hist[c].iloc[i]!r} in row {i} "
                               f"(round {hist['round'].iloc[i]}), not a number")
    return hist


@functools.lru_cache(maxsize=1)
def _git_commit() -> str | None:
    from .plotting import project_root
    try:
        root = project_root(Path(__file__).parent)
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10)
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "fedlib"],
                               cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class Store:
    """A folder of stored runs (see the module docstring).

    Args:
        path: the folder (created on first use).

    Raises:
        ValueError: the folder cannot be created or written (checked at once).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self.path, prefix=".probe-")
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            raise ValueError(f"store: cannot write to {self.path} ({e.strerror or e})") from None
        #: entries :meth:`get` refused, by key, with the reason (edited, unreadable)
        self.rejected: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r}, entries={len(self.keys())})"

    def keys(self) -> list[str]:
        """Keys of the complete entries (folders with a meta.json)."""
        return sorted(p.name for p in self.path.iterdir()
                      if p.is_dir() and not p.name.startswith(".") and (p / "meta.json").exists())

    def checkpoint_path(self, config: ExperimentConfig) -> Path:
        """Where a long run of ``config`` keeps its checkpoint (ignored by git)."""
        return self.path / ".checkpoints" / f"{config.key()}.pt"

    # -- reading ------------------------------------------------------------------------------
    def read(self, key: str, check_digests: bool = True) -> Entry:
        """The entry ``key``; :class:`CorruptEntry` if it cannot be read back whole, with the
        columns it was stored with and numbers only; :class:`EditedEntry` if a file differs from
        the digest sealed in its meta.json (``check_digests=False`` skips that, for sealing)."""
        d = self.path / key
        try:
            meta = json.loads((d / "meta.json").read_text())
            if not isinstance(meta, dict):
                raise ValueError("meta.json does not hold an object")
            edits = digest_problems(d, meta) if check_digests else []
            if edits:
                raise EditedEntry(f"{d}: {'; '.join(edits)}; fedlib does not load it as data (recompute it; "
                                  "if fedlib itself rewrote it, re-seal it: python -m fedlib seal --force)")
            config = ExperimentConfig.from_dict(json.loads((d / "config.json").read_text()))
            hist = _read_history(d, meta)
        except CorruptEntry:
            raise
        except (OSError, ValueError, TypeError, KeyError, pd.errors.ParserError) as e:
            raise CorruptEntry(f"{d}: {type(e).__name__}: {e}") from None
        if config.key() != key:
            raise CorruptEntry(f"{d}: its config has key {config.key()}, not {key}")
        if meta.get("status") not in ("ok", "diverged", "error") or len(hist) != meta.get("rows"):
            raise CorruptEntry(f"{d}: history has {len(hist)} rows, meta.json says {meta.get('rows')}")
        return Entry(config, hist, meta, d)

    def get(self, config: ExperimentConfig) -> Entry | None:
        """The entry of ``config``, or None when absent. A corrupt entry is reported (warning
        naming its folder) and treated as absent."""
        key = config.key()
        if not (self.path / key / "meta.json").exists():
            if (self.path / key).exists():
                warnings.warn(f"store: incomplete entry {self.path / key} (no meta.json); it will be "
                              "recomputed", RuntimeWarning, stacklevel=2)
            return None
        try:
            return self.read(key)
        except CorruptEntry as e:
            kind = "edited" if isinstance(e, EditedEntry) else "unreadable"
            self.rejected[key] = f"{kind} entry {e}"
            warnings.warn(f"store: {kind} entry {e}; it is not loaded, and it is recomputed where "
                          "computing is allowed", RuntimeWarning, stacklevel=2)
            return None

    # -- writing ------------------------------------------------------------------------------
    def write(self, config: ExperimentConfig, result: Result | None, meta: dict,
              save_params: bool = False) -> Entry:
        """Write an entry atomically (temporary folder renamed into place)."""
        key = config.key()
        tmp = self.path / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            hist = result.history if result is not None else pd.DataFrame({"round": []})
            (tmp / "config.json").write_text(json.dumps(config.to_dict(), indent=1, sort_keys=True) + "\n")
            hist.to_csv(tmp / "history.csv", index=False)
            if save_params and result is not None:
                np.save(tmp / "params.npy", result.params.detach().cpu().numpy(), allow_pickle=False)
            meta = {**meta, "rows": len(hist), "columns": [str(c) for c in hist.columns],
                    "digests": entry_digests(tmp)}
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n")
            final = self.path / key
            if final.exists():                      # a corrupt or stale entry being replaced
                shutil.rmtree(final, ignore_errors=True)
            try:
                os.rename(tmp, final)
            except OSError:                         # another worker finished the same run first
                if not (final / "meta.json").exists():
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return self.read(key)

    def compute(self, config: ExperimentConfig, device: str | None = None, progress: bool = False,
                checkpoint_every: int | None = 50, save_params: bool = False) -> Entry:
        """Run ``config`` and store it: a run that raises is stored with status ``error`` and its
        traceback, a diverged one with status ``diverged`` and its round."""
        x0 = self._warmup_model(config)
        ckpt = self.checkpoint_path(config) if checkpoint_every else None
        t0 = time.perf_counter()
        date = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        result, error = None, None
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*diverged.*", category=RuntimeWarning)
                result = run_config(config, device=device, progress=progress, checkpoint=ckpt,
                                    checkpoint_every=checkpoint_every or 1, x0=x0)
        except DataNotFoundError:
            raise               # the machine lacks the data: not a property of the run, store nothing
        except Exception as e:  # noqa: BLE001 - stored as an error entry, the sweep goes on
            error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"
        wall = time.perf_counter() - t0
        h = result.history if result is not None else None
        eval_s = float(h["eval_seconds"].iloc[-1]) if h is not None and "eval_seconds" in h else 0.0
        run_s = float(h["seconds"].iloc[-1]) if h is not None and len(h) else wall
        meta = {
            "status": "error" if error else ("diverged" if result.diverged else "ok"),
            "error": error, "diverged_at": None if error else result.info.get("diverged_at"),
            "fedlib": __version__, "git_commit": _git_commit(), "torch": torch.__version__,
            "python": platform.python_version(), "device": str(device or (
                result.params.device if result is not None else "cpu")),
            "cpu": _cpu_name(), "torch_threads": torch.get_num_threads(), "date": date,
            "arithmetic": arithmetic.current(device or (result.params.device if result else "cpu")),
            "anchor": result.info.get("anchor") if result is not None else None,
            "malloc_trim_threshold": os.environ.get("MALLOC_TRIM_THRESHOLD_"),
            "wall_seconds": round(wall, 3), "run_seconds": round(run_s, 3),
            "eval_fraction": round(eval_s / run_s, 4) if run_s > 0 else None,
        }
        entry = self.write(config, result, meta, save_params=save_params)
        if ckpt is not None and ckpt.exists():
            ckpt.unlink()
            try:
                ckpt.parent.rmdir()              # only when no other run is checkpointing
            except OSError:
                pass
        return entry

    def _warmup_model(self, config: ExperimentConfig) -> torch.Tensor | None:
        """The final model of ``config``'s warm-up, from this store (None without a warm-up)."""
        warm = config.warmup()
        if warm is None:
            return None
        entry = self.get(warm)
        params = entry.params() if entry is not None and entry.status == "ok" else None
        if params is None:
            raise ValueError(f"init_from: the warm-up run {warm.key()} is not in {self.path} with its final "
                             "model (status ok, params.npy); fedlib.sweep computes warm-ups first")
        return params

    def get_or_run(self, config: ExperimentConfig, device: str | None = None, progress: bool = False,
                   save_params: bool = False) -> Result:
        """A :class:`Result` for ``config``: loaded when stored (with its params if they were
        saved and ``save_params``), else computed and stored."""
        config.validate()
        entry = self.get(config)
        if entry is None or (save_params and entry.params() is None):
            entry = self.compute(config, device=device, progress=progress, save_params=save_params)
        if entry.status == "error":
            raise RuntimeError(f"{config.algorithm}: the stored run {entry.path} failed: "
                               f"{entry.meta['error'].splitlines()[0]}")
        params = entry.params()
        return Result(entry.history, params if params is not None else torch.empty(0),
                      entry.status == "diverged", {**entry.meta, "config": config.to_dict()})


    def seal(self, keys: Iterable[str] | None = None, force: bool = False) -> dict[str, str]:
        """Record in each entry's meta.json the content digests of its files (and its history's
        columns), so that later edits are caught when it is read (:class:`EditedEntry`).

        For entries stored before fedlib sealed them, and for entries that fedlib itself
        rewrote (a migration): nobody needs to hand-edit a digest. Idempotent: an entry already
        sealed and unchanged is left byte for byte as it is. Each entry must still read back
        whole (strict columns and numbers).

        Args:
            keys: the entries to seal (default: all).
            force: also re-seal entries whose files differ from their sealed digests (only for
                files fedlib rewrote; an edit by hand should be recomputed instead).

        Returns:
            ``{key: outcome}``: ``sealed``, ``unchanged``, ``edited: ...`` (left alone without
            ``force``) or ``unreadable: ...``.
        """
        out = {}
        for key in (self.keys() if keys is None else list(keys)):
            d = self.path / key
            try:
                entry = self.read(key, check_digests=False)
            except CorruptEntry as e:
                out[key] = f"unreadable: {e}"
                continue
            edits = digest_problems(d, entry.meta)
            if edits and not force:
                out[key] = "edited: " + "; ".join(edits)
                continue
            meta = {**entry.meta, "columns": [str(c) for c in entry.history.columns],
                    "digests": entry_digests(d)}
            if meta == entry.meta:
                out[key] = "unchanged"
                continue
            tmp = d / f".meta-{uuid.uuid4().hex[:8]}.json"
            tmp.write_text(json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n")
            os.replace(tmp, d / "meta.json")
            out[key] = "sealed"
        return out


def _compute_in_worker(store: str, config: dict, device: str | None, checkpoint_every: int | None,
                       torch_threads: int | None, save_params: bool = False) -> dict:
    """What a worker process runs: compute one config into the shared store folder."""
    if torch_threads:
        torch.set_num_threads(torch_threads)
    if "MALLOC_TRIM_THRESHOLD_" in os.environ:
        warnings.warn("fedlib: MALLOC_TRIM_THRESHOLD_ is set in this worker (Dask's default); torch CPU "
                      "training runs about 2x slower; start Dask workers with "
                      "fedlib.results.DASK_WORKER_ENV (see the README)", RuntimeWarning, stacklevel=1)
    cfg = ExperimentConfig.from_dict(config)
    entry = Store(store).compute(cfg, device=device, checkpoint_every=checkpoint_every,
                                 save_params=save_params)
    return {"key": entry.path.name, "status": entry.status}


# --------------------------------------------------------------------------------------------
# Sweeps
# --------------------------------------------------------------------------------------------
def _config_columns(config: ExperimentConfig) -> dict:
    out = {}
    for k, v in config.to_dict().items():
        if isinstance(v, dict):
            for name, x in sorted(v.items()):
                out[f"{k}.{name}"] = json.dumps(x) if isinstance(x, (list, dict)) else x
        else:
            out[k] = v
    return out


def _frame(entry: Entry | None, config: ExperimentConfig, error: str | None = None) -> pd.DataFrame:
    cols = {**_config_columns(config), "key": config.key()}
    if entry is None:
        hist = pd.DataFrame({"round": [np.nan]})
        status, err, div = "error", error, None
    else:
        hist = entry.history if len(entry.history) else pd.DataFrame({"round": [np.nan]})
        status, err, div = entry.status, entry.meta.get("error"), entry.meta.get("diverged_at")
    meta = pd.DataFrame({**cols, "status": status, "error": err, "diverged_at": div}, index=hist.index)
    return pd.concat([meta, hist], axis=1)


def sweep(configs: Iterable[ExperimentConfig], store: str | os.PathLike | Store,
          executor: cf.Executor | None = None, progress: bool = True, device: str | None = None,
          checkpoint_every: int | None = 50, torch_threads: int | None = None,
          retry_errors: bool = False, compute: bool | None = None,
          workers: int | None = None) -> pd.DataFrame:
    """Run every config at most once and return all histories as one tidy frame.

    Args:
        configs: :class:`ExperimentConfig` objects (duplicates run once; see :func:`grid`).
        store: a :class:`Store` or its folder. Entries already there are loaded, not
            recomputed, so an interrupted sweep resumes where it stopped and notebooks that
            need the same run share it.
        executor: any ``concurrent.futures.Executor``: None runs in-process;
            ``ProcessPoolExecutor(n)`` uses local cores; ``distributed.Client(...).get_executor()``
            a Dask cluster; submitit's executor a SLURM cluster. Workers write entries to the
            store folder themselves (it must be shared by them).
        progress: a tqdm bar over runs (done / loaded / failed).
        device: where runs compute (not part of the key; recorded in each entry's meta).
        checkpoint_every: long runs checkpoint every this many rounds under
            ``<store>/.checkpoints/`` and resume from there if killed; None: no checkpoints.
        torch_threads: intra-op threads per worker process (e.g. 1 with
            ``ProcessPoolExecutor(2)`` on 2 cores); None leaves torch's default.
        retry_errors: recompute entries stored with status ``error``.
        compute: False refuses to compute (a missing run is an error naming how many are
            missing and the store); default: True unless the environment sets
            ``FEDLIB_NO_COMPUTE=1`` (as ``make test`` does, so nbval never trains silently).
        workers: without an ``executor``, compute missing runs in this many local processes
            (started with "spawn", one torch thread each unless ``torch_threads`` says
            otherwise); None or 1: in this process. On small CNNs two processes with one
            thread each beat one process with two threads (``benchmarks/sweep.py``).

    Returns:
        One row per evaluated round per run: the config's fields (arguments as
        ``<field>.<name>`` columns), ``key``, ``status`` (ok / diverged / error), ``error``,
        ``diverged_at``, then the history columns. A run that raised has one row with
        ``round`` NaN. Runs appear in the order of ``configs``.

    Raises:
        ValueError: an invalid config (naming its index and field) before anything runs; an
            unwritable store; missing runs with ``compute=False``.
    """
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers: must be a positive integer or None, got {workers!r}")
    if workers is not None and workers > 1 and executor is not None:
        raise ValueError("workers: give either workers (local processes) or an executor, not both")
    if workers is not None and workers > 1:
        import multiprocessing
        with cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            return sweep(configs, store, executor=pool, progress=progress, device=device,
                         checkpoint_every=checkpoint_every,
                         torch_threads=1 if torch_threads is None else torch_threads,
                         retry_errors=retry_errors, compute=compute)
    configs = list(configs)
    for i, c in enumerate(configs):
        if not isinstance(c, ExperimentConfig):
            raise ValueError(f"configs[{i}]: expected an ExperimentConfig, got {type(c).__name__}")
        c.validate(where=f"configs[{i}]")
    st = store if isinstance(store, Store) else Store(store)
    if compute is None:
        compute = os.environ.get("FEDLIB_NO_COMPUTE", "") not in ("1", "true", "yes")
    unique = list({c.key(): c for c in configs}.values())
    # warm-ups (init_from) run first, once, with their final model kept
    depth: dict[str, int] = {}
    warm_keys: set[str] = set()
    pending = list(unique)
    known = {c.key(): c for c in unique}
    while pending:
        c = pending.pop()
        w = c.warmup()
        if w is not None:
            warm_keys.add(w.key())
            if w.key() not in known:
                known[w.key()] = w
                pending.append(w)

    def level(c: ExperimentConfig) -> int:
        if c.key() not in depth:
            w = c.warmup()
            depth[c.key()] = 0 if w is None else 1 + level(w)
        return depth[c.key()]
    entries: dict[str, Entry] = {}
    for c in known.values():
        e = st.get(c)
        if e is not None and not (retry_errors and e.status == "error") \
                and not (c.key() in warm_keys and e.status == "ok" and e.params() is None):
            entries[c.key()] = e
    todo = sorted((c for c in known.values() if c.key() not in entries), key=level)
    if todo and not compute:
        refused = [st.rejected[c.key()] for c in todo if c.key() in st.rejected]
        raise ValueError(f"store: {st.path} lacks {len(todo)} of {len(known)} runs (first: "
                         f"{todo[0].key()}) and computing is off (compute=False or FEDLIB_NO_COMPUTE=1); "
                         "compute them with the notebook's `make results` target"
                         + (f"; {len(refused)} of them are stored but were refused: {refused[0]}" if refused
                            else ""))
    failed: dict[str, str] = {}
    counts = {"loaded": len(entries), "done": 0, "failed": 0}
    bar = tqdm(total=len(known), initial=len(entries), disable=not progress, desc="runs", unit="run")
    bar.set_postfix(counts)

    def finished(c: ExperimentConfig, entry: Entry | None, err: str | None) -> None:
        if entry is not None:
            entries[c.key()] = entry
        else:
            failed[c.key()] = err
        bad = entry is None or entry.status != "ok"
        counts["failed" if bad else "done"] += 1
        bar.update(1)
        bar.set_postfix(counts)

    for lev in sorted({level(c) for c in todo}):
        batch = [c for c in todo if level(c) == lev]
        ready = [c for c in batch if c.warmup() is None or c.warmup().key() in entries
                 and entries[c.warmup().key()].status == "ok"]
        for c in batch:
            if c not in ready:
                finished(c, None, f"warm-up {c.warmup().key()} failed; this run was not started")
        if executor is None:
            for c in ready:
                if torch_threads:
                    torch.set_num_threads(torch_threads)
                finished(c, st.compute(c, device=device, checkpoint_every=checkpoint_every,
                                       save_params=c.key() in warm_keys), None)
        else:
            futures = {executor.submit(_compute_in_worker, str(st.path), c.to_dict(), device,
                                       checkpoint_every, torch_threads, c.key() in warm_keys): c
                       for c in ready}
            for fut in cf.as_completed(futures):
                c = futures[fut]
                try:
                    fut.result()
                    finished(c, st.read(c.key()), None)
                except Exception as e:  # noqa: BLE001 - a worker that died: reported in the frame
                    finished(c, None, f"worker failed: {type(e).__name__}: {e}")
    bar.close()
    frames = [_frame(entries.get(c.key()), c, failed.get(c.key())) for c in unique]
    return pd.concat(frames, ignore_index=True)


def require_ok(df: pd.DataFrame, allow_diverged: bool = True) -> pd.DataFrame:
    """``df`` (a :func:`sweep` frame) if no run failed, else a RuntimeError naming the failed
    runs and their errors (diverged runs pass unless ``allow_diverged=False``)."""
    bad_status = ("error",) if allow_diverged else ("error", "diverged")
    bad = df[df["status"].isin(bad_status)].drop_duplicates("key")
    if len(bad):
        lines = [f"{k}: {str(e).splitlines()[0] if isinstance(e, str) else s}"
                 for k, e, s in zip(bad["key"], bad["error"], bad["status"], strict=True)]
        raise RuntimeError(f"{len(bad)} run(s) failed: " + "; ".join(lines[:5]))
    return df


def finals(df: pd.DataFrame, last: int = 1) -> pd.DataFrame:
    """One row per run of a :func:`sweep` frame, indexed by ``key``: the mean of each history
    metric over its ``last`` evaluated rounds (1: the final evaluation), with ``round`` the last
    round. Pass the sweep's frame (columns a caller appends after the history are averaged too).

    A run that diverged or failed has no final value: its metrics are NaN (its history stops
    before the divergence, and the last values it had are not where it ended), and the column
    ``outcome`` says ``"ok"``, ``"diverged at round R"`` or ``"error"``.
    """
    if last < 1:
        raise ValueError(f"last: must be >= 1, got {last!r}")
    cols = list(df.columns)
    if "diverged_at" not in cols:
        raise ValueError("df: expected a frame of fedlib.sweep (it has no diverged_at column)")
    history = cols[cols.index("diverged_at") + 1:]             # the history columns follow the meta
    metrics = [c for c in history if c != "round" and c not in TIMING_COLUMNS
               and pd.api.types.is_numeric_dtype(df[c])]
    tail = df.sort_values("round").groupby("key", sort=False).tail(last)
    out = tail.groupby("key", sort=False)[metrics].mean()
    info = tail.groupby("key", sort=False)[["round", "status", "diverged_at"]].last()
    out = info.join(out)
    bad = out["status"] != "ok"
    out.loc[bad, metrics] = np.nan
    out["outcome"] = [("ok" if s == "ok" else f"diverged at round {int(d)}" if s == "diverged" and pd.notna(d)
                       else str(s)) for s, d in zip(out["status"], out["diverged_at"], strict=True)]
    return out


# --------------------------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------------------------
@dataclass
class VerifyReport:
    """Outcome of :func:`verify`.

    Attributes:
        key: the entry's key.
        rounds: rounds replayed (0: nothing was replayed).
        compared: evaluated rounds whose stored metrics were compared (the exact check only).
        mismatches: one row per (round, metric) outside the tolerance: stored, replayed,
            relative difference; anchor values appear as metrics ``anchor.step_norm`` /
            ``anchor.step_proj``.
        rtol, atol: the tolerance of the check that ran.
        check: ``"digest"`` (its files differ from their sealed digests: it fails without a
            replay), ``"exact"`` (the entry's arithmetic equals this replay's: its stored evaluations
            and anchor are compared at ``rtol``), ``"cross-cpu"`` (another arithmetic: only the
            anchor of the first rounds is compared, at :data:`fedlib.arithmetic.CROSS_RTOL`) or
            ``"none"`` (another arithmetic and no anchor: nothing can be checked).
        reason: why that check ran, naming both arithmetics when they differ.
        max_rel: the largest relative difference per metric compared.
    """

    key: str
    rounds: int
    compared: list[int]
    mismatches: pd.DataFrame
    rtol: float
    atol: float
    max_rel: dict[str, float] = field(default_factory=dict)
    check: str = "exact"
    reason: str = ""

    @property
    def status(self) -> str:
        """``reproduces``, ``differs`` or ``unchecked`` (no check could apply here)."""
        if self.check == "none":
            return "unchecked"
        if not self.mismatches.empty:
            return "differs"
        return "reproduces" if self.compared or "anchor" in " ".join(self.max_rel) else "unchecked"

    @property
    def ok(self) -> bool:
        return self.status == "reproduces"

    @property
    def failed(self) -> bool:
        return self.status == "differs"

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        what = {"exact": "exact check", "cross-cpu": "cross-CPU check", "none": "no check",
                "digest": "integrity check"}[self.check]
        if self.status == "unchecked":
            return f"{self.key}: not checked: {self.reason or f'nothing to compare in {self.rounds} rounds'}"
        if self.ok:
            worst = max(self.max_rel.values(), default=0.0)
            where = f"rounds {self.compared}" if self.compared else f"the anchor of rounds 1-{self.rounds}"
            return (f"{self.key}: reproduces ({what}) over {where} (max relative difference {worst:.2e}, "
                    f"tolerance rtol={self.rtol:g}, atol={self.atol:g}); {self.reason}")
        lines = [f"{self.key}: does NOT reproduce ({what}): {len(self.mismatches)} (round, metric) pairs "
                 f"differ beyond rtol={self.rtol:g}, atol={self.atol:g}; {self.reason}:"]
        for r in self.mismatches.head(20).itertuples():
            lines.append(f"  round {r.round}, {r.metric}: stored {r.stored!r}, replayed {r.replayed!r} "
                         f"(relative difference {r.rel_diff:.2e})")
        return "\n".join(lines)


def stored_arithmetic(entry: Entry) -> dict:
    """The arithmetic an entry was computed with: its ``meta.json`` record, or for entries stored
    before fedlib recorded it :data:`fedlib.arithmetic.LEGACY` (inferred) with the torch version
    and thread count the meta does record."""
    rec = entry.meta.get("arithmetic")
    if rec:
        return dict(rec)
    return {**arithmetic.LEGACY, "torch": entry.meta.get("torch"),
            "torch_threads": entry.meta.get("torch_threads")}


def _compare_metrics(stored: pd.DataFrame, replayed: pd.DataFrame, rounds: int, rtol: float,
                     atol: float) -> tuple[list[int], list[dict], dict[str, float]]:
    """Evaluated rounds compared, rows outside the tolerance, largest relative difference per metric."""
    have = set(replayed["round"].astype(int))
    compared = [int(r) for r in stored["round"].dropna() if r <= rounds and int(r) in have]
    metrics = [c for c in stored.columns if c not in ("round", *TIMING_COLUMNS) and c in replayed.columns]
    rows, max_rel = [], {}
    for r in compared:
        a = stored.loc[stored["round"] == r].iloc[0]
        b = replayed.loc[replayed["round"] == r].iloc[0]
        for m in metrics:
            x, y = float(a[m]), float(b[m])
            if math.isnan(x) and math.isnan(y):
                continue
            rel = abs(x - y) / max(abs(x), 1e-300) if x != y else 0.0
            max_rel[m] = max(max_rel.get(m, 0.0), rel if math.isfinite(rel) else math.inf)
            if not abs(x - y) <= atol + rtol * abs(x):
                rows.append({"round": r, "metric": m, "stored": x, "replayed": y, "rel_diff": rel})
    return compared, rows, max_rel


def verify(entry: Entry | str | os.PathLike, rounds: int | str | None = "auto", rtol: float = 1e-6,
           atol: float = 1e-9, device: str | None = None, check_digests: bool = True) -> VerifyReport:
    """Check a stored run: its files against their sealed digests, then a replay of its rounds
    with the check its arithmetic allows.

    * **Integrity**: the entry's ``config.json``, ``history.csv`` (and ``params.npy``) must match
      the content digests sealed in its ``meta.json`` (:meth:`Store.seal`); an edit anywhere in
      the stored history fails here, whatever rounds are replayed (check ``"digest"``).
    * **Exact check** (the replay computes with the entry's arithmetic: same device, torch
      build, instruction sets and thread count, see :mod:`fedlib.arithmetic`): every metric of
      every evaluated round replayed (timing columns excluded) and the anchor must agree to
      ``rtol`` (1e-6 by default: the same kernels give the same bits). The replay uses the
      entry's thread count.
    * **Cross-CPU check** (another arithmetic, e.g. stored on AVX-512, replayed on AVX2): the
      kernels round differently and a few rounds of SGD amplify that, so the stored
      evaluations cannot be expected; the first :data:`~fedlib.arithmetic.ANCHOR_ROUNDS` rounds
      are replayed and their anchor (displacement norm and projection, float64) compared at
      :data:`~fedlib.arithmetic.CROSS_RTOL`, which a changed rule, rate, schedule or seed fails.
    * **No check**: another arithmetic and no anchor: the report says so (status ``unchecked``)
      instead of failing. An entry stored before fedlib recorded arithmetic and anchors gets
      the exact check first: if it matches, it reproduces; if it does not and this machine's
      arithmetic is not the one assumed for such entries (:data:`fedlib.arithmetic.LEGACY`), the
      difference may come from the kernels alone and the entry is reported as unchecked.

    The replay uses the config's full participation schedule truncated to the rounds replayed (so
    it sees exactly the rounds the stored run saw).

    Args:
        entry: an :class:`Entry` or an entry folder.
        rounds: rounds to replay: ``"auto"`` (default) the first evaluated round after round 0
            and at least the anchor's rounds (the cross-CPU check: the anchor's rounds only);
            ``None`` the whole run; or a number.
        rtol, atol: the exact check's tolerance, |stored - replayed| <= atol + rtol * |stored|.
        device: where to replay.
        check_digests: check the files against their sealed digests first.

    Returns:
        A :class:`VerifyReport` (``status`` reproduces / differs / unchecked, ``check``,
        ``reason``; ``str()`` says which rounds and metrics differ and by how much).
    """
    if not isinstance(entry, Entry):
        p = Path(entry)
        if not (p / "meta.json").is_file():
            raise ValueError(f"entry: {p} is not a stored run (no meta.json there)")
        try:
            entry = Store(p.parent).read(p.name, check_digests=False)
        except CorruptEntry as e:
            raise ValueError(f"entry: {e}") from None
    if not (rounds is None or rounds == "auto" or (isinstance(rounds, int) and not isinstance(rounds, bool)
                                                   and rounds >= 1)):
        raise ValueError(f"rounds: must be 'auto', None (the whole run) or an int >= 1; got {rounds!r}")
    key = entry.path.name
    empty = pd.DataFrame(columns=_MISMATCH_COLUMNS)
    if check_digests:
        edits = digest_problems(entry.path, entry.meta)
        if edits:
            rows = [{"round": math.nan, "metric": f"file {e.split(' ', 1)[0]}", "stored": math.nan,
                     "replayed": math.nan, "rel_diff": math.inf} for e in edits]
            return VerifyReport(key, 0, [], pd.DataFrame(rows, columns=_MISMATCH_COLUMNS), rtol, atol,
                                check="digest", reason="; ".join(edits))
    sealed = "" if entry.meta.get("digests") or not check_digests else \
        " (not sealed: the stored files' integrity is not checked; python -m fedlib seal)"
    h = entry.history
    if entry.status == "error" or not len(h):
        raise ValueError(f"entry: {entry.path} holds a failed run; nothing to verify")
    stored = stored_arithmetic(entry)
    legacy = not entry.meta.get("arithmetic")
    anchor = arithmetic.Anchor.from_dict(entry.meta["anchor"]) if entry.meta.get("anchor") else None
    if anchor is not None and not anchor.rounds:
        anchor = None
    threads = stored.get("torch_threads")
    old_threads = torch.get_num_threads()
    replay_dev = device or "cpu"
    if threads and torch.device(replay_dev).type == "cpu":
        torch.set_num_threads(int(threads))
    try:
        here = arithmetic.current(replay_dev)
        same = arithmetic.signature(stored) == arithmetic.signature(here)
        differs = f"computed on {arithmetic.describe(stored)}, replayed on {arithmetic.describe(here)}"
        evaluated = [int(r) for r in h["round"].dropna()]
        if same or legacy:
            check = "exact"
            reason = (f"computed and replayed on {arithmetic.describe(here)}" if not legacy else
                      f"its arithmetic was not recorded; replayed on {arithmetic.describe(here)}")
            if rounds == "auto":
                later = [r for r in evaluated if r > 0]
                rounds = max(later[0] if later else 1, max(anchor.rounds) if anchor else 0)
        elif anchor is None:
            return VerifyReport(key, 0, [], empty, rtol, atol, check="none",
                                reason=f"{differs}: only the cross-CPU check can apply, and this entry has "
                                       f"no anchor (recomputing it adds one){sealed}")
        else:
            check, rtol, atol = "cross-cpu", arithmetic.CROSS_RTOL, 0.0
            reason = (f"{differs}: the kernels round differently, so only the anchor of the first rounds is "
                      "compared")
            rounds = max(anchor.rounds) if rounds == "auto" else rounds
        rounds = entry.config.rounds if rounds is None else min(int(rounds), entry.config.rounds)
        x0 = Store(entry.path.parent)._warmup_model(entry.config) if entry.config.init_from else None
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*diverged.*", category=RuntimeWarning)
            # a replay of the first rounds sees only some clients: not worth a warning
            warnings.filterwarnings("ignore", message="^participation: .* never active",
                                    category=RuntimeWarning)
            replay = run_config(entry.config, device=device, rounds=rounds, x0=x0)
    finally:
        torch.set_num_threads(old_threads)
    rows, max_rel, compared = [], {}, []
    if check == "exact":
        compared, rows, max_rel = _compare_metrics(h, replay.history, rounds, rtol, atol)
    if anchor is not None:
        got = arithmetic.Anchor.from_dict(replay.info["anchor"])
        keep = [i for i, r in enumerate(anchor.rounds) if r <= rounds]
        covered = arithmetic.Anchor(*(tuple(vals[i] for i in keep)
                                      for vals in (anchor.rounds, anchor.step_norm, anchor.step_proj)))
        for d in covered.compare(got, rtol=rtol):
            rows.append({"round": d["round"], "metric": f"anchor.{d['quantity']}", "stored": d["stored"],
                         "replayed": d["replayed"], "rel_diff": d["rel_diff"]})
        if covered.rounds:
            max_rel["anchor"] = covered.max_rel(got)
    if legacy and rows and not same:
        worst = max(rows, key=lambda r: r["rel_diff"])
        return VerifyReport(key, rounds, compared, empty, rtol, atol, max_rel, "none",
                            f"{differs}: the replay differs (up to {worst['rel_diff']:.1e}, round "
                            f"{worst['round']}, {worst['metric']}), which the kernels alone can cause; only "
                            f"the cross-CPU check could tell, and this entry has no anchor (recomputing it "
                            f"adds one){sealed}")
    return VerifyReport(key, rounds, compared, pd.DataFrame(rows, columns=_MISMATCH_COLUMNS), rtol, atol,
                        max_rel, check, reason + sealed)


_MISMATCH_COLUMNS = ["round", "metric", "stored", "replayed", "rel_diff"]


def stored_configs(store: str | os.PathLike) -> list[ExperimentConfig]:
    """The configs of every complete entry of a store folder."""
    st = Store(store)
    return [ExperimentConfig.from_dict(json.loads((st.path / k / "config.json").read_text()))
            for k in st.keys()]

