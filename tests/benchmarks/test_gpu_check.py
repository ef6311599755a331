"""benchmarks/gpu_check.py: the first convolution's forms (``conv_forms``' row) compute the
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
    """The smoke's shapes (S = 4 clients, batch 16; App. H's first convolution, 3 x 3, 'same'
    padding). The zero-channel form adds only exact zeros (0 x 0) to each sum of the engine's form,
    and torch's CPU kernels sum the other products in the same order: its outputs are bit-equal on
    the CPU, its gradients too on most CPU kinds (within the bound below on all) (on a GPU the two
    forms run other kernels, whose difference the
    check's row reports). The clients-innermost form is the engine's on batches in another memory
    layout: the same values, possibly another kernel; unfold + matmul sums the same products in
    another order. Both are held to a bound derived from fp32 rounding, elementwise:

    * output y = sum of n = 9 products w u (one input channel, 3 x 3): each form is within
      gamma_n sum |w u| of the exact value, so the two forms within e_y = 2 gamma_n (|W| @ |U|);
    * weight gradient g = (2/M) sum_m y_m u_m over the m = batch x positions outputs of an entry
      (M: the outputs averaged): the forms' y differ by at most e_y, and each form's sum of m terms
      (its factor 2 y / M rounded twice more) is within gamma_(m+3) sum |y u| of its exact value, so
      |g_a - g_b| <= (2/M) (sum e_y |u| + 2 gamma_(m+3) sum (|y| + e_y) |u|).

    The bounds are worst cases: measured on this project's CPU (torch 2.13, 2026-11-27, 5 x 5
    valid convolutions then), the unfolded outputs came out bit-equal (not asserted: a matmul and
    a convolution kernel may sum in other orders on another CPU) and its gradients within 2.1e-4
    of their bound; a form that computes something else is far outside it (a transposed kernel:
    70x the gradient's bound)."""
    names = [name for name, _, _ in gpu_check.CONV_FORMS]
    assert names == ["vmap conv2d", "clients innermost (channels-last input: cuDNN)",
                     "2 channels, one of zeros", "unfold + matmul"]          # the engine's first
    (_, engine, none), (_, laid, layout), (_, zeros, _), (_, unfolded, _) = gpu_check.CONV_FORMS
    assert none is None and laid is engine and layout is gpu_check.clients_innermost
    w, x = gpu_check.conv_inputs(4, 16, "cpu")
    S, B, out, k = w.shape[0], x.shape[1], w.shape[1], w.shape[-1]
    assert w.shape[2:] == (1, 3, 3)                                   # the model's first layer
    y = vmap(engine)(w, x)
    g = gpu_check.conv_step(engine)(w, x)
    assert y.shape == (S, B, out, 28, 28) and g.shape == w.shape and g.abs().max() > 0   # 'same'

    assert torch.equal(vmap(zeros)(w, x), y)
    g_zeros = gpu_check.conv_step(zeros)(w, x)       # bit-equal on the AMD Zen 4 and Intel kinds;
    # the AMD Zen 3 kind's (AVX2) weight gradient of 2 channels sums in another order (2026-12-03):
    # held to the fp32 bound below, as the other forms

    x_in = layout(x)
    assert torch.equal(x_in, x) and x_in.stride(0) == 1                # the clients innermost
    cols = vmap(lambda x: torch.nn.functional.unfold(x, k, padding=k // 2))(x).double().abs()  # (S, B, 9, P)
    n, positions = cols.shape[2], cols.shape[3]
    e_y = 2 * _gamma(n) * (w.reshape(S, 1, out, n).double().abs() @ cols)           # (S, B, out, P)
    y_flat = y.reshape(S, B, out, positions)
    m, M = B * positions, B * out * positions

    def sums(a):                                         # per weight entry: the sum over m of a |u|
        return torch.einsum("sbop,sbkp->sok", a, cols)
    e_g = 2 / M * (sums(e_y) + 2 * _gamma(m + 3) * sums(y_flat.double().abs() + e_y))
    assert ((g_zeros.double() - g.double()).abs().reshape(S, out, n) <= e_g).all()
    for form, xs in ((unfolded, x), (laid, x_in)):
        y_f, g_f = vmap(form)(w, xs), gpu_check.conv_step(form)(w, xs)
        assert ((y_f.reshape(S, B, out, positions).double() - y_flat.double()).abs() <= e_y).all()
        assert ((g_f.double() - g.double()).abs().reshape(S, out, n) <= e_g).all()


def test_the_campaign_takes_an_option_only_where_faster_and_verifiable(gpu_check, capsys):
    """The decision row (``option_decision``, here of the clients innermost): True only where the
    campaign's path is at least OPTION_GAIN faster with the option, a run with it is bit-equal
    twice and to the run of ``fedlib verify``'s replay engine, and its CPU replay within
    CROSS_RTOL; each failing condition is named. ``gpu_window.sh`` turns the campaign's flag on by
    reading each option's row as the table prints it."""
    c, kw = gpu_check, "clients_innermost"
    lab = c.OPTIONS[kw]
    fast = {c.CAMPAIGN_SPEED: 0.0315, lab["speed"]: 0.0250}
    good = {lab["twice"]: "True (strict; VectorizedEngine(graphs=True, clients_innermost=True))",
            lab["replay"]: "True (VectorizedEngine(graphs=False, clients_innermost=True))",
            lab["cross"]: c.cross_result(2.69e-07)}
    assert c.option_decision(fast, good, kw).startswith("True (25.0 ms against 31.5 ms a round")
    slow = {**fast, lab["speed"]: 0.0315 * (1 - c.OPTION_GAIN / 2)}
    assert c.option_decision(slow, good, kw) == "False (not 5% faster: 30.7 ms against 31.5 ms a round)"
    bad = {lab["twice"]: "False (strict; VectorizedEngine(graphs=True, clients_innermost=True))",
           lab["replay"]: "False (VectorizedEngine(graphs=False, clients_innermost=True))",
           lab["cross"]: c.cross_result(3.1e-03)}
    no = c.option_decision(fast, bad, kw)
    assert no.startswith("False (run twice: False") and f"CPU replay: {c.cross_result(3.1e-03)}" in no
    assert c.cross_result(3.1e-03).endswith("FAILS)") and c.cross_result(2.69e-07).endswith("passes)")
    assert "verify's replay: False" in no
    assert c.option_decision(fast, {**good, lab["replay"]: "False (...)"}, kw).startswith(
        "False (verify's replay: False")
    none = c.option_decision({}, {}, kw)
    assert none.startswith("False (speeds not measured") and "run twice: not measured" in none
    assert "verify's replay: not measured" in none
    tab = c.Table(1.0)
    tab.rows.append((lab["row"], c.option_decision(fast, good, kw)))
    tab.report("App. H", "cuda", "a GPU")
    assert f"| {lab['row']} | True (" in capsys.readouterr().out
    script = (ROOT / "benchmarks" / "gpu_window.sh").read_text()
    assert 'grep -q "$1 | True ("' in script        # measured "<row>": the row as the table prints it
    for kw, labels in c.OPTIONS.items():             # every option's row is read by the window script
        assert f'measured "{labels["row"]}"' in script
        grouped = {c.CAMPAIGN_SPEED: 0.0315, labels["speed"]: 0.0250}
        ok = {labels["twice"]: "True (...)", labels["replay"]: "True (...)",
              labels["cross"]: c.cross_result(1e-7)}
        assert c.option_decision(grouped, ok, kw).startswith("True (25.0 ms against 31.5 ms a round")
        assert c.option_decision(grouped, {}, kw).startswith("False (run twice: not measured")


def test_a_failing_innermost_run_is_a_row_and_the_decision_reads_false(gpu_check, monkeypatch):
    """The runs with the clients innermost are the first of the check on their path (graphs,
    compiled draws, channels-last cuDNN kernels under deterministic algorithms): an error there is
    written as rows, so the check goes on, prints its table (the window script reads the campaign's
    other flags from it) and the decision reads False."""
    import fedlib

    def boom(*args, **kw):
        raise RuntimeError("no deterministic kernel for this path")
    monkeypatch.setattr(fedlib, "run_config", boom)
    monkeypatch.setattr(gpu_check, "verifiable", lambda *a, **kw: None)     # torch's settings untouched
    args = type("Args", (), {"device": "cpu", "compiled": False})()
    for kw, labels in gpu_check.OPTIONS.items():
        rows = gpu_check.option_checks(args, None, None, kw)
        assert set(rows) == {labels[k] for k in ("twice", "replay", "cross", "same")}
        assert all(v.startswith("failed: RuntimeError: no deterministic kernel") for v in rows.values())
        fast = {gpu_check.CAMPAIGN_SPEED: 0.0315, labels["speed"]: 0.0250}
        assert gpu_check.option_decision(fast, rows, kw).startswith("False (run twice: failed: RuntimeError")


def test_the_settings_rows_time_each_setting_on_a_problem_of_its_own(gpu_check, monkeypatch):
    """``settings_speeds``: one row per setting, each timed on a problem built for it (a problem
    keeps its captured CUDA graphs whatever the settings they were captured under), and the
    campaign's settings (deterministic algorithms, warn-only) in force afterwards."""
    built, settings = [], []
    real_build = gpu_check.build

    def build(*a, **kw):
        built.append(a)
        return real_build(*a, **kw)

    def timed(prob, *a):
        settings.append((id(prob), torch.are_deterministic_algorithms_enabled()))
        return 0.5
    monkeypatch.setattr(gpu_check, "build", build)
    monkeypatch.setattr(gpu_check, "seconds_per_round", timed)
    args = type("Args", (), dict(device="cpu", rounds=1, clients=10, per_round=4, local_steps=2, batch=16,
                                 repeat=2, real=False))()
    before = (torch.are_deterministic_algorithms_enabled(),
              torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        rows = gpu_check.settings_speeds(args)
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
    assert len(rows) == 2 and all(v == 0.5 and "(measured only)" in k for k, v in rows.items())
    assert len(built) == 2 and len({p for p, _ in settings}) == 2
    assert [d for _, d in settings] == [False, False, True, True]
