"""Wang & Ji 2022 (notebook 08): a FedAvg warm-up per seed under periodic availability and the
phases after it (amplification, no amplification, wait-minibatch, wait-full), per profile."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import claims
from ..analysis import GridSearch, mean_std, search_log_grid
from ..config import ExperimentConfig
from ..notebook import check_profile

__all__ = ["QUOTES", "AmplifiedSetup", "amplified_setup"]

#: per profile: data, model, N, availability window, warm-up, horizon and grid horizon (rounds),
#: evaluation interval, the P of Fig. 2, the grid's multiples of the warm-up rate, training-loss
#: samples per client (quick: MNIST standing in for FashionMNIST, the availability time scaled
#: down 5x; the warm-up runs to its plateau, 1,500 rounds; the grid and the figures over two
#: cycles, so the grid's runs at the chosen rates are the figures' runs of the first seed)
SETTINGS = {
    "smoke": dict(dataset="digits", model="fedsum_mnist_cnn", num_clients=10, window=2, warmup=6,
                  horizon=8, grid_horizon=4, eval_every=2, P_values=(1, 5, 10), grid=(1.0, 0.1),
                  train_eval=10),
    "quick": dict(dataset="mnist", model="fedsum_mnist_cnn", num_clients=250, window=20, warmup=1500,
                  horizon=200, grid_horizon=200, eval_every=20, P_values=(1, 20, 60, 100, 140, 180),
                  grid=(1.0, 0.1, 0.01, 0.001, 0.0001), train_eval=20),
    "paper": dict(dataset="fashion_mnist", model="wj_fmnist_cnn", num_clients=250, window=100,
                  warmup=2000, horizon=5000, grid_horizon=1000, eval_every=100,
                  P_values=(1, 100, 300, 500, 700, 900), grid=(1.0, 0.1, 0.01, 0.001, 0.0001),
                  train_eval=100),
}
#: the rates of the authors' FashionMNIST runs after the warm-up (their README and config):
#: method label's algorithm and gamma -> rate; the wait-for-all baselines keep the warm-up's rate
AUTHORS_RATES = {("amplified_fedavg", 10.0): 1e-5, ("amplified_fedavg", 1.0): 1e-5,
                 ("wait_minibatch", None): 0.1, ("wait_full", None): 0.1}
_NAMES = {"mnist": "MNIST, standing in for FashionMNIST", "digits": "digits (smoke test)",
          "fashion_mnist": "FashionMNIST"}
#: Sec. 6's words behind notebook 08's claims
QUOTES = {
    "wait": 'we observe that the "wait-minibatch" and "wait-full" methods perform worse than Algorithm 1 '
            "with amplification",
    "full": '"wait-full", which computes the gradient on the entire dataset, does not provide substantial '
            'gain compared to "wait-minibatch"',
    "lowest": "standard FedAvg (i.e., Algorithm 1 without amplification) gives the lowest performance",
    "P1": 'P=1, which corresponds to the "classical" setting of FedAvg with two-sided learning rates, does '
          "not give the best performance",
    "smaller": "compared to P=500, we see that P=100 and P=300 give a similar performance",
    "larger": "the performances of P=700 and P=900 are even worse",
}
#: test accuracy at chance (10 classes)
CHANCE = 0.1


@dataclass(frozen=True)
class AmplifiedSetup:
    """Wang & Ji 2022 at one profile (see :data:`SETTINGS`): 5 availability groups, S = 10 sampled
    from the available ones, I = 5 local steps, minibatch 16, warm-up rate 0.1."""

    profile: str
    dataset: str
    model: str
    num_clients: int
    window: int
    warmup: int
    horizon: int
    grid_horizon: int
    eval_every: int
    P_values: tuple
    grid: tuple
    train_eval: int
    seed: int = 0
    stand_in: int = 0
    groups: int = 5
    lr0: float = 0.1
    per_round: int = 10
    local_steps: int = 5
    batch: int = 16

    @property
    def cycle(self) -> int:
        """Rounds until every group has been available once."""
        return self.groups * self.window

    @property
    def data_name(self) -> str:
        return _NAMES[self.dataset]

    @property
    def methods(self) -> dict[str, tuple[str, dict]]:
        """Label -> (algorithm, options) of Fig. 1."""
        c = self.cycle
        return {f"amplification (eta=10, P={c})": ("amplified_fedavg", {"P": c, "gamma": 10.0}),
                "no amplification (eta=1)": ("amplified_fedavg", {"P": c, "gamma": 1.0}),
                "wait-minibatch": ("wait_minibatch", {"cycle": c}),
                "wait-full": ("wait_full", {"cycle": c})}

    def base(self) -> ExperimentConfig:
        """This seed's warm-up: FedAvg (eta = 1) at the initial rate for ``warmup`` rounds."""
        synthetic = {}
        if self.stand_in:
            synthetic = {"synthetic": True, "synthetic_sizes": [20 * self.num_clients, 200]}
        model_args = {"dropout": 0.0} if self.model == "fedsum_mnist_cnn" else {}
        return ExperimentConfig(
            algorithm="fedavg", problem="neural", participation="periodic", rounds=self.warmup,
            problem_args={"dataset": self.dataset, "partition": "majority_label", "similarity": 0.05,
                          "model": self.model, "model_args": model_args, "num_clients": self.num_clients,
                          "batch_size": self.batch, "train_eval_per_client": self.train_eval,
                          "seed": self.seed, **synthetic},
            participation_args={"per_round": self.per_round, "groups": self.groups, "window": self.window},
            local_steps=self.local_steps, lr_local=self.lr0, eval_every=self.eval_every, seed=self.seed)

    def at_seed(self, seed: int) -> AmplifiedSetup:
        """The same setup at ``seed``: its own split, model, minibatch streams, availability offset,
        selection walk and warm-up run (seeds are independent runs, each with its own warm-up)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed: must be a non-negative integer, got {seed!r}")
        return replace(self, seed=int(seed))

    def phase(self, label: str, horizon: int, lr: float, **extra) -> ExperimentConfig:
        """Method ``label`` continuing this setup's warm-up (:meth:`base`) for ``horizon`` rounds
        of time (a wait round costs a cycle), everything seeded by the setup's ``seed``."""
        if label not in self.methods:
            raise ValueError(f"label: must be one of {', '.join(map(repr, self.methods))}; got {label!r}")
        algo, opts = self.methods[label]
        wait = algo.startswith("wait")
        rounds = horizon // self.cycle if wait and not self.stand_in else horizon
        return self.base().replace(algorithm=algo, algorithm_args={**opts, **extra}, rounds=max(rounds, 1),
                                   lr_local=float(lr), eval_every=1 if wait else self.eval_every,
                                   init_from=self.base())

    def warmups(self, seeds) -> list[ExperimentConfig]:
        """The warm-up run of each seed (:meth:`at_seed`, :meth:`base`)."""
        return [self.at_seed(k).base() for k in seeds]

    def warmup_table(self, warm: pd.DataFrame, earlier: int) -> pd.DataFrame:
        """Per seed of ``warm`` (warm-up curves with a ``seed`` column): the test accuracy averaged
        over the cycle of evaluations ending at round ``earlier`` (an earlier, shorter warm-up),
        one cycle before the end and at the end, and the gain over the last cycle (a plateau
        gains little)."""
        rows = []
        for k, h in warm.groupby("seed", sort=False):
            end = int(h["round"].max())

            def near(r: float, h=h) -> float:
                sel = h[(h["round"] > r - self.cycle) & (h["round"] <= r)]
                return float(sel["test_acc"].mean()) if len(sel) else float("nan")
            at = {"earlier": near(min(earlier, end)), "cycle before": near(max(end - self.cycle, 0)),
                  "end": near(end)}
            rows.append({"seed": k, f"test acc, cycle to round {min(earlier, end)}": at["earlier"],
                         f"test acc, cycle to round {max(end - self.cycle, 0)}": at["cycle before"],
                         f"test acc, cycle to round {end}": at["end"],
                         "gain over the last cycle": at["end"] - at["cycle before"]})
        return pd.DataFrame(rows)

    @property
    def setting(self) -> str:
        """The setting of the claim rows (a stand-in or smoke run reproduces nothing)."""
        if self.stand_in or self.profile == "smoke":
            return claims.scale_cause(self.profile, self.stand_in, self.horizon, "")
        return (f"{self.profile} profile ({self.data_name}, FedSUM's small CNN, cycle {self.cycle}, "
                f"{self.horizon / self.cycle:g} cycles after the warm-up)")

    def outcome(self, df: pd.DataFrame, config: ExperimentConfig) -> dict:
        """The outcome of ``config``'s run in ``df`` (ok, diverged, error, or collapsed:
        :func:`fedlib.claims.collapse`) and, if ok, its late-window test accuracy and training
        loss (:meth:`late_window`); NaN otherwise."""
        h = df[df["key"] == config.key()].sort_values("round")
        status = h["status"].iloc[-1]
        start, stuck = claims.collapse(h, CHANCE)
        outcome = (f"collapsed at round {int(start)}" if status == "ok" and stuck else
                   "ok" if status == "ok" else str(status))
        ok = outcome == "ok"
        return {"outcome": outcome, "acc": self.late_window(df, config, "test_acc") if ok else np.nan,
                "loss": self.late_window(df, config, "loss") if ok else np.nan}

    @staticmethod
    def outcome_table(values: dict, groups: dict, seeds: list) -> pd.DataFrame:
        """Per group (``groups``: name -> {column: value} naming it, its runs keyed by
        ``key(seed)`` in ``values`` under ``"key"``): late test accuracy and training loss (mean
        +- std over the runs that are ok), runs ok, and the runs that are not."""
        rows = []
        for cols in groups.values():
            cols = dict(cols)
            key = cols.pop("key")
            v = [values[key(k)] for k in seeds]
            okv = [x for x in v if x["outcome"] == "ok"]
            rows.append({**cols, "late test acc": mean_std(pd.Series([x["acc"] for x in okv], dtype=float)),
                         "late train loss": mean_std(pd.Series([x["loss"] for x in okv], dtype=float)),
                         "runs ok": f"{len(okv)} of {len(v)}",
                         "not ok": "; ".join(f"seed {k}: {x['outcome']}"
                                             for k, x in zip(seeds, v, strict=True)
                                             if x["outcome"] != "ok") or "-"})
        return pd.DataFrame(rows)

    def claims(self, vals1: dict, vals2: dict, seeds: list, rate_sets: dict) -> list[dict]:
        """Sec. 6's claims: about Fig. 2 from ``vals2`` ((seed, P) -> :meth:`outcome`) at the best
        grid rate (the first of ``rate_sets``), about Fig. 1 from ``vals1`` ((rate set, seed,
        method) -> :meth:`outcome`) under each rate set; a row at another rate set says which
        rates in its cause. P = 1 is not the best (the cycle beats it), a smaller P performs like
        the cycle, a larger P is worse; the wait baselines are worse than amplification, wait-full
        gains nothing over wait-minibatch, FedAvg without amplification is the lowest."""
        margin, amp, no_amp, wait_mb, wait_full = claims.MARGINS["test accuracy"], *self.methods
        acc2 = {P: {k: vals2[(k, P)]["acc"] for k in seeds} for P in self.P_values}

        def vs_p(a: int, b: int, **kw):
            return claims.paired(acc2[a], acc2[b], margin=margin, names=(f"P={a}", f"P={b}"), **kw)
        c = self.cycle
        smaller = [P for P in self.P_values if 1 < P < c]
        larger = [P for P in self.P_values if P > c]
        fig2 = [("P1", f"P = 1 is not the best: P = {c} (the cycle) beats it", {"P=1": vs_p(c, 1)}),
                ("smaller", f"a smaller P ({', '.join(map(str, smaller))}) performs similarly to P = {c} "
                            f"(margin {margin:g})", {f"P={P}": vs_p(P, c, kind="no worse") for P in smaller}),
                ("larger", f"a larger P ({', '.join(map(str, larger))}) is worse than P = {c}",
                 {f"P={P}": vs_p(c, P) for P in larger})]
        best = next(iter(rate_sets))
        rows = [{"rates": best, "where": "Sec. 6, Fig. 2", "quote": QUOTES[q], "claim": claim,
                 "check": claims.combine(checks)}
                for q, claim, checks in fig2 if checks]      # a profile without P values on one side: no row
        for rname in rate_sets:
            def vs(m, other, rname=rname, **kw):
                return claims.paired({k: vals1[(rname, k, m)]["acc"] for k in seeds},
                                     {k: vals1[(rname, k, other)]["acc"] for k in seeds}, margin=margin,
                                     names=(m, other), **kw)
            rows += [{"rates": rname, "where": "Sec. 6, Fig. 1", "quote": QUOTES["wait"],
                      "claim": "wait-minibatch and wait-full are worse than amplification",
                      "check": claims.combine({m: vs(amp, m) for m in (wait_mb, wait_full)})},
                     {"rates": rname, "where": "Sec. 6, Fig. 1", "quote": QUOTES["full"],
                      "claim": f"wait-full gives no substantial gain over wait-minibatch (margin {margin:g})",
                      "check": vs(wait_mb, wait_full, kind="no worse")},
                     {"rates": rname, "where": "Sec. 6, Fig. 1", "quote": QUOTES["lowest"],
                      "claim": "FedAvg without amplification is the lowest",
                      "check": claims.combine({m: vs(m, no_amp) for m in self.methods if m != no_amp})}]
        for r in rows:
            r["setting"] = self.setting
            if r["rates"] != best:
                rates = ", ".join(f"{m} {v:g}" for m, v in rate_sets[r["rates"]].items())
                r["cause"] = f"at {r['rates']} ({rates})"
        return rows

    def earlier_picks(self, df_grid: pd.DataFrame, grid: dict, best: dict) -> pd.DataFrame:
        """Per method: the rate picked here (``best``) beside the rate the earlier one-cycle rule
        picks from the same grid runs (``grid``: config -> (method, rate); the lowest training
        loss at the last evaluation within the first cycle of time)."""
        def score(c: ExperimentConfig) -> float:
            tl = self.timeline(df_grid, {c.key(): "run"})
            at = tl[tl["time"] <= self.cycle].sort_values("time")
            return float(at["loss"].iloc[-1]) if len(at) and (tl["status"] == "ok").all() else float("nan")
        scores = pd.DataFrame([{"method": m, "lr": r, "score": score(c)} for c, (m, r) in grid.items()])
        earlier = {m: g.loc[g["score"].idxmin(), "lr"] if g["score"].notna().any() else np.nan
                   for m, g in scores.groupby("method", sort=False)}
        return pd.DataFrame([{"method": m, "pick: last cycle of 2 (here)": best[m],
                              "pick: loss after one cycle (earlier rule)": earlier[m]} for m in self.methods])

    @property
    def grid_rates(self) -> list[float]:
        """The starting rates of the grid: the warm-up rate times each of :attr:`grid`."""
        return [float(f"{self.lr0 * g:.6g}") for g in self.grid]

    def grid_config(self, label: str, lr: float) -> ExperimentConfig:
        """Method ``label`` at rate ``lr`` over the grid's horizon, after the warm-up of the
        setup's seed (notebook 08: its first seed)."""
        return self.phase(label, self.grid_horizon, lr)

    def grid_configs(self) -> dict[ExperimentConfig, tuple[str, float]]:
        """Every method at every starting rate of the grid: config -> (method, rate)."""
        return {self.grid_config(label, r): (label, r) for label in self.methods for r in self.grid_rates}

    def late_window(self, df: pd.DataFrame, config: ExperimentConfig, metric: str = "loss") -> float:
        """The mean of ``metric`` over the last cycle of time of ``config``'s run in ``df`` (every
        evaluation at time >= horizon - cycle, a wait round charged a cycle; at least the last
        evaluation); NaN if the run diverged or failed. Averaging over a whole cycle keeps the
        availability's periodic swing out of the score."""
        t = self.timeline(df, {config.key(): "run"})
        if t.empty or (t["status"] != "ok").any():
            return float("nan")
        t = t.sort_values("time")
        end = float(t["time"].iloc[-1])
        tail = t[t["time"] >= end - self.cycle + (1 if end >= self.cycle else 0)]
        tail = tail if len(tail) else t.tail(1)
        return float(tail[metric].mean())

    def search_rates(self, compute: Callable[[list], pd.DataFrame],
                     max_extensions: int = 3) -> dict[str, GridSearch]:
        """Each method's rate: :func:`fedlib.analysis.search_log_grid` over :attr:`grid_rates`,
        scored by the late-window training loss (:meth:`late_window`) of a run over the grid's
        horizon (two cycles at the quick and paper profiles, so the score covers a whole cycle
        after the first amplification), extended by 10x past an edge; ``compute`` maps a list of
        configs to their :func:`fedlib.sweep` frame. Returns method label -> the search."""
        def evaluate(label: str):
            def scores(rates: list[float]) -> dict[float, float]:
                configs = [self.grid_config(label, r) for r in rates]
                df = compute(configs)
                return {r: self.late_window(df, c) for r, c in zip(rates, configs, strict=True)}
            return scores
        return {m: search_log_grid(evaluate(m), self.grid_rates, lower=True, max_extensions=max_extensions)
                for m in self.methods}

    def authors_rates(self) -> dict[str, float]:
        """Method label -> the rate of the authors' FashionMNIST runs (:data:`AUTHORS_RATES`)."""
        out = {}
        for label, (algo, opts) in self.methods.items():
            out[label] = AUTHORS_RATES[(algo, opts.get("gamma"))]
        return out

    def fig1_configs(self, rates: dict[str, float], seeds) -> dict[ExperimentConfig, tuple[int, str]]:
        """Fig. 1: every method at ``rates[label]`` over the horizon, per seed after that
        seed's own warm-up (:meth:`at_seed`): config -> (seed, method)."""
        missing = [m for m in self.methods if m not in rates]
        if missing:
            raise ValueError(f"rates: no rate for {', '.join(map(repr, missing))}")
        return {self.at_seed(k).phase(m, self.horizon, rates[m]): (int(k), m)
                for k in seeds for m in self.methods}

    def fig2_configs(self, lr: float, seeds) -> dict[ExperimentConfig, tuple[int, int]]:
        """Fig. 2: amplification (eta = 10) with each P of :attr:`P_values` at rate ``lr``, per seed:
        each after its seed's own warm-up: config -> (seed, P)."""
        amp = next(m for m, (a, o) in self.methods.items() if a == "amplified_fedavg" and o["gamma"] != 1.0)
        return {self.at_seed(k).phase(amp, self.horizon, lr, P=int(P)): (int(k), int(P))
                for k in seeds for P in self.P_values}

    @staticmethod
    def timeline(df: pd.DataFrame, labels: dict) -> pd.DataFrame:
        """The runs of ``labels`` (key -> method label) on one time axis: rounds after the
        warm-up, a wait round charged as a cycle (``time``)."""
        out = df.assign(method=df["key"].map(labels)).dropna(subset=["method"])
        waited = out["waited_rounds"] if "waited_rounds" in out else np.nan
        out["time"] = np.where(out["algorithm"].str.startswith("wait"), waited, out["round"])
        return out


def amplified_setup(profile: str, seed: int = 0, stand_in_rounds: int = 0) -> AmplifiedSetup:
    """Wang & Ji's settings at ``profile``; ``stand_in_rounds > 0`` keeps the profile's structure on
    random data, every phase cut to that many rounds, one grid rate and P in {1, cycle}."""
    s = AmplifiedSetup(profile=check_profile(profile), seed=seed, **SETTINGS[profile])
    if stand_in_rounds:
        s = replace(s, warmup=stand_in_rounds, horizon=stand_in_rounds, grid_horizon=stand_in_rounds,
                    eval_every=stand_in_rounds, train_eval=2, grid=s.grid[:1], P_values=(1, s.cycle),
                    stand_in=stand_in_rounds)
    return s
