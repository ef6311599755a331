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
           "PY": sys.executable}
    done = subprocess.run(["bash", "benchmarks/gpu_window.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "entries of an earlier call" in done.stdout
    got = root / store
    assert (got / "fedsum-00000000000000aa" / "config.json").read_text() == "earlier call"
    assert (got / "fedsum-00000000000000bb" / "config.json").read_text() == "the tree"
    want = {f"{store}/fedsum-00000000000000{k}/config.json" for k in ("aa", "bb")}
    assert _names(out / "stores.tgz") == want == _names(stash / "stores.tgz")
