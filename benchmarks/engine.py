"""Rounds per second of FedSUM on FedSUM's MNIST CNN: vectorized engine vs per-client reference.

Setting of FedSUM App. H: N=100 clients, S=20 per round (uniform), K=10 local steps, batch 128,
Dirichlet(0.1) label split. Uses ``mnist.npz`` (Keras layout) from $FEDLIB_DATA when present,
otherwise random tensors of MNIST's shape (speed does not depend on pixel values).

    python benchmarks/engine.py [--rounds 5] [--device cuda] [--draws legacy|keyed|both]

``--draws`` picks the draw scheme of minibatches and dropout masks (``Neural(draws=...)``):
``legacy`` (default, every stored run's), ``keyed`` (:mod:`fedlib.keyed`) or ``both``
(interleaved, with the ratio keyed / legacy of the default strategy).

The last line printed is the speed-up ratio.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch

from fedlib import algorithms, engine, models, participation, partition, problems


def mnist_like(seed: int = 0):
    path = Path(os.environ.get("FEDLIB_DATA", "~/.cache/fedlib")).expanduser() / "mnist.npz"
    if path.is_file():
        with np.load(path) as z:
            xtr, ytr, xte, yte = z["x_train"], z["y_train"], z["x_test"], z["y_test"]
        src = f"MNIST from {path}"
    else:
        rng = np.random.default_rng(seed)
        xtr = rng.integers(0, 256, (60000, 28, 28), dtype=np.uint8)
        ytr = rng.integers(0, 10, 60000)
        xte, yte = xtr[:10000], ytr[:10000]
        src = "random tensors of MNIST's shape"
    def prep(x):
        return ((torch.tensor(x, dtype=torch.float32) / 255 - 0.1307) / 0.3081).unsqueeze(1)
    return (prep(xtr), torch.tensor(ytr, dtype=torch.long)), (prep(xte), torch.tensor(yte)), src


def round_inputs(sched, device: str) -> list:
    """One :class:`fedlib.algorithms.RoundInput` per round of ``sched`` (rates 0.01 and 1) on ``device``."""
    return [algorithms.RoundInput(t, *(torch.tensor(np.array(a[t]), device=device) for a in
                                       (sched.active, sched.uplink_ok, sched.local_steps)), 0.01, 1.0)
            for t in range(len(sched.active))]


def seconds_per_round(prob, engine_name, rows: list, local_steps: int, device: str) -> float:
    """FedSUM's round loop of ``fedlib.run`` without its evaluations: one warm-up round on
    ``rows[0]``, then the mean wall seconds of a round over ``rows[1:]`` (``engine_name``: a name
    of :func:`fedlib.engine.get_engine` or an engine object)."""
    def sync():
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()
    eng = engine.get_engine(engine_name) if isinstance(engine_name, str) else engine_name
    algo = algorithms.get("fedsum")(prob, eng)
    x = prob.initial_params().to(device)
    algo.init(x, local_steps)
    x = algo.round(x, rows[0])
    sync()
    t0 = time.perf_counter()
    for r in rows[1:]:
        x = algo.round(x, r)
    sync()
    return (time.perf_counter() - t0) / (len(rows) - 1)


def draws_only(prob, args) -> None:
    """Milliseconds of one step's minibatches and dropout masks for S clients (median of
    ``--repeat`` x 10 steps): legacy (a generator per client, as ``Neural`` draws them) and keyed
    (all clients at once: numpy on a CPU; the torch int64 path on the device)."""
    clients = list(range(0, args.clients, max(1, args.clients // args.per_round)))[:args.per_round]

    def sync():
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    def timed(fn) -> float:
        out = []
        for r in range(args.repeat):
            fn(r, 0)
            sync()
            t0 = time.perf_counter()
            for k in range(1, 11):
                fn(r, k)
            sync()
            out.append((time.perf_counter() - t0) / 10 * 1e3)
        return float(np.median(out))
    prob.set_draws("legacy")
    legacy = timed(lambda r, k: [prob._client_draws(c, r, k) for c in clients])
    prob.set_draws("keyed")
    keyed = timed(lambda r, k: prob._keyed_draws(clients, r, k))
    prob._keyed_numpy = False
    dev = torch.tensor(clients, device=args.device)
    torch_path = timed(lambda r, k: prob._keyed_draws(dev, r, k))
    here = keyed if args.device == "cpu" else torch_path
    print(f"one step's draws of S={len(clients)} clients (batch {args.batch}, indices, weights, masks): "
          f"legacy {legacy:.1f} ms; keyed {'numpy' if args.device == 'cpu' else 'torch'} {here:.1f} ms; "
          f"keyed torch int64 path {torch_path:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--per-round", type=int, default=20)
    ap.add_argument("--local-steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--skip-vmap", action="store_true", help="skip the vmap strategy (slow on CPU)")
    ap.add_argument("--skip-reference", action="store_true", help="skip the reference engine")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    ap.add_argument("--repeat", type=int, default=3, help="timings per engine (median reported)")
    ap.add_argument("--draws", choices=["legacy", "keyed", "both"], default="legacy",
                    help="draw scheme of minibatches and dropout masks (both: each variant under each)")
    ap.add_argument("--draws-only", action="store_true",
                    help="time one step's draws of S clients (legacy, keyed) instead of rounds")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    train, test, src = mnist_like()
    part = partition.dirichlet(train[1].numpy(), args.clients, 0.1, seed=0).indices
    model = models.build("fedsum_mnist_cnn", seed=0)
    prob = problems.Neural(model, part, train, test, batch_size=args.batch, device=args.device)
    sched = participation.build("uniform", args.clients, args.rounds + 1, seed=0,
                                per_round=args.per_round, local_steps=args.local_steps)
    print(f"device={args.device} torch={torch.__version__} threads={torch.get_num_threads()} data: {src}")
    print(f"N={args.clients} S={args.per_round} K={args.local_steps} batch={args.batch} "
          f"params={prob.dim}")
    if args.draws_only:
        return draws_only(prob, args)
    default = prob.strategy
    variants = [("vectorized (vmap)", "vectorized", "vmap", None),
                ("vectorized (vmap, pooled draws)", "vectorized", "vmap", "pooled"),
                ("vectorized (loop, 1 thread)", "vectorized", "loop", "1"),
                ("vectorized (loop, threads)", "vectorized", "loop", None),
                ("reference", "reference", default, None)]
    if args.skip_reference:
        variants = [v for v in variants if v[1] != "reference"]
    if args.skip_vmap:
        variants = [v for v in variants if v[2] != "vmap" or v[1] == "reference"]
    elif not args.device.startswith("cuda"):           # Neural(parallel_draws=True): for GPUs
        variants = [v for v in variants if v[3] != "pooled"]
    schemes = ["legacy", "keyed"] if args.draws == "both" else [args.draws]
    variants = [(label + ("" if d == "legacy" else ", keyed"), name, strategy, threads, d)
                for label, name, strategy, threads in variants for d in schemes
                if not (threads == "pooled" and d == "keyed")]    # keyed draws need no pool
    rows = round_inputs(sched, args.device)
    times: dict[str, list[float]] = {v[0]: [] for v in variants}
    cpu: dict[str, list[float]] = {v[0]: [] for v in variants}     # this process's CPU seconds
    for _ in range(args.repeat):                       # interleaved, so drift hits all alike
        for label, name, strategy, threads, draws in variants:
            prob.strategy, prob.parallel_draws = strategy, threads == "pooled"
            prob.set_draws(draws)
            if threads == "pooled":
                os.environ.pop("FEDLIB_THREADS", None)
            elif threads:
                os.environ["FEDLIB_THREADS"] = threads
            else:
                os.environ.pop("FEDLIB_THREADS", None)
            c0 = time.process_time()
            times[label].append(seconds_per_round(prob, name, rows, args.local_steps, args.device))
            cpu[label].append((time.process_time() - c0) / len(rows))     # the warm-up round too
            print(f"  {label}: {times[label][-1]:.3f} s/round, {cpu[label][-1]:.3f} CPU s/round",
                  flush=True)
    os.environ.pop("FEDLIB_THREADS", None)
    med = {k: float(np.median(v)) for k, v in times.items()}
    for label, v in times.items():
        print(f"{label:38s}: {med[label]:.3f} s/round (median of {len(v)}; min {min(v):.3f}, "
              f"max {max(v):.3f}); {float(np.median(cpu[label])):.3f} CPU s/round")
    key = "vectorized (loop, threads)" if default == "loop" else "vectorized (vmap)"
    if args.draws == "both" and key in med and key + ", keyed" in med:
        ratio = [k / lg for k, lg in zip(cpu[key + ", keyed"], cpu[key], strict=True)]
        print(f"keyed / legacy draws, default strategy: {med[key + ', keyed'] / med[key]:.3f} (wall, "
              f"medians), {float(np.median(ratio)):.3f} (CPU seconds, median of the interleaved pairs' "
              "ratios)")
    if args.draws == "keyed":
        key += ", keyed"
    print(f"default strategy on {args.device}: {default}")
    if "vectorized (vmap, pooled draws)" in med and "reference" in med:
        print(f"speed-up vmap with pooled draws / reference: "
              f"{med['reference'] / med['vectorized (vmap, pooled draws)']:.2f}")
    key = "vectorized (loop, threads)" if default == "loop" else "vectorized (vmap)"
    ref = "reference" + (", keyed" if args.draws == "keyed" else "")
    if ref in med and key in med:
        print(f"speed-up vectorized (default) / reference: {med[ref] / med[key]:.2f}")


if __name__ == "__main__":
    main()
