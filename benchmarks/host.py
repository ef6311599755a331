"""Host-side cost of FedSUM's round on the keyed-draws device path, measured on a CPU with a model
so small that its kernels cost next to nothing: what is left is Python, the dispatcher and the
number of tensor operations a round launches (on a GPU each is a kernel launch, or a node of a
captured CUDA graph).

    python benchmarks/host.py [--rounds 20] [--repeat 5]

App. H's round shape (N = 100, S = 20 uniform, K = 10, two dropout calls per forward pass, as
FedSUM's MNIST CNN: You & Pu 2025, arXiv:2512.18275, Table 2), but the CNN shrunk to 2 + 2
channels, 4 hidden units and 8x8 images, batch 4 and 20 random images per client. The problem runs
the path a GPU runs: ``strategy="vmap"``, keyed draws computed with torch int64 tensors (the
numpy path a CPU uses otherwise is switched off), no evaluation. Printed: wall ms per round
and CPU ms per round (the process's CPU time: steadier than wall time on a shared machine;
median of ``--repeat``), tensor operations per round (``torch.profiler``'s top-level ``aten::``
calls), and Python function calls per round (``cProfile``).
"""

from __future__ import annotations

import argparse
import cProfile
import platform
import pstats
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # this checkout's fedlib
from fedlib import algorithms, engine, models, participation, partition, problems  # noqa: E402


def tiny_problem(clients: int, batch: int, per_client: int = 20) -> problems.Neural:
    g = torch.Generator().manual_seed(0)
    n = clients * per_client
    x = torch.randn(n, 1, 8, 8, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    part = partition.iid(y.numpy(), clients, seed=0).indices
    model = models.build("fedsum_mnist_cnn", seed=0, convs=[2, 2], fcs=[4], image=8)
    prob = problems.Neural(model, part, (x, y), (x[:50], y[:50]), batch_size=batch, device="cpu",
                           strategy="vmap", draws="keyed")
    prob._keyed_numpy = False                  # the torch int64 path: what a GPU runs
    return prob


def rounds(args) -> list:
    sched = participation.build("uniform", args.clients, args.rounds + 1, seed=0, per_round=args.per_round,
                                local_steps=args.local_steps)
    return [algorithms.RoundInput(t, *(torch.tensor(np.array(a[t])) for a in
                                       (sched.active, sched.uplink_ok, sched.local_steps)), 0.01, 1.0)
            for t in range(len(sched.active))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--per-round", type=int, default=20)
    ap.add_argument("--local-steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    torch.set_num_threads(1)
    prob = tiny_problem(args.clients, args.batch)
    rows = rounds(args)
    algo = algorithms.get("fedsum")(prob, engine.VectorizedEngine(graphs=True))
    x = prob.initial_params()
    algo.init(x, args.local_steps)
    x = algo.round(x, rows[0])
    walls, cpus = [], []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        for r in rows[1:]:
            x = algo.round(x, r)
        walls.append((time.perf_counter() - t0) / (len(rows) - 1))
        cpus.append((time.process_time() - c0) / (len(rows) - 1))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for r in rows[1:4]:
            x = algo.round(x, r)
    events = prof.events()
    top = [e for e in events if e.name.startswith("aten::") and e.cpu_parent is None]
    ops = len(top) / 3
    pr = cProfile.Profile()
    pr.enable()
    for r in rows[1:4]:
        x = algo.round(x, r)
    pr.disable()
    calls = pstats.Stats(pr).total_calls / 3
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"CPU: {cpu}, torch {torch.__version__}, 1 thread, {time.strftime('%Y-%m-%d')}")
    print(f"N={args.clients} S={args.per_round} K={args.local_steps} batch={args.batch}, tiny CNN "
          f"(p={prob.dim}), keyed draws (torch path), vmap, no evaluation")
    print(f"| CPU ms/round (median of {args.repeat}) | wall ms/round | tensor ops/round | "
          "Python calls/round |")
    print(f"| {1e3 * float(np.median(cpus)):.1f} | {1e3 * float(np.median(walls)):.1f} | {ops:.0f} "
          f"| {calls:.0f} |")


if __name__ == "__main__":
    main()
