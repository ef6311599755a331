"""What the CNN's init changes in notebook 08's paper warm-up (Wang & Ji 2022, arXiv:2205.13648,
Sec. 6: FashionMNIST, FedAvg at rate 0.1 under periodic availability before Alg. 1 starts).

``wj_fmnist_cnn`` draws PyTorch's default init (uniform weights and biases); the authors' code
draws Kaiming-normal weights and zero biases for the conv and hidden layers
(``wj_fmnist_cnn_kaiming``). Notebook 08's paper store was computed with the first. Per seed,
this script runs the paper profile's warm-up (2,000 rounds) with the second and sets it beside
the stored warm-up of the first (computed here if the store lacks it): test accuracy and
training loss at every cycle's end, and the test accuracy averaged over the evaluations of each
run's last cycle (:meth:`fedlib.studies.amplified.AmplifiedSetup.warmup_table`). The same seed
means the same split, availability offset, selection walk and minibatches: the runs differ in
the initial model only.

    python benchmarks/init_08.py [--seeds 0 1] [--store results/08_amplified_fedavg/paper]
                                 [--out /tmp/init_08.csv | --read /tmp/init_08.csv]

Needs Fashion-MNIST (the Debian package ``dataset-fashion-mnist``, or ``$FEDLIB_DATA``). About
20 CPU-minutes a warm-up on one core.
"""

from __future__ import annotations

import argparse
import platform
import time
from dataclasses import replace

import pandas as pd
import torch

from fedlib import arithmetic
from fedlib.runner import run_config
from fedlib.store import Store
from fedlib.studies.amplified import amplified_setup

KAIMING = "wj_fmnist_cnn_kaiming"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="evaluated seeds of the paper profile")
    ap.add_argument("--store", default="results/08_amplified_fedavg/paper",
                    help="the paper store holding the default-init warm-ups")
    ap.add_argument("--out", default=None, help="a CSV of both runs' evaluations (optional)")
    ap.add_argument("--read", default=None, help="print the tables from a CSV --out wrote (no run)")
    args = ap.parse_args()
    paper = amplified_setup("paper")
    if args.read:
        report(pd.read_csv(args.read), paper)
        return
    torch.set_num_threads(1)
    print(f"cpu: {arithmetic.cpu_model()} ({platform.machine()}), torch {torch.__version__}, 1 thread, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    store = Store(args.store, create=False)
    curves = []
    for seed in args.seeds:
        kaiming = replace(paper, model=KAIMING).at_seed(seed)
        for init, setup in (("default", paper.at_seed(seed)), ("kaiming", kaiming)):
            config = setup.base()
            entry = store.get(config) if init == "default" else None
            if entry is not None:
                h, where = entry.history, f"stored ({entry.path.name})"
            else:
                t0 = time.perf_counter()
                h = run_config(config, progress=True).history
                where = f"computed here in {time.perf_counter() - t0:.0f} s"
            print(f"seed {seed}, {init} init ({dict(config.problem_args)['model']}): {where}", flush=True)
            curves.append(h.assign(seed=seed, init=init))
    df = pd.concat(curves, ignore_index=True)
    if args.out:
        df.to_csv(args.out, index=False)
    report(df, paper)


def report(df: pd.DataFrame, paper) -> None:
    """The tables of both inits' warm-ups (``df``: evaluations with ``seed`` and ``init`` columns)."""
    ends = df[df["round"] % paper.cycle == 0]
    table = ends.pivot_table(index=["seed", "round"], columns="init", values=["test_acc", "loss"])
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        print("\ntest accuracy and training loss at each cycle's end:")
        print(table.round(4).to_string())
        print(f"\ntest accuracy averaged over each cycle of evaluations (cycle {paper.cycle} rounds):")
        last = f"test acc, cycle to round {paper.warmup}"
        plateau = {}
        for init, d in df.groupby("init", sort=False):
            cycles = paper.warmup_table(d, earlier=paper.warmup // 2)
            print(f"{init} init:")
            print(cycles.round(4).to_string(index=False))
            plateau[init] = cycles[last].to_numpy()
        diff = plateau["kaiming"] - plateau["default"]
        print(f"\nkaiming - default, last cycle's mean test accuracy, per seed: "
              f"{', '.join(f'{x:+.4f}' for x in diff)}")


if __name__ == "__main__":
    main()
