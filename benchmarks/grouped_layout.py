"""A probe of the next layout lever (not a library option): the vmapped minibatch gradient of a
``SimpleCNN`` (FedSUM's MNIST CNN of App. H) written out as one grouped network over the step's S
clients, each activation laid out (batch, clients x channels, H, W), so nothing is copied between
layers.

Under ``vmap`` (``fedlib.tasks.Neural._vgrad``) a convolution of per-client weights runs as one
grouped convolution whose output is (batch, clients x channels, H, W) in memory and (clients,
batch, channels, H, W) to the model; the max-pool's batching rule then folds clients into the batch,
which copies the activation, and its backward copies the gradient back; the bias, the dropout
mask and the ReLU's backward meet operands in the other layout. ``benchmarks/layout_census.py``
counts it: of the ~207 M elements a step's pointwise ops write, ~166 M (80%) are written by calls
with a broadcast or differently laid-out operand, 75 M of them copies. Here the convolutions,
ReLUs, dropout products and max-pools run on (B, S C, H, W) tensors as they come, the linear
layers as batched matrix products over the clients, and autograd differentiates the sum of the
clients' losses, whose gradient with respect to client s's parameters is client s's gradient (the
clients share no parameter). The same arithmetic up to the order of some sums (the bias and weight
gradients' reductions): ``python benchmarks/grouped_layout.py`` prints the difference from the
vmapped gradient, the census of both and their CPU times; ``gpu_check.py --probe-grouped-layout``
times it on a GPU in the campaign's path.

    python benchmarks/grouped_layout.py                       # App. H's step on this CPU
    python benchmarks/grouped_layout.py --batch 16 --per-round 4
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.func import grad, vmap

sys.path.insert(0, str(Path(__file__).resolve().parent))
from layout_census import Census  # noqa: E402

from fedlib import models  # noqa: E402


def grouped_vgrad(prob):
    """A function with ``prob._vgrad``'s signature, ``(X [S, p], xb [S, B, ...], yb [S, B], w [S, B],
    masks)`` -> gradients [S, p], computing each client's minibatch gradient of ``prob``'s
    ``SimpleCNN`` (weighted mean loss, keyed dropout masks as the vmap path gets them) in the
    grouped layout. Only for a ``SimpleCNN`` without buffers (FedSUM's CNNs)."""
    net = prob.model
    if not isinstance(net, models.SimpleCNN) or dict(prob.buffers):
        raise ValueError(f"model: the grouped layout is written for a SimpleCNN without buffers, got "
                         f"{type(net).__name__}")
    after_conv, p = net.dropout_after_conv, net.drop.p
    n_conv, n_fc = len(net.convs), len(net.fcs)

    n_conv_par = sum(prob.numels[:2 * n_conv])              # the flat vector: convolutions first
    head_shapes = prob.shapes[2 * n_conv:]

    def features(Xc, xb, masks):
        """The convolutional blocks in the grouped layout -> features [S, B, f] (contiguous)."""
        S, B = xb.shape[:2]
        par = [t.reshape(S, *s) for t, s in zip(Xc.split(prob.numels[:2 * n_conv], dim=1),
                                                 prob.shapes[:2 * n_conv], strict=True)]
        h = xb.movedim(0, 1).reshape(B, S * xb.shape[2], *xb.shape[3:])     # (B, S C_in, H, W)
        m = iter(masks)
        for k in range(n_conv):
            wk, bk = par[2 * k], par[2 * k + 1]
            h = F.conv2d(h, wk.reshape(-1, *wk.shape[2:]), None, padding=net.convs[k].padding, groups=S)
            h = h + bk.reshape(1, -1, 1, 1)
            if k in after_conv and p > 0:
                h = h * next(m).movedim(0, 1).reshape(h.shape)              # mask (S, B, C, H, W)
            h = F.max_pool2d(torch.relu(h), 2)
        return h.reshape(B, S, -1).movedim(0, 1).contiguous()

    def head(pf, f, y, w, masks):
        """One client's linear layers and weighted mean loss, as ``prob._batch_loss`` computes them."""
        par = [t.view(s) for t, s in zip(pf.split(prob.numels[2 * n_conv:]), head_shapes, strict=True)]
        m = iter(masks)
        for j in range(n_fc):
            f = F.linear(f, par[2 * j], par[2 * j + 1])
            if j < n_fc - 1:
                f = torch.relu(f)
                if p > 0:
                    f = f * next(m)
        return (prob.per_sample_loss(f, y) * w).sum() / w.sum()

    head_grads = vmap(grad(head, argnums=(0, 1)), in_dims=(0, 0, 0, 0, 0), randomness="error")

    def vgrad(X, xb, yb, w, masks):
        k = sum(1 for c in range(n_conv) if c in after_conv and p > 0)    # the convolutions' masks
        with torch.enable_grad():
            Xc = X[:, :n_conv_par].detach().requires_grad_(True)
            f = features(Xc, xb, masks[:k])
            g_head, g_f = head_grads(X[:, n_conv_par:], f.detach(), yb, w, tuple(masks[k:]))
            (g_conv,) = torch.autograd.grad(f, Xc, g_f)
        return torch.cat([g_conv, g_head], dim=1)
    return vgrad


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
    plain, grouped = prob._vgrad, grouped_vgrad(prob)
    prob._vgrad = grouped
    got = prob.grads(X, chosen, 3, 1)
    rel = float((got - ref).abs().max() / ref.abs().max())
    print(f"one keyed step, N = {a.clients}, S = {a.per_round}, batch {a.batch}: grouped layout vs vmap, "
          f"gradient max rel diff {rel:.1e} ({int((got != ref).sum()):,} of {got.numel():,} entries differ)")
    for name, f in (("vmap", plain), ("grouped", grouped)):
        prob._vgrad = f
        with Census() as c:
            prob.grads(X, chosen, 3, 1)
        total, strided = (sum(r[i] for r in c.rows.values()) for i in (1, 3))
        copies = sum(r[3] for (op, _), r in c.rows.items() if op.startswith(("clone", "copy")))
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            prob.grads(X, chosen, 3, 1)
            times.append(time.perf_counter() - t)
        print(f"{name}: {total:,} pointwise elements, {strided:,} strided or broadcast, "
              f"{copies:,} in copies; "
              f"CPU {1e3 * sorted(times)[len(times) // 2]:.0f} ms a step (median of {a.repeat}, "
              f"{torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
