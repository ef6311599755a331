"""Problems: gradients against closed forms, optima, keyed randomness, the neural task."""

import numpy as np
import pytest
import torch

from fedlib import models, partition, problems

from .conftest import TINY_CNN_REDUCTION, assert_kernels_agree


def test_quadratic_gradients_and_optimum(quad):
    X = torch.randn(5, quad.dim, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    clients = torch.tensor([0, 3, 3, 7, 1])
    G = quad.grads(X, clients)
    for s, c in enumerate(clients):
        assert torch.allclose(G[s], quad.A[c] @ (X[s] - quad.c[c]))
        assert torch.allclose(G[s], quad.client_grad(X[s], int(c)), rtol=1e-13, atol=1e-13)
    xs = quad.optimum()
    assert float(quad.full_grad(xs).norm()) < 1e-12
    # global gradient is the weighted sum of client gradients
    x = X[0]
    allg = quad.grads(x.expand(quad.num_clients, -1), torch.arange(quad.num_clients))
    assert torch.allclose(quad.weights @ allg, quad.full_grad(x))
    assert quad.loss(xs) < quad.loss(x)


def test_quadratic_rejects_non_spd():
    A = -torch.eye(2).expand(3, 2, 2)
    with pytest.raises(ValueError, match="^A"):
        problems.Quadratic(A, torch.zeros(3, 2))


def test_noise_is_keyed_by_client_round_step():
    q = problems.random_quadratic(6, 3, seed=1, sigma=0.5)
    x = torch.zeros(3, dtype=torch.float64)
    g_all = q.grads(x.expand(6, -1), torch.arange(6), round=4, step=2)
    g_two = q.grads(x.expand(2, -1), torch.tensor([5, 2]), round=4, step=2)
    assert torch.equal(g_two, g_all[[5, 2]])
    assert not torch.equal(q.grads(x.expand(6, -1), torch.arange(6), round=4, step=3), g_all)
    assert torch.equal(q.client_grad(x, 2, round=4, step=2), g_all[2])
    exact = q.grads(x.expand(6, -1), torch.arange(6), round=4, step=2, stochastic=False)
    assert torch.allclose(exact, q.H @ x - q.r)
    assert torch.allclose(g_all - exact, 0.5 * q._noise(4, 2))


def test_least_squares_matches_normal_equations():
    A, b, owner = problems.focus_toy_data(n=400, d=6, num_clients=4, seed=0)
    ls = problems.LeastSquares(A, b, owner)
    xs = ls.optimum()
    ne = np.linalg.solve(A.T @ A, A.T @ b)
    assert np.allclose(xs.numpy(), ne, atol=1e-10)
    # unnormalised f_i = 1/2 ||A_i x - b_i||^2: client gradient A_i^T (A_i x - b_i)
    x = torch.ones(6, dtype=torch.float64)
    Ai, bi = torch.tensor(A[owner == 2]), torch.tensor(b[owner == 2])
    assert torch.allclose(ls.client_grad(x, 2), Ai.T @ (Ai @ x - bi))
    assert float(ls.full_grad(xs).norm()) < 1e-9
    nz = problems.LeastSquares(A, b, owner, normalized=True)
    assert torch.allclose(nz.client_grad(x, 2), Ai.T @ (Ai @ x - bi) / len(bi))
    assert float(nz.full_grad(nz.optimum()).norm()) < 1e-10
    # solved once per problem (every evaluation asks for it, and LAPACK's last bits may vary
    # between calls); the caller gets a copy it may change
    first = ls.optimum()
    first += 1.0
    assert torch.equal(ls.optimum(), xs) and ls.optimum() is not ls.optimum()


def test_focus_toy_data_layout_and_determinism():
    A, b, owner = problems.focus_toy_data()
    assert A.shape == (8000, 50) and b.shape == (8000,)
    assert list(owner[:18]) == list(range(16)) + [0, 1]
    A2, b2, _ = problems.focus_toy_data()
    assert np.array_equal(A, A2) and np.array_equal(b, b2)
    q = problems.focus_arbitrary_weights()
    assert q.shape == (16,) and np.isclose(q.sum(), 1) and (q > 0).all()


def test_dirichlet_partition_properties():
    labels = np.repeat(np.arange(10), 50)
    parts = partition.dirichlet(labels, 20, alpha=0.1, seed=3).indices
    allidx = np.concatenate(parts)
    assert len(allidx) == 500 and len(np.unique(allidx)) == 500
    assert min(len(p) for p in parts) >= 1
    again = partition.dirichlet(labels, 20, alpha=0.1, seed=3).indices
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))
    # smaller alpha -> more skewed label mixes (mean max-class share per client)
    def skew(ps):
        return np.mean([np.bincount(labels[p], minlength=10).max() / len(p) for p in ps])
    assert skew(parts) > skew(partition.dirichlet(labels, 20, alpha=100.0, seed=3).indices)
    with pytest.raises(ValueError, match="^alpha"):
        partition.dirichlet(labels, 5, alpha=0)


def test_neural_vmap_gradients_equal_autograd(tiny_cnn):
    p = tiny_cnn
    g = torch.Generator().manual_seed(0)
    X = p.initial_params().expand(3, -1) + 0.01 * torch.randn(3, p.dim, generator=g)
    clients = torch.tensor([4, 0, 2])
    G = p.grads(X, clients, round=3, step=1)
    for s, c in enumerate(clients):
        ref = p.client_grad(X[s], int(c), round=3, step=1)
        assert_kernels_agree(G[s], ref, TINY_CNN_REDUCTION, f"client {int(c)}")


def test_neural_batches_do_not_depend_on_other_clients(tiny_cnn):
    p = tiny_cnn
    X = p.initial_params().expand(4, -1).clone()
    G4 = p.grads(X, torch.tensor([0, 1, 2, 3]), round=7, step=2)
    G1 = p.grads(X[:1], torch.tensor([2]), round=7, step=2)
    assert_kernels_agree(G4[2], G1[0], TINY_CNN_REDUCTION, "client 2 alone vs among four")
    idx, w = p.batch_indices(2, 7, 2)
    assert set(idx[w > 0].tolist()) <= set(p.partition[2].tolist())
    assert len(set(idx[w > 0].tolist())) == int(w.sum())


def test_neural_metrics_and_shapes(tiny_cnn):
    m = tiny_cnn.metrics(tiny_cnn.initial_params())
    assert set(m) >= {"loss", "test_loss", "test_acc", "train_acc"}
    assert 0 <= m["test_acc"] <= 1 and m["loss"] > 0
    assert tiny_cnn.dim == sum(p.numel() for p in models.build('fedsum_mnist_cnn').parameters())
    assert np.isclose(float(tiny_cnn.weights.sum()), 1.0)


def test_registry():
    assert {"quadratic", "focus_toy", "digits_cnn"} <= set(problems.available())
    with pytest.raises(ValueError, match="^problem"):
        problems.build("nope")


def test_neural_strategies_agree(tiny_cnn):
    p = tiny_cnn
    X = p.initial_params().expand(3, -1).clone()
    clients = torch.tensor([1, 4, 2])
    old = p.strategy
    try:
        p.strategy = "vmap"
        a = p.grads(X, clients, round=1, step=0)
        p.strategy = "loop"
        b = p.grads(X, clients, round=1, step=0)
    finally:
        p.strategy = old
    for s in range(3):
        assert_kernels_agree(a[s], b[s], TINY_CNN_REDUCTION, f"client {int(clients[s])}")
    with pytest.raises(ValueError, match="^strategy"):
        problems.Neural(models.build('fedsum_mnist_cnn'), p.partition, (p.train.x, p.train.y),
                        (p.test.x, p.test.y), strategy="magic")


def test_registry_names_agree_with_functions_and_reprs_are_short():
    assert problems.quadratic is problems.random_quadratic
    assert set(problems.available()) <= set(dir(problems)) | {"focus_toy"}
    p = problems.digits_cnn(num_clients=5)
    assert repr(p).startswith("Neural(dataset='digits', model='fedsum_mnist_cnn'") and "N=5" in repr(p)


def test_neural_test_metrics_on_a_fixed_subset():
    full = problems.digits_cnn(num_clients=4, alpha=0.5, batch_size=16, seed=0, dropout=0.0)
    sub = problems.neural(dataset="digits", partition="dirichlet", alpha=0.5, num_clients=4, batch_size=16,
                          seed=0, model_args={"dropout": 0.0}, test_eval_size=60)
    x = full.initial_params()
    idx = sub._test_idx
    assert len(idx) == 60 and len(torch.unique(idx)) == 60
    loss, acc = full._evaluate(x, full.test.x[idx], full.test.y[idx])
    m = sub.metrics(x)
    assert np.isclose(m["test_loss"], loss) and np.isclose(m["test_acc"], acc)
    assert m["loss"] == full.metrics(x)["loss"]                            # training metrics unchanged
    again = problems.neural(dataset="digits", partition="dirichlet", alpha=0.5, num_clients=4,
                            batch_size=16, seed=0, test_eval_size=60)
    assert torch.equal(again._test_idx, idx)                             # fixed by the seed
    everything = problems.neural(dataset="digits", partition="dirichlet", alpha=0.5, num_clients=4,
                                 batch_size=16, seed=0, model_args={"dropout": 0.0}, test_eval_size=10**6)
    assert everything.metrics(x)["test_acc"] == full.metrics(x)["test_acc"]
    with pytest.raises(ValueError, match="^test_eval_size"):
        problems.neural(dataset="digits", alpha=0.5, num_clients=4, test_eval_size=0)
