"""Sweeps: run many configs at most once each through a store (in-process, local worker processes
or any executor: Dask, SLURM) and return one tidy frame.

::

    configs = fedlib.grid(base, algorithm=["fedavg", "fedsum"], seed=[0, 1])
    df = fedlib.sweep(configs, store="results/02_fedsum_main/quick")

Where runs compute (:func:`sweep`'s arguments):

- ``executor``: any ``concurrent.futures.Executor``: None runs in-process;
  ``ProcessPoolExecutor(n)`` uses local cores; ``distributed.Client(...).get_executor()`` a Dask
  cluster; submitit's executor a SLURM cluster. Workers write entries to the store folder
  themselves (it must be shared by them).
- ``workers``: without an ``executor``, compute missing runs in this many local processes (started
  with "spawn", one torch thread each unless ``torch_threads`` says otherwise); None or 1: in this
  process. On small CNNs two processes with one thread each beat one process with two threads
  (``benchmarks/sweep.py``).
- ``devices``: compute missing runs in one local process per entry (started with "spawn"), each on
  its device for its whole life: ``["cuda:0", "cuda:1"]`` spreads runs over two GPUs,
  ``["cuda:0"] * 4`` runs four at once on one GPU. A run's result does not depend on the process
  or the device count (each run is computed alone, as in this process); the device is recorded in
  each entry's meta. Not with ``device``, ``workers`` or an ``executor``; over several machines, a
  Dask cluster with one worker per GPU is the ``executor`` route.
- ``device``: where runs compute (not part of the key; recorded in each entry's meta).
- ``torch_threads``: intra-op threads per worker process (e.g. 1 with ``ProcessPoolExecutor(2)``
  on 2 cores), or of this process while it computes (its setting is restored after); None leaves
  torch's default. Each client trains, and every evaluation runs, in one intra-op thread whatever
  this says: it sets the speed of the rest (a round's server step), not the stored bits of a
  neural run.

Sweeps that share runs (two at once over overlapping configs, on one machine or on several that
share the store folder) compute each shared run once: a writer claims a run before computing it
(:mod:`fedlib.locks`), and one that reaches a held run waits for its entry (:meth:`Store.compute`).
A sweep in this process picks, before each run, the first that nobody else holds then; worker
processes and executors take the runs in the order of their submission, those held at that time
last (:func:`unclaimed_first`).
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from . import extensions, locks, participation
from ._validate import InputError, warn
from .config import _ARG_FIELDS, ExperimentConfig, Planned, declared_defaults
from .problems import get_problem
from .store import (
    Entry,
    Store,
    equivalent_key,
    no_compute_env,  # noqa: F401  (re-exported: sweeps.no_compute_env)
)

__all__ = ['DASK_WORKER_ENV', 'SweepPlan', 'load', 'no_compute_env', 'notebook_of', 'plan_sweep',
           'stored_configs', 'sweep']


#: environment for Dask worker processes running fedlib on CPUs: Dask's default also sets
#: ``MALLOC_TRIM_THRESHOLD_=65536``, which turns off glibc's adaptive mmap threshold and makes torch's
#: CPU training about 2x slower (measured in ``benchmarks/sweep.py``); use
#: ``dask.config.set({"distributed.nanny.pre-spawn-environ": fedlib.sweeps.DASK_WORKER_ENV})``
#: before starting the workers.
DASK_WORKER_ENV = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}


def _exit_with_parent(parent: int, every: float = 0.5) -> None:
    """In a sweep's worker process: exit as soon as the sweep's process is gone (killed, stopped
    with Ctrl-C), instead of computing and storing the runs still queued. A run cut short leaves
    its checkpoint, and the next sweep resumes it."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="fedlib-exit-with-parent", daemon=True).start()


#: in a worker process of ``sweep(devices=...)``: the device this process computes on
_SLOT_DEVICE: str | None = None


def _device_slot(parent: int, slots) -> None:
    """Initializer of a ``sweep(devices=...)`` worker process: take one device of ``slots`` (a
    queue holding the devices, one per process) for the whole life of the process, and exit with
    the sweep's process."""
    global _SLOT_DEVICE
    _SLOT_DEVICE = slots.get(timeout=60)
    _exit_with_parent(parent)


def _queue_of(manager, items):
    q = manager.Queue()
    for item in items:
        q.put(item)
    return q


def _check_devices(devices) -> list[str]:
    """``devices`` as a list of device names; else one ValueError naming the field."""
    if isinstance(devices, str) or not isinstance(devices, (list, tuple)) or not devices:
        raise InputError(f"devices: must be a non-empty list of device names (e.g. ['cuda:0', 'cuda:1']), "
                         f"got {devices!r}")
    out = []
    for d in devices:
        try:
            out.append(str(torch.device(d)))
        except (RuntimeError, TypeError):
            raise InputError(f"devices: {d!r} is not a torch device name (e.g. 'cpu', 'cuda:0')") from None
    return out


def _compute_in_worker(store: str, config: dict, device: str | None, checkpoint_every: int | None,
                       torch_threads: int | None, save_params: bool = False, modules: tuple = ()) -> dict:
    """What a worker process runs: import the modules that register the configs' algorithms
    outside fedlib, then compute one config into the shared store folder (on ``device``, or on
    the process's own device in a ``sweep(devices=...)`` worker)."""
    if device is None:
        device = _SLOT_DEVICE
    for m in modules:
        importlib.import_module(m)
    if torch_threads:
        torch.set_num_threads(torch_threads)
    if "MALLOC_TRIM_THRESHOLD_" in os.environ:
        warn("fedlib: MALLOC_TRIM_THRESHOLD_ is set in this worker (Dask's default); torch CPU "
             "training runs about 2x slower; start Dask workers with "
             "fedlib.sweeps.DASK_WORKER_ENV (see the README)")
    cfg = ExperimentConfig.from_dict(config)
    entry = Store(store).compute(cfg, device=device, checkpoint_every=checkpoint_every,
                                 save_params=save_params)
    return {"key": entry.path.name, "status": entry.status}


def _worker_modules(configs: list[ExperimentConfig], executor: cf.Executor | None, field: str
                    ) -> tuple[str, ...]:
    """The modules a worker process must import to know the configs' algorithms, participation
    kinds and datasets (those not defined in fedlib: :func:`fedlib.extensions.worker_modules`);
    one defined in ``__main__`` (a notebook cell, a script) cannot be imported there: a ValueError
    naming ``field`` (the argument that sent the runs away) says so before any run. None for runs
    in this process: no executor, or a thread pool (its threads share this process's modules)."""
    if executor is None or isinstance(executor, cf.ThreadPoolExecutor):
        return ()
    return extensions.worker_modules(configs, field)


def _config_columns(config: ExperimentConfig, columns: frozenset[str] = frozenset()) -> dict:
    """``config``'s fields as columns, an argument as ``<field>.<name>``; of ``columns`` (the
    argument columns of all runs of a frame), those ``config`` leaves out at their declared default
    are filled with it (:meth:`ExperimentConfig.canonical`), so that one setting reads the same
    whether its argument was written out or not (NaN: not an argument of this run's algorithm,
    kind or problem)."""
    out = {}
    for k, v in config.to_dict().items():
        if k in _ARG_FIELDS:
            v = {**_defaults_of(config, k, v, columns), **v}
        if isinstance(v, dict):
            for name, x in sorted(v.items()):
                out[f"{k}.{name}"] = json.dumps(x) if isinstance(x, (list, dict)) else x
        else:
            out[k] = v
    return out


def _defaults_of(config: ExperimentConfig, field: str, given: dict, columns: frozenset[str]) -> dict:
    """The arguments ``field`` of ``config`` named by ``columns`` that it leaves out, at their
    declared defaults (plain values only)."""
    names = (c[len(field) + 1:] for c in columns if c.startswith(f"{field}."))
    absent = [name for name in names if name not in given]
    defaults = declared_defaults(field, config) if absent else {}
    return {name: defaults[name] for name in absent
            if name in defaults and isinstance(defaults[name], (str, int, float, bool))}


def _frame(entry: Entry | None, planned: Planned, error: str | None = None,
           columns: frozenset[str] = frozenset()) -> pd.DataFrame:
    cols = {**_config_columns(planned.config, columns), "key": planned.key}
    if entry is None:
        hist = pd.DataFrame({"round": [np.nan]})
        status, err, div = "error", error, None
    else:
        hist = entry.history if len(entry.history) else pd.DataFrame({"round": [np.nan]})
        status, err, div = entry.status, entry.meta.get("error"), entry.meta.get("diverged_at")
    meta = pd.DataFrame({**cols, "status": status, "error": err, "diverged_at": div}, index=hist.index)
    return pd.concat([meta, hist], axis=1)


def _frames(plan_configs: list[Planned], entries: dict, failed: dict) -> pd.DataFrame:
    """The frame of the runs ``plan_configs`` (their entries, or the error of one that failed)."""
    columns = frozenset(c for p in plan_configs for c in _config_columns(p.config) if "." in c)
    return pd.concat([_frame(entries.get(p.key), p, failed.get(p.key), columns) for p in plan_configs],
                     ignore_index=True)


def _require_data(planned: list[Planned]) -> None:
    """Stop before anything is created or run when a dataset the runs to compute need is not on
    this machine: one line naming it and where it was looked for (the datasets each run's problem
    declares it reads, ``datasets`` of :func:`fedlib.problems.register_problem`; synthetic stand-ins
    need none)."""
    from . import data
    needed = {}
    for p in planned:
        declared = get_problem(p.config.problem).datasets
        for name, root in declared(p.config.arguments("problem_args")) if declared else ():
            needed.setdefault((name, root), p)
    for (name, root), p in needed.items():
        try:
            data.load(name, data_root=root)
        except data.DataNotFoundError as e:
            raise data.DataNotFoundError(f"problem_args.dataset: {e} (needed by {p.key} and the "
                                         "other runs on it; nothing was computed)") from None


def sweep(configs: Iterable[ExperimentConfig] | ExperimentConfig, store: str | os.PathLike | Store,
          executor: cf.Executor | None = None, progress: bool = True, device: str | None = None,
          checkpoint_every: int | None = 50, torch_threads: int | None = None,
          retry_errors: bool = False, compute: bool | None = None,
          workers: int | None = None, keep_params: bool = False,
          devices: list[str] | None = None) -> pd.DataFrame:
    """Run every config at most once and return all histories as one tidy frame.

    Example, FedAvg and FedSUM over two seeds, stored so that a second call only reads::

        configs = [fedlib.ExperimentConfig(algorithm=a, problem="quadratic", participation="bernoulli",
                                           rounds=100, participation_args={"p": 0.3}, seed=s)
                   for a in ("fedavg", "fedsum") for s in (0, 1)]
        df = fedlib.sweep(configs, store="results/my_sweep")

    Args:
        configs: :class:`ExperimentConfig` objects (duplicates run once; see :func:`grid`), or one.
        store: a :class:`Store` or its folder. Entries already there are loaded, not recomputed, so
            an interrupted sweep resumes where it stopped and notebooks needing a run share it.
        executor, workers, devices, device, torch_threads: where the missing runs compute -- this
            process (default), ``workers`` local processes, one process per entry of ``devices``
            (``["cuda:0", "cuda:1"]``), or any ``concurrent.futures`` executor (Dask, SLURM) --
            and with how many torch threads: see "Where runs compute" in :mod:`fedlib.sweeps`.
        progress: a tqdm bar over runs (done / loaded / failed).
        checkpoint_every: long runs checkpoint every this many rounds under
            ``<store>/.checkpoints/`` and resume from there if killed; None: no checkpoints.
        retry_errors: recompute entries stored with status ``error``.
        compute: False refuses to compute (a missing run is an error naming how many are missing);
            default: True unless the environment sets ``FEDLIB_NO_COMPUTE=1`` (as ``make test``
            does). A stored run whose algorithm or problem code changed since it was stored
            (:mod:`fedlib.fingerprint`) is computed again, or loaded as it is when computing is off.
        keep_params: keep the final model of every run computed here, as the warm-ups of
            ``init_from`` runs always are (an entry without it cannot start a phase later).

    Returns:
        One row per evaluated round per run, in the order of ``configs``: the config's fields
        (arguments as ``<field>.<name>`` columns), ``key``, ``status`` (ok / diverged / error),
        ``error``, ``diverged_at``, the history's columns. A run that raised has one row, round NaN.

    Raises:
        InputError: an invalid config (naming its index and field) before anything runs; an
            unwritable store; missing runs with ``compute=False``.
    """
    devices = _check_placement(executor, workers, devices, device)
    _check_switches(checkpoint_every, torch_threads, retry_errors=retry_errors, progress=progress,
                    keep_params=keep_params, compute=compute)
    configs = _as_configs(configs)
    if not configs:
        return pd.DataFrame(columns=["key", "status", "error", "diverged_at", "round"])
    if compute is None:
        compute = not no_compute_env()
    plan = plan_sweep(configs, store, compute=compute, retry_errors=retry_errors)
    _warn_stored_errors(plan)
    options = dict(device=device, checkpoint_every=checkpoint_every, keep_params=keep_params)
    failed = _compute_missing(plan, executor, workers, devices, progress, torch_threads, options)
    _warn_new_failures(plan, failed)
    return _frames(plan.configs, plan.entries, failed)


def _check_placement(executor: cf.Executor | None, workers: int | None, devices: list[str] | None,
                     device: str | None) -> list[str] | None:
    """:func:`sweep`'s ``workers``, ``executor``, ``devices`` and ``device`` checked together:
    ``devices`` as device names; a ValueError naming the field for a bad value or a clash."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InputError(f"workers: must be a positive integer or None, got {workers!r}")
    if workers is not None and workers > 1 and executor is not None:
        raise InputError("workers: give either workers (local processes) or an executor, not both")
    if devices is not None:
        devices = _check_devices(devices)
        if device is not None or executor is not None or (workers is not None and workers > 1):
            raise InputError("devices: give either devices (one local process each) or device / workers / "
                             "an executor, not both")
    if executor is None:                       # computed on this machine: its devices must exist here
        from .runner import _device  # (an executor's workers may have devices this one lacks)
        for name, names in (("device", [] if device is None else [device]), ("devices", devices or [])):
            for d in names:
                _device(d, field=name)
    return devices


def _warn_stored_errors(plan: SweepPlan) -> None:
    """One warning when stored runs of the sweep failed when they were computed (they count as
    failed; ``retry_errors`` recomputes them)."""
    if plan.stored_errors:
        first = str(plan.entries[plan.stored_errors[0]].meta.get("error") or "").splitlines()[:1]
        warn(f"sweep: {len(plan.stored_errors)} stored run(s) failed when they were computed "
             f"(status error; first: {plan.stored_errors[0]}: {first[0] if first else '?'}); they "
             "count as failed; sweep(..., retry_errors=True) recomputes them")


def _warn_new_failures(plan: SweepPlan, failed: dict[str, str]) -> None:
    """A warning for each way runs of this sweep failed (the frame has them as rows with status
    ``error``): runs with no entry (a worker that died, a warm-up that failed, out of memory),
    which the next sweep computes, and runs that raised, stored with status ``error``, which
    ``retry_errors=True`` recomputes."""
    blocked = {k: w for k, w in failed.items() if str(w).startswith("warm-up ")}
    lost = {k: w for k, w in failed.items() if k not in blocked}
    if lost:
        key, why = next(iter(lost.items()))
        warn(f"sweep: {len(lost)} run(s) did not finish and have no entry (first: {key}: "
             f"{str(why).splitlines()[0]}); they are rows with status error in the frame, and sweeping "
             "again computes them")
    if blocked:
        key, why = next(iter(blocked.items()))
        warn(f"sweep: {len(blocked)} run(s) were not started: their warm-up failed (first: {key}: "
             f"{str(why).splitlines()[0]}); they are rows with status error in the frame, and start once "
             "their warm-up is stored with status ok")
    raised = [k for k, e in plan.entries.items() if e.status == "error" and k not in plan.stored_errors]
    if raised:
        first = str(plan.entries[raised[0]].meta.get("error") or "?").splitlines()[0]
        warn(f"sweep: {len(raised)} run(s) raised and are stored with status error (first: {raised[0]}: "
             f"{first}); sweep(..., retry_errors=True) recomputes them")


def _compute_missing(plan: SweepPlan, executor: cf.Executor | None, workers: int | None,
                     devices: list[str] | None, progress: bool, torch_threads: int | None,
                     options: dict) -> dict[str, str]:
    """Compute the plan's missing runs where :func:`sweep` was told to (one process per device,
    ``workers`` local processes, ``executor``, or this process); returns why each run that has no
    entry failed (:func:`_execute`)."""
    import multiprocessing
    one_thread = 1 if torch_threads is None else torch_threads
    if devices is not None and plan.todo:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Manager() as manager, cf.ProcessPoolExecutor(
                len(devices), mp_context=ctx, initializer=_device_slot,
                initargs=(os.getpid(), _queue_of(manager, devices))) as pool:
            return _execute(plan, plan.store, pool, progress, torch_threads=one_thread, field="devices",
                            **options)
    if workers is not None and workers > 1 and plan.todo:
        with cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_exit_with_parent, initargs=(os.getpid(),)) as pool:
            return _execute(plan, plan.store, pool, progress, torch_threads=one_thread, field="workers",
                            **options)
    return _execute(plan, plan.store, executor, progress, torch_threads=torch_threads, **options)


def _as_configs(configs) -> list[ExperimentConfig]:
    """``configs`` as a list of configs (one config: a sweep of one run); a ValueError naming the
    index of anything else."""
    if isinstance(configs, ExperimentConfig):
        return [configs]
    if isinstance(configs, (str, bytes, dict)) or not hasattr(configs, "__iter__"):
        raise InputError(f"configs: expected ExperimentConfig objects (a list of them, or one), got "
                         f"{type(configs).__name__}")
    configs = list(configs)
    for i, c in enumerate(configs):
        if not isinstance(c, ExperimentConfig):
            raise InputError(f"configs[{i}]: expected an ExperimentConfig, got {type(c).__name__}")
    return configs


@dataclass
class SweepPlan:
    """What a sweep will do, decided before anything runs (:func:`plan_sweep`). Its configs are
    :class:`~fedlib.config.Planned`: validated and keyed once, for the store and the runner.

    Attributes:
        store: the store the runs are read from and written to.
        configs: the distinct configs asked for, in their order (the frame's order).
        entries: the stored entries that will be loaded, by key (updated as runs finish).
        levels: the runs to compute, in waves: warm-ups (``init_from``) before the runs that
            continue them; the runs of one wave are independent of each other.
        warm_keys: keys of the runs that are some run's warm-up (their final model is kept).
        stored_errors: keys of stored runs whose status is ``error``.
        total: every run of the sweep, warm-ups included.
    """

    store: Store
    configs: list[Planned]
    entries: dict[str, Entry]
    levels: list[list[Planned]]
    warm_keys: set[str]
    stored_errors: list[str]
    total: int

    @property
    def todo(self) -> list[Planned]:
        """Every run to compute, warm-ups first."""
        return [c for lev in self.levels for c in lev]


def plan_sweep(configs: list[ExperimentConfig], store: str | os.PathLike | Store, compute: bool = True,
               retry_errors: bool = False) -> SweepPlan:
    """Check the configs and decide what a sweep loads and what it computes, in which order.

    Every config is validated once and keyed once (a run to compute with its inputs: data and
    trace files), warm-ups are added, and a stored run is reused unless its code changed (when
    computing), it failed and ``retry_errors`` asks again, or it is a warm-up stored without its
    final model. Nothing is computed or written.

    Raises:
        InputError: an invalid config (naming its index and field); missing runs with
            ``compute=False``; an unwritable store with runs to compute.
    """
    root = (store.path if isinstance(store, Store) else Path(store)) if compute else None
    planned, missing = _plan_configs(configs, root)
    _warn_idle_seeds(configs)
    _require_data(missing)
    store = store if isinstance(store, Store) else Store(store)     # after the checks: nothing written
    unique = list({p.key: p for p in planned}.values())
    known, warm_keys = _with_warmups(unique)
    entries = _reusable(store, known, warm_keys, compute, retry_errors)
    depth = _depths(known)
    todo = sorted((p for p in known.values() if p.key not in entries), key=lambda p: depth[p.key])
    _check_missing(store, todo, len(known), compute)
    levels = [[p for p in todo if depth[p.key] == d] for d in sorted({depth[p.key] for p in todo})]
    stored_errors = [k for k, e in entries.items() if e.status == "error"]
    return SweepPlan(store, unique, entries, levels, warm_keys, stored_errors, len(known))


def _plan_configs(configs: list[ExperimentConfig], root: Path | None) -> tuple[list[Planned], list[Planned]]:
    """Each config validated once and keyed once (equal configs, and a warm-up shared by several
    runs, once): with its inputs (trace and data files) when it is to be computed -- ``root``, the
    folder of a store that computes, holds no entry of it --, else without (a stored run is read
    without its trace file). Returns the configs planned, in order, and those to compute."""
    known: dict = {}                       # keyed configs, warm-ups included
    seen: dict = {}                        # validated configs of the list
    canonical: dict = {}                   # the stored entries' canonical keys (equivalent_key)
    planned, missing = [], []
    for i, c in enumerate(configs):
        p = _lookup(seen, c)
        if p is None:
            hit = _lookup(known, c)
            key = hit.key if hit is not None else _key_or_none(c)
            to_compute = root is not None and (key is None or not (root / key / "meta.json").exists()
                                               and equivalent_key(root, c, key, canonical) is None)
            p = Planned.of(c, where=f"configs[{i}]", inputs=to_compute, key=key, known=known)
            _remember(seen, c, p)
            if to_compute:
                missing.append(p)
        planned.append(p)
    return planned, missing


def _lookup(cache: dict, config: ExperimentConfig) -> Planned | None:
    """``config``'s entry in ``cache`` (None, too, for a config whose arguments do not hash)."""
    try:
        return cache.get(config)
    except TypeError:
        return None


def _remember(cache: dict, config: ExperimentConfig, planned: Planned) -> None:
    try:
        cache[config] = planned
    except TypeError:                      # arguments that do not hash: planned again if repeated
        pass


def _key_or_none(config: ExperimentConfig) -> str | None:
    """``config``'s key, or None where keying it fails (an invalid config: validating it next names
    the field; a valid one is keyed again, raising as keying does)."""
    try:
        return config.key()
    except Exception:  # noqa: BLE001 - ExperimentConfig.validate reports what is wrong
        return None


def _reusable(store: Store, known: dict[str, Planned], warm_keys: set[str], compute: bool,
              retry_errors: bool) -> dict[str, Entry]:
    """The stored entries the sweep loads, by key: not one whose code changed (when computing), nor
    a failed one ``retry_errors`` asks again, nor a warm-up stored without its final model."""
    entries: dict[str, Entry] = {}
    for p in known.values():
        e = store.get(p)
        if e is not None and compute and p.key in store.stale:
            e = None                                   # its code changed: computed again
        if e is not None and not (retry_errors and e.status == "error") \
                and not (p.key in warm_keys and e.status == "ok" and e.params() is None):
            entries[p.key] = e
    return entries


def _check_switches(checkpoint_every: object, torch_threads: object, **flags: object) -> None:
    """The sweep's counts and switches, as :func:`fedlib.run` checks its own: ``checkpoint_every``
    and ``torch_threads`` integers >= 1 (or None), the flags True or False (``compute`` also None)."""
    from ._validate import InputError, check_int
    for name, value in (("checkpoint_every", checkpoint_every), ("torch_threads", torch_threads)):
        if value is not None:
            check_int(name, value, 1)
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)) and not (name == "compute" and value is None):
            raise InputError(f"{name}: must be True or False, got {type(value).__name__} {value!r}")


def _check_missing(store: Store, todo: list[Planned], total: int, compute: bool) -> None:
    """With runs to compute: a ValueError when the store is read-only, or when computing is off
    (naming how many are missing, the first, and any stored entry that was refused)."""
    if todo and compute:
        store.require_writable(f"{len(todo)} of {total} runs are missing (first: {todo[0].key})")
        _check_notebook_store(store, todo)
    if todo and not compute:
        refused = [store.rejected[p.key] for p in todo if p.key in store.rejected]
        raise InputError(f"store: {store.path} lacks {len(todo)} of {total} runs (first: "
                         f"{todo[0].key}) and computing is off (compute=False or FEDLIB_NO_COMPUTE=1); "
                         "compute them with fedlib.sweep(configs, store) where computing is on (a "
                         "notebook's store at its defaults: make results NB=<notebook>; at other "
                         "parameters: papermill with those parameters and FEDLIB_NO_COMPUTE unset)"
                         + (f"; {len(refused)} of them {'is' if len(refused) == 1 else 'are'} stored but "
                            f"{'was' if len(refused) == 1 else 'were'} refused: {refused[0]}" if refused
                            else ""))


def notebook_of(store: Store) -> str | None:
    """The notebook whose store ``store`` is (``<project>/results/<notebook>/<profile>``, the project
    holding ``notebooks/<notebook>.py``: :func:`fedlib.notebook.store_path`), else None."""
    path = store.path.resolve()
    project, name = path.parent.parent.parent, path.parent.name
    is_nb = path.parent.parent.name == "results" and (project / "notebooks" / f"{name}.py").is_file()
    return name if is_nb else None


def _check_notebook_store(store: Store, todo: list[Planned]) -> None:
    """A notebook's store (:func:`notebook_of`) holds the runs of fedlib's built-in algorithms only:
    they are the notebook's runs, and every entry verifies without ``--import``. A run of an
    algorithm registered outside fedlib to compute there is refused, naming a store of its own."""
    from .algorithms import base
    nb = notebook_of(store)
    mine = [p for p in todo if p.config.algorithm not in base._BUILTIN]
    if nb is not None and mine:
        theirs = ", ".join(sorted({p.config.algorithm for p in mine}))
        raise InputError(f"store: {store.path} is notebook {nb}'s store, which holds the runs of fedlib's "
                         f"built-in algorithms only; {len(mine)} run(s) to compute are of your algorithm "
                         f"({theirs}): sweep them into a store of your own (e.g. "
                         f"{store.path.parent.parent / 'my_study' / store.path.name}) and read the "
                         "notebook's runs with fedlib.load")


def _with_warmups(unique: list[Planned]) -> tuple[dict[str, Planned], set[str]]:
    """The configs and, transitively, their warm-ups, by key; and the warm-ups' keys."""
    known = {p.key: p for p in unique}
    warm_keys: set[str] = set()
    pending = list(unique)
    while pending:
        w = pending.pop().warmup
        if w is not None:
            warm_keys.add(w.key)
            if w.key not in known:
                known[w.key] = w
                pending.append(w)
    return known, warm_keys


def _depths(known: dict[str, Planned]) -> dict[str, int]:
    """How many warm-ups precede each run (0: starts from scratch)."""
    depth: dict[str, int] = {}
    for planned in known.values():
        chain, p = [], planned
        while p is not None and p.key not in depth:      # up the chain of warm-ups
            chain.append(p)
            p = p.warmup
        base = -1 if p is None else depth[p.key]
        for d, run in enumerate(reversed(chain), start=base + 1):
            depth[run.key] = d
    return depth


def _execute(plan: SweepPlan, st: Store, executor: cf.Executor | None, progress: bool, *, device,
             checkpoint_every, torch_threads, keep_params, field: str = "executor") -> dict[str, str]:
    """Compute the plan's runs wave by wave, in this process or on ``executor`` (given as :func:`sweep`'s
    ``field``); returns why each run that has no entry failed (its key -> message). ``plan.entries``
    gains the new entries."""
    entries, failed = plan.entries, {}
    counts = {"loaded": len(entries) - len(plan.stored_errors), "done": 0, "failed": len(plan.stored_errors)}
    bar = tqdm(total=plan.total, initial=len(entries), disable=not progress, desc="runs", unit="run")
    bar.set_postfix(counts)

    def finished(p: Planned, entry: Entry | None, err: str | None) -> None:
        if entry is not None:
            entries[p.key] = entry
        else:
            failed[p.key] = err
        counts["failed" if entry is None or entry.status != "ok" else "done"] += 1
        bar.update(1)
        bar.set_postfix(counts)

    modules = _worker_modules([p.config for p in plan.todo], executor, field)
    for batch in plan.levels:
        ready = [p for p in batch if p.warmup is None or p.warmup.key in entries
                 and entries[p.warmup.key].status == "ok"]
        for p in batch:
            if p not in ready:
                finished(p, None, f"warm-up {p.warmup.key} {_how_failed(p.warmup.key, entries, failed)}; "
                                  "this run was not started")
        keep = {p.key: keep_params or p.key in plan.warm_keys for p in ready}
        if executor is None:                   # (picks, before each run, one nobody holds)
            _compute_here(ready, st, finished, torch_threads, keep, device, checkpoint_every)
            continue
        ready = unclaimed_first(ready, st)
        futures = {executor.submit(_compute_in_worker, str(st.path), p.config.to_dict(), device,
                                   checkpoint_every, torch_threads, keep[p.key], modules): p for p in ready}
        for fut in cf.as_completed(futures):
            p = futures[fut]
            try:
                fut.result()
                finished(p, st.read(p.key, expected=p.config), None)
            except Exception as e:  # noqa: BLE001 - a worker that died: reported in the frame
                finished(p, None, f"worker failed: {type(e).__name__}: {e}")
    bar.close()
    return failed


def unclaimed_first(runs: list[Planned], store: Store) -> list[Planned]:
    """``runs`` in their order, those that another writer holds now (:func:`fedlib.locks.holder`:
    a second sweep, a campaign computing them) moved to the end, so that this sweep computes what
    nobody else does before it waits for the others' entries (:meth:`Store.compute`)."""
    held = {p.key for p in runs if locks.holder(store.path, p.key) is not None}
    return [p for p in runs if p.key not in held] + [p for p in runs if p.key in held]


def _how_failed(key: str, entries: dict[str, Entry], failed: dict[str, str]) -> str:
    """How the warm-up ``key`` that cannot start its phases failed, in words: diverged (at which
    round), raised (its error's first line), or did not finish (no entry: why, from ``failed``)."""
    entry = entries.get(key)
    if entry is None:
        why = failed.get(key)
        return f"did not finish ({str(why).splitlines()[0]})" if why else "did not finish (no entry)"
    if entry.status == "diverged":
        return f"diverged at round {entry.meta.get('diverged_at')}"
    return f"raised: {str(entry.meta.get('error') or '?').splitlines()[0]}"


def _compute_here(ready: list[Planned], st: Store, finished, torch_threads, keep, device,
                  checkpoint_every) -> None:
    """Compute ``ready`` in this process with ``torch_threads`` (the caller's setting restored)."""
    before = torch.get_num_threads()
    try:
        if torch_threads:
            torch.set_num_threads(torch_threads)
        left = list(ready)
        while left:                            # before each run, the first one nobody else holds now
            p = next((q for q in left if locks.holder(st.path, q.key) is None), left[0])
            left.remove(p)
            try:
                entry = st.compute(p, device=device, checkpoint_every=checkpoint_every,
                                   save_params=keep[p.key])
            except (MemoryError, torch.cuda.OutOfMemoryError) as e:   # the machine's, not the run's
                finished(p, None, f"out of memory ({type(e).__name__}: {e}); not stored: the next sweep "
                                  "computes it, on a machine with more memory")
                continue
            finished(p, entry, None)
    finally:
        torch.set_num_threads(before)          # the caller's setting, whatever the runs used


def stored_configs(store: str | os.PathLike) -> list[ExperimentConfig]:
    """The configs of every complete entry of a store folder."""
    st = Store(store)
    return [ExperimentConfig.from_dict(json.loads((st.path / k / "config.json").read_text()))
            for k in st.keys()]


def _warn_idle_seeds(configs: list[ExperimentConfig]) -> None:
    """Warn when configs differ only in ``seed`` under a participation kind that draws nothing
    (:func:`fedlib.participation.draws_from_seed`: a kind declared ``draws=False``, without random
    uplinks or local work attached): the seed then reaches only an algorithm's own sampling, and
    the runs may be the same run stored twice."""
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(configs):
        if not participation.draws_from_seed(c.participation, dict(c.participation_args)):
            groups.setdefault(c.replace(seed=0).key(), []).append(i)
    for idx in groups.values():
        seeds = sorted({configs[i].seed for i in idx})
        if len(seeds) > 1:
            c = configs[idx[0]]
            warn(f"seed: configs {idx[:4]} differ only in seed ({seeds[:4]}), which under "
                 f"participation {c.participation!r} draws no schedule; it reaches only an "
                 f"algorithm's own sampling, so {c.algorithm!r} may give the same run for each. "
                 "Vary "
                 "problem_args.seed (data, split, starting model, minibatches) for independent runs")
            return


def load(store: str | os.PathLike | Store,
         configs: Iterable[ExperimentConfig] | ExperimentConfig | None = None) -> pd.DataFrame:
    """Read stored runs into the tidy frame of :func:`sweep`, computing nothing: the runs of
    ``configs`` (one config, or a list, e.g. a sweep's), or every complete entry of the store
    (None). Works on a read-only store.

    Example::

        df = fedlib.load("results/02_fedsum_main/quick")        # every stored run
        df.groupby("algorithm")["test_acc"].max()

    Raises:
        InputError: a store folder that does not exist; a run of ``configs`` that is not stored
            (naming how many and the store).
    """
    _check_readable(Path(store.path if isinstance(store, Store) else store).expanduser())
    if configs is None:
        configs = stored_configs(store.path if isinstance(store, Store) else store)
        _warn_incomplete(Path(store.path if isinstance(store, Store) else store).expanduser())
    try:
        return sweep(configs, store, progress=False, compute=False)
    except ValueError as e:                        # load never computes: say so, not "computing is off"
        from ._validate import InputError
        off = " and computing is off (compute=False or FEDLIB_NO_COMPUTE=1); "
        if off not in str(e):
            raise
        head, _, rest = str(e).partition(off)
        tail = rest.partition("; ")[2] if "stored but were refused" in rest else ""
        raise InputError(f"{head}; fedlib.load only reads stored runs: compute them with "
                      f"fedlib.sweep(configs, store)" + (f"; {tail}" if tail else "")) from None


def _warn_incomplete(folder: Path) -> None:
    """One warning naming the entry folders of ``folder`` that lack a meta.json (a run that was
    never finished, or a damaged entry): :func:`load` reads every complete entry and not these."""
    bad = sorted(p.name for p in folder.iterdir()
                 if p.is_dir() and not p.name.startswith(".") and not (p / "meta.json").exists())
    if bad:
        warn(f"store: {len(bad)} incomplete entr{'y' if len(bad) == 1 else 'ies'} in {folder} (no "
             f"meta.json: {', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''}) not loaded; "
             "fedlib.sweep with their configs recomputes them")


def _check_readable(folder: Path) -> None:
    """``folder`` is a store: a folder (not a file), not one entry of a store, and holding
    stored entries (or the marks of one); else one InputError saying which it is."""
    from ._validate import InputError
    if folder.is_file():
        raise InputError(f"store: {folder} is a file, not a store folder (give the folder of stored runs)")
    if not folder.is_dir():
        raise InputError(f"store: no such folder {folder} (nothing stored there yet?)")
    if (folder / "meta.json").is_file():
        raise InputError(f"store: {folder} is one stored entry, not a store; its store is {folder.parent}")
    own = [p for p in folder.iterdir() if not p.name.startswith(".")]   # a store's own files: dotted
    if own and not any((p / "meta.json").is_file() for p in own):
        raise InputError(f"store: {folder} is not a store (no stored entry, no entry folder with a "
                         "meta.json, in it)")



from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
