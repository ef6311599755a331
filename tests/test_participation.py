"""Tests of fedlib.participation: structure of each kind, seeding, save/load, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedlib import delays, participation

N, T = 30, 200

def _stunner_file() -> str:
    """A small trace in the Stunner layout: 40 full-week records, each online from hour i % 20
    for 2 hours of every day (so every record is sometimes online)."""
    import tempfile
    from pathlib import Path
    hour, day = 3600 * 1000, 24 * 3600 * 1000
    lines = []
    for i in range(40):
        start = (i % 20) * hour
        durations = [start] + [2 * hour, day - 2 * hour] * 6 + [2 * hour]
        durations.append(7 * day - sum(durations))
        lines.append(f"u{i} 0 0 0 " + " ".join(map(str, durations)))
    f = Path(tempfile.mkdtemp(prefix="fedlib-trace-")) / "sessions.txt"
    f.write_text("\n".join(lines) + "\n")
    return str(f)


KIND_ARGS = {
    "full": {},
    "uniform": {"per_round": 7},
    "bernoulli": {"p": 0.3},
    "sine": {"per_round": 6},
    "biased": {},
    "cyclic": {"per_round": 7},
    "reshuffled_cyclic": {"per_round": 7},
    "markov": {"p": 0.25},
    "weighted": {"per_round": 4, "q": np.arange(1, N + 1) / np.arange(1, N + 1).sum()},
    "with_replacement": {"draws": 5, "q": np.full(N, 1 / N)},
    "periodic": {"per_round": 3, "groups": 5, "window": 10},
    "trace": {"trace": (np.arange(T * N).reshape(T, N) % 3 == 0).astype(int)},
    "recorded": {"path": _stunner_file(), "offset": 3},
}


def test_every_kind_is_listed_and_covered():
    assert set(participation.available()) == set(KIND_ARGS)
    assert all(isinstance(d, str) and d for d in participation.available().values())


@pytest.mark.parametrize("kind", sorted(KIND_ARGS))
def test_shapes_dtypes_and_seeding(kind):
    a = participation.build(kind, N, T, seed=3, **KIND_ARGS[kind])
    b = participation.build(kind, N, T, seed=3, **KIND_ARGS[kind])
    assert a.active.shape == a.uplink_ok.shape == a.local_steps.shape == (T, N)
    assert a.active.dtype == np.int64 and a.uplink_ok.dtype == bool
    assert a == b
    assert a.uplink_ok.all() and (a.local_steps == 1).all()
    assert (a.active >= 0).all()


@pytest.mark.parametrize(
    "kind", ["uniform", "bernoulli", "reshuffled_cyclic", "markov", "weighted"])
def test_different_seeds_differ(kind):
    a = participation.build(kind, N, T, seed=0, **KIND_ARGS[kind])
    b = participation.build(kind, N, T, seed=1, **KIND_ARGS[kind])
    assert not np.array_equal(a.active, b.active)


@pytest.mark.parametrize("kind", sorted(KIND_ARGS))
def test_save_load_round_trip(kind, tmp_path):
    s = participation.build(kind, N, T, seed=5, uplink_p=0.7, local_steps=np.arange(1, N + 1),
                            **KIND_ARGS[kind])
    s.save(tmp_path / "s.npz")
    r = participation.load(tmp_path / "s.npz")
    assert r == s
    assert r.spec["kind"] == kind


@pytest.mark.parametrize("s", [1, 7, 13, 30])
def test_uniform_and_cyclic_have_exactly_s_distinct(s):
    for kind in ("uniform", "cyclic", "reshuffled_cyclic"):
        sched = participation.build(kind, N, T, seed=2, per_round=s)
        assert set(np.unique(sched.active)) <= {0, 1}
        assert (sched.active.sum(1) == s).all(), kind


def test_cyclic_order_and_wrap():
    s = participation.build("cyclic", 10, 7, per_round=4)
    assert list(s.clients(0)) == [0, 1, 2, 3]
    assert list(s.clients(2)) == [0, 1, 8, 9]   # clients 8, 9, 0, 1
    assert list(s.clients(3)) == [2, 3, 4, 5]


@pytest.mark.parametrize("s", [5, 7, 30])
def test_reshuffled_cyclic_each_client_once_per_epoch(s):
    sched = participation.build("reshuffled_cyclic", N, 6 * N, seed=4, per_round=s)
    cum = np.cumsum(sched.active, axis=0)            # selections of each client so far
    slots = s * np.arange(1, 6 * N + 1)
    # the stream of selections is a sequence of permutations: after t rounds every client has
    # been chosen floor(tS/N) or floor(tS/N) + 1 times, and exactly tS/N times when N | tS
    assert (cum.min(1) == slots // N).all()
    assert (cum.max(1) - cum.min(1) <= 1).all()
    assert (cum[slots % N == 0] == (slots[slots % N == 0] // N)[:, None]).all()
    first_epochs = [tuple(np.flatnonzero(sched.active[t])) for t in range(N // s)]
    assert len(set(first_epochs)) == len(first_epochs)


def test_bernoulli_frequencies_match_p():
    p = np.linspace(0.1, 0.9, N)
    s = participation.build("bernoulli", N, 4000, seed=0, p=p)
    freq = s.active.mean(0)
    assert np.all(np.abs(freq - p) < 4 * np.sqrt(p * (1 - p) / 4000) + 1e-9)


def test_bernoulli_accepts_matrix_and_callable():
    pm = np.full((T, N), 0.5)
    pm[::2] = 1.0
    s = participation.build("bernoulli", N, T, p=pm)
    assert (s.active[::2] == 1).all()
    c = participation.build("bernoulli", N, T, p=lambda t: 1.0 if t % 2 == 0 else 0.5)
    assert np.array_equal(c.active, s.active)


def test_sine_probabilities_follow_p3():
    n, rounds = 200, 2000
    s = participation.build("sine", n, rounds, seed=1, per_round=40)
    t = np.arange(rounds)
    p = 0.2 * (0.3 * np.sin(np.pi * t / 5) + 0.7)
    phase = t % 10
    for ph in range(10):
        emp = s.active[phase == ph].mean()
        assert abs(emp - p[ph]) < 0.01


def test_biased_probabilities():
    p = participation.biased_probs(100)
    assert p[0] == 0.5 and p[10] == 0.5 and np.isclose(p[11], 0.45) and np.isclose(p[99], 0.05)
    s = participation.build("biased", 100, 3000, seed=0)
    assert np.all(np.abs(s.active.mean(0) - p) < 0.04)


def test_markov_stationary_probability():
    p = np.array([0.1, 0.5, 0.9] * 10)
    s = participation.build("markov", 30, 20000, seed=0, p=p, on_rate=0.05)
    assert np.all(np.abs(s.active.mean(0) - p) < 0.08)
    # strongly persistent: far fewer switches than independent draws would give
    switches = np.abs(np.diff(s.active, axis=0)).mean()
    assert switches < 0.1


def test_weighted_and_with_replacement_follow_q():
    q = np.arange(1, N + 1, dtype=float)
    q /= q.sum()
    w = participation.build("with_replacement", N, 5000, seed=0, draws=5, q=q)
    assert (w.active.sum(1) == 5).all() and w.active.max() > 1
    assert np.allclose(w.active.mean(0) / 5, q, atol=0.004)
    s = participation.build("weighted", N, 5000, seed=0, per_round=4, q=q)
    assert set(np.unique(s.active)) == {0, 1} and (s.active.sum(1) == 4).all()
    freq = s.active.mean(0)
    assert np.all(np.diff(freq[::6]) > 0)   # heavier weight -> chosen more often


def test_periodic_windows_and_walk():
    s = participation.build("periodic", 50, 300, seed=0, per_round=4, groups=5, window=10)
    assert (s.active.sum(1) == 4).all()
    gid = np.arange(50) * 5 // 50
    for t in range(300):
        assert len(set(gid[s.clients(t)])) <= 2   # only the 1-2 groups in their window


def test_trace_from_csv(tmp_path):
    tr = KIND_ARGS["trace"]["trace"]
    np.savetxt(tmp_path / "t.csv", tr, delimiter=",", fmt="%d")
    s = participation.build("trace", N, T, trace=tmp_path / "t.csv")
    assert np.array_equal(s.active, tr)


def test_uplink_and_local_steps_do_not_change_participation():
    base = participation.build("uniform", N, T, seed=9, per_round=5)
    other = participation.build("uniform", N, T, seed=9, per_round=5, uplink_p=0.5,
                                local_steps_range=(1, 10))
    assert np.array_equal(base.active, other.active)
    assert 0.4 < other.uplink_ok.mean() < 0.6
    assert other.local_steps.min() >= 1 and other.local_steps.max() <= 10
    assert len(np.unique(other.local_steps)) == 10


def test_local_steps_forms():
    k = np.arange(1, N + 1)
    s = participation.build("full", N, T, local_steps=k)
    assert (s.local_steps == k).all()
    ranges = np.stack([k, k + 2], axis=1)
    d = participation.build("full", N, T, local_steps_range=ranges)
    assert ((d.local_steps >= k) & (d.local_steps <= k + 2)).all()


BAD = [
    (dict(kind="uniform", per_round=0), "per_round"),
    (dict(kind="uniform", per_round=N + 1), "per_round"),
    (dict(kind="cyclic", per_round=N + 1), "per_round"),
    (dict(kind="bernoulli", p=0.0), "p"),
    (dict(kind="bernoulli", p=1.5), "p"),
    (dict(kind="bernoulli", p=np.full(N + 1, 0.5)), "p"),
    (dict(kind="markov", p=-0.1), "p"),
    (dict(kind="weighted", per_round=2, q=np.full(N, 0.5)), "q"),
    (dict(kind="with_replacement", draws=3, q=np.ones(N - 1) / (N - 1)), "q"),
    (dict(kind="trace", trace=np.ones((T, N + 1))), "trace"),
    (dict(kind="trace", trace=np.full((T, N), 2)), "trace"),
    (dict(kind="nope"), "kind"),
    (dict(kind="uniform", per_round=3, nonsense=1), "nonsense"),
    (dict(kind="uniform"), "per_round"),
    (dict(kind="full", uplink_p=0.0), "uplink_p"),
    (dict(kind="full", local_steps=0), "local_steps"),
    (dict(kind="full", local_steps_range=(3, 2)), "local_steps_range"),
    (dict(kind="biased", start=0.1), "p"),
]


@pytest.mark.parametrize("kwargs,field", BAD)
def test_bad_input_names_the_field(kwargs, field):
    kind = kwargs.pop("kind")
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        participation.build(kind, N, T, **kwargs)


@pytest.mark.parametrize("n,t,field", [(0, 5, "num_clients"), (5, 0, "rounds")])
def test_bad_sizes(n, t, field):
    with pytest.raises(ValueError, match=rf"^{field}"):
        participation.build("full", n, t)


def test_unknown_kind_lists_known():
    with pytest.raises(ValueError) as e:
        participation.build("nope", N, T)
    for k in participation.available():
        assert k in str(e.value)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 40), st.integers(0, 10_000))
def test_uniform_every_subset_size(n, t, seed):
    s = min(n, 1 + seed % n)
    sched = participation.build("uniform", n, t, seed=seed, per_round=s)
    assert (sched.active.sum(1) == s).all()
    m = delays.delay_metrics(sched.active)
    assert 0 <= m.tau_avg <= m.tau_max


def test_kinds_document_their_arguments():
    import inspect
    assert participation.arguments("uniform") == {"per_round": inspect.Parameter.empty}
    assert participation.arguments("markov")["on_rate"] == 0.05
    assert "[per_round]" in participation.available()["uniform"]
    for kind in participation.available():
        assert f"``{kind}``" in participation.build.__doc__
    with pytest.raises(ValueError, match="^kind"):
        participation.arguments("sometimes")


# ------------------------------------------------------------------ true probabilities as data
def test_schedules_carry_their_true_probabilities(tmp_path):
    N, T = 100, 40
    p_vec = np.linspace(0.2, 0.9, N)                            # per-client, > 64 entries
    s = participation.build("bernoulli", N, T, seed=0, p=p_vec, uplink_p=np.linspace(0.5, 1.0, N))
    assert np.array_equal(s.probs, np.broadcast_to(p_vec, (T, N)))
    assert np.allclose(s.uplink_probs[3], np.linspace(0.5, 1.0, N))
    pm = np.random.default_rng(1).uniform(0.1, 0.9, (T, N))    # a [T, N] array
    assert np.array_equal(participation.build("bernoulli", N, T, p=pm).probs, pm)
    sine = participation.build("sine", N, T, per_round=20)     # p_i^t, not the base probability
    assert np.allclose(sine.probs[:, 0], participation.sine_probs(np.arange(T), 0.2))
    assert sine.probs[:, 0].std() > 0.03
    assert np.all(participation.build("uniform", N, T, per_round=20).probs == 0.2)
    assert participation.build("markov", N, T, p=0.3).probs[5, 7] == 0.3
    assert participation.build("cyclic", N, T, per_round=20).probs is None
    assert participation.build("full", N, T).uplink_probs is None
    f = tmp_path / "s.npz"                                      # saved and loaded as data
    s.save(f)
    back = participation.load(f)
    assert back == s and np.array_equal(back.probs, s.probs)
    cut = s.truncate(10)
    assert cut.probs.shape == (10, N) and np.array_equal(cut.uplink_probs, s.uplink_probs[:10])


def test_known_probability_baselines_use_the_true_probabilities():
    import fedlib
    from fedlib import problems
    N, T = 100, 30
    prob = problems.random_quadratic(num_clients=N, dim=3, seed=0)
    p_vec = 0.2 + 0.007 * np.arange(N)                          # 0.200, 0.207, 0.214, ...
    s = participation.build("bernoulli", N, T, seed=0, p=p_vec, uplink_p=0.8)
    res = fedlib.run("fedavg_known_p", prob, s, progress=False)
    assert np.allclose(res.algorithm.p.numpy()[0], p_vec)       # not the observed frequencies
    ca = fedlib.run("ca_fedavg", prob, s, progress=False)
    assert np.allclose(ca.algorithm.p.numpy(), 0.8)
    sine = participation.build("sine", N, T, seed=0, per_round=20)
    got = fedlib.run("fedavg_known_p", prob, sine, progress=False).algorithm.p.numpy()
    assert np.allclose(got[:, 0], participation.sine_probs(np.arange(T), 0.2))
    with pytest.warns(RuntimeWarning, match="defines no probabilities"):
        fedlib.run("fedavg_known_p", prob, participation.build("cyclic", N, T, per_round=20), progress=False)


def test_local_work_in_epochs():
    sizes = np.array([10, 128, 129, 300, 1])
    s = participation.build("full", 5, 4, local_epochs=2, client_sizes=sizes, batch_size=128)
    assert (s.local_steps == 2 * np.array([1, 1, 2, 3, 1])).all()      # epochs x ceil(n_i / B)
    per = participation.build("full", 5, 4, local_epochs=[1, 2, 3, 4, 5], client_sizes=sizes, batch_size=64)
    assert (per.local_steps[0] == np.array([1, 2, 3, 4, 5]) * np.ceil(sizes / 64)).all()
    dyn = participation.build("full", 5, 50, seed=1, local_epochs_range=[[1, 1]] * 2 + [[2, 5]] * 3,
                              client_sizes=sizes, batch_size=128)
    ep = dyn.local_steps // np.ceil(sizes / 128).astype(int)
    assert (ep[:, :2] == 1).all() and ep[:, 2:].min() == 2 and ep[:, 2:].max() == 5
    assert len(np.unique(ep[:, 3])) > 1                                  # redrawn every round
    with pytest.raises(ValueError, match="^local_epochs / local_steps"):
        participation.build("full", 5, 4, local_epochs=2, local_steps=3, client_sizes=sizes, batch_size=8)
    with pytest.raises(ValueError, match="^client_sizes / batch_size"):
        participation.build("full", 5, 4, local_epochs=2)
    with pytest.raises(ValueError, match="^local_epochs"):
        participation.build("full", 5, 4, local_epochs=0, client_sizes=sizes, batch_size=8)


def test_configs_take_epochs_with_sizes_from_the_problem():
    from fedlib import ExperimentConfig, problems
    cfg = ExperimentConfig("fedavg", "digits_cnn", "uniform", 2,
                           problem_args={"num_clients": 5, "batch_size": 16},
                           participation_args={"per_round": 2, "local_epochs": 1})
    prob = problems.digits_cnn(num_clients=5, batch_size=16)
    sched = cfg.schedule(problem=prob)
    sizes = prob.sizes.numpy().astype(int)
    assert (sched.local_steps[0] == np.ceil(sizes / 16)).all()
    # given the sizes and the batch size, the schedule needs no problem (and no data)
    given = cfg.replace(problem_args={"num_clients": 5, "batch_size": 16, "data_root": "/nonexistent"},
                        participation_args={"per_round": 2, "local_epochs": 1, "client_sizes": sizes.tolist(),
                                            "batch_size": 16})
    assert (given.schedule(num_clients=5).local_steps == sched.local_steps).all()


def test_upload_probabilities_redrawn_from_ranges():
    """uplink_p_range: p_i^t uniform in each client's range, redrawn every round, kept as the
    schedule's true probabilities (which known-probability baselines read), and the uploads
    succeed at those rates."""
    ranges = [[0.1, 0.2]] * 3 + [[0.7, 1.0]] * 2
    s = participation.build("full", 5, 4000, seed=3, uplink_p_range=ranges)
    p = s.uplink_probs
    assert p.shape == (4000, 5)
    assert (p[:, :3] >= 0.1).all() and (p[:, :3] <= 0.2).all() and (p[:, 3:] >= 0.7).all()
    assert np.allclose(p.mean(0), [0.15] * 3 + [0.85] * 2, atol=0.01)
    assert len(np.unique(p[:, 4])) == 4000                               # redrawn every round
    assert np.allclose(s.uplink_ok.mean(0), p.mean(0), atol=0.025)
    assert s.spec["uplink_p_range"] == ranges
    again = participation.build("full", 5, 4000, seed=3, uplink_p_range=ranges)
    assert (again.uplink_ok == s.uplink_ok).all() and (again.uplink_probs == p).all()
    scalar = participation.build("full", 5, 10, seed=3, uplink_p_range=(0.5, 0.5))
    assert np.allclose(scalar.uplink_probs, 0.5)
    for kwargs, match in (({"uplink_p_range": ranges, "uplink_p": 0.5}, "^uplink_p / uplink_p_range"),
                          ({"uplink_p_range": [[0.0, 0.5]] * 5}, "^uplink_p_range"),
                          ({"uplink_p_range": [[0.6, 0.5]] * 5}, "^uplink_p_range"),
                          ({"uplink_p_range": [[0.1, 1.2]] * 5}, "^uplink_p_range"),
                          ({"uplink_p_range": [[0.1, 0.2]] * 4}, "^uplink_p_range")):
        with pytest.raises(ValueError, match=match):
            participation.build("full", 5, 10, **kwargs)


def test_a_trace_is_read_in_the_usual_layouts_and_keyed_by_its_content(tmp_path):
    import pandas as pd

    from fedlib import ExperimentConfig
    m = np.array([[1, 0, 1, 1], [1, 1, 0, 1], [1, 0, 0, 1]])
    pd.DataFrame(m, columns=list("abcd")).to_csv(tmp_path / "pandas.csv")       # header and index
    np.savetxt(tmp_path / "plain.csv", m, delimiter=",", fmt="%d")
    np.save(tmp_path / "t.npy", m)
    forms = [tmp_path / "pandas.csv", str(tmp_path / "plain.csv"), tmp_path / "t.npy", m.tolist(), m]
    for f in forms:
        assert np.array_equal(participation.read_trace(f), m)
    base = ExperimentConfig("fedavg", "quadratic", "trace", 3, problem_args={"num_clients": 4, "dim": 3})
    keys = {base.replace(participation_args={"trace": f}).key() for f in forms}
    assert len(keys) == 1                                      # one matrix, one run
    m[0, 1] = 1
    np.savetxt(tmp_path / "plain.csv", m, delimiter=",", fmt="%d")             # edited after a sweep
    assert base.replace(participation_args={"trace": str(tmp_path / "plain.csv")}).key() not in keys
    sched = base.replace(participation_args={"trace": tmp_path / "t.npy"}).schedule(num_clients=4)
    assert np.array_equal(sched.active, np.load(tmp_path / "t.npy"))


# ------------------------------------------------------------------ kinds of one's own
@pytest.fixture
def own_kind():
    """A kind with a text argument (a mode name) registered through the public decorator, removed
    again after the test."""
    @participation.kind("alternating_test", description="even clients in even rounds, odd in odd ones",
                        args=[participation.Arg("mode", "text", "even_first", doc="which clients start",
                                                choices=("even_first", "odd_first")),
                              participation.Arg("every", "integer", 1, low=1, high="n")])
    def alternating(rng, rounds, n, mode, every):
        start = 0 if mode == "even_first" else 1
        parity = (np.arange(rounds)[:, None] // every + np.arange(n)[None, :] + start) % 2
        return (parity == 0).astype(np.int64)
    yield "alternating_test"
    participation._KINDS.pop("alternating_test", None)
    participation._document_kinds()


def test_a_kind_of_ones_own_builds_like_a_built_in_one(own_kind):
    s = participation.build(own_kind, 4, 6, mode="odd_first")
    assert s.active[0].tolist() == [0, 1, 0, 1] and s.active[1].tolist() == [1, 0, 1, 0]
    assert participation.build(own_kind, 4, 6, every=2).active[:, 0].tolist() == [1, 1, 0, 0, 1, 1]
    assert s.spec["mode"] == "odd_first" and s.kind == own_kind
    assert own_kind in participation.available() and "[mode='even_first', every=1]" in \
        participation.available()[own_kind]
    assert participation.arguments(own_kind) == {"mode": "even_first", "every": 1}
    assert participation.get_kind(own_kind).draws and participation.get_kind(own_kind).module == __name__
    # the declarations document it in build's docstring, with what each argument allows
    assert f"``{own_kind}`` (mode='even_first': one of even_first, odd_first; every=1: an integer in 1..N)" \
        in participation.build.__doc__


@pytest.mark.parametrize("args, pattern", [
    ({"mode": "sideways"}, r"^mode: must be one of even_first, odd_first; got 'sideways'$"),
    ({"mode": 3}, r"^mode: must be a text \(str\), got 3$"),
    ({"every": 1.5}, r"^every: must be an integer, got 1.5$"),
    ({"every": 9}, r"^every: must be an integer in 1..4, got 9$"),
    ({"colour": 1}, r"^colour: not an argument of participation kind 'alternating_test'; its arguments: "
                    r"mode, every, seed, local_steps, "),
])
def test_a_kind_of_ones_own_checks_its_declared_arguments(own_kind, args, pattern):
    with pytest.raises(ValueError, match=pattern):
        participation.build(own_kind, 4, 6, **args)


def test_registering_a_kind_refuses_clashes_and_mismatched_arguments(own_kind):
    def fn(rng, rounds, n, mode="even_first", every=1):
        return np.ones((rounds, n), dtype=np.int64)
    args = [participation.Arg("mode", "text", "even_first"), participation.Arg("every", "integer", 1)]
    with pytest.raises(ValueError, match=r"^name: participation kind 'alternating_test' is already "
                                         r"registered \(by tests\.test_participation\); pass replace=True"):
        participation.register_kind(own_kind, fn, description="again", args=args)
    with pytest.raises(ValueError, match=r"^name: participation kind 'uniform' is a built-in participation"):
        participation.register_kind("uniform", fn, description="mine", args=args, replace=True)
    replaced = participation.register_kind(own_kind, fn, description="all of them", args=args, replace=True)
    assert participation.build(own_kind, 3, 2).active.sum() == 6 and replaced.description == "all of them"
    with pytest.raises(ValueError, match=r"^args: kind 'k2' declares mode; its function takes mode, every"):
        participation.register_kind("k2", fn, description="d", args=args[:1])
    two = participation.Arg("every", "integer", 2)
    with pytest.raises(ValueError, match=r"^args: kind 'k2'.s argument 'every' declares default 2, its"):
        participation.register_kind("k2", fn, description="d", args=[args[0], two])
    with pytest.raises(ValueError, match=r"^args: kind 'k2' declares 'seed' twice or as an argument every"):
        participation.register_kind("k2", lambda rng, rounds, n, seed: None, description="d",
                                    args=[participation.Arg("seed", "integer")])
    with pytest.raises(ValueError, match=r"^mode: type must be one of number, integer, text"):
        participation.Arg("mode", "string")
    assert "k2" not in participation.available()


def test_a_kind_that_draws_the_wrong_shape_is_named():
    participation.register_kind("wrong_shape_test", lambda rng, rounds, n: np.ones((rounds, n + 1)),
                                description="one client too many")
    try:
        with pytest.raises(ValueError, match=r"^kind: participation kind 'wrong_shape_test' .* drew activity "
                                             r"of shape \(3, 5\), expected \(rounds, num_clients\) = "
                                             r"\(3, 4\)"):
            participation.build("wrong_shape_test", 4, 3)
    finally:
        participation._KINDS.pop("wrong_shape_test", None)


@pytest.mark.parametrize("kind, args, pattern", [
    ("markov", {"p": "high"}, r"^p: must be numbers \(a number or an array of numbers; not strings or "
                              r"bools\), got 'high'$"),
    ("bernoulli", {"p": [0.5, "x", 0.5, 0.5]}, r"^p: must be numbers"),
    ("with_replacement", {"draws": 2, "q": ["a", "b", "c", "d"]}, r"^q: must be numbers \(an array of"),
    ("weighted", {"per_round": 2, "q": [0.5, 0.5, -0.2, 0.2]}, r"^q: weights must be >= 0; entry 2 is -0.2$"),
    ("recorded", {"path": 5}, r"^path: must be a file path \(str\), got 5$"),
    ("sine", {"per_round": 2, "amplitude": 1.0}, r"^amplitude: must lie in \[0, 1\), got 1.0$"),
])
def test_a_wrong_type_is_one_fedlib_error_not_a_numpy_one(kind, args, pattern):
    """Before the declarations, ``markov`` with p="high" stopped in numpy (UFuncTypeError)."""
    with pytest.raises(ValueError, match=pattern):
        participation.build(kind, 4, 3, **args)


def test_array_arguments_may_come_as_pandas_objects():
    """An array argument is anything numpy reads as numbers (a DataFrame trace, a Series of
    probabilities), as before the declarations; a frame of text is refused by its type."""
    import pandas as pd
    frame = pd.DataFrame(np.arange(12).reshape(3, 4) % 2)
    assert np.array_equal(participation.build("trace", 4, 3, trace=frame).active, frame.to_numpy())
    assert participation.build("bernoulli", 4, 3, p=pd.Series([1.0] * 4)).active.all()
    with pytest.raises(ValueError, match=r"^trace: must be an array of 0/1 or booleans or a file path "
                       r"\(str\), got DataFrame of shape \(1, 2\)$"):    # one line, not the frame printed
        participation.build("trace", 2, 1, trace=pd.DataFrame([["a", "b"]]))
