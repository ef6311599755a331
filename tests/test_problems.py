"""Problems: gradients against closed forms, optima, keyed randomness, the neural task."""

import numpy as np
import pytest
import torch

from fedlib import models, partition, problems

from .conftest import TINY_CNN_REDUCTION, assert_kernels_agree


def test_quadratic_gradients_and_optimum(quad):
    X = torch.randn(5, quad.dim, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    clients = torch.tensor([0, 3, 3, 7, 1])
    G = quad.grads(X, clients)
    for s, c in enumerate(clients):
        assert torch.allclose(G[s], quad.A[c] @ (X[s] - quad.c[c]))
        assert torch.allclose(G[s], quad.client_grad(X[s], int(c)), rtol=1e-13, atol=1e-13)
    xs = quad.optimum()
    assert float(quad.full_grad(xs).norm()) < 1e-12
    # global gradient is the weighted sum of client gradients
    x = X[0]
    allg = quad.grads(x.expand(quad.num_clients, -1), torch.arange(quad.num_clients))
    assert torch.allclose(quad.weights @ allg, quad.full_grad(x))
    assert quad.loss(xs) < quad.loss(x)


def test_quadratic_rejects_non_spd():
    A = -torch.eye(2).expand(3, 2, 2)
    with pytest.raises(ValueError, match="^A"):
        problems.Quadratic(A, torch.zeros(3, 2))


def test_noise_is_keyed_by_client_round_step():
    q = problems.random_quadratic(6, 3, seed=1, sigma=0.5)
    x = torch.zeros(3, dtype=torch.float64)
    g_all = q.grads(x.expand(6, -1), torch.arange(6), round=4, step=2)
    g_two = q.grads(x.expand(2, -1), torch.tensor([5, 2]), round=4, step=2)
    assert torch.equal(g_two, g_all[[5, 2]])
    assert not torch.equal(q.grads(x.expand(6, -1), torch.arange(6), round=4, step=3), g_all)
    assert torch.equal(q.client_grad(x, 2, round=4, step=2), g_all[2])
    exact = q.grads(x.expand(6, -1), torch.arange(6), round=4, step=2, stochastic=False)
    assert torch.allclose(exact, q.H @ x - q.r)
    assert torch.allclose(g_all - exact, 0.5 * q._noise(4, 2))


def test_least_squares_matches_normal_equations():
    A, b, owner = problems.focus_toy_data(n=400, d=6, num_clients=4, seed=0)
    ls = problems.LeastSquares(A, b, owner)
    xs = ls.optimum()
    ne = np.linalg.solve(A.T @ A, A.T @ b)
    assert np.allclose(xs.numpy(), ne, atol=1e-10)
    # unnormalised f_i = 1/2 ||A_i x - b_i||^2: client gradient A_i^T (A_i x - b_i)
    x = torch.ones(6, dtype=torch.float64)
    Ai, bi = torch.tensor(A[owner == 2]), torch.tensor(b[owner == 2])
    assert torch.allclose(ls.client_grad(x, 2), Ai.T @ (Ai @ x - bi))
    assert float(ls.full_grad(xs).norm()) < 1e-9
    nz = problems.LeastSquares(A, b, owner, normalized=True)
    assert torch.allclose(nz.client_grad(x, 2), Ai.T @ (Ai @ x - bi) / len(bi))
    assert float(nz.full_grad(nz.optimum()).norm()) < 1e-10
    # solved once per problem (every evaluation asks for it, and LAPACK's last bits may vary
    # between calls); the caller gets a copy it may change
    first = ls.optimum()
    first += 1.0
    assert torch.equal(ls.optimum(), xs) and ls.optimum() is not ls.optimum()


def test_focus_toy_data_layout_and_determinism():
    A, b, owner = problems.focus_toy_data()
    assert A.shape == (8000, 50) and b.shape == (8000,)
    assert list(owner[:18]) == list(range(16)) + [0, 1]
    A2, b2, _ = problems.focus_toy_data()
    assert np.array_equal(A, A2) and np.array_equal(b, b2)
    q = problems.focus_arbitrary_weights()
    assert q.shape == (16,) and np.isclose(q.sum(), 1) and (q > 0).all()


def test_dirichlet_partition_properties():
    labels = np.repeat(np.arange(10), 50)
    parts = partition.dirichlet(labels, 20, alpha=0.1, seed=3).indices
    allidx = np.concatenate(parts)
    assert len(allidx) == 500 and len(np.unique(allidx)) == 500
    assert min(len(p) for p in parts) >= 1
    again = partition.dirichlet(labels, 20, alpha=0.1, seed=3).indices
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))
    # smaller alpha -> more skewed label mixes (mean max-class share per client)
    def skew(ps):
        return np.mean([np.bincount(labels[p], minlength=10).max() / len(p) for p in ps])
    assert skew(parts) > skew(partition.dirichlet(labels, 20, alpha=100.0, seed=3).indices)
    with pytest.raises(ValueError, match="^alpha"):
        partition.dirichlet(labels, 5, alpha=0)


def test_neural_vmap_gradients_equal_autograd(tiny_cnn):
    p = tiny_cnn
    g = torch.Generator().manual_seed(0)
    X = p.initial_params().expand(3, -1) + 0.01 * torch.randn(3, p.dim, generator=g)
    clients = torch.tensor([4, 0, 2])
    G = p.grads(X, clients, round=3, step=1)
    for s, c in enumerate(clients):
        ref = p.client_grad(X[s], int(c), round=3, step=1)
        assert_kernels_agree(G[s], ref, TINY_CNN_REDUCTION, f"client {int(c)}")


def test_neural_batches_do_not_depend_on_other_clients(tiny_cnn):
    p = tiny_cnn
    X = p.initial_params().expand(4, -1).clone()
    G4 = p.grads(X, torch.tensor([0, 1, 2, 3]), round=7, step=2)
    G1 = p.grads(X[:1], torch.tensor([2]), round=7, step=2)
    assert_kernels_agree(G4[2], G1[0], TINY_CNN_REDUCTION, "client 2 alone vs among four")
    idx, w = p.batch_indices(2, 7, 2)
    assert set(idx[w > 0].tolist()) <= set(p.partition[2].tolist())
    assert len(set(idx[w > 0].tolist())) == int(w.sum())


def test_neural_metrics_and_shapes(tiny_cnn):
    m = tiny_cnn.metrics(tiny_cnn.initial_params())
    assert set(m) >= {"loss", "test_loss", "test_acc", "train_acc"}
    assert 0 <= m["test_acc"] <= 1 and m["loss"] > 0
    assert tiny_cnn.dim == sum(p.numel() for p in models.build('fedsum_mnist_cnn').parameters())
    assert np.isclose(float(tiny_cnn.weights.sum()), 1.0)


def test_registry():
    assert {"quadratic", "focus_toy", "digits_cnn"} <= set(problems.available())
    with pytest.raises(ValueError, match="^problem"):
        problems.build("nope")


def test_neural_strategies_agree(tiny_cnn):
    p = tiny_cnn
    X = p.initial_params().expand(3, -1).clone()
    clients = torch.tensor([1, 4, 2])
    old = p.strategy
    try:
        p.strategy = "vmap"
        a = p.grads(X, clients, round=1, step=0)
        p.strategy = "loop"
        b = p.grads(X, clients, round=1, step=0)
    finally:
        p.strategy = old
    for s in range(3):
        assert_kernels_agree(a[s], b[s], TINY_CNN_REDUCTION, f"client {int(clients[s])}")
    with pytest.raises(ValueError, match="^strategy"):
        problems.Neural(models.build('fedsum_mnist_cnn'), p.partition, (p.train.x, p.train.y),
                        (p.test.x, p.test.y), strategy="magic")


def test_registry_names_agree_with_functions_and_reprs_are_short():
    assert problems.quadratic is problems.random_quadratic
    assert set(problems.available()) <= set(dir(problems)) | {"focus_toy"}
    p = problems.digits_cnn(num_clients=5)
    assert repr(p).startswith("Neural(dataset='digits', model='fedsum_mnist_cnn'") and "N=5" in repr(p)


def test_neural_test_metrics_on_a_fixed_subset():
    full = problems.digits_cnn(num_clients=4, alpha=0.5, batch_size=16, seed=0, dropout=0.0)
    sub = problems.neural(dataset="digits", partition="dirichlet", alpha=0.5, num_clients=4, batch_size=16,
                          seed=0, model_args={"dropout": 0.0}, test_eval_size=60)
    x = full.initial_params()
    idx = sub._test_idx
    assert len(idx) == 60 and len(torch.unique(idx)) == 60
    loss, acc = full._evaluate(x, full.test.x[idx], full.test.y[idx])
    m = sub.metrics(x)
    assert np.isclose(m["test_loss"], loss) and np.isclose(m["test_acc"], acc)
    assert m["loss"] == full.metrics(x)["loss"]                            # training metrics unchanged
    again = problems.neural(dataset="digits", partition="dirichlet", alpha=0.5, num_clients=4,
                            batch_size=16, seed=0, test_eval_size=60)
    assert torch.equal(again._test_idx, idx)                             # fixed by the seed
    everything = problems.neural(dataset="digits", partition="dirichlet", alpha=0.5, num_clients=4,
                                 batch_size=16, seed=0, model_args={"dropout": 0.0}, test_eval_size=10**6)
    assert everything.metrics(x)["test_acc"] == full.metrics(x)["test_acc"]
    with pytest.raises(ValueError, match="^test_eval_size"):
        problems.neural(dataset="digits", alpha=0.5, num_clients=4, test_eval_size=0)


# -- a user's problem: registered with its declared check and forwarded target ----------------------
def _bands_data(num_clients: int = 4, dim: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The target the test problem's builder passes its ``**kw`` on to: client centres."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((num_clients, dim)), np.ones(num_clients)


def _check_bands(args: dict) -> None:
    """The declared check: a rule between two arguments, stated as the builder's own would be."""
    lo, hi = args.get("lo", 0.5), args.get("hi", 2.0)
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
        raise ValueError(f"lo: must be at most hi ({hi!r}), got {lo!r}")


@pytest.fixture
def bands_problem():
    """A user's problem: quadratics with curvatures spread over [lo, hi]; the rest of its
    arguments go to :func:`_bands_data`."""
    @problems.problem("bands_test", description="quadratics with curvature in [lo, hi]", check=_check_bands,
                      forwards=_bands_data)
    def bands(lo: float = 0.5, hi: float = 2.0, **kw) -> problems.Quadratic:
        c, _ = _bands_data(**kw)
        n, d = c.shape
        A = np.stack([np.diag(np.linspace(lo, hi, d))] * n)
        return problems.Quadratic(A, c)
    yield "bands_test"
    problems._PROBLEMS.pop("bands_test", None)


def test_a_users_problem_is_checked_by_validate_from_its_declarations(bands_problem):
    from fedlib import ExperimentConfig, extensions

    def config(**problem_args):
        return ExperimentConfig(algorithm="fedavg", problem=bands_problem, participation="full", rounds=2,
                                problem_args=problem_args)
    good = config(lo=1.0, hi=3.0, num_clients=5, dim=2)
    good.validate()
    prob = good.build_problem()
    assert prob.num_clients == 5 and prob.dim == 2
    assert float(prob.A[0].diagonal().max()) == 3.0
    # the declared check: refused by validate, before anything runs, naming the field
    with pytest.raises(ValueError, match=r"^config\.problem_args\.lo: must be at most hi \(1\.0\), "
                                         r"got 3\.0$"):
        config(lo=3.0, hi=1.0).validate()
    # the declared target of **kw: its parameters are the arguments the builder takes on
    with pytest.raises(ValueError, match=r"^config\.problem_args\.num_clinets: not an argument of problem "
                                         r"'bands_test'; its arguments: lo, hi, num_clients, dim, seed$"):
        config(num_clinets=5).validate()
    # defined in this test module: a sweep's worker processes import it
    assert problems.get_problem(bands_problem).module in extensions.worker_modules([good])


def test_registering_a_problem_refuses_what_it_cannot_use(bands_problem):
    def plain(num_clients: int = 3) -> problems.Quadratic:
        return problems.random_quadratic(num_clients=num_clients)
    with pytest.raises(ValueError, match=r"^name: problem 'quadratic' is a built-in problem"):
        problems.register_problem("quadratic", plain, description="mine")
    with pytest.raises(ValueError, match=r"^name: problem 'bands_test' is already registered"):
        problems.register_problem(bands_problem, plain, description="mine")
    with pytest.raises(ValueError, match=r"^forwards: problem 'plain_test''s builder takes no \*\*kw"):
        problems.register_problem("plain_test", plain, description="mine", forwards=_bands_data)
    with pytest.raises(ValueError, match=r"^check: must be a function"):
        problems.register_problem("plain_test", plain, description="mine", check="lo <= hi")
    with pytest.raises(ValueError, match=r"^description: problem 'plain_test' needs a one-line description"):
        problems.register_problem("plain_test", plain, description=" ")
    assert "plain_test" not in problems.available()


def test_the_built_in_problems_declare_their_checks_and_targets():
    """What validate checks early for the built-ins is declared with them, not named in config.py."""
    assert problems.get_problem("focus_toy").forwards == (problems.focus_toy_data,)
    assert problems.get_problem("quadratic").check is not None
    with pytest.raises(ValueError, match=r"^curvature: must be \(lo, hi\) with 0 < lo <= hi, "
                                         r"got \(2\.0, 0\.5\)$"):
        problems.get_problem("quadratic").check({"curvature": (2.0, 0.5)})
    with pytest.raises(ValueError, match=r"^sigma: must be a finite number >= 0, got -1\.0$"):
        problems.get_problem("quadratic").check({"num_clients": 3, "dim": 2, "sigma": -1.0})
    problems.get_problem("quadratic").check({"num_clients": 3, "dim": 2})
    # the per-problem knowledge validate and sweep ask for, declared with each built-in
    assert problems.get_problem("quadratic").memory({"num_clients": 10, "dim": 100}) == 4 * 8 * 10 * 100 * 100
    assert problems.get_problem("quadratic").memory({"dim": 0}) is None            # the builder refuses it
    assert problems.get_problem("focus_toy").memory({}) == problems.focus_toy_bytes(8000, 50)
    assert problems.get_problem("neural").datasets({"dataset": "mnist"}) == [("mnist", None)]
    assert problems.get_problem("neural").datasets({"dataset": "mnist", "synthetic": True}) == []
    assert problems.get_problem("digits_cnn").inputs is not None
    with pytest.raises(ValueError, match=r"^num_clients: must be an integer in 1\.\.\d+ \(dataset 'digits'"):
        problems.get_problem("digits_cnn").inputs({"num_clients": 100000})


# -- a user's problem declaring its memory, its inputs and the datasets it reads ---------------------
@pytest.fixture
def blocks_problem():
    """A user's problem: random quadratics whose N x d x d matrices it declares as its memory, the
    embedded digits' training split as the most clients it can serve, and MNIST under its
    ``data_root`` as the files it reads."""
    built = []

    def blocks(num_clients: int = 4, dim: int = 3, seed: int = 0,
               data_root: str | None = None) -> problems.Quadratic:
        built.append((num_clients, dim))
        return problems.random_quadratic(num_clients=num_clients, dim=dim, seed=seed)
    from fedlib import data
    problems.register_problem(
        "blocks_test", blocks, description="random quadratics, sized by their declared memory",
        memory=lambda a: 8 * a.get("num_clients", 4) * a.get("dim", 3) ** 2,
        inputs=lambda a: data.check_run_data("digits", a.get("num_clients", 4)),
        datasets=lambda a: [("mnist", a["data_root"])] if "data_root" in a else [])
    yield "blocks_test", built
    problems._PROBLEMS.pop("blocks_test", None)


def _config(name: str, **problem_args):
    from fedlib import ExperimentConfig
    return ExperimentConfig(algorithm="fedavg", problem=name, participation="full", rounds=2,
                            problem_args=problem_args)


def test_a_users_problem_too_large_for_this_machine_is_refused_by_validate(blocks_problem):
    name, built = blocks_problem
    _config(name, num_clients=5, dim=2, seed=1).validate()
    # 8 x 1,000 x 10^6 x 10^6 bytes: far beyond any machine; refused naming the field and the
    # arguments the declaration read (not seed), before the builder runs
    with pytest.raises(ValueError, match=r"^config\.problem_args: problem 'blocks_test' with "
                                         r"\{'dim': 1000000, 'num_clients': 1000\} needs about "
                                         r"[\d,]+\.\d GiB of memory to build; this machine has "
                                         r"[\d,]+\.\d GiB available$") as e:
        _config(name, dim=10**6, num_clients=1000, seed=1).validate(where="config")
    assert type(e.value).__name__ == "InputError"
    assert built == []


def test_a_users_problem_declares_the_inputs_its_runs_need(blocks_problem, tmp_path):
    import fedlib
    from fedlib import data
    name, _ = blocks_problem
    n_train = data.check_files("digits")["train"]
    _config(name, num_clients=n_train).validate()
    with pytest.raises(ValueError, match=rf"^configs\[0\]\.problem_args\.num_clients: must be an integer "
                                         rf"in 1\.\.{n_train} \(dataset 'digits' has {n_train} training "
                                         rf"samples; a client needs one at least\), got {n_train + 1}$"):
        fedlib.sweep([_config(name, num_clients=n_train + 1)], tmp_path / "s1", progress=False)
    # the datasets it declares it reads: a sweep stops before it creates or runs anything
    empty = tmp_path / "no_data"
    empty.mkdir()
    with pytest.raises(data.DataNotFoundError, match=r"^problem_args\.dataset: mnist: dataset files not "
                                                     r"found\. .*nothing was computed\)$"):
        fedlib.sweep([_config(name, data_root=str(empty))], tmp_path / "s2", progress=False)
    assert not (tmp_path / "s1").exists() and not (tmp_path / "s2").exists()


def test_registering_a_problem_refuses_declarations_that_are_not_functions():
    def plain(num_clients: int = 3) -> problems.Quadratic:
        return problems.random_quadratic(num_clients=num_clients)
    for field in ("memory", "inputs", "datasets"):
        with pytest.raises(ValueError, match=rf"^{field}: must be a function of the arguments"):
            problems.register_problem("plain_test", plain, description="mine", **{field: 1024})
    assert "plain_test" not in problems.available()


def test_the_lower_layers_name_no_problem():
    """The memory estimates and the data a run needs are declared with each problem
    (:func:`fedlib.problems.register_problem`); the base layer and the sweep ask the registry."""
    import inspect

    from fedlib import _validate, data, sweeps
    for source in (inspect.getsource(_validate), inspect.getsource(data),
                   inspect.getsource(sweeps._require_data)):
        for name in problems.available():
            assert f'"{name}"' not in source and f"'{name}'" not in source, name
    assert not hasattr(_validate, "problem_bytes") and not hasattr(data, "check_run_inputs")


def test_a_problem_says_whether_it_is_neural_from_its_builders_return_type():
    """``ProblemSpec.neural`` (what ``draws`` and local epochs need) follows the builder's declared
    return type: the neural builders are, the analytic ones are not."""
    from fedlib import problems
    assert problems.get_problem("neural").neural and problems.get_problem("digits_cnn").neural
    assert not problems.get_problem("quadratic").neural and not problems.get_problem("focus_toy").neural
