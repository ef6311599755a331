"""Small configs the tests of the store, the sweeps, the runner and the verification share."""

from pathlib import Path

from fedlib import ExperimentConfig, store

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
