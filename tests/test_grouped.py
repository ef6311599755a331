"""fedlib.grouped: the vmap strategy's minibatch gradients of a SimpleCNN computed in the grouped
layout are the vmap path's own, bit for bit on the CPU (the same kernels: the grouped convolutions
vmap's batching rule calls, the linear layers and loss under the same vmap(grad)), for every draw
scheme, with and without dropout, with clients whose data are fewer than a batch (zero-weight
rows), and rounds of local SGD through the engine's option; models it is not written for are
refused by name."""

from __future__ import annotations

import pytest
import torch

from fedlib import engine, grouped, problems

from .conftest import TINY_CNN_REDUCTION, assert_kernels_agree


def _problem(draws: str, dropout: float = 0.3, model: str = "fedsum_mnist_cnn", batch: int = 16):
    p = problems.neural(dataset="digits", partition="dirichlet", model=model, num_clients=6, alpha=0.5,
                        batch_size=batch, seed=0, model_args={"dropout": dropout} if dropout else None)
    p.strategy = "vmap"
    p.set_draws(draws)
    return p


def _points(p, S: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = p.initial_params()
    return x + 0.01 * torch.randn(S, x.numel(), generator=g, dtype=x.dtype)


@pytest.mark.parametrize("draws", ["keyed", "legacy"])
@pytest.mark.parametrize("dropout", [0.3, 0.0])
def test_the_grouped_layout_gives_the_vmap_paths_gradients_bit_for_bit(draws, dropout):
    p = _problem(draws, dropout)
    assert p.groups_layers
    clients = torch.tensor([5, 0, 2, 3])
    X = _points(p, 4)
    for rnd, step in ((0, 0), (3, 1), (7, 4)):
        plain = p.grads(X, clients, rnd, step)
        got = p.grads(X, clients, rnd, step, grouped_layout=True)
        assert torch.equal(got, plain), f"round {rnd} step {step}: {(got - plain).abs().max():.3e}"
        assert torch.equal(got.view(torch.int32), plain.view(torch.int32))     # bits: zeros' signs too
    # with the clients innermost too: the first convolution's input arrives in another layout
    # (another kernel on this CPU as on CUDA), so agreement to fp32 rounding, not bits
    both = p.grads(X, clients, 3, 1, grouped_layout=True, clients_innermost=True)
    assert_kernels_agree(both, p.grads(X, clients, 3, 1, clients_innermost=True), TINY_CNN_REDUCTION,
                         "gradients with the clients innermost")


def test_masks_and_minibatches_drawn_in_the_grouped_layout_are_the_same_values_on_both_draw_paths():
    """The keyed draws write a convolutional layer's mask directly in the grouped layout (rows, S x
    C, H, W) and gather the minibatch batch-major: the same values as the vmap path's [S, rows,
    ...] masks and minibatches, on the CPU's numpy path and on the device path (torch int64, run
    on the CPU), with a batch larger than some clients' data (zero rows past m); the gradients
    from them are the vmap path's, bit for bit."""
    p, q = _problem("keyed", batch=160), _problem("keyed", batch=160)
    q._keyed_numpy = False                            # the device path (keyed.step_draws)
    sizes = torch.tensor([len(ix) for ix in p.partition])
    clients = torch.tensor([int(torch.argmin(sizes)), int(torch.argmax(sizes)), 2])
    assert sizes[clients[0]] < 160 <= sizes[clients[1]]
    X = _points(p, 3)
    for prob in (p, q):
        idx, w, plain = prob._keyed_draws(clients, 4, 2)
        idx_g, w_g, laid = prob._keyed_draws(clients, 4, 2, grouped_layout=True)
        assert torch.equal(idx, idx_g) and torch.equal(w, w_g) and len(plain) == len(laid) == 2
        conv, fc = plain
        assert laid[0].shape == (160, 3 * conv.shape[2], *conv.shape[3:]) and laid[0].is_contiguous()
        assert torch.equal(laid[0], conv.movedim(0, 1).reshape(laid[0].shape)) and torch.equal(laid[1], fc)
        assert bool((conv[0, int(sizes[clients[0]]):] == 0).all())
        assert float(conv.max()) == float(torch.ones(()) / (1 - 0.3))
        xb = prob._stacked(idx, False, grouped_layout=True)
        assert torch.equal(xb, prob._stacked(idx, False)) and xb.movedim(0, 1).is_contiguous()
        got, plain = prob.grads(X, clients, 4, 2, grouped_layout=True), p.grads(X, clients, 4, 2)
        assert torch.equal(got.view(torch.int32), plain.view(torch.int32))


def test_clients_with_fewer_samples_than_a_batch_and_three_input_channels():
    """A batch larger than some clients' data (their rows past m carry zero weight and zero
    masks) and a three-channel model without dropout (FedSUM's SVHN CNN on random stand-ins)."""
    p = problems.neural(dataset="svhn", partition="dirichlet", model="fedsum_svhn_cnn", num_clients=40,
                        alpha=0.1, batch_size=64, seed=0, synthetic=True, synthetic_sizes=(800, 100))
    p.strategy = "vmap"
    p.set_draws("keyed")
    sizes = torch.tensor([len(ix) for ix in p.partition])
    clients = torch.cat([torch.nonzero(sizes < 64).flatten()[:2], torch.nonzero(sizes >= 64).flatten()[:1]])
    assert len(clients) == 3 and (sizes[clients] < 64).sum() == 2
    X = _points(p, 3)
    assert torch.equal(p.grads(X, clients, 2, 0, grouped_layout=True), p.grads(X, clients, 2, 0))


def test_the_engines_option_runs_the_same_local_sgd_and_is_recorded():
    p = _problem("keyed")
    opt = engine.VectorizedEngine(grouped_layout=True)
    clients, steps = torch.tensor([5, 0, 2]), torch.tensor([3, 1, 3])
    X0 = _points(p, 3, seed=2)
    a, b = (e.local_sgd(p, X0, clients, steps, 0.05, round=1) for e in (opt, engine.VectorizedEngine()))
    assert torch.equal(a.X, b.X) and torch.equal(a.grad_sum, b.grad_sum)
    assert repr(opt) == "VectorizedEngine(graphs=False, grouped_layout=True)"
    assert opt.arithmetic == ("grouped_layout",)
    assert engine.VectorizedEngine(clients_innermost=True, grouped_layout=True).arithmetic == (
        "clients_innermost", "grouped_layout")
    with pytest.raises(ValueError, match="grouped_layout: must be True or False"):
        engine.VectorizedEngine(grouped_layout="yes")


def test_rounds_of_local_sgd_with_corrections_are_the_same_with_the_option():
    """Three rounds of the engine's local SGD on changing clients, with a correction term and
    momentum (SCAFFOLD's and FedSUM's paths), each round from the last: the same bits."""
    p = _problem("keyed")
    runs = {}
    engines = {"plain": engine.VectorizedEngine(), "grouped": engine.VectorizedEngine(grouped_layout=True)}
    for name, eng in engines.items():
        X = _points(p, 3, seed=4)
        corr = 0.01 * _points(p, 3, seed=5)
        for rnd, clients in enumerate(([5, 0, 2], [1, 3, 4], [0, 2, 5])):
            out = eng.local_sgd(p, X, torch.tensor(clients), torch.tensor([2, 3, 1]), 0.05, round=rnd,
                                correction=corr, momentum=0.5)
            X = out.X
        runs[name] = (X, out.grad_sum)
    assert all(torch.equal(a, b) for a, b in zip(runs["plain"], runs["grouped"], strict=True))


@pytest.mark.parametrize("graphs", [False, True])
def test_the_engine_passes_the_option_to_every_step_where_it_applies(graphs):
    """The grouped gradient is bit-equal, so equal results cannot show that the option arrived:
    count the calls of the problem's grouped gradient function instead (plain and graphed steps;
    on the CPU the graphed path is the plain one), and none without the option."""
    p = _problem("keyed")
    calls = []
    real = grouped.grouped_vgrad(p)
    p._grouped = lambda *a: calls.append(1) or real(*a)     # what _gradient_fn hands out from now on
    X0, clients, steps = _points(p, 3), torch.tensor([5, 0, 2]), torch.tensor([2, 1, 2])
    engine.VectorizedEngine(graphs=graphs).local_sgd(p, X0, clients, steps, 0.05, round=1)
    assert calls == []
    opt = engine.VectorizedEngine(graphs=graphs, grouped_layout=True)
    opt.local_sgd(p, X0, clients, steps, 0.05, round=1)
    assert len(calls) == 2                                  # one per step (K = 2)
    assert engine.VectorizedEngine(grouped_layout=True)._options(p) == {"grouped_layout": True}


def test_models_it_is_not_written_for_are_refused_by_name():
    p = _problem("keyed")
    p.strategy = "loop"
    assert not p.groups_layers
    with pytest.raises(ValueError, match="grouped_layout: needs the vmap strategy"):
        p.grads(_points(p, 2), torch.tensor([0, 1]), 0, 0, grouped_layout=True)
    resnet = problems.neural(dataset="cifar10", model="resnet18", num_clients=2, batch_size=4, alpha=1.0,
                             synthetic=True, synthetic_sizes=(40, 10))
    resnet.strategy = "vmap"
    assert not resnet.groups_layers                         # vmap, but not a SimpleCNN
    assert engine.VectorizedEngine(grouped_layout=True)._options(resnet) == {}
    with pytest.raises(ValueError, match="grouped_layout: needs the vmap strategy and a SimpleCNN"):
        resnet.grads(_points(resnet, 2), torch.tensor([0, 1]), 0, 0, grouped_layout=True)
    assert not grouped.supports(torch.nn.Linear(3, 2), {})
    with pytest.raises(ValueError, match="grouped_layout: written for a SimpleCNN"):
        grouped.grouped_vgrad(resnet)
