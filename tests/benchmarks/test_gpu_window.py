"""benchmarks/gpu_window.sh: a later call on the same (warm) device machine starts from the entries
an earlier call computed. The device tool copies the working tree afresh for each call, so the
tracked ``results/*/paper`` holds only what is committed here; the script keeps each call's stores
in an ignored folder (``STASH``) and unpacks them where the tree lacks them."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _names(tgz: Path) -> set[str]:
    with tarfile.open(tgz) as tar:
        return {m.name for m in tar.getmembers() if m.isfile()}


def test_a_later_call_keeps_the_entries_of_an_earlier_call_and_the_tree_wins(tmp_path):
    store = "results/02_fedsum_main/smoke"
    earlier, stash, root, out = (tmp_path / n for n in ("earlier", "stash", "root", "out"))
    for base, entry, text in ((earlier, "fedsum-00000000000000aa", "earlier call"),
                              (earlier, "fedsum-00000000000000bb", "earlier call"),
                              (root, "fedsum-00000000000000bb", "the tree")):
        (base / store / entry).mkdir(parents=True)
        (base / store / entry / "config.json").write_text(text)
    stash.mkdir()
    with tarfile.open(stash / "stores.tgz", "w:gz") as tar:
        tar.add(earlier / "results", arcname="results")
    env = {**os.environ, "DEVICE": "cpu", "PROFILE": "smoke", "CHECK_MIN": "0", "TOTAL_S": "1",
           "NB": "02_fedsum_main", "ROOT": str(root), "STASH": str(stash), "OUT": str(out),
           "PY": sys.executable, "UNPACK": "0"}
    done = subprocess.run(["bash", "benchmarks/gpu_window.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "entries of an earlier call" in done.stdout
    got = root / store
    assert (got / "fedsum-00000000000000aa" / "config.json").read_text() == "earlier call"
    assert (got / "fedsum-00000000000000bb" / "config.json").read_text() == "the tree"
    want = {f"{store}/fedsum-00000000000000{k}/config.json" for k in ("aa", "bb")}
    assert _names(out / "stores.tgz") == want == _names(stash / "stores.tgz")


GRAPH_ROW = "| CUDA-graph step vs plain step: bit-equal | True (captured, 3 steps) |"
DRAWS_ROW = ("| keyed draws, compiled draws (library, compiled_draws=True) on the device vs CPU: bit-equal "
             "| True (30 values) |")


@pytest.mark.parametrize("rows, env, flags", [
    ([GRAPH_ROW, DRAWS_ROW, "| grouped layout for the campaign | True (25.0 ms against 40.3 ms) |"], {},
     "--graphs --compiled-draws --grouped-layout"),
    ([GRAPH_ROW, DRAWS_ROW, "| grouped layout for the campaign | False (not 5% faster) |"], {},
     "--graphs --compiled-draws"),
    ([GRAPH_ROW, "| grouped layout for the campaign | True (25.0 ms against 40.3 ms) |"], {}, "--graphs"),
    ([GRAPH_ROW, DRAWS_ROW, "| clients innermost for the campaign | True (30.0 ms) |",
      "| grouped layout for the campaign | True (25.0 ms) |"], {},
     "--graphs --compiled-draws --clients-innermost"),
    ([GRAPH_ROW, DRAWS_ROW, "| grouped layout for the campaign | True (25.0 ms) |"],
     {"GROUPED_LAYOUT": "0"}, "--graphs --compiled-draws"),
    ([], {"GROUPED_LAYOUT": "1"}, "--grouped-layout"),
])
def test_a_second_call_takes_the_campaigns_flags_from_the_first_calls_rows(tmp_path, rows, env, flags):
    """``CHECK_MIN=0`` reads the first call's check from ``$STASH/gpu_check.log``: graphs and
    compiled draws where their bit rows say True, the grouped layout only on the path its decision
    row measured (both of those on, the clients not innermost), each overridable (``GROUPED_LAYOUT``)."""
    (tmp_path / "stash").mkdir()
    (tmp_path / "stash" / "gpu_check.log").write_text("\n".join(rows) + "\n")
    env = {**os.environ, "DEVICE": "cpu", "PROFILE": "smoke", "CHECK_MIN": "0", "TOTAL_S": "1",
           "NB": "02_fedsum_main", "ROOT": str(tmp_path / "root"), "STASH": str(tmp_path / "stash"),
           "OUT": str(tmp_path / "out"), "PY": sys.executable, "UNPACK": "0", **env}
    done = subprocess.run(["bash", "benchmarks/gpu_window.sh"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(s for s in done.stdout.splitlines() if s.startswith("== campaign:"))
    assert line.split("profile, cpu ")[1].split(", budget")[0].strip() == flags
