"""Verifying stored runs: their files against sealed digests, then a replay with the check their
arithmetic allows (exact on the same kernels, the replay anchor across CPUs).
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from . import arithmetic
from ._validate import InputError
from .engine import VectorizedEngine
from .runner import Result, run_config
from .store import TIMING_COLUMNS, CorruptEntry, Entry, Store, digest_problems, write_meta

__all__ = ['VerifyReport', 'renew_fingerprints', 'replay_engine', 'stored_arithmetic', 'verify']


@dataclass
class VerifyReport:
    """Outcome of :func:`verify`.

    Attributes:
        key: the entry's key.
        rounds: rounds replayed (0: nothing was replayed).
        compared: evaluated rounds whose stored metrics were compared (the exact check only).
        mismatches: one row per (round, metric) outside the tolerance: stored, replayed,
            relative difference; anchor values appear as metrics ``anchor.step_norm`` /
            ``anchor.step_proj``, and a dataset whose content differs from the stored run's as
            ``data.<name>`` (its digests, round NaN).
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
        if self.check == "digest":                 # nothing was replayed: the files were edited
            return (f"{self.key}: does NOT reproduce ({what}): {len(self.mismatches)} stored file(s) differ "
                    f"from the digests sealed with the run, nothing replayed: {self.reason}")
        data = int(self.mismatches["metric"].astype(str).str.startswith("data.").sum())
        pairs = len(self.mismatches) - data
        differ = ([f"{pairs} (round, metric) pairs differ beyond rtol={self.rtol:g}, atol={self.atol:g}"]
                  if pairs or not data else []) + ([f"{data} dataset(s) differ"] if data else [])
        lines = [f"{self.key}: does NOT reproduce ({what}): {', '.join(differ)}; {self.reason}:"]
        for r in self.mismatches.head(20).itertuples():
            if str(r.metric).startswith("data."):      # a content digest, not a metric of a round
                lines.append(f"  {r.metric[5:]}: stored with {r.stored}, replayed on {r.replayed}")
                continue
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
            "torch_threads": entry.meta.get("torch_threads"), "cpu": entry.meta.get("cpu")}


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


def _check_verify_args(rounds: object, rtol: object, atol: object, device: object = None,
                       check_digests: object = True) -> int | str | None:
    """:func:`verify`'s ``rounds`` (returned, ``"all"`` as None), tolerances, ``device`` and
    ``check_digests``; else one ValueError naming the argument."""
    whole = rounds is None or (isinstance(rounds, str) and rounds in ("auto", "all"))
    if not (whole or (isinstance(rounds, int) and not isinstance(rounds, bool) and rounds >= 1)):
        raise InputError(f"rounds: must be 'auto', 'all' or None (the whole run) or an int >= 1; "
                         f"got {rounds!r}")
    if not isinstance(check_digests, bool):
        raise InputError(f"check_digests: must be True or False, got {check_digests!r}")
    if device is not None:
        from .runner import _device
        _device(device)
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
            raise InputError(f"{name}: must be a finite number >= 0 (a tolerance), got {tol!r}")
    return None if rounds == "all" else rounds


def verify(entry: Entry | str | os.PathLike, rounds: int | str | None = "auto", rtol: float = 1e-6,
           atol: float = 1e-9, device: str | None = None, check_digests: bool = True) -> VerifyReport:
    """Check a stored run: its files against their sealed digests, then a replay of its rounds
    with the check its arithmetic allows.

    * **Integrity**: the entry's ``config.json``, ``history.csv`` (and ``params.npy``) must match
      the content digests sealed in its ``meta.json`` (:meth:`Store.seal`); an edit anywhere in
      the stored history fails here, whatever rounds are replayed (check ``"digest"``).
    * **Exact check** (the replay computes with the entry's arithmetic: same device, torch
      build, instruction sets, thread count and CPU, see :func:`fedlib.arithmetic.same_kernels`:
      vendor, family, model, name, cache and oneDNN's detailed ISA): every metric of
      every evaluated round replayed (timing columns excluded) and the anchor must agree to
      ``rtol`` (1e-6 by default: the same kernels give the same bits). The replay uses the
      entry's thread count.
    * **Cross-CPU check** (another arithmetic, e.g. stored on AVX-512, replayed on AVX2, or
      stored on an AMD EPYC and replayed on an Intel Xeon at the same level): the
      kernels round differently and a few rounds of SGD amplify that, so the stored
      evaluations cannot be expected; the first :data:`~fedlib.arithmetic.ANCHOR_ROUNDS` rounds
      are replayed and their anchor (displacement norm and projection, float64) compared at
      :data:`~fedlib.arithmetic.CROSS_RTOL`, which a changed rule, rate, schedule or seed fails.
    * **No check**: another arithmetic and no anchor: the report says so (status ``unchecked``)
      instead of failing. An entry stored before fedlib recorded arithmetic and anchors gets
      the exact check first: if it matches, it reproduces; if it does not and this machine's
      arithmetic is not the one assumed for such entries (:data:`fedlib.arithmetic.LEGACY` on the
      CPU their meta names), the difference may come from the kernels alone and the entry is
      reported as unchecked ("not checkable here"), never as differing.

    * **Data**: an entry that records its datasets' content digests (``meta.json``'s ``data``,
      since fedlib recorded them) differs whatever the metrics say where the replay loaded other
      data (another copy or version of the files), and the report says so (rows ``data.<name>``).

    The replay uses the config's full participation schedule truncated to the rounds replayed (so
    it sees exactly the rounds the stored run saw).

    Args:
        entry: an :class:`Entry` or an entry folder.
        rounds: rounds to replay: ``"auto"`` (default) the first evaluated round after round 0
            and at least the anchor's rounds (the cross-CPU check: the anchor's rounds only);
            ``None`` or ``"all"`` the whole run; or a number (beyond the run: the whole run).
        rtol, atol: the exact check's tolerance, ``|stored - replayed| <= atol + rtol * |stored|``.
        device: where to replay.
        check_digests: check the files against their sealed digests first.

    Returns:
        A :class:`VerifyReport` (``status`` reproduces / differs / unchecked, ``check``,
        ``reason``; ``str()`` says which rounds and metrics differ and by how much).
    """
    rounds = _check_verify_args(rounds, rtol, atol, device, check_digests)
    entry = _open_entry(entry)
    if check_digests and (edits := digest_problems(entry.path, entry.meta)):
        return _edited(entry, edits, rtol, atol)
    sealed = "" if entry.meta.get("digests") or not check_digests else \
        " (not sealed: the stored files' integrity is not checked; python -m fedlib seal)"
    if entry.status == "error" or not len(entry.history):
        raise InputError(f"entry: {entry.path} holds a failed run; nothing to verify")
    plan, replay = _plan_and_replay(entry, rounds, rtol, atol, device)
    if replay is None:
        return VerifyReport(entry.path.name, 0, [], pd.DataFrame(columns=_MISMATCH_COLUMNS), rtol, atol,
                            check="none", reason=plan.reason + sealed)
    return _judge(entry, plan, replay, sealed)


def _edited(entry: Entry, edits: list[str], rtol: float, atol: float) -> VerifyReport:
    """The report of an entry whose files differ from their sealed digests (check ``"digest"``):
    one row per file, nothing replayed."""
    rows = [{"round": math.nan, "metric": f"file {e.split(' ', 1)[0]}", "stored": math.nan,
             "replayed": math.nan, "rel_diff": math.inf} for e in edits]
    return VerifyReport(entry.path.name, 0, [], pd.DataFrame(rows, columns=_MISMATCH_COLUMNS), rtol, atol,
                        check="digest", reason="; ".join(edits))


def _plan_and_replay(entry: Entry, rounds: int | str | None, rtol: float, atol: float,
                     device: str | None) -> tuple[_CheckPlan, Result | None]:
    """The check the entry's arithmetic allows (:func:`_plan_check`) and its replay (None when no
    check can run here), computed with the entry's thread count on a CPU (this process's setting
    restored after)."""
    stored = stored_arithmetic(entry)
    threads = stored.get("torch_threads")
    old_threads = torch.get_num_threads()
    if threads and torch.device(device or "cpu").type == "cpu":
        torch.set_num_threads(int(threads))      # the replay uses the entry's thread count
    try:
        plan = _plan_check(entry, stored, rounds, rtol, atol, device or "cpu")
        if plan.check == "none":
            return plan, None
        return plan, _replay(entry, plan.rounds, device)
    finally:
        torch.set_num_threads(old_threads)


def _open_entry(entry: Entry | str | os.PathLike) -> Entry:
    """An :class:`Entry`, or the entry stored in a folder (a ValueError when it holds none)."""
    if isinstance(entry, Entry):
        return entry
    p = Path(entry)
    if p.is_file() and (p.parent / "meta.json").is_file():
        raise InputError(f"entry: {p} is a file of a stored run; give the entry's folder, {p.parent}")
    if not (p / "meta.json").is_file():
        if p.is_dir() and any(p.glob("*/meta.json")):
            raise InputError(f"entry: {p} is a store, not one stored run; verify one of its entries (its "
                             f"folders), or all of them with python -m fedlib verify {p}")
        raise InputError(f"entry: {p} is not a stored run (no meta.json there)")
    try:
        return Store(p.parent, create=False).read(p.name, check_digests=False)
    except CorruptEntry as e:
        raise InputError(f"entry: {e}") from None


@dataclass(frozen=True)
class _CheckPlan:
    """Which check a replay allows (exact / cross-cpu / none), over which rounds, at which
    tolerance, and why; decided from the stored and the current arithmetic before any replay."""

    check: str
    rounds: int
    rtol: float
    atol: float
    reason: str
    same: bool
    legacy: bool
    differs: str
    anchor: arithmetic.Anchor | None


def _plan_check(entry: Entry, stored: dict, rounds, rtol: float, atol: float, replay_dev: str) -> _CheckPlan:
    """The check of :func:`verify` for this entry on this machine (see its docstring)."""
    legacy = not entry.meta.get("arithmetic")
    anchor = arithmetic.Anchor.from_dict(entry.meta["anchor"]) if entry.meta.get("anchor") else None
    if anchor is not None and not anchor.rounds:
        anchor = None
    here = arithmetic.current(replay_dev)
    same, why = arithmetic.same_kernels(stored, here)
    differs = (f"computed on {arithmetic.describe(stored)}, replayed on {arithmetic.describe(here)}"
               + (f" ({why})" if why else ""))
    evaluated = [int(r) for r in entry.history["round"].dropna()]
    if same or legacy:
        check = "exact"
        reason = (f"computed and replayed on {arithmetic.describe(here)}" if not legacy else
                  f"its arithmetic was not recorded; replayed on {arithmetic.describe(here)}")
        if rounds == "auto":
            later = [r for r in evaluated if r > 0]
            rounds = max(later[0] if later else 1, max(anchor.rounds) if anchor else 0)
    elif anchor is None:
        return _CheckPlan("none", 0, rtol, atol, f"{differs}: only the cross-CPU check can apply, and this "
                          "entry has no anchor (recomputing it adds one)", same, legacy, differs, None)
    else:
        check, rtol, atol = "cross-cpu", arithmetic.CROSS_RTOL, 0.0
        reason = (f"{differs}: the kernels round differently, so only the anchor of the first rounds is "
                  "compared")
        rounds = max(anchor.rounds) if rounds == "auto" else rounds
    rounds = entry.config.rounds if rounds is None else min(int(rounds), entry.config.rounds)
    return _CheckPlan(check, rounds, rtol, atol, reason, same, legacy, differs, anchor)


def replay_engine(meta: dict) -> VectorizedEngine | str:
    """The engine a replay of an entry computes with: a ``VectorizedEngine`` with the options that
    change the arithmetic (``VectorizedEngine.ARITHMETIC``, e.g. ``clients_innermost``: other
    kernels on CUDA) that the entry's ``meta.json`` records (``engine``: the repr of the engine
    that computed it), the default engine where it records none. The options that give the plain
    path's bits (CUDA graphs, compiled draws) are not needed for an exact replay (the GPU check
    compares the campaign's engine with this one bit for bit before the campaign takes an
    option: ``benchmarks/gpu_check.py``)."""
    recorded = str(meta.get("engine", ""))
    on = {name: True for name in VectorizedEngine.ARITHMETIC
          if recorded.startswith("VectorizedEngine(") and f"{name}=True" in recorded}
    return VectorizedEngine(**on) if on else "vectorized"


def _replay(entry: Entry, rounds: int, device: str | None):
    """The entry's config run again for its first ``rounds`` rounds (from its warm-up's model),
    with the engine of :func:`replay_engine`."""
    x0 = Store(entry.path.parent, create=False).warmup_model(entry.config) if entry.config.init_from else None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*diverged.*", category=RuntimeWarning)
        # a replay of the first rounds sees only some clients: not worth a warning
        warnings.filterwarnings("ignore", message="^participation: .* never active", category=RuntimeWarning)
        return run_config(entry.config, device=device, rounds=rounds, x0=x0,
                          engine=replay_engine(entry.meta))


def _judge(entry: Entry, plan: _CheckPlan, replay, sealed: str) -> VerifyReport:
    """Compare the replay with the stored run as the plan says: every metric (exact check) and
    the anchor's rounds; the report."""
    key, rounds, rtol, atol = entry.path.name, plan.rounds, plan.rtol, plan.atol
    rows, max_rel, compared = [], {}, []
    if plan.check == "exact":
        compared, rows, max_rel = _compare_metrics(entry.history, replay.history, rounds, rtol, atol)
    anchor = plan.anchor
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
    data_rows, other_data = _data_differs(entry.meta.get("data"), replay.info.get("data"),
                                          bool(entry.config.arguments("problem_args").get("synthetic")))
    rows += data_rows
    if other_data:
        return VerifyReport(key, rounds, compared, pd.DataFrame(rows, columns=_MISMATCH_COLUMNS), rtol, atol,
                            max_rel, plan.check, f"{other_data}; {plan.reason}{sealed}")
    if plan.legacy and rows and not plan.same:
        worst = max(rows, key=lambda r: r["rel_diff"])
        reason = (f"{plan.differs}: the replay differs (up to {worst['rel_diff']:.1e}, round "
                  f"{worst['round']}, {worst['metric']}), which the kernels alone can cause; only the "
                  f"cross-CPU check could tell, and this entry has no anchor (recomputing it adds "
                  f"one){sealed}")
        return VerifyReport(key, rounds, compared, pd.DataFrame(columns=_MISMATCH_COLUMNS), rtol, atol,
                            max_rel, "none", reason)
    return VerifyReport(key, rounds, compared, pd.DataFrame(rows, columns=_MISMATCH_COLUMNS), rtol, atol,
                        max_rel, plan.check, plan.reason + sealed)


_MISMATCH_COLUMNS = ["round", "metric", "stored", "replayed", "rel_diff"]


def _data_differs(stored: dict | None, replayed: dict | None, synthetic: bool = False
                  ) -> tuple[list[dict], str]:
    """Rows (metric ``data.<name>``) and a sentence for each dataset whose content digest differs
    between the stored run and its replay (:attr:`fedlib.data.Dataset.digest`): the replay
    computed on other data, so its differences are not the code's. ``synthetic``: the run computed
    on :func:`fedlib.data.synthetic_like`'s stand-in, recorded under the dataset's name, so it is
    the stand-in that changed, not the files. None, none: an entry stored before fedlib recorded
    the digests."""
    if not stored or not replayed:
        return [], ""
    rows = [{"round": math.nan, "metric": f"data.{name}", "stored": digest, "replayed": replayed.get(name),
             "rel_diff": math.inf} for name, digest in stored.items() if replayed.get(name) != digest]
    if not rows:
        return [], ""
    names = ", ".join(r["metric"][5:] for r in rows)
    if synthetic:
        return rows, (f"the replay computed on other data: the synthetic stand-in for {names} "
                      "(fedlib.data.synthetic_like) differs from the one the run was stored with (its "
                      "generator or sizes changed)")
    return rows, (f"the replay computed on other data: the content of {names} differs from the data the run "
                  "was stored with (another copy or version of the files; fedlib.data.load reads the "
                  "first folder of fedlib.data.data_roots that holds them)")


def renew_fingerprints(store: Store | str | os.PathLike, keys=None, rounds: int | str | None = "auto",
                       progress: bool = False) -> dict[str, str]:
    """Bring the code fingerprints of stale entries up to date where the stored run is shown
    unchanged by the code change: the same code under another fingerprint scheme, or a replay that
    moves no bit (a refactor: the same arithmetic in another shape).

    An entry is stale when its algorithm's behaviour, its problem builder's source or its
    participation kind's source differs from what its ``meta.json`` records
    (:func:`fedlib.fingerprint.stale_parts`); :class:`Store` then recomputes it. Two ways out of
    that without recomputing:

    * **migrated** (no replay): the entry records an algorithm fingerprint of the scheme before
      behavioural ones (``"sha256:..."``, the source of its algorithm's classes) that equals the
      source fingerprint of those classes now (:func:`fedlib.fingerprint.legacy_algorithm_fingerprint`,
      or a source recorded as a refactor of it, :func:`fedlib.fingerprint.same_legacy_code`), and
      its problem part is current: the code is the same, so it gets the behavioural fingerprint.
    * **renewed** (bitwise replay): every other stale entry is replayed with the current code on
      its own arithmetic and compared with **zero tolerance**: every stored metric of every
      evaluated round replayed, and the float64 anchor. Only an entry that matches bit for bit
      gets the current fingerprint.

    Either way ``meta.json`` keeps the old fingerprint and the evidence under ``"renewed"`` (date,
    commit, the old and new fingerprints, the check, the rounds replayed); results and digests
    are not touched. Current entries are left byte for byte as they are, so running it again
    changes nothing.

    Args:
        store: a store or its folder.
        keys: entries to consider (default: all).
        rounds: rounds to replay (as :func:`verify`: ``"auto"``, a number, or None for the whole run).
        progress: show a progress bar.

    Returns:
        A dict from key to outcome for the stale entries, one of ``migrated``, ``renewed``,
        ``differs: ...`` (left stale: it must be recomputed) or ``not checkable: ...`` (another
        arithmetic: the exact replay needs the machine kind that computed it); ``unknown: ...`` for
        an entry whose algorithm, problem, participation kind or dataset is not registered here
        (import the module that registers it first); and ``unreadable: ...`` for an entry whose
        files cannot be read (:class:`fedlib.store.CorruptEntry`).
    """
    from tqdm.auto import tqdm

    store = store if isinstance(store, Store) else Store(store)
    out: dict[str, str] = {}
    for key in tqdm(store.keys() if keys is None else list(keys), desc="renew", unit="entry",
                    disable=not progress):
        outcome = _renew_one(store, key, rounds)
        if outcome is not None:
            out[key] = outcome
    return out


def _renew_one(store: Store, key: str, rounds: int | str | None) -> str | None:
    """:func:`renew_fingerprints` of one entry: its outcome, None where it is current."""
    from .fingerprint import stale_parts
    try:
        entry = store.read(key)
    except CorruptEntry as e:                   # nothing to renew: named, the others go on
        return f"unreadable: {str(e).split(': ', 1)[-1]}"
    try:
        parts = stale_parts(entry.meta.get("code"), entry.config)
        if not parts:
            return None
        outcome, record = _renewal(entry, parts, rounds)
    except InputError as e:
        if not _unregistered(e):
            raise
        return f"unknown: {str(e).splitlines()[0]}"    # its code is not here to judge: named
    if record is not None:
        _write_renewal(entry, record)
    return outcome


#: what an entry may name that only a registration makes known (an entry of a user's own algorithm
#: or problem cannot be replayed, nor renewed, until the module that registers it is imported)
_REGISTRIES = ("algorithm", "problem", "participation kind", "dataset")


def _unregistered(e: Exception) -> bool:
    """Whether ``e`` is the refusal of a name no registration made known here (:data:`_REGISTRIES`):
    an entry of a user's own algorithm, problem, kind or dataset, whose module is not imported."""
    return any(f"unknown {what} " in str(e) for what in _REGISTRIES)


def _renewal(entry: Entry, parts: list[str], rounds: int | str | None) -> tuple[str, dict | None]:
    """How a stale ``entry`` (its stale ``parts``) is renewed: ``("migrated", record)`` when its
    stored algorithm fingerprint is the old scheme's of the same code, ``("renewed", record)``
    when a zero-tolerance replay matches, else the outcome and None (left stale)."""
    from . import algorithms
    from .fingerprint import same_legacy_code
    old = entry.meta.get("code")
    cls = algorithms.get(entry.config.algorithm)
    if parts == ["algorithm"] and same_legacy_code(old.get("algorithm"), cls):
        return "migrated", {"rounds_replayed": 0, "evaluations_compared": [],
                            "check": "migrated: the stored fingerprint is the source fingerprint of the "
                                     "algorithm's classes as they are now (the same code), replaced by "
                                     "its behavioural one"}
    rep = verify(entry, rounds=rounds, rtol=0.0, atol=0.0)
    if rep.check != "exact":
        return f"not checkable: {rep.reason}", None
    if not rep.ok:
        return "differs: " + str(rep).split("\n", 1)[-1].strip().splitlines()[0], None
    return "renewed", {"rounds_replayed": rep.rounds, "evaluations_compared": rep.compared,
                       "check": "replay on the entry's arithmetic, every metric and the anchor bit for bit"}


def _write_renewal(entry: Entry, record: dict) -> None:
    """Give ``entry`` the current code's fingerprint, keeping the old one and ``record`` (the
    evidence) under ``meta["renewed"]``; written atomically."""
    from .fingerprint import config_fingerprint
    from .store import _git_commit
    old, new = entry.meta.get("code"), config_fingerprint(entry.config)
    meta = dict(entry.meta)
    meta["renewed"] = [*meta.get("renewed", []), {
        "date": pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"), "git_commit": _git_commit(),
        "from": old, "to": new, **record}]
    meta["code"] = new
    write_meta(entry.path, meta)                # sealed again, the renewal with it


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
