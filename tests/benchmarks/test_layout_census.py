"""benchmarks/layout_census.py: the census of a vmap step's pointwise work, and the claim
benchmarks/README.md makes from it: the grouped layout (fedlib.grouped) writes fewer elements
with strided or broadcast operands, and fewer copies, than the vmap path, for the same gradients."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def test_the_grouped_layout_writes_fewer_strided_and_copied_elements_for_the_same_gradients():
    path, before = sys.path[:], {m: sys.modules.get(m) for m in ("engine", "layout_census")}
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:                   # the script's imports (benchmarks/engine.py as "engine") taken back after
        census = importlib.import_module("layout_census")
    finally:
        sys.path[:] = path
        for name, module in before.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    prob, X, clients = census.app_h_step(10, 4, 16)
    counts = {}
    for grouped in (False, True):
        prob.grads(X, clients, 3, 1, grouped_layout=grouped)           # the dropout shapes recorded
        with census.Census() as c:
            g = prob.grads(X, clients, 3, 1, grouped_layout=grouped)
        rows = c.rows.values()
        assert all(0 <= r[3] <= r[1] and 0 <= r[2] <= r[0] for r in rows)
        copies = sum(r[3] for (op, _), r in c.rows.items() if op.startswith(("clone", "copy")))
        counts[grouped] = (sum(r[3] for r in rows), copies, g)
    assert torch.equal(counts[False][2], counts[True][2])
    aten = torch.ops.aten                # out= overloads of pointwise ops count, reductions do not
    assert all(census._pointwise(f) for f in (aten.where.self_out, aten.relu.out, aten.add.out,
                                               aten.mul.Tensor, aten.threshold_backward.grad_input))
    assert not any(census._pointwise(f) for f in (aten.max.unary_out, aten.mm.out, aten.sum.IntList_out))
    assert counts[True][0] < 0.5 * counts[False][0] and counts[True][1] < 0.5 * counts[False][1]
    assert counts[False][1] > 0
