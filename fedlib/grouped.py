"""The vmap strategy's minibatch gradients of a :class:`~fedlib.models.SimpleCNN` in a grouped layout.

:class:`fedlib.tasks.Neural` computes a step's S minibatch gradients as ``vmap(grad(loss))`` over the
clients. Under ``vmap`` a convolution of per-client weights runs as one grouped convolution (groups
= S) whose output is laid out (batch, clients x channels, H, W) in memory and seen by the model as
(clients, batch, channels, H, W); max-pool's batching rule folds the clients into the batch, which
copies the activation, its backward copies the gradient back, and the bias, the dropout mask and
ReLU's backward meet operands in the other layout (strided kernels). On FedSUM's App. H step
(You & Pu 2025, arXiv:2512.18275: N = 100, S = 20, batch 128, the MNIST CNN of its Table 2), 80%
of the elements its pointwise ops write meet such operands, 75 M of them in copies
(``benchmarks/layout_census.py``).

:func:`grouped_vgrad` computes the same gradients with the convolutional blocks written out on
(batch, clients x channels, H, W) tensors as they come (grouped convolutions without bias, the
bias added, dropout, max-pool, ReLU, each on the whole step), the linear layers and the loss under
``vmap(grad(...))`` exactly as the vmap path computes them, and the convolutions' gradients by
autograd from the features' gradient (the clients share no parameter, so the gradient of the sum
of their losses with respect to client s's parameters is client s's gradient). The kernels are
the vmap path's own (its convolution batching rule calls the same grouped convolution); on CPUs
the gradients are bit-equal to the vmap path's (``tests/test_grouped.py``); on a GPU
``benchmarks/gpu_check.py`` compares them before a campaign takes the option
(``VectorizedEngine(grouped_layout=True)``).

Two rewrites that keep the gradients' bits. ReLU after the max-pool rather than before, on a
quarter of the elements: ReLU is monotone, so ``max(relu(a), ...) = relu(max(a, ...))`` in value
(the sign of a zero may differ: ``relu(-0.0)`` is -0.0 on CPUs, and dropout leaves -0.0 where it
zeroes a negative activation; the linear layers' sums, which start at +0, absorb it); where a
window's maximum is positive both pools pick the same (first) maximal element and ReLU passes its
gradient unchanged; where it is not, ReLU's gradient is +0 either way (its backward zeroes every
input <= 0, -0.0 included). ``tests/test_grouped.py`` compares the gradients' bits. And the
inputs come in the grouped layout from :class:`fedlib.tasks.Neural`'s keyed draws: the minibatch gathered
batch-major, (B, S, ...) in memory, so the first activation is a view, and the convolutions'
dropout masks written in (B, S x C, H, W) order by the draws themselves (masks in the vmap
path's [S, B, C, H, W], as the legacy draws give them, are laid out here with one copy).
How many elements the pointwise ops of App. H's step write, here and on the vmap path, is measured
by ``benchmarks/grouped_layout.py`` and recorded in ``benchmarks/README.md``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from . import models
from ._validate import InputError

__all__ = ["grouped_vgrad", "supports"]


def supports(model: torch.nn.Module, buffers: dict) -> bool:
    """Whether :func:`grouped_vgrad` is written for ``model``: a :class:`~fedlib.models.SimpleCNN`
    (FedSUM's CNNs: convolution, optional dropout, ReLU, 2x2 max-pool blocks, then linear layers)
    without buffers."""
    return type(model) is models.SimpleCNN and not buffers


def grouped_vgrad(problem) -> Callable:
    """A function with ``problem._vgrad``'s signature, ``(X [S, p], xb [S, B, ...], yb [S, B],
    w [S, B], masks)`` -> minibatch gradients [S, p], each client's gradient of its weighted mean
    loss ``sum_b w_b loss_b / sum_b w_b`` under its keyed dropout masks, computed in the grouped
    layout (module docstring). ``problem``: a :class:`fedlib.tasks.Neural` whose model
    :func:`supports` says is one."""
    net, buffers = getattr(problem, "model", None), getattr(problem, "buffers", None)
    if not isinstance(buffers, dict) or not supports(net, buffers):
        raise InputError(f"grouped_layout: written for a SimpleCNN without buffers (a Neural problem's "
                         f"model), got {type(problem if net is None else net).__name__}")
    n_conv, p = len(net.convs), net.drop.p
    conv_masks = sum(1 for k in range(n_conv) if k in net.dropout_after_conv) if p > 0 else 0
    conv_numels, conv_shapes = problem.numels[:2 * n_conv], problem.shapes[:2 * n_conv]
    head_numels, head_shapes = problem.numels[2 * n_conv:], problem.shapes[2 * n_conv:]
    n_conv_par = sum(conv_numels)                  # the flat vector holds the convolutions' first

    def features(Xc, xb, masks):
        """The convolutional blocks on (B, S C, H, W) tensors -> features [S, B, f], contiguous
        (as the vmap path's flatten leaves them)."""
        S, B = xb.shape[:2]
        par = [t.reshape(S, *s) for t, s in zip(Xc.split(conv_numels, dim=1), conv_shapes, strict=True)]
        h = xb.movedim(0, 1).reshape(B, S * xb.shape[2], *xb.shape[3:])
        m = iter(masks)
        for k, conv in enumerate(net.convs):
            wk, bk = par[2 * k], par[2 * k + 1]
            h = F.conv2d(h, wk.reshape(-1, *wk.shape[2:]), None, conv.stride, conv.padding, conv.dilation, S)
            h = h + bk.reshape(1, -1, 1, 1)
            if k in net.dropout_after_conv and p > 0:
                mk = next(m)                 # [S, B, C, H, W], or laid out as h already (keyed draws)
                h = h * (mk if mk.dim() == h.dim() else mk.movedim(0, 1).reshape(h.shape))
            h = torch.relu(F.max_pool2d(h, 2))        # torch's own max-pool on every device, as under vmap
        return h.reshape(B, S, -1).movedim(0, 1).contiguous()

    def head(pf, f, y, w, masks):
        """One client's linear layers and weighted mean loss, as ``problem._batch_loss``'s."""
        par = [t.view(s) for t, s in zip(pf.split(head_numels), head_shapes, strict=True)]
        m = iter(masks)
        for j in range(len(net.fcs)):
            f = F.linear(f, par[2 * j], par[2 * j + 1])
            if j < len(net.fcs) - 1:
                f = torch.relu(f)
                f = f * next(m) if p > 0 else f
        return (problem.per_sample_loss(f, y) * w).sum() / w.sum()

    head_grads = vmap(grad(head, argnums=(0, 1)), in_dims=(0, 0, 0, 0, 0), randomness="error")

    def vgrad(X, xb, yb, w, masks):
        with torch.enable_grad():
            Xc = X[:, :n_conv_par].detach().requires_grad_(True)
            f = features(Xc, xb, masks[:conv_masks])
            g_head, g_f = head_grads(X[:, n_conv_par:], f.detach(), yb, w, tuple(masks[conv_masks:]))
            (g_conv,) = torch.autograd.grad(f, Xc, g_f)
        return torch.cat([g_conv, g_head], dim=1)
    return vgrad


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
