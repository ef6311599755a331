"""Which elementwise work of the vmap path runs on strided or broadcast operands: one local step of
FedSUM's App. H (keyed draws, the vmap strategy) under a ``TorchDispatchMode`` that records, for
every pointwise aten op (``torch.Tag.pointwise``: elementwise arithmetic, activations, copies),
its calls and output elements, split by whether all its tensor operands share the output's shape
and strides and the output is dense (what CUDA's TensorIterator runs as one vectorized kernel) or
not (a broadcast operand, or operands in different layouts: CUDA's strided
``elementwise_kernel<128, 2, gpu_kernel_impl_nocast>``, the top kernel of the fifth window's
profile with 24% of a round's device work). Rows per op and the library line that issued it.

    python benchmarks/layout_census.py                 # App. H's step on this CPU (a few seconds)
    python benchmarks/layout_census.py --batch 16 --per-round 4 --top 10

The layouts are torch's (vmap's batching rules), the same on every device; the kernels that run
them are the device's. A census, not a timing: what a CUDA profile's strided-kernel share is made
of, to choose the next layout change (``benchmarks/README.md``, "Fifth window").
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections import defaultdict
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine import mnist_like  # noqa: E402

from fedlib import models, partition, problems  # noqa: E402


def _site() -> str:
    """The innermost line of the library (``fedlib/...``) on the stack: where the op was issued."""
    for frame in reversed(traceback.extract_stack()[:-3]):
        path = frame.filename.replace("\\", "/")
        if "/fedlib/" in path:
            return f"fedlib/{path.rsplit('/fedlib/', 1)[1]}:{frame.lineno}"
    return "(outside fedlib)"


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense in some order of its dimensions (a permuted contiguous tensor)."""
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))
    return t.permute(*order).is_contiguous()


def _inputs(func) -> list[tuple[str, str]]:
    """The names and types of an aten overload's arguments other than its ``out=`` ones."""
    return [(a.name, str(a.type)) for a in func._schema.arguments if not a.is_out]


def _has_out(func) -> bool:
    """Whether an aten overload has ``out=`` arguments."""
    return any(a.is_out for a in func._schema.arguments)


def _pointwise(func) -> bool:
    """A pointwise aten op, ``out=`` overloads included: torch tags some of those ``pointwise``
    (``add.out``) and not others (``where.self_out``, ``relu.out``,
    ``threshold_backward.grad_input``), so an overload with ``out=`` arguments counts where a
    functional overload of the same op with the same other arguments is tagged."""
    if torch.Tag.pointwise in func.tags:
        return True
    if not _has_out(func):
        return False
    packet = func.overloadpacket
    return any(torch.Tag.pointwise in f.tags and not _has_out(f) and _inputs(f) == _inputs(func)
               for f in (getattr(packet, n) for n in packet.overloads()))


class Census(TorchDispatchMode):
    """Per (op, site): [calls, elements, strided calls, strided elements, one example layout]."""

    def __init__(self):
        super().__init__()
        self.rows: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, 0, 0, ""])

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if _pointwise(func) and isinstance(out, torch.Tensor) and out.dim() > 0:
            ops = [a for a in (*args, *(kwargs or {}).values())
                   if isinstance(a, torch.Tensor) and a.dim() > 0]
            odd = [a for a in ops if a.shape != out.shape or a.stride() != out.stride()]
            row = self.rows[(str(func).removeprefix("aten."), _site())]
            row[0] += 1
            row[1] += out.numel()
            if odd or not _dense(out):
                row[2] += 1
                row[3] += out.numel()
                row[4] = row[4] or "; ".join(f"{tuple(a.shape)} strides {a.stride()}"
                                             for a in [out, *odd][:2])
        return out


def app_h_step(clients: int, per_round: int, batch: int) -> tuple:
    """App. H's problem on this CPU (``clients`` clients of a Dirichlet(0.1) split of MNIST, the
    vmap strategy, keyed draws, ``batch`` rows a minibatch) and a step's ``per_round`` points
    and clients: ``(problem, X, clients)``."""
    train, test, _ = mnist_like()
    part = partition.dirichlet(train[1].numpy(), clients, 0.1, seed=0).indices
    prob = problems.Neural(models.build("fedsum_mnist_cnn", seed=0), part, train, test, batch_size=batch,
                           device="cpu", strategy="vmap", draws="keyed")
    x = prob.initial_params()
    X = torch.stack([x + 0.001 * k for k in range(per_round)])
    return prob, X, torch.arange(per_round) * (clients // per_round)


def parse_sizes(description: str, name: str, default: int, help: str) -> argparse.Namespace:
    """``--clients``, ``--per-round`` and ``--batch`` (App. H's by default) and one more integer
    option ``--<name>``, each checked (>= 1; at most as many clients a step as clients)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--per-round", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument(f"--{name}", type=int, default=default, help=help)
    a = ap.parse_args()
    for key in ("clients", "per_round", "batch", name):
        if getattr(a, key) < 1:
            ap.error(f"--{key.replace('_', '-')}: must be an integer >= 1, got {getattr(a, key)}")
    if a.per_round > a.clients:
        ap.error(f"--per-round: must be at most --clients ({a.clients}), got {a.per_round}")
    return a


def census(clients: int, per_round: int, batch: int) -> Census:
    """One keyed vmap step of App. H's problem (:func:`app_h_step`) on this CPU, recorded."""
    prob, X, chosen = app_h_step(clients, per_round, batch)
    prob.grads(X, chosen, 3, 1)                      # warm: the first call records dropout shapes
    with Census() as c:
        prob.grads(X, chosen, 3, 1)
    return c


def main() -> None:
    a = parse_sizes(__doc__.splitlines()[0], "top", 15, "rows printed, most strided elements first")
    rows = census(a.clients, a.per_round, a.batch).rows
    total, strided = sum(r[1] for r in rows.values()), sum(r[3] for r in rows.values())
    print(f"one keyed vmap step, N = {a.clients}, S = {a.per_round}, batch {a.batch} "
          f"(torch {torch.__version__}): {total:,} elements written by pointwise ops, {strided:,} "
          f"({100 * strided / total:.0f}%) by calls with a broadcast or differently laid-out operand")
    print("\n| op | site | strided elements | of elements | strided calls / calls "
          "| an example (output first) |")
    print("|---|---|---|---|---|---|")
    for (op, site), r in sorted(rows.items(), key=lambda kv: -kv[1][3])[:a.top]:
        print(f"| {op} | {site} | {r[3]:,} | {r[1]:,} | {r[2]} / {r[0]} | {r[4]} |")


if __name__ == "__main__":
    main()
