"""Notebook 02's paper profile (FedSUM App. H) on the datasets present, for a GPU: the rate grid,
then the main runs, into the notebook's paper store; prints each run's speed and outcome.

FedSUM (You & Pu 2025, arXiv:2512.18275), App. H: N = 100, S = 20, K = 10, batch 128, T = 2000,
the grid of eta_0 eta_g = 0.01 scored after 500 rounds. The notebook itself needs all three of
the paper's datasets (MNIST, SVHN, CIFAR-10); this script computes the runs of the datasets it is
given, the same configs the notebook asks for, so its entries are the notebook's own once the
other datasets exist.

    python benchmarks/paper_02.py --device cuda --workers 4 [--seeds 0] [--patterns P1 P2 P3]
    python benchmarks/paper_02.py --stand-in-rounds 2 --store /tmp/x   # the code path, no data

Stop it at any time (``timeout``, Ctrl-C): finished runs are stored entries and a second call
resumes. The last lines printed are one row per run: method, pattern, seed, outcome, final test
accuracy, seconds and rounds per second.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import pandas as pd

import fedlib
from fedlib import notebook, studies
from fedlib.store import Store

NOTEBOOK = "02_fedsum_main"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["mnist"], help="of mnist, svhn, cifar10")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--patterns", nargs="+", default=["P1", "P2", "P3"])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--workers", type=int, default=1, help="processes (each its own CUDA context)")
    ap.add_argument("--store", default="", help="default: results/02_fedsum_main/paper")
    ap.add_argument("--stand-in-rounds", type=int, default=0,
                    help="above 0: random stand-in data, every run cut to this many rounds")
    ap.add_argument("--skip-main", action="store_true", help="the grid only")
    args = ap.parse_args()
    setup = studies.fedsum_setup("paper", args.stand_in_rounds)
    unknown = sorted(set(args.datasets) - set(setup.datasets))
    if unknown:
        ap.error(f"--datasets: unknown {', '.join(unknown)}; allowed: {', '.join(setup.datasets)}")
    bad = sorted(set(args.patterns) - set(setup.patterns))
    if bad:
        ap.error(f"--patterns: unknown {', '.join(bad)}; allowed: {', '.join(setup.patterns)}")
    setup = dataclasses.replace(setup, datasets=tuple(args.datasets))
    store = Path(args.store) if args.store else notebook.store_path(NOTEBOOK, "paper")
    print(f"store {store}; device {args.device}; workers {args.workers}; {setup.scale}", flush=True)

    def compute(configs: list) -> pd.DataFrame:
        return fedlib.sweep(configs, store, device=args.device, workers=args.workers, progress=True,
                            checkpoint_every=None)

    t0 = time.perf_counter()
    rates, grid = setup.choose_rates(compute)
    print(grid.to_string(index=False), flush=True)
    print(f"grid: {time.perf_counter() - t0:.0f} s; rates {rates}", flush=True)
    labels = {} if args.skip_main else setup.main_configs(rates, args.patterns, args.seeds)
    # seed by seed, so that a run stopped early leaves whole seeds
    order = sorted(labels, key=lambda c: (labels[c][2], args.patterns.index(labels[c][1])))
    if order:
        compute(order)
    st = Store(store)
    rows = []
    grid_configs = [c for ds in args.datasets for c in setup.grid_configs(ds)]
    for c in grid_configs + order:
        entry = st.get(c)
        if entry is None:
            continue
        meta, hist = entry.meta, entry.history
        label = labels.get(c, ("grid",) * 4)
        rows.append(dict(dataset=dict(c.problem_args)["dataset"], method=label[3], pattern=label[1],
                         seed=c.seed, lr=(c.lr_local, c.lr_global), status=meta.get("status"),
                         rounds=c.rounds, final_acc=float(hist["test_acc"].iloc[-1]),
                         seconds=meta.get("run_seconds"),
                         rounds_per_s=c.rounds / meta["run_seconds"] if meta.get("run_seconds") else None))
    print(pd.DataFrame(rows).to_string(index=False))
    print(f"{len(rows)} entries stored of {len(grid_configs) + len(order)}; "
          f"{time.perf_counter() - t0:.0f} s in all")


if __name__ == "__main__":
    main()
