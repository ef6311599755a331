"""What the Flower bridge costs: the same 20-round digits runs through fedlib alone and through
Flower's simulation engine (fedlib.flower.simulate), seconds per round side by side.

    python benchmarks/flower.py [--rounds 20] [--algorithms fedavg,fedsum,scaffold]

Prints a Markdown table: per algorithm, seconds per round of fedlib.run (one torch thread) and of
the Flower run (one virtual node per client, one thread each), and the one-off start-up of the
federation (Ray, the nodes, each node building its problem), and whether the final models are
bitwise equal.
"""

from __future__ import annotations

import argparse
import platform
import time

import torch

from fedlib import ExperimentConfig, flower
from fedlib.runner import run_config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--algorithms", default="fedavg,fedsum,scaffold")
    args = ap.parse_args()
    configs = [ExperimentConfig(algorithm=a, problem="digits_cnn", participation="bernoulli",
                                rounds=args.rounds,
                                problem_args={"num_clients": 10, "train_eval_per_client": 20},
                                participation_args={"p": 0.3}, local_steps=2, lr_local=0.05,
                                eval_every=args.rounds, seed=3) for a in args.algorithms.split(",")]
    torch.set_num_threads(1)
    alone = []
    for c in configs:
        start = time.perf_counter()
        alone.append((run_config(c), time.perf_counter() - start))
    info: dict = {}
    start = time.perf_counter()
    through = flower.simulate(configs, info=info)
    total = time.perf_counter() - start
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, {args.rounds} rounds, "
          f"10 clients (Bernoulli p = 0.3); Flower start-up {info['connect_seconds']:.1f} s "
          f"(whole simulation {total:.1f} s)\n")
    print("| algorithm | fedlib.run, s / round | through Flower, s / round | ratio | final models equal |")
    print("|---|---|---|---|---|")
    for c, (a, sa), b, sb in zip(configs, alone, through, info["run_seconds"], strict=True):
        print(f"| {c.algorithm} | {sa / c.rounds:.3f} | {sb / c.rounds:.3f} | {sb / sa:.1f}x | "
              f"{'bitwise' if torch.equal(a.params, b.params) else 'no'} |")


if __name__ == "__main__":
    main()
