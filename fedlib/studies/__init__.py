"""Each paper's experiments per profile: a *study* turns a profile (``smoke``, ``quick``,
``paper``; :data:`fedlib.notebook.PROFILES`) into that paper's settings and into labelled
:class:`~fedlib.ExperimentConfig` objects (config -> the labels its figure needs), and checks the
paper's claims on the runs as typed :class:`~fedlib.claims.ClaimRow` rows.

Every study has one shape (:class:`Study`, :mod:`fedlib.studies.base`): its paper, its notebooks,
its setup per profile, its methods from the one catalogue (:mod:`fedlib.studies.methods`) and its
headline claims on any runs of those methods (:class:`Frames`). The registry
(:func:`register_study`, :func:`get`, :func:`names`) holds the built-in studies and a user's:

- :mod:`.fedsum`: FedSUM App. H (notebooks 02, 03);
- :mod:`.focus`: FOCUS App. F (notebook 05);
- :mod:`.fedacs`: FedACS Sec. 6 / App. I, its environments and step-length calibration (notebook 07);
- :mod:`.fedacs_toy`: FedACS App. C's quadratic model, fixed points and simulated end points (notebook 06);
- :mod:`.amplified`: Wang & Ji 2022, the warm-up and the phases after it (notebook 08);
- :mod:`.real`: the four papers' algorithms under the recorded Stunner trace (notebook 09), their
  claims asked through each paper's registered study.
"""

from ..claims import ClaimRow
from . import amplified, base, fedacs, fedacs_toy, fedsum, focus, methods, real
from .base import Frames, Study, get, names, register_study
from .fedsum import FedSumSetup, fedsum_setup, pick_rates
from .methods import CATALOGUE, Method, register_method

__all__ = ["CATALOGUE", "ClaimRow", "FedSumSetup", "Frames", "Method", "Study", "amplified", "base", "fedacs",
           "fedacs_toy", "fedsum", "fedsum_setup", "focus", "get", "methods", "names", "pick_rates", "real",
           "register_method", "register_study"]
