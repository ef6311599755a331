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
from fedlib.store import Store

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
    assert arithmetic.signature({**a, "cpu": "another model name"}) == arithmetic.signature(a)
    for field, value in (("torch_threads", 7), ("aten_capability", "DEFAULT"), ("onednn_isa", "sse41"),
                         ("torch", "1.0"), ("device", "cuda")):
        assert arithmetic.signature({**a, field: value}) != arithmetic.signature(a), field
    assert "thread" in arithmetic.describe(a) and str(a["aten_capability"]) in arithmetic.describe(a)


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


def signature_is_legacy() -> bool:
    """Whether this machine computes as the AVX-512 machines that computed the legacy entries."""
    here = {**arithmetic.current(), "torch_threads": 1}
    return arithmetic.signature(here) == arithmetic.signature(
        {**arithmetic.LEGACY, "torch": torch.__version__, "torch_threads": 1})


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
    if signature_is_legacy():
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
    meta_file.write_text(json.dumps(stored))
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
