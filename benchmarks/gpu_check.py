"""Issue 48's GPU check in one script: keyed draws bit-equal CPU vs GPU, FedSUM App. H's round
(one run; several runs at once), a run bit-equal twice on the GPU, and the GPU run replaying on
the CPU; prints a table for ``benchmarks/README.md``.

    CUBLAS_WORKSPACE_CONFIG=:4096:8 python benchmarks/gpu_check.py --device cuda --minutes 5
    python benchmarks/gpu_check.py --device cpu --rounds 1          # smoke: the code path, small

FedSUM (You & Pu 2025, arXiv:2512.18275), App. H: N = 100, S = 20, K = 10, batch 128, the MNIST
CNN of Table 2, Dirichlet(0.1) split, real MNIST from $FEDLIB_DATA (random tensors of its shape
otherwise). On a CPU the setting shrinks (N = 10, S = 4, K = 2, batch 16) unless ``--app-h``:
the smoke mode checks the code path, not speed.

Sections, each skipped (and said so) once ``--minutes`` is spent:

1. draws: the keyed minibatches and dropout masks (:mod:`fedlib.keyed`) of several steps on the
   device equal the CPU's (numpy path) bit for bit.
2. one run: s/round of FedSUM's round (``benchmarks/engine.py``'s loop, no evaluation) for the
   vmap engine with legacy draws (today's GPU default), keyed draws, keyed draws with CUDA-graph
   steps (``VectorizedEngine(graphs=True)``), and the reference engine.
   With ``torch.compile`` on CUDA (unless ``--no-compile``) also keyed draws computed compiled,
   their bits checked against the CPU's first: the library's option
   ``VectorizedEngine(compiled_draws=True)`` (``keyed.step_draws`` compiled whole; the campaign's
   ``--compiled-draws``) and ``compiled_draws="threefry"`` (the generator's calls alone, one fused
   kernel each instead of ~150 elementwise ones: the first window's measurement).
3. bits (before 4 and 5, which ``--minutes`` cuts first): under
   ``torch.use_deterministic_algorithms(True)`` with TF32 off, a 3-round App. H run
   (FedSUM, keyed draws, evaluated each round) twice on the device: history and final model
   bit-equal; the same run on the CPU: its replay anchor (``fedlib.arithmetic``) within
   :data:`fedlib.arithmetic.CROSS_RTOL` of the device's. The same with TF32 on (torch's default
   for cuDNN's convolutions) is measured and printed, not required.
4. stacked runs (proxy): ``--stack`` R: one vmap over R runs' clients (N = 100 R, S = 20 R),
   run-rounds/s = R / its s/round (``stacked_proxy``).
5. several runs: ``--runs`` processes at once on the device (keyed, graphs), each timing rounds
   in the same window: run-rounds/s in all.

4 and 5 use compiled draws where the check of section 1 found them bit-equal (the draws' kernels
kept the GPU busy in the second window: 78% of its time).

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
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # this checkout's fedlib
from engine import mnist_like, round_inputs, seconds_per_round  # noqa: E402

from fedlib import ExperimentConfig, arithmetic, engine, models, participation, partition, problems  # noqa: E402
from fedlib.store import TIMING_COLUMNS  # noqa: E402

#: the bit row of the library's compiled draws (``benchmarks/gpu_window.sh`` turns the campaign's
#: ``--compiled-draws`` on when it reads "<this> on the device vs CPU: bit-equal | True")
COMPILED_ROW = "compiled draws (library, compiled_draws=True)"
#: what sections 4 and 5 label their draws (compiled once the bit row said True)
DRAWN = {False: "", True: ", compiled draws"}


def build(args, draws: str, device: str):
    train, test, src = mnist_like()
    part = partition.dirichlet(train[1].numpy(), args.clients, 0.1, seed=0).indices
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
                ("vmap, keyed draws, CUDA graphs, compiled draws (compiled_draws=True, the campaign's "
                 "--compiled-draws)", keyed_prob, engine.VectorizedEngine(graphs=True, compiled_draws=True),
                 True),
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


def stacked_proxy(args, runs: int) -> str:
    """Run-rounds/s of ``runs`` runs' clients in one vmap: FedSUM's round with N = 100 R clients,
    S = 20 R per round (K, batch as App. H), keyed draws, CUDA graphs: the work of R stacked runs
    in one step (one model per client row, as stacked runs would have), without their separate
    server states (a few [p] vectors each: negligible). A proxy that says whether stacking pays
    before it is built; s/round / R is what one run would cost inside such a stack."""
    import argparse as _ap
    big = _ap.Namespace(**{**vars(args), "clients": args.clients * runs, "per_round": args.per_round * runs})
    prob, _ = build(big, "keyed", args.device)
    rows = schedule_rows(big, args.rounds + 1, args.device)
    eng = engine.VectorizedEngine(graphs=args.device.startswith("cuda"), compiled_draws=args.compiled)
    t = seconds_per_round(prob, eng, rows, args.local_steps, args.device)
    return f"{runs / t:.1f} ({t:.4f} s per round of {runs} x {args.per_round} clients)"


def worker(args) -> None:
    """One of ``--runs`` processes: builds the problem, warms up, waits for ``--start-at``, then
    counts FedSUM rounds until ``--start-at + --window``; prints the count."""
    from fedlib import algorithms
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
    if time.time() > args.start_at:
        print("LATE: ready after the window opened (raise --setup-s)", flush=True)
    time.sleep(max(0.0, args.start_at - time.time()))
    count, end = 0, args.start_at + args.window
    while time.time() < end:
        x = algo.round(x, rows[1 + count % (len(rows) - 1)])
        sync(args.device)
        count += 1
    print(f"ROUNDS {count}", flush=True)


def several_runs(args, runs: int) -> tuple[float, int, int]:
    """Run-rounds per second of ``runs`` processes at once on the device, how many of them were
    not ready when the timing window opened (their rate then undercounts), and how many could not
    capture CUDA graphs (they counted plain steps)."""
    start = time.time() + args.setup_s + (30.0 if args.compiled else 0.0)    # compiling: from the disk cache
    cmd = [sys.executable, __file__, "--worker", "--device", args.device, "--start-at", str(start),
           "--window", str(args.window), "--clients", str(args.clients), "--per-round", str(args.per_round),
           "--local-steps", str(args.local_steps), "--batch", str(args.batch)]
    cmd += ["--compiled"] if args.compiled else []
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(runs)]
    counts, late, plain = [], 0, 0
    for p in procs:
        out, _ = p.communicate(timeout=args.setup_s + args.window + 120)
        line = [ln for ln in out.splitlines() if ln.startswith("ROUNDS")]
        counts.append(int(line[-1].split()[1]) if line else 0)
        late += any(ln.startswith("LATE") for ln in out.splitlines()) or not line
        plain += any(ln.startswith("NOGRAPHS") for ln in out.splitlines())
    return sum(counts) / args.window, late, plain


def verifiable(device: str, tf32: bool, warn_only: bool = False) -> None:
    """Deterministic algorithms (``warn_only``: ops without a deterministic kernel warn instead of
    raising, as :func:`fedlib.arithmetic.verifiable_cuda` sets for campaigns); TF32 on or off."""
    if device.startswith("cuda"):
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.use_deterministic_algorithms(True, warn_only=warn_only)


def bit_checks(args, warn_only: bool) -> dict[str, str]:
    import fedlib
    n, k = args.clients, args.per_round
    cfg = ExperimentConfig(
        algorithm="fedsum", problem="neural", participation="uniform", rounds=arithmetic.ANCHOR_ROUNDS,
        problem_args={"dataset": "mnist", "partition": "dirichlet", "alpha": 0.1, "model": "fedsum_mnist_cnn",
                      "num_clients": n, "batch_size": args.batch, "train_eval_per_client": 20,
                      "draws": "keyed", **({} if args.real else {"synthetic": True,
                                                                  "synthetic_sizes": [60 * n, 500]})},
        participation_args={"per_round": k}, local_steps=args.local_steps, lr_local=0.01, lr_global=1.0,
        lr_schedule="fedsum_sqrt", eval_every=1)
    out = {}
    mode = "warn-only" if warn_only else "strict"
    verifiable(args.device, tf32=False, warn_only=warn_only)
    a = fedlib.run_config(cfg, device=args.device)
    b = fedlib.run_config(cfg, device=args.device)
    cols = [c for c in a.history.columns if c not in TIMING_COLUMNS]
    same = a.history[cols].equals(b.history[cols]) and torch.equal(a.params, b.params)
    out[f"run twice on the device, deterministic ({mode}), TF32 off: bit-equal"] = str(same)
    cpu = fedlib.run_config(cfg, device="cpu")
    anchor = arithmetic.Anchor.from_dict
    rel = anchor(a.info["anchor"]).max_rel(anchor(cpu.info["anchor"]))
    out["device vs CPU replay, anchor max rel (TF32 off)"] = (
        f"{rel:.2e} (tolerance CROSS_RTOL = {arithmetic.CROSS_RTOL:g}: "
        f"{'passes' if rel <= arithmetic.CROSS_RTOL else 'FAILS'})")
    if args.device.startswith("cuda"):
        verifiable(args.device, tf32=True, warn_only=warn_only)
        t = fedlib.run_config(cfg, device=args.device)
        rel32 = anchor(t.info["anchor"]).max_rel(anchor(cpu.info["anchor"]))
        out["device vs CPU replay, anchor max rel (TF32 on, measured only)"] = f"{rel32:.2e}"
        verifiable(args.device, tf32=False, warn_only=warn_only)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--minutes", type=float, default=5.0, help="stop starting sections after this")
    ap.add_argument("--rounds", type=int, default=6, help="timed rounds per variant")
    ap.add_argument("--repeat", type=int, default=2, help="timings per variant (median)")
    ap.add_argument("--runs", type=int, nargs="+", default=[4, 8], help="processes at once (section 3)")
    ap.add_argument("--window", type=float, default=20.0, help="seconds each process counts rounds")
    ap.add_argument("--setup-s", type=float, default=45.0, help="seconds allowed to start the processes")
    ap.add_argument("--app-h", action="store_true", help="App. H's setting on a CPU too")
    ap.add_argument("--stack", type=int, nargs="*", default=[8],
                    help="runs' clients in one vmap (a proxy of stacked runs; none: skip)")
    ap.add_argument("--no-compile", dest="compile", action="store_false",
                    help="skip the compiled-Threefry variant (torch.compile; CUDA only)")
    ap.add_argument("--synthetic", dest="real", action="store_false",
                    help="section 4 on random stand-in data (default: real MNIST when present)")
    ap.add_argument("--clients", type=int)
    ap.add_argument("--per-round", type=int)
    ap.add_argument("--local-steps", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compiled", action="store_true", help=argparse.SUPPRESS)   # a worker: compiled draws
    ap.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    small = args.device == "cpu" and not args.app_h
    for name, big, little in (("clients", 100, 10), ("per_round", 20, 4), ("local_steps", 10, 2),
                              ("batch", 128, 16)):
        if getattr(args, name) is None:
            setattr(args, name, little if small else big)
    if args.worker:
        return worker(args)
    if small:
        args.runs, args.window, args.setup_s, args.repeat, args.real = [2], 1.0, 12.0, 1, False
        args.stack, args.compile = [2], False
    args.compile = args.compile and args.device.startswith("cuda")
    args.compiled = False                     # compiled draws for sections 4 and 5, once shown bit-equal
    tf32_default = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    t0 = time.perf_counter()

    def left() -> bool:
        return time.perf_counter() - t0 < 60 * args.minutes

    _, src = build(args, "legacy", "cpu")
    gpu = torch.cuda.get_device_name() if args.device.startswith("cuda") else "none"
    print(f"device={args.device} ({gpu}) torch={torch.__version__} CPU threads={torch.get_num_threads()} "
          f"cores={os.cpu_count()} date={time.strftime('%Y-%m-%d')} data: {src}")
    print(f"N={args.clients} S={args.per_round} K={args.local_steps} batch={args.batch}"
          + (" (smoke: not App. H)" if small else " (FedSUM App. H)"), flush=True)
    table: list[tuple[str, str]] = []
    ok, what = check_draws(args)
    table.append(("keyed draws, device vs CPU: bit-equal", f"{ok} ({what})"))
    print(table[-1], flush=True)
    try:
        table.append(("CUDA-graph step vs plain step: bit-equal", check_graphs(args)))
    except Exception as e:  # noqa: BLE001 - reported in the table
        table.append(("CUDA-graph step vs plain step", f"failed: {type(e).__name__}: "
                                                         f"{str(e).splitlines()[0][:200]}"))
    print(table[-1], flush=True)
    if args.compile:
        for what, compiled in (("compiled Threefry", "threefry"), (COMPILED_ROW, True)):
            try:
                row = check_compiled_draws(args, compiled)
                table.append((f"keyed draws, {what} on the device vs CPU: bit-equal", row))
                args.compiled = args.compiled or (compiled is True and row.startswith("True"))
            except Exception as e:  # noqa: BLE001 - reported in the table
                table.append((f"keyed draws, {what}", f"failed: {type(e).__name__}: "
                                                      f"{str(e).splitlines()[0][:200]}"))
            print(table[-1], flush=True)
    if left():
        med, failed = speeds(args)
        for label, v in med.items():
            table.append((f"s/round, one run: {label}", f"{v:.4f}"))
            print(table[-1], flush=True)
        for label, why in failed.items():
            table.append((f"s/round, one run: {label}", f"failed: {why}"))
        try:
            table.append(("device work of one round (keyed, no graphs; torch.profiler)", gpu_profile(args)))
        except Exception as e:  # noqa: BLE001 - reported in the table
            why = f"{type(e).__name__}: {str(e).splitlines()[0][:150]}"
            table.append(("device work of one round", f"failed: {why}"))
        print(table[-1], flush=True)
        keyed_times = [v for k, v in med.items() if "keyed" in k]
        ref = med.get("reference (client by client), legacy draws")
        if keyed_times and ref:
            table.append(("speed-up, best keyed / reference", f"{ref / min(keyed_times):.1f}x"))
    else:
        table.append(("speeds", "skipped: out of minutes"))
    if left():
        try:
            checks = bit_checks(args, warn_only=False)
        except Exception as e:  # noqa: BLE001 - an op without a deterministic kernel: say which
            table.append(("deterministic algorithms (strict)", f"failed: {type(e).__name__}: "
                                                               f"{str(e).splitlines()[0][:200]}"))
            checks = bit_checks(args, warn_only=True)
        for k, v in checks.items():
            table.append((k, v))
            print(table[-1], flush=True)
    else:
        table.append(("bit checks", "skipped: out of minutes"))
    torch.use_deterministic_algorithms(False)      # the speeds below under the same settings as above
    if args.device.startswith("cuda"):
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32_default
    for runs in args.stack:
        if not left():
            table.append((f"{runs} runs' clients in one vmap", "skipped: out of minutes"))
            continue
        try:
            result = stacked_proxy(args, runs)
        except Exception as e:  # noqa: BLE001 - reported in the table
            result = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}"
        label = (f"run-rounds/s, {runs} runs' clients in one vmap (proxy of stacked runs; keyed, "
                 f"graphs{DRAWN[args.compiled]})")
        table.append((label, result))
        print(table[-1], flush=True)
    for runs in args.runs:
        if not left():
            table.append((f"{runs} runs at once", "skipped: out of minutes"))
            continue
        try:
            rate, late, plain = several_runs(args, runs)
            note = [f"{late} of {runs} not ready in time"] if late else []
            note += [f"{plain} of {runs} without graphs"] if plain else []
            result = f"{rate:.1f}" + (f" ({'; '.join(note)})" if note else "")
        except Exception as e:  # noqa: BLE001 - reported in the table
            result = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}"
        label = f"run-rounds/s, {runs} processes at once (keyed, graphs{DRAWN[args.compiled]})"
        table.append((label, result))
        print(table[-1], flush=True)
    print(f"\n| check ({'smoke' if small else 'App. H'}, {args.device}, {gpu}, {time.strftime('%Y-%m-%d')}) "
          "| result |\n|---|---|")
    for k, v in table:
        print(f"| {k} | {v} |")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
