"""Small configs the tests of the store, the sweeps, the runner and the verification share."""

import contextlib
from pathlib import Path

from fedlib import ExperimentConfig, store
from fedlib.algorithms import Algorithm, register
from fedlib.algorithms.base import _REGISTRY

ROOT = Path(__file__).resolve().parents[1]
QUAD = {"num_clients": 5, "dim": 3, "seed": 1}


def base_config(**kw) -> ExperimentConfig:
    """FedSUM on 5 quadratic clients, Bernoulli(0.5), 12 rounds; ``kw`` replaces fields."""
    d = dict(algorithm="fedsum", problem="quadratic", participation="bernoulli", rounds=12,
             problem_args=QUAD, participation_args={"p": 0.5}, local_steps=2, lr_local=0.05)
    d.update(kw)
    return ExperimentConfig(**d)


def no_timing(df):
    """A sweep frame without its wall-clock columns (which differ from run to run)."""
    return df.drop(columns=[c for c in store.TIMING_COLUMNS if c in df])


@contextlib.contextmanager
def failing_algorithm():
    """An algorithm ``fails_in_a_run`` registered for the block: it passes every check before a run
    (``validate`` refuses what it can, so a bad value no longer makes a failed run) and raises in
    its first round on a 3-dimensional problem of 4 clients (the probe problems that fingerprint
    it are not), so that a sweep stores a failed run (status ``error``)."""
    class FailsInARun(Algorithm):
        name = "fails_in_a_run"

        def round(self, x, r):
            if x.numel() == 3 and self.N == 4:
                raise RuntimeError("fails on purpose")
            return x
    register(FailsInARun)
    try:
        yield FailsInARun.name
    finally:
        _REGISTRY.pop(FailsInARun.name, None)
