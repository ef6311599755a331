"""A sweep of 4 small MNIST runs: serial vs ProcessPoolExecutor(2) vs a 2-worker Dask LocalCluster.

Each way computes the same 4 configs into a fresh store; the frames must agree (timing columns
aside). Prints wall seconds and speed-ups over the serial sweep. Needs ``mnist.npz`` (set
``FEDLIB_DATA``) and the ``cluster`` extra (``distributed``).

    FEDLIB_DATA=../shared/data python benchmarks/sweep.py [--rounds 6]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import pandas as pd
import torch

import fedlib
from fedlib import ExperimentConfig, config, store, sweeps


def configs(rounds: int) -> list[ExperimentConfig]:
    base = ExperimentConfig(
        algorithm="fedavg", problem="neural", participation="uniform", rounds=rounds,
        problem_args={"dataset": "mnist", "partition": "dirichlet", "alpha": 0.1, "num_clients": 100,
                      "model": "fedsum_mnist_cnn", "batch_size": 64, "train_eval_per_client": 20},
        participation_args={"per_round": 20}, local_steps=5, lr_local=0.05, eval_every=rounds)
    return config.grid(base, algorithm=["fedavg", "fedsum"], seed=[0, 1])


def timed(label: str, fn) -> tuple[float, pd.DataFrame]:
    t0 = time.perf_counter()
    df = fn()
    dt = time.perf_counter() - t0
    print(f"{label:<34s} {dt:7.1f} s", flush=True)
    return dt, df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    cs = configs(args.rounds)
    cores = os.cpu_count()
    print(f"fedlib {fedlib.__version__}, torch {torch.__version__}, {cores} cores; 4 runs of "
          f"{args.rounds} rounds (FedAvg/FedSUM x 2 seeds, MNIST N=100, S=20, K=5, batch 64)")
    fedlib.ExperimentConfig.build_problem(cs[0])            # load MNIST once (page cache)
    with tempfile.TemporaryDirectory() as tmp:
        t_serial, serial = timed(f"serial ({torch.get_num_threads()} torch threads)",
                                 lambda: fedlib.sweep(cs, f"{tmp}/serial", progress=False))

        def pool():
            with ProcessPoolExecutor(2) as ex:
                return fedlib.sweep(cs, f"{tmp}/pool", executor=ex, progress=False, torch_threads=1)
        t_pool, df_pool = timed("ProcessPoolExecutor(2) x 1 thread", pool)

        def dask():
            import dask
            import distributed
            with dask.config.set({"distributed.nanny.pre-spawn-environ": sweeps.DASK_WORKER_ENV}), \
                    distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                          dashboard_address=None, silence_logs=40) as cl, \
                    distributed.Client(cl) as client:
                return fedlib.sweep(cs, f"{tmp}/dask", executor=client.get_executor(), progress=False,
                                    torch_threads=1)
        t_dask, df_dask = timed("Dask LocalCluster 2 x 1 thread", dask)
        for label, df in (("serial", serial), ("process pool", df_pool), ("dask", df_dask)):
            per_run = df.groupby("key")["seconds"].max()
            print(f"  {label:<13s} seconds inside each run: {', '.join(f'{v:.1f}' for v in per_run)}")
        cols = [c for c in serial if c not in store.TIMING_COLUMNS]
        pd.testing.assert_frame_equal(df_pool[cols], df_dask[cols], check_exact=True)
        num = [c for c in cols if pd.api.types.is_float_dtype(serial[c])]
        diff = (serial[num] - df_pool[num]).abs().max().max()
        print(f"process pool == dask bit for bit; serial (2 threads) vs 1 thread per run: max "
              f"|difference| {diff:.1e} (convolution reductions ordered by thread count)")
    print(f"speed-up over serial: process pool {t_serial / t_pool:.2f}x, dask {t_serial / t_dask:.2f}x")


if __name__ == "__main__":
    main()
