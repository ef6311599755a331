"""fedlib.keyed: Threefry-2x32-20 against the Random123 known answers and a plain-Python
reference; the keyed minibatches and dropout masks against a plain-Python reference of the same
definition, on both arithmetic paths (numpy uint32, torch int64); their uniformity; and keyed
draws in a neural problem and a run."""

import numpy as np
import pytest
import scipy.stats
import torch

from fedlib import keyed

M = 0xFFFFFFFF


# -- a plain-Python reference of the module's definitions (Python ints, one value at a time) --------
def _tf(key, ctr):
    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & M
    ks = (key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDA)
    x0, x1 = (ctr[0] + ks[0]) & M, (ctr[1] + ks[1]) & M
    for i in range(5):
        for r in ((13, 15, 26, 6), (17, 29, 16, 24))[i % 2]:
            x0 = (x0 + x1) & M
            x1 = rotl(x1, r) ^ x0
        x0 = (x0 + ks[(i + 1) % 3]) & M
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & M
    return x0, x1


def _ref_key(seed, client, rnd, step, stream):
    k = _tf((seed & M, seed >> 32 & M), (client, rnd))
    return _tf(k, (step, stream))


def _ref_words(key, n):
    out = []
    for q in range((n + 1) // 2):
        out.extend(_tf(key, (0, q)))
    return out[:n]


def _ref_batch(seed, client, n, rnd, step, B):
    u = _ref_words(_ref_key(seed, client, rnd, step, 0), n)
    order = sorted(range(n), key=lambda j: (u[j], j))[:min(B, n)]
    return order + [order[0]] * (B - len(order))


def _ref_drop_bits(seed, client, rnd, step, layer, n):
    w = _ref_words(_ref_key(seed, client, rnd, step, 1 + layer), (n + 1) // 2)
    return [h for x in w for h in (x & 0xFFFF, x >> 16)][:n]


# -- the generator ----------------------------------------------------------------------------------
#: Random123's kat_vectors for threefry2x32_20: (counter, key, output)
KAT = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
       ((M, M), (M, M), (0x1CB996FC, 0xBB002BE7)),
       ((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0))]


@pytest.mark.parametrize("ctr,key,out", KAT)
def test_threefry_known_answers_on_both_paths(ctr, key, out):
    assert _tf(key, ctr) == out
    a = keyed.threefry2x32(key, tuple(np.array([c], np.uint32) for c in ctr))
    b = keyed.threefry2x32(key, tuple(torch.tensor([c], dtype=torch.int64) for c in ctr))
    assert tuple(int(v[0]) for v in a) == out == tuple(int(v[0]) for v in b)


def test_both_paths_equal_the_reference_on_many_counters():
    g = np.random.default_rng(0)
    k = g.integers(0, 2 ** 32, (2, 50), dtype=np.uint64).astype(np.uint32)
    c = g.integers(0, 2 ** 32, (2, 50), dtype=np.uint64).astype(np.uint32)
    ref = np.array([_tf((int(k[0, i]), int(k[1, i])), (int(c[0, i]), int(c[1, i]))) for i in range(50)]).T
    a = keyed.threefry2x32((k[0], k[1]), (c[0], c[1]))
    kt, ct = torch.from_numpy(k.astype(np.int64)), torch.from_numpy(c.astype(np.int64))
    b = keyed.threefry2x32((kt[0], kt[1]), (ct[0], ct[1]))
    for i in (0, 1):
        assert np.array_equal(a[i], ref[i]) and np.array_equal(b[i].numpy(), ref[i])
        assert b[i].dtype == torch.int64 and int(b[i].min()) >= 0 and int(b[i].max()) <= M


# -- minibatches and masks ---------------------------------------------------------------------------
SIZES = np.array([7, 40, 3, 129, 16])          # clients with fewer samples than the batch too


@pytest.mark.parametrize("path", ["numpy", "torch"])
def test_minibatches_and_masks_equal_the_reference(path):
    seed, B = 2 ** 40 + 5, 16
    clients = np.array([4, 0, 3, 1, 2])
    sizes = SIZES[clients]
    for rnd, step in ((0, 0), (3, 7), (2 ** 31 + 1, 2)):
        args = (clients, sizes) if path == "numpy" else (torch.from_numpy(clients), torch.from_numpy(sizes))
        pos, m = keyed.minibatch_positions(seed, *args, rnd, step, B)
        bits = keyed.dropout_bits(seed, args[0], rnd, step, 1, 37)
        for s, c in enumerate(clients):
            assert list(np.asarray(pos[s])) == _ref_batch(seed, int(c), int(sizes[s]), rnd, step, B)
            assert int(m[s]) == min(B, sizes[s])
            assert list(np.asarray(bits[s])) == _ref_drop_bits(seed, int(c), rnd, step, 1, 37)


def test_draws_do_not_depend_on_the_other_clients_or_the_width():
    B = 8
    all_pos, _ = keyed.minibatch_positions(1, np.arange(5), SIZES, 4, 2, B)
    for c in range(5):
        alone, _ = keyed.minibatch_positions(1, np.array([c]), SIZES[[c]], 4, 2, B)
        wide, _ = keyed.minibatch_positions(1, torch.tensor([c]), torch.tensor(SIZES[[c]]), 4, 2, B,
                                            width=500)
        assert np.array_equal(alone[0], all_pos[c]) and np.array_equal(wide[0].numpy(), all_pos[c])
    first = keyed.dropout_bits(1, np.array([3]), 4, 2, 0, 10)
    more = keyed.dropout_bits(1, np.array([0, 3]), 4, 2, 0, 1000)        # a prefix of a longer draw
    assert np.array_equal(first[0], more[1, :10])


def test_minibatches_are_uniform_over_ordered_subsets():
    """n = 5, B = 2: the 20 ordered pairs are equally likely. 20,000 draws with a fixed key
    (chi-square, 19 degrees of freedom): a scheme biased by 5% on one pair would fail."""
    counts = np.zeros((5, 5), dtype=np.int64)
    for rnd in range(10):
        pos, _ = keyed.minibatch_positions(7, np.arange(2000), np.full(2000, 5), rnd, 0, 2)
        np.add.at(counts, (pos[:, 0], pos[:, 1]), 1)
    assert np.trace(counts) == 0                                      # without replacement
    obs = counts[~np.eye(5, dtype=bool)]
    stat, p = scipy.stats.chisquare(obs)
    assert p > 1e-3, (stat, obs)
    # the first sample of a batch is uniform over positions of a large client too
    pos, _ = keyed.minibatch_positions(7, np.arange(20_000), np.full(20_000, 600), 1, 1, 4)
    assert scipy.stats.chisquare(np.bincount(pos[:, 0], minlength=600)).pvalue > 1e-3


def test_dropout_bits_are_uniform_and_drop_at_the_rounded_rate():
    bits = keyed.dropout_bits(11, np.arange(8), 0, 0, 0, 2 ** 17).reshape(-1)
    assert bits.min() >= 0 and bits.max() <= 0xFFFF
    assert scipy.stats.chisquare(np.bincount(bits >> 8, minlength=256)).pvalue > 1e-3
    t = keyed.drop_threshold(0.2)
    assert t == 13107 and abs(t / 65536 - 0.2) <= 2 ** -17
    rate, n = float((bits < t).mean()), bits.size
    assert abs(rate - t / 65536) < 5 * np.sqrt(0.2 * 0.8 / n)


# -- in a neural problem -----------------------------------------------------------------------------
def _problem(draws="keyed", strategy="vmap", batch=16):
    from fedlib import problems
    p = problems.digits_cnn(num_clients=6, alpha=0.5, batch_size=batch, seed=0, dropout=0.3)
    p.strategy = strategy
    p.set_draws(draws)
    return p


def test_neural_keyed_draws_on_both_paths_give_the_same_gradients():
    p, q = _problem(), _problem()
    q._keyed_numpy = False                       # the device path (torch int64), run on the CPU
    X = torch.stack([p.initial_params() + 0.01 * k for k in range(3)])
    for clients, rnd, step in (([0, 2, 5], 0, 0), ([5, 1, 3], 4, 9)):
        assert torch.equal(p.grads(X, clients, rnd, step), q.grads(X, clients, rnd, step))
        for c in clients:
            assert torch.equal(p.sample_indices(c, rnd, step), q.sample_indices(c, rnd, step))
            assert all(torch.equal(a, b) for a, b in zip(p.dropout_masks(c, rnd, step),
                                                        q.dropout_masks(c, rnd, step), strict=True))


def test_neural_keyed_draws_follow_the_definition():
    p = _problem(batch=160)                      # client 0 holds fewer than 160 samples
    small = [c for c in range(6) if len(p.partition[c]) < 160]
    assert small, [len(x) for x in p.partition]
    for c in range(6):
        n = len(p.partition[c])
        idx, w = p.batch_indices(c, 2, 3)
        ref = _ref_batch(p.seed, c, n, 2, 3, 160)
        assert torch.equal(idx, p.partition[c][torch.tensor(ref)])
        assert float(w.sum()) == min(160, n) and bool((w[min(160, n):] == 0).all())
        masks = p.dropout_masks(c, 2, 3, pad_to=160)
        shape, prob = p._dropout_shapes(160)[1]
        m = min(160, n)
        bits = torch.tensor(_ref_drop_bits(p.seed, c, 2, 3, 1, m * shape[1]))
        ref_mask = (bits >= keyed.drop_threshold(prob)).float().reshape(m, -1) / (1.0 - prob)
        assert torch.equal(masks[1][:m], ref_mask) and bool((masks[1][m:] == 0).all())
        assert torch.equal(p.sample_indices(c, 2, 3), idx[:m])


def test_neural_keyed_engines_agree_and_clients_do_not_interact():
    from fedlib import engine

    from .conftest import assert_kernels_agree
    p = _problem(batch=8)
    clients, steps = torch.tensor([4, 0, 2]), torch.tensor([3, 2, 3])
    g = torch.Generator().manual_seed(1)
    X0 = p.initial_params().expand(3, -1) + 0.01 * torch.randn(3, p.dim, generator=g)
    outs = {}
    for strategy in ("vmap", "loop"):
        p.strategy = strategy
        outs[strategy] = engine.VectorizedEngine().local_sgd(p, X0, clients, steps, 0.05, round=1).X
    outs["reference"] = engine.ReferenceEngine().local_sgd(p, X0, clients, steps, 0.05, round=1).X
    for name in ("vmap", "reference"):
        assert_kernels_agree(outs[name] - X0, outs["loop"] - X0, 8 * 24 * 24, name)
    p.strategy = "vmap"
    alone = engine.VectorizedEngine().local_sgd(p, X0[1:2], clients[1:2], steps[1:2], 0.05, round=1).X
    assert_kernels_agree(alone[0] - X0[1], outs["vmap"][1] - X0[1], 8 * 24 * 24, "alone")
    legacy = _problem("legacy", "loop", batch=8)
    other = engine.VectorizedEngine().local_sgd(legacy, X0, clients, steps, 0.05, round=1).X
    assert not torch.equal(other, outs["loop"])                # another scheme: other draws


def test_draws_are_named_and_checked():
    from fedlib import problems
    p = problems.digits_cnn(num_clients=4, alpha=0.5, batch_size=8, seed=0)
    assert p.draws == "legacy" and "draws" not in p.spec()            # the default, stores unchanged
    with pytest.raises(ValueError, match="draws: must be one of legacy, keyed; got 'threefry'"):
        p.set_draws("threefry")
    p.set_draws("keyed")
    assert p.spec()["draws"] == "keyed"
    with pytest.raises(ValueError, match="parallel_draws: keyed draws"):
        problems.Neural(p.model, p.partition, (p.train.x, p.train.y), (p.test.x, p.test.y),
                        parallel_draws=True, draws="keyed")
    with pytest.raises(ValueError, match="draws: problem 'quadratic' draws no minibatches"):
        problems.build("quadratic", draws="keyed")


def test_a_keyed_run_is_deterministic_and_keeps_legacy_keys():
    import fedlib
    from fedlib import ExperimentConfig
    base = ExperimentConfig(algorithm="fedavg", problem="digits_cnn", participation="uniform", rounds=2,
                            problem_args={"num_clients": 6, "batch_size": 8},
                            participation_args={"per_round": 3},
                            local_steps=2, lr_local=0.05)
    keyed_cfg = base.replace(problem_args={"num_clients": 6, "batch_size": 8, "draws": "keyed"})
    legacy_cfg = base.replace(problem_args={"num_clients": 6, "batch_size": 8, "draws": "legacy"})
    assert keyed_cfg.key() != base.key() != legacy_cfg.key()
    a, b = fedlib.run_config(keyed_cfg).history, fedlib.run_config(keyed_cfg).history
    cols = ["loss", "test_acc"]
    assert a[cols].equals(b[cols])
    assert not a[cols].equals(fedlib.run_config(base).history[cols])
    assert fedlib.run_config(legacy_cfg).history[cols].equals(fedlib.run_config(base).history[cols])
    with pytest.raises(ValueError, match="config.problem_args.draws: must be one of legacy, keyed"):
        base.replace(problem_args={"draws": "jax"}).validate()
    with pytest.raises(ValueError, match="config.problem_args.draws: problem 'quadratic' draws no"):
        ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=1,
                         problem_args={"draws": "keyed"}).validate()


@pytest.mark.parametrize("path", ["numpy", "torch"])
def test_keep_flags_are_the_bits_against_the_threshold(path):
    clients = np.array([0, 3]) if path == "numpy" else torch.tensor([0, 3])
    for n in (1, 5, 4000):
        bits = keyed.dropout_bits(9, clients, 2, 1, 1, n)
        keep = keyed.dropout_keep(9, clients, 2, 1, 1, n, 0.2)
        assert np.array_equal(np.asarray(keep), np.asarray(bits) >= keyed.drop_threshold(0.2))


def test_stream_keys_of_a_few_clients_equal_the_vectorized_ones():
    """Up to 8 clients the numpy path derives keys on Python ints: the same words as for many."""
    many = keyed.stream_keys(3, np.arange(20), 5, 2, 1)
    for c in (0, 7, 19):
        few = keyed.stream_keys(3, np.array([c, 0]), 5, 2, 1)
        assert (int(few[0][0]), int(few[1][0])) == (int(many[0][c]), int(many[1][c]))
        assert few[0].dtype == np.uint32
    tk = keyed.stream_keys(3, torch.arange(20), 5, 2, 1)
    assert np.array_equal(tk[0].numpy(), many[0]) and np.array_equal(tk[1].numpy(), many[1])


def test_one_steps_fused_draws_equal_the_separate_functions():
    """keyed.step_draws (three generator calls for the whole step, the device path) gives the bits
    of minibatch_positions and dropout_keep, with round and step as ints or device scalars, at the
    default width and a wider one, for clients with fewer samples than the batch too."""
    seed, B = 2 ** 33 + 7, 16
    clients = np.array([4, 0, 3, 1, 2])
    sizes = SIZES[clients]
    layers = [(37, 0.2), (4000, 0.5), (1, 0.2)]
    for rnd, step in ((0, 0), (3, 7), (2 ** 31 + 1, 2)):
        for width in (int(sizes.max()), 300):
            for scalars in (False, True):
                r, k = (torch.tensor(rnd), torch.tensor(step)) if scalars else (rnd, step)
                pos, m, keeps = keyed.step_draws(seed, torch.from_numpy(clients), torch.from_numpy(sizes),
                                                 r, k, B, width, layers)
                ref_pos, ref_m = keyed.minibatch_positions(seed, clients, sizes, rnd, step, B)
                assert np.array_equal(pos.numpy(), ref_pos) and np.array_equal(m.numpy(), ref_m)
                assert len(keeps) == len(layers)
                for layer, ((n, p), keep) in enumerate(zip(layers, keeps, strict=True)):
                    ref = keyed.dropout_keep(seed, clients, rnd, step, layer, n, p)
                    assert np.array_equal(keep.numpy(), ref)
    pos, m, keeps = keyed.step_draws(1, torch.tensor([2]), torch.tensor([3]), 0, 0, 4, 3, [])
    assert keeps == [] and pos.shape == (1, 4) and int(m[0]) == 3


def _cxx() -> str | None:
    """The C++ compiler inductor's CPU code needs (``$CXX``, else g++ / c++ on the PATH)."""
    import os
    import shutil
    return next((c for c in (os.environ.get("CXX"), "g++", "c++") if c and shutil.which(c)), None)


needs_inductor = pytest.mark.skipif(_cxx() is None, reason="torch.compile's CPU backend (inductor) "
                                                           "needs a C++ compiler; none on the PATH")
#: compiling with inductor took 2.5-3 minutes a function on this project's shared 2-core CPU
#: (2026-11-26): the compiled-draws tests run in ``make test-slow``
slow_compile = pytest.mark.slow


@slow_compile
@needs_inductor
@pytest.mark.parametrize("compiled", [True, "threefry"])
def test_compiled_step_draws_give_the_plain_and_the_numpy_bits(compiled):
    """keyed.step_draws compiled (torch.compile, inductor on the CPU: fused C++ loops) gives the bits
    of the plain torch path and of the numpy functions, round and step as ints or device scalars,
    seeds above 2^32, a second width (a recompilation) and clients with fewer samples than the batch.
    Integer arithmetic is exact in any kernel, so equality, not a tolerance, is the property."""
    seed, B = 2 ** 33 + 7, 16
    clients = np.array([4, 0, 3, 1, 2])
    sizes = SIZES[clients]
    layers = [(37, 0.2), (4000, 0.5)]
    wide = int(sizes.max())
    for rnd, step, width, scalars in ((0, 0, wide, False), (2 ** 31 + 1, 2, wide, True), (3, 7, 300, False)):
        r, k = (torch.tensor(rnd), torch.tensor(step)) if scalars else (rnd, step)
        args = (torch.from_numpy(clients), torch.from_numpy(sizes), r, k, B, width, layers)
        pos, m, keeps = keyed.step_draws(seed, *args, compiled=compiled)
        plain = keyed.step_draws(seed, *args)
        assert all(torch.equal(a, b) for a, b in zip((pos, m, *keeps), (plain[0], plain[1], *plain[2]),
                                                     strict=True))
        ref_pos, ref_m = keyed.minibatch_positions(seed, clients, sizes, rnd, step, B)
        assert np.array_equal(pos.numpy(), ref_pos) and np.array_equal(m.numpy(), ref_m)
        for layer, ((n, p), keep) in enumerate(zip(layers, keeps, strict=True)):
            assert np.array_equal(keep.numpy(), keyed.dropout_keep(seed, clients, rnd, step, layer, n, p))


def test_compiled_draws_are_a_checked_engine_option_that_changes_nothing_on_the_cpu():
    """VectorizedEngine(compiled_draws=...): refused unless one of keyed.COMPILED; named in the
    engine's description only when on (entries computed before keep theirs); on the CPU's numpy
    draws (compiles_draws False) the same local SGD as without it, nothing compiled."""
    from fedlib import engine
    p = _problem(batch=8)
    clients, steps = torch.tensor([4, 0, 2]), torch.tensor([3, 2, 3])
    X0 = p.initial_params().expand(3, -1) + 0.01
    assert not p.compiles_draws
    plain = engine.VectorizedEngine().local_sgd(p, X0, clients, steps, 0.05, round=1).X
    same = engine.VectorizedEngine(compiled_draws=True).local_sgd(p, X0, clients, steps, 0.05, round=1).X
    assert torch.equal(plain, same)
    assert repr(engine.VectorizedEngine(graphs=True)) == "VectorizedEngine(graphs=True)"
    assert repr(engine.get_engine("vectorized", graphs=True, compiled_draws=True)) == \
        "VectorizedEngine(graphs=True, compiled_draws=True)"
    with pytest.raises(ValueError, match="compiled_draws: must be one of False, True, 'threefry', got 1"):
        engine.VectorizedEngine(compiled_draws=1)
    with pytest.raises(ValueError, match="compiled_draws: only the vectorized engine compiles draws"):
        engine.get_engine("reference", compiled_draws=True)
    with pytest.raises(ValueError, match="compiled: must be one of False, True, 'threefry', got 'jit'"):
        keyed.step_draws(1, torch.tensor([2]), torch.tensor([3]), 0, 0, 4, 3, [], compiled="jit")


@slow_compile
@needs_inductor
def test_an_engine_with_compiled_draws_gives_the_same_local_steps():
    """VectorizedEngine(compiled_draws=True) on the device path (torch int64 draws, here on the CPU,
    inductor): the same local SGD, bit for bit, as plain draws, with graphs asked for too (no
    graph on a CPU: the plain steps)."""
    from fedlib import engine
    p = _problem(batch=8)
    p._keyed_numpy = False                                  # the device path (torch int64), on the CPU
    assert p.compiles_draws
    clients, steps = torch.tensor([4, 0, 2]), torch.tensor([3, 2, 3])
    g = torch.Generator().manual_seed(1)
    X0 = p.initial_params().expand(3, -1) + 0.01 * torch.randn(3, p.dim, generator=g)
    plain = engine.VectorizedEngine().local_sgd(p, X0, clients, steps, 0.05, round=1).X
    comp = engine.VectorizedEngine(graphs=True, compiled_draws=True)
    assert torch.equal(comp.local_sgd(p, X0, clients, steps, 0.05, round=1).X, plain)
