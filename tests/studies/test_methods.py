"""fedlib.studies.methods: the one catalogue of the methods every study runs."""

import pytest

from fedlib import ExperimentConfig, plotting, studies
from fedlib.studies import methods


def test_every_catalogue_entry_is_a_valid_config_of_its_algorithm():
    for name, m in methods.CATALOGUE.items():
        algo, opts = m.spec()
        assert m.label and m.paper, name
        ExperimentConfig(algorithm=algo, algorithm_args=opts, problem="quadratic", participation="full",
                         rounds=1).validate()
    with pytest.raises(ValueError, match="^config.algorithm_args.cutof"):
        ExperimentConfig(algorithm="fedau", algorithm_args={"cutof": 5}, problem="quadratic",
                         participation="full", rounds=1).validate()


def test_studies_pick_their_methods_from_the_catalogue_not_restated():
    """A method two studies share is the same run in both: notebook 09's FedSUM baselines are
    FedSUM App. H's, its SG-FOCUS is FOCUS's, its FedACS is FedACS's at 10 clients per round."""
    real, fedsum, focus = studies.real.METHODS, studies.fedsum.METHODS, studies.focus.METHODS
    for label in ("FedSUM", "FedSUM-CR", "FedAvg", "FedAU", "FedAWE", "MIFA", "FedVARP", "SCAFFOLD"):
        assert real[label] == fedsum[label], label
    assert real["SG-FOCUS"] == focus["SG-FOCUS"] and focus["FedAU"] == fedsum["FedAU"]
    acs = studies.fedacs.fedacs_setup("quick").methods
    assert real["FedACS"] == acs["FedACS"][:2] == ("fedacs", {"draws": 10})
    # where papers run a method differently, both are in the catalogue under one label
    assert focus["SCAFFOLD"] == ("scaffold", {})
    assert fedsum["SCAFFOLD"] == ("scaffold", {"uplink_vectors": 1})
    assert acs["FedAvg"][:2] == ("fedavg", {"aggregation": "contacted"})
    assert fedsum["FedAvg"] == ("fedavg", {})
    # a setup adds what depends on it: FedACS's draws and OS's budget follow the clients per round
    smoke = studies.fedacs.fedacs_setup("smoke")
    assert smoke.methods["FedACS"][1] == {"draws": smoke.per_round}
    assert smoke.methods["OS"][1] == {"budget": smoke.per_round // 2}
    amp = studies.amplified.amplified_setup("quick")
    assert {a for a, _ in amp.methods.values()} == {methods.method(n).algorithm
                                                    for n in studies.amplified.METHOD_NAMES}
    for name in studies.names():
        assert set(studies.get(name).methods) <= set(methods.CATALOGUE), name


def test_catalogue_lookups_and_registration_say_what_is_wrong(monkeypatch):
    monkeypatch.setattr(methods, "CATALOGUE", dict(methods.CATALOGUE))
    assert methods.specs(["FedACS", "OS"], {"FedACS": {"draws": 4}}) == {
        "FedACS": ("fedacs", {"draws": 4}), "OS": ("os_sampling", {"budget": 5})}
    assert methods.algorithms(["FedSUM", "MIFA"], star=True) == {"FedSUM*": "fedsum", "MIFA*": "mifa"}
    with pytest.raises(ValueError, match="^name: must be one of .*'FedSUM'.*got 'FedSum'"):
        methods.method("FedSum")
    with pytest.raises(ValueError, match="^extra: 'OS' is not among the names"):
        methods.specs(["FedACS"], {"OS": {"budget": 1}})
    with pytest.raises(ValueError, match="^names: two methods labelled 'SCAFFOLD'"):
        methods.specs(["SCAFFOLD", "SCAFFOLD (FOCUS)"])
    mine = methods.Method("FedProx", "fedavg", {"prox_mu": 0.1}, "Li et al. 2020")
    assert methods.register_method("FedProx", mine) is mine and methods.method("FedProx").spec() == \
        ("fedavg", {"prox_mu": 0.1})
    with pytest.raises(ValueError, match="^name: 'FedProx' is already in the catalogue"):
        methods.register_method("FedProx", mine)
    with pytest.raises(ValueError, match="^m: must be a fedlib.studies.methods.Method"):
        methods.register_method("x", ("fedavg", {}))
    with pytest.raises(ValueError, match="^algorithm: must be a non-empty string"):
        methods.Method("x", "")
    with pytest.raises(TypeError):
        mine.options["prox_mu"] = 1.0                          # a catalogue entry cannot be changed in place
    # a variant keeps its method's colour family, as every figure draws it
    m = methods.method("SCAFFOLD as in the authors' code (sum / fixed S)")
    assert m.colour == plotting.method_palette([m.label])[m.label] != methods.method("SCAFFOLD").colour
