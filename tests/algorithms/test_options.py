"""Typed options and declared state (fedlib.algorithms.options; ``Options`` and ``server_state`` in
each class body): every algorithm's options are one frozen dataclass whose defaults are the ones
its rule uses, checked once with one message naming the option and what it must be, and read one
way (``self.settings``); every piece of state a round changes is declared."""

import inspect
from dataclasses import FrozenInstanceError, dataclass, fields

import numpy as np
import pytest
import torch

import fedlib
from fedlib import algorithms, participation
from fedlib.algorithms import Algorithm, Options, option
from fedlib.algorithms.options import int_at_least, one_of

ALL = sorted(algorithms.available())


@pytest.mark.parametrize("name", ALL)
def test_every_algorithm_declares_typed_options_with_doc(name):
    cls = algorithms.get(name)
    assert cls.options_type() is cls.Options                     # typed: no untyped fallback
    assert set(cls.Options.names()) == set(cls.options)
    for f in fields(cls.Options):
        assert f.metadata["doc"] and f.metadata["must"] and callable(f.metadata["check"]), (name, f.name)
        assert f.metadata["check"](f.default), (name, f.name, "the default must pass its own check")
    assert [row["option"] for row in cls.Options.describe()] == list(cls.Options.names())


def _defaults_run(name, quad, **opts):
    sched = participation.build("bernoulli", quad.num_clients, 12, seed=2, p=0.6, local_steps=3, uplink_p=0.8)
    return fedlib.run(name, quad, sched, lr_local=0.02, progress=False, **opts)


@pytest.mark.parametrize("name", ALL)
def test_the_dataclass_defaults_are_the_defaults_the_rule_uses(name, quad):
    """Giving every option its declared default explicitly computes the same run, bit for bit, as
    giving none. (None means "not given", so those fields are left out.)"""
    cls = algorithms.get(name)
    explicit = {f.name: f.default for f in fields(cls.Options) if f.default is not None}
    if not explicit:
        pytest.skip(f"{name}: no option with a default value")
    a = _defaults_run(name, quad)
    b = _defaults_run(name, quad, **explicit)
    assert torch.equal(a.params, b.params), name


def test_settings_are_typed_frozen_and_built_once(quad):
    algo = algorithms.get("fedau")(quad, None, cutoff=20)
    assert algo.settings == algorithms.get("fedau").Options(cutoff=20)
    assert (algo.settings.cutoff, algo.settings.momentum, algo.settings.prox_mu) == (20, 0.0, 0.0)
    with pytest.raises(FrozenInstanceError):
        algo.settings.cutoff = 3
    assert "settings" not in algo.state_dict()                 # rebuilt from the options, not saved


@pytest.mark.parametrize("name, given, message", [
    ("fedau", {"cutoff": 0}, r"^cutoff: must be an integer >= 1 \(algorithm 'fedau'\), got 0$"),
    ("fedau", {"cutoff": 2.0}, r"^cutoff: must be an integer >= 1"),
    ("fedsum_cr", {"rebuild": "exact"}, r"^rebuild: must be one of 'eq11', 'rate_sum'"),
    ("scaffold", {"uplink_vectors": True}, r"^uplink_vectors: must be one of 1, 2"),
    ("fedavg", {"momentum": 1.0}, r"^momentum: must be a real number in \[0, 1\)"),
    ("fedavg", {"prox_mu": -1}, r"^prox_mu: must be a finite real number >= 0"),
    ("fedavg", {"aggregation": "weights"}, r"^weights: give client weights \[N\] exactly when"),
    ("fedawe", {"clip": 0}, r"^clip: must be a positive number or None"),
    ("fedsum", {"momentum": 0.9}, r"^momentum: not an option of algorithm 'fedsum'; its options: \(none\)$"),
    ("amplified_fedavg", {"cycle": 2}, r"^cycle: not an option of algorithm 'amplified_fedavg'; its options: "
                                       r"momentum, prox_mu, aggregation, weights, P, gamma$"),
])
def test_one_message_names_the_option_and_what_it_must_be(name, given, message, quad):
    with pytest.raises(ValueError, match=message):
        algorithms.get(name).check_options(given)
    with pytest.raises(ValueError, match=message):                # the same check when it is built
        algorithms.get(name)(quad, None, **given)


def test_a_config_checks_its_algorithm_args_against_the_dataclass():
    cfg = fedlib.ExperimentConfig(problem="quadratic", participation="full", algorithm="fedau",
                                  rounds=2, algorithm_args={"cutoff": -3})
    with pytest.raises(ValueError, match=r"algorithm_args\.cutoff: must be an integer >= 1"):
        cfg.validate()


def test_your_own_algorithm_declares_its_options_as_a_dataclass(quad):
    @dataclass(frozen=True)
    class MomentumOptions(Options):
        beta: float = option(0.9, "a real number in [0, 1)", lambda v: 0 <= v < 1, doc="server momentum")
        warm: int = option(0, *int_at_least(0), doc="rounds without momentum")

    class ServerMomentum(Algorithm):
        name = "test_server_momentum"
        Options = MomentumOptions
        server_state = ("v",)

        def init(self, x0, nominal_steps):
            super().init(x0, nominal_steps)
            self.v = torch.zeros_like(x0)

        def round(self, x, r):
            S = r.delivered
            if len(S) == 0:
                return x
            beta = self.settings.beta if r.t >= self.settings.warm else 0.0
            self.v = beta * self.v + (x - self.local(x, S, r, r.lr_local).X).mean(0)
            return x - r.lr_global * self.v

    assert ServerMomentum.options == ("beta", "warm")               # the names follow from the fields
    assert ServerMomentum(quad, None).settings == MomentumOptions()
    with pytest.raises(ValueError, match=r"^beta: must be a real number in \[0, 1\) \(algorithm "
                                         r"'test_server_momentum'\), got 1\.5$"):
        fedlib.run(ServerMomentum, quad, "full", rounds=2, beta=1.5, progress=False)
    with pytest.raises(ValueError, match=r"^beta: must be a real number in \[0, 1\) .*got 'high'$"):
        ServerMomentum(quad, None, beta="high")             # a check that cannot compare refuses
    plain = fedlib.run(ServerMomentum, quad, "full", rounds=5, beta=0.0, progress=False, lr_local=0.01)
    fedavg = fedlib.run("fedavg", quad, "full", rounds=5, progress=False, lr_local=0.01)
    assert torch.allclose(plain.params, fedavg.params, rtol=1e-12, atol=1e-12)   # beta = 0: FedAvg


def test_names_without_a_dataclass_still_work_untyped(quad):
    class Named(Algorithm):
        name = "test_named_options"
        options = ("scale",)

        def init(self, x0, nominal_steps):
            super().init(x0, nominal_steps)

        def round(self, x, r):
            return x * (1.0 if self.settings.scale is None else float(self.settings.scale))

    typed = Named.options_type()
    assert typed.names() == ("scale",) and typed is Named.options_type()      # built once per class
    assert Named(quad, None, scale=0.5).settings.scale == 0.5
    assert Named(quad, None).settings.scale is None                           # None: not given
    with pytest.raises(ValueError, match="^other: not an option of algorithm 'test_named_options'"):
        Named(quad, None, other=1)


def test_options_in_the_class_body_must_have_the_names_the_class_lists():
    @dataclass(frozen=True)
    class Wrong(Options):
        rebuild: str = option("eq11", *one_of("eq11"), doc="x")
        extra: int = option(1, *int_at_least(0), doc="y")

    with pytest.raises(ValueError, match=r"^Options: the fields of Wrong \(rebuild, extra\) must be the "
                                         r"options of Mine \(rebuild\); leave out options"):
        class Mine(Algorithm):
            name = "test_options_mismatch"
            options = ("rebuild",)
            Options = Wrong


@pytest.mark.parametrize("name", ALL)
def test_every_built_in_declares_in_its_class_body_and_reads_options_one_way(name, quad):
    """Issue 53: no declarations from outside the class bodies (``declare``), no untyped copy of the
    options (``self.opts``), no legacy name (``fixed_point``)."""
    cls = algorithms.get(name)
    assert not hasattr(algorithms, "declare") and not hasattr(algorithms.base, "declare")
    if cls.Options.names():                                   # declared in its class or a parent's body
        assert any("Options" in vars(k) for k in cls.__mro__ if k is not Algorithm), name
    assert not hasattr(cls(quad, None), "opts"), name
    for k in cls.__mro__:
        if k.__module__.startswith("fedlib.algorithms") and k is not object:
            src = inspect.getsource(k)
            assert "self.opts" not in src and "fixed_point" not in src, (name, k.__name__)
    assert "fixed_point" not in inspect.signature(Algorithm.local).parameters


# ---------------------------------------------------------------------------------- declared state
_WIRING = {"problem", "engine", "settings", "N", "K"}


def _snapshot(algo) -> dict:
    out = {}
    for k, v in vars(algo).items():
        if k in _WIRING:
            continue
        out[k] = v.clone() if isinstance(v, torch.Tensor) else np.copy(v) if isinstance(v, np.ndarray) else v
    return out


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool(torch.equal(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


@pytest.mark.parametrize("name", ALL)
def test_every_state_a_round_changes_is_declared(name, quad):
    """Between rounds, an algorithm object changes only what it declares as server state or as its
    clients' state; every declared name exists once the run has started."""
    cls = algorithms.get(name)
    seen = []

    class Watch(fedlib.RunCallback):
        def on_start(self, run):
            seen.append(_snapshot(run.algo))

        def after_round(self, run):
            seen.append(_snapshot(run.algo))

    sched = participation.build("bernoulli", quad.num_clients, 8, seed=4, p=0.5, local_steps=2, uplink_p=0.8)
    fedlib.run(name, quad, sched, lr_local=0.02, progress=False, callbacks=[Watch()])
    declared = set(cls.server_state) | set(cls.client_state)
    assert declared <= set(seen[0]), (name, declared - set(seen[0]))
    changed = {k for before, after in zip(seen[:-1], seen[1:], strict=True) for k in after
               if k not in before or not _same(before[k], after[k])}
    assert changed <= declared, (name, sorted(changed - declared))
    assert not set(cls.server_state) & set(cls.client_state), name


def test_the_options_module_is_a_leaf():
    """The options module imports nothing of fedlib but ``fedlib._validate``'s InputError (its
    refusals' class), itself a leaf, so a family module, a config or a user's code can import it
    without cycles."""
    import ast
    import inspect

    from fedlib import _validate
    from fedlib.algorithms import options as mod

    def relative(m):
        return [n for n in ast.walk(ast.parse(inspect.getsource(m)))
                if isinstance(n, ast.ImportFrom) and (n.level or 0) > 0]
    assert [(n.level, n.module, [a.name for a in n.names]) for n in relative(mod)] == [
        (2, "_validate", ["InputError"])]
    assert relative(_validate) == []


def test_changed_options_rebuild_the_same_settings(quad):
    """``Options.changed()``: the values that differ from their defaults, what a run given an
    algorithm object and a Flower node rebuild the options from."""
    cls = algorithms.get("fedavg")
    algo = cls(quad, None, aggregation="weights", weights=[0.5] * quad.num_clients, momentum=0.0)
    assert algo.settings.changed() == {"aggregation": "weights", "weights": [0.5] * quad.num_clients}
    assert cls(quad, None, **algo.settings.changed()).settings == algo.settings
    assert cls(quad, None).settings.changed() == {}
