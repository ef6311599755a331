"""Peak resident memory of FedSUM's App. H run per algorithm, and the per-client state tables of
the ResNet-18 setting (FedSUM Fig. 12: N = 50).

    FEDLIB_DATA=../shared/data python benchmarks/memory.py [--rounds 2]

Each algorithm runs in its own process (2 rounds of N = 100, S = 20, K = 10, batch 128 on MNIST,
evaluation at round 0 and at the end); the peak RSS (``ru_maxrss``) of that process is printed
with the size of the algorithm's own state, measured from the tensors it holds after the run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

ALGOS = ["fedavg", "fedsum", "fedsum_cr", "scaffold", "mifa", "fedvarp", "fedawe"]


def one(name: str, rounds: int) -> dict:
    import torch

    import fedlib
    from fedlib import problems
    prob = problems.neural(dataset="mnist", partition="dirichlet", alpha=0.1, num_clients=100,
                           model="fedsum_mnist_cnn", batch_size=128)
    res = fedlib.run(name, prob, {"kind": "uniform", "per_round": 20}, rounds=rounds, local_steps=10,
                     eval_every=10**6, progress=False)
    state = sum(v.numel() * v.element_size() for v in res.algorithm.state_dict().values()
                if isinstance(v, torch.Tensor))
    return {"algorithm": name, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "state_mb": state / 2**20, "p": prob.dim}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.rounds)))
        return
    rows = []
    for name in ALGOS:
        out = subprocess.run([sys.executable, __file__, "--one", name, "--rounds", str(args.rounds)],
                             capture_output=True, text=True, check=True, env=os.environ)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"{name:10s} peak RSS {r['peak_rss_mb']:8.0f} MB   algorithm state {r['state_mb']:7.1f} MB",
              flush=True)
    from fedlib import models
    p = models.spec_param_count("resnet18")
    table = 50 * p * 4 / 2**30
    print(f"ResNet-18 (p = {p:,}), N = 50, float32: one [N, p] table = {table:.2f} GiB; "
          f"FedAvg 0, FedSUM / SCAFFOLD / MIFA / FedVARP / FedAWE 1 table ({table:.2f} GiB), "
          f"FedSUM-CR 2 tables ({2 * table:.2f} GiB)")


if __name__ == "__main__":
    main()
