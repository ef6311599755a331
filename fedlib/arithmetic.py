"""What decides a run's last bits (the arithmetic), and a replay anchor that survives a change of it.

PyTorch gives the same bits for the same run only when the same kernels compute it: the same
device, torch build, instruction set of ATen's vectorized kernels and of oneDNN's convolutions,
BLAS dispatch and intra-op thread count, and the same CPU: two CPUs at the same instruction-set
level still run different kernels (oneDNN and MKL pick code paths by vendor and by ISA extensions
such as AVX512-FP16 or AMX, and size their blocking by the caches; measured: an Intel Xeon and an
AMD EPYC, both AVX-512, differ by 1.5e-6 after one round of notebook 08's runs). A stored run
records that arithmetic (:func:`current`: the levels, and the CPU's vendor, family, model, name,
cache and oneDNN's detailed ISA); a replay on an arithmetic that :func:`same_kernels` calls the
same may expect the stored numbers to about 1e-6, one under another arithmetic may not: a few
rounds of SGD amplify the kernels' different fp32 rounding to 1e-4..1e-2 in the evaluations
(measured: 4e-4 to 3e-3 relative at round 5 of notebook 02's runs, AVX-512 stored, AVX2 replayed).

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

import contextlib
import math
import os
import platform
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from ._validate import InputError

__all__ = ["ANCHOR_ROUNDS", "CROSS_RTOL", "IDENTITY_FIELDS", "LEGACY", "Anchor", "AnchorRecorder",
           "cpu_flags", "cpu_identity", "cpu_model", "current", "describe", "hardware_isa", "lowered_isa_env",
           "onednn_isa_detail", "same_kernels", "signature", "verifiable", "verifiable_cuda"]

#: rounds after which a run records its anchor
ANCHOR_ROUNDS = 3

#: Tolerance of the cross-arithmetic check on anchors: ``|stored - replayed| <= CROSS_RTOL`` * the stored
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
#: version, thread count and the CPU's name; the instruction set is inferred from where they were
#: computed)
LEGACY = {"device": "cpu", "hardware_isa": "avx512", "aten_capability": "AVX512", "onednn_isa": "avx512",
          "mkl_instructions": None, "inferred": True}

# instruction-set levels, lowest first, as oneDNN / ATen name them (fp32 kernels differ per level)
_LEVELS = ("sse41", "avx", "avx2", "avx512")
_ONEDNN_LEVEL = {"SSE41": "sse41", "AVX": "avx", "AVX2": "avx2", "AVX2_VNNI": "avx2", "AVX2_VNNI_2": "avx2",
                 "AVX10_1_512": "avx512", "AVX512_CORE": "avx512", "AVX512_CORE_VNNI": "avx512",
                 "AVX512_CORE_BF16": "avx512", "AVX512_CORE_FP16": "avx512", "AVX512_CORE_AMX": "avx512",
                 "AVX512_CORE_AMX_FP16": "avx512", "AVX10_1_512_AMX": "avx512",
                 "AVX10_1_512_AMX_FP16": "avx512", "AVX10_2_512": "avx512", "AVX10_2_512_AMX_2": "avx512"}


def _cpuinfo() -> str:
    """The text of ``/proc/cpuinfo`` ("" where there is none); tests replace it to fake a CPU."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def _cpuinfo_field(name: str) -> str | None:
    """The first processor's ``name`` field of ``/proc/cpuinfo``, or None."""
    for line in _cpuinfo().splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == name:
            return value.strip()
    return None


def cpu_flags() -> set[str]:
    """The instruction-set flags of this machine's CPU (``/proc/cpuinfo``; empty elsewhere)."""
    flags = _cpuinfo_field("flags")
    return set(flags.split()) if flags else set()


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


# oneDNN's CPU ISAs, lowest first, each with the /proc/cpuinfo flags it needs beyond the one before
# (oneDNN v3's cpu_isa_t: avx512_core_amx includes avx512_core_fp16; avx2_vnni_2 is above avx2_vnni)
_ONEDNN_DETAIL = (("SSE41", {"sse4_1"}), ("AVX", {"avx"}), ("AVX2", {"avx2"}),
                  ("AVX2_VNNI", {"avx_vnni"}), ("AVX2_VNNI_2", {"avx_vnni_int8", "avx_ne_convert"}),
                  ("AVX512_CORE", {"avx512f", "avx512bw", "avx512vl", "avx512dq"}),
                  ("AVX512_CORE_VNNI", {"avx512_vnni"}), ("AVX512_CORE_BF16", {"avx512_bf16"}),
                  ("AVX512_CORE_FP16", {"avx512_fp16"}),
                  ("AVX512_CORE_AMX", {"amx_tile", "amx_int8", "amx_bf16"}),
                  ("AVX512_CORE_AMX_FP16", {"amx_fp16"}))


def onednn_isa_detail(flags: set[str] | None = None) -> str:
    """oneDNN's detailed CPU ISA on this machine (e.g. ``AVX512_CORE_FP16`` on an Intel Xeon with
    AVX512-FP16, ``AVX512_CORE_BF16`` on AMD Zen 4, ``AVX2`` on Zen 3): the highest ISA whose flags
    the CPU has (each includes the ones below it, as oneDNN defines them; AVX2_VNNI_2 needs no
    AVX-512 and is skipped by a CPU without AVX2_VNNI), capped by ``ONEDNN_MAX_CPU_ISA`` when set.
    Two CPUs at the same level but another detailed ISA may run other oneDNN kernels."""
    f = cpu_flags() if flags is None else flags
    have, best = set(), "unknown" if not f else "SSE41"
    for name, needs in _ONEDNN_DETAIL:
        have |= needs
        if name.startswith("AVX2_VNNI"):
            if have <= f:
                best = name
            have -= needs                      # the VNNI extensions are no prerequisite of AVX-512
            continue
        if not have <= f:
            break
        best = name
    cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "").upper()
    order = [n for n, _ in _ONEDNN_DETAIL]
    if cap in order and best in order and order.index(cap) < order.index(best):
        return cap
    return best


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
    build, and for a CPU its identity (:func:`cpu_identity`), the hardware's instruction set,
    ATen's CPU capability, oneDNN's level and detailed ISA, MKL's cap and the intra-op thread
    count; for a GPU its name and CUDA / cuDNN versions."""
    dev = torch.device(device if device is not None else "cpu")
    out: dict = {"device": dev.type, "torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    if dev.type == "cuda":
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        out.update(gpu=torch.cuda.get_device_name(idx), cuda=torch.version.cuda,
                   cudnn=torch.backends.cudnn.version(),
                   tf32=bool(torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32),
                   deterministic=("warn-only" if torch.is_deterministic_algorithms_warn_only_enabled()
                                  else True) if torch.are_deterministic_algorithms_enabled() else False)
        return out
    hw = hardware_isa()
    out.update(cpu=cpu_model(), hardware_isa=hw, aten_capability=torch.backends.cpu.get_cpu_capability(),
               onednn_isa=_onednn_isa(hw), mkl_instructions=os.environ.get("MKL_ENABLE_INSTRUCTIONS"),
               **cpu_identity(), onednn_isa_detail=onednn_isa_detail())
    return out


def verifiable_cuda() -> None:
    """Settings for GPU runs that go into a store: TF32 off for cuDNN's convolutions and for
    matmuls, and deterministic algorithms (``CUBLAS_WORKSPACE_CONFIG=:4096:8`` is set when absent;
    it must be set before CUDA starts, so call this first). TF32 rounds products to 2^-11 (4.9e-4)
    instead of fp32's 2^-24: a GPU-computed run would then not replay on a CPU within
    :data:`CROSS_RTOL`, which is derived for fp32 kernels; with it off the GPU rounds as the CPU
    does (another summation order only), and a run repeats bit for bit on the same GPU model.
    An op without a deterministic CUDA kernel warns rather than stops a run (``warn_only``: a
    window's runs are not lost to one op; ``benchmarks/gpu_check.py`` runs strict and names it).
    :func:`current` records both settings of a CUDA run."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)


#: :func:`verifiable`'s scopes open in this process (threads of one sweep), and the settings
#: the first one found, restored when the last one closes
_SCOPES = {"open": 0, "saved": None}
_SCOPES_LOCK = threading.Lock()


@contextlib.contextmanager
def verifiable(device: str | torch.device | None = None) -> Iterator[None]:
    """:func:`verifiable_cuda`'s settings while a run that is stored computes on ``device``, and
    the process's own settings (TF32, deterministic algorithms) back afterwards; nothing changes
    for a CPU (or None: the CPU). :meth:`fedlib.store.Store.compute` computes under it, so an
    entry a sweep stores from a GPU repeats bit for bit on the same GPU model and replays on a
    CPU within :data:`CROSS_RTOL`, whatever the caller's process had set (a strict deterministic
    mode stays strict); a notebook's own GPU work around it keeps torch's defaults. The settings
    are the process's: runs in several threads (a thread-pool executor, a Dask worker's threads)
    share one scope, which restores the settings when the last of them ends.
    ``CUBLAS_WORKSPACE_CONFIG`` stays set (cuBLAS reads it when it first computes: a process that
    used a GPU's matmuls before should set it at start-up, or call :func:`verifiable_cuda` first)."""
    if torch.device(device if device is not None else "cpu").type != "cuda":
        yield
        return
    with _SCOPES_LOCK:
        if _SCOPES["open"] == 0:
            saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32,
                     torch.are_deterministic_algorithms_enabled(),
                     torch.is_deterministic_algorithms_warn_only_enabled())
            verifiable_cuda()
            if saved[2] and not saved[3]:           # a caller's strict mode stays strict
                torch.use_deterministic_algorithms(True)
            _SCOPES["saved"] = saved
        _SCOPES["open"] += 1
    try:
        yield
    finally:
        with _SCOPES_LOCK:
            _SCOPES["open"] -= 1
            if _SCOPES["open"] == 0:
                saved = _SCOPES["saved"]
                torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved[:2]
                torch.use_deterministic_algorithms(saved[2], warn_only=saved[3])


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; the platform's processor elsewhere)."""
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_identity() -> dict:
    """Which CPU this is, beyond its name: ``cpu_vendor`` (e.g. ``GenuineIntel``, ``AuthenticAMD``),
    ``cpu_family`` and ``cpu_model_id`` (the numbers ``/proc/cpuinfo`` gives: Zen 3 is family 25
    model 1, Zen 4 family 25 model 17, an Intel Xeon of the fleet family 6 model 207) and
    ``cpu_cache`` (its "cache size" line: oneDNN and MKL size their blocking by the caches).
    Elsewhere the vendor is the platform's processor and the numbers are None."""
    if not _cpuinfo():
        return {"cpu_vendor": platform.processor() or platform.machine() or None, "cpu_family": None,
                "cpu_model_id": None, "cpu_cache": None}
    return {"cpu_vendor": _cpuinfo_field("vendor_id"), "cpu_family": _cpuinfo_field("cpu family"),
            "cpu_model_id": _cpuinfo_field("model"), "cpu_cache": _cpuinfo_field("cache size")}


#: what must be equal for the same kernels at one instruction-set level (every record has these)
_SIGNATURE_FIELDS = ("device", "torch", "torch_threads", "hardware_isa", "aten_capability", "onednn_isa",
                     "mkl_instructions", "gpu", "cuda", "cudnn", "tf32", "deterministic")

#: which CPU computed a run (records written before these fields existed name the CPU only)
IDENTITY_FIELDS = ("cpu", "cpu_vendor", "cpu_family", "cpu_model_id", "cpu_cache", "onednn_isa_detail")


def signature(arith: dict) -> tuple:
    """What must be equal for two runs to give the same bits: every field of :func:`current`
    (levels, threads, torch build, and the CPU's identity, :data:`IDENTITY_FIELDS`). A record
    stored before the identity was recorded cannot be compared by this tuple: use
    :func:`same_kernels`."""
    return tuple(arith.get(k) for k in (*_SIGNATURE_FIELDS, *IDENTITY_FIELDS))


def _identity_text(arith: dict) -> str:
    if arith.get("cpu_vendor") is None and arith.get("cpu_model_id") is None:
        return str(arith.get("cpu") or "an unnamed CPU")
    return (f"{arith.get('cpu')} ({arith.get('cpu_vendor')} family {arith.get('cpu_family')} model "
            f"{arith.get('cpu_model_id')}, cache {arith.get('cpu_cache')}, oneDNN "
            f"{arith.get('onednn_isa_detail')})")


def same_kernels(stored: dict, here: dict) -> tuple[bool, str]:
    """Whether a run recorded with arithmetic ``stored`` gives the same bits when computed with
    ``here``, and if not, why not (one phrase naming what differs).

    The same when every field of :func:`signature` agrees. A ``stored`` record from before the
    CPU's identity was recorded (no ``cpu_vendor`` field) is judged by what it has, as before:
    the levels, threads and torch build, and the CPU's name where it names one; a CPU of another
    name is another CPU (its kernels may differ at the same level), one of the same name the
    same (the rule these records were verified by when they were stored)."""
    if stored.get("device") != here.get("device"):
        return False, f"another device ({stored.get('device')} vs {here.get('device')})"
    level = [k for k in _SIGNATURE_FIELDS if stored.get(k) != here.get(k)]
    if level:
        return False, "another " + ", ".join(level)
    if stored.get("device") == "cuda":
        return True, ""
    if "cpu_vendor" in stored:
        other = [k for k in IDENTITY_FIELDS if stored.get(k) != here.get(k)]
        if other:
            return False, (f"another CPU ({', '.join(other)}: {_identity_text(stored)} vs "
                           f"{_identity_text(here)})")
        return True, ""
    if stored.get("cpu") and here.get("cpu") and stored["cpu"] != here["cpu"]:
        return False, (f"another CPU model ({stored['cpu']} vs {here['cpu']}; the stored record names the "
                       "model only)")
    return True, ""


def describe(arith: dict) -> str:
    """A short name of an arithmetic, e.g. ``cpu AVX2 (oneDNN avx2, hardware avx2) on AMD EPYC
    (AuthenticAMD family 25 model 1, ...), 1 thread, torch 2.13.0+cpu``."""
    if arith.get("device") == "cuda":
        text = f"cuda {arith.get('gpu')} (CUDA {arith.get('cuda')}, cuDNN {arith.get('cudnn')}"
        if "tf32" in arith:
            text += f", TF32 {'on' if arith['tf32'] else 'off'}"
        det = arith.get("deterministic")
        text += (f", deterministic{' (warn-only)' if det == 'warn-only' else ''})" if det else ")")
    else:
        mkl = f", MKL {arith['mkl_instructions']}" if arith.get("mkl_instructions") else ""
        text = (f"cpu {arith.get('aten_capability')} (oneDNN {arith.get('onednn_isa')}, hardware "
                f"{arith.get('hardware_isa')}{mkl})")
        if arith.get("cpu"):
            text += f" on {_identity_text(arith)}"
    n = arith.get("torch_threads")
    text += f", {n} thread{'s' if n != 1 else ''}" if n is not None else ""
    text += f", torch {arith['torch']}" if arith.get("torch") else ""
    return text + (" [inferred: not recorded when it was computed]" if arith.get("inferred") else "")


def lowered_isa_env(level: str) -> dict[str, str]:
    """Environment variables that make a new process compute with ``level``'s kernels
    (``"avx2"`` or ``"sse41"``, the baseline every x86-64 CPU here has) instead of its best."""
    table = {"avx2": ("avx2", "AVX2", "AVX2"), "sse41": ("default", "SSE41", "SSE4_2")}
    if level not in table:
        raise InputError(f"level: must be one of {', '.join(table)}; got {level!r}")
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
            raise InputError("anchor: rounds, step_norm and step_proj differ in length")
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
                if _diverged_alike(a, b):     # the run diverged by this round in both: reproduced
                    continue
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
            for a, b in ((n, got[r][0]), (p, got[r][1])):
                if not _diverged_alike(a, b):
                    worst = max(worst, abs(a - b) / scale)
        return worst


def _diverged_alike(a: float, b: float) -> bool:
    """Both values non-finite the same way (NaN and NaN, or the same infinity): a run that
    diverged by this round, stored and replayed alike (NaN never equals NaN, so a plain
    comparison would call it a difference)."""
    return (math.isnan(a) and math.isnan(b)) or (math.isinf(a) and a == b)


class AnchorRecorder:
    """Collects a run's :class:`Anchor` from its start ``x0``: call :meth:`after` with the round
    count and the model after every round; it records the first :data:`ANCHOR_ROUNDS`."""

    #: seed of the fixed projection direction (float64, on the CPU, any model size)
    SEED = 20_260_101

    def __init__(self, x0: torch.Tensor, rounds: int = ANCHOR_ROUNDS, recorded: dict | None = None):
        if not isinstance(x0, torch.Tensor):
            raise InputError(f"x0: must be the starting model, a tensor, got {type(x0).__name__}")
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


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
