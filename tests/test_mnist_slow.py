"""FedSUM on the real MNIST (the shared mnist.npz): the paper's CNN, Dirichlet(0.1), 100 clients.

Slow (a few CPU-minutes): deselected by `make test`, run by `make test-slow`."""

from pathlib import Path

import pytest

import fedlib
from fedlib import problems

MNIST_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.mark.slow
@pytest.mark.skipif(not (MNIST_DIR / "mnist.npz").is_file(), reason="shared mnist.npz not available")
def test_fedsum_on_mnist_learns():
    prob = problems.neural(dataset="mnist", partition="dirichlet", alpha=0.1, model="fedsum_mnist_cnn",
                           num_clients=100, batch_size=128, seed=0, data_root=MNIST_DIR)
    res = fedlib.run("fedsum", prob, {"kind": "uniform", "per_round": 20}, rounds=20, local_steps=10,
                     lr_local=0.01, lr_schedule="fedsum_sqrt", eval_every=10, progress=False)
    h = res.history
    assert h["loss"].iloc[-1] < h["loss"].iloc[0]
    assert h["test_acc"].iloc[-1] > h["test_acc"].iloc[0] + 0.2
