"""Shared fixtures."""

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from fedlib import participation, problems


@pytest.fixture
def quad():
    """Heterogeneous quadratics (distinct A_i and c_i), exact gradients, float64."""
    return problems.random_quadratic(num_clients=8, dim=4, seed=3)


@pytest.fixture
def het_bernoulli():
    """Heterogeneous Bernoulli participation, p_i from 0.2 to 0.9, K = 5."""
    return participation.build("bernoulli", 8, 2500, seed=11, p=np.linspace(0.2, 0.9, 8),
                               local_steps=5)


@pytest.fixture(scope="session")
def tiny_cnn():
    """The embedded neural task with few clients and no dropout (deterministic gradients)."""
    return problems.digits_cnn(num_clients=6, alpha=0.5, batch_size=16, seed=0, dropout=0.0)


def rel(x, y):
    return float(torch.linalg.vector_norm(x - y) / torch.linalg.vector_norm(y))


@pytest.fixture(autouse=True)
def _computing_allowed(monkeypatch):
    """`make test` sets FEDLIB_NO_COMPUTE=1 for the notebooks under nbval; unit tests compute."""
    monkeypatch.delenv("FEDLIB_NO_COMPUTE", raising=False)


#: fp32's unit roundoff: one rounded operation errs by at most this relative amount
U32 = 2.0 ** -24
#: the longest reduction in the backward pass of the ``tiny_cnn`` task (FedSUM's MNIST CNN, batch
#: 16): conv1's weight gradient sums over the batch and its 24 x 24 output positions
TINY_CNN_REDUCTION = 16 * 24 * 24


def assert_kernels_agree(a, b, reduction, what=""):
    """``a`` and ``b`` computed by different kernels (vmap vs a loop, the vectorized vs the
    reference engine, another instruction set or thread count) agree to fp32 rounding.

    Two kernels may sum the same ``reduction`` terms in different orders; a sum of n fp32 terms
    errs by at most (n - 1) u sum|terms| (Higham, Accuracy and Stability, eq. 4.4), so the two
    results differ by up to about 2 n u times the norm of the result when its terms do not cancel
    badly. Compared norm-wise (elementwise, one entry that cancels to ~0 can differ by 100%), on
    the quantity itself, not on a model that also holds its large initial value (pass
    displacements ``x - x0``). Measured on the tiny CNN: 2e-5 (vmap vs loop gradients, AVX2),
    3e-6 (vectorized vs reference engine after 3 rounds): the bound 2 n u = 1.1e-3 leaves a
    margin of >= 30x on AVX2 and with the SSE4.1 baseline kernels.
    """
    diff = float(torch.linalg.vector_norm((a - b).double()))
    scale = float(torch.linalg.vector_norm(b.double()))
    bound = 2 * reduction * U32 * scale
    assert diff <= bound, (f"{what}: kernels differ by {diff:.3e} (norm), beyond the fp32 rounding bound "
                           f"{bound:.3e} = 2 x {reduction} terms x u x |b|")


def pytest_configure(config):
    """Under pytest-xdist (``make test``), each worker writes the notebooks' outputs under its own
    folder of ``$FEDLIB_OUT_ROOT``: two notebooks updating one claims ledger at once could read
    each other's half-written file. The notebooks' kernels inherit this environment."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = os.environ.get("FEDLIB_OUT_ROOT")
    if worker and root:
        own = Path(root) / worker
        own.mkdir(parents=True, exist_ok=True)
        os.environ["FEDLIB_OUT_ROOT"] = str(own)
