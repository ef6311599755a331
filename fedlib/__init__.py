"""fedlib: federated learning under arbitrary client participation.

A companion library to FedSUM, FOCUS, FedACS and generalized FedAvg with amplification:
participation models compiled to replayable schedules (:mod:`fedlib.participation`), delay
metrics (:mod:`fedlib.delays`), objectives (:mod:`fedlib.problems`), a vectorized client
engine (:mod:`fedlib.engine`), algorithms (:mod:`fedlib.algorithms`), :func:`run`, and
sweeps over a committed results store (:func:`sweep`, :func:`grid`, :func:`verify`,
:mod:`fedlib.results`).
"""

__version__ = "0.1.0"

from . import algorithms, data, delays, engine, models, participation, partition, problems, theory  # noqa: E402,I001
from .experiment import ExperimentConfig, Result, run, run_cached, run_config  # noqa: E402
from . import results  # noqa: E402
from .results import grid, sweep, verify  # noqa: E402

__all__ = ["ExperimentConfig", "Result", "__version__", "algorithms", "data", "delays", "engine", "grid",
           "models", "participation", "partition", "problems", "results", "run", "run_cached", "run_config",
           "sweep", "theory", "verify"]
