"""What each built-in algorithm's options must be (:attr:`Algorithm.option_rules`), checked by
:meth:`Algorithm.check_options` when a config is validated -- before any run of a sweep -- and
when an algorithm is built.

The rules live here, outside the classes, because they only check values: a run's code
fingerprint (:mod:`fedlib.fingerprint`) covers each algorithm class's source so that a changed
update rule is noticed, and a check added to the class body would mark every stored run of it as
computed by other code although no value it computes changed.
"""

from __future__ import annotations

from .amplified import AmplifiedFedAvg, WaitMinibatch
from .base import int_at_least, one_of, positive
from .fedavg import FedAvg
from .fedsum import FedSUMCR
from .reweighting import FedAU, FedAWE
from .sampling import FedACS, OSSampling
from .variance_reduced import Scaffold

RULES = {
    FedAvg: {"aggregation": one_of("participants", "contacted", "all", "weights")},
    AmplifiedFedAvg: {"P": int_at_least(1), "gamma": positive()},
    WaitMinibatch: {"cycle": int_at_least(1)},
    FedSUMCR: {"rebuild": one_of("eq11", "rate_sum")},
    FedAU: {"cutoff": int_at_least(1)},
    FedAWE: {"clip": positive(none=True), "evaluate": one_of("server", "mean_of_copies")},
    FedACS: {"draws": int_at_least(1)},
    OSSampling: {"budget": int_at_least(1)},
    Scaffold: {"uplink_vectors": one_of(1, 2), "c_divisor": positive(none=True)},
}
for _cls, _rules in RULES.items():
    _cls.option_rules = _rules

__all__ = ["RULES"]
