"""Milliseconds to compute the behavioural fingerprint of each registered algorithm
(:func:`fedlib.fingerprint.algorithm_fingerprint`, cold cache), with its default options and with
every distinct option set of the committed stores; and the time for a process to fingerprint
every committed entry (what loading all stores costs once).

Run: ``.venv/bin/python benchmarks/fingerprint.py`` (prints a table; the CPU as ``lscpu`` names it
and the date belong next to the figures where they are quoted).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from fedlib import ExperimentConfig, algorithms, fingerprint
from fedlib.algorithms.base import _REGISTRY

ROOT = Path(__file__).resolve().parents[1]


def _ms(cls, options) -> tuple[float, int]:
    fingerprint._CACHE.clear()
    t0 = time.perf_counter()
    fingerprint.algorithm_fingerprint(cls, options)
    return 1000 * (time.perf_counter() - t0), fingerprint.probe_rounds(cls.check_options(options))


def main() -> None:
    print(f"{'algorithm':18s} {'options':34s} {'rounds':>6s} {'ms':>8s}")
    for name in sorted(_REGISTRY):
        ms, rounds = _ms(algorithms.get(name), {})
        print(f"{name:18s} {'(defaults)':34s} {rounds:6d} {ms:8.1f}")
    combos = {}
    for f in sorted(ROOT.glob("results/*/*/*/config.json")):
        c = ExperimentConfig.from_dict(json.loads(f.read_text()))
        args = c.arguments("algorithm_args")
        if args:
            combos[(c.algorithm, json.dumps(args, sort_keys=True))] = (c.algorithm, args)
    for (name, text), (_, args) in sorted(combos.items()):
        ms, rounds = _ms(algorithms.get(name), args)
        print(f"{name:18s} {text:34s} {rounds:6d} {ms:8.1f}")
    configs = [ExperimentConfig.from_dict(json.loads(f.read_text()))
               for f in sorted(ROOT.glob("results/*/*/*/config.json"))]
    fingerprint._CACHE.clear()
    t0 = time.perf_counter()
    for c in configs:
        fingerprint.config_fingerprint(c)
    print(f"all {len(configs)} committed entries, one process, cold cache: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
