"""fedlib: federated learning under arbitrary client participation.

A companion library to FedSUM, FOCUS, FedACS and generalized FedAvg with amplification. Data
flows through its modules in this order (each imports only modules before it):

- :mod:`~fedlib.participation` (who takes part, compiled to a seeded :class:`Schedule`) and
  :mod:`~fedlib.delays` (tau_max / tau_avg of a schedule);
- :mod:`~fedlib.data`, :mod:`~fedlib.partition`, :mod:`~fedlib.models` -> :mod:`~fedlib.problems`
  (objectives, all randomness keyed by seed, client, round and step);
- :mod:`~fedlib.engine` (local training of every active client at once) ->
  :mod:`~fedlib.algorithms` (one module per family) and :mod:`~fedlib.theory`;
- :mod:`~fedlib.config` (:class:`ExperimentConfig`, :func:`grid`) -> :mod:`~fedlib.runner`
  (:func:`run`, :func:`run_config`; :mod:`~fedlib.arithmetic` records what decides a run's bits)
  -> :mod:`~fedlib.store` (runs stored once, sealed, with the
  :mod:`~fedlib.fingerprint` of their code) -> :mod:`~fedlib.sweeps` (:func:`sweep`) ->
  :mod:`~fedlib.verification` (:func:`verify`), :mod:`~fedlib.analysis` (finals) and
  :mod:`~fedlib.claims` (paired verdicts over seeds);
- :mod:`~fedlib.notebook` (profiles, output folders, a notebook's set-up) and
  :mod:`~fedlib.studies` (each paper's settings per profile); :mod:`~fedlib.plotting` only draws.
"""

from . import algorithms, data, delays, engine, models, participation, partition, problems, theory  # noqa: I001
from . import analysis, claims  # noqa: I001  (reading runs into frames and verdicts, after `import fedlib`)
from ._validate import InputError
from ._version import __version__
from .config import ExperimentConfig, grid
from .runner import Result, RunCallback, RunState, run, run_config
from .store import run_cached
from .sweeps import load, sweep
from .verification import verify

__all__ = ["ExperimentConfig", "InputError", "Result", "RunCallback", "RunState", "__version__", "algorithms",
           "analysis", "claims", "data", "delays", "engine", "grid", "load", "models", "participation",
           "partition", "problems", "run", "run_cached", "run_config", "sweep", "theory", "verify"]
