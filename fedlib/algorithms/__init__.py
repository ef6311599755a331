"""FL algorithms: one module per family, each registered by name.

``available()`` lists the names with one-line descriptions; ``get(name)`` returns the class.
"""

# rules: the built-in algorithms' option rules (fedlib.algorithms.rules)
from . import amplified, fedavg, fedsum, reweighting, rules, sampling, variance_reduced  # noqa: F401
from .base import Algorithm, RoundInput, available, get, lr_schedules, register

__all__ = ["Algorithm", "RoundInput", "available", "get", "lr_schedules", "register"]
