"""FL algorithms: one module per family, each registered by name, each with its typed options.

``available()`` lists the names with one-line descriptions; ``get(name)`` returns the class;
``get(name).Options`` is its options' dataclass (``.describe()``: default, what each must be).
"""

from . import amplified, base, fedavg, fedsum, reweighting, sampling, variance_reduced  # noqa: F401
from .base import Algorithm, RoundInput, available, get, lr_schedules, register
from .options import Options, SolverOptions, option

base._BUILTIN = frozenset(base._REGISTRY)          # what fedlib ships: register never replaces these

__all__ = ["Algorithm", "Options", "RoundInput", "SolverOptions", "available", "get", "lr_schedules",
           "option", "register"]
