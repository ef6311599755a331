"""fedlib.tasks: the neural task's training metrics."""


import numpy as np
import torch

from .conftest import TINY_CNN_REDUCTION, assert_kernels_agree


def test_neural_training_metrics_on_a_weighted_subset():
    from fedlib import problems

    def build(m):
        return problems.digits_cnn(num_clients=8, alpha=0.5, batch_size=8, seed=0, train_eval_per_client=m)
    full, sub, big = build(None), build(20), build(10_000)
    sizes = np.array([len(p) for p in sub.partition])
    assert len(sub._train_eval_idx) == np.minimum(sizes, 20).sum() < sizes.sum()
    for prob in (sub, full):
        assert abs(float(prob._train_eval_w.sum()) - 1) < 1e-12
    x = full.initial_params()
    m_full, m_sub = full.metrics(x), sub.metrics(x)
    idx = torch.cat(full.partition)                              # every sample, equal weights
    with torch.no_grad():
        ref = torch.nn.functional.cross_entropy(full.model.eval()(full.train.x[idx]), full.train.y[idx])
    # one forward pass over all samples vs batches of 512: other kernels, other summation orders; the
    # mean of n fp32 losses and the forward's own reductions bound the difference (conftest)
    terms = len(idx) + TINY_CNN_REDUCTION
    assert_kernels_agree(torch.tensor(m_full["loss"]), ref.double(), terms, "loss, batched vs whole")
    assert m_full["test_acc"] == m_sub["test_acc"]               # test metrics: whole test split
    assert m_sub["loss"] != m_full["loss"] and abs(m_sub["loss"] - m_full["loss"]) < 0.05 * m_full["loss"]
    assert_kernels_agree(torch.tensor(big.metrics(x)["loss"]), torch.tensor(m_full["loss"]), terms,
                         "m >= n_i: every sample")


def _dropout_cnn(parallel_draws):
    from fedlib import models, partition, problems
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(400, 1, 28, 28, generator=g), torch.randint(0, 10, (400,), generator=g)
    part = partition.dirichlet(y.numpy(), 6, 0.5, seed=0).indices
    return problems.Neural(models.build("fedsum_mnist_cnn", seed=0), part, (x, y), (x[:50], y[:50]),
                           batch_size=16, strategy="vmap", parallel_draws=parallel_draws)


def test_parallel_draws_change_no_bit():
    """The pool (and the next step drawn ahead) gives the serial draws' gradients bit for bit,
    whether the guessed step is the one asked for or not; FedSUM's MNIST CNN has dropout, so
    the keyed masks are part of what is drawn."""
    serial, pooled = _dropout_cnn(False), _dropout_cnn(True)
    assert pooled.parallel_draws and not serial.parallel_draws
    assert any(len(m) for m in serial.dropout_masks(0, 0, 0))
    x = serial.initial_params()
    X = torch.stack([x + 0.01 * k for k in range(3)])
    asks = [([0, 2, 5], 0, 0), ([0, 2, 5], 0, 1), ([1, 3, 4], 0, 2), ([1, 3, 4], 1, 0), ([0, 2, 5], 1, 1)]
    for clients, rnd, step in asks:            # hit, miss (other clients), miss (other round), miss
        a = serial.grads(X, clients, rnd, step)
        b = pooled.grads(X, clients, rnd, step)
        assert torch.equal(a, b), (clients, rnd, step)
    assert pooled._prefetched[0] == ((0, 2, 5), 1, 2)               # the next step is being drawn


def test_parallel_draws_must_be_a_bool():
    import pytest
    with pytest.raises(ValueError, match="parallel_draws: must be True or False"):
        _dropout_cnn("yes")
