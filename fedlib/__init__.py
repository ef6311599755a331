"""fedlib: federated learning under arbitrary client participation.

A companion library to FedSUM, FOCUS, FedACS and generalized FedAvg with amplification:
participation models compiled to replayable schedules (:mod:`fedlib.participation`), delay
metrics (:mod:`fedlib.delays`), objectives (:mod:`fedlib.problems`), a vectorized client
engine (:mod:`fedlib.engine`), algorithms (:mod:`fedlib.algorithms`), and :func:`run`.
"""

__version__ = "0.1.0"

from . import algorithms, data, delays, engine, models, participation, partition, problems, theory  # noqa: E402,I001
from .experiment import ExperimentConfig, Result, run, run_cached  # noqa: E402

__all__ = ["ExperimentConfig", "Result", "__version__", "algorithms", "data", "delays", "engine", "models",
           "participation", "partition", "problems", "run", "run_cached", "theory"]
