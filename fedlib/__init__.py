"""fedlib: federated learning under arbitrary client participation.

A companion library to FedSUM, FOCUS, FedACS and generalized FedAvg with amplification:
participation models compiled to replayable schedules (:mod:`fedlib.participation`), delay
metrics (:mod:`fedlib.delays`), and plotting helpers (:mod:`fedlib.plotting`).
"""

from . import delays, participation

__version__ = "0.1.0"

__all__ = ["__version__", "delays", "participation"]
