"""Shared fixtures."""

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
