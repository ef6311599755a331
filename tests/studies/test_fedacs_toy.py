"""fedlib.studies.fedacs_toy: FedACS's toy (notebook 06)."""

import re

import numpy as np
import pytest

from fedlib import claims, studies

_I4 = "App. I.4, Fig. 7"


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


def test_fedacs_toy_claims_are_the_fixed_points_of_each_method():
    v = studies.fedacs_toy.toy_values([0, 1, 2])
    # halving eta halves what is left where a source is removed, and leaves it where it is kept
    assert abs(v["kept", "FedAvg", "communication"][0] - 1) < 0.05
    assert abs(v["kept", "c-a-FedAvg", "communication"][0] - 0.5) < 0.01
    assert abs(v["kept", "FedNova", "computation"][1] - 0.5) < 0.01
    rows = {(r.where, r.claim): r for r in studies.fedacs_toy.toy_claims(v, "model")}
    assert len(rows) == len(studies.fedacs_toy.TOY_CLAIMS)
    acs = rows["App. I.4, Fig. 7", "FedACS's fixed point lies closer to x* than every other method's"].check
    assert acs.verdict == "holds" and acs.ci_low > 0
    neither = rows["App. I.4, Fig. 7", "FedVARP removes neither the communication nor the computation "
                   "inconsistency"]
    assert neither.check.verdict == "does not hold" and "communication: does not hold" in neither.check.reason
    assert "stationary" in neither.cause                     # the model cannot show Sec. 6's mechanism
    for (where, _), r in rows.items():           # Fig. 7's rows say the model is our reconstruction of it
        assert r.setting == ("model; " + studies.fedacs_toy.FIG7_NOTE if where == _I4 else "model")
    assert not any(r.where == "Sec. 6" and r.claim.startswith("FedVARP") for r in rows.values())  # unrun
    # I.4's "c-a-FedAvg/FedAU versus FedNova": FedAU's comparisons beside c-a-FedAvg's
    for m in ("c-a-FedAvg", "FedAU"):
        comm = rows[_I4, f"with heterogeneous communication alone, {m}'s fixed point lies closer to x* than "
                         "FedNova's"]
        comp = rows[_I4, "with heterogeneous computation alone, FedNova's fixed point lies closer to x* "
                         f"than {m}'s"]
        assert comm.quote == comp.quote and "c-a-FedAvg/FedAU versus FedNova" in comm.quote
        assert comm.check.verdict == comp.check.verdict == "holds" and comm.check.seeds == 3
    # App. I.2: halving eta leaves each method that keeps a source where it was (share kept within 1/4
    # of 1); FedACS, which removes both, is named in the cause with its share (1/2)
    (step,) = [r for r in rows.values() if r.where == "App. I.2"]
    assert step.quote.endswith("but does not determine the final convergence point.")
    assert step.check.verdict == "holds" and step.check.reason == (
        "per rival: FedAvg: holds; c-a-FedAvg: holds; FedVARP: holds; FedAU: holds; FedNova: holds")
    lo, hi = map(float, re.match(r"FedACS's share kept is ([\d.]+)-([\d.]+): ", step.cause).groups())
    assert abs(lo - 0.5) < 0.01 and abs(hi - 0.5) < 0.01 and "first order in eta" in step.cause
    moved = {**v, ("kept", "FedNova", "both"): {k: 1.3 for k in (0, 1, 2)}}     # 0.05 past the tolerance
    (step,) = [r for r in studies.fedacs_toy.toy_claims(moved) if r.where == "App. I.2"]
    assert step.check.verdict == "does not hold" and "FedNova: does not hold" in step.check.reason


def test_fedacs_toy_fig7_claims_are_checked_in_the_dynamic_setting_too():
    seeds, args = [0, 1], {"num_clients": 6, "rounds": 300}
    dyn = studies.fedacs_toy.dynamic_values(seeds, **args)
    methods = studies.fedacs_toy.TOY_METHODS
    assert set(dyn) == ({("dist", m, src, "SGD") for m in methods for src in studies.fedacs_toy.SOURCES}
                        | {("kept", m, src) for m in methods for src in studies.fedacs_toy.SOURCES})
    toy = studies.fedacs_toy.Toy(seed=1, **args)                  # the fixed point over the run's schedule
    xbar, _ = toy.evaluate("dynamic", "fednova", "SGD")
    assert dyn["dist", "FedNova", "both", "SGD"][1] == np.linalg.norm(xbar - toy.x_star)
    # one source alone, and the share kept: each round's expected weights, at eta and eta/2
    comm = toy.dynamic_source("communication", "fedavg", 0.02)
    assert dyn["dist", "FedAvg", "communication", "SGD"][1] == comm
    half = (toy.dynamic_source("computation", "fednova", 0.01)
            / toy.dynamic_source("computation", "fednova", 0.02))
    assert dyn["kept", "FedNova", "computation"][1] == half
    rows = studies.fedacs_toy.dynamic_claims(dyn, "dyn")
    assert [(r.where, r.quote, r.claim) for r in rows] == [c[:3] for c in studies.fedacs_toy.DYNAMIC_CLAIMS]
    assert all(r.setting == "dyn; " + studies.fedacs_toy.FIG7_NOTE and r.check.seeds == 2 for r in rows)
    static = {(r.quote, r.claim) for r in studies.fedacs_toy.toy_claims(studies.fedacs_toy.toy_values([0]))}
    assert not [r for r in rows if r.where == "Sec. 6"]       # Sec. 6's FedVARP: not tested (below)
    assert {(r.quote, r.claim) for r in rows} <= static                          # Fig. 7's statements
    # App. I.4 says them "under both static and dynamic heterogeneous settings": none left out
    i4 = [c for c in studies.fedacs_toy.TOY_CLAIMS if c[0] == _I4]
    assert [(r.where, r.quote, r.claim) for r in rows] == [c[:3] for c in i4]
    by = {r.claim: r for r in rows}
    ca = by["c-a-FedAvg's fixed point lies closer to x* than FedAvg's"]          # the realised distances
    d = {m: dyn["dist", m, "both", "SGD"] for m in ("FedAvg", "c-a-FedAvg")}
    assert ca.check.effect == pytest.approx(np.mean([d["FedAvg"][k] - d["c-a-FedAvg"][k] for k in seeds]))
    nova = by["FedNova removes the computation inconsistency"].check          # the dynamic shares kept
    kept = dyn["kept", "FedNova", "computation"]
    assert nova.effect == pytest.approx(np.mean([0.75 - kept[k] for k in seeds]))
    assert nova.verdict == "holds" and abs(dyn["kept", "FedNova", "computation"][0] - 0.5) < 0.02
    assert abs(dyn["kept", "FedAvg", "communication"][0] - 1) < 0.05        # a kept source stays
    # FedAvg keeps both: each source's dynamic share kept against 3/4, each with its verdict
    avg = [r for r in rows if r.claim == f"FedAvg {studies.fedacs_toy._NEITHER}"]
    assert len(avg) == 1 and avg[0].check.reason.startswith("per rival: communication: ")
    assert "computation: " in avg[0].check.reason
    margin = claims.MARGINS["share kept at half the rate"]
    direct = claims.combine({s: claims.paired(dyn["kept", "FedAvg", s], dict.fromkeys(seeds, 0.75),
                                              higher=True, margin=margin,
                                              names=(f"FedAvg's share kept ({s})", "3/4"))
                             for s in ("communication", "computation")})
    assert avg[0].check == direct                           # the dynamic shares kept, not the static ones
    for m in ("c-a-FedAvg", "FedAU"):                    # remove communication: its share kept is read
        (row,) = [r for r in rows if r.claim == f"{m} removes the communication inconsistency"]
        kept = dyn["kept", m, "communication"]
        assert row.check.effect == pytest.approx(np.mean([0.75 - kept[k] for k in seeds]))
    varp = by[f"FedVARP {studies.fedacs_toy._NEITHER}"]                       # App. I.4's, in this model
    assert varp.check.verdict == "does not hold" and "communication: does not hold" in varp.check.reason
    assert "eq. 115" in varp.cause
    assert by["FedACS's fixed point lies closer to x* than every other method's"].check.reason.startswith(
        "per rival: FedAvg: ")


def test_fedacs_variance_and_dimension_statements_are_rows_not_tested_with_their_reason():
    *rows, nonstat, dim, cor21, no_guarantee = studies.fedacs_toy.unrun_claims("s", "n", "ns", "th")
    # Sec. 4.2's Cor. 2.1 and its 'no convergence guarantee': a lost bound, a possibility
    for r, (where, quote, claim, reason) in zip((cor21, no_guarantee), studies.fedacs_toy.THEORY_UNRUN,
                                                strict=True):
        assert (r.where, r.quote, r.claim, r.setting, r.check.verdict) == (where, quote, claim, "th",
                                                                          "not tested")
        assert r.check.reason == "not tested: not run here: " + reason
    assert cor21.where.endswith("Cor. 2.1") and "lost" in cor21.check.reason
    assert "no run can refute a possibility" in no_guarantee.check.reason
    # Sec. 6's FedVARP under non-stationary statistics: this model's draws are stationary in distribution
    assert (nonstat.claim, nonstat.quote) == studies.fedacs_toy.NONSTATIONARY_CLAIM[:2]
    assert (nonstat.where, nonstat.setting, nonstat.check.verdict) == ("Sec. 6", "ns", "not tested")
    assert nonstat.check.reason == "not tested: not run here: " + studies.fedacs_toy.NONSTATIONARY_REASON
    assert nonstat.quote in _PAPER_SEC6
    assert [r.claim for r in rows] == [c for c, _, _ in studies.fedacs_toy.UNRUN_CLAIMS]
    # App. I.4's dimensionality half: the instance is defined in d = 2 only
    assert (dim.where, dim.setting, dim.check.verdict) == (_I4, "n", "not tested")
    assert dim.check.reason == "not tested: not run here: " + studies.fedacs_toy.DIMENSION_REASON
    assert dim.quote.endswith("bounded by the model\u2019s dimensionality and the learning rate.")
    lr_half = [c for c in studies.fedacs_toy.TOY_CLAIMS if c[1] == dim.quote]
    assert len(lr_half) == 1 and "learning-rate half of the statement only" in lr_half[0][2]
    for r, (_, _, reason) in zip(rows, studies.fedacs_toy.UNRUN_CLAIMS, strict=True):
        assert r.where == "Sec. 6" and r.setting == "s" and r.check.verdict == "not tested"
        assert r.check.reason == "not tested: not run here: " + reason
        assert reason.startswith(studies.fedacs_toy.UNRUN_REASON)
        assert r.quote in _PAPER_SEC6
    # c-a-FedAvg's variance is tested where runs exist (notebook 07); FedNova's lacks a homogeneous arm
    assert "notebook 07 tests it" in rows[1].check.reason
    assert "no arm with homogeneous" in rows[0].check.reason


#: FedACS Sec. 6's words (the quotes must be the paper's, verbatim)
_PAPER_SEC6 = ("In contrast, c-a-FedAvg accounts for communication heterogeneity and yields slight "
               "performance gains, albeit with increased variance in the global model. The FedVarp reuses "
               "previously observed local updates; however, due to non-stationary statistics across training "
               "rounds, it fails to resolve any form of objective inconsistency as well. ... The FedNova "
               "addresses computational heterogeneity, but its performance degrades under heterogeneous "
               "communication due to the resulting increase in variance.")


def test_the_pairing_of_p_and_tau_changes_only_tau_and_decides_the_closer_than_fedavg_rows():
    """Finding 3: the paper's p_i and tau_i were lost, so the toy pairs them three ways (crossed: the
    first instance; same; shuffled per instance seed); the optima, curvatures and p_i^t draws stay."""
    t = studies.fedacs_toy
    toys = {p: t.Toy(seed=3, rounds=50, pairing=p) for p in t.TOY_PAIRINGS}
    n = toys["crossed"].N
    assert toys["crossed"].tau.tolist() == list(range(n, 0, -1))           # the first instance, as before
    assert toys["same"].tau.tolist() == list(range(1, n + 1))
    assert sorted(toys["shuffled"].tau.tolist()) == list(range(1, n + 1))
    assert toys["shuffled"].tau.tolist() != t.Toy(seed=4, rounds=50, pairing="shuffled").tau.tolist()
    for toy in toys.values():
        assert np.array_equal(toy.c, toys["crossed"].c) and np.array_equal(toy.p_dyn, toys["crossed"].p_dyn)
    assert np.corrcoef(toys["crossed"].p_up, toys["crossed"].tau)[0, 1] == pytest.approx(-1)
    assert np.corrcoef(toys["same"].p_up, toys["same"].tau)[0, 1] == pytest.approx(1)
    assert t.Toy().pairing == t.TOY_PAIRING == "crossed"
    with pytest.raises(ValueError, match="^pairing: must be one of crossed, same, shuffled"):
        t.Toy(pairing="opposite")
    assert t.pairing_words("same").startswith("p_i and tau_i same: positively correlated")
    # the closer / farther rows only, and their verdicts move with the pairing: with crossed pairing
    # FedAvg's two biases partly cancel, with the same pairing they add
    seeds = [0, 1, 2]
    verdict = {}
    for p in ("crossed", "same"):
        rows = t.toy_claims(t.toy_values(seeds, pairing=p), p, kinds=t.PAIRED_KINDS)
        assert {c[3][0] for c in t.TOY_CLAIMS if c[2] in {r.claim for r in rows}} <= set(t.PAIRED_KINDS)
        assert len(rows) == sum(c[3][0] in t.PAIRED_KINDS for c in t.TOY_CLAIMS)
        verdict[p] = {r.claim: r.check.verdict for r in rows}
    ca = "c-a-FedAvg's fixed point lies closer to x* than FedAvg's"
    assert (verdict["crossed"][ca], verdict["same"][ca]) == ("does not hold", "holds")
    # the dynamic environment's closer / farther rows need only the distances with both sources
    dyn = t.dynamic_values([0], shares=False, num_clients=4, rounds=40, pairing="same")
    assert set(dyn) == {("dist", m, "both", "SGD") for m in t.TOY_METHODS}
    assert len(t.dynamic_claims(dyn, "d", kinds=t.PAIRED_KINDS)) == sum(
        c[3][0] in t.PAIRED_KINDS for c in t.DYNAMIC_CLAIMS)


def test_sec_4_1s_existing_statistical_works_each_keep_the_computation_inconsistency():
    """Finding 7: Sec. 4.1's "existing works [41, 37, 26, 38, 10] ... are ineffective against
    structural inconsistency", on the three of them the toy runs: each one's share kept with
    heterogeneous computation alone, against 3/4, combined."""
    t = studies.fedacs_toy
    v = t.toy_values([0, 1])
    (row,) = [r for r in t.toy_claims(v) if r.where == "Sec. 4.1" and r.quote.startswith("Existing works")]
    assert row.check.verdict == "holds"
    assert row.check.reason == "per rival: c-a-FedAvg: holds; FedAU: holds; FedVARP: holds"
    assert "share kept (computation)" in row.check.numbers
    for m in ("c-a-FedAvg", "FedAU", "FedVARP"):
        assert abs(v["kept", m, "computation"][0] - 1) < 0.05             # kept: halving eta leaves it
    moved = {**v, ("kept", "FedAU", "computation"): {0: 0.5, 1: 0.5}}      # as if FedAU removed it
    (row,) = [r for r in t.toy_claims(moved) if r.where == "Sec. 4.1" and r.quote.startswith("Existing")]
    assert row.check.verdict == "does not hold" and "FedAU: does not hold" in row.check.reason


def test_cor_2_2_fedavg_is_consistent_where_p_tau_matches_the_weights():
    """FedACS Cor. 2.2 (condition (13) lost; our reading p_i tau_i proportional to d_i): with p_i =
    d_i / tau_i scaled to a largest 1 FedAvg keeps about half its distance at eta/2 (first order in
    eta: consistent), where with the toy's own p_i it keeps about all of it."""
    t = studies.fedacs_toy
    toy = t.Toy(seed=0, rounds=10)
    p = toy.balanced_p()
    assert p.max() == 1 and np.ptp(p * toy.tau / toy.d) < 1e-12 and p.min() < 0.2      # heterogeneous
    values = t.toy_values([0, 1], rounds=10)
    kept = values[("kept", "FedAvg", t.BALANCED)]
    assert all(abs(v - 0.5) < 0.02 for v in kept.values())
    assert all(abs(v - 1.0) < 0.05 for v in values[("kept", "FedAvg", "both")].values())
    [row] = [r for r in t.toy_claims(values) if r.where == "Sec. 4.2, Cor. 2.2"]
    assert row.check.effect == pytest.approx(np.mean([0.75 - v for v in kept.values()]))
    assert "our reading of the lost condition (13)" in row.claim and row.check.seeds == 2
