"""fedlib.studies.fedacs_toy: FedACS's toy (notebook 06)."""

import numpy as np

from fedlib import studies


def test_fedacs_toy_fixed_points_match_the_simulation():
    toy = studies.fedacs_toy.Toy(num_clients=6, rounds=1000, seed=1)
    dist = {}
    for method in ("fedavg", "ca_fedavg", "fedacs"):
        xbar, sim = toy.evaluate("static", method, "SGD")
        dist[method] = np.linalg.norm(xbar - toy.x_star)
        if method != "fedacs":                  # FedACS's draws are noisier than its small bias
            assert np.linalg.norm(sim - xbar) < 0.2 * dist[method], method
    assert dist["fedacs"] < min(dist["fedavg"], dist["ca_fedavg"])           # it removes both biases
    comm = {m: toy.single_source("communication", m, 0.02) for m in ("fedavg", "ca_fedavg")}
    assert comm["ca_fedavg"] < comm["fedavg"]
