"""fedlib.traces: recorded availability read into 0/1 matrices, from small files written in the
Stunner and FedScale layouts (the real Stunner files are read only when the data folder has them)."""

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from fedlib import traces

H = 3600 * 1000                     # one hour in ms
WEEK = traces.WEEK_MS


def _stunner(tmp_path: Path, lines: list[str]) -> Path:
    f = tmp_path / "sessions.txt"
    f.write_text("\n".join(lines) + "\n")
    return f


def _week(first: int, hours: list[float]) -> str:
    """A record of one week: alternating durations (hours) starting online if ``first`` is 1,
    the last duration filling the week."""
    ms = [int(h * H) for h in hours]
    ms.append(WEEK - sum(ms))
    return f"user {first} 1398902400000 2 " + " ".join(map(str, ms))


def test_stunner_records_become_rounds_by_both_rules(tmp_path):
    # record 0: online 0-1.5 h, offline 1.5-3 h, online 3 h - end; record 1: offline 0-0.5 h, online
    # 0.5-2 h, offline after; a two-day record is not a full week and is left out
    f = _stunner(tmp_path, [_week(1, [1.5, 1.5]), "short 1 0 0 " + f"{24 * H} {24 * H}",
                            _week(0, [0.5, 1.5])])
    start = traces.availability(f, round_minutes=60, rule="start")
    whole = traces.availability(f, round_minutes=60, rule="whole")
    assert start.shape == whole.shape == (2, 168)
    assert start[0, :4].tolist() == [1, 1, 0, 1] and whole[0, :4].tolist() == [1, 0, 0, 1]
    assert start[1, :4].tolist() == [0, 1, 0, 0] and whole[1, :4].tolist() == [0, 1, 0, 0]
    assert start[0, 3:].all() and not start[1, 2:].any()
    assert (whole <= start).all()                # a whole round online was online at its start
    half = traces.availability(f, round_minutes=30, rule="whole")
    assert half.shape == (2, 336) and half[0, :6].tolist() == [1, 1, 1, 0, 0, 0]


def test_touching_sessions_are_one_session(tmp_path):
    f = _stunner(tmp_path, [_week(1, [0.5, 0, 1.0])])             # online 0.5 h, 0 ms offline, online on
    assert traces.availability(f, round_minutes=60, rule="whole")[0, 0] == 1


def _fedscale(tmp_path: Path, data) -> Path:
    f = tmp_path / "client_behave_trace"
    f.write_bytes(pickle.dumps(data))
    return f


def test_fedscale_layout_is_read_in_seconds(tmp_path):
    day = 24 * 3600
    data = {7: {"duration": day, "inactive": [1800, 7200], "finish_time": day, "active": [0, 5400],
                "model": "phone"},
            3: {"duration": day, "inactive": [day], "finish_time": day, "active": [3600], "model": "tablet"}}
    f = _fedscale(tmp_path, data)
    start = traces.availability(f, format="fedscale", round_minutes=60, rule="start")
    whole = traces.availability(f, format="fedscale", round_minutes=60, rule="whole")
    assert start.shape == (2, 24)                                # dict order: client 7, then 3
    assert start[0, :3].tolist() == [1, 0, 0] and whole[0, :3].tolist() == [0, 0, 0]
    assert start[1, :2].tolist() == [0, 1] and whole[1, 1:].all()


class _Smuggler:
    def __reduce__(self):
        return (os.system, ("echo owned",))


@pytest.mark.parametrize("payload, message", [
    ({1: {"active": [0], "inactive": [1], "finish_time": 60, "hook": _Smuggler()}},
     r"refuses (posix|nt)\.system"),
    (np.zeros(3), r"refuses numpy"),
])
def test_a_pickle_smuggling_anything_but_containers_is_refused(tmp_path, payload, message):
    f = _fedscale(tmp_path, payload)
    with pytest.raises(ValueError, match=rf"^{f}: {message}"):
        traces.availability(f, format="fedscale")


@pytest.mark.parametrize("lines, message", [
    (["user 1 0 2"], r"line 1: expected '<user> <first state>"),
    (["user 1 0 2 12 x"], r"line 1: .* must be\s+numbers"),
    (["user 2 0 2 " + str(WEEK)], r"line 1: first state must be 0 or 1, got 2"),
    (["user 1 0 2 -5 " + str(WEEK + 5)], r"line 1: a duration is negative"),
    ([_week(1, [1.0]), "user 1 0 2 1000 2000"], r"line 2: the durations add up to 3000 ms, not a whole"),
    (["", ""], r"the trace is empty"),
    (["short 1 0 0 " + str(24 * H)], r"no record of one whole week"),
])
def test_malformed_stunner_files_are_named_by_line(tmp_path, lines, message):
    f = _stunner(tmp_path, lines)
    with pytest.raises(ValueError, match=rf"^{f}(, |: ){message}"):
        traces.availability(f)


@pytest.mark.parametrize("data, message", [
    ({}, r"the trace is empty"),
    ([1, 2], r"expected a dict client id -> record, got list"),
    ({5: {"active": [0]}}, r"client 5: expected a dict with 'active'"),
    ({5: {"active": [0, 10], "inactive": [5], "finish_time": 60}}, r"client 5: 'active' and 'inactive' must"),
    ({5: {"active": [10], "inactive": [5], "finish_time": 60}}, r"client 5: online intervals must be"),
    ({5: {"active": [0], "inactive": [90], "finish_time": 60}}, r"client 5: online intervals must be"),
    ({5: {"active": [0], "inactive": [9], "finish_time": 0}}, r"client 5: 'finish_time' must be a positive"),
])
def test_malformed_fedscale_traces_are_named_by_client(tmp_path, data, message):
    f = _fedscale(tmp_path, data)
    with pytest.raises(ValueError, match=rf"^{f}(, |: ){message}"):
        traces.availability(f, format="fedscale")


def test_bad_arguments_are_named(tmp_path):
    f = _stunner(tmp_path, [_week(1, [1.0])])
    with pytest.raises(ValueError, match=r"^format: must be one of stunner, fedscale; got 'csv'"):
        traces.availability(f, format="csv")
    with pytest.raises(ValueError, match=r"^rule: must be one of start, whole; got 'any'"):
        traces.availability(f, rule="any")
    with pytest.raises(ValueError, match=r"^round_minutes: 11 does not divide the record \(10080 minutes\)"):
        traces.availability(f, round_minutes=11)
    with pytest.raises(ValueError, match=r"^round_minutes: must be a positive number, got 0"):
        traces.availability(f, round_minutes=0)
    with pytest.raises(ValueError, match=r"^path: no such trace file"):
        traces.availability(tmp_path / "none.txt")


def test_the_real_stunner_files_when_the_data_folder_has_them():
    root = Path(os.environ.get("FEDLIB_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    f100, f80 = root / "traces" / "sessions_100.txt", root / "traces" / "sessions_80.txt"
    if not f100.exists():
        pytest.skip("the Stunner files are not in the data folder")
    a100, a80 = traces.availability(f100), traces.availability(f80)
    assert a100.shape == a80.shape == (3659, 168)                 # the README's full-week records
    assert 0.2 < a100.mean() < a80.mean() < 0.4                   # the _80 file is online more
    assert (traces.availability(f100, rule="whole") <= a100).all()


def test_a_recorded_trace_is_a_participation_kind(tmp_path):
    from fedlib import ExperimentConfig, participation
    lines = [_week(1, [1.0 + i, 2.0]) for i in range(6)] + ["never 0 0 2 " + str(WEEK)]
    f = _stunner(tmp_path, lines)
    m = traces.availability(f)
    sched = participation.build("recorded", 4, 200, seed=3, path=str(f), offset=5)
    again = participation.build("recorded", 4, 200, seed=3, path=str(f), offset=5)
    other = participation.build("recorded", 4, 200, seed=4, path=str(f), offset=5)
    assert np.array_equal(sched.active, again.active)                    # seeded
    cols = (5 + np.arange(200)) % 168                                    # round 0 at hour 5; wraps
    rows = [[i for i in range(7) if np.array_equal(m[i, cols], sched.active[:, c])] for c in range(4)]
    assert all(len(r) == 1 for r in rows)                                 # each client replays one record
    rows = [r[0] for r in rows]
    assert len(set(rows)) == 4 and 6 not in rows                          # distinct, never the silent one
    assert np.allclose(sched.probs[0], m[rows].mean(axis=1))              # long-run availability
    assert other.active.shape == sched.active.shape
    with pytest.raises(ValueError, match=r"^num_clients: 7 clients asked of .*sessions\.txt, which has 6 "):
        participation.build("recorded", 7, 10, path=str(f))
    with pytest.raises(ValueError, match=r"^offset: "):
        participation.build("recorded", 2, 10, path=str(f), offset=168)
    c = ExperimentConfig("fedavg", "quadratic", "recorded", 30, problem_args={"num_clients": 4, "dim": 3},
                         participation_args={"path": str(f), "round_minutes": 30})
    c.validate()
    assert c.schedule(num_clients=4).active.shape == (30, 4)
    with pytest.raises(ValueError, match=r"^config\.participation_args\.round_minutes: 11 does not divide"):
        c.replace(participation_args={"path": str(f), "round_minutes": 11}).validate()


def test_a_recorded_run_is_keyed_by_the_file_content_not_its_path(tmp_path, monkeypatch):
    """The store key of a ``recorded`` run holds the file's SHA-256: the same bytes under another
    path or found through the data folder are the same run, edited bytes another; a ``sha256``
    the file does not have is refused when the schedule is built."""
    import hashlib
    import shutil

    from fedlib import ExperimentConfig, participation
    f = _stunner(tmp_path, [_week(1, [1.0 + i, 2.0]) for i in range(4)])
    data = tmp_path / "data"
    (data / "traces").mkdir(parents=True)
    shutil.copy(f, data / "traces" / "s.txt")
    monkeypatch.setenv("FEDLIB_DATA", str(data))
    assert traces.resolve("traces/s.txt") == data / "traces" / "s.txt"       # looked up in the data folder
    digest = hashlib.sha256(f.read_bytes()).hexdigest()
    assert traces.file_sha256(f) == traces.file_sha256("traces/s.txt") == digest

    def config(path, **extra):
        return ExperimentConfig("fedavg", "quadratic", "recorded", 20,
                                problem_args={"num_clients": 3, "dim": 2},
                                participation_args={"path": str(path), **extra})
    here, there = config(f), config("traces/s.txt")
    assert here.key() == there.key() == config("traces/s.txt", sha256=digest).key()
    assert np.array_equal(here.schedule().active, there.schedule().active)
    edited = tmp_path / "edited.txt"
    edited.write_text(f.read_text().replace("user 1", "user 1", 1) + _week(0, [3.0]) + "\n")
    assert config(edited).key() != here.key()
    with pytest.raises(ValueError, match=r"^sha256: the trace file .* has SHA-256 "):
        participation.build("recorded", 3, 20, path=str(edited), sha256=digest)


def test_records_sessions_and_gaps_of_a_stunner_file(tmp_path):
    # online 1.5 h, offline 1.5 h, online to the end; and offline 0.5 h, online 1.5 h, offline to the end;
    # a two-day record is not used
    f = _stunner(tmp_path, [_week(1, [1.5, 1.5]), "short 1 0 0 " + f"{24 * H} {24 * H}",
                            _week(0, [0.5, 1.5])])
    recs = traces.stunner_records(f)
    assert [(r["user"], r["start_ms"], r["tz_hours"]) for r in recs] == [("user", 1398902400000, 2.0)] * 2
    on, off = traces.sessions(f)
    assert sorted(on.tolist()) == [90.0, 90.0, 7 * 24 * 60 - 180.0]        # minutes
    assert off.tolist() == [90.0]         # between two sessions of one record; the cut ends are not gaps


def test_a_synthetic_stunner_trace_is_seeded_and_in_the_layout(tmp_path):
    a = traces.write_synthetic_stunner(tmp_path / "a.txt", records=12, seed=3, partial=2)
    b = traces.write_synthetic_stunner(tmp_path / "b.txt", records=12, seed=3, partial=2)
    c = traces.write_synthetic_stunner(tmp_path / "c.txt", records=12, seed=4, partial=2)
    assert a.read_text() == b.read_text() != c.read_text()
    assert len(a.read_text().splitlines()) == 14
    assert len(traces.read_stunner(a)) == 12                     # the partial weeks are skipped
    m = traces.availability(a, round_minutes=60)
    assert m.shape == (12, 168) and 0.1 < m.mean() < 0.6


def test_a_stored_recorded_run_is_read_without_its_trace_file(tmp_path, monkeypatch):
    """A store of runs on a recorded trace, its configs naming the file by a data-folder path and
    its SHA-256, is read where the file is absent (a clean clone's nbval); a run that would have
    to be computed there is refused before anything runs, naming the file."""
    import hashlib
    import shutil

    import fedlib
    from fedlib import ExperimentConfig
    data = tmp_path / "data"
    (data / "traces").mkdir(parents=True)
    f = _stunner(tmp_path, [_week(1, [1.0 + i, 2.0]) for i in range(4)])
    shutil.copy(f, data / "traces" / "s.txt")
    monkeypatch.setenv("FEDLIB_DATA", str(data))
    c = ExperimentConfig("fedavg", "quadratic", "recorded", 6, problem_args={"num_clients": 3, "dim": 2},
                         participation_args={"path": "traces/s.txt",
                                             "sha256": hashlib.sha256(f.read_bytes()).hexdigest()})
    first = fedlib.sweep(c, tmp_path / "store", progress=False)
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path / "empty"))         # the trace is gone
    again = fedlib.load(tmp_path / "store", c)
    assert again["loss"].tolist() == first["loss"].tolist()
    with pytest.raises(ValueError, match=r"^configs\[0\]\.participation_args\.path: no such trace file "):
        fedlib.sweep(c.replace(seed=1), tmp_path / "store", progress=False)
