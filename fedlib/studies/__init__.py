"""Each paper's experiments per profile: a *study* turns a profile (``smoke``, ``quick``,
``paper``; :data:`fedlib.notebook.PROFILES`) into that paper's settings and into labelled
:class:`~fedlib.ExperimentConfig` objects (config -> the labels its figure needs).

- :mod:`.fedsum`: FedSUM App. H (notebooks 02, 03);
- :mod:`.focus`: FOCUS App. F (notebook 05);
- :mod:`.fedacs`: FedACS Sec. 6 / App. I, its environments and step-length calibration (notebook 07);
- :mod:`.fedacs_toy`: FedACS App. C's quadratic model, fixed points and simulated end points (notebook 06);
- :mod:`.amplified`: Wang & Ji 2022, the warm-up and the phases after it (notebook 08);
- :mod:`.real`: the four papers' algorithms under the recorded Stunner trace (notebook 09).
"""

from . import amplified, fedacs, fedacs_toy, fedsum, focus, real
from .fedsum import FedSumSetup, fedsum_setup, pick_rates

__all__ = ["FedSumSetup", "amplified", "fedacs", "fedacs_toy", "fedsum", "fedsum_setup", "focus",
           "pick_rates", "real"]
