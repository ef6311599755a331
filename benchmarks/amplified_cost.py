"""Seconds per round of notebook 08's phases (Wang & Ji 2022, arXiv:2205.13648, Sec. 6) on
Fashion-MNIST for candidate quick-profile models, on one torch thread (a sweep worker's setting).

Per model: a FedAvg round under periodic availability (S = 10 clients, I = 5 steps of batch 16;
the warm-up's and every Alg. 1 phase's round), one evaluation (the whole test set and 20
training samples per client), a wait-minibatch round (all 250 clients, I = 5 minibatch steps)
and a wait-full round (all 250 clients, I = 5 full local gradients). Notebook 08 multiplies
these by its store's runs to size the quick profile.

    python benchmarks/amplified_cost.py [--models fedsum_mnist_cnn wj_fmnist_cnn] [--rounds 20]

Needs Fashion-MNIST (``fedlib.data.load("fashion_mnist")``: the Debian package
``dataset-fashion-mnist``, or ``$FEDLIB_DATA``).
"""

from __future__ import annotations

import argparse
import platform
import time
from dataclasses import replace

import torch

from fedlib import arithmetic, models
from fedlib.runner import run_config
from fedlib.studies.amplified import amplified_setup


def _timed(config, x0=None) -> tuple[float, float, int]:
    """(seconds of the run's rounds without its evaluations and set-up, seconds of one
    evaluation, rounds); the history's ``seconds`` and ``eval_seconds`` are cumulative."""
    h = run_config(config, x0=x0).history
    total, evals = float(h["seconds"].iloc[-1]), float(h["eval_seconds"].iloc[-1])
    return total - evals, evals / len(h), config.rounds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["fedsum_mnist_cnn", "fedau_fmnist_cnn", "wj_fmnist_cnn"])
    ap.add_argument("--rounds", type=int, default=20, help="FedAvg rounds timed per model")
    ap.add_argument("--skip-full", action="store_true", help="skip the wait-full round (the slowest)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"cpu: {arithmetic.cpu_model()} ({platform.machine()}), torch {torch.__version__}, 1 thread, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for m in args.models:
        s = replace(amplified_setup("quick"), dataset="fashion_mnist", model=m)
        base = s.base().replace(rounds=args.rounds, eval_every=args.rounds)
        # the setup drops dropout only for fedsum_mnist_cnn; the others have none
        train, ev, r = _timed(base)
        x0 = base.build_problem(None).initial_params()
        mb, _, _ = _timed(s.phase("wait-minibatch", s.cycle, 0.1).replace(eval_every=1), x0)
        line = (f"{m}: {models.spec_param_count(m):,} parameters; FedAvg round {train / r:.3f} s "
                f"(mean of {r}); evaluation {ev:.2f} s; "
                f"wait-minibatch round {mb:.1f} s")
        if not args.skip_full:
            full, _, _ = _timed(s.phase("wait-full", s.cycle, 0.1).replace(eval_every=1), x0)
            line += f"; wait-full round {full:.1f} s"
        print(line, flush=True)


if __name__ == "__main__":
    main()
