"""The GPU check of ``Neural(parallel_draws=True)``: same draws, same gradients, and how much faster.

``parallel_draws`` draws a vmap step's keyed minibatches and dropout masks in a pool of CPU
threads (and the next step's ahead). On the CPU its gradients equal the serial draws' bit for bit
(``tests/test_tasks.py``). On an H200 a first comparison of gradients came out unequal, but two
serial calls were not compared, so cuDNN's nondeterministic kernels were not ruled out. This
script separates the two on a device:

1. the draws themselves (indices, weights, masks), serial vs pooled, incl. a prefetch hit and
   misses: pure functions of their keys, so they must be equal;
2. gradients with ``torch.use_deterministic_algorithms(True)``: serial twice, then serial vs
   pooled;
3. seconds per FedSUM round on FedSUM's MNIST CNN (App. H: N = 100, S = 20, K = 10, batch 128),
   serial vs pooled draws.

    CUBLAS_WORKSPACE_CONFIG=:4096:8 python benchmarks/gpu_draws.py --device cuda

Each of the first two prints "equal: True/False"; the last line is the speed-up.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from engine import mnist_like, round_inputs, seconds_per_round  # noqa: E402

from fedlib import models, participation, partition, problems  # noqa: E402

ASKS = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 3)]       # (round, step): a hit after each first ask


def build(train, test, part, device, parallel):
    return problems.Neural(models.build("fedsum_mnist_cnn", seed=0), part, train, test, batch_size=128,
                           device=device, strategy="vmap", parallel_draws=parallel)


def same(a, b) -> bool:
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return torch.equal(a, b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    train, test, src = mnist_like()
    part = partition.dirichlet(train[1].numpy(), 100, 0.1, seed=0).indices
    serial, pooled = (build(train, test, part, args.device, p) for p in (False, True))
    clients = [3, 17, 42, 58, 99]
    print(f"device={args.device} torch={torch.__version__} data: {src}")
    draws_equal = all(same(serial._step_draws(clients, r, k), pooled._step_draws(clients, r, k))
                      for r, k in ASKS)
    print(f"1. draws (indices, weights, masks), serial vs pooled, equal: {draws_equal}")
    torch.use_deterministic_algorithms(True)
    X = torch.stack([serial.initial_params().to(args.device) + 0.01 * k for k in range(len(clients))])
    twice = all(torch.equal(serial.grads(X, clients, r, k), serial.grads(X, clients, r, k)) for r, k in ASKS)
    pooled_eq = all(torch.equal(serial.grads(X, clients, r, k), pooled.grads(X, clients, r, k))
                    for r, k in ASKS)
    print(f"2. deterministic algorithms: serial twice equal: {twice}; serial vs pooled equal: {pooled_eq}")
    torch.use_deterministic_algorithms(False)
    sched = participation.build("uniform", 100, args.rounds + 1, seed=0, per_round=20, local_steps=10)
    rows = round_inputs(sched, args.device)
    t_serial, t_pooled = (seconds_per_round(p, "vectorized", rows, 10, args.device) for p in (serial, pooled))
    print(f"3. FedSUM s/round: serial draws {t_serial:.3f}, pooled draws {t_pooled:.3f} "
          f"({os.cpu_count()} CPUs)")
    print(f"speed-up of pooled draws: {t_serial / t_pooled:.2f}")


if __name__ == "__main__":
    main()
