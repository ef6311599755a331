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

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from layout_census import Census, app_h_step, parse_sizes  # noqa: E402


def main() -> None:
    a = parse_sizes(__doc__.splitlines()[0], "repeat", 3, "timed steps of each path (the median is printed)")
    prob, X, chosen = app_h_step(a.clients, a.per_round, a.batch)
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
