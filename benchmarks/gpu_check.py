"""Issue 48's GPU check in one script: keyed draws bit-equal CPU vs GPU, FedSUM App. H's round
(one run; several runs at once), a run bit-equal twice on the GPU, and the GPU run replaying on
the CPU; prints a table for ``benchmarks/README.md``.

    CUBLAS_WORKSPACE_CONFIG=:4096:8 python benchmarks/gpu_check.py --device cuda --minutes 5
    python benchmarks/gpu_check.py --device cpu --rounds 1          # smoke: the code path, small

FedSUM (You & Pu 2025, arXiv:2512.18275), App. H: N = 100, S = 20, K = 10, batch 128, the MNIST
CNN of Table 2, Dirichlet(0.1) split, real MNIST from $FEDLIB_DATA (random tensors of its shape
otherwise). On a CPU the setting shrinks (N = 10, S = 4, K = 2, batch 16) unless ``--app-h``:
the smoke mode checks the code path, not speed.

Sections in this order, each skipped (and said so) once ``--minutes`` is spent (a section that
started runs to its end; each progress line starts with the seconds since the start):

1. draws: the keyed minibatches and dropout masks (:mod:`fedlib.keyed`) of several steps on the
   device equal the CPU's (numpy path) bit for bit; a CUDA-graph step equals a plain one.
2. one run: s/round of FedSUM's round (``benchmarks/engine.py``'s loop, no evaluation) for the
   vmap engine with legacy draws (today's GPU default), keyed draws, keyed draws with CUDA-graph
   steps (``VectorizedEngine(graphs=True)``), and the reference engine.
   With ``torch.compile`` on CUDA (unless ``--no-compile``) also keyed draws computed compiled,
   their bits checked against the CPU's first: the library's option
   ``VectorizedEngine(compiled_draws=True)`` (``keyed.step_draws`` compiled whole; the campaign's
   ``--compiled-draws``) and ``compiled_draws="threefry"`` (the generator's calls alone, one fused
   kernel each instead of ~150 elementwise ones: the first window's measurement).
   Then ``torch.profiler`` rows: a keyed round without graphs (uncompiled draws: the rows of
   earlier windows), and a round with compiled draws without and with CUDA graphs
   (``compiled_profile``): busy ms per round against its wall ms (idle device: launch-bound;
   busy ~ wall: the GPU is the limit), busy time by kind of kernel, the longest kernels; the same
   with CUDA graphs and the clients innermost (``VectorizedEngine(clients_innermost=True)``: each
   step's stacked batches laid out with the client index innermost, so that CUDA computes the
   first convolution, a grouped one of one input channel per group under vmap, in cuDNN instead of
   torch's own depthwise kernels), and its s/round without graphs; the same with CUDA graphs and
   the grouped layout (``VectorizedEngine(grouped_layout=True)``, :mod:`fedlib.grouped`: a
   SimpleCNN's convolutional blocks on (batch, clients x channels, H, W) tensors, without the
   copies and strided operands of vmap's layout), and its s/round without graphs. Then the first
   convolution's forms alone (``conv_forms``).
3. bits: under ``torch.use_deterministic_algorithms(True)`` with TF32 off, a 3-round App. H run
   (FedSUM, keyed draws, evaluated each round) twice on the device: history and final model
   bit-equal; the same run on the CPU: its replay anchor (``fedlib.arithmetic``) within
   :data:`fedlib.arithmetic.CROSS_RTOL` of the device's. The same with TF32 on (torch's default
   for cuDNN's convolutions) is measured and printed, not required. The run with the clients
   innermost (the campaign's engine with the option: another arithmetic), under the campaign's
   settings (deterministic warn-only, TF32 off), twice (bit-equal), against the run of ``fedlib
   verify``'s replay engine (bit-equal) and against the CPU's replay; the campaign's path timed
   under those settings without and with the option; then the decision row for the campaign's
   ``--clients-innermost`` (``option_decision``: at least 5% faster, bit-equal twice and to
   the replay, within ``CROSS_RTOL``). The same rows for the grouped layout (:data:`OPTIONS`, its
   decision row for ``--grouped-layout``), each option's run also against the campaign's engine
   without it (bit-equal: the option keeps the default arithmetic on this GPU model; measured only).
   Then the campaign's path with one of its settings at a time (``settings_speeds``: TF32 off
   alone, deterministic algorithms alone; measured only); with ``--probe-compiled-gradient``,
   minutes allowing, a probe of the vmapped gradient ``torch.compile``'d (``compiled_gradient``).
4. several runs under MPS: ``--mps-runs`` processes at once (as 6) with a CUDA MPS control daemon
   of their own (``nvidia-cuda-mps-control -d``, pipe and log folders in a temporary folder; a
   user-level daemon, no device setting changes), always stopped afterwards; "not available"
   where the program is missing.
5. stacked runs (proxy): ``--stack`` R, in the order given: one vmap over R runs' clients
   (N = 100 R, S = 20 R), run-rounds/s = R / its s/round (``stacked_proxy``).
6. several runs: ``--runs`` processes at once on the device (keyed, graphs), time-slicing it
   without MPS: run-rounds/s in all. The processes of 4 and 6 start counting together once all
   are ready (at most ``--setup-s`` after their start).

4-6 use compiled draws where the check of section 1 found them bit-equal; they come last because
``--minutes`` cuts them first, 4 first among them because earlier windows measured 5 and 6.

Why TF32 off for runs that go into a store: TF32 keeps 10 bits of mantissa (unit roundoff 2^-11
= 4.9e-4 instead of fp32's 2^-24 = 6.0e-8), so one convolution's products err by up to ~5e-4
relative, ~8,000x fp32's; the cross-arithmetic tolerance CROSS_RTOL = 2e-3 was derived for fp32
kernels (sums of n ~ 1e3..1e4 terms: n u <= 6e-4 at worst, measured <= 2.3e-4 after 3 rounds),
and 3 rounds of 10 TF32 steps use up that margin several times over. With TF32 off the GPU's
kernels round like the CPU's (another summation order only), so the CPU replay of a
GPU-computed entry is judged by the same derived tolerance as a replay on another CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import grad, vmap

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # this checkout's fedlib
from engine import mnist_like, round_inputs, seconds_per_round  # noqa: E402

from fedlib import ExperimentConfig, arithmetic, engine, models, participation, partition, problems  # noqa: E402
from fedlib.store import TIMING_COLUMNS  # noqa: E402
from fedlib.verification import replay_engine  # noqa: E402

#: the bit row of the library's compiled draws (``benchmarks/gpu_window.sh`` turns the campaign's
#: ``--compiled-draws`` on when it reads "<this> on the device vs CPU: bit-equal | True")
COMPILED_ROW = "compiled draws (library, compiled_draws=True)"
#: the speed row of the campaign's path (the options' rows are compared with it)
CAMPAIGN_SPEED = ("vmap, keyed draws, CUDA graphs, compiled draws (compiled_draws=True, the campaign's "
                  "--compiled-draws)")


def option_labels(words: str, kw: str, flag: str) -> dict[str, str]:
    """The labels of the rows the check prints for an engine option the campaign may take
    (``kw``, the campaign's ``flag``): its speed row under the campaign's settings, its bit rows
    (run twice, against ``fedlib verify``'s replay engine, against the CPU; with it against
    without it, measured only) and its decision row, which ``benchmarks/gpu_window.sh`` reads as
    "<row> | True (". """
    return {"speed": f"vmap, keyed draws, CUDA graphs, compiled draws, {words} (+ {kw}=True, the "
                     f"campaign's {flag})",
            "twice": f"{words}: run twice on the device, deterministic, TF32 off: bit-equal",
            "replay": (f"{words}: the campaign's engine vs fedlib verify's replay engine on the device: "
                       "bit-equal"),
            "cross": f"{words}: device vs CPU replay, anchor max rel (TF32 off)",
            "same": f"{words}: the campaign's engine with it vs without it on the device: bit-equal "
                    "(measured only)",
            "row": f"{words} for the campaign"}


#: the engine options the check decides for the campaign, by keyword of ``VectorizedEngine``
#: (``benchmarks/gpu_window.sh`` turns the campaign's flag on when it reads "<row> | True (")
OPTIONS = {kw: option_labels(kw.replace("_", " "), kw, "--" + kw.replace("_", "-"))
           for kw in ("clients_innermost", "grouped_layout")}
INNERMOST_PLAIN = "vmap, keyed draws, clients innermost (clients_innermost=True)"
GROUPED_PLAIN = "vmap, keyed draws, grouped layout (grouped_layout=True)"
#: how much faster (relative) the campaign's path must be with an option of :data:`OPTIONS` to take it:
#: another arithmetic is not worth a difference within the timings' noise
OPTION_GAIN = 0.05
#: the probe row of a ``torch.compile``'d gradient (:func:`compiled_gradient`)
COMPILED_GRADIENT_ROW = ("probe: the campaign's path with the vmapped gradient torch.compile'd "
                         "(not a library option; the campaign's settings)")
#: what sections 4 and 5 label their draws (compiled once the bit row said True)
DRAWN = {False: "", True: ", compiled draws"}


def build(args, draws: str, device: str, tile: int = 1):
    """App. H's problem: ``args.clients`` clients of a Dirichlet(0.1) split; with ``tile`` R, the
    split of ``args.clients / R`` clients repeated R times (R runs' clients, each run with App. H's
    client sizes: a Dirichlet(0.1) split of 60,000 samples over 1,600 clients leaves some empty)."""
    train, test, src = mnist_like()
    part = partition.dirichlet(train[1].numpy(), args.clients // tile, 0.1, seed=0).indices * tile
    prob = problems.Neural(models.build("fedsum_mnist_cnn", seed=0), part, train, test,
                           batch_size=args.batch, device=device, strategy="vmap", draws=draws)
    return prob, src


def schedule_rows(args, rounds: int, device: str) -> list:
    sched = participation.build("uniform", args.clients, rounds, seed=0, per_round=args.per_round,
                                local_steps=args.local_steps)
    return round_inputs(sched, device)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def check_draws(args, compiled: bool | str = False) -> tuple[bool, str]:
    """Keyed draws of 3 steps on the device (``compiled``: as ``keyed.step_draws``') vs the CPU's
    numpy path, bit for bit."""
    here, _ = build(args, "keyed", args.device)
    cpu, _ = build(args, "keyed", "cpu")
    rng = np.random.default_rng(0)
    n = 0
    for rnd, step in ((0, 0), (7, 3), (1999, args.local_steps - 1)):
        clients = sorted(rng.choice(args.clients, args.per_round, replace=False).tolist())
        a = here._keyed_draws(torch.tensor(clients, device=args.device), rnd, step, compiled=compiled)
        b = cpu._keyed_draws(clients, rnd, step)
        for x, y in zip((a[0], a[1], *a[2]), (b[0], b[1], *b[2]), strict=True):
            if not torch.equal(x.cpu(), y):
                return False, f"round {rnd} step {step}: {tuple(x.shape)} differs"
            n += x.numel()
    return True, f"{n:,} values (indices, weights, masks) of 3 steps"


def check_graphs(args) -> str:
    """Gradients of a step replayed from a CUDA graph vs computed plainly, bit for bit."""
    prob, _ = build(args, "keyed", args.device)
    x = prob.initial_params()
    X = torch.stack([x + 0.001 * k for k in range(args.per_round)])
    clients = torch.arange(args.per_round, device=args.device) * (args.clients // args.per_round)
    same = True
    for rnd, step in ((0, 0), (3, 1), (5, 2)):
        same &= torch.equal(prob.graphed_grads(X, clients, rnd, step), prob.grads(X, clients, rnd, step))
    captured = bool(getattr(prob, "_graphs", None))
    return f"{same} ({'captured' if captured else 'no graph on this device: the plain path'}, 3 steps)"


def check_compiled_draws(args, compiled: bool | str) -> str:
    """Keyed draws of 3 steps computed compiled (``keyed.step_draws``' ``compiled``) vs the CPU's
    numpy path, bit for bit."""
    ok, what = check_draws(args, compiled)
    return f"{ok} ({what})"


def speeds(args) -> tuple[dict[str, float], dict[str, str]]:
    rows = schedule_rows(args, args.rounds + 1, args.device)
    out: dict[str, list[float]] = {}
    legacy, _ = build(args, "legacy", args.device)
    keyed_prob, _ = build(args, "keyed", args.device)      # a graph per (S, compiled) on it
    variants = [("vmap, legacy draws (today's GPU default)", legacy, engine.VectorizedEngine(), False),
                ("vmap, keyed draws", keyed_prob, engine.VectorizedEngine(), False),
                ("vmap, keyed draws, CUDA graphs", keyed_prob, engine.VectorizedEngine(graphs=True), False),
                ("vmap, keyed draws, CUDA graphs, compiled Threefry (compiled_draws=\"threefry\")",
                 keyed_prob, engine.VectorizedEngine(graphs=True, compiled_draws="threefry"), True),
                (CAMPAIGN_SPEED, keyed_prob, engine.VectorizedEngine(graphs=True, compiled_draws=True), True),
                (INNERMOST_PLAIN, keyed_prob, engine.VectorizedEngine(clients_innermost=True), False),
                (GROUPED_PLAIN, keyed_prob, engine.VectorizedEngine(grouped_layout=True), False),
                ("reference (client by client), legacy draws", legacy, engine.ReferenceEngine(), False)]
    if not args.device.startswith("cuda"):
        variants = [v for v in variants if "graphs" not in v[0]]
    if not args.compile:
        variants = [v for v in variants if not v[3]]
    failed: dict[str, str] = {}
    for _ in range(args.repeat):
        for label, prob, eng, _comp in variants:
            if label in failed:
                continue
            try:
                t = seconds_per_round(prob, eng, rows, args.local_steps, args.device)
            except Exception as e:  # noqa: BLE001 - one variant failing must not lose the others
                failed[label] = f"{type(e).__name__}: {str(e).splitlines()[0][:150]}"
                continue
            out.setdefault(label, []).append(t)
    return {k: float(np.median(v)) for k, v in out.items()}, failed


def gpu_profile(args) -> str:
    """One FedSUM round of the keyed path without graphs under ``torch.profiler``: how many device
    kernels it launches, how long the device is busy with them, and the kernels that take most of
    that time (names cut to 40 characters): where the rest of a round goes."""
    from collections import Counter

    from fedlib import algorithms
    prob, _ = build(args, "keyed", args.device)
    rows = schedule_rows(args, 3, args.device)
    algo = algorithms.get("fedsum")(prob, engine.VectorizedEngine())
    x = prob.initial_params().to(args.device)
    algo.init(x, args.local_steps)
    x = algo.round(x, rows[0])
    sync(args.device)
    acts = [torch.profiler.ProfilerActivity.CPU]
    if args.device.startswith("cuda"):
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts) as prof:
        x = algo.round(x, rows[1])
        sync(args.device)
    dev = [e for e in prof.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]
    if not dev:
        top = [e for e in prof.events() if e.name.startswith("aten::") and e.cpu_parent is None]
        return f"no device events (host: {len(top)} tensor operations per round)"
    times = Counter()
    for e in dev:
        times[e.name[:40]] += float(e.time_range.elapsed_us())           # a device event's own span
    busy = sum(times.values())
    head = "; ".join(f"{k} {100 * v / busy:.0f}%" for k, v in times.most_common(4)) if busy else ""
    return f"{len(dev)} kernels and copies, {busy / 1e3:.1f} ms busy; {head}"


#: kinds of device work, by a kernel's name (first match, lower case): the compiled draws are
#: inductor's Triton kernels (``keyed.step_draws`` is the only compiled function of a round)
KINDS = (("triton (compiled draws)", ("triton",)),
         ("sort", ("sort", "radix")),
         ("convolution", ("conv", "cudnn", "implicit_gemm", "fprop", "dgrad", "wgrad", "nchw", "nhwc")),
         ("matmul", ("gemm", "cublas", "cutlass")),
         ("copy/set", ("memcpy", "memset")),
         ("reduction", ("reduce",)),
         ("gather/scatter", ("index", "gather", "scatter")),
         ("elementwise", ("elementwise",)))


def kernel_kind(name: str) -> str:
    """The kind (:data:`KINDS`) of a device event by its name; ``other`` where none matches."""
    low = name.lower()
    return next((kind for kind, keys in KINDS if any(k in low for k in keys)), "other")


def busy_us(spans) -> float:
    """Microseconds covered by the union of ``spans`` ((start, end) pairs): device time with at
    least one kernel or copy running (overlapping events counted once)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def compiled_profile(args, graphs: bool, innermost: bool = False, grouped: bool = False) -> str:
    """A FedSUM round of keyed draws with compiled draws (``VectorizedEngine(compiled_draws=True,
    graphs=graphs, clients_innermost=innermost, grouped_layout=grouped)``, where the problem
    compiles draws: on CUDA)
    under ``torch.profiler``, after
    the mean wall time of 3 rounds without it: busy ms per round (the union of the device's
    kernels and copies), the device's idle share of the wall time, busy time by kind of kernel
    (:data:`KINDS`) and the 4 longest kernels (names cut to 40 characters). Busy far below the
    wall: the round waits on launches or the host; busy near it: the device is the limit, and
    :func:`sm_fill` says whether its kernels fill the SMs. With ``graphs`` the kernels are those
    of the captured steps' replays, where the profiler reports them."""
    from collections import Counter

    from fedlib import algorithms
    prob, _ = build(args, "keyed", args.device)
    rows = schedule_rows(args, 6, args.device)
    eng = engine.VectorizedEngine(graphs=graphs, compiled_draws=True, clients_innermost=innermost,
                                  grouped_layout=grouped)
    algo = algorithms.get("fedsum")(prob, eng)
    x = prob.initial_params().to(args.device)
    algo.init(x, args.local_steps)
    x = algo.round(x, rows[0])                    # warm-up: compilation (cached), graph capture
    sync(args.device)
    t0 = time.perf_counter()
    for r in rows[1:4]:
        x = algo.round(x, r)
    sync(args.device)
    wall = (time.perf_counter() - t0) / 3 * 1e3
    acts = [torch.profiler.ProfilerActivity.CPU]
    if args.device.startswith("cuda"):
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts) as prof:
        x = algo.round(x, rows[4])
        sync(args.device)
    dev = [e for e in prof.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]
    if not dev:
        top = [e for e in prof.events() if e.name.startswith("aten::") and e.cpu_parent is None]
        launches = sum(e.name == "cudaGraphLaunch" for e in prof.events())
        seen = f"no kernels seen in {launches} graph replays" if launches else "no device events"
        return f"{seen} (host: {len(top)} tensor operations a round; {wall:.1f} ms wall a round unprofiled)"
    spans = [(float(e.time_range.start), float(e.time_range.end)) for e in dev]
    busy = busy_us(spans) / 1e3
    span = (max(b for _, b in spans) - min(a for a, _ in spans)) / 1e3
    names, kinds = Counter(), Counter()
    for e in dev:
        names[short_name(e.name)] += float(e.time_range.elapsed_us())
        kinds[kernel_kind(e.name)] += float(e.time_range.elapsed_us())
    total = sum(kinds.values()) or 1.0
    by_kind = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in kinds.most_common())
    head = "; ".join(f"{k} {100 * v / total:.0f}%" for k, v in names.most_common(4))
    return (f"{len(dev)} kernels and copies, {busy:.1f} ms busy per round of {wall:.1f} ms wall "
            f"(unprofiled; device idle {max(0.0, 100 * (1 - busy / wall)):.0f}% of it; profiled round's "
            f"device span {span:.1f} ms){sm_fill(prof)}; by kind: {by_kind}; top: {head}")


def short_name(name: str) -> str:
    """A kernel's name without the prefixes every ATen kernel shares (``void``, ``at::native::``,
    ``(anonymous namespace)::``), its first 60 characters: the fourth window's top kernel showed as
    ``void at::native::(anonymous namespace)::`` (40 characters) and said nothing."""
    for prefix in ("void ", "at::native::", "(anonymous namespace)::"):
        name = name.removeprefix(prefix)
    return name[:60]


def sm_fill(prof) -> str:
    """How full the kernels keep the GPU's SMs while they run (busy time alone does not say: a
    kernel of a few blocks counts as busy): from the profile's Chrome trace, whose kernel records
    carry kineto's "blocks per SM" and "est. achieved occupancy %", the share of kernel time in
    kernels with fewer blocks than SMs (room that other processes' kernels under MPS, or a larger
    stack, could fill) and the occupancy weighted by kernel time; "" where the records lack them."""
    import json
    import tempfile
    try:
        with tempfile.TemporaryDirectory(prefix="fedlib-trace-") as d:
            path = Path(d) / "trace.json"
            prof.export_chrome_trace(str(path))
            trace = json.loads(path.read_text())
    except Exception as e:  # noqa: BLE001 - the row keeps its other figures
        return f"; SM fill: trace not read ({type(e).__name__})"
    timed = [(float(e["dur"]), e.get("args", {})) for e in trace.get("traceEvents", [])
             if e.get("cat") == "kernel" and "dur" in e]

    def weighted(field: str) -> list[tuple[float, float]]:
        return [(d, float(a[field])) for d, a in timed if isinstance(a.get(field), (int, float))]
    out = []
    bps = weighted("blocks per SM")
    if bps and sum(d for d, _ in bps):
        few = sum(d for d, b in bps if b < 1) / sum(d for d, _ in bps)
        out.append(f"kernels with fewer blocks than SMs {100 * few:.0f}% of kernel time")
    occ = weighted("est. achieved occupancy %")
    if occ and sum(d for d, _ in occ):
        mean = sum(d * o for d, o in occ) / sum(d for d, _ in occ)
        out.append(f"est. occupancy {mean:.0f}% (time-weighted)")
    return f"; {', '.join(out)}" if out else ""


def conv_engine(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The first convolution as the engine runs it: ``conv2d`` of one client's weights ``w`` (out,
    1, k, k) on its batch ``x`` (B, 1, H, W), 'same' padding as the model's; under ``vmap`` over
    clients a grouped convolution of one input channel per group."""
    return F.conv2d(x, w, padding=w.shape[-1] // 2)


def conv_zero_channel(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """:func:`conv_engine` with a second input channel of zeros in ``x`` and ``w`` (under ``vmap`` a
    grouped convolution of two channels per group: not the depthwise shape)."""
    return conv_engine(torch.cat([w, torch.zeros_like(w)], 1), torch.cat([x, torch.zeros_like(x)], 1))


def conv_unfolded(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """:func:`conv_engine` as unfold + matmul: (B, out, positions) instead of (B, out, H, W)."""
    return w.reshape(w.shape[0], -1) @ F.unfold(x, w.shape[-1], padding=w.shape[-1] // 2)


def clients_innermost(x: torch.Tensor) -> torch.Tensor:
    """The stacked batches ``x`` (clients first) laid out with the client index innermost, as
    ``fedlib.tasks.Neural._stacked`` lays them out for ``VectorizedEngine(clients_innermost=True)``:
    the grouped convolution's input is then channels-last, and CUDA runs the depthwise shape in
    cuDNN instead of torch's own kernels."""
    return x.movedim(0, -1).contiguous().movedim(-1, 0)


#: the forms of :func:`conv_forms`, in its order (the engine's first: the others are compared to
#: it): name, the per-client convolution, the layout of the stacked batches (None: as gathered)
CONV_FORMS = (("vmap conv2d", conv_engine, None),
              ("clients innermost (channels-last input: cuDNN)", conv_engine, clients_innermost),
              ("2 channels, one of zeros", conv_zero_channel, None),
              ("unfold + matmul", conv_unfolded, None))


def conv_inputs(clients: int, batch: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded weights (clients, out, 1, k, k) of App. H's first convolution (the shape of
    ``models.build("fedsum_mnist_cnn")``'s: 1 -> 10 channels, 3 x 3) and images (clients, batch,
    1, 28, 28), drawn on the CPU, moved to ``device``."""
    shape = tuple(models.build("fedsum_mnist_cnn", seed=0).convs[0].weight.shape)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(clients, batch, 1, 28, 28, generator=g).to(device)
    w = (0.2 * torch.randn(clients, *shape, generator=g)).to(device)
    return w, x


def conv_step(form):
    """A step's forward and weight gradient of ``form`` for each client's own weights: ``vmap`` over
    clients of the gradient of the mean square of the convolution's output (a stand-in loss)."""
    return vmap(grad(lambda w, x: form(w, x).square().mean()))


def conv_forms(args, reps: int = 20) -> str:
    """The first convolution of App. H's CNN (1 -> 10 channels, 3 x 3, 28 x 28 images) for S
    clients' own weights, a step's forward and weight gradient (:func:`conv_step`), in the forms of
    :data:`CONV_FORMS`: ``vmap`` over ``conv2d`` (the engine's form: a grouped convolution of one
    input channel per group, which the fourth window's profile suggests runs in torch's own
    depthwise kernels, its top kernel at 30% of a round), the same on batches laid out with the
    clients innermost (the grouped convolution's input channels-last: cuDNN's depthwise kernels;
    the engine's ``clients_innermost``), with a second input channel of zeros (a grouped
    convolution of two channels per group: not depthwise, so cuDNN's), and unfold + matmul.
    Median ms of ``reps`` and the largest difference of each form's gradient from the first,
    relative to its largest entry (a new form is a new arithmetic: its bits differ). Decides
    whether the first layer's form is worth changing."""
    dev, S, B = args.device, args.per_round, args.batch
    w, x = conv_inputs(S, B, dev)
    out, ref = [], None
    for name, form, layout in CONV_FORMS:
        grads = conv_step(form)

        def step(w, x, grads=grads, layout=layout):             # the layout's copy counted, as in a step
            return grads(w, x if layout is None else layout(x))
        try:
            got = step(w, x)
            times = []
            for _ in range(reps):
                sync(dev)
                t = time.perf_counter()
                step(w, x)
                sync(dev)
                times.append(time.perf_counter() - t)
        except Exception as e:  # noqa: BLE001 - a form without a batching rule: say so
            out.append(f"{name}: failed ({type(e).__name__})")
            continue
        ref = got if ref is None else ref
        rel = float((got - ref).abs().max() / ref.abs().max())
        out.append(f"{name} {1e3 * float(np.median(times)):.2f} ms (grad rel diff {rel:.1e})")
    return f"{S} clients x batch {B}: " + "; ".join(out)


def stacked_proxy(args, runs: int) -> str:
    """Run-rounds/s of ``runs`` runs' clients in one vmap: FedSUM's round with N = 100 R clients,
    S = 20 R per round (K, batch as App. H), keyed draws, CUDA graphs: the work of R stacked runs
    in one step (one model per client row, as stacked runs would have), without their separate
    server states (a few [p] vectors each: negligible). A proxy that says whether stacking pays
    before it is built; s/round / R is what one run would cost inside such a stack."""
    import argparse as _ap
    big = _ap.Namespace(**{**vars(args), "clients": args.clients * runs, "per_round": args.per_round * runs})
    prob, _ = build(big, "keyed", args.device, tile=runs)
    rows = schedule_rows(big, args.rounds + 1, args.device)
    eng = engine.VectorizedEngine(graphs=args.device.startswith("cuda"), compiled_draws=args.compiled)
    t = seconds_per_round(prob, eng, rows, args.local_steps, args.device)
    return f"{runs / t:.1f} ({t:.4f} s per round of {runs} x {args.per_round} clients)"


def worker(args) -> None:
    """One of ``--runs`` processes: builds the problem, warms up, says it is ready (a file
    ``ready-<pid>`` in ``--sync-dir``), waits for the start time that the parent writes to
    ``go`` there once all are ready, then counts FedSUM rounds for ``--window`` seconds; prints
    the count."""
    from fedlib import algorithms
    t_start = time.time()
    prob, _ = build(args, "keyed", args.device)
    rows = schedule_rows(args, 1000, args.device)
    try:
        eng = engine.VectorizedEngine(graphs=True, compiled_draws=args.compiled)
        algo = algorithms.get("fedsum")(prob, eng)
        x = prob.initial_params().to(args.device)
        algo.init(x, args.local_steps)
        x = algo.round(x, rows[0])
    except Exception as e:  # noqa: BLE001 - no graphs here: say so, and count plain steps
        print(f"NOGRAPHS {type(e).__name__}: {str(e).splitlines()[0][:150]}", flush=True)
        algo = algorithms.get("fedsum")(prob, engine.VectorizedEngine())
        x = prob.initial_params().to(args.device)
        algo.init(x, args.local_steps)
        x = algo.round(x, rows[0])
    sync(args.device)
    sync_dir = Path(args.sync_dir)
    (sync_dir / f"ready-{os.getpid()}").write_text(f"{time.time() - t_start:.1f}")
    go, give_up = sync_dir / "go", time.time() + args.setup_s + 120
    while not go.exists():
        if time.time() > give_up:
            print("NOGO: no start time from the parent", flush=True)
            return
        time.sleep(0.005)
    start_at = float(go.read_text())
    if time.time() > start_at:
        print("LATE: ready after the window opened (raise --setup-s)", flush=True)
    time.sleep(max(0.0, start_at - time.time()))
    count, end = 0, start_at + args.window
    while time.time() < end:
        x = algo.round(x, rows[1 + count % (len(rows) - 1)])
        sync(args.device)
        count += 1
    print(f"ROUNDS {count}", flush=True)


def several_runs(args, runs: int, env: dict | None = None, probe=None) -> tuple[float, int, int, str]:
    """Run-rounds per second of ``runs`` processes at once on the device, how many of them were
    not ready when the timing window opened (their rate then undercounts), how many could not
    capture CUDA graphs (they counted plain steps), and a note: how long the slowest took to
    get ready, and what ``probe`` (called once all are ready or the setup time is spent) says.
    The processes start their window together once all are ready (or after ``--setup-s``, 30 s
    more with compiled draws, loaded from inductor's disk cache), so setup costs only what it
    takes; ``env``: the processes' environment (MPS's pipe directory)."""
    import tempfile
    cmd = [sys.executable, __file__, "--worker", "--device", args.device, "--window", str(args.window),
           "--clients", str(args.clients), "--per-round", str(args.per_round), "--setup-s", str(args.setup_s),
           "--local-steps", str(args.local_steps), "--batch", str(args.batch)]
    cmd += ["--compiled"] if args.compiled else []
    with tempfile.TemporaryDirectory(prefix="fedlib-runs-") as sync_dir:
        cmd += ["--sync-dir", sync_dir]
        t0 = time.time()
        deadline = t0 + args.setup_s + (30.0 if args.compiled else 0.0)
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) for _ in range(runs)]
        try:
            def ready() -> int:
                return sum(1 for f in Path(sync_dir).iterdir() if f.name.startswith("ready-"))
            while ready() < runs and time.time() < deadline and any(p.poll() is None for p in procs):
                time.sleep(0.05)
            n_ready, setup = ready(), time.time() - t0
            notes = [f"{n_ready} of {runs} ready after {setup:.0f} s"]
            if probe is not None:
                notes.append(probe())
            tmp = Path(sync_dir) / "go.tmp"
            tmp.write_text(repr(time.time() + 1.0))
            tmp.replace(Path(sync_dir) / "go")           # all read one start time
            counts, late, plain = [], 0, 0
            for p in procs:
                out, _ = p.communicate(timeout=args.window + 60 + max(0.0, deadline - time.time()))
                line = [ln for ln in out.splitlines() if ln.startswith("ROUNDS")]
                counts.append(int(line[-1].split()[1]) if line else 0)
                late += any(ln.startswith("LATE") for ln in out.splitlines()) or not line
                plain += any(ln.startswith("NOGRAPHS") for ln in out.splitlines())
        finally:
            for p in procs:                              # a failure above: none left running
                if p.poll() is None:
                    p.kill()
                    p.wait()
    return sum(counts) / args.window, late, plain, "; ".join(notes)


#: the CUDA Multi-Process Service's control program (a user-level daemon: several processes'
#: kernels share the GPU at once instead of time-slicing it; no device setting changes)
MPS_CONTROL = "nvidia-cuda-mps-control"


def mps_command(exe: str, env: dict, command: str, timeout: float = 30.0) -> tuple[int, str]:
    """``command`` sent to the MPS control daemon of ``env``'s pipe directory: (exit code, output)."""
    r = subprocess.run([exe], input=command + "\n", env=env, capture_output=True, text=True, timeout=timeout)
    return r.returncode, (r.stdout + r.stderr).strip()


@contextlib.contextmanager
def mps_daemon():
    """Yields the environment of MPS clients with an MPS control daemon running (``nvidia-cuda-
    mps-control -d``, its pipe and log directories in a fresh temporary folder ``fedlib-mps-*``,
    so that only processes given that environment use it), or None where the program is missing.
    The daemon is always stopped afterwards (``quit``), also on an error or SIGTERM (``main``
    turns it into SystemExit); where it does not stop, the folder is kept and a line says so
    (``benchmarks/gpu_window.sh`` sends ``quit`` to every ``fedlib-mps-*`` left)."""
    import shutil
    import tempfile
    exe = shutil.which(MPS_CONTROL)
    if exe is None:
        yield None
        return
    root = Path(tempfile.mkdtemp(prefix="fedlib-mps-"))
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": str(root / "pipe"),
           "CUDA_MPS_LOG_DIRECTORY": str(root / "log")}
    for d in ("pipe", "log"):
        (root / d).mkdir()
    stopped = False
    try:
        r = subprocess.run([exe, "-d"], env=env, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            said = (r.stdout + r.stderr).strip()[:150]
            raise RuntimeError(f"{MPS_CONTROL} -d exited {r.returncode}: {said}")
        yield env
    finally:
        try:
            mps_command(exe, env, "quit", timeout=60)
            for _ in range(100):                        # gone once it no longer answers
                if mps_command(exe, env, "get_server_list", timeout=10)[0] != 0:
                    stopped = True
                    break
                time.sleep(0.1)
        except subprocess.TimeoutExpired:
            pass
        if stopped:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"MPS control daemon of {root} did not stop (quit sent)", flush=True)


def mps_runs(args, runs: int) -> str:
    """Run-rounds/s of ``runs`` processes at once (as :func:`several_runs`) with an MPS control
    daemon running for them (:func:`mps_daemon`), with a note whether an MPS server served
    them (``get_server_list`` once they were ready); "not available" where the program is missing."""
    if not args.device.startswith("cuda"):
        return f"not measured ({args.device}: MPS shares a CUDA device)"
    with mps_daemon() as env:
        if env is None:
            return f"not available (no {MPS_CONTROL} on this machine)"
        import shutil
        exe = shutil.which(MPS_CONTROL)
        log = Path(env["CUDA_MPS_LOG_DIRECTORY"]) / "control.log"

        def said() -> str:
            lines = log.read_text(errors="replace").strip().splitlines() if log.is_file() else []
            return f"; control.log: {lines[-1][:120]}" if lines else ""
        # one small client first: a daemon that cannot serve costs seconds, not the processes' setup
        client = [sys.executable, "-c", "import torch; torch.ones(1, device='cuda').sum().item()"]
        try:
            r = subprocess.run(client, env=env, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return "failed: a first MPS client did not start within 60 s" + said()
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["?"])[-1][:150]
            return f"failed: a first MPS client could not start: {why}" + said()

        def probe() -> str:
            code, out = mps_command(exe, env, "get_server_list")
            pids = out.split() if code == 0 else []
            return f"MPS server {', '.join(pids)}" if pids else f"no MPS server ({code}: {out[:80]})"
        rate, late, plain, note = several_runs(args, runs, env=env, probe=probe)
    more = [f"{late} of {runs} not ready in time"] if late else []
    more += [f"{plain} of {runs} without graphs"] if plain else []
    return f"{rate:.1f} ({'; '.join([note, *more])})"


def verifiable(device: str, tf32: bool, warn_only: bool = False) -> None:
    """Deterministic algorithms (``warn_only``: ops without a deterministic kernel warn instead of
    raising, as :func:`fedlib.arithmetic.verifiable_cuda` sets for campaigns); TF32 on or off."""
    if device.startswith("cuda"):
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.use_deterministic_algorithms(True, warn_only=warn_only)


def bit_config(args) -> ExperimentConfig:
    """The bit checks' run: FedSUM on App. H's problem (keyed draws), the anchor's rounds, each
    evaluated."""
    n, k = args.clients, args.per_round
    return ExperimentConfig(
        algorithm="fedsum", problem="neural", participation="uniform", rounds=arithmetic.ANCHOR_ROUNDS,
        problem_args={"dataset": "mnist", "partition": "dirichlet", "alpha": 0.1, "model": "fedsum_mnist_cnn",
                      "num_clients": n, "batch_size": args.batch, "train_eval_per_client": 20,
                      "draws": "keyed", **({} if args.real else {"synthetic": True,
                                                                  "synthetic_sizes": [60 * n, 500]})},
        participation_args={"per_round": k}, local_steps=args.local_steps, lr_local=0.01, lr_global=1.0,
        lr_schedule="fedsum_sqrt", eval_every=1)


def cross_result(rel: float) -> str:
    """A device run's anchor difference from the CPU's replay, judged by ``CROSS_RTOL``."""
    return (f"{rel:.2e} (tolerance CROSS_RTOL = {arithmetic.CROSS_RTOL:g}: "
            f"{'passes' if rel <= arithmetic.CROSS_RTOL else 'FAILS'})")


def _equal(a, b) -> bool:
    """Two runs' histories (timing columns aside) and final models bit-equal."""
    cols = [c for c in a.history.columns if c not in TIMING_COLUMNS]
    return a.history[cols].equals(b.history[cols]) and torch.equal(a.params, b.params)


def bit_checks(args, warn_only: bool) -> dict[str, str]:
    """Section 3's rows: the default engine's run twice and against the CPU (``warn_only`` or
    strict deterministic algorithms, TF32 off), the same with each option of :data:`OPTIONS`
    (:func:`option_checks`: the clients innermost, the grouped layout), and the TF32 run
    (measured only)."""
    import fedlib
    cfg = bit_config(args)
    out = {}
    mode = "warn-only" if warn_only else "strict"
    verifiable(args.device, tf32=False, warn_only=warn_only)
    a = fedlib.run_config(cfg, device=args.device)
    b = fedlib.run_config(cfg, device=args.device)
    out[f"run twice on the device, deterministic ({mode}), TF32 off: bit-equal"] = str(_equal(a, b))
    cpu = fedlib.run_config(cfg, device="cpu")
    anchor = arithmetic.Anchor.from_dict
    rel = anchor(a.info["anchor"]).max_rel(anchor(cpu.info["anchor"]))
    out["device vs CPU replay, anchor max rel (TF32 off)"] = cross_result(rel)
    shared: dict = {}                        # the campaign's engine's run without an option: once
    for kw in OPTIONS:
        out.update(option_checks(args, cfg, anchor(cpu.info["anchor"]), kw, shared))
    if args.device.startswith("cuda"):
        verifiable(args.device, tf32=True, warn_only=warn_only)
        t = fedlib.run_config(cfg, device=args.device)
        rel32 = anchor(t.info["anchor"]).max_rel(anchor(cpu.info["anchor"]))
        out["device vs CPU replay, anchor max rel (TF32 on, measured only)"] = f"{rel32:.2e}"
    verifiable(args.device, tf32=False, warn_only=warn_only)
    return out


def option_checks(args, cfg: ExperimentConfig, cpu_anchor: arithmetic.Anchor, kw: str,
                  shared: dict | None = None) -> dict[str, str]:
    """The run ``cfg`` with the campaign's engine and the option ``kw`` of :data:`OPTIONS` on,
    under the campaign's settings (deterministic algorithms warn-only, TF32 off:
    ``fedlib.arithmetic.verifiable_cuda``): twice (bit-equal), against the run of ``fedlib
    verify``'s replay engine (``verification.replay_engine``: bit-equal), against the CPU's anchor
    (``CROSS_RTOL``) and, measured only, against the campaign's engine without the option (bit-equal:
    the option keeps the default arithmetic on this GPU model; that run is computed once for all
    the options that pass the same ``shared`` dict). An error is a row, so the decision reads False
    and the check goes on."""
    import fedlib
    labels = OPTIONS[kw]
    verifiable(args.device, tf32=False, warn_only=True)
    base = dict(graphs=args.device.startswith("cuda"), compiled_draws=args.compiled)
    with_it = engine.VectorizedEngine(**base, **{kw: True})      # the campaign's engine with the option
    out = {}
    try:
        def run(eng):
            return fedlib.run_config(cfg, device=args.device, engine=eng)
        a = run(with_it)
        out[labels["twice"]] = f"{_equal(a, run(with_it))} (warn-only, as the campaign; {with_it!r})"
        replay = replay_engine({"engine": repr(with_it)})       # what fedlib verify replays with
        out[labels["replay"]] = f"{_equal(a, run(replay))} ({replay!r})"
        rel = arithmetic.Anchor.from_dict(a.info["anchor"]).max_rel(cpu_anchor)
        out[labels["cross"]] = cross_result(rel)
        without = engine.VectorizedEngine(**base)
        shared = {} if shared is None else shared
        if "without" not in shared:
            shared["without"] = run(without)
        out[labels["same"]] = f"{_equal(a, shared['without'])} ({without!r})"
    except Exception as e:  # noqa: BLE001 - reported in the table; the decision then reads False
        for k in ("twice", "replay", "cross", "same"):
            out.setdefault(labels[k], failed(e, 200))
    return out


def campaign_speeds(args) -> dict[str, float]:
    """s/round of the campaign's path (keyed draws, CUDA graphs, compiled draws) without and with
    each option of :data:`OPTIONS`, under the campaign's settings (deterministic algorithms
    warn-only, TF32 off: cuDNN then keeps its deterministic algorithms only, which may change what
    a layout gains); the medians of ``--repeat``, keyed by :data:`CAMPAIGN_SPEED` and the options'
    speed labels. On CUDA with compilation only (elsewhere: none)."""
    if not (args.device.startswith("cuda") and args.compile):
        return {}
    verifiable(args.device, tf32=False, warn_only=True)
    rows = schedule_rows(args, args.rounds + 1, args.device)
    prob, _ = build(args, "keyed", args.device)
    out: dict[str, list[float]] = {}
    variants = [(CAMPAIGN_SPEED, {}), *((labels["speed"], {kw: True}) for kw, labels in OPTIONS.items())]
    for _ in range(args.repeat):
        for label, opt in variants:
            eng = engine.VectorizedEngine(graphs=True, compiled_draws=True, **opt)
            t = seconds_per_round(prob, eng, rows, args.local_steps, args.device)
            out.setdefault(label, []).append(t)
    return {k: float(np.median(v)) for k, v in out.items()}


def settings_speeds(args) -> dict[str, float]:
    """Where the campaign's settings cost their time (0.0403 against 0.0288 s a round on the fifth
    window's H200): the campaign's path timed with one of its two settings at a time, TF32 off
    (cuDNN's and matmul's) without deterministic algorithms, and deterministic algorithms
    (warn-only) with torch's default TF32 (cuDNN's on, matmul's off); measured only. Each setting
    on a problem of its own: a problem keeps its captured CUDA graphs per step shape, whatever the
    settings they were captured under. The campaign's settings are restored afterwards."""
    rows = schedule_rows(args, args.rounds + 1, args.device)
    eng = engine.VectorizedEngine(graphs=True, compiled_draws=True)
    out = {}
    try:
        for label, tf32, deterministic in (("TF32 off, deterministic algorithms off", False, False),
                                           ("torch's default TF32, deterministic algorithms on (warn-only)",
                                            True, True)):
            verifiable(args.device, tf32=False, warn_only=True)
            if args.device.startswith("cuda"):
                torch.backends.cudnn.allow_tf32 = tf32           # matmul's TF32: off, as torch's default
            torch.use_deterministic_algorithms(deterministic, warn_only=True)
            prob, _ = build(args, "keyed", args.device)
            t = [seconds_per_round(prob, eng, rows, args.local_steps, args.device)
                 for _ in range(args.repeat)]
            out[f"s/round, one run, the campaign's path, {label} (measured only)"] = float(np.median(t))
    finally:
        verifiable(args.device, tf32=False, warn_only=True)
    return out


def option_decision(med: dict[str, float], checks: dict[str, str], kw: str) -> str:
    """Whether the campaign takes the option ``kw`` of :data:`OPTIONS`: "True (...)" where the
    campaign's path with it (its speed label) is at least :data:`OPTION_GAIN` faster than
    without (:data:`CAMPAIGN_SPEED`; ``med``: :func:`campaign_speeds`, timed under the campaign's
    settings), a run with it is bit-equal twice on the device and to the run of
    ``fedlib verify``'s replay engine (so a stored entry replays exactly on this GPU model), and
    its CPU replay is within ``CROSS_RTOL``; else "False (...)" with every reason."""
    labels = OPTIONS[kw]
    base, laid = med.get(CAMPAIGN_SPEED), med.get(labels["speed"])
    twice, cross = checks.get(labels["twice"], "not measured"), checks.get(labels["cross"], "not measured")
    replay = checks.get(labels["replay"], "not measured")
    why = []
    if base is None or laid is None:
        why.append("speeds not measured (compiled draws and graphs: CUDA only)")
    elif laid > (1 - OPTION_GAIN) * base:
        why.append(f"not {100 * OPTION_GAIN:.0f}% faster: {1e3 * laid:.1f} ms against "
                   f"{1e3 * base:.1f} ms a round")
    if not twice.startswith("True"):
        why.append(f"run twice: {twice}")
    if not replay.startswith("True"):
        why.append(f"verify's replay: {replay}")
    if "passes" not in cross:
        why.append(f"CPU replay: {cross}")
    if why:
        return f"False ({'; '.join(why)})"
    return (f"True ({1e3 * laid:.1f} ms against {1e3 * base:.1f} ms a round; bit-equal twice and to "
            f"verify's replay; CPU replay {cross})")


def parse_args() -> tuple[argparse.Namespace, bool]:
    """The command line, the sizes not given filled in: App. H's, or the smoke's on a CPU without
    ``--app-h`` (then the second value, ``small``, is True)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--minutes", type=float, default=5.0, help="stop starting sections after this")
    ap.add_argument("--rounds", type=int, default=6, help="timed rounds per variant")
    ap.add_argument("--repeat", type=int, default=2, help="timings per variant (median)")
    ap.add_argument("--runs", type=int, nargs="*", default=[4, 8],
                    help="processes at once without MPS (section 6; none: skip)")
    ap.add_argument("--mps-runs", type=int, nargs="*", default=[8],
                    help="processes at once under CUDA MPS (section 4; none: skip)")
    ap.add_argument("--window", type=float, default=20.0, help="seconds each process counts rounds")
    ap.add_argument("--setup-s", type=float, default=45.0,
                    help="most seconds to start the processes (they start together once all are ready)")
    ap.add_argument("--app-h", action="store_true", help="App. H's setting on a CPU too")
    ap.add_argument("--stack", type=int, nargs="*", default=[8],
                    help="runs' clients in one vmap, in this order (a proxy of stacked runs; none: skip)")
    ap.add_argument("--no-compile", dest="compile", action="store_false",
                    help="skip the compiled-draws variants (torch.compile; CUDA only)")
    ap.add_argument("--probe-compiled-gradient", action="store_true",
                    help="after the decision row, minutes allowing: the campaign's path with the vmapped "
                         "gradient torch.compile'd (a probe; its compilation takes ~20-40 s)")
    ap.add_argument("--synthetic", dest="real", action="store_false",
                    help="section 3 on random stand-in data (default: real MNIST when present)")
    ap.add_argument("--clients", type=int)
    ap.add_argument("--per-round", type=int)
    ap.add_argument("--local-steps", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compiled", action="store_true", help=argparse.SUPPRESS)   # a worker: compiled draws
    ap.add_argument("--sync-dir", default="", help=argparse.SUPPRESS)            # a worker: its barrier
    args = ap.parse_args()
    small = args.device == "cpu" and not args.app_h
    for name, big, little in (("clients", 100, 10), ("per_round", 20, 4), ("local_steps", 10, 2),
                              ("batch", 128, 16)):
        if getattr(args, name) is None:
            setattr(args, name, little if small else big)
    return args, small


def settle(args, small: bool) -> None:
    """The smoke's short sections 4-6 (``small``), torch.compile on CUDA only, and compiled draws
    off for sections 4-6 until section 1 shows them bit-equal."""
    if small:
        # setup: at most 60 s (the processes start once all are ready: on a busy CPU they take 15-25 s)
        args.window, args.setup_s, args.repeat, args.real, args.compile = 1.0, 60.0, 1, False, False
        for name in ("runs", "stack", "mps_runs"):                # a section given none stays off
            setattr(args, name, [2] if getattr(args, name) else [])
    args.compile = args.compile and args.device.startswith("cuda")
    args.compiled = False                     # compiled draws for sections 4-6, once shown bit-equal


class Table:
    """The check's rows (name, result) in the order measured, and the clock since its start."""

    def __init__(self, minutes: float) -> None:
        self.minutes, self.t0, self.rows, self.reported = minutes, time.perf_counter(), [], False

    def left(self) -> bool:
        """Whether ``--minutes`` is not spent yet (a section starts only then)."""
        return time.perf_counter() - self.t0 < 60 * self.minutes

    def show(self) -> None:
        """The latest row, with the seconds since the start (how long each section takes)."""
        print(f"[{time.perf_counter() - self.t0:4.0f} s] {self.rows[-1]}", flush=True)

    def report(self, kind: str, device: str, gpu: str) -> None:
        """The table for ``benchmarks/README.md`` and the seconds in all."""
        print(f"\n| check ({kind}, {device}, {gpu}, {time.strftime('%Y-%m-%d')}) | result |\n|---|---|")
        for k, v in self.rows:
            print(f"| {k} | {v} |")
        print(f"total {time.perf_counter() - self.t0:.0f} s", flush=True)
        self.reported = True


def failed(e: Exception, n: int = 150) -> str:
    """A row's result for a check that raised ``e``: its type and first line, cut to ``n``."""
    return f"failed: {type(e).__name__}: {str(e).splitlines()[0][:n] if str(e) else ''}"


def header(args, small: bool) -> str:
    """Prints the machine, the versions, the data and the setting; returns the GPU's name."""
    _, src = build(args, "legacy", "cpu")
    gpu = torch.cuda.get_device_name() if args.device.startswith("cuda") else "none"
    print(f"device={args.device} ({gpu}) torch={torch.__version__} CPU threads={torch.get_num_threads()} "
          f"cores={os.cpu_count()} date={time.strftime('%Y-%m-%d')} data: {src}")
    print(f"N={args.clients} S={args.per_round} K={args.local_steps} batch={args.batch}"
          + (" (smoke: not App. H)" if small else " (FedSUM App. H)"), flush=True)
    return gpu


def report_on_sigterm(report) -> None:
    """On SIGTERM (``gpu_window.sh``'s timeout): ``report()`` (the table so far: the window script
    reads its rows), then SystemExit, so that the finally blocks run (the MPS daemon is stopped)."""
    def on_term(*_) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("\nSIGTERM: the rows measured so far", flush=True)
        report()
        sys.exit(143)
    signal.signal(signal.SIGTERM, on_term)


def draw_rows(args, tab: Table) -> None:
    """Section 1: keyed draws and CUDA-graph steps bit-equal; compiled draws (sets ``args.compiled``
    where the library's are bit-equal)."""
    ok, what = check_draws(args)
    tab.rows.append(("keyed draws, device vs CPU: bit-equal", f"{ok} ({what})"))
    tab.show()
    try:
        tab.rows.append(("CUDA-graph step vs plain step: bit-equal", check_graphs(args)))
    except Exception as e:  # noqa: BLE001 - reported in the table
        tab.rows.append(("CUDA-graph step vs plain step", failed(e, 200)))
    tab.show()
    if args.compile:
        for what, compiled in (("compiled Threefry", "threefry"), (COMPILED_ROW, True)):
            try:
                row = check_compiled_draws(args, compiled)
                tab.rows.append((f"keyed draws, {what} on the device vs CPU: bit-equal", row))
                args.compiled = args.compiled or (compiled is True and row.startswith("True"))
            except Exception as e:  # noqa: BLE001 - reported in the table
                tab.rows.append((f"keyed draws, {what}", failed(e, 200)))
            tab.show()


def profile_rows(args, tab: Table) -> None:
    """Section 2's profiles: a keyed round's device work, with compiled draws without and with CUDA
    graphs, and the first convolution's forms."""
    try:
        tab.rows.append(("device work of one round (keyed, no graphs; torch.profiler)", gpu_profile(args)))
    except Exception as e:  # noqa: BLE001 - reported in the table
        tab.rows.append(("device work of one round", failed(e)))
    tab.show()
    if args.compile or not args.device.startswith("cuda"):     # on a CPU: the code path (no-op draws)
        for graphs, innermost, grouped in ((False, False, False), (True, False, False), (True, True, False),
                                           (True, False, True)):
            how = ("CUDA graphs" if graphs else "no graphs") + (", clients innermost" if innermost else "")
            how += ", grouped layout" if grouped else ""
            label = f"device work of one round (keyed, compiled draws, {how}; torch.profiler)"
            try:
                tab.rows.append((label, compiled_profile(args, graphs, innermost, grouped)))
            except Exception as e:  # noqa: BLE001 - reported in the table
                tab.rows.append((label, failed(e)))
            tab.show()
    try:
        reps = 20 if args.device.startswith("cuda") else 2
        tab.rows.append(("first convolution's forms, forward + weight gradient of a step",
                         conv_forms(args, reps)))
    except Exception as e:  # noqa: BLE001 - reported in the table
        tab.rows.append(("first convolution's forms", failed(e)))
    tab.show()


def speed_rows(args, tab: Table) -> dict[str, float]:
    """Section 2: s/round of one run per variant, the profiles (:func:`profile_rows`), the speed-up;
    returns the medians by variant."""
    med, fails = speeds(args)
    for label, v in med.items():
        tab.rows.append((f"s/round, one run: {label}", f"{v:.4f}"))
        tab.show()
    for label, why in fails.items():
        tab.rows.append((f"s/round, one run: {label}", f"failed: {why}"))
    profile_rows(args, tab)
    keyed_times = [v for k, v in med.items() if "keyed" in k]
    ref = med.get("reference (client by client), legacy draws")
    if keyed_times and ref:
        tab.rows.append(("speed-up, best keyed / reference", f"{ref / min(keyed_times):.1f}x"))
    return med


def compiled_gradient(args) -> str:
    """A probe, not a library option: the campaign's path (keyed draws, CUDA graphs, compiled
    draws) with the vmapped minibatch gradient itself ``torch.compile``'d (inductor fuses the
    elementwise kernels around the convolutions: 31% of a round's device work in the fourth
    window). s/round against the same path uncompiled, the compilation's seconds, and one step's
    gradient difference from the plain one (another arithmetic). App. H's S is fixed (uniform
    participation), so it compiles once; a varying S recompiles per S (vmap's batch size is
    static), which a library option would have to pad or bucket."""
    verifiable(args.device, tf32=False, warn_only=True)          # the campaign's settings
    rows = schedule_rows(args, args.rounds + 1, args.device)
    plain, _ = build(args, "keyed", args.device)
    comp, _ = build(args, "keyed", args.device)
    eng = engine.VectorizedEngine(graphs=args.device.startswith("cuda"), compiled_draws=args.compiled)
    x = comp.initial_params()
    X = torch.stack([x + 0.001 * k for k in range(args.per_round)])
    clients = torch.arange(args.per_round, device=args.device) * (args.clients // args.per_round)
    ref = plain.grads(X, clients, 3, 1)
    comp._vgrad = torch.compile(comp._vgrad)
    t = time.perf_counter()
    got = comp.grads(X, clients, 3, 1)
    sync(args.device)
    took = time.perf_counter() - t
    rel = float((got - ref).abs().max() / ref.abs().max())
    a = seconds_per_round(plain, eng, rows, args.local_steps, args.device)
    b = seconds_per_round(comp, eng, rows, args.local_steps, args.device)
    return (f"{1e3 * b:.1f} ms a round against {1e3 * a:.1f} uncompiled ({repr(eng)}); compiled in "
            f"{took:.0f} s; a step's gradient max rel diff {rel:.1e}")


def bit_rows(args, tab: Table) -> dict[str, str]:
    """Section 3: :func:`bit_checks`, strict, or warn-only (and said so) where an op has no
    deterministic kernel; returns its rows."""
    try:
        checks = bit_checks(args, warn_only=False)
    except Exception as e:  # noqa: BLE001 - an op without a deterministic kernel: say which
        tab.rows.append(("deterministic algorithms (strict)", failed(e, 200)))
        checks = bit_checks(args, warn_only=True)
    for k, v in checks.items():
        tab.rows.append((k, v))
        tab.show()
    return checks


def count_rows(tab: Table, counts: list[int], skipped, label, measure) -> None:
    """Sections 4-6: per number of runs in ``counts``, the row ``label(runs)`` with ``measure(runs)``
    (or the error it raised); ``skipped(runs)`` "skipped" once the minutes are spent."""
    for runs in counts:
        if not tab.left():
            tab.rows.append((skipped(runs), "skipped: out of minutes"))
            continue
        try:
            result = measure(runs)
        except Exception as e:  # noqa: BLE001 - reported in the table
            result = failed(e)
        tab.rows.append((label(runs), result))
        tab.show()


def processes_result(args, runs: int) -> str:
    """Section 6's result for ``runs`` processes at once (:func:`several_runs`); prints their setup."""
    rate, late, plain, setup = several_runs(args, runs)
    print(f"  {runs} processes: {setup}", flush=True)
    note = [f"{late} of {runs} not ready in time"] if late else []
    note += [f"{plain} of {runs} without graphs"] if plain else []
    return f"{rate:.1f}" + (f" ({'; '.join(note)})" if note else "")


def decision_rows(args, tab: Table, checks: dict[str, str]) -> None:
    """After the bit checks: the campaign's path timed under the campaign's settings without and
    with each option of :data:`OPTIONS` (:func:`campaign_speeds`), their decision rows, then (with
    ``--probe-compiled-gradient``, minutes allowing) the probe of :func:`compiled_gradient`."""
    timed: dict[str, float] = {}
    if checks:
        try:
            timed = campaign_speeds(args)
        except Exception as e:  # noqa: BLE001 - reported in the table; the decision then reads False
            tab.rows.append(("s/round under the campaign's settings", failed(e)))
        for label, v in timed.items():
            tab.rows.append((f"s/round, one run, under the campaign's settings (deterministic warn-only, "
                             f"TF32 off): {label}", f"{v:.4f}"))
            tab.show()
    for kw, labels in OPTIONS.items():
        tab.rows.append((labels["row"], option_decision(timed, checks, kw)))
        tab.show()
    if timed and tab.left():
        try:
            for label, v in settings_speeds(args).items():
                tab.rows.append((label, f"{v:.4f}"))
        except Exception as e:  # noqa: BLE001 - reported in the table
            tab.rows.append(("s/round, the campaign's path, one setting at a time", failed(e)))
        tab.show()
    if args.probe_compiled_gradient and tab.left():
        try:
            tab.rows.append((COMPILED_GRADIENT_ROW, compiled_gradient(args)))
        except Exception as e:  # noqa: BLE001 - reported in the table
            tab.rows.append((COMPILED_GRADIENT_ROW, failed(e, 200)))
        tab.show()


def main() -> None:
    """The sections in their order (the module's docstring), then the table (also when a section
    raised, or on SIGTERM: ``gpu_window.sh`` decides the campaign's flags from it)."""
    args, small = parse_args()
    if args.worker:
        return worker(args)
    settle(args, small)
    tf32_default = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    tab = Table(args.minutes)
    gpu = header(args, small)

    def report() -> None:
        if not tab.reported:
            tab.report("smoke" if small else "App. H", args.device, gpu)
    report_on_sigterm(report)
    try:
        draw_rows(args, tab)
        checks = {}
        if tab.left():
            speed_rows(args, tab)
        else:
            tab.rows.append(("speeds", "skipped: out of minutes"))
        if tab.left():
            checks = bit_rows(args, tab)
        else:
            tab.rows.append(("bit checks", "skipped: out of minutes"))
        decision_rows(args, tab, checks)
        torch.use_deterministic_algorithms(False)      # the speeds below under the same settings as above
        if args.device.startswith("cuda"):
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32_default
        several_rows(args, tab)
    finally:
        report()


def several_rows(args, tab: Table) -> None:
    """Sections 4-6: several runs at once (MPS, one vmap over several runs, processes)."""
    drawn = DRAWN[args.compiled]
    # section 4 before 5 and 6, which earlier windows measured
    count_rows(tab, args.mps_runs, lambda r: f"{r} runs at once under MPS",
               lambda r: f"run-rounds/s, {r} processes at once under MPS (keyed, graphs{drawn})",
               lambda r: mps_runs(args, r))
    count_rows(tab, args.stack, lambda r: f"{r} runs' clients in one vmap",
               lambda r: (f"run-rounds/s, {r} runs' clients in one vmap (proxy of stacked runs; keyed, "
                          f"graphs{drawn})"), lambda r: stacked_proxy(args, r))
    count_rows(tab, args.runs, lambda r: f"{r} runs at once",
               lambda r: f"run-rounds/s, {r} processes at once (keyed, graphs{drawn})",
               lambda r: processes_result(args, r))


if __name__ == "__main__":
    main()
