"""fedlib.arithmetic and the two checks of fedlib.verify: exact on the same arithmetic, the replay
anchor across CPUs (another instruction set forced with environment variables)."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import fedlib
from fedlib import ExperimentConfig, algorithms, arithmetic
from fedlib.__main__ import main
from fedlib.store import Store, write_meta

ROOT = Path(__file__).resolve().parents[1]
#: the embedded neural task (conv + linear layers, so oneDNN and BLAS kernels both run), small
DIGITS = {"num_clients": 6, "alpha": 0.5, "batch_size": 16, "seed": 0, "dropout": 0.0,
          "train_eval_per_client": 20}


def _digits(**kw):
    d = dict(algorithm="fedsum", problem="digits_cnn", participation="bernoulli", rounds=6,
             problem_args=DIGITS, participation_args={"p": 0.6}, local_steps=3, lr_local=0.05, eval_every=3)
    d.update(kw)
    return ExperimentConfig(**d)


def _other_cpu(entry):
    """The same entry as if computed on a CPU of another instruction set (only its record changes)."""
    arith = dict(entry.meta["arithmetic"])
    arith["aten_capability"] = "AVX512" if arith.get("aten_capability") != "AVX512" else "AVX2"
    return dataclasses.replace(entry, meta={**entry.meta, "arithmetic": arith})


# ------------------------------------------------------------------------------ the record
def test_instruction_set_from_flags_and_environment(monkeypatch):
    zen4 = {"sse4_1", "avx", "avx2", "avx512f", "avx512bw", "avx512vl", "avx512dq"}
    assert arithmetic.hardware_isa(zen4) == "avx512"
    assert arithmetic.hardware_isa(zen4 - {"avx512bw"}) == "avx2"       # oneDNN's avx512_core needs all four
    assert arithmetic.hardware_isa({"sse4_1", "avx"}) == "avx" and arithmetic.hardware_isa(set()) == "unknown"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert arithmetic._onednn_isa("avx512") == "avx2" and arithmetic._onednn_isa("avx") == "avx"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "ALL")
    assert arithmetic._onednn_isa("avx512") == "avx512"
    with pytest.raises(ValueError, match="^level: must be one of avx2, sse41; got 'avx9'"):
        arithmetic.lowered_isa_env("avx9")


def test_current_arithmetic_and_its_signature():
    a = arithmetic.current()
    assert a["device"] == "cpu" and a["torch"] == torch.__version__
    assert a["aten_capability"] == torch.backends.cpu.get_cpu_capability()
    assert a["torch_threads"] == torch.get_num_threads() and a["hardware_isa"] == arithmetic.hardware_isa()
    assert arithmetic.same_kernels(a, dict(a)) == (True, "")
    # each value differs from this machine's, whichever CPU of the fleet runs the test (a fixed
    # "GenuineIntel" or "207" is this machine's own on the Intel Xeon kind)
    fleet = {"cpu_vendor": ("GenuineIntel", "AuthenticAMD"), "cpu_model_id": ("207", "17"),
             "cpu_family": ("6", "25"), "cpu_cache": ("322560 KB", "1024 KB"),
             "onednn_isa_detail": ("AVX512_CORE_AMX", "AVX2"), "aten_capability": ("DEFAULT", "AVX2"),
             "onednn_isa": ("sse41", "avx2")}
    other = {f: next(v for v in values if v != a.get(f)) for f, values in fleet.items()}
    for field, value in (("torch_threads", a["torch_threads"] + 1), ("torch", "1.0"), ("device", "cuda"),
                         ("cpu", f"not {a['cpu']}"), *other.items()):
        assert value != a.get(field), field
        assert arithmetic.signature({**a, field: value}) != arithmetic.signature(a), field
        same, why = arithmetic.same_kernels({**a, field: value}, a)
        assert not same and field in why, (field, why)
    assert "thread" in arithmetic.describe(a) and str(a["aten_capability"]) in arithmetic.describe(a)
    assert a["cpu"] in arithmetic.describe(a)


#: /proc/cpuinfo of the three CPU kinds of the fleet (first processor; flags cut to those that count)
_BASE_FLAGS = "fpu sse sse2 ssse3 sse4_1 sse4_2 fma avx avx2"
_AVX512 = "avx512f avx512dq avx512bw avx512vl"
CPUINFO = {
    "zen3": ("AuthenticAMD", "25", "1", "AMD EPYC", "512 KB", _BASE_FLAGS),
    "zen4": ("AuthenticAMD", "25", "17", "AMD EPYC", "1024 KB",
             f"{_BASE_FLAGS} {_AVX512} avx512_vnni avx512_bf16"),
    "xeon": ("GenuineIntel", "6", "207", "INTEL(R) XEON(R) PLATINUM 8581C CPU @ 2.30GHz", "266240 KB",
             f"{_BASE_FLAGS} avx_vnni {_AVX512} avx512_vnni avx512_bf16 avx512_fp16 "
             "amx_bf16 amx_tile amx_int8"),
}


def _cpuinfo(kind: str) -> str:
    vendor, family, model, name, cache, flags = CPUINFO[kind]
    return (f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
            f"model name\t: {name}\nstepping\t: 1\ncache size\t: {cache}\nflags\t\t: {flags}\n\n"
            f"processor\t: 1\nvendor_id\t: {vendor}\n")


def test_the_cpu_identity_and_onednn_detail_of_each_kind_of_the_fleet(monkeypatch):
    expect = {"zen3": ("avx2", "AVX2"), "zen4": ("avx512", "AVX512_CORE_BF16"),
              "xeon": ("avx512", "AVX512_CORE_AMX")}
    seen = {}
    for kind, (level, detail) in expect.items():
        monkeypatch.setattr(arithmetic, "_cpuinfo", lambda kind=kind: _cpuinfo(kind))
        vendor, family, model, name, cache, _ = CPUINFO[kind]
        assert arithmetic.hardware_isa() == level and arithmetic.onednn_isa_detail() == detail, kind
        assert arithmetic.cpu_model() == name
        ident = arithmetic.cpu_identity()
        assert ident == {"cpu_vendor": vendor, "cpu_family": family, "cpu_model_id": model,
                         "cpu_cache": cache}
        seen[kind] = ident
    assert seen["zen3"] != seen["zen4"]                        # one name, "AMD EPYC", two CPUs
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")           # the lowered environment caps the detail
    assert arithmetic.onednn_isa_detail() == "AVX2"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE")
    assert arithmetic.onednn_isa_detail() == "AVX512_CORE"
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    assert arithmetic.onednn_isa_detail({"sse4_1", "avx", "avx2", "avx_vnni"}) == "AVX2_VNNI"
    assert arithmetic.onednn_isa_detail(set()) == "unknown"
    monkeypatch.setattr(arithmetic, "_cpuinfo", lambda: "")      # no /proc/cpuinfo (macOS, Windows)
    assert arithmetic.cpu_identity()["cpu_family"] is None and arithmetic.cpu_model()


def test_same_level_on_another_cpu_is_not_the_same_arithmetic():
    """An Intel Xeon and an AMD EPYC both compute at the AVX-512 level with one thread, yet their
    kernels differ (1.5e-6 after one round of notebook 08's runs): only the identity tells them apart.
    Records from before the identity was stored name the CPU only, and are judged by that name."""
    base = {"device": "cpu", "torch": "2.13.0+cpu", "torch_threads": 1, "hardware_isa": "avx512",
            "aten_capability": "AVX512", "onednn_isa": "avx512", "mkl_instructions": None}
    zen4 = {**base, "cpu": "AMD EPYC", "cpu_vendor": "AuthenticAMD", "cpu_family": "25", "cpu_model_id": "17",
            "cpu_cache": "1024 KB", "onednn_isa_detail": "AVX512_CORE_BF16"}
    xeon = {**base, "cpu": CPUINFO["xeon"][3], "cpu_vendor": "GenuineIntel", "cpu_family": "6",
            "cpu_model_id": "207", "cpu_cache": "266240 KB", "onednn_isa_detail": "AVX512_CORE_AMX"}
    assert arithmetic.same_kernels(zen4, dict(zen4)) == (True, "")
    same, why = arithmetic.same_kernels(zen4, xeon)
    assert not same and "another CPU" in why and "GenuineIntel family 6 model 207" in why
    old_record = {**base, "cpu": "AMD EPYC"}                   # as the committed stores' records are
    assert arithmetic.same_kernels(old_record, zen4) == (True, "")
    same, why = arithmetic.same_kernels(old_record, xeon)
    assert not same and "another CPU model (AMD EPYC vs INTEL" in why
    assert not arithmetic.same_kernels({**zen4, "onednn_isa": "avx2"}, zen4)[0]


# ------------------------------------------------------------------------------ anchors
def test_a_run_records_its_anchor_in_float64(quad):
    seen = {}
    x0 = quad.initial_params(0)
    res = fedlib.run("fedsum", quad, {"kind": "bernoulli", "p": 0.5}, rounds=6, local_steps=2, lr_local=0.05,
                     progress=False, callback=lambda t, x: seen.setdefault(t + 1, x.clone()))
    a = arithmetic.Anchor.from_dict(res.info["anchor"])
    assert a.rounds == (1, 2, 3)
    g = torch.Generator().manual_seed(arithmetic.AnchorRecorder.SEED)
    v = torch.randn(quad.dim, generator=g, dtype=torch.float64)
    v = v / v.norm()
    for r, n, p in zip(a.rounds, a.step_norm, a.step_proj, strict=True):
        d = seen[r].double() - x0.double()
        assert n == pytest.approx(float(d.norm()), rel=1e-15) and p == pytest.approx(float(d @ v), rel=1e-12)


def test_a_resumed_run_keeps_the_anchor_of_its_first_rounds(tmp_path, quad):
    sched = fedlib.participation.build("bernoulli", quad.num_clients, 9, seed=0, p=0.5, local_steps=2)
    ck = tmp_path / "run.ckpt"
    full = fedlib.run("fedavg", quad, sched, lr_local=0.05, progress=False)

    def stop(t, x):
        if t + 1 == 5:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        fedlib.run("fedavg", quad, sched, lr_local=0.05, progress=False, checkpoint=ck, checkpoint_every=4,
                   callback=stop)
    resumed = fedlib.run("fedavg", quad, sched, lr_local=0.05, progress=False, checkpoint=ck)
    assert resumed.info["anchor"] == full.info["anchor"] and len(full.info["anchor"]["rounds"]) == 3


def test_anchor_comparison_names_each_value_beyond_the_tolerance():
    a = arithmetic.Anchor((1, 2), (1.0, 2.0), (0.5, -0.25))
    assert a.compare(a) == [] and a.max_rel(a) == 0.0
    moved = arithmetic.Anchor((1, 2), (1.0 + 5e-4, 2.0 * 1.01), (0.5, -0.25))
    rows = a.compare(moved)
    assert [(r["round"], r["quantity"]) for r in rows] == [(2, "step_norm")]
    assert a.compare(arithmetic.Anchor((1,), (1.0,), (0.5,)))[0]["round"] == 2      # a missing round
    # a projection near zero is judged on the displacement's size, not on its own
    tiny = arithmetic.Anchor((1,), (1.0,), (1e-9,))
    assert tiny.compare(arithmetic.Anchor((1,), (1.0,), (2e-9,))) == []


def signature_is_legacy(cpu: str) -> bool:
    """Whether this machine computes as the AVX-512 machines that computed the legacy entries
    (stored on a CPU named ``cpu``)."""
    here = {**arithmetic.current(), "torch_threads": 1}
    return arithmetic.same_kernels({**arithmetic.LEGACY, "torch": torch.__version__, "torch_threads": 1,
                                    "cpu": cpu}, here)[0]


# ------------------------------------------------------------------------------ verify: which check
def test_an_entry_records_its_arithmetic_and_passes_the_exact_check(tmp_path):
    c = _digits()
    fedlib.sweep([c], tmp_path, progress=False, torch_threads=1)
    entry = Store(tmp_path).get(c)
    assert entry.meta["arithmetic"]["torch_threads"] == 1 == entry.meta["torch_threads"]
    assert entry.meta["anchor"]["rounds"] == [1, 2, 3]
    rep = fedlib.verify(entry)
    assert rep.check == "exact" and rep.ok and rep.compared == [0, 3] and "anchor" in rep.max_rel
    assert rep.max_rel["anchor"] == 0.0                                # the same kernels: the same bits
    assert "computed and replayed on cpu" in rep.reason


def test_the_cross_cpu_check_passes_a_true_replay_and_fails_altered_configs_and_code(tmp_path, monkeypatch):
    c = _digits()
    fedlib.sweep([c], tmp_path, progress=False, torch_threads=1)
    entry = _other_cpu(Store(tmp_path).get(c))
    rep = fedlib.verify(entry)
    assert rep.check == "cross-cpu" and rep.ok and rep.compared == [] and rep.rounds == 3, str(rep)
    assert rep.rtol == arithmetic.CROSS_RTOL and "the kernels round differently" in rep.reason
    assert "AVX512" in str(rep) or "AVX2" in str(rep)
    # each alteration must fail the cross-CPU check (replayed config differs from the stored run's)
    altered = {
        "rate +1%": c.replace(lr_local=c.lr_local * 1.01),
        "server rate": c.replace(lr_global=0.9),
        "seed": c.replace(seed=1),
        "schedule": c.replace(participation_args={"p": 0.5}),
        "data split": c.replace(problem_args={**DIGITS, "alpha": 0.3}),
        "local steps": c.replace(local_steps=2),
        "algorithm": c.replace(algorithm="fedavg"),
    }
    for what, cfg in altered.items():
        bad = fedlib.verify(dataclasses.replace(entry, config=cfg))
        assert bad.check == "cross-cpu" and bad.failed, f"{what}: {bad}"
        assert set(bad.mismatches["metric"]) <= {"anchor.step_norm", "anchor.step_proj"}
    # a changed update rule (FedSUM's server step scaled by 0.995) fails it too
    original = algorithms.get("fedsum").round

    def nudged(self, x, r):
        return x + 0.995 * (original(self, x, r) - x)
    monkeypatch.setattr(algorithms.get("fedsum"), "round", nudged)
    bad = fedlib.verify(entry)
    assert bad.failed and "anchor.step_norm" in set(bad.mismatches["metric"]), str(bad)


def _another_model(text: str) -> str:
    """This machine's /proc/cpuinfo as a CPU of another model with the same flags (so the same level)."""
    import re
    text = re.sub(r"^model\s*:.*$", "model\t\t: 250", text, flags=re.M)
    return re.sub(r"^model name\s*:.*$", "model name\t: Faked CPU 9000", text, flags=re.M)


def test_another_cpu_model_at_the_same_level_gets_the_cross_cpu_check(tmp_path, monkeypatch):
    """The failure seen on an Intel Xeon: an entry computed on an AMD EPYC at the same level was
    judged by the exact check, and a kernel difference of 1.5e-6 read as a changed run."""
    if not arithmetic._cpuinfo():
        pytest.skip("no /proc/cpuinfo here to fake another model from")
    c = _digits()
    fedlib.sweep([c], tmp_path, progress=False, torch_threads=1)
    entry = Store(tmp_path).get(c)
    stored = entry.meta["arithmetic"]
    assert {k: stored[k] for k in ("cpu_vendor", "cpu_family", "cpu_model_id")} == \
        {k: arithmetic.cpu_identity()[k] for k in ("cpu_vendor", "cpu_family", "cpu_model_id")}
    assert stored["onednn_isa_detail"] == arithmetic.onednn_isa_detail()
    # the replay's kernels differ from the stored run's by 1e-5 in the evaluations (as another CPU's would)
    moved = entry.history.assign(loss=entry.history["loss"] * (1 + 1e-5))
    kernels_moved = dataclasses.replace(entry, history=moved)
    assert fedlib.verify(kernels_moved, check_digests=False).failed       # the same CPU: a real difference
    faked = _another_model(arithmetic._cpuinfo())
    monkeypatch.setattr(arithmetic, "_cpuinfo", lambda: faked)
    assert arithmetic.hardware_isa() == stored["hardware_isa"]           # the same level ...
    rep = fedlib.verify(kernels_moved, check_digests=False)              # ... another model
    assert rep.check == "cross-cpu" and rep.ok, str(rep)
    assert "another CPU (cpu, cpu_model_id" in rep.reason and "Faked CPU 9000" in rep.reason, rep.reason
    # a record from before the identity was stored names the CPU only: another name is another CPU
    old = {k: v for k, v in stored.items() if k not in arithmetic.IDENTITY_FIELDS or k == "cpu"}
    rep = fedlib.verify(dataclasses.replace(kernels_moved, meta={**entry.meta, "arithmetic": old}),
                        check_digests=False)
    assert rep.check == "cross-cpu" and rep.ok and "the stored record names the model only" in rep.reason
    # ... and without an anchor it is not checkable here, never "differs"
    rep = fedlib.verify(dataclasses.replace(kernels_moved, meta={**entry.meta, "arithmetic": old,
                                                                 "anchor": None}), check_digests=False)
    assert rep.status == "unchecked" and not rep.failed, str(rep)
    # a changed run still fails the cross-CPU check on the other model
    bad = fedlib.verify(dataclasses.replace(entry, config=c.replace(lr_local=c.lr_local * 1.01)))
    assert bad.check == "cross-cpu" and bad.failed


def test_another_cpu_without_an_anchor_is_reported_not_failed(tmp_path, capsys):
    c = _digits(rounds=3)
    fedlib.sweep([c], tmp_path, progress=False, torch_threads=1)
    entry = Store(tmp_path).get(c)
    meta = {k: v for k, v in entry.meta.items() if k not in ("anchor", "arithmetic")}   # as stored before
    legacy = dataclasses.replace(entry, meta=meta)
    rep = fedlib.verify(legacy)                  # computed here: the exact check applies, and it matches
    assert rep.ok and rep.check == "exact" and "its arithmetic was not recorded" in rep.reason
    # the same legacy entry as if another CPU's kernels had moved its evaluations by 1e-4
    moved = legacy.history.assign(loss=legacy.history["loss"] * (1 + 1e-4))
    rep = fedlib.verify(dataclasses.replace(legacy, history=moved), check_digests=False)
    if signature_is_legacy(entry.meta["cpu"]):
        assert rep.failed                        # the machine kind assumed for legacy entries: a real failure
    else:
        assert rep.status == "unchecked" and not rep.failed and rep.check == "none", str(rep)
        assert "which the kernels alone can cause" in rep.reason and "has no anchor" in rep.reason
    no_anchor = dataclasses.replace(_other_cpu(entry), meta={**_other_cpu(entry).meta, "anchor": None})
    rep = fedlib.verify(no_anchor)
    assert rep.status == "unchecked" and "only the cross-CPU check can apply, and this entry has no anchor" \
        in str(rep)
    meta_file = entry.path / "meta.json"
    stored = json.loads(meta_file.read_text())
    stored["arithmetic"]["aten_capability"] = "AVX1024"
    stored["anchor"] = None
    write_meta(entry.path, stored)            # as fedlib wrote it on that machine: sealed
    assert main(["verify", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"skip {entry.path.name}: not checked" in out and "1 not checkable here; 0 differ" in out


# ------------------------------------------------------------------------------ another ISA, for real
def _replay_in_child(entry_path: Path, env_extra: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "fedlib", "verify", str(entry_path)], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("level", ["avx2", "sse41"])
def test_a_stored_entry_replays_under_a_lowered_instruction_set(level, tmp_path):
    """The entry is computed with this machine's best kernels, then replayed in a process that
    ATen, oneDNN and MKL tell to use ``level``'s: the exact check cannot apply, the cross-CPU
    check must pass."""
    if level == "avx2" and arithmetic.hardware_isa() != "avx512":
        pytest.skip(f"this CPU ({arithmetic.hardware_isa()}) has no AVX-512: it computes with AVX2 kernels "
                    "already, and the AVX-512 side cannot be forced on it")
    if arithmetic.hardware_isa() not in ("avx2", "avx512"):
        pytest.skip(f"this CPU's best kernels ({arithmetic.hardware_isa()}) are the baseline already")
    c = _digits(algorithm="scaffold", rounds=4)
    fedlib.sweep([c], tmp_path, progress=False, torch_threads=1)
    entry = Store(tmp_path).get(c)
    proc = _replay_in_child(entry.path, arithmetic.lowered_isa_env(level))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cross-cpu check" in proc.stdout and "1 by the cross-CPU check" in proc.stdout, proc.stdout
    same = _replay_in_child(entry.path, {})
    assert same.returncode == 0 and "1 by the exact check" in same.stdout, same.stdout + same.stderr


def test_the_lowered_environment_changes_the_kernels_torch_reports():
    env = {**os.environ, **arithmetic.lowered_isa_env("sse41"), "PYTHONPATH": str(ROOT)}
    code = "import json, fedlib.arithmetic as a; print(json.dumps(a.current()))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    rec = json.loads(out.stdout)
    assert rec["aten_capability"] == "DEFAULT" and rec["onednn_isa"] == "sse41"
    assert rec["mkl_instructions"] == "SSE4_2"
    assert np.isfinite(arithmetic.CROSS_RTOL) and 0 < arithmetic.CROSS_RTOL < 1e-2


def test_an_anchor_that_diverged_alike_reproduces_and_one_that_diverged_alone_differs():
    """A grid run that diverges inside the anchor's rounds stores NaN there; its replay giving
    NaN at the same round reproduces it (issue 51: a diverging run judged 'differ' by NaN != NaN),
    while a replay that stays finite, or diverges elsewhere, still differs."""
    import math

    from fedlib.arithmetic import Anchor
    nan = math.nan
    stored = Anchor((1, 2), (0.5, nan), (0.01, nan))
    assert stored.compare(Anchor((1, 2), (0.5, nan), (0.01, nan))) == []
    assert stored.max_rel(Anchor((1, 2), (0.5, nan), (0.01, nan))) == 0.0
    rows = stored.compare(Anchor((1, 2), (0.5, 3.0), (0.01, 0.2)))
    assert [r["quantity"] for r in rows] == ["step_norm", "step_proj"] and all(r["round"] == 2 for r in rows)
    assert stored.compare(Anchor((1, 2), (nan, nan), (nan, nan)))[0]["round"] == 1


def _gpu_settings() -> tuple:
    return (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32,
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled())


@pytest.fixture
def torch_defaults(monkeypatch):
    """torch's GPU arithmetic settings at their defaults (cuDNN's TF32 on, matmuls' off, no
    deterministic algorithms), and as they were after the test."""
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = _gpu_settings()
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False
    torch.use_deterministic_algorithms(False)
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before[:2]
    torch.use_deterministic_algorithms(before[2], warn_only=before[3])


@pytest.mark.usefixtures("torch_defaults")
def test_verifiable_sets_the_campaigns_gpu_settings_for_cuda_and_gives_the_process_its_own_back():
    defaults = _gpu_settings()
    with arithmetic.verifiable("cuda:0"):
        assert _gpu_settings() == (False, False, True, True)       # TF32 off, deterministic (warn-only)
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert _gpu_settings() == defaults
    with pytest.raises(KeyError), arithmetic.verifiable(torch.device("cuda")):
        raise KeyError("a run that raises")
    assert _gpu_settings() == defaults                             # restored on an error too
    torch.use_deterministic_algorithms(True)                        # the caller's strict mode is kept
    with arithmetic.verifiable("cuda"):
        assert _gpu_settings() == (False, False, True, False)
    assert _gpu_settings() == (True, False, True, False)


@pytest.mark.usefixtures("torch_defaults")
@pytest.mark.parametrize("device", [None, "cpu", torch.device("cpu")])
def test_verifiable_leaves_a_cpu_run_as_the_process_set_it(device):
    defaults = _gpu_settings()
    with arithmetic.verifiable(device):
        assert _gpu_settings() == defaults
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ


@pytest.mark.usefixtures("torch_defaults")
def test_verifiable_scopes_of_threads_share_the_settings_until_the_last_ends():
    """Runs of a thread-pool sweep overlap: the first scope to end must not hand the torch
    defaults back while another run computes; the last one does."""
    import threading
    defaults, seen = _gpu_settings(), {}
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with arithmetic.verifiable("cuda"):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def b():
        a_in.wait(10)
        with arithmetic.verifiable("cuda"):
            b_in.set()
            a_out.wait(10)
            seen["b after a ended"] = _gpu_settings()
    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen["b after a ended"] == (False, False, True, True)
    assert _gpu_settings() == defaults


@pytest.mark.usefixtures("torch_defaults")
@pytest.mark.parametrize("how", ["argument", "problem_args"])
def test_store_computes_a_gpu_run_under_verifiable_settings_and_records_them(how, tmp_path, monkeypatch):
    """Store.compute (so sweep, and its workers) runs a GPU run with TF32 off and deterministic
    algorithms, the device named by its argument or by the problem's ``device``, and records the
    arithmetic before the caller's settings are back. No GPU is needed to see the settings the run
    and the record are handed: this machine is made to "have" the device, and the run fails at
    once (an error entry, whose meta is written as an ok run's)."""
    import fedlib.store as store_mod
    seen = {}

    def fake_run(*a, **k):
        seen["run"] = _gpu_settings()
        raise RuntimeError("stops the run before it computes")

    def fake_current(device=None):
        seen["recorded"] = _gpu_settings()
        return {"device": torch.device(device).type}
    monkeypatch.setattr(store_mod, "_device", lambda d, field="device": torch.device(d))
    monkeypatch.setattr(store_mod, "run_config", fake_run)
    monkeypatch.setattr(store_mod.arithmetic, "current", fake_current)
    cfg = _digits(problem_args={**DIGITS, **({"device": "cuda"} if how == "problem_args" else {})})
    defaults = _gpu_settings()
    entry = Store(tmp_path).compute(cfg, device="cuda" if how == "argument" else None)
    assert entry.status == "error" and entry.meta["device"] == "cuda"
    assert seen == {"run": (False, False, True, True), "recorded": (False, False, True, True)}
    assert _gpu_settings() == defaults


@pytest.mark.parametrize("how,device,message", [
    ("argument", "cuda:99", r"^device: 'cuda:99' (does not exist|asked for, but this machine has no CUDA)"),
    ("problem_args", "cuda:99", r"^config\.problem_args\.device: 'cuda:99' (does not exist|asked for)"),
    ("problem_args", "gpu", r"^config\.problem_args\.device: 'gpu' is not a device name"),
])
def test_store_stores_nothing_for_a_device_this_machine_lacks(how, device, message, tmp_path):
    """Like missing data, a device this machine lacks (or a misnamed one) is not a property of
    the run: a ValueError naming the field, and no error entry that a sweep would count."""
    cfg = _digits(problem_args={**DIGITS, **({"device": device} if how == "problem_args" else {})})
    with pytest.raises(ValueError, match=message):
        Store(tmp_path).compute(cfg, device=device if how == "argument" else None)
    assert Store(tmp_path).keys() == []
