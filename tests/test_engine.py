"""Vectorized engine == plain per-client reference loop, on closed-form and neural problems."""

import pytest
import torch

from fedlib import engine, problems

from .conftest import TINY_CNN_REDUCTION, assert_kernels_agree

VEC, REF = engine.VectorizedEngine(), engine.ReferenceEngine()


def _setup(p, S, seed=0):
    g = torch.Generator().manual_seed(seed)
    X0 = p.initial_params().expand(S, -1) + 0.1 * torch.randn(S, p.dim, generator=g, dtype=p.dtype)
    corr = 0.05 * torch.randn(S, p.dim, generator=g, dtype=p.dtype)
    return X0, corr


def test_quadratic_equal_with_heterogeneous_steps_and_correction():
    p = problems.random_quadratic(7, 4, seed=2, sigma=0.3)
    clients = torch.tensor([6, 0, 3, 3, 1])
    steps = torch.tensor([1, 4, 2, 7, 3])
    lr = torch.tensor([0.1, 0.05, 0.2, 0.1, 0.01], dtype=torch.float64)
    X0, corr = _setup(p, 5)
    for fixed in (False, True):
        a = VEC.local_sgd(p, X0, clients, steps, lr, round=3, correction=corr, grads_at_start=fixed)
        b = REF.local_sgd(p, X0, clients, steps, lr, round=3, correction=corr, grads_at_start=fixed)
        assert torch.allclose(a.X, b.X, rtol=1e-12, atol=1e-12)
        assert torch.allclose(a.grad_sum, b.grad_sum, rtol=1e-12, atol=1e-12)


def test_masking_stops_short_clients():
    p = problems.random_quadratic(3, 2, seed=0)
    X0 = torch.zeros(2, 2, dtype=torch.float64)
    res = VEC.local_sgd(p, X0, torch.tensor([1, 1]), torch.tensor([1, 5]), 0.1, round=0)
    one = VEC.local_sgd(p, X0[:1], torch.tensor([1]), torch.tensor([1]), 0.1, round=0)
    # two rows and one row may go through other (batched) kernels: agreement to float64 rounding
    # (dim 2: 2 n u = 4.4e-16 per step); one more step would move the row by ~1e-2
    assert torch.allclose(res.X[0], one.X[0], rtol=1e-14, atol=1e-15)
    assert not torch.equal(res.X[0], res.X[1])


def test_plain_sgd_by_hand():
    p = problems.random_quadratic(2, 3, seed=5)
    x = torch.ones(3, dtype=torch.float64)
    res = VEC.local_sgd(p, x.expand(1, -1), torch.tensor([1]), torch.tensor([2]), 0.1, round=0)
    x1 = x - 0.1 * p.A[1] @ (x - p.c[1])
    x2 = x1 - 0.1 * p.A[1] @ (x1 - p.c[1])
    assert torch.allclose(res.X[0], x2, rtol=1e-14)


def test_neural_vectorized_equals_module_sgd(tiny_cnn):
    p = tiny_cnn
    clients = torch.tensor([0, 5, 2, 3])
    steps = torch.tensor([3, 1, 2, 3])
    X0, corr = _setup(p, 4, seed=1)
    X0 = X0.to(p.dtype)
    a = VEC.local_sgd(p, X0, clients, steps, 0.05, round=2, correction=corr.to(p.dtype) * 0.01)
    b = REF.local_sgd(p, X0, clients, steps, 0.05, round=2, correction=corr.to(p.dtype) * 0.01)
    assert_kernels_agree(a.X - X0, b.X - X0, TINY_CNN_REDUCTION, "local displacement")
    assert_kernels_agree(a.grad_sum, b.grad_sum, TINY_CNN_REDUCTION, "gradient sum")


def test_get_engine():
    assert engine.get_engine("vectorized").name == "vectorized"
    import pytest
    with pytest.raises(ValueError, match="^engine"):
        engine.get_engine("gpu-magic")


def test_momentum_and_prox_solvers_agree():
    p = problems.random_quadratic(5, 3, seed=4, sigma=0.1)
    X0, corr = _setup(p, 3)
    clients, steps = torch.tensor([4, 1, 2]), torch.tensor([3, 1, 5])
    for solver in ({"momentum": 0.9}, {"prox_mu": 0.5}, {"full_batch": True}):
        a = VEC.local_sgd(p, X0, clients, steps, 0.05, round=1, correction=corr, **solver)
        b = REF.local_sgd(p, X0, clients, steps, 0.05, round=1, correction=corr, **solver)
        assert torch.allclose(a.X, b.X, rtol=1e-12, atol=1e-12), solver
    # heavy ball by hand, one client, two steps
    x0 = X0[0]
    g0 = p.client_grad(x0, 4, 1, 0)
    x1 = x0 - 0.05 * g0
    b1 = 0.9 * g0 + p.client_grad(x1, 4, 1, 1)
    res = VEC.local_sgd(p, x0[None], clients[:1], torch.tensor([2]), 0.05, round=1, momentum=0.9)
    assert torch.allclose(res.X[0], x1 - 0.05 * b1, rtol=1e-13)


def test_neural_momentum_prox_equal_module_sgd(tiny_cnn):
    p = tiny_cnn
    X0, _ = _setup(p, 2, seed=3)
    X0 = X0.to(p.dtype)
    for solver in ({"momentum": 0.5}, {"prox_mu": 0.1}):
        a = VEC.local_sgd(p, X0, torch.tensor([1, 3]), torch.tensor([3, 2]), 0.05, round=0, **solver)
        b = REF.local_sgd(p, X0, torch.tensor([1, 3]), torch.tensor([3, 2]), 0.05, round=0, **solver)
        assert_kernels_agree(a.X - X0, b.X - X0, TINY_CNN_REDUCTION, str(solver))


def test_dropout_masks_are_keyed_and_engines_agree_with_dropout():
    """Keyed dropout: vmap, loop and reference engines see the same masks, whatever the order of
    the clients, and the masks depend only on (seed, client, round, step)."""
    p = problems.digits_cnn(num_clients=5, alpha=0.5, batch_size=8, seed=0, dropout=0.3)
    m1 = p.dropout_masks(2, 4, 1)
    again = p.dropout_masks(2, 4, 1)
    assert len(m1) == 2 and all(torch.equal(a, b) for a, b in zip(m1, again, strict=True))
    assert not torch.equal(m1[0], p.dropout_masks(3, 4, 1)[0])
    assert not torch.equal(m1[0], p.dropout_masks(2, 4, 2)[0])
    kept = torch.cat([m.flatten() for m in m1])
    assert set(kept.unique().tolist()) <= {0.0, float(torch.tensor(1 / 0.7))}   # scaled Bernoulli(0.7)
    assert abs(float((kept > 0).double().mean()) - 0.7) < 0.02
    clients, steps = torch.tensor([4, 0, 2]), torch.tensor([3, 2, 3])
    X0, corr = _setup(p, 3, seed=2)
    X0 = X0.to(p.dtype)
    outs = {}
    for strategy in ("vmap", "loop"):
        p.strategy = strategy
        outs[strategy] = VEC.local_sgd(p, X0, clients, steps, 0.05, round=1).X
    p.strategy = "loop"
    outs["reference"] = REF.local_sgd(p, X0, clients, steps, 0.05, round=1).X
    for name in ("vmap", "reference"):
        assert_kernels_agree(outs[name] - X0, outs["loop"] - X0, 8 * 24 * 24, name)     # batch 8
    perm = torch.tensor([2, 0, 1])                                  # order of clients is irrelevant
    rev = VEC.local_sgd(p, X0[perm], clients[perm], steps[perm], 0.05, round=1).X
    assert torch.equal(rev, outs["loop"][perm])
    with torch.no_grad():                                           # dropout really acts
        p.model.train()
        assert not torch.equal(p.grads(X0[:1], clients[:1], 1, 0), p.grads(X0[:1], clients[:1], 1, 1))


def test_keyed_dropout_outside_a_context_is_plain_dropout():
    from fedlib.models import KeyedDropout, dropout_masks
    d = KeyedDropout(0.5)
    x = torch.ones(1000)
    assert torch.equal(d.eval()(x), x)
    y = d.train()(x)
    assert set(y.unique().tolist()) <= {0.0, 2.0}
    with dropout_masks([torch.full((1000,), 3.0)]):
        assert torch.equal(d(x), torch.full((1000,), 3.0))
    import pytest
    with pytest.raises(ValueError, match="^dropout"):
        KeyedDropout(1.0)


def test_cpu_client_threads_give_the_same_bits_whatever_their_number(monkeypatch):
    """The CPU path trains each client with one intra-op thread, in worker threads: the result
    must not depend on how many threads run clients (nor leave torch's thread setting changed)."""
    import fedlib
    from fedlib import participation
    prob = problems.digits_cnn(num_clients=6, alpha=0.5, batch_size=8, seed=0, dropout=0.3)
    assert prob.strategy == "loop"
    sched = participation.build("bernoulli", 6, 3, seed=1, p=0.7, local_steps=3)
    before = torch.get_num_threads()
    out = {}
    for n in ("1", "2", "3"):
        monkeypatch.setenv("FEDLIB_THREADS", n)
        out[n] = fedlib.run("scaffold", prob, sched, lr_local=0.05, progress=False)
    assert torch.get_num_threads() == before
    for n in ("2", "3"):
        assert torch.equal(out[n].params, out["1"].params)
    monkeypatch.setenv("FEDLIB_THREADS", "zero")
    import pytest
    with pytest.raises(ValueError, match="^FEDLIB_THREADS"):
        engine.cpu_threads()


def test_evaluation_runs_in_one_thread_whatever_the_process_setting(tiny_cnn, quad):
    """A history's bits must not depend on the computing process's thread count (a Flower server
    with two threads, a notebook kernel, a one-thread sweep worker): every evaluation runs with one
    intra-op thread, as each client's training does, and the caller's setting is left as it was."""
    import fedlib
    p, x = tiny_cnn, tiny_cnn.initial_params()
    seen, loss = [], p.per_sample_loss
    before = torch.get_num_threads()
    try:
        p.per_sample_loss = lambda out, y: (seen.append(torch.get_num_threads()), loss(out, y))[1]
        out = {}
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            out[n] = p.metrics(x)
            assert torch.get_num_threads() == n
    finally:
        p.per_sample_loss = loss
        torch.set_num_threads(before)
    assert seen and set(seen) == {1}
    assert out[1] == out[2] == out[3]
    # every problem, through the runner's history (the quadratics' metrics are plain torch code)
    threads = []
    metrics = quad.metrics
    quad.metrics = lambda x: (threads.append(torch.get_num_threads()), metrics(x))[1]
    try:
        torch.set_num_threads(2)
        fedlib.run("fedavg", quad, "full", rounds=2, progress=False)
    finally:
        del quad.metrics
        torch.set_num_threads(before)
    assert threads and set(threads) == {1}


def test_evaluation_batches_share_the_cores_and_keep_their_bits(monkeypatch):
    """Evaluation batches run in worker threads (each with one intra-op thread and its own model
    copy) and are summed in order: the metrics are bitwise those of one thread, whatever the
    number of workers."""
    import threading
    prob = problems.digits_cnn(num_clients=6, alpha=0.5, batch_size=8, seed=0, dropout=0.3)
    prob.eval_batch = 16                                            # many batches
    x = prob.initial_params() + 0.01
    names, loss = set(), prob.per_sample_loss
    prob.per_sample_loss = lambda out, y: (names.add(threading.current_thread().name), loss(out, y))[1]
    out = {}
    for n in ("1", "2", "3"):
        monkeypatch.setenv("FEDLIB_THREADS", n)
        out[n] = prob.metrics(x)
    assert out["1"] == out["2"] == out["3"]
    assert any(name.startswith("fedlib-worker") for name in names)   # the workers did evaluate
    assert prob.model.training                                      # left in training mode


def test_fast_max_pool_equals_max_pool2d_with_ties():
    from fedlib.models import max_pool_2x2
    for shape in ((3, 2, 8, 8), (2, 3, 7, 9)):
        x = torch.relu(torch.randn(shape, generator=torch.Generator().manual_seed(0)))
        x[..., :4, :4] = 0.5                                          # ties inside windows
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, yb = torch.nn.functional.max_pool2d(a, 2), max_pool_2x2(b)
        g = torch.randn_like(ya)
        ya.backward(g)
        yb.backward(g)
        assert torch.equal(ya, yb) and torch.equal(a.grad, b.grad)


def test_graphed_steps_fall_back_to_the_plain_step_off_cuda():
    """``VectorizedEngine(graphs=True)`` captures CUDA graphs only on a CUDA device (keyed draws,
    vmap); on the CPU it takes the plain path: the same bits, short clients masked the same."""
    p = problems.digits_cnn(num_clients=5, alpha=0.5, batch_size=8, seed=0, dropout=0.3)
    p.strategy = "vmap"
    p.set_draws("keyed")
    clients, steps = torch.tensor([4, 0, 2]), torch.tensor([3, 1, 3])
    X0, corr = _setup(p, 3, seed=2)
    X0 = X0.to(p.dtype)
    a = engine.VectorizedEngine(graphs=True).local_sgd(p, X0, clients, steps, 0.05, round=1,
                                                       correction=corr.to(p.dtype) * 0.01)
    b = VEC.local_sgd(p, X0, clients, steps, 0.05, round=1, correction=corr.to(p.dtype) * 0.01)
    assert torch.equal(a.X, b.X) and torch.equal(a.grad_sum, b.grad_sum)
    assert torch.equal(p.graphed_grads(X0, clients, 1, 0), p.grads(X0, clients, 1, 0))
    assert not getattr(p, "_graphs", None)                       # nothing captured on the CPU


def test_graphs_are_asked_for_by_the_environment(monkeypatch):
    monkeypatch.delenv(engine.GRAPHS_ENV, raising=False)
    assert engine.get_engine("vectorized").graphs is False
    monkeypatch.setenv(engine.GRAPHS_ENV, "1")
    assert engine.get_engine("vectorized").graphs is True
    assert isinstance(engine.get_engine("reference"), engine.ReferenceEngine)


def test_graphs_are_an_explicit_engine_option_with_the_variable_as_fallback(monkeypatch):
    from fedlib.engine import GRAPHS_ENV, ReferenceEngine, VectorizedEngine, get_engine
    monkeypatch.delenv(GRAPHS_ENV, raising=False)
    assert get_engine("vectorized").graphs is False and get_engine("vectorized", graphs=True).graphs is True
    monkeypatch.setenv(GRAPHS_ENV, "1")
    assert get_engine("vectorized").graphs is True                   # the fallback default
    assert get_engine("vectorized", graphs=False).graphs is False     # an explicit choice wins
    assert isinstance(get_engine("reference"), ReferenceEngine)
    with pytest.raises(ValueError, match="graphs: only the vectorized engine"):
        get_engine("reference", graphs=True)
    with pytest.raises(ValueError, match="graphs: must be True or False"):
        VectorizedEngine(graphs="yes")
    assert repr(VectorizedEngine(graphs=True)) == "VectorizedEngine(graphs=True)"


def test_run_config_takes_an_engine_object(tmp_path):
    """A graphed engine on the CPU runs plain steps: the same history as the default engine, and
    the store records which engine computed the entry."""
    from fedlib import ExperimentConfig, run_config
    from fedlib.engine import VectorizedEngine
    from fedlib.store import Store
    cfg = ExperimentConfig(algorithm="fedsum", problem="quadratic", participation="bernoulli", rounds=5,
                           participation_args={"p": 0.5}, local_steps=3, lr_local=0.05)
    a = run_config(cfg)
    b = run_config(cfg, engine=VectorizedEngine(graphs=True))
    cols = ["round", "loss"]
    assert a.history[cols].equals(b.history[cols]) and torch.equal(a.params, b.params)
    e = Store(tmp_path).compute(cfg, engine=VectorizedEngine(graphs=True))
    assert e.meta["engine"] == "VectorizedEngine(graphs=True)"


def _first_convolution_input(p, X, clients, **options):
    """The input ``aten.convolution`` receives for the first layer when ``p.grads`` runs (the
    tensor its backend choice sees: after ``torch.func``'s batching rules)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    seen = []
    p.grads(X, clients, 1, 0, **options)                 # caches filled (the dropout shapes' forward)

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten.convolution.default:
                seen.append(args[0])
            return func(*args, **(kwargs or {}))
    with Log():
        p.grads(X, clients, 1, 0, **options)
    return seen[0]


@pytest.mark.parametrize("draws", ["keyed", "legacy"])
def test_clients_innermost_gives_the_first_convolution_a_channels_last_input(draws):
    """Under vmap a first layer of one input channel is a grouped convolution with the clients as
    channels (the depthwise shape, which CUDA computes in torch's own kernels unless the input is
    channels-last); with the clients innermost its input arrives channels-last, so CUDA's choice
    is cuDNN's, whichever the draw scheme. The values are unchanged (a copy in another layout)."""
    p = problems.digits_cnn(num_clients=5, alpha=0.5, batch_size=8, seed=0, dropout=0.3)
    p.strategy = "vmap"
    p.set_draws(draws)
    clients = torch.tensor([4, 0, 2])
    X = p.initial_params().expand(3, -1).contiguous()
    plain = _first_convolution_input(p, X, clients)
    laid = _first_convolution_input(p, X, clients, clients_innermost=True)
    assert plain.shape == laid.shape and plain.shape[1] == 3                   # the clients as channels
    assert laid.is_contiguous(memory_format=torch.channels_last) and laid.stride(1) == 1
    assert not plain.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(plain, laid)


def test_clients_innermost_changes_the_kernels_not_the_values():
    """``VectorizedEngine(clients_innermost=True)``: local SGD agrees with the plain layout to
    fp32 rounding of the longest reduction (another kernel may sum in another order), and is the
    plain path itself for problems that do not stack clients (the loop strategy: bit for bit)."""
    p = problems.digits_cnn(num_clients=6, alpha=0.5, batch_size=16, seed=0, dropout=0.3)
    laid = engine.VectorizedEngine(clients_innermost=True)
    clients, steps = torch.tensor([5, 0, 2]), torch.tensor([3, 1, 3])
    X0, corr = _setup(p, 3, seed=2)
    X0, corr = X0.to(p.dtype), 0.01 * corr.to(p.dtype)
    p.strategy = "loop"
    assert not p.lays_out_clients
    a, b = (e.local_sgd(p, X0, clients, steps, 0.05, round=1, correction=corr) for e in (laid, VEC))
    assert torch.equal(a.X, b.X) and torch.equal(a.grad_sum, b.grad_sum)
    p.strategy = "vmap"
    p.set_draws("keyed")
    assert p.lays_out_clients
    a, b = (e.local_sgd(p, X0, clients, steps, 0.05, round=1, correction=corr) for e in (laid, VEC))
    assert_kernels_agree(a.grad_sum, b.grad_sum, TINY_CNN_REDUCTION, "gradient sums")
    assert_kernels_agree(a.X - X0, b.X - X0, TINY_CNN_REDUCTION, "local updates")
    assert repr(laid) == "VectorizedEngine(graphs=False, clients_innermost=True)"
    assert laid.arithmetic == ("clients_innermost",) and VEC.arithmetic == ()
    assert engine.VectorizedEngine(graphs=True, compiled_draws=True).arithmetic == ()
    with pytest.raises(ValueError, match="clients_innermost: must be True or False"):
        engine.VectorizedEngine(clients_innermost=1)


@pytest.mark.parametrize("graphs", [False, True])
def test_every_step_of_the_engine_asks_for_the_clients_layout(graphs, monkeypatch):
    """``VectorizedEngine(clients_innermost=True)`` passes the option to each step's gradients,
    plain or graphed (on the CPU the graphed path is the plain one: the layout's own effect is
    the test above), and the result is that of the problem's gradients with the option."""
    p = problems.digits_cnn(num_clients=5, alpha=0.5, batch_size=8, seed=0, dropout=0.3)
    p.strategy = "vmap"
    p.set_draws("keyed")
    clients, steps = torch.tensor([4, 0, 2]), torch.tensor([2, 1, 2])
    X0 = p.initial_params().expand(3, -1).contiguous()
    asked = []

    def spy(name, real):
        def call(*args, **kw):
            asked.append((name, kw.get("clients_innermost", False)))
            return real(*args, **kw)
        return call
    for name in ("grads", "graphed_grads"):
        monkeypatch.setattr(p, name, spy(name, getattr(p, name)))
    laid = engine.VectorizedEngine(graphs=graphs, clients_innermost=True)
    got = laid.local_sgd(p, X0, clients, steps, 0.05, round=3)
    assert asked and all(flag for _, flag in asked)
    assert ("graphed_grads" in {n for n, _ in asked}) is graphs
    X = X0.clone()                                        # the same steps by hand, with the option
    for k in range(2):
        rows = torch.tensor([i for i, n in enumerate(steps.tolist()) if k < n])
        X[rows] -= 0.05 * p.grads(X[rows], clients[rows], 3, k, clients_innermost=True)
    assert torch.equal(got.X, X)
