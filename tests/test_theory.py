"""fedlib.theory: local linear maps and fixed points against simulation and closed forms."""

import numpy as np
import torch

from fedlib import engine, participation, problems, theory


def test_local_map_matches_the_engine_for_every_solver():
    prob = problems.random_quadratic(3, 3, seed=1)
    A, c = prob.A.numpy(), prob.c.numpy()
    x0 = torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64)
    for solver in ({}, {"momentum": 0.7}, {"prox_mu": 0.5}):
        M = theory.local_map(A[2], 0.05, 6, **solver)
        res = engine.VectorizedEngine().local_sgd(prob, x0[None], torch.tensor([2]), torch.tensor([6]),
                                                  0.05, round=0, **solver)
        assert np.allclose(res.X[0].numpy(), x0.numpy() - M @ (x0.numpy() - c[2]), rtol=1e-12)
    sgd = np.eye(3) - np.linalg.matrix_power(np.eye(3) - 0.05 * A[0], 4)
    assert np.allclose(theory.local_map(A[0], 0.05, 4), sgd)


def test_fixed_points_of_full_participation_fedavg():
    prob = problems.random_quadratic(4, 2, seed=0)
    A, c = prob.A.numpy(), prob.c.numpy()
    steps = np.array([1, 2, 3, 4])
    sched = participation.build("full", 4, 10, local_steps=steps)
    W = theory.aggregation_weights("fedavg", sched, np.ones(4), 0.1, prob.weights.numpy())
    x1 = theory.fixed_point(A, c, W, sched, 0.1)
    x2 = theory.fixed_point_static(A, c, theory.expected_weights("fedavg", np.ones(4), steps, 0.1,
                                                                 prob.weights.numpy()), steps, 0.1)
    assert np.allclose(x1, x2)
    # with one local step FedAvg is gradient descent: fixed point x*
    one = participation.build("full", 4, 10, local_steps=1)
    W1 = theory.aggregation_weights("fedavg", one, np.ones(4), 0.1, prob.weights.numpy())
    assert np.allclose(theory.fixed_point(A, c, W1, one, 0.1), prob.optimum().numpy())


def test_expected_weights_of_fedacs_cancel_both_heterogeneities():
    p, steps = np.array([0.2, 0.5, 1.0]), np.array([5, 1, 2])
    w = theory.expected_weights("fedacs", p, steps, 0.1, np.full(3, 1 / 3))
    assert np.allclose(w * steps / (w * steps).sum(), 1 / 3)     # q_i p_i tau_i equal
