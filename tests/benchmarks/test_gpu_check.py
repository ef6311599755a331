"""benchmarks/gpu_check.py: the first convolution's three forms (``conv_forms``' row) compute the
same outputs and weight gradients on the CPU -- bit for bit where the form only adds exact zeros,
within a bound derived from fp32 rounding where it sums in another order."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from torch.func import vmap

ROOT = Path(__file__).resolve().parents[2]
#: fp32's unit roundoff
U = 2.0 ** -24


@pytest.fixture(scope="module")
def gpu_check():
    """``benchmarks/gpu_check.py`` imported as a module (a script, not part of the package); the
    path entries and the ``engine`` module (``benchmarks/engine.py``) its import adds are taken
    back, so that no other test sees them."""
    path, engine = sys.path[:], sys.modules.get("engine")
    spec = importlib.util.spec_from_file_location("fedlib_benchmarks_gpu_check",
                                                  ROOT / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
        if engine is None:
            sys.modules.pop("engine", None)
        else:
            sys.modules["engine"] = engine
    return module


def _gamma(n: int) -> float:
    """Higham's gamma_n = n u / (1 - n u): a sum of n products in fp32, in any order, is within
    gamma_n times the sum of their magnitudes of the exact sum (Higham 2002, Accuracy and Stability
    of Numerical Algorithms, 2nd ed., eq. 3.5)."""
    return n * U / (1 - n * U)


def test_the_first_convolutions_forms_agree_bit_for_bit_or_within_fp32_rounding(gpu_check):
    """The smoke's shapes (S = 4 clients, batch 16). The zero-channel form adds only exact zeros
    (0 x 0) to each sum of the engine's form, and torch's CPU kernels sum the other products in the
    same order: its outputs and gradients are bit-equal on the CPU (on a GPU the two forms run
    other kernels, whose difference the check's row reports).
    unfold + matmul sums the same products in another order, so it is held to a bound derived
    from fp32 rounding, elementwise:

    * output y = sum of n = 25 products w u (one input channel, 5 x 5): each form is within
      gamma_n sum |w u| of the exact value, so the two forms within e_y = 2 gamma_n (|W| @ |U|);
    * weight gradient g = (2/M) sum_m y_m u_m over the m = batch x positions outputs of an entry
      (M: the outputs averaged): the forms' y differ by at most e_y, and each form's sum of m terms
      (its factor 2 y / M rounded twice more) is within gamma_(m+3) sum |y u| of its exact value, so
      |g_a - g_b| <= (2/M) (sum e_y |u| + 2 gamma_(m+3) sum (|y| + e_y) |u|).

    The bounds are worst cases: measured on this machine's CPU (torch 2.13, 2026-11-27), the
    unfolded outputs came out bit-equal (not asserted: a matmul and a convolution kernel may sum in
    other orders on another CPU) and its gradients within 2.1e-4 of their bound; a form that
    computes something else is far outside it (a transposed kernel: 70x the gradient's bound)."""
    names = [name for name, _ in gpu_check.CONV_FORMS]
    assert names == ["vmap conv2d", "2 channels, one of zeros", "unfold + matmul"]   # the engine's first
    engine, zeros, unfolded = (form for _, form in gpu_check.CONV_FORMS)
    w, x = gpu_check.conv_inputs(4, 16, "cpu")
    S, B, out = w.shape[0], x.shape[1], w.shape[1]
    y = vmap(engine)(w, x)
    g = gpu_check.conv_step(engine)(w, x)
    side = x.shape[-1] - w.shape[-1] + 1                              # a valid convolution's output
    assert y.shape == (S, B, out, side, side) and g.shape == w.shape and g.abs().max() > 0

    assert torch.equal(vmap(zeros)(w, x), y)
    assert torch.equal(gpu_check.conv_step(zeros)(w, x), g)

    y_u, g_u = vmap(unfolded)(w, x), gpu_check.conv_step(unfolded)(w, x)
    cols = vmap(lambda x: torch.nn.functional.unfold(x, w.shape[-1]))(x).double().abs()   # (S, B, 25, P)
    n, positions = cols.shape[2], cols.shape[3]
    e_y = 2 * _gamma(n) * (w.reshape(S, 1, out, n).double().abs() @ cols)           # (S, B, out, P)
    y_flat = y.reshape(S, B, out, positions)
    assert ((y_u.double() - y_flat.double()).abs() <= e_y).all()
    m, M = B * positions, B * out * positions

    def sums(a):                                         # per weight entry: the sum over m of a |u|
        return torch.einsum("sbop,sbkp->sok", a, cols)
    e_g = 2 / M * (sums(e_y) + 2 * _gamma(m + 3) * sums(y_flat.double().abs() + e_y))
    assert ((g_u.double() - g.double()).abs().reshape(S, out, n) <= e_g).all()
