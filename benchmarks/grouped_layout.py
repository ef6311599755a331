"""The grouped layout against the vmap path on this CPU: one keyed step of FedSUM's App. H (the MNIST
CNN of its Table 2, You & Pu 2025, arXiv:2512.18275), the minibatch gradients of the vmap strategy
(``Neural.grads``) and of ``grads(..., grouped_layout=True)`` (:mod:`fedlib.grouped`: the
convolutional blocks on (batch, clients x channels, H, W) tensors as they come, without the copies
and strided operands of vmap's layout): their difference (bits), the census of each
(``layout_census.Census``: pointwise elements, those with strided or broadcast operands, those in
copies) and each one's CPU time. The GPU check (``gpu_check.py``) measures the same option on a GPU.

    python benchmarks/grouped_layout.py                       # App. H's step on this CPU
    python benchmarks/grouped_layout.py --batch 16 --per-round 4
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from layout_census import Census  # noqa: E402

from fedlib import models  # noqa: E402


def _problem(clients: int, batch: int):
    from engine import mnist_like

    from fedlib import partition, problems
    train, test, _ = mnist_like()
    part = partition.dirichlet(train[1].numpy(), clients, 0.1, seed=0).indices
    return problems.Neural(models.build("fedsum_mnist_cnn", seed=0), part, train, test, batch_size=batch,
                           device="cpu", strategy="vmap", draws="keyed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--per-round", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    for name in ("clients", "per_round", "batch", "repeat"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')}: must be an integer >= 1, got {getattr(a, name)}")
    if a.per_round > a.clients:
        ap.error(f"--per-round: must be at most --clients ({a.clients}), got {a.per_round}")
    prob = _problem(a.clients, a.batch)
    x = prob.initial_params()
    X = torch.stack([x + 0.001 * k for k in range(a.per_round)])
    chosen = torch.arange(a.per_round) * (a.clients // a.per_round)
    ref = prob.grads(X, chosen, 3, 1)
    got = prob.grads(X, chosen, 3, 1, grouped_layout=True)
    rel = float((got - ref).abs().max() / ref.abs().max())
    print(f"one keyed step, N = {a.clients}, S = {a.per_round}, batch {a.batch}: grouped layout vs vmap, "
          f"gradient max rel diff {rel:.1e} ({int((got != ref).sum()):,} of {got.numel():,} entries differ)")
    for name, grouped in (("vmap", False), ("grouped", True)):
        with Census() as c:
            prob.grads(X, chosen, 3, 1, grouped_layout=grouped)
        total, strided = (sum(r[i] for r in c.rows.values()) for i in (1, 3))
        copies = sum(r[3] for (op, _), r in c.rows.items() if op.startswith(("clone", "copy")))
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            prob.grads(X, chosen, 3, 1, grouped_layout=grouped)
            times.append(time.perf_counter() - t)
        print(f"{name}: {total:,} pointwise elements, {strided:,} strided or broadcast, "
              f"{copies:,} in copies; "
              f"CPU {1e3 * sorted(times)[len(times) // 2]:.0f} ms a step (median of {a.repeat}, "
              f"{torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
