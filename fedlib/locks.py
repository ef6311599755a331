"""Claims on a store's runs, so that one writer computes a run at a time.

Two sweeps over overlapping configs (two users of one store, a campaign beside a sweep, the Dask
workers of two clients sharing a store folder) computed the runs they share twice: the store's
atomic write (:meth:`fedlib.store.Store.write`) kept one entry and dropped the other, and the
hours of the second run were lost. A writer now claims a run's key before computing it: an
exclusive ``flock`` on ``<store>/.claims/<key>.lock`` (ignored by git), held while the run computes
and released by the kernel when its process ends however it ends, so that a killed sweep leaves
no stale claim and nothing has to expire. A writer that finds the claim held waits for it and then
reads the other writer's entry instead of computing the run again (:meth:`Store.compute
<fedlib.store.Store.compute>`); a sweep starts the runs that no other writer holds first
(:func:`fedlib.sweep`), and a campaign leaves a held run to its writer and lists it as left.

The lock file holds who claimed it (process, host, time), for the messages. The holder removes it
while still holding the lock, and a writer that locked a file removed in between (it opened the
file before the removal) sees that the path no longer names its file and claims again, so two
writers never hold one key. A killed holder leaves its lock file (and the ``.claims`` folder)
behind, held by nobody: the next claim of that run takes it and removes it.

Where locks are not shared: machines that mount a store over a network file system without lock
support do not see each other's claims (Linux maps ``flock`` on NFS to byte-range locks, which an
NFSv4 server shares); the atomic writes then remain the only guard, so an entry is never
corrupted but a run may be computed twice. On a system without ``fcntl`` (Windows) claims are
not taken at all, with the same consequence.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ._validate import InputError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no claims (module docstring)
    fcntl = None

#: the folder of a store that holds the claims' lock files (a dot-folder: no listing reads it)
FOLDER = ".claims"

#: the longest key a claim takes (a lock file's name must fit a file system's 255 bytes)
MAX_KEY = 200
_KEY = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*")      # (an algorithm's name may hold '+')
_HELD = threading.local()          # the lock files this thread holds (a claim taken twice would wait forever)


@dataclass(frozen=True)
class Holder:
    """Who holds a claim, as its lock file records it.

    Attributes:
        pid: the holder's process id (on ``host``).
        host: the holder's host name.
        since: when it claimed the run (ISO 8601, UTC, seconds).
    """

    pid: int | None
    host: str
    since: str

    def __str__(self) -> str:
        if self.pid is None:
            return "another writer (not recorded: it has just begun)"
        return f"process {self.pid} on {self.host} (since {self.since})"


def lock_path(store: str | os.PathLike, key: str) -> Path:
    """The lock file of the run ``key`` in the store folder ``store`` (``~`` expanded, as
    :class:`~fedlib.store.Store` does).

    Raises:
        InputError: a ``store`` that is not a path (or is empty); a ``key`` that is not a run's key:
            one file name of letters, digits, ``_``, ``+``, ``-`` and ``.``, not starting with ``.``, at
            most :data:`MAX_KEY` characters (a store's keys are ``<algorithm>-<16 hex digits>``)."""
    if not isinstance(store, (str, os.PathLike)) or not str(os.fspath(store)):
        raise InputError(f"store: must be a store folder's path (a str or os.PathLike, not empty), got "
                         f"{store!r}")
    if not isinstance(key, str) or not _KEY.fullmatch(key) or len(key) > MAX_KEY:
        raise InputError(f"key: must be a run's key, one file name such as 'fedavg-1acddf9a99215aed' "
                         f"(letters, digits, '_', '+', '-' and '.', not starting with '.', at most {MAX_KEY} "
                         f"characters), got {key!r}")
    return Path(store).expanduser() / FOLDER / f"{key}.lock"


def holder(store: str | os.PathLike, key: str) -> Holder | None:
    """Who holds the claim on the run ``key`` now; None where nobody does (or without ``fcntl``).

    A claim this process holds counts too (a lock is per open file, not per process)."""
    path = lock_path(store, key)
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def claim(store: str | os.PathLike, key: str,
          on_wait: Callable[[Holder], None] | None = None) -> Iterator[Holder | None]:
    """Hold the claim on the run ``key`` of the store folder ``store`` for the ``with`` block.

    Where another writer holds it, ``on_wait`` is called once with that writer and the call waits
    until the claim is free (the other writer's run finished, failed or was killed). Claims do not
    nest: :meth:`Store.compute <fedlib.store.Store.compute>` claims the run it computes, so code
    that holds a run's claim cannot compute that run in the same thread.

    Yields:
        The writer this call waited for, or None where the claim was free: a caller that waited
        reads the store again before computing (the other writer's entry is there, a failure
        included, unless that writer was killed or ran out of memory).

    Raises:
        InputError: a bad ``key`` (:func:`lock_path`), or a ``store`` that is a file.
        RuntimeError: this thread holds the claim already (it would wait for itself forever).
    """
    path = lock_path(store, key)
    if on_wait is not None and not callable(on_wait):
        raise InputError(f"on_wait: must be a function of the holder waited for, or None, got {on_wait!r}")
    made = [d for d in (path.parent, *path.parent.parents) if not d.exists()]   # deepest first
    top = path.parent.parents[len(made) - 1] if made else path.parent            # what exists of it
    if top.exists() and not top.is_dir():      # (gone meanwhile: another writer's claims folder)
        raise InputError(f"store: must be a store folder (or one to be created), got {store} ({top} is "
                         "a file)")
    if fcntl is None:
        yield None
        return
    here = os.path.realpath(path)              # one file however it is named (links, '..')
    held = _HELD.__dict__.setdefault("paths", set())
    if here in held:
        raise RuntimeError(f"{key}: this thread holds the claim on this run already (fedlib.locks.claim "
                           f"around Store.compute of the same run?); claiming it again would wait forever")
    fd, waited = _acquire(path, on_wait)
    held.add(here)
    try:
        with contextlib.suppress(OSError):     # (a file another user left, opened read-only: unsaid)
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(_me()).encode(), 0)
        yield waited
    finally:
        try:
            path.unlink()          # while still held: a writer that opened this file claims again
        except FileNotFoundError:
            pass
        os.close(fd)
        held.discard(here)
        for d in dict.fromkeys([path.parent, *made]):    # the claims' folder, then the store's
            try:                   # folders this claim made (a store is created by its first entry,
                d.rmdir()          # not by a claim); only where empty: no other claim, no entry
            except OSError:
                break


def _acquire(path: Path, on_wait: Callable[[Holder], None] | None) -> tuple[int, Holder | None]:
    """An open file descriptor of ``path`` locked exclusively by this call, and the writer it
    waited for (None: none). A file removed by its holder after this call opened it is not the
    claim any more: the call opens the path again."""
    waited = None
    while True:
        try:
            with contextlib.suppress(FileExistsError):   # (there, or removed again as mkdir looked)
                path.parent.mkdir(parents=True, exist_ok=True)
            fd = _open(path)
        except FileNotFoundError:              # the folder was removed by a finishing holder
            continue
        except OSError as e:                   # read-only, no permission, no space
            raise InputError(f"store: cannot write to {path.parent.parent} to claim a run "
                             f"({e.strerror})") from e
        try:
            if not _lock_soon(fd):
                if waited is None:
                    waited = _read(fd)
                    if on_wait is not None:
                        on_wait(waited)
                fcntl.flock(fd, fcntl.LOCK_EX)      # until the holder releases it
            if _names(path, fd):
                return fd, waited
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _lock_soon(fd: int, within: float = 0.05, pause: float = 0.002) -> bool:
    """Whether ``fd`` could be locked exclusively within ``within`` seconds, trying every ``pause``
    seconds: :func:`holder`'s look at a claim holds it shared for an instant (longer where the
    looking thread waits for the interpreter's lock, up to its switch interval of 5 ms), and a
    writer that met such a look must not report it as a holder (the file's record would name the
    last, perhaps long-dead, holder)."""
    end = time.monotonic() + within
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= end:
                return False
            time.sleep(pause)


def _open(path: Path) -> int:
    """``path`` opened to be locked: for writing (its holder is recorded), created where missing,
    readable and writable by all whom the umask allows (the writers of a shared store folder may
    be several users); read-only where another user's file refuses writing (``flock`` needs no
    write access on a local file system)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        return os.open(path, os.O_RDONLY)


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)


def _me() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "since": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}


def _read(fd: int) -> Holder:
    """The holder a lock file records; one that has not written itself yet, or whose record names
    a process of this host that has ended (a killed holder's file, met by a look of
    :func:`holder` held for an instant), is an unnamed writer (pid None)."""
    try:
        d = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        d = {}
    pid, host = d.get("pid"), str(d.get("host", "?"))
    if not isinstance(pid, int) or (host == socket.gethostname() and not _alive(pid)):
        return Holder(None, host, "?")
    return Holder(pid, host, str(d.get("since", "?")))


def _alive(pid: int) -> bool:
    """Whether the process ``pid`` of this host is running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):   # another user's (alive), or no such number (not)
        return pid > 0
    return True
