"""FL algorithms: one module per family, each registered by name.

``available()`` lists the names with one-line descriptions; ``get(name)`` returns the class.
"""

from . import fedavg, fedsum  # noqa: F401  (registration)
from .base import Algorithm, RoundInput, available, get, lr_schedules, register

__all__ = ["Algorithm", "RoundInput", "available", "get", "lr_schedules", "register"]
