"""What decides a run's last bits (the arithmetic), and a replay anchor that survives a change of it.

PyTorch gives the same bits for the same run only when the same kernels compute it: the same
device, torch build, instruction set of ATen's vectorized kernels and of oneDNN's convolutions,
BLAS dispatch and intra-op thread count. A stored run records that arithmetic
(:func:`current`); a replay under an equal :func:`signature` may expect the stored numbers to
about 1e-6, one under another arithmetic may not: a few rounds of SGD amplify the kernels'
different fp32 rounding to 1e-4..1e-2 in the evaluations (measured: 4e-4 to 3e-3 relative at
round 5 of notebook 02's runs, AVX-512 stored, AVX2 replayed).

So each run also records an **anchor** (:class:`Anchor`): after rounds 1..:data:`ANCHOR_ROUNDS` the
length of the model's displacement ``||x_t - x_0||`` and its projection on a fixed seeded unit
vector, in float64. Three rounds are too few for the rounding to be amplified, and both numbers
move by far more than any tolerance when an update rule, a rate, the schedule, the data or a seed
changes. :data:`CROSS_RTOL` is the tolerance of the cross-arithmetic check; ``benchmarks/
arithmetic.py`` measures what changing the instruction set does to the anchors and prints the
margin.

Environment variables that lower the instruction set (a process reads them at start-up):
``ATEN_CPU_CAPABILITY=avx2`` (ATen), ``ONEDNN_MAX_CPU_ISA=AVX2`` (oneDNN),
``MKL_ENABLE_INSTRUCTIONS=AVX2`` (MKL). :func:`lowered_isa_env` gives the set for a level.
"""

from __future__ import annotations

import math
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["ANCHOR_ROUNDS", "CROSS_RTOL", "LEGACY", "Anchor", "AnchorRecorder", "cpu_flags",
           "cpu_model", "current", "describe", "hardware_isa", "lowered_isa_env", "signature"]

#: rounds after which a run records its anchor
ANCHOR_ROUNDS = 3

#: Tolerance of the cross-arithmetic check on anchors: |stored - replayed| <= CROSS_RTOL * the stored
#: displacement's norm, for the norm and the projection alike (a projection near zero is judged on the
#: displacement's size, not on its own). Derivation: one fp32 operation rounds with relative error <= u =
#: 2^-24 = 6.0e-8; a kernel that sums n terms in another order moves a result by up to about n u (n ~
#: 1e3..1e4 in the papers' CNNs: 1e-4..6e-4 at worst, sqrt(n) u ~ 6e-6 typically), and each round of K
#: local steps can amplify that. Measured with benchmarks/arithmetic.py (notebook 02's MNIST configs, every
#: algorithm; AVX2 vs the SSE4.1 baseline kernels on Zen 3): round 1 differs by <= 2e-6, rounds 2-3 by <=
#: 1.2e-5 for every run that learns and by 2.3e-4 for SCAFFOLD at the rates where it diverges (its dynamics
#: amplify fastest). 2e-3 keeps a 9x margin over that worst case and still fails a local rate changed by 1%
#: (which moves the displacement by ~1e-2), a changed seed, schedule, data split or update rule
#: (tests/test_arithmetic.py changes each on purpose). A GPU that computes convolutions in TF32 (torch's
#: default for cuDNN) rounds to 2^-11 and is not expected to pass against a CPU.
CROSS_RTOL = 2e-3

#: the arithmetic assumed for entries stored before fedlib recorded it (meta.json without an
#: ``arithmetic`` field): every such entry of the committed stores was computed on AMD EPYC Zen 4
#: machines (AVX-512) with torch 2.13.0+cpu and one thread per run (their meta records the torch
#: version and thread count; the instruction set is inferred from where they were computed)
LEGACY = {"device": "cpu", "hardware_isa": "avx512", "aten_capability": "AVX512", "onednn_isa": "avx512",
          "mkl_instructions": None, "inferred": True}

# instruction-set levels, lowest first, as oneDNN / ATen name them (fp32 kernels differ per level)
_LEVELS = ("sse41", "avx", "avx2", "avx512")
_ONEDNN_LEVEL = {"SSE41": "sse41", "AVX": "avx", "AVX2": "avx2", "AVX2_VNNI": "avx2", "AVX2_VNNI_2": "avx2",
                 "AVX10_1_512": "avx512", "AVX512_CORE": "avx512", "AVX512_CORE_VNNI": "avx512",
                 "AVX512_CORE_BF16": "avx512", "AVX512_CORE_FP16": "avx512", "AVX512_CORE_AMX": "avx512",
                 "AVX512_CORE_AMX_FP16": "avx512", "AVX10_1_512_AMX": "avx512",
                 "AVX10_1_512_AMX_FP16": "avx512", "AVX10_2_512": "avx512", "AVX10_2_512_AMX_2": "avx512"}


def cpu_flags() -> set[str]:
    """The instruction-set flags of this machine's CPU (``/proc/cpuinfo``; empty elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def hardware_isa(flags: set[str] | None = None) -> str:
    """The highest fp32 kernel level this CPU supports: ``avx512`` (AVX-512 F, BW, VL, DQ: what
    oneDNN's avx512_core needs), ``avx2``, ``avx``, ``sse41``, or ``unknown``."""
    f = cpu_flags() if flags is None else flags
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= f:
        return "avx512"
    for level, flag in (("avx2", "avx2"), ("avx", "avx"), ("sse41", "sse4_1")):
        if flag in f:
            return level
    return "unknown" if not f else "sse41"


def _onednn_isa(hw: str) -> str:
    """oneDNN's fp32 level: the hardware's, capped by ``ONEDNN_MAX_CPU_ISA`` (or the older
    ``DNNL_MAX_CPU_ISA``) when set."""
    cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "").upper()
    level = _ONEDNN_LEVEL.get(cap)
    if level is None or hw not in _LEVELS:
        return hw
    return min(hw, level, key=_LEVELS.index)


def current(device: str | torch.device | None = None) -> dict:
    """The arithmetic this process computes with on ``device`` (default cpu): device, torch
    build, and for a CPU the model name, the hardware's instruction set, ATen's CPU capability,
    oneDNN's level, MKL's cap and the intra-op thread count; for a GPU its name and CUDA /
    cuDNN versions."""
    dev = torch.device(device if device is not None else "cpu")
    out: dict = {"device": dev.type, "torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    if dev.type == "cuda":
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        out.update(gpu=torch.cuda.get_device_name(idx), cuda=torch.version.cuda,
                   cudnn=torch.backends.cudnn.version())
        return out
    hw = hardware_isa()
    out.update(cpu=cpu_model(), hardware_isa=hw, aten_capability=torch.backends.cpu.get_cpu_capability(),
               onednn_isa=_onednn_isa(hw), mkl_instructions=os.environ.get("MKL_ENABLE_INSTRUCTIONS"))
    return out


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; the platform's processor elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_SIGNATURE_FIELDS = ("device", "torch", "torch_threads", "hardware_isa", "aten_capability", "onednn_isa",
                     "mkl_instructions", "gpu", "cuda", "cudnn")


def signature(arith: dict) -> tuple:
    """What must be equal for two runs to give the same bits: every field of :func:`current`
    but the CPU's model name (the same instruction set and threads give the same kernels)."""
    return tuple(arith.get(k) for k in _SIGNATURE_FIELDS)


def describe(arith: dict) -> str:
    """A short name of an arithmetic, e.g. ``cpu AVX2 (oneDNN avx2, hardware avx512), 1 thread,
    torch 2.13.0+cpu``."""
    if arith.get("device") == "cuda":
        text = f"cuda {arith.get('gpu')} (CUDA {arith.get('cuda')}, cuDNN {arith.get('cudnn')})"
    else:
        mkl = f", MKL {arith['mkl_instructions']}" if arith.get("mkl_instructions") else ""
        text = (f"cpu {arith.get('aten_capability')} (oneDNN {arith.get('onednn_isa')}, hardware "
                f"{arith.get('hardware_isa')}{mkl})")
    n = arith.get("torch_threads")
    text += f", {n} thread{'s' if n != 1 else ''}" if n is not None else ""
    text += f", torch {arith['torch']}" if arith.get("torch") else ""
    return text + (" [inferred: not recorded when it was computed]" if arith.get("inferred") else "")


def lowered_isa_env(level: str) -> dict[str, str]:
    """Environment variables that make a new process compute with ``level``'s kernels
    (``"avx2"`` or ``"sse41"``, the baseline every x86-64 CPU here has) instead of its best."""
    table = {"avx2": ("avx2", "AVX2", "AVX2"), "sse41": ("default", "SSE41", "SSE4_2")}
    if level not in table:
        raise ValueError(f"level: must be one of {', '.join(table)}; got {level!r}")
    aten, onednn, mkl = table[level]
    return {"ATEN_CPU_CAPABILITY": aten, "ONEDNN_MAX_CPU_ISA": onednn, "MKL_ENABLE_INSTRUCTIONS": mkl}


# --------------------------------------------------------------------------------------------
# Anchors
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Anchor:
    """A run's first rounds, in float64: ``step_norm[i] = ||x_r - x_0||`` and
    ``step_proj[i] = <x_r - x_0, v>`` for ``r = rounds[i]``, ``v`` a fixed seeded unit vector."""

    rounds: tuple[int, ...]
    step_norm: tuple[float, ...]
    step_proj: tuple[float, ...]

    def to_dict(self) -> dict:
        return {"rounds": list(self.rounds), "step_norm": list(self.step_norm),
                "step_proj": list(self.step_proj)}

    @classmethod
    def from_dict(cls, d: dict) -> Anchor:
        a = cls(tuple(int(r) for r in d["rounds"]), tuple(float(v) for v in d["step_norm"]),
                tuple(float(v) for v in d["step_proj"]))
        if not len(a.rounds) == len(a.step_norm) == len(a.step_proj):
            raise ValueError("anchor: rounds, step_norm and step_proj differ in length")
        return a

    def compare(self, other: Anchor, rtol: float = CROSS_RTOL) -> list[dict]:
        """Rows ``{round, quantity, stored, replayed, rel_diff}`` for every value of ``self``
        (stored) that ``other`` (replayed) misses or that differs by more than ``rtol`` times
        the stored displacement's norm (``rel_diff`` is relative to that norm too)."""
        rows = []
        got = {r: (n, p) for r, n, p in zip(other.rounds, other.step_norm, other.step_proj, strict=True)}
        for r, n, p in zip(self.rounds, self.step_norm, self.step_proj, strict=True):
            if r not in got:
                rows.append({"round": r, "quantity": "step_norm", "stored": n, "replayed": math.nan,
                             "rel_diff": math.inf})
                continue
            scale = max(abs(n), 1e-300)
            for name, a, b in (("step_norm", n, got[r][0]), ("step_proj", p, got[r][1])):
                if not abs(a - b) <= rtol * scale:
                    rows.append({"round": r, "quantity": name, "stored": a, "replayed": b,
                                 "rel_diff": abs(a - b) / scale})
        return rows

    def max_rel(self, other: Anchor) -> float:
        """The largest relative difference (to the displacement's norm) between the two."""
        got = {r: (n, p) for r, n, p in zip(other.rounds, other.step_norm, other.step_proj, strict=True)}
        worst = 0.0
        for r, n, p in zip(self.rounds, self.step_norm, self.step_proj, strict=True):
            if r not in got:
                return math.inf
            scale = max(abs(n), 1e-300)
            worst = max(worst, abs(n - got[r][0]) / scale, abs(p - got[r][1]) / scale)
        return worst


class AnchorRecorder:
    """Collects a run's :class:`Anchor` from its start ``x0``: call :meth:`after` with the round
    count and the model after every round; it records the first :data:`ANCHOR_ROUNDS`."""

    #: seed of the fixed projection direction (float64, on the CPU, any model size)
    SEED = 20_260_101

    def __init__(self, x0: torch.Tensor, rounds: int = ANCHOR_ROUNDS, recorded: dict | None = None):
        self.x0 = x0.detach().to("cpu", torch.float64).clone()
        self.rounds = rounds
        self.data = {"rounds": [], "step_norm": [], "step_proj": []} if recorded is None else \
            {k: list(v) for k, v in recorded.items()}
        self._v: torch.Tensor | None = None

    def _direction(self) -> torch.Tensor:
        if self._v is None:
            g = torch.Generator().manual_seed(self.SEED)
            v = torch.randn(self.x0.numel(), generator=g, dtype=torch.float64)
            self._v = v / v.norm()
        return self._v

    def after(self, t: int, x: torch.Tensor) -> None:
        """Record round ``t`` (rounds completed) if it is one of the first ``rounds``."""
        if t > self.rounds or t in self.data["rounds"]:
            return
        d = x.detach().to("cpu", torch.float64).reshape(-1) - self.x0.reshape(-1)
        self.data["rounds"].append(int(t))
        self.data["step_norm"].append(float(d.norm()))
        self.data["step_proj"].append(float(d @ self._direction()))

    def anchor(self) -> Anchor:
        return Anchor.from_dict(self.data)
