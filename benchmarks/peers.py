"""fedlib side by side with peers on FedSUM's App. H round (FedAvg, MNIST CNN, N = 100 Dirichlet 0.1,
S = 20 uniform, K = 10, batch 128, lr 0.01, no evaluation), seconds per round.

Not part of `make test`. The peers live in their own virtual environment (torch pinned as in the
Makefile), created on first use:

    FEDLIB_DATA=../shared/data python3 benchmarks/peers.py [--rounds 3] [--venv benchmarks/.peers-venv]

Systems: fedlib's default engine, fedlib's reference engine, a plain PyTorch loop (a DataLoader
per client, clients in sequence), Flower's simulation engine (2 workers x 1 CPU, Ray) and
BlazeFL's thread-pool trainer (2 threads; its stock trainer runs whole epochs, so ours stops it
after K = 10 steps). Each system runs one warm-up round, then ``--rounds`` timed rounds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
PEERS = ["flwr[simulation]==1.41.0"]


def ensure_venv(venv: Path) -> Path:
    py = venv / "bin" / "python"
    if not (venv / ".ready").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(py), "-m", "pip", "install", "--quiet"]
        subprocess.run(pip + [TORCH_SPEC], check=True)
        subprocess.run(pip + ["-e", str(HERE.parent)] + PEERS, check=True)
        wheels = venv / "wheels"   # BlazeFL declares Python >= 3.12 but runs on 3.11
        subprocess.run([str(py), "-m", "pip", "download", "--quiet", "blazefl==2.0.3", "--no-deps",
                        "--ignore-requires-python", "-d", str(wheels)], check=True)
        subprocess.run(pip + ["--no-deps", "--ignore-requires-python", *map(str, wheels.glob("*.whl"))],
                       check=True)
        (venv / ".ready").touch()
    return py


# ----------------------------------------------------------------------------------- systems
def plan(rounds: int):
    import numpy as np
    rng = np.random.default_rng(0)
    from _peer_data import N, S
    return [sorted(rng.choice(N, S, replace=False).tolist()) for _ in range(rounds + 1)]


def average(states):
    return {k: sum(s[k] for s in states) / len(states) for k in states[0]}


def run_plain(rounds: int) -> list[float]:
    from _peer_data import local_steps, model
    net, stamps = model(), []
    for t, cids in enumerate(plan(rounds)):
        t0 = time.perf_counter()
        glob, states = {k: v.clone() for k, v in net.state_dict().items()}, []
        for c in cids:
            net.load_state_dict(glob)
            local_steps(net, c, seed=1000 * t + c)
            states.append({k: v.detach().clone() for k, v in net.state_dict().items()})
        net.load_state_dict(average(states))
        stamps.append(time.perf_counter() - t0)
    return stamps[1:]


def run_fedlib(rounds: int, engine: str) -> list[float]:
    import numpy as np
    from _peer_data import LR, K, N, mnist, model, partition

    import fedlib
    from fedlib import participation, problems
    x, y = mnist()
    prob = problems.Neural(model(), partition(), (x, y), (x[:10], y[:10]), batch_size=128)
    active = np.zeros((rounds + 1, N), dtype=np.int64)
    for t, cids in enumerate(plan(rounds)):
        active[t, cids] = 1
    sched = participation.Schedule(active, np.ones_like(active, bool), np.full_like(active, K))
    stamps = []
    fedlib.run("fedavg", prob, sched, lr_local=LR, eval_every=10**6, progress=False, engine=engine,
               callback=lambda t, _: stamps.append(time.perf_counter()))
    return list(np.diff(stamps))


def run_blazefl(rounds: int) -> list[float]:
    import threading

    import torch
    from _peer_data import local_steps, model
    from blazefl.contrib.fedavg import (
        FedAvgDownlinkPackage,
        FedAvgThreadPoolClientTrainer,
        FedAvgUplinkPackage,
    )
    from blazefl.core import deserialize_model, serialize_model

    class KStepTrainer(FedAvgThreadPoolClientTrainer):
        """BlazeFL's thread-pool FedAvg trainer with K local steps instead of whole epochs."""

        def __init__(self, num_parallels: int):   # noqa: D107 - only what worker() needs
            self.num_parallels, self.device, self.cache = num_parallels, "cpu", []
            self.stop_event = threading.Event()

        def worker(self, cid, device, payload, stop_event):
            net = model()
            deserialize_model(net, payload.model_parameters)
            n = local_steps(net, cid, seed=cid)
            return FedAvgUplinkPackage(cid, serialize_model(net), n)

    trainer, net, stamps = KStepTrainer(num_parallels=2), model(), []
    for cids in plan(rounds):
        t0 = time.perf_counter()
        trainer.local_process(FedAvgDownlinkPackage(serialize_model(net)), cids)
        ups = trainer.uplink_package()
        deserialize_model(net, torch.stack([u.model_parameters for u in ups]).mean(0))
        stamps.append(time.perf_counter() - t0)
    return stamps[1:]


def run_flower(rounds: int) -> list[float]:
    from _peer_data import N, S, local_steps, model
    from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import FedAvg
    from flwr.simulation import run_simulation

    client = ClientApp()

    @client.train()
    def train(msg: Message, context: Context) -> Message:
        import torch
        torch.set_num_threads(1)
        net = model()
        net.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        cid = int(context.node_config["partition-id"])
        n = local_steps(net, cid, seed=cid)
        content = RecordDict({"arrays": ArrayRecord(net.state_dict()),
                              "metrics": MetricRecord({"num-examples": n})})
        return Message(content=content, reply_to=msg)

    server, stamps = ServerApp(), []

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        strategy = FedAvg(fraction_train=S / N, fraction_evaluate=0.0, min_train_nodes=S,
                          min_available_nodes=N)
        strategy.start(grid=grid, initial_arrays=ArrayRecord(model().state_dict()), num_rounds=rounds + 1,
                       evaluate_fn=lambda rnd, arrays: stamps.append(time.perf_counter()) or None)

    run_simulation(server_app=server, client_app=client, num_supernodes=N,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                   "init_args": {"num_cpus": 2}})
    return [b - a for a, b in zip(stamps[1:-1], stamps[2:], strict=False)]


def inside(rounds: int) -> None:
    import statistics

    import flwr
    import torch

    import fedlib
    sys.path.insert(0, str(HERE))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; fedlib {fedlib.__version__}; "
          f"flwr {flwr.__version__}; blazefl 2.0.3; {time.strftime('%Y-%m-%d')}")
    systems = [("fedlib default engine", lambda: run_fedlib(rounds, "vectorized")),
               ("fedlib reference engine", lambda: run_fedlib(rounds, "reference")),
               ("plain PyTorch, DataLoader per client", lambda: run_plain(rounds)),
               ("BlazeFL 2.0.3, thread pool (2)", lambda: run_blazefl(rounds)),
               ("Flower 1.41 simulation, 2 x 1 CPU", lambda: run_flower(rounds))]
    rows = []
    for name, fn in systems:
        try:
            times = fn()
            rows.append((name, statistics.median(times), min(times), max(times)))
        except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported, not hidden
            rows.append((name, float("nan"), float("nan"), float("nan")))
            print(f"{name}: could not run: {type(e).__name__}: {e}")
        med, lo, hi = rows[-1][1:]
        print(f"{name:40s} {med:.3f} s/round (min {lo:.3f}, max {hi:.3f})", flush=True)
    base = rows[0][1]
    print("\n| system | s/round (median) | min - max | vs fedlib default |\n|---|---|---|---|")
    for name, med, lo, hi in rows:
        print(f"| {name} | {med:.2f} | {lo:.2f} - {hi:.2f} | {med / base:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--venv", type=Path, default=HERE / ".peers-venv")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        inside(args.rounds)
        return
    py = ensure_venv(args.venv)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([str(py), str(Path(__file__).resolve()), "--inside", "--rounds", str(args.rounds)],
                   env=env, check=True)


if __name__ == "__main__":
    main()
