"""How far a change of CPU kernels moves a run's replay anchor (fedlib.arithmetic.CROSS_RTOL's margin).

Replays the first rounds of stored configs (one per algorithm of a store) in fresh processes, once
with this machine's best kernels and once per lowered instruction set (AVX2 where the CPU has
AVX-512; the SSE4.1 baseline everywhere), and prints per config the relative difference of the
anchors (displacement norm and projection after rounds 1, 2, 3) between each lowered set and the
native one, and between the stored anchor (computed on the CPU the entry names) and this CPU's
native replay: a real change of CPU, beside the tolerance of the cross-CPU check.

    FEDLIB_DATA=../shared/data python benchmarks/arithmetic.py [--store results/02_fedsum_main/quick]

The last line printed is the largest difference found and its margin to CROSS_RTOL.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def worker(configs_file: str) -> None:
    """Child process: print each config's anchor (and arithmetic) as one JSON line."""
    import torch

    import fedlib
    from fedlib import arithmetic

    torch.set_num_threads(1)
    for d in json.loads(Path(configs_file).read_text()):
        cfg = fedlib.ExperimentConfig.from_dict(d)
        res = fedlib.run_config(cfg, rounds=arithmetic.ANCHOR_ROUNDS)
        print(json.dumps({"key": cfg.key(), "anchor": res.info["anchor"],
                          "arithmetic": arithmetic.describe(arithmetic.current())}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="results/02_fedsum_main/quick")
    ap.add_argument("--per-algorithm", type=int, default=1, help="configs per algorithm of the store")
    ap.add_argument("--algorithms", default="", help="comma-separated algorithms of the store (default: all)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker)

    from fedlib import arithmetic, sweeps
    from fedlib.store import Store
    from fedlib.verification import stored_arithmetic

    st = Store(args.store)
    here1 = {**arithmetic.current(), "torch_threads": 1}

    def from_here(c) -> bool:
        return arithmetic.same_kernels({**stored_arithmetic(st.read(c.key())), "torch_threads": 1}, here1)[0]
    chosen: dict[str, list] = {}
    # entries computed on another CPU first: their stored anchors measure a real change of CPU
    for c in sorted(sweeps.stored_configs(args.store), key=from_here):
        if not st.read(c.key()).meta.get("anchor"):
            continue                                   # stored before anchors: nothing to compare with
        if c.init_from or (args.algorithms and c.algorithm not in args.algorithms.split(",")):
            continue
        lst = chosen.setdefault(c.algorithm, [])
        if len(lst) < args.per_algorithm:
            lst.append(c)
    configs = [c for lst in chosen.values() for c in lst]
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"fedlib-arith-{os.getpid()}.json"
    tmp.write_text(json.dumps([c.to_dict() for c in configs]))
    levels = ["native"] + (["avx2"] if arithmetic.hardware_isa() == "avx512" else []) + ["sse41"]
    out: dict[str, dict] = {}
    for level in levels:
        env = dict(os.environ, **({} if level == "native" else arithmetic.lowered_isa_env(level)))
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--worker", str(tmp)], env=env, capture_output=True,
                              text=True, check=False)
        if proc.returncode:
            sys.exit(f"{level}: worker failed:\n{proc.stderr[-3000:]}")
        rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        out[level] = {r["key"]: r for r in rows}
        print(f"{level}: {rows[0]['arithmetic']} ({time.perf_counter() - t0:.0f} s for {len(rows)} configs)")
    tmp.unlink()
    print(f"\nstore {args.store}: anchors after rounds 1-{arithmetic.ANCHOR_ROUNDS}; relative difference to "
          f"the displacement norm, lowered vs native (tolerance of the cross-CPU check: "
          f"rtol={arithmetic.CROSS_RTOL:g}); per round 1 / 2 / 3\n")
    print(f"this CPU: {arithmetic.describe(here1)}\n")
    print("| algorithm | key | " + " | ".join(f"{lv} vs native" for lv in levels[1:])
          + " | stored vs native | stored on |")
    print("|---|---|" + "---|" * (len(levels) + 1))

    def per_round(a, b):
        """Relative difference at each anchor round, to that round's displacement norm."""
        return " / ".join(f"{max(abs(n - m), abs(p - q)) / max(abs(n), 1e-300):.1e}" for n, m, p, q
                          in zip(a.step_norm, b.step_norm, a.step_proj, b.step_proj, strict=True))
    worst, worst_stored = 0.0, 0.0
    here = arithmetic.current()
    for c in configs:
        k = c.key()
        base = arithmetic.Anchor.from_dict(out["native"][k]["anchor"])
        diffs = [base.max_rel(arithmetic.Anchor.from_dict(out[lv][k]["anchor"])) for lv in levels[1:]]
        entry = st.read(k)
        stored = arithmetic.Anchor.from_dict(entry.meta["anchor"])
        arith = {**stored_arithmetic(entry), "torch_threads": 1}
        same, why = arithmetic.same_kernels(arith, {**here, "torch_threads": 1})
        worst, worst_stored = max(worst, *diffs), max(worst_stored, stored.max_rel(base))
        cells = [per_round(base, arithmetic.Anchor.from_dict(out[lv][k]["anchor"])) for lv in levels[1:]]
        where = "this CPU" if same else f"{arith.get('aten_capability')}, {arith.get('cpu')} ({why})"
        print(f"| {c.algorithm} | {k} | " + " | ".join(cells) + f" | {per_round(stored, base)} | {where} |")
    print(f"\nlargest difference, lowered vs native {worst:.2e}, stored vs native {worst_stored:.2e}; "
          f"CROSS_RTOL {arithmetic.CROSS_RTOL:g} is "
          f"{arithmetic.CROSS_RTOL / max(worst, worst_stored, 1e-300):.0f}x the larger")


if __name__ == "__main__":
    main()
