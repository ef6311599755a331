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
