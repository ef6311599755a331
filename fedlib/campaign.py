"""A campaign: a notebook's runs at one profile computed into its store in the order that matters,
inside a time budget (one GPU window), resumable in the next window.

``python -m fedlib campaign 02_fedsum_main --profile paper --device cuda --budget-min 12``
(``make campaign NB=02_fedsum_main PROFILE=paper DEVICE=cuda BUDGET_MIN=12``) fills
``results/02_fedsum_main/paper/``: FedSUM App. H's rate grid on each dataset present (You & Pu
2025, arXiv:2512.18275, App. H: eta_0 eta_g = 0.01, scored after 500 rounds), then the main runs
seed by seed (every method under P1, P2, P3 for seed 0, then seed 1, ...), so a window cut short
leaves whole grids and whole seeds first.

Budget: before each run the campaign estimates its wall time from measured round times (the
stored entries of the same problem setting, else a short probe of the run's first rounds, whose
cost counts against the budget) and starts it only if it can finish inside the budget with a
margin; it never starts a run it cannot finish. Finished runs are sealed entries (their digests in
``meta.json``) and can be committed at once; the next call loads them and goes on. At the end it
prints what is left in device-minutes at the measured pace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .config import ExperimentConfig
from .store import Store

__all__ = ["CAMPAIGNS", "CampaignReport", "run_campaign"]

#: margin on each run's estimated time (the pace of a run varies by a few percent; evaluations
#: and the problem's first build are in the measured pace)
MARGIN = 1.15
#: a run killed with its window resumes from its last checkpoint (every this many rounds)
CHECKPOINT_EVERY = 200
#: rounds of a probe that measures the pace of a setting no stored entry has measured yet
PROBE_ROUNDS = 3


@dataclass
class CampaignReport:
    """What a campaign call did.

    Attributes:
        computed: keys of the runs computed in this call, in order.
        loaded: how many runs of the plan were stored already.
        left: the runs not computed (in order), each with its estimated seconds.
        seconds: wall seconds this call took.
        budget_s: the budget in seconds.
        stopped: why the call stopped (``"done"``, ``"budget"``).
    """

    computed: list[str] = field(default_factory=list)
    loaded: int = 0
    left: list[tuple[ExperimentConfig, float]] = field(default_factory=list)
    seconds: float = 0.0
    budget_s: float = 0.0
    stopped: str = "done"

    @property
    def left_minutes(self) -> float:
        """Estimated device-minutes of the runs left whose pace is measured (see :attr:`unmeasured`)."""
        return sum(s for _, s in self.left if s == s) / 60.0

    @property
    def unmeasured(self) -> int:
        """Runs left whose setting no run has measured yet (no estimate)."""
        return sum(1 for _, s in self.left if s != s)

    def __str__(self) -> str:
        head = (f"campaign: {len(self.computed)} run(s) computed in {self.seconds / 60:.1f} of "
                f"{self.budget_s / 60:.1f} min, {self.loaded} already stored; ")
        if not self.left:
            return head + "nothing left"
        more = f", and {self.unmeasured} of a setting not measured yet" if self.unmeasured else ""
        return head + (f"{len(self.left)} left: about {self.left_minutes:.1f} device-minutes at the measured "
                       f"pace{more} (stopped: {self.stopped})")


def _setting(config: ExperimentConfig) -> str:
    """What sets a run's pace per round: its problem (but its seed), local steps, participation
    and evaluation cadence; not its algorithm, rates or seed."""
    args = {k: v for k, v in config.arguments("problem_args").items() if k != "seed"}
    return repr((config.problem, sorted(args.items()), config.local_steps, config.participation,
                 config.arguments("participation_args"), config.eval_every))


class _Pace:
    """Seconds per round of each setting, from stored entries and runs computed here; a probe's
    pace stands in only until a whole run of the setting has measured it (a probe of a few rounds
    pays warm-ups a whole run amortises: on an H100, 2026-11-26, a 10-round probe put a 500-round
    grid run at 129 s, which took 47 s)."""

    def __init__(self, st: Store):
        self.per_round: dict[str, float] = {}
        self.probed: dict[str, float] = {}
        for key in st.keys():
            try:
                e = st.read(key)
            except Exception:  # noqa: BLE001 - an unreadable entry measures nothing
                continue
            secs = e.meta.get("run_seconds")
            if secs and e.config.rounds:
                self.note(e.config, float(secs))

    def note(self, config: ExperimentConfig, seconds: float, probe: bool = False) -> None:
        s = _setting(config)
        rate = seconds / config.rounds
        table = self.probed if probe else self.per_round
        table[s] = max(rate, table.get(s, 0.0))                         # the slowest seen: a safe pace

    def estimate(self, config: ExperimentConfig) -> float | None:
        s = _setting(config)
        rate = self.per_round.get(s, self.probed.get(s))
        return None if rate is None else MARGIN * rate * config.rounds


def _plan_02(profile: str, stand_in_rounds: int, seeds: list[int], datasets: list[str] | None,
             store: Store, patterns: list[str] | None = None) -> Iterator[list[ExperimentConfig]]:
    """Notebook 02's runs in the order that matters: each dataset's grid, then the main runs seed
    by seed (yielded as batches; the main runs need the grids' choice of rates first)."""
    import dataclasses

    from . import data, studies
    setup = studies.fedsum_setup(profile, stand_in_rounds)
    if datasets is None:
        present = []
        for ds in setup.datasets:
            try:
                if not setup.stand_in and ds != "digits":
                    data.load(ds)
                present.append(ds)
            except data.DataNotFoundError:
                print(f"campaign: dataset {ds} is not on this machine; its runs are left out")
        datasets = present
    setup = dataclasses.replace(setup, datasets=tuple(datasets))
    grids = [c for ds in datasets for c in setup.grid_configs(ds)]
    yield grids
    from .sweeps import sweep
    try:
        rates, _ = setup.choose_rates(lambda cs: sweep(cs, store, progress=False, compute=False))
    except ValueError:           # the grid is not complete: the main runs at stand-in rates (their
        rates = {ds: setup.grid[0] for ds in datasets}    # count and pace, for what is left)
    patterns = list(setup.patterns) if patterns is None else patterns
    for seed in seeds:
        labels = setup.main_configs(rates, patterns, [seed])
        yield sorted(labels, key=lambda c: (labels[c][0], patterns.index(labels[c][1])))


#: notebooks with a campaign, and the function listing their runs in order
CAMPAIGNS: dict[str, Callable[..., Iterator[list[ExperimentConfig]]]] = {"02_fedsum_main": _plan_02}


def run_campaign(notebook: str, profile: str = "paper", device: str | None = None, budget_min: float = 12.0,
                 store: str | Path | None = None, seeds: list[int] | None = None,
                 datasets: list[str] | None = None, stand_in_rounds: int = 0,
                 patterns: list[str] | None = None, clock: Callable[[], float] = time.monotonic,
                 echo: Callable[[str], None] = print) -> CampaignReport:
    """Compute ``notebook``'s runs at ``profile`` into its store, in order, within ``budget_min``
    minutes (see the module docstring).

    Args:
        notebook: a notebook of :data:`CAMPAIGNS`.
        profile: ``paper`` (the point), ``quick`` or ``smoke``.
        device: where runs compute (e.g. ``"cuda"``).
        budget_min: minutes this call may use; a run is started only if its estimate fits.
        store: the store folder (default ``results/<notebook>/<profile>``).
        seeds: the main runs' seeds, in order (default 0..4).
        datasets: the datasets (default: every dataset of the profile present here).
        stand_in_rounds: random stand-in data, runs cut to this many rounds (tests).
        patterns: participation patterns of the main runs (default: all, in order).
        clock: seconds, monotonic (tests pass their own).
        echo: where progress lines go.
    """
    from .notebook import check_profile, store_path
    if notebook not in CAMPAIGNS:
        raise ValueError(f"notebook: no campaign for {notebook!r}; campaigns: {', '.join(CAMPAIGNS)}")
    check_profile(profile)
    if isinstance(budget_min, bool) or not isinstance(budget_min, (int, float)) or not budget_min >= 0:
        raise ValueError(f"budget_min: must be a number >= 0, got {budget_min!r}")
    if device is not None and str(device).startswith("cuda"):
        from .arithmetic import verifiable_cuda
        verifiable_cuda()
    st = Store(store if store is not None else store_path(notebook, profile))
    t0 = clock()
    deadline = t0 + 60.0 * budget_min
    pace = _Pace(st)
    report = CampaignReport(budget_s=60.0 * budget_min)
    plan = CAMPAIGNS[notebook](profile, stand_in_rounds, list(range(5)) if seeds is None else list(seeds),
                               datasets, st, patterns)
    for batch in plan:
        for c in batch:
            if st.get(c) is not None:
                report.loaded += 1
                continue
            if report.stopped == "budget":
                report.left.append((c, pace.estimate(c) or float("nan")))
                continue
            est = pace.estimate(c)
            if est is None:                  # a probe of its first rounds (two evaluations in them)
                probe = c.replace(rounds=min(max(PROBE_ROUNDS, c.eval_every), c.rounds))
                if clock() + 60.0 > deadline:                  # not even a probe fits
                    report.stopped = "budget"
                    report.left.append((c, float("nan")))
                    continue
                from .runner import run_config
                start = clock()
                res = run_config(probe, device=device)
                took = clock() - start
                # the rounds alone (the history's clock starts after the problem is built): the
                # build is paid once per run, not per round
                ran = float(res.history["seconds"].iloc[-1]) if "seconds" in res.history else took
                pace.note(probe, min(took, ran), probe=True)
                est = pace.estimate(c)
            if clock() + est > deadline:
                report.stopped = "budget"
                report.left.append((c, est))
                continue
            start = clock()
            entry = st.compute(c, device=device, checkpoint_every=CHECKPOINT_EVERY)
            took = clock() - start
            pace.note(c, took)
            st.seal([entry.path.name])
            report.computed.append(entry.path.name)
            echo(f"campaign: {entry.path.name} {entry.status} in {took:.0f} s (estimated {est:.0f} s); "
                 f"{(deadline - clock()) / 60:.1f} min left")
    report.seconds = clock() - t0
    echo(str(report))
    return report


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
