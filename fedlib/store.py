"""The results store: every run computed once into a folder of small, human-diffable, sealed files
(``config.json``, ``history.csv``, ``meta.json``, optionally ``params.npy``), with its provenance.

A store is a folder (by convention ``results/<notebook>/<profile>/``); one entry per run, a
sub-folder named by :meth:`ExperimentConfig.key`::

    <key>/config.json    the config (ExperimentConfig.to_dict())
    <key>/history.csv    every evaluated round (round, metrics, uplink, downlink, seconds, ...)
    <key>/meta.json      status (ok / diverged / error), error text or divergence round, versions,
                         git commit, arithmetic and replay anchor, wall time, date, the round
                         a resumed run's checkpoint had reached (``resumed_at``), the content
                         digests of the datasets it computed on (``data``), rows, the
                         history's columns, the content digests of the other files and
                         (``meta_digest``) the digest of its own other fields: every byte sealed
    <key>/params.npy     the final model, only when asked for (``save_params=True``)

Entries are written into a temporary folder and renamed into place, so a worker killed mid-way
leaves no partial entry, and several workers can share one store folder. A run that another writer
stored first keeps that writer's entry; an entry is replaced only where it is corrupt, stale, a failure or
lacks the model asked for, moved aside in one rename, so that a reader finds the old entry, the new
one or none (a reader caught in the middle of reading one is told it is unreadable). A truncated,
unreadable or edited entry is reported by name and never loaded as data. Two writers do not
compute one run at once: each claims a run's key before computing it (:mod:`fedlib.locks`), and
the second waits for the first's entry; a sweep starts the runs no other writer holds first.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
import traceback
import uuid
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from . import algorithms, arithmetic, locks
from ._validate import InputError, warn
from ._version import __version__
from .config import ExperimentConfig, Planned
from .data import DataNotFoundError
from .fingerprint import config_fingerprint, stale_parts
from .paths import fedlib_project, project_root
from .runner import CheckpointMismatch, Result, _device, run_config

__all__ = ["CorruptEntry", "EditedEntry", "Entry", "SEALED_FILES", "Store", "TIMING_COLUMNS",
           "META_SEAL", "digest_problems", "entry_digests", "meta_seal", "no_compute_env", "reseal",
           "run_cached", "write_meta"]


#: history columns that measure time (they differ between two runs of the same config)
TIMING_COLUMNS = ("seconds", "eval_seconds")


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


#: the field of ``meta.json`` that seals meta.json itself: the digest of every other field
META_SEAL = "meta_digest"


def meta_seal(meta: dict) -> str:
    """The content digest of an entry's ``meta`` (every field but :data:`META_SEAL` itself, as
    canonical JSON: sorted keys, values as ``meta.json`` writes them), so that status, timings,
    the code fingerprint and the file digests are sealed like the files they describe."""
    body = {k: v for k, v in meta.items() if k != META_SEAL}
    text = json.dumps(body, sort_keys=True, default=str, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _meta_text(meta: dict) -> str:
    return json.dumps({**meta, META_SEAL: meta_seal(meta)}, indent=1, sort_keys=True, default=str) + "\n"


def write_meta(folder: str | os.PathLike, meta: dict) -> None:
    """Write ``meta`` as the ``meta.json`` of the entry ``folder``, sealed (:func:`meta_seal`),
    atomically (a temporary file renamed into place). For code that changes an entry's meta after
    it was stored (renewing its code fingerprint, sealing): the new fields are sealed in turn."""
    d = Path(folder)
    tmp = d / f".meta-{uuid.uuid4().hex[:8]}.json"
    tmp.write_text(_meta_text(meta))
    os.replace(tmp, d / "meta.json")


def reseal(folder: str | os.PathLike) -> None:
    """Re-seal the ``meta.json`` of the entry ``folder`` as it is now (its digest of itself; the
    files' digests are left as they are, so an edited file is still caught)."""
    d = Path(folder)
    if not (d / "meta.json").is_file():
        raise InputError(f"folder: {d} is not a stored entry (no meta.json there)")
    write_meta(d, json.loads((d / "meta.json").read_text()))


def digest_problems(folder: str | os.PathLike, meta: dict) -> list[str]:
    """What differs between an entry's files and the digests sealed in its ``meta``: one line
    per file edited, added or removed since it was stored, and one if ``meta.json`` itself was
    edited (:data:`META_SEAL`); empty when they match (or when the entry was never sealed, or
    sealed before meta.json was: see :meth:`Store.seal`)."""
    out = []
    try:                                     # the file as it is on disk (``meta`` may be a copy in memory)
        disk = json.loads((Path(folder) / "meta.json").read_text())
    except (OSError, ValueError):
        disk = meta
    if isinstance(disk, dict) and META_SEAL in disk and disk[META_SEAL] != meta_seal(disk):
        out.append("meta.json was edited (its content digest differs from the one sealed in it)")
    sealed = meta.get("digests")
    if not sealed:
        return out
    now = entry_digests(folder)
    for name in SEALED_FILES:
        if name in sealed and name not in now:
            out.append(f"{name} was removed")
        elif name in now and name not in sealed:
            out.append(f"{name} was added")
        elif name in now and now[name] != sealed[name]:
            out.append(f"{name} was edited (its content digest differs from the one sealed in meta.json)")
    return out


def _portable(config: ExperimentConfig) -> ExperimentConfig:
    """``config`` as its entry stores it: a recorded trace named by a path gets the file's
    SHA-256 beside it (its key is the same: the key holds that digest, never the path), so that
    the entry reads, and its key is checked, from any working directory and on machines without
    the file; only computing the run again needs the file."""
    args = dict(config.participation_args)
    if config.participation == "recorded" and "path" in args and not args.get("sha256"):
        from .traces import file_sha256
        args["sha256"] = file_sha256(args["path"])
        return config.replace(participation_args=args)
    return config


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


def _keyed(config: ExperimentConfig | Planned) -> tuple[ExperimentConfig, str]:
    """The config and its key: a :class:`Planned` one's as planned, a plain one's computed here.

    Raises:
        InputError: ``config`` is neither (a key or a config's dict: ``Store.read(key)`` reads a
            key, ``ExperimentConfig.from_dict`` makes a config)."""
    if isinstance(config, Planned):
        return config.config, config.key
    if not isinstance(config, ExperimentConfig):
        hint = (" (Store.read(key) reads an entry by its key)" if isinstance(config, str) else
                " (ExperimentConfig.from_dict(d) makes one of a dict)" if isinstance(config, dict) else "")
        raise InputError(f"config: expected an ExperimentConfig, got {type(config).__name__}{hint}")
    return config, config.key()


#: the statuses of a stored run (its meta.json's ``status``)
STATUSES = ("ok", "diverged", "error")


def _check_written(config: ExperimentConfig, result: Result | None, meta: dict) -> None:
    """What :meth:`Store.write` can see for free: ``meta`` a dict with a status of
    :data:`STATUSES` (:func:`run_meta` makes it), ``result`` a :class:`Result` (None only for a
    run that failed) whose history ends inside ``config``'s rounds -- at them, for a run stored as
    ok -- and whose algorithm is ``config``'s. One InputError naming the field, before anything
    is written."""
    if not isinstance(meta, dict) or meta.get("status") not in STATUSES:
        got = meta.get("status") if isinstance(meta, dict) else type(meta).__name__
        raise InputError(f"meta: must be the dict fedlib.store.run_meta returns, with a status of "
                         f"{', '.join(STATUSES)}; got {got!r}")
    if result is None:
        if meta["status"] != "error":
            raise InputError(f"result: None is stored only for a run that failed (status error), got "
                             f"status {meta['status']!r}")
        return
    if not isinstance(result, Result):
        raise InputError(f"result: expected a fedlib Result (what fedlib.run returns) or None, got "
                         f"{type(result).__name__}")
    algo = result.info.get("algorithm")
    if isinstance(algo, str) and algo != config.algorithm:
        raise InputError(f"result: a run of algorithm {algo!r}, not of the config's {config.algorithm!r}")
    h = result.history
    last = int(h["round"].max()) if len(h) and "round" in h else 0
    if last > config.rounds or (meta["status"] == "ok" and last != config.rounds):
        raise InputError(f"result: its history ends at round {last}, the config runs {config.rounds} "
                         "rounds: not this config's run")


def equivalent_key(folder: Path, config: ExperimentConfig, key: str | None = None,
                   seen: dict[str, str | None] | None = None) -> str | None:
    """The key of a complete entry in the store ``folder`` of the same run as ``config`` written
    another way (an argument written out at its declared default in one and left out in the other:
    :meth:`ExperimentConfig.canonical`), or None. ``key``: ``config``'s own key, not counted
    (computed when not given). ``seen``: the canonical keys of the entries read so far, by folder
    name (None for one whose config cannot be read), filled in here; only entries of the same
    algorithm are read, and only their config (:meth:`Store.get` reads the one found in full)."""
    key = config.key() if key is None else key
    seen = {} if seen is None else seen
    target, prefix = None, f"{config.algorithm}-"
    if not folder.is_dir():
        return None
    for name in sorted(os.listdir(folder)):
        if name == key or not name.startswith(prefix):
            continue
        if name not in seen:
            if not (folder / name / "meta.json").is_file():         # not (yet) a complete entry
                continue
            try:
                stored = ExperimentConfig.from_dict(json.loads((folder / name / "config.json").read_text()))
                seen[name] = stored.canonical().key()
            except (OSError, ValueError, TypeError):
                seen[name] = None
        target = target or config.canonical().key()
        if seen[name] is not None and seen[name] == target:
            return name
    return None


class Store:
    """A folder of stored runs (see the module docstring).

    Args:
        path: the folder (created by the first entry or table written into it; ``~`` is the
            user's home).
        create: False: a folder that does not exist is not created but read as an empty,
            read-only store (a listing or a render that only reads must leave nothing behind).

    Raises:
        InputError: the folder cannot be created (no folder above it can be written), or exists
            but cannot be read (checked at once).
            A folder that exists but cannot be written is a read-only store: its entries read as
            usual (:attr:`writable` is False) and writing one raises naming the folder.
    """

    def __init__(self, path: str | os.PathLike, create: bool = True):
        if not isinstance(create, (bool, np.bool_)):
            raise InputError(f"create: must be True or False, got {type(create).__name__} {create!r}")
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path).strip():
            raise InputError(f"store: must be a folder path, new or existing, got {path!r} (an empty path "
                             "would be the current folder)")
        self.path = Path(path).expanduser()
        #: whether entries can be written here (False: a read-only store, e.g. a shared copy)
        self.writable = True
        if self.path.is_file():
            raise InputError(f"store: {self.path} is a file, not a store folder (a store is a folder of "
                             "stored runs; give a folder path, new or existing)")
        if (self.path / "meta.json").is_file():               # an entry's folder, as verify tells one
            raise InputError(f"store: {self.path} is one stored entry, not a store; its store is "
                             f"{self.path.parent}")
        if not create and not self.path.exists():
            self.writable, self._why = False, "it does not exist (opened to read only: create=False)"
        elif not create:                   # read only: ask the system, write no probe into the folder
            if not os.access(self.path, os.R_OK | os.X_OK):
                raise InputError(f"store: cannot read {self.path} (permission denied)")
            if not os.access(self.path, os.W_OK):
                self.writable, self._why = False, "permission denied"
        else:
            self._open()
        #: the canonical key (:meth:`ExperimentConfig.canonical`) of each entry read by
        #: :meth:`equivalent`, None for one whose config cannot be read
        self._canonical: dict[str, str | None] = {}
        #: entries :meth:`get` refused, by key, with the reason (edited, unreadable)
        self.rejected: dict[str, str] = {}
        #: entries :meth:`get` found whose algorithm, problem or participation code changed since they
        #: were stored
        self.stale: dict[str, str] = {}

    def _open(self) -> None:
        """Probe the folder: a ValueError if it cannot be read, or is missing and cannot be
        created; a folder that cannot be written is a read-only store (:attr:`writable`). A missing
        folder is created by the first write (:meth:`_ensure_folder`), so that a run that stops
        before storing anything (missing data) leaves no empty store behind."""
        if not self.path.is_dir():
            above = next(p for p in (self.path, *self.path.parents) if p.exists() or p == p.parent)
            if not above.is_dir() or not os.access(above, os.W_OK | os.X_OK):
                why = f"{above} is a file" if above.exists() and not above.is_dir() else \
                    f"{above} cannot be written: permission denied"
                raise InputError(f"store: cannot write to {self.path} ({why})")
            return
        try:
            fd, probe = tempfile.mkstemp(dir=self.path, prefix=".probe-")
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            if not os.access(self.path, os.R_OK | os.X_OK):
                raise InputError(f"store: cannot read {self.path} ({e.strerror or e})") from None
            self.writable, self._why = False, e.strerror or str(e)

    def require_writable(self, what: str = "") -> None:
        """Raise a ValueError naming the folder if this store is read-only (``what``: what needed
        the write, for the message)."""
        if not self.writable:
            need = f": {what}" if what else ""
            raise InputError(f"store: cannot write to {self.path} ({self._why}; a read-only store can be "
                             f"read, not added to){need}")

    def _ensure_folder(self) -> None:
        """The store's folder, created by its first write (not when opened, nor when a run or a
        table that may stop on missing data starts: :meth:`_open`)."""
        if not self.path.is_dir():
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise InputError(f"store: cannot write to {self.path} ({e.strerror or e})") from None

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r}, entries={len(self.keys())})"

    def keys(self) -> list[str]:
        """Keys of the complete entries (folders with a meta.json)."""
        if not self.path.is_dir():                        # a store opened with create=False
            return []
        return sorted(p.name for p in self.path.iterdir()
                      if p.is_dir() and not p.name.startswith(".") and (p / "meta.json").exists())

    def checkpoint_path(self, config: ExperimentConfig | Planned) -> Path:
        """Where a long run of ``config`` keeps its checkpoint (ignored by git)."""
        return self.path / ".checkpoints" / f"{_keyed(config)[1]}.pt"

    # -- reading ------------------------------------------------------------------------------
    def read(self, key: str, check_digests: bool = True,
             expected: ExperimentConfig | None = None) -> Entry:
        """The entry ``key``; :class:`CorruptEntry` if it cannot be read back whole, with the
        columns it was stored with and numbers only, or if its config's key is not ``key``;
        :class:`EditedEntry` if a file differs from the digest sealed in its meta.json
        (``check_digests=False`` skips that, for sealing). ``expected``: the config the caller
        keyed as ``key``; a stored config equal to it has that key and is not keyed again.
        A key with no entry folder at all is an InputError naming the store (absent, not corrupt)."""
        if not isinstance(key, str) or not key or "/" in key or key in (".", ".."):
            raise InputError(f"key: expected an entry's key (a folder name of the store, e.g. "
                             f"{(self.keys() or ['fedavg-0123456789abcdef'])[0]!r}), got {key!r}"
                             + (" (Store.get(config) reads a config's entry)"
                                if isinstance(key, (ExperimentConfig, Planned)) else ""))
        d = self.path / key
        if not d.exists():
            raise InputError(f"key: no entry {key!r} in store {self.path} (its keys: Store.keys())")
        try:
            meta = json.loads((d / "meta.json").read_text())
            if not isinstance(meta, dict):
                raise InputError("meta.json does not hold an object")
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
        if config != expected and (stored_key := config.key()) != key:
            raise CorruptEntry(f"{d}: its config has key {stored_key}, not {key}")
        if meta.get("status") not in ("ok", "diverged", "error") or len(hist) != meta.get("rows"):
            raise CorruptEntry(f"{d}: history has {len(hist)} rows, meta.json says {meta.get('rows')}")
        return Entry(config, hist, meta, d)

    def get(self, config: ExperimentConfig | Planned) -> Entry | None:
        """The entry of ``config``, or None when absent. An entry of the same run written another
        way (an argument written out at its default in one, left out in the other:
        :meth:`equivalent`) is ``config``'s. A corrupt entry is reported (warning naming its
        folder) and treated as absent; :attr:`rejected` and :attr:`stale` list it under
        ``config``'s key."""
        config, key = _keyed(config)
        folder = key
        if not (self.path / key / "meta.json").exists():
            folder = self.equivalent(config, key)
            if folder is None:
                if (self.path / key).exists():
                    warn(f"store: incomplete entry {self.path / key} (no meta.json); it will be "
                         "recomputed")
                return None
        try:
            entry = self.read(folder, expected=config)
        except CorruptEntry as e:
            kind = "edited" if isinstance(e, EditedEntry) else "unreadable"
            self.rejected[key] = f"{kind} entry {e}"
            warn(f"store: {kind} entry {e}; it is not loaded, and it is recomputed where "
                 "computing is allowed")
            return None
        _warn_if_partial(entry)
        parts = _stale(entry, config)
        if parts:
            names = {"algorithm": f"algorithm {config.algorithm!r}", "problem": f"problem {config.problem!r}",
                     "participation": f"participation kind {config.participation!r}"}
            what = " and ".join(names[p] for p in parts)
            self.stale[key] = (f"stale entry {entry.path}: the code of its {what} has changed since it "
                               "was stored")
            warn(f"store: {self.stale[key]}; it is recomputed where computing is allowed, else "
                 "loaded as it is")
        return entry

    def equivalent(self, config: ExperimentConfig, key: str | None = None) -> str | None:
        """:func:`equivalent_key` in this store (each entry's config read once per store object)."""
        return equivalent_key(self.path, config, key, self._canonical)

    def missing(self, configs: Iterable[ExperimentConfig | Planned]) -> list[ExperimentConfig | Planned]:
        """The configs of ``configs`` (an iterable of configs, or a dict keyed by them) the store
        holds no entry of (as :meth:`get` reads it: a corrupt entry counts as missing), in their
        order. Warm-ups are not added: a run stored without its warm-up is held.

        Raises:
            InputError: ``configs`` is not an iterable of configs (naming the first misfit).
        """
        one = (ExperimentConfig, Planned, str, bytes)             # a dict: its keys (config -> label)
        if isinstance(configs, one) or not hasattr(configs, "__iter__"):
            raise InputError(f"configs: expected an iterable of ExperimentConfig objects, got "
                             f"{type(configs).__name__}")
        configs = list(configs)
        for i, c in enumerate(configs):
            if not isinstance(c, (ExperimentConfig, Planned)):
                raise InputError(f"configs[{i}]: expected an ExperimentConfig, got {type(c).__name__}")
        return [c for c in configs if self.get(c) is None]

    # -- writing ------------------------------------------------------------------------------
    def write(self, config: ExperimentConfig | Planned, result: Result | None, meta: dict,
              save_params: bool = False) -> Entry:
        """Write an entry atomically (temporary folder renamed into place).

        Args:
            config: the run's config (its key names the entry).
            result: the run's :class:`Result`; None for a run that raised.
            meta: the record :func:`run_meta` makes of the run (status, code fingerprint, device,
                arithmetic, timings), with any fields of the caller's own.
            save_params: keep the final model (``params.npy``).

        Raises:
            InputError: ``meta`` without a status of :data:`STATUSES`; a result that cannot be
                ``config``'s run (another algorithm; a history past its rounds, or short of them
                for a run stored as ok). Nothing is written."""
        config, key = _keyed(config)
        _check_written(config, result, meta)
        self.require_writable()
        self._ensure_folder()
        tmp = self.path / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            hist = result.history if result is not None else pd.DataFrame({"round": []})
            (tmp / "config.json").write_text(json.dumps(_portable(config).to_dict(), indent=1, sort_keys=True)
                                             + "\n")
            hist.to_csv(tmp / "history.csv", index=False)
            if save_params and result is not None:
                np.save(tmp / "params.npy", result.params.detach().cpu().numpy(), allow_pickle=False)
            meta = {**meta, "rows": len(hist), "columns": [str(c) for c in hist.columns],
                    "digests": entry_digests(tmp)}
            (tmp / "meta.json").write_text(_meta_text(meta))
            kept = self._kept(key, config, meta["status"], save_params)
            if kept is not None:                    # another writer stored this run since it was planned
                return kept
            aside = _move_aside(self.path / key)
            if aside is not None and self._kept(aside.name, config, meta["status"], save_params) is not None:
                os.replace(aside, self.path / key)  # another writer's good entry came in between: it stays
                return self.read(key, expected=config)
            _replace(tmp, self.path / key, aside)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return self.read(key, expected=config)

    def _kept(self, key: str, config: ExperimentConfig, status: str, save_params: bool) -> Entry | None:
        """The entry already at ``key`` when a run about to be written there finds one as good as
        itself: another writer (a second sweep over the same configs, another worker) stored the
        same run after this one was planned, and it stays, so that no reader ever finds it
        removed. As good: readable, its code current, not a failure (a failure is replaced, by
        the new run's traceback where it failed again), with its final model where this run saves
        one; and a run that failed never replaces one that did not. None: nothing there, or an
        entry this run replaces."""
        if not (self.path / key / "meta.json").exists():
            return None
        try:
            entry = self.read(key, expected=config)
        except CorruptEntry:
            return None
        if _stale(entry, config):
            return None
        if entry.status == "error" or (save_params and not (entry.path / "params.npy").is_file()
                                       and status != "error"):
            return None
        return entry

    def compute(self, config: ExperimentConfig | Planned, device: str | None = None, progress: bool = False,
                checkpoint_every: int | None = 50, save_params: bool = False,
                engine: str | Any = "vectorized") -> Entry:
        """Run ``config`` and store it: a run that raises is stored with status ``error`` and its
        traceback, a diverged one with status ``diverged`` and its round. A :class:`Planned`
        config (a sweep's) is not validated or keyed again; a plain one is, here. ``engine``: as
        :func:`fedlib.run_config`'s (CUDA-graph steps: ``VectorizedEngine(graphs=True)``). On a
        GPU (``device``, else the problem's ``device``) the run computes under
        :func:`fedlib.arithmetic.verifiable`; a device this machine lacks is a ValueError naming
        the field, and nothing is stored (as for missing data). Where another writer stored the same
        run while this one computed, its entry is returned and this one dropped (:meth:`write`). A
        run resumes from its checkpoint
        only if the checkpoint was saved by the same code (:func:`_run`); running out of memory
        (``MemoryError``, ``torch.cuda.OutOfMemoryError``) is raised and nothing is stored: a property
        of the machine, as missing data is, not of the run.

        One writer computes a run at a time (:mod:`fedlib.locks`): the run's key is claimed first;
        where another writer (a second sweep, a campaign, another machine's worker on a shared
        folder) holds the claim, this call says so in a warning, waits for it, and returns that
        writer's entry (a failure too) rather than computing the run again. An entry already stored
        as good as this run would be (:meth:`_kept`: current code, not a failure, with its final
        model where ``save_params``) is returned without computing, as :meth:`write` would keep it,
        from a read-only store too."""
        if not isinstance(config, Planned):                    # validated and keyed here, before anything
            _keyed(config)
            config = Planned.of(config)
        _check_compute_switches(engine, checkpoint_every, progress, save_params)
        kept = self._kept(config.key, config.config, "ok", save_params)
        if kept is not None:                    # stored already (a read-only store returns it too)
            return kept
        self.require_writable(f"computing {config.key}")       # refused before the run, not after
        say = functools.partial(_say_waiting, config.key)
        with locks.claim(self.path, config.key, on_wait=say) as waited:
            kept = self._kept(config.key, config.config, "ok", save_params) or (
                self._failed_meanwhile(config) if waited is not None else None)
            if kept is not None:                # stored by the writer this call waited for
                return kept
            return self._compute_claimed(config, device, progress, checkpoint_every, save_params, engine)

    def _failed_meanwhile(self, config: Planned) -> Entry | None:
        """The failure (status ``error``) that the writer a :meth:`compute` waited for stored: the
        same run by the same code a moment ago, so it is the run's entry, not computed again (a
        sweep's ``retry_errors`` recomputes failures stored before it started)."""
        try:
            entry = self.read(config.key, expected=config.config)
        except (CorruptEntry, InputError):            # unreadable, or none (killed, out of memory)
            return None
        return entry if entry.status == "error" and not _stale(entry, config.config) else None

    def _compute_claimed(self, config: Planned, device: str | None, progress: bool,
                         checkpoint_every: int | None, save_params: bool, engine: str | Any) -> Entry:
        """:meth:`compute`'s run, its key claimed by this call."""
        plain = config.config
        x0 = self.warmup_model(config)
        ckpt = self.checkpoint_path(config) if checkpoint_every else None
        code = config_fingerprint(plain)         # before the run: its checkpoints record it too
        t0 = time.perf_counter()
        date = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        on = device or plain.arguments("problem_args").get("device")
        if on is not None:                         # a device this machine lacks (or a misnamed one):
            _device(on, field="device" if device else "config.problem_args.device")   # store nothing
        with arithmetic.verifiable(on):              # on a GPU: TF32 off, deterministic algorithms
            result, error = _run(config, ckpt, code, device=device, progress=progress,
                                 checkpoint_every=checkpoint_every or 1, x0=x0, engine=engine)
            ran_on = device or (result.params.device if result is not None else on) or "cpu"
            arith = arithmetic.current(ran_on)       # as computed: inside the scope
        meta = run_meta(result, error, code, ran_on, arith, engine, time.perf_counter() - t0, date)
        entry = self.write(config, result, meta, save_params=save_params)
        if ckpt is not None and ckpt.exists():
            ckpt.unlink(missing_ok=True)         # this run's own checkpoint, never another run's
            try:                                 # the folder too, when no other run is checkpointing:
                ckpt.parent.rmdir()              # rmdir removes only an empty folder, and a writer that
            except OSError:                      # loses it makes it again (runner._write_checkpoint);
                pass                             # not empty, or already removed by another finished run
        return entry

    def warmup_model(self, config: ExperimentConfig | Planned) -> torch.Tensor | None:
        """The final model of ``config``'s warm-up, from this store (None without a warm-up)."""
        warm = config.warmup if isinstance(config, Planned) else config.warmup()
        if warm is None:
            return None
        entry = self.get(warm)
        params = entry.params() if entry is not None and entry.status == "ok" else None
        if params is None:
            raise InputError(f"init_from: the warm-up run {_keyed(warm)[1]} is not in {self.path} with its "
                             "final model (status ok, params.npy); fedlib.sweep computes warm-ups first")
        return params

    def get_or_run(self, config: ExperimentConfig, device: str | None = None, progress: bool = False,
                   save_params: bool = False) -> Result:
        """A :class:`Result` for ``config``: loaded when stored (with its params if they were
        saved and ``save_params``), else computed and stored."""
        planned = Planned.of(config)
        entry = self.get(planned)
        if entry is None or (save_params and entry.params() is None):
            entry = self.compute(planned, device=device, progress=progress, save_params=save_params)
        if entry.status == "error":
            raise RuntimeError(f"{config.algorithm}: the stored run {entry.path} failed: "
                               f"{entry.meta['error'].splitlines()[0]}")
        params = entry.params()
        return Result(entry.history, params if params is not None else torch.empty(0),
                      entry.status == "diverged", {**entry.meta, "config": config.to_dict()})


    def derived_table(self, name: str, make: Callable[[], pd.DataFrame]) -> pd.DataFrame:
        """A table derived from the data once and kept beside the runs as ``<name>.csv`` (e.g. the
        clients' sample counts of a split, so that a notebook re-executes from the store without
        the dataset): read when present, else computed by ``make()`` (its index is written as the
        first column) and written atomically. With computing off (:func:`no_compute_env`) a store
        is read, not added to: the table is computed and returned as read back, not kept (a
        notebook that then stops on a missing run leaves nothing in the store)."""
        path = self.path / f"{name}.csv"
        if not path.exists() and no_compute_env():
            buf = io.StringIO()
            make().to_csv(buf)
            buf.seek(0)
            return pd.read_csv(buf, index_col=0)
        if not path.exists():
            self.require_writable()                   # refused before make(), created after it
            df = make()
            self._ensure_folder()
            tmp = self.path / f".tmp-{name}-{uuid.uuid4().hex[:8]}.csv"
            df.to_csv(tmp)
            os.replace(tmp, path)
        return pd.read_csv(path, index_col=0)

    def seal(self, keys: Iterable[str] | None = None, force: bool = False) -> dict[str, str]:
        """Record in each entry's meta.json the content digests of its files (and its history's
        columns) and of meta.json itself (:data:`META_SEAL`: status, timings, fingerprints), so
        that later edits are caught when it is read (:class:`EditedEntry`).

        Entries sealed before meta.json was (files' digests only) still read and verify; sealing
        them again upgrades them (outcome ``sealed``).

        For entries stored before fedlib sealed them, and for entries that fedlib itself
        rewrote (a migration): nobody needs to hand-edit a digest. Idempotent: an entry already
        sealed and unchanged is left byte for byte as it is. Each entry must still read back
        whole (strict columns and numbers).

        Args:
            keys: the entries to seal (default: all).
            force: also re-seal entries whose files differ from their sealed digests (only for
                files fedlib rewrote; an edit by hand should be recomputed instead).

        Returns:
            A dict from key to outcome, one of ``sealed``, ``unchanged``, ``edited: ...`` (left alone without
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
            meta[META_SEAL] = meta_seal(meta)
            if meta == entry.meta:
                out[key] = "unchanged"
                continue
            self.require_writable(f"sealing entry {key}")
            write_meta(d, meta)
            out[key] = "sealed"
        return out


def no_compute_env() -> bool:
    """Whether the environment turns computing off: ``FEDLIB_NO_COMPUTE`` set to ``1``, ``true``,
    ``yes`` or ``on`` (any case; ``make test`` sets 1); ``0``, ``false``, ``no``, ``off`` or unset
    leaves it on.

    Raises:
        InputError: any other value (``FEDLIB_NO_COMPUTE=ture`` must not compute hours of runs).
    """
    value = os.environ.get("FEDLIB_NO_COMPUTE", "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise InputError(f"FEDLIB_NO_COMPUTE: must be 1, true, yes or on (computing off) or 0, false, no, off or "
                     f"unset (on), got {os.environ['FEDLIB_NO_COMPUTE']!r}")


def _say_waiting(key: str, other: locks.Holder) -> None:
    """The warning of a writer that waits for ``other``'s run of ``key`` (:meth:`Store.compute`)."""
    warn(f"{key}: {other} is computing this run; waiting for its entry instead of computing it a second "
         "time")


def _move_aside(final: Path) -> Path | None:
    """The entry at ``final`` moved aside in one rename (to a dot-folder no listing reads), or None
    where there is none (or another writer moved it first)."""
    if not final.exists():
        return None
    aside = final.with_name(f".old-{final.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(final, aside)
    except FileNotFoundError:
        return None
    return aside


def _replace(tmp: Path, final: Path, aside: Path | None) -> None:
    """Move the written entry ``tmp`` to ``final``, the entry it replaces moved ``aside`` already
    (:func:`_move_aside`) and removed after, so that a reader finds the old entry, the new one or
    none, never a mix of the two. Where another writer's entry lands at ``final`` in between, that
    one stays."""
    try:
        os.rename(tmp, final)
    except OSError:                          # another writer's entry landed first: it stays
        if not (final / "meta.json").exists():
            raise
    finally:
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)


def run_meta(result: Result | None, error: str | None, code: dict, device: Any, arith: dict, engine: Any,
             wall: float, date: str) -> dict:
    """An entry's ``meta.json`` record of a run (:meth:`Store.write`'s ``meta``): its status, where,
    with what and how long it computed. ``result`` None: the run raised (``error``: its type,
    message and traceback); ``code``: its :func:`fedlib.fingerprint.config_fingerprint`; ``arith``:
    :func:`fedlib.arithmetic.current` as it computed; ``wall``: seconds in all; ``date``: when it
    started (ISO 8601, UTC)."""
    h = result.history if result is not None else None
    eval_s = float(h["eval_seconds"].iloc[-1]) if h is not None and "eval_seconds" in h else 0.0
    run_s = float(h["seconds"].iloc[-1]) if h is not None and len(h) else wall
    info = result.info if result is not None else {}
    return {
        "status": "error" if error else ("diverged" if result.diverged else "ok"),
        "error": error, "diverged_at": None if error else info.get("diverged_at"),
        "fedlib": __version__, "git_commit": _git_commit(), "torch": torch.__version__,
        "python": platform.python_version(), "device": str(device),
        "cpu": arithmetic.cpu_model(), "torch_threads": torch.get_num_threads(), "date": date,
        "arithmetic": arith, "anchor": info.get("anchor"), "code": code, "resumed_at": info.get("resumed_at"),
        "data": info.get("data"), "malloc_trim_threshold": os.environ.get("MALLOC_TRIM_THRESHOLD_"),
        "engine": engine if isinstance(engine, str) else repr(engine),
        "wall_seconds": round(wall, 3), "run_seconds": round(run_s, 3),
        "eval_fraction": round(eval_s / run_s, 4) if run_s > 0 else None,
    }


def _check_compute_switches(engine: Any, checkpoint_every: Any, progress: Any, save_params: Any) -> None:
    """:meth:`Store.compute`'s own arguments, as :func:`fedlib.run` checks them: an engine's name
    known (an engine object is taken as it is), ``checkpoint_every`` an integer >= 1 or None,
    the flags True or False."""
    from ._validate import check_int
    from .engine import get_engine
    if isinstance(engine, str):
        get_engine(engine)
    if checkpoint_every is not None:
        check_int("checkpoint_every", checkpoint_every, 1)
    for name, value in (("progress", progress), ("save_params", save_params)):
        if not isinstance(value, (bool, np.bool_)):
            raise InputError(f"{name}: must be True or False, got {type(value).__name__} {value!r}")


def _warn_if_partial(entry: Entry) -> None:
    """A warning where ``entry`` is a federated run in which uploads were lost
    (:func:`fedlib.flower.server_app`'s ``unreachable`` in its meta.json): its config's
    participation did not decide whose upload counted, so it is not that config's run and does
    not replay."""
    lost = entry.meta.get("unreachable") or {}
    if lost:
        clients = len({c for cs in lost.values() for c in cs})
        warn(f"store: {entry.path} is a federated run in which uploads were lost ({clients} client(s) "
             f"unreachable in {len(lost)} of its rounds: meta.json's unreachable): not its config's run, "
             "and it does not replay; read it as that federation's record")


def _stale(entry: Entry, config: ExperimentConfig) -> list[str]:
    """The parts of ``entry``'s code fingerprint that changed since it was stored
    (:func:`fedlib.fingerprint.stale_parts`); none for an algorithm not registered here (a user's
    class not imported: read as stored)."""
    return stale_parts(entry.meta.get("code"), config) if config.algorithm in algorithms.available() else []


def _run(config: ExperimentConfig | Planned, ckpt: Path | None, code: dict, **run_options: Any
         ) -> tuple[Result | None, str | None]:
    """:meth:`Store.compute`'s run: ``(result, None)``, or ``(None, error)`` for a run that raised
    (its type, message and traceback). Its checkpoint ``ckpt`` is keyed by the run, so one that
    :func:`fedlib.run_config` refuses as another run's was saved by this run under code that has
    changed in a way no fingerprint part names (``code`` is saved with checkpoints, and a
    checkpoint of other code is started over by the run itself): it is removed, with a warning,
    and the run started over. Missing data and running out of memory are raised (nothing stored)."""
    for retry in (True, False):
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*diverged.*", category=RuntimeWarning)
                return run_config(config, checkpoint=ckpt, checkpoint_code=code, **run_options), None
        except (DataNotFoundError, MemoryError, torch.cuda.OutOfMemoryError):
            raise          # the machine lacks the data or the memory: not the run's property, store nothing
        except Exception as e:  # noqa: BLE001 - stored as an error entry, the sweep goes on
            if not (retry and isinstance(e, CheckpointMismatch)):    # (refused again once removed: an error)
                return None, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"
            warn(f"store: the checkpoint {e.path} is another run's ({e.differences}), yet the store names "
                 "it by this run's key: this run's, saved before its code changed in a way the code "
                 "fingerprint does not name; it is removed and the run started over")
            ckpt.unlink(missing_ok=True)


def run_cached(config: ExperimentConfig, cache_dir: str | os.PathLike | None = None,
               progress: bool = False, device: str | None = None) -> Result:
    """Run ``config`` or load it from a results store (default ``results/cache`` of the project
    this fedlib was imported from, whatever the working directory; for an installed package,
    ``~/.cache/fedlib/runs``), keeping the final model: a thin layer over :class:`Store`."""
    if not isinstance(config, ExperimentConfig):
        raise InputError(f"config: must be an ExperimentConfig, got {type(config).__name__} {config!r}")
    if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
        raise InputError(f"cache_dir: must be a folder path or None, got {type(cache_dir).__name__} "
                         f"{cache_dir!r}")
    config.validate()                                   # before the cache folder is made
    project = fedlib_project()
    default = project / "results" / "cache" if project is not None else Path("~/.cache/fedlib/runs")
    store = Store(cache_dir if cache_dir is not None else default)
    return store.get_or_run(config, device=device, progress=progress, save_params=True)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
