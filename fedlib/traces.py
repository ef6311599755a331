"""Recorded availability: readers that turn a device trace into a 0/1 matrix [records, rounds].

Two layouts are read:

* ``"stunner"``: the Stunner smartphone sessions of 2014 (Szabó, Téglás, Berta, Jelasity and
  Bilicki, "Stunner: A Smart Phone Trace for Developing Decentralized Edge Systems", DAIS 2019,
  doi 10.1007/978-3-030-22496-7_7), as the Gossip Learning Framework preprocessed them: one line
  per user-week, ``<user> <first state> <start ms> <tz hours> d1 d2 ...``; the first duration is
  online if the first state is 1, offline if 0, and the durations (milliseconds) alternate.
  Only records of one whole week are used (the others cover 1-6 days).
* ``"fedscale"``: FedScale's ``client_behave_trace``, a pickled dict client id ->
  ``{"duration", "inactive", "finish_time", "active", "model"}``: ``active[i]`` and
  ``inactive[i]`` (seconds) open and close the client's i-th online interval within
  ``[0, finish_time)``. A pickle runs code when it is loaded, so it is read with an unpickler
  that builds builtin containers and numbers only and refuses anything else by name.

Round r of a record covers ``[r * round_minutes, (r + 1) * round_minutes)`` from the record's
start; ``rule="start"`` marks it 1 if the device is online when the round starts, ``"whole"`` if
it is online throughout the round (a device that drops mid-round did not finish it).
"""

from __future__ import annotations

import functools
import io
import os
import pickle
from pathlib import Path

import numpy as np

from ._validate import InputError

__all__ = ["FORMATS", "RULES", "WEEK_MS", "availability", "read_fedscale", "read_stunner", "safe_load",
           "file_sha256", "resolve", "sessions", "stunner_records", "write_synthetic_stunner"]

#: the layouts :func:`availability` reads
FORMATS = ("stunner", "fedscale")
#: when a round counts as available (see the module docstring)
RULES = ("start", "whole")
#: one week in milliseconds (a full Stunner record)
WEEK_MS = 7 * 24 * 3600 * 1000
_DAY_MS = 24 * 3600 * 1000


def resolve(path: str | os.PathLike) -> Path:
    """Where a trace file is: ``path`` itself if it exists (``~`` expanded), else -- a relative
    path -- the first data folder (:func:`fedlib.data.data_roots`: ``$FEDLIB_DATA`` or
    ``~/.cache/fedlib``) that holds it, so that a config naming ``traces/sessions_100.txt``
    runs on every machine whose data folder has the file. A path found nowhere comes back as
    given (the readers then name it)."""
    from .data import data_roots
    p = Path(path).expanduser()
    if p.is_file() or p.is_absolute():
        return p
    for root in data_roots():
        if (root / p).is_file():
            return root / p
    return p


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a trace file's bytes (hex), computed once per file version (path, size and
    modification time): a run's store key holds it instead of the path, so the same file is the
    same run on every machine, and an edited file is a new one."""
    p = resolve(path)
    if not p.is_file():
        raise InputError(f"path: no such trace file {p}")
    st = p.stat()
    return _sha256(str(p.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_stunner(path: str | os.PathLike) -> list[tuple[int, list[tuple[int, int]]]]:
    """The full-week records of a Stunner session file, in file order: (record length in ms, its
    online intervals [start, end) in ms from the record's start).

    Raises:
        InputError: naming the file and line of a malformed line (too few fields, a field that is
            not an integer, a first state other than 0 / 1, a negative duration) or of durations
            that do not add up to whole days; and an empty file.
    """
    path = resolve(path)
    if not path.is_file():
        raise InputError(f"path: no such trace file {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"path: {path} is not a Stunner session file (text, one record a line: '<user> "
                         f"<first state> <start ms> <tz hours> d1 d2 ...'); it is not UTF-8 text") from None
    out = []
    lines = 0
    with io.StringIO(text, newline=None) as f:           # the lines open() gives (universal newlines)
        for i, line in enumerate(f, start=1):
            fields = line.split()
            if not fields:
                continue
            lines += 1
            if len(fields) < 5:
                raise InputError(f"{path}, line {i}: expected '<user> <first state> <start ms> <tz hours> "
                                 f"d1 d2 ...', got {len(fields)} field(s)")
            try:
                state, durations = int(fields[1]), [int(d) for d in fields[4:]]
                int(fields[2]), float(fields[3])
            except ValueError:
                raise InputError(f"{path}, line {i}: the state, start, time zone and durations must be "
                                 f"numbers (durations whole milliseconds): {line.strip()[:80]!r}") from None
            if state not in (0, 1):
                raise InputError(f"{path}, line {i}: first state must be 0 or 1, got {state}")
            if min(durations) < 0:
                raise InputError(f"{path}, line {i}: a duration is negative ({min(durations)} ms)")
            total = sum(durations)
            if total <= 0 or total % _DAY_MS:
                raise InputError(f"{path}, line {i}: the durations add up to {total} ms, not a whole number "
                                 "of days")
            if total != WEEK_MS:
                continue                                    # a partial week: not used
            intervals, t, online = [], 0, state == 1
            for d in durations:
                if online and d:
                    intervals.append((t, t + d))
                t += d
                online = not online
            out.append((total, intervals))
    if not lines:
        raise InputError(f"{path}: the trace is empty")
    return out


class _ContainersOnly(pickle.Unpickler):
    """An unpickler that builds builtin containers, strings and numbers only."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refuses {module}.{name}: a trace holds builtin containers and numbers "
                                     "only (loading anything else could run code)")


def safe_load(path: str | os.PathLike):
    """Unpickle ``path`` with :class:`_ContainersOnly`: dicts, lists, tuples, sets, strings and
    numbers come back; any class or function named in the file is refused with a ValueError
    naming the file and what it asked for."""
    path = resolve(path)
    if not path.is_file():
        raise InputError(f"path: no such trace file {path}")
    try:
        return _ContainersOnly(io.BytesIO(path.read_bytes())).load()
    except pickle.UnpicklingError as e:
        if str(e).startswith("refuses "):
            raise InputError(f"{path}: {e}") from None
        raise InputError(f"path: {path} is not a FedScale trace (a pickle expected; {e})") from None
    except (EOFError, ValueError, TypeError, IndexError, KeyError) as e:
        raise InputError(f"path: {path} is not a FedScale trace (a pickle expected; {type(e).__name__}: "
                         f"{e})") from None


def read_fedscale(path: str | os.PathLike) -> list[tuple[int, list[tuple[int, int]]]]:
    """The records of a FedScale ``client_behave_trace`` pickle, in the dict's order: (record
    length ``finish_time`` in ms, its online intervals [active[i], inactive[i]) in ms).

    Raises:
        InputError: naming the file and the client of a record that lacks a field, whose lists
            differ in length, or whose intervals are negative, reversed, overlapping or past
            ``finish_time``; an empty trace; anything but a dict.
    """
    data = safe_load(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a dict client id -> record, got {type(data).__name__}")
    if not data:
        raise InputError(f"{path}: the trace is empty")
    out = []
    for cid, rec in data.items():
        where = f"{path}, client {cid!r}"
        if not isinstance(rec, dict) or not {"active", "inactive", "finish_time"} <= set(rec):
            raise InputError(f"{where}: expected a dict with 'active', 'inactive' and 'finish_time'")
        act, ina, end = rec["active"], rec["inactive"], rec["finish_time"]
        if not isinstance(act, (list, tuple)) or not isinstance(ina, (list, tuple)) or len(act) != len(ina):
            raise InputError(f"{where}: 'active' and 'inactive' must be lists of the same length")
        if not isinstance(end, (int, float)) or end <= 0:
            raise InputError(f"{where}: 'finish_time' must be a positive number of seconds, got {end!r}")
        intervals, last = [], 0.0
        for a, b in zip(act, ina, strict=True):
            numbers = isinstance(a, (int, float)) and isinstance(b, (int, float))
            if not numbers or not 0 <= last <= a <= b <= end:
                raise InputError(f"{where}: online intervals must be increasing within [0, finish_time = "
                                 f"{end}], got [{a!r}, {b!r}] after {last:g}")
            intervals.append((round(a * 1000), round(b * 1000)))
            last = b
        out.append((round(end * 1000), intervals))
    return out


def availability(path: str | os.PathLike, format: str = "stunner", round_minutes: float = 60,
                 rule: str = "start") -> np.ndarray:
    """The 0/1 availability [records, rounds] of a recorded trace: every record in file order
    (Stunner: every full-week record), round r covering ``[r * round_minutes, (r + 1) *
    round_minutes)`` from the record's start. Read once per file version (its path, size and
    modification time) and argument set, so that many schedules built from one trace read it
    once; the array returned is read-only.

    Args:
        path: the trace file.
        format: one of :data:`FORMATS`.
        round_minutes: the length of a round; it must divide the records (a FedScale trace: the
            shortest record, which sets the number of rounds of all).
        rule: ``"start"`` (online when the round starts) or ``"whole"`` (online throughout it).

    Raises:
        InputError: one message naming the argument, or the file and line / client.
    """
    if format not in FORMATS:
        raise InputError(f"format: must be one of {', '.join(FORMATS)}; got {format!r}")
    if rule not in RULES:
        raise InputError(f"rule: must be one of {', '.join(RULES)}; got {rule!r}")
    if isinstance(round_minutes, bool) or not isinstance(round_minutes, (int, float)) \
            or not round_minutes > 0:
        raise InputError(f"round_minutes: must be a positive number, got {round_minutes!r}")
    p = resolve(path)
    stat = p.stat() if p.is_file() else None
    key = (str(p.resolve()) if stat else str(p), stat.st_size if stat else None,
           stat.st_mtime_ns if stat else None)
    return _cached(key, format, round_minutes, rule)


@functools.lru_cache(maxsize=16)
def _cached(key: tuple, format: str, round_minutes: float, rule: str) -> np.ndarray:
    out = _availability(key[0], format, round_minutes, rule)
    out.flags.writeable = False
    return out


def _availability(path: str, format: str, round_minutes: float, rule: str) -> np.ndarray:
    """:func:`availability` without its argument checks and cache."""
    records = read_stunner(path) if format == "stunner" else read_fedscale(path)
    if not records:
        raise InputError(f"{path}: no record of one whole week" if format == "stunner"
                         else f"{path}: no records")
    step = round_minutes * 60_000
    horizon = min(length for length, _ in records)
    rounds = horizon / step
    if abs(rounds - round(rounds)) > 1e-9 or round(rounds) < 1:
        raise InputError(f"round_minutes: {round_minutes:g} does not divide the record "
                         f"({horizon / 60_000:g} minutes)")
    rounds = int(round(rounds))
    starts = np.arange(rounds) * step
    out = np.zeros((len(records), rounds), dtype=np.int8)
    for i, (_, intervals) in enumerate(records):
        if not intervals:
            continue
        merged = [list(intervals[0])]
        for s, e in intervals[1:]:                               # touching intervals are one session
            if s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        intervals = merged
        a = np.array([s for s, _ in intervals], dtype=float)
        b = np.array([e for _, e in intervals], dtype=float)
        k = np.searchsorted(a, starts, side="right") - 1         # the interval opened last before each start
        ok = k >= 0
        kk = np.where(ok, k, 0)
        end = b[kk]
        if rule == "start":
            out[i] = ok & (starts < end)
        else:
            out[i] = ok & (starts + step <= end)
    return out


def stunner_records(path: str | os.PathLike) -> list[dict]:
    """Who and when the full-week records of a Stunner file are, in file order (the rows of
    :func:`availability`): ``user`` (hashed), ``start_ms`` (UNIX time of the record's start, a UTC
    midnight) and ``tz_hours`` (the device's offset of local time from UTC). Lines are checked
    by :func:`read_stunner`."""
    read_stunner(path)                                   # every line checked, with its number
    out = []
    with open(resolve(path), encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if fields and sum(int(d) for d in fields[4:]) == WEEK_MS:
                out.append({"user": fields[0], "start_ms": int(fields[2]), "tz_hours": float(fields[3])})
    return out


def sessions(path: str | os.PathLike, format: str = "stunner") -> tuple[np.ndarray, np.ndarray]:
    """The online sessions and the offline gaps between them (minutes) of every record a trace
    holds (Stunner: its full-week records): sessions that touch count as one; a gap is the time
    between two sessions of one record (the time before the first and after the last are not
    gaps: the record cuts them)."""
    if format not in FORMATS:
        raise InputError(f"format: must be one of {', '.join(FORMATS)}; got {format!r}")
    records = read_stunner(path) if format == "stunner" else read_fedscale(path)
    on, off = [], []
    for _, intervals in records:
        merged: list[list[int]] = []
        for s, e in intervals:
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        on += [e - s for s, e in merged]
        off += [b[0] - a[1] for a, b in zip(merged, merged[1:], strict=False)]
    return np.array(on, dtype=float) / 60_000, np.array(off, dtype=float) / 60_000


def write_synthetic_stunner(path: str | os.PathLike, records: int = 40, seed: int = 0,
                            partial: int = 1) -> Path:
    """Write a small synthetic trace in the Stunner layout (smoke runs and tests, which need no
    real file): ``records`` full weeks and ``partial`` three-day records (which
    :func:`read_stunner` skips), each a walk of sessions and gaps of 10 minutes to 6 hours whose
    chance of being online follows the device's local hour (about 45% by day, 15% at night), time
    zones of UTC-5 to UTC+8, starts on UTC midnights of 2014. Seeded by ``seed``; returns the path."""
    if Path(path).is_dir():
        raise InputError(f"path: {path} is a folder; expected the file to write")
    for name, value, low in (("records", records, 1), ("partial", partial, 0), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InputError(f"{name}: must be an integer >= {low}, got {value!r}")
    rng = np.random.default_rng(seed)
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(records + partial):
        length = WEEK_MS if i < records else 3 * _DAY_MS
        tz = int(rng.choice([-5, 0, 1, 2, 8]))
        start = 1_396_310_400_000 + int(rng.integers(0, 200)) * _DAY_MS       # 2014-04-01 + up to 200 days
        t, states, durations = 0, [], []
        while t < length:
            hour = ((t // 3_600_000) + tz) % 24
            online = rng.random() < (0.45 if 8 <= hour < 23 else 0.15)
            d = min(int(rng.integers(10, 361)) * 60_000, length - t)
            if states and states[-1] == online:
                durations[-1] += d
            else:
                states.append(online)
                durations.append(d)
            t += d
        lines.append(f"synthetic/{i:04d} {int(states[0])} {start} {tz} " + " ".join(map(str, durations)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
