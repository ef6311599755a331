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


def _calibration_setting(T=400, n=20):
    rng = np.random.default_rng(3)
    up = rng.uniform(0.3, 1.0, n)
    steps = rng.integers(1, 8, n)
    sched = participation.build("uniform", n, T, per_round=5, uplink_p=up, local_steps=steps, seed=4)
    return sched, up, steps


def test_calibration_in_a_homogeneous_environment_is_closed_form():
    """Same p and tau for everyone. Against FedAvg over the contacted clients (failed uploads
    count as zeros): FedACS moves like it; c-a-FedAvg and FedVARP divide by p, so their rate is
    FedAvg's times p; FedAU and OS keep FedAvg's rate. Against FedAvg over the arrivals, FedNova
    (also an average over the arrivals) keeps FedAvg's rate: "the step length is unaffected"."""
    sched = participation.build("uniform", 10, 50, per_round=4, uplink_p=0.5, local_steps=3, seed=0)
    r = theory.calibrated_rates(0.02, sched)
    assert np.isclose(r["fedacs"], 0.02)
    assert np.isclose(r["ca_fedavg"], 0.01) and np.isclose(r["fedvarp"], 0.01)
    assert r["fedau"] == r["os_sampling"] == r["fedavg"] == 0.02
    assert r["fednova"] < 0.0125                                  # ~ p x 0.02 (no arrival: no step)
    arrivals = theory.calibrated_rates(0.02, sched, fedavg_aggregation="participants")
    assert np.isclose(arrivals["fednova"], 0.02, rtol=1e-12)


def test_calibrated_rates_give_every_method_fedavgs_progress():
    """Identical clients f_i = 1/2 ||x||^2 and a tiny rate: the distance travelled in T rounds is
    eta_m * sum_t s_m^t * ||x0|| to first order, so calibrated methods travel as far as FedAvg
    (run by the library's own algorithm classes under heterogeneous uploads and local steps)."""
    sched, up, steps = _calibration_setting()
    prob = problems.quadratic(num_clients=20, dim=3, curvature=(1.0, 1.0), spread=0.0, seed=0)
    x0 = torch.full((3,), 10.0, dtype=torch.float64)
    lr = 1e-4
    rates = theory.calibrated_rates(lr, sched, methods=theory.CALIBRATED, weights=prob.weights.numpy(),
                                    mc_samples=2000)
    opts = {"fedavg": {"aggregation": "contacted"}, "fedacs": {"draws": 5}}
    moved = {}
    for m, eta in rates.items():
        res = fedlib_run(m, prob, sched, eta, x0, opts.get(m, {}))
        moved[m] = float(torch.linalg.norm(res.params - x0))
    for m in ("ca_fedavg", "fedvarp", "fednova", "fedacs"):
        assert abs(moved[m] / moved["fedavg"] - 1) < 0.04, (m, moved)
    # without calibration the methods differ: the check has teeth
    raw = fedlib_run("ca_fedavg", prob, sched, lr, x0, {})
    assert float(torch.linalg.norm(raw.params - x0)) / moved["fedavg"] > 1.2


def fedlib_run(method, prob, sched, lr, x0, opts):
    import fedlib
    return fedlib.run(method, prob, sched, lr_local=lr, x0=x0, eval_every=sched.num_rounds,
                      progress=False, **opts)


def test_step_factors_of_fedavg_conventions():
    sched, up, steps = _calibration_setting(T=50)
    contacted = theory.step_factors("fedavg", sched)
    active = sched.active > 0
    expected = (active * up * steps).sum(1) / active.sum(1)
    assert np.allclose(contacted, expected)
    everyone = theory.step_factors("fedavg", sched, fedavg_aggregation="all")
    assert np.allclose(everyone, contacted * active.sum(1) / 20)
    arrivals = theory.step_factors("fedavg", sched, fedavg_aggregation="participants", mc_samples=4000)
    assert (arrivals > contacted).all()              # dividing by arrivals only: longer steps


def test_calibration_rejects_bad_input():
    sched, _, _ = _calibration_setting(T=5)
    for kwargs, match in (({"lr": 0.0}, "lr"), ({"lr": 0.1, "methods": ("fedprox",)}, "methods"),
                          ({"lr": 0.1, "uplink_p": np.zeros(20)}, "uplink_p"),
                          ({"lr": 0.1, "weights": np.ones(3)}, "weights"),
                          ({"lr": 0.1, "fedavg_aggregation": "mean"}, "fedavg_aggregation")):
        try:
            theory.calibrated_rates(schedule=sched, **kwargs)
        except ValueError as e:
            assert match in str(e)
        else:
            raise AssertionError(kwargs)


def test_calibration_with_a_method_on_its_own_schedule():
    """FedACS chooses among all available clients while FedAvg asks a uniform subset: its rate
    comes from its own schedule, FedAvg's reference from the shared one."""
    sched, up, steps = _calibration_setting(T=60)
    full = participation.build("full", 20, 60, uplink_p=up, local_steps=steps, seed=4)
    r = theory.calibrated_rates(0.1, sched, ("fedavg", "fedacs", "ca_fedavg"), schedules={"fedacs": full})
    ref = theory.step_factors("fedavg", sched).mean()
    assert np.isclose(r["fedacs"], 0.1 * ref / theory.step_factors("fedacs", full).mean())
    # FedACS's step on the full schedule: the same every round, the weighted harmonic mean of p_i tau_i
    assert np.isclose(theory.step_factors("fedacs", full)[0], 1 / np.mean(1 / (up * steps)))
    assert np.isclose(r["ca_fedavg"], theory.calibrated_rates(0.1, sched, ("ca_fedavg",))["ca_fedavg"])
    try:
        theory.calibrated_rates(0.1, sched, ("fedavg",), schedules={"fedacs": full})
    except ValueError as e:
        assert str(e).startswith("schedules:")
    else:
        raise AssertionError("a schedule for a method not asked for must be refused")


def test_each_algorithm_declares_the_weights_it_aggregates_with():
    """One round of each algorithm on exact quadratics equals the theory's model
    x_1 = x_0 - sum_i W_i M_i (x_0 - c_i) with the W the algorithm declares (fedau's and fedvarp's
    declarations are limits at a fixed point, checked by the fixed-point tests instead)."""
    import fedlib
    from fedlib import algorithms

    prob = problems.random_quadratic(6, 3, seed=2)
    A, c = prob.A.numpy(), prob.c.numpy()
    up = np.array([0.3, 0.5, 0.6, 0.8, 0.9, 1.0])
    steps = np.array([1, 2, 3, 4, 2, 5])
    eta = 0.05
    for method, opts in (("fedavg", {"aggregation": "contacted"}), ("ca_fedavg", {}), ("fednova", {}),
                         ("fedacs", {"draws": 4})):
        for seed in range(3):
            sched = participation.build("full", 6, 1, seed=seed, uplink_p=up, local_steps=steps)
            res = fedlib.run(method, prob, sched, lr_local=eta, progress=False, seed=seed, **opts)
            x0 = prob.initial_params(seed).numpy()
            W = theory.aggregation_weights(method, res.schedule, up, eta, prob.weights.numpy(), draws=4)
            move = sum(W[0, i] * theory.local_map(A[i], eta, int(steps[i])) @ (x0 - c[i]) for i in range(6))
            assert np.allclose(res.params.numpy(), x0 - move, rtol=1e-10, atol=1e-12), (method, seed)
    declared = {n for n in algorithms.available() if "theory_weights" in vars(algorithms.get(n))}
    assert declared == set(theory.METHODS)
    # a subclass never inherits its parent's declaration
    assert "theory_weights" not in vars(algorithms.get("amplified_fedavg"))
    import pytest
    with pytest.raises(ValueError, match="^method: must be one of ca_fedavg, fedacs, fedau, fedavg, fednova, "
                                         "fedvarp; got 'amplified_fedavg'"):
        theory.aggregation_weights("amplified_fedavg", sched, up, eta, prob.weights.numpy())
