"""A campaign: a notebook's runs at one profile computed into its store in the order that matters,
inside a time budget (one GPU window), resumable in the next window.

``python -m fedlib campaign 02_fedsum_main --profile paper --device cuda --budget-min 12``
(``make campaign NB=02_fedsum_main PROFILE=paper DEVICE=cuda BUDGET_MIN=12``) fills
``results/02_fedsum_main/paper/``: FedSUM App. H's rate grid on each dataset present (You & Pu
2025, arXiv:2512.18275, App. H: eta_0 eta_g = 0.01, scored after 500 rounds), then the main runs
seed by seed (every method under P1, P2, P3 for seed 0, then seed 1, ...), so a window cut short
leaves whole grids and whole seeds first.

Budget: before each run the campaign estimates its wall time from measured round times (the
latest stored entries of the same problem setting computed on the same device kind with the same
engine options, and this call's runs; else other stored entries of the setting; else a short
probe of the run's first rounds, whose cost counts against the budget: :class:`_Pace`) and
starts it only if it can finish inside the budget with a margin; it never starts a run it cannot
finish. Once a run does not fit, a later one whose setting's pace is measured still starts where
it fits what is left (minutes a long run cannot use go to a shorter one: in a seed's list of
notebook 08, a wait run of a few minutes after a 5,000-round run); no probe is paid for then, and
the run left out comes first in the next call. Finished runs are sealed entries (their digests in
``meta.json``) and can be committed at once; the next call loads them and goes on. At the end it
prints what is left in device-minutes at the measured pace.

Several devices (``devices=["cuda:0", "cuda:1"]``, ``--devices``; ``["cpu", "cpu"]`` on two
cores): one process per device, each computing one run at a time; runs start in the same order as
processes come free, each only if its estimate fits what is left of the budget. Each list of runs
a notebook's plan asks for (App. H's grid, each seed's main runs, each notebook) finishes before the
next starts: a process may wait for the list's longest run. Each entry is the one a single
process stores. On one GPU several processes gain little: on an H100
(2026-11-27) 8 processes ran 29.6 run-rounds/s, 37.2 under CUDA MPS, against one run's 31.7
(``benchmarks/README.md``, "Fourth window"): the device is busy with one run.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import locks
from ._validate import InputError, warn
from .config import ExperimentConfig
from .store import Store

if TYPE_CHECKING:
    from .engine import VectorizedEngine

__all__ = ["CAMPAIGNS", "CampaignReport", "Incomplete", "NotebookReport", "run_campaign", "stored_scope_02"]

#: margin on each run's estimated time (the pace of a run varies by a few percent; evaluations
#: and the problem's first build are in the measured pace)
MARGIN = 1.15
#: a run killed with its window resumes from its last checkpoint (every this many rounds); the
#: next call's budget and listing count only the rounds after it (:meth:`_Compute._estimate`)
CHECKPOINT_EVERY = 200
#: rounds of a probe that measures the pace of a setting no stored entry has measured yet: twice
#: the larger of this and the setting's evaluation interval (the second interval gives the pace
#: after the first rounds' one-off costs, :func:`probe_seconds`)
PROBE_ROUNDS = 3


class _RunsLeft:
    """What a report of runs left (:attr:`left`: config and estimated seconds, NaN unmeasured) sums."""

    left: list

    @property
    def left_minutes(self) -> float:
        """Estimated device-minutes of the runs left whose pace is measured (see :attr:`unmeasured`)."""
        return sum(s for _, s in self.left if s == s) / 60.0

    @property
    def unmeasured(self) -> int:
        """Runs left whose setting no run has measured yet (no estimate)."""
        return sum(1 for _, s in self.left if s != s)


@dataclass
class CampaignReport(_RunsLeft):
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
    notebooks: list[NotebookReport] = field(default_factory=list)

    def __str__(self) -> str:
        listing = self.budget_s == 0 and not self.computed        # --list: nothing was to be computed
        head = (f"campaign (a listing: nothing computed): {self.loaded} already stored; " if listing else
                f"campaign: {len(self.computed)} run(s) computed in {self.seconds / 60:.1f} of "
                f"{self.budget_s / 60:.1f} min, {self.loaded} already stored; ")
        stop = "" if listing else f" (stopped: {self.stopped})"
        if not self.left and not any(p.unlisted for p in self.notebooks):
            return "\n".join([head + "nothing left", *map(str, self.notebooks)])
        more = f", and {self.unmeasured} of a setting not measured yet" if self.unmeasured else ""
        if not self.left:                      # every run left waits on runs that are not stored
            head += (f"none listed yet: the runs left wait on runs not stored (each notebook's line says "
                     f"which){stop}")
        elif self.unmeasured == len(self.left):
            head += (f"{len(self.left)} left, all of a setting not measured yet: no estimate of their "
                     f"time{stop}")
        else:
            head += (f"{len(self.left)} left: about {self.left_minutes:.1f} device-minutes at the measured "
                     f"pace{more}{stop}")
        if self.left and any(p.unlisted for p in self.notebooks):
            head += "; more runs after them, not listed until they finish"
        return "\n".join([head, *map(str, self.notebooks)]) if self.notebooks else head


def _setting(config: ExperimentConfig) -> str:
    """What sets a run's pace per round: its problem (but its seed), local steps, participation
    and evaluation cadence, and whether its algorithm's local steps take each client's whole data
    (the class attribute ``full_batch``: Wang & Ji's wait-full); not its algorithm otherwise, nor
    its rates or seed. Why full batches count: a wait-full run of notebook 08's paper grid costs
    several times a wait-minibatch one, the same setting but for that (``benchmarks/README.md``,
    "On the Intel Xeon kind"), and the campaign, pacing the one by the other, once estimated
    wait-full's first runs at an eighth of what they took."""
    from .algorithms import available, get
    args = {k: v for k, v in config.arguments("problem_args").items() if k != "seed"}
    key = (config.problem, sorted(args.items()), config.local_steps, config.participation,
           config.arguments("participation_args"), config.eval_every)
    full = config.algorithm in available() and bool(getattr(get(config.algorithm), "full_batch", False))
    return repr((*key, "full-batch local steps") if full else key)


#: how many of the latest runs on the same device kind and engine set a setting's pace (the
#: slowest of them): recent enough to follow the code's speed-ups, several against one slow run
RECENT = 3


def _device_kind(device: str | None, threads: int | None = None) -> tuple:
    """What a run's pace depends on besides its setting and engine: the device type and the GPU's
    model (for a CPU, the CPU's model and the torch threads a run gets: ``threads``, else this
    process's), as :func:`fedlib.arithmetic.current` and ``meta.json`` record them; a GPU's model
    is None on a machine without one (a listing, ``budget_min=0``, for a GPU window elsewhere: the
    slowest stored GPU runs of each setting estimate it). Threads, because a CPU campaign in
    one process (torch's default, 2 threads here) and one of several processes (1 thread each,
    sharing the cores) run at different paces: ~2.2 and 3.5 s a round of App. H on this
    project's 2 cores (the latter: two paper runs side by side, 2026-11-29)."""
    import torch

    from .arithmetic import cpu_model
    dev = torch.device(device if device is not None else "cpu")
    if dev.type == "cuda" and not torch.cuda.is_available():
        return "cuda", None                  # a listing for a GPU elsewhere: no model to match
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        return "cuda", torch.cuda.get_device_name(index)
    if dev.type == "cpu":
        return "cpu", cpu_model(), threads if threads is not None else torch.get_num_threads()
    return dev.type, cpu_model()


def _entry_kind(meta: dict) -> tuple:
    """:func:`_device_kind` of a stored entry, from its ``meta.json``."""
    arith = meta.get("arithmetic") if isinstance(meta.get("arithmetic"), dict) else {}
    dev = str(arith.get("device") or meta.get("device") or "cpu").split(":")[0]
    if dev == "cpu":
        return dev, meta.get("cpu"), meta.get("torch_threads")
    return dev, arith.get("gpu") if dev == "cuda" else meta.get("cpu")


class _Pace:
    """Seconds per round of each setting, from stored entries and runs computed here.

    Entries computed on the same device kind (:func:`_device_kind`: the GPU's model; the CPU's
    model and threads) with the same
    engine options (``meta.json``'s ``engine``, e.g. ``VectorizedEngine(graphs=True)``) and the
    runs of this call set the pace: the slowest of the :data:`RECENT` latest of them (by date).
    Where no such run of the setting exists, the same of the entries on the same device kind
    with other engine options (a new option, e.g. compiled draws, is meant to be faster: its
    first run is estimated at the pace of the options before it); then the same (the slowest of
    the :data:`RECENT` latest) of the setting's runs stored on the same device type (another GPU
    model for a GPU; for a CPU, another CPU or thread count, and the slower of that and a probe on
    this kind:
    :meth:`needs_probe`; never a CPU's run for a GPU or the reverse: on
    2026-11-29 a paper run took 3.5 s a round on this project's CPU and ~0.05 s on an H100, so
    a GPU campaign would never have started the setting's runs, and a CPU campaign would start
    runs it cannot finish); then a probe's pace, which
    stands in only until a whole run of the setting has measured it (a probe of a few rounds pays
    warm-ups a whole run amortises: on an H100, 2026-11-26, a 10-round probe put a 500-round grid
    run at 129 s, which took 47 s). Why the latest runs on the same device: the slowest of all
    stored runs put the second window's 2,000-round runs at 216 s (a first window's run of older
    code) where they took 158-159 s, and each of three calls lost a run to it; on another kind
    too: the slowest of notebook 08's stored Fashion-MNIST runs on the Intel Xeon kind (a grid run
    at 2.1 s a round, its cores shared with replays) put a 5,000-round run at 12,178 s on an AMD
    EPYC (Zen 3) on 2026-12-03, so its campaign started none, and two such runs took 5,445 and 5,495 s there
    (``benchmarks/README.md``); the Xeon's 3 latest runs of the setting give 6,670 s."""

    def __init__(self, st: Store, device: str | None = None, engine: object = "vectorized",
                 threads: int | None = None):
        self.per_round: dict[str, float] = {}
        self.probed: dict[str, float] = {}
        self.same: dict[str, list[tuple[str, float]]] = {}          # setting -> [(date, s/round)]
        self.kin: dict[str, list[tuple[str, float]]] = {}           # the same device kind, any engine
        self.other: dict[str, list[tuple[str, float]]] = {}         # other kinds of the device type
        self.kind = _device_kind(device, threads)
        self.engine = engine if isinstance(engine, str) else repr(engine)
        for key in st.keys():
            try:
                e = st.read(key)
            except Exception:  # noqa: BLE001 - an unreadable entry measures nothing
                continue
            secs = e.meta.get("run_seconds")
            kind_of = _entry_kind(e.meta)
            if secs and e.config.rounds and kind_of[0] == self.kind[0]:       # the same device type
                kind = kind_of == self.kind
                date = str(e.meta.get("date", ""))
                same = kind and e.meta.get("engine") == self.engine
                self.note(e.config, float(secs), date=date if same else None)
                if not same:                   # this kind with other options, or another kind
                    table = self.kin if kind else self.other
                    table.setdefault(_setting(e.config), []).append((date, float(secs) / e.config.rounds))

    def note(self, config: ExperimentConfig, seconds: float, probe: bool = False,
             date: str | None = None) -> None:
        """A run of ``config`` took ``seconds``: a probe, or a whole run; ``date`` (ISO) marks a run
        on this call's device kind and engine (a run computed here: now)."""
        s = _setting(config)
        rate = seconds / config.rounds
        table = self.probed if probe else self.per_round
        table[s] = max(rate, table.get(s, 0.0))                         # the slowest seen: a safe pace
        if date is not None and not probe:
            self.same.setdefault(s, []).append((date, rate))
            self.kin.setdefault(s, []).append((date, rate))

    def needs_probe(self, config: ExperimentConfig) -> bool:
        """Whether a CPU campaign should probe ``config``'s setting before trusting an estimate:
        no run of it on this CPU kind (model and threads) is stored or computed here, and no probe
        has measured it yet. Another CPU's runs are no safe pace for this one: App. H's round costs
        about twice as much on the Intel Xeon kind (family 6 model 207) as on the AMD EPYC kind
        (``benchmarks/README.md``, "On the Intel Xeon kind"), so a campaign there, paced by the
        AMD's runs, would start runs it cannot finish. (A
        GPU's campaign keeps the rule before: its window's minutes are too few to spend on probes
        a stored run on another GPU model makes unnecessary.)"""
        s = _setting(config)
        return (self.kind[0] == "cpu" and not (self.same.get(s) or self.kin.get(s))
                and s in self.per_round and s not in self.probed)

    def estimate(self, config: ExperimentConfig) -> float | None:
        s = _setting(config)
        recent = self.same.get(s) or self.kin.get(s)
        other = self.other.get(s)
        whole = max(r for _, r in sorted(other)[-RECENT:]) if other else self.per_round.get(s)
        probe = self.probed.get(s)
        if recent:
            rate = max(r for _, r in sorted(recent)[-RECENT:])
        elif whole is not None and probe is not None:     # other kinds' runs and a probe here: the slower
            rate = max(whole, probe)
        else:
            rate = whole if whole is not None else probe
        return None if rate is None else MARGIN * rate * config.rounds


def probe_config(config: ExperimentConfig) -> ExperimentConfig:
    """The probe that measures the pace of ``config``'s setting: its first rounds, twice the larger
    of :data:`PROBE_ROUNDS` and its evaluation interval (at most its rounds), so that the probe has
    an interval after the first for :func:`probe_seconds`."""
    return config.replace(rounds=min(2 * max(PROBE_ROUNDS, config.eval_every), config.rounds))


def probe_seconds(history, rounds: int) -> float | None:
    """A whole run's seconds predicted from a probe's history: its first evaluation interval's
    time once (the first rounds pay what a run pays once: compiling the draws for the setting's
    shapes, capturing CUDA graphs, warming caches) plus the pace of the rounds after it, for the
    rounds left. None where the probe has fewer than three evaluations (no interval after the
    first). Why not the probe's seconds per round: on an H100 (2026-11-27) a 10-round probe with
    compiled draws and graphs put a 2,000-round run at ~38 minutes; the run's rounds after the
    first ten take ~0.05 s each (notebook 02's SCAFFOLD: 15.6 s to round 10, 117 s in all)."""
    if "seconds" not in history or len(history) < 3:
        return None
    r, sec = history["round"].to_numpy(dtype=float), history["seconds"].to_numpy(dtype=float)
    rate = (sec[-1] - sec[1]) / (r[-1] - r[1])
    return float(sec[1] + rate * (rounds - r[1]))


class Incomplete(ValueError):
    """Raised by a campaign's ``compute`` once the budget is spent (or its data is missing): the
    configs asked for were listed as left, not computed. A ValueError, so a study's fallback for
    an incomplete grid (notebook 02's rates) carries on listing what comes after it."""


@dataclass
class NotebookReport(_RunsLeft):
    """One notebook's part of a campaign call.

    Attributes:
        notebook: the notebook's name.
        computed: keys of the runs computed in this call, in order.
        loaded: runs of the plan that were stored already.
        left: the runs listed but not computed, each with its estimated seconds (NaN: the pace of
            its setting is not measured yet).
        unlisted: runs after ``left`` exist that cannot be listed before those finish (a stage
            whose configs depend on earlier results, e.g. notebook 08's rate search).
        missing: datasets of the profile not on this machine (their runs are left out), or the
            error that stopped the notebook's plan.
    """

    notebook: str
    computed: list[str] = field(default_factory=list)
    loaded: int = 0
    left: list[tuple[ExperimentConfig, float]] = field(default_factory=list)
    unlisted: bool = False
    missing: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        if not self.left and not self.unlisted:
            done = "nothing left"
        elif not self.left:
            done = "none listed yet: its runs wait on runs that are not stored"
        else:
            pace = f"about {self.left_minutes:.1f} device-minutes at the measured pace"
            done = (f"{len(self.left)} left, all unmeasured (no estimate of their time)"
                    if self.unmeasured == len(self.left) else
                    f"{len(self.left)} left: {pace}"
                    + (f", {self.unmeasured} unmeasured" if self.unmeasured else ""))
            done += "; later stages not listed until these finish" if self.unlisted else ""
        miss = f"; not on this machine / not run: {', '.join(self.missing)}" if self.missing else ""
        return f"  {self.notebook}: {len(self.computed)} computed, {self.loaded} stored; {done}{miss}"


class _Compute:
    """A study's ``compute`` (configs -> their :func:`fedlib.sweep` frame) that computes each
    missing run into the store only if its estimate fits the budget; once one does not, a later
    run starts only if its measured estimate fits what is left (no probe), and a call that left
    any run out lists those as left and raises :class:`Incomplete`."""

    def __init__(self, st: Store, pace: _Pace, deadline: float, report: CampaignReport, part: NotebookReport,
                 device: str | None, engine, clock: Callable[[], float], echo: Callable[[str], None],
                 pool: _Pool | None = None):
        self.st, self.pace, self.deadline, self.report, self.part = st, pace, deadline, report, part
        self.device, self.engine, self.clock, self.echo, self.pool = device, engine, clock, echo, pool
        self.seen: set[str] = set()
        self.running: dict = {}              # with a pool: future -> (config, start, estimate)
        self.done: dict[str, int] = {}       # key -> rounds its checkpoint had done when first seen

    def _estimate(self, c: ExperimentConfig) -> float | None:
        """The pace's estimate for the rounds ``c``'s run has left: one resumed from a checkpoint
        (a run that an earlier window or session cut off) computes only the rounds after it."""
        from .runner import checkpoint_round
        if c.key() not in self.done:                 # (a checkpoint is saved only before the last round)
            done = checkpoint_round(self.st.checkpoint_path(c), self._under(c))
            self.done[c.key()] = min(done, c.rounds - 1)
        est = self.pace.estimate(c)
        return None if est is None else est * (c.rounds - self.done[c.key()]) / c.rounds

    @functools.cached_property
    def under(self) -> list[tuple] | None:
        """The arithmetic of each device this call computes on, with its engine (a checkpoint saved
        under another is not resumed: the run starts over); None where a listing names a GPU this
        machine lacks.
        Read once a call (it reads the CPU's identity)."""
        import torch

        from .runner import checkpoint_arithmetic
        devices = self.pool.devices if self.pool is not None else [self.device or "cpu"]
        here = not any(str(d).startswith("cuda") for d in devices) or torch.cuda.is_available()
        return [checkpoint_arithmetic(d, self.engine) for d in devices] if here else None

    def _under(self, c: ExperimentConfig) -> list[tuple] | None:
        """:attr:`under` for ``c``'s run: each device's arithmetic with only the engine's options
        that ``c``'s problem takes, as its checkpoint records them (a problem that ignores one
        computes as without it: :func:`fedlib.runner.checkpoint_arithmetic`). The problem is built
        (on the CPU: which options it takes does not depend on the device) only where the engine
        has such options and the run has a checkpoint to read."""
        if self.under is None or not getattr(self.engine, "arithmetic", ()):
            return self.under
        if not self.st.checkpoint_path(c).exists():
            return self.under
        from .runner import checkpoint_arithmetic
        problem = c.build_problem("cpu")
        devices = self.pool.devices if self.pool is not None else [self.device or "cpu"]
        return [checkpoint_arithmetic(d, self.engine, problem) for d in devices]

    def _missing(self, c: ExperimentConfig, keep_params: bool) -> bool:
        e = self.st.get(c)
        return e is None or (keep_params and not (e.path / "params.npy").exists())

    def _fits(self, c: ExperimentConfig, probe: bool = True) -> float | None:
        """The run's estimate if it fits the budget (probing its setting first if needed and
        ``probe``; without, a run whose setting needs a probe does not fit), else None."""
        est = self._estimate(c)
        if est is None or self.pace.needs_probe(c):     # a probe of its first rounds (three evaluations)
            if not probe:
                return None
            probe = probe_config(c)
            if self.clock() + 60.0 > self.deadline:                 # not even a probe fits
                return None
            start = self.clock()
            if self.pool is None:
                from .runner import run_config
                history = run_config(probe, device=self.device, x0=self.st.warmup_model(c),
                                     engine=self.engine).history
            else:                            # on a free process of the pool (the caller waited for one)
                history = self.pool.submit(_pool_probe, str(self.st.path), probe.to_dict(),
                                           c.to_dict()).result()
            took = self.clock() - start
            whole = probe_seconds(history, c.rounds)
            if whole is not None:
                self.pace.note(c, whole, probe=True)
            else:                            # the rounds alone (the history's clock starts after the build)
                ran = float(history["seconds"].iloc[-1]) if "seconds" in history else took
                self.pace.note(probe, min(took, ran), probe=True)
            est = self._estimate(c)
            self.echo(f"campaign: {self.part.notebook} probed {c.key()}'s setting ({probe.rounds} rounds in "
                      f"{took:.0f} s): {'?' if whole is None else f'{whole:.0f}'} s a run here; estimated "
                      f"{'?' if est is None else f'{est:.0f}'} s (with the setting's stored runs and the "
                      f"margin x{MARGIN:g})")
        return est if self.clock() + est <= self.deadline else None

    def __call__(self, configs, keep_params: bool = False):
        from .sweeps import sweep
        configs = list(configs)
        try:
            short = self._start(configs, keep_params)
        except Exception:
            self._collect(below=1)             # a pool's runs still computing finish and are counted first
            raise
        self._collect(below=1)                 # every run of the list finished (a pool's included)
        if short:
            raise Incomplete(f"{len(short)} run(s) not computed inside the budget")
        return sweep(configs, self.st, progress=False, compute=False, keep_params=keep_params)

    def _start(self, configs: list[ExperimentConfig], keep_params: bool) -> list[ExperimentConfig]:
        """Compute (or, with a pool, start) each missing run of ``configs`` that fits the budget,
        in order; returns those that did not fit (listed as left)."""
        short = []
        for c in configs:
            first = c.key() not in self.seen
            self.seen.add(c.key())
            if not self._missing(c, keep_params):
                self.part.loaded += first
                continue
            if any(c.key() == r.key() for r, _, _ in self.running.values()):
                continue                       # listed twice, and running in the pool already
            if self._held(c, first):
                short.append(c)
                continue
            if self.pool is not None:
                self._collect(below=self.pool.slots)             # a process free: the estimate is from now
            # once a run did not fit, a later one still starts if its measured estimate fits what
            # is left (no probe then): minutes the longer run cannot use go to a shorter one
            est = self._fits(c, probe=self.report.stopped != "budget")
            if est is None:
                self.report.stopped = "budget"
                if first:
                    self.part.left.append((c, self._estimate(c) or float("nan")))
                short.append(c)
                continue
            if self.pool is not None:
                future = self.pool.submit(_pool_run, str(self.st.path), c.to_dict(), keep_params)
                self.running[future] = (c, self.clock(), est)
                continue
            start = self.clock()
            entry = self.st.compute(c, device=self.device, checkpoint_every=CHECKPOINT_EVERY,
                                    save_params=keep_params, engine=self.engine)
            self._finished(entry, self.clock() - start, est)
        return short

    def _held(self, c: ExperimentConfig, first: bool) -> bool:
        """Whether another writer (a sweep, a second campaign on a shared folder) computes ``c``'s
        run now (:func:`fedlib.locks.holder`): the campaign leaves it to that writer, says so, and
        lists it as left (its entry is there for the next call) rather than wait out its time."""
        other = locks.holder(self.st.path, c.key())
        if other is None:
            return False
        self.echo(f"campaign: {self.part.notebook} {c.key()} is being computed by {other}: left to it")
        if first:
            self.part.left.append((c, self._estimate(c) or float("nan")))
        return True

    def _finished(self, entry, took: float, est: float) -> None:
        """A run computed into the store in ``took`` seconds (its entry sealed as written,
        :meth:`fedlib.store.Store.write`): its pace noted (of the rounds computed here, for a run
        resumed from a checkpoint), the run counted and echoed."""
        rounds = entry.config.rounds
        left = rounds - self.done.get(entry.path.name, 0)
        self.pace.note(entry.config, took * rounds / left, date=_now())
        self.part.computed.append(entry.path.name)
        self.report.computed.append(entry.path.name)
        self.echo(f"campaign: {self.part.notebook} {entry.path.name} {entry.status} in {took:.0f} s "
                  f"(estimated {est:.0f} s); {(self.deadline - self.clock()) / 60:.1f} min left")

    def _collect(self, below: int) -> None:
        """Wait for the pool's runs until fewer than ``below`` are running, each finished run read
        back and counted (:meth:`_finished`). A run that raised in its process (e.g. for data
        missing there; a run's own failure is a stored entry, not a raise) raises here once the
        others have finished and are counted. (A run that ends while a probe holds this process
        waits to be collected: its time, and so the pace, comes out longer: on the safe side.)"""
        import concurrent.futures as cf
        failed: BaseException | None = None
        while len(self.running) >= (1 if failed is not None else below):
            done, _ = cf.wait(list(self.running), return_when=cf.FIRST_COMPLETED)
            for future in done:
                c, start, est = self.running.pop(future)
                try:
                    key = future.result()
                except BaseException as e:  # noqa: BLE001 - raised below, after the others are counted
                    failed = failed or e
                    continue
                self._finished(self.st.read(key, expected=c), self.clock() - start, est)
        if failed is not None:
            raise failed


class _Pool:
    """One process per device of a campaign's ``devices`` (started with "spawn"; a CUDA one set
    up by :func:`fedlib.arithmetic.verifiable_cuda` before CUDA starts), each computing one run at
    a time on its device with the campaign's engine options and one torch thread (as
    :func:`fedlib.sweep`'s workers; the stored bits do not depend on it)."""

    def __init__(self, devices: list[str], engine):
        import concurrent.futures as cf
        import multiprocessing
        import os

        from .sweeps import _queue_of
        self.slots, self.devices = len(devices), list(devices)
        ctx = multiprocessing.get_context("spawn")
        self._manager = ctx.Manager()
        self._executor = cf.ProcessPoolExecutor(
            self.slots, mp_context=ctx, initializer=_pool_init,
            initargs=(os.getpid(), _queue_of(self._manager, devices), engine))

    def submit(self, fn, *args):
        return self._executor.submit(fn, *args)

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc) -> None:
        """Stop the processes once their runs have finished (after an error in the campaign's own
        process, a run still computing finishes and is stored: the next call loads it)."""
        self._executor.shutdown(wait=True)
        self._manager.shutdown()


#: in a process of a campaign's :class:`_Pool`: the engine its runs compute with
_WORKER_ENGINE = None


def _pool_init(parent: int, slots, engine) -> None:
    """Initializer of a :class:`_Pool` process: take one device for its whole life (as
    ``sweep(devices=...)``), set a CUDA device up for verifiable runs, one torch thread; its runs
    compute with ``engine`` (the campaign's ``VectorizedEngine``, pickled)."""
    global _WORKER_ENGINE
    import torch

    from . import sweeps
    sweeps._device_slot(parent, slots)
    if str(sweeps._SLOT_DEVICE).startswith("cuda"):
        from .arithmetic import verifiable_cuda
        verifiable_cuda()
    torch.set_num_threads(1)
    _WORKER_ENGINE = engine


def _pool_run(store: str, config: dict, keep_params: bool) -> str:
    """In a :class:`_Pool` process: compute one run into the store (as the campaign does in its
    own process); returns its entry's key."""
    from . import sweeps
    entry = Store(store).compute(ExperimentConfig.from_dict(config), device=sweeps._SLOT_DEVICE,
                                 checkpoint_every=CHECKPOINT_EVERY, save_params=keep_params,
                                 engine=_WORKER_ENGINE)
    return entry.path.name


def _pool_probe(store: str, probe: dict, config: dict):
    """In a :class:`_Pool` process: the history of ``probe`` (the first rounds of ``config``,
    from ``config``'s warm-up in the store) for :func:`probe_seconds`."""
    from . import sweeps
    from .runner import run_config
    x0 = Store(store).warmup_model(ExperimentConfig.from_dict(config))
    return run_config(ExperimentConfig.from_dict(probe), device=sweeps._SLOT_DEVICE, x0=x0,
                      engine=_WORKER_ENGINE).history


def _now() -> str:
    """The time now as ``meta.json``'s dates are written (ISO 8601, UTC): sorts after them."""
    from datetime import UTC, datetime
    return datetime.now(UTC).isoformat(timespec="seconds")


def _present(dataset: str, stand_in: bool) -> bool:
    """Whether ``dataset``'s files are on this machine (digits ship with scikit-learn; stand-in
    runs need none)."""
    from . import data
    if stand_in or dataset == "digits":
        return True
    try:
        data.load(dataset)
    except data.DataNotFoundError:
        return False
    return True


class _UnknownDataset(InputError):
    """A dataset a notebook's profile does not have (refused, not reported, for one notebook)."""


#: how a notebook's report names a plan stopped by a dataset its profile does not have
_UNKNOWN = "plan stopped, unknown dataset: "


def _check_datasets(ctx: _Context, known: tuple[str, ...] | list[str]) -> None:
    """Refuse a ``datasets`` entry the notebook's profile does not have, naming the profile's."""
    bad = [ds for ds in (ctx.datasets or ()) if ds not in known]
    if bad:
        raise _UnknownDataset(f"datasets: must be datasets of profile {ctx.profile!r} ({', '.join(known)}), "
                              f"got unknown dataset {bad[0]!r}")


@dataclass(frozen=True)
class _Context:
    """What a notebook's plan gets: the profile, the budgeted ``compute`` and the call's choices."""

    profile: str
    compute: Callable
    seeds: list[int]
    datasets: list[str] | None
    stand_in_rounds: int
    patterns: list[str] | None
    part: NotebookReport
    root: Path | None = None


def _plan_02(ctx: _Context) -> None:
    """Notebook 02: each dataset's App. H grid, then the main runs seed by seed (every method under
    P1, P2, P3 for seed 0, then seed 1, ...); the main runs need the grids' choice of rates: with
    the grid incomplete they are listed at stand-in rates (their count and pace, for what is left)."""
    import dataclasses

    from . import studies
    setup = studies.fedsum_setup(ctx.profile, ctx.stand_in_rounds)
    _check_datasets(ctx, setup.datasets)
    asked = ctx.datasets or setup.datasets               # named or not, only the data on this machine
    datasets = [ds for ds in asked if _present(ds, setup.stand_in)]
    ctx.part.missing += [ds for ds in asked if ds not in datasets]
    setup = dataclasses.replace(setup, datasets=tuple(datasets))
    try:
        ctx.compute([c for ds in datasets for c in setup.grid_configs(ds)])
        rates, _ = setup.choose_rates(ctx.compute)
    except ValueError:           # Incomplete, or a grid that picks nothing yet: stand-in rates
        rates = {ds: setup.grid[0] for ds in datasets}
    patterns = list(setup.patterns) if ctx.patterns is None else ctx.patterns
    for seed in ctx.seeds:
        labels = setup.main_configs(rates, patterns, [seed])
        try:
            ctx.compute(sorted(labels, key=lambda c: (labels[c][0], patterns.index(labels[c][1]))))
        except Incomplete:
            pass


def _plan_08(ctx: _Context) -> None:
    """Notebook 08 on Fashion-MNIST where the profile has it (Wang & Ji's own dataset), else the
    profile's first: :meth:`~fedlib.studies.amplified.AmplifiedSetup.compute_in_order` (the tuning
    seeds' warm-ups and rate search, then each seed whole); the stages after the rate search are
    listed only once it has finished."""
    from .studies import amplified
    names = amplified.DATASETS[ctx.profile]
    _check_datasets(ctx, names)
    want = ctx.datasets or ["fashion_mnist" if "fashion_mnist" in names else names[0]]
    for ds in want:
        setup = amplified.amplified_setup(ctx.profile, ctx.seeds[0], ctx.stand_in_rounds, ds)
        if not _present(ds, bool(ctx.stand_in_rounds)):
            ctx.part.missing.append(ds)
            continue
        try:
            setup.compute_in_order(ctx.compute, ctx.seeds)
        except Incomplete:
            ctx.part.unlisted = True


def _plan_05(ctx: _Context) -> None:
    """Notebook 05: every method x pattern x seed (FOCUS App. F), then the rate-sensitivity runs."""
    from .studies import focus
    setup = focus.focus_setup(ctx.profile, ctx.seeds[0], ctx.stand_in_rounds)
    if not _present(setup.dataset, setup.stand_in):
        ctx.part.missing.append(setup.dataset)
        return
    for configs in (setup.configs(ctx.seeds), setup.sensitivity_configs(ctx.seeds)):
        try:
            ctx.compute(list(configs))
        except Incomplete:
            pass


def _plan_03(ctx: _Context) -> None:
    """Notebook 03: the ablations at notebook 02's grid rates (its store: computed by 02's plan,
    which comes first), then Fig. 12's ResNet-18 runs (CIFAR-10 / CIFAR-100)."""
    from . import studies
    from .notebook import store_path
    from .studies import fedsum
    setup = studies.fedsum_setup(ctx.profile, ctx.stand_in_rounds)
    _check_datasets(ctx, setup.datasets)
    datasets = [ds for ds in (ctx.datasets or setup.datasets) if _present(ds, setup.stand_in)]
    ctx.part.missing += [ds for ds in (ctx.datasets or setup.datasets) if ds not in datasets]
    from .sweeps import sweep
    grid_store = Store(store_path("02_fedsum_main", ctx.profile, ctx.root), create=False)   # read only
    try:
        rates, _ = setup.choose_rates(lambda cs: sweep(cs, grid_store, progress=False, compute=False),
                                      datasets)
    except ValueError:
        ctx.part.missing.append("notebook 02's grid (its rates choose these runs' rates)")
        ctx.part.unlisted = True
        return
    for group in setup.ablation_configs(rates, ctx.seeds, datasets).values():
        try:
            ctx.compute(list(group))
        except Incomplete:
            pass
    resnet = fedsum.resnet_configs(ctx.profile, ctx.stand_in_rounds, ctx.seeds[0])
    need = sorted({c.arguments("problem_args").get("dataset") for c in resnet} - {None})
    absent = [ds for ds in need if not _present(ds, setup.stand_in or ctx.profile == "smoke")]
    if absent:
        ctx.part.missing.append(f"Fig. 12 ({', '.join(absent)})")
        return
    try:
        ctx.compute(list(resnet))
    except Incomplete:
        pass


def stored_scope_02(setup, store: str | Path, seeds: list[int], patterns: list[str] | None = None
                    ) -> tuple[object, list[int], list[str]]:
    """What notebook 02 can render from its store without computing (``make figures
    PROFILE=paper``): the setup cut to the datasets whose App. H grid is stored whole and to the
    patterns of the largest block of patterns x seeds whose main runs are all stored, that block's
    seeds, and one line per dataset, seed or pattern left out naming what it lacks (``make
    campaign`` computes them; SVHN and CIFAR-10 cannot be had here).

    The block (:func:`_whole_block`): among the sets of patterns (of ``patterns``, default the
    setup's), each with the seeds whose main runs of all of them are stored on every dataset kept,
    the one with the most runs; on a tie the more seeds (the claims are checked seed by seed and
    need two), then the more patterns, then the earlier patterns. So a store filled seed by seed
    (the campaign's order) renders the patterns its first seed has whole before that seed is
    complete. With no whole pattern of any seed, the seeds are [] and the patterns are kept.

    Raises:
        InputError: ``seeds`` is not a list of distinct non-negative integers, or ``patterns`` not
            None or a list of distinct patterns of ``setup``.
    """
    import dataclasses

    from .notebook import check_seeds
    from .sweeps import sweep
    seeds, patterns = check_seeds(seeds), _scope_patterns(setup, patterns)
    st = Store(store, create=False)                                # a render reads, never writes
    lines, have = [], []
    for ds in setup.datasets:
        grid = setup.grid_configs(ds)
        n = sum(st.get(c) is not None for c in grid)
        if n == len(grid):
            have.append(ds)
        else:
            there = "" if _present(ds, setup.stand_in) else " (its data is not on this machine)"
            lines.append(f"missing: {setup.dataset_name(ds)}: {n} of {len(grid)} grid runs stored{there}; "
                         "its main runs are left out")
    setup = dataclasses.replace(setup, datasets=tuple(have))
    if not have:
        return setup, [], lines + ["missing: every dataset's grid: nothing to render"]
    rates, _ = setup.choose_rates(lambda cs: sweep(cs, st, progress=False, compute=False))
    stored = {(k, p): _stored_main(setup, st, rates, p, k) for k in seeds for p in patterns}
    keep, full = _whole_block(stored, seeds, patterns)
    where = ", ".join(map(setup.dataset_name, have))
    for k in seeds:
        if k not in full:
            n, m = (sum(stored[k, p][i] for p in patterns) for i in (0, 1))
            lines.append(f"missing: seed {k}: {n} of {m} main runs stored ({where}); the seed is left out")
    block = f"the largest block stored whole is {', '.join(keep)} x seed{'s' * (len(full) > 1)} " \
            f"{', '.join(map(str, full))}"
    for p in setup.patterns if full else []:
        if p not in patterns:
            lines.append(f"missing: {p}: not among the patterns asked for ({', '.join(patterns)}); "
                         "the pattern is left out")
        elif p not in keep:
            counts = ", ".join(f"seed {k}: {stored[k, p][0]} of {stored[k, p][1]}" for k in full)
            lines.append(f"missing: {p}: {counts} main runs stored ({where}); the pattern is left out "
                         f"({block})")
    if full:
        setup = dataclasses.replace(setup, patterns={p: setup.patterns[p] for p in keep})
    return setup, full, lines


def _scope_patterns(setup, patterns) -> list[str]:
    """:func:`stored_scope_02`'s ``patterns``: the setup's (None) or a non-empty list of distinct
    patterns of the setup, else an InputError naming them."""
    if patterns is None:
        return list(setup.patterns)
    if (isinstance(patterns, str) or not isinstance(patterns, (list, tuple)) or not patterns
            or not all(isinstance(p, str) and p in setup.patterns for p in patterns)
            or len(set(patterns)) < len(patterns)):
        raise InputError(f"patterns: must be None or a non-empty list of distinct patterns of the setup "
                         f"({', '.join(setup.patterns)}), got {patterns!r}")
    return list(patterns)


def _stored_main(setup, st: Store, rates: dict, pattern: str, seed: int) -> tuple[int, int]:
    """(stored, all): notebook 02's main runs of ``pattern`` and ``seed`` at ``rates`` in ``st``."""
    labels = setup.main_configs(rates, [pattern], [seed])
    return sum(st.get(c) is not None for c in labels), len(labels)


def _whole_block(stored: dict, seeds: list[int], patterns: list[str]) -> tuple[list[str], list[int]]:
    """:func:`stored_scope_02`'s block: (patterns, seeds) with every main run stored (``stored``:
    (seed, pattern) -> (stored, all)), over every non-empty set of ``patterns`` (in their order)
    with the seeds that have all of it whole: the most runs, then the most seeds, then the most
    patterns, then the first set met; ([], []) when no pattern of any seed is whole."""
    import itertools
    whole = {k: {p for p in patterns if stored[k, p][0] == stored[k, p][1]} for k in seeds}
    best, most = ([], []), (0, 0, 0)
    for r in range(1, len(patterns) + 1):
        for subset in itertools.combinations(patterns, r):
            full = [k for k in seeds if whole[k].issuperset(subset)]
            size = (sum(stored[k, p][1] for k in full for p in subset), len(full), r)
            if full and size > most:
                best, most = (list(subset), full), size
    return best


class _NotStored(Exception):
    """Raised by :func:`stored_scope_08`'s reading ``compute`` when a run it is asked for is not stored."""


@dataclass(frozen=True)
class StoredScope08:
    """What notebook 08 can render from its store without computing (:func:`stored_scope_08`).

    Attributes:
        warm_seeds: the tuning seeds and the seeds asked for whose warm-up is stored, in that order.
        grid: the rate grid's runs stored of those the search has asked for so far: config ->
            (method, rate).
        searches: method -> its rate search (:meth:`~fedlib.studies.amplified.AmplifiedSetup.search_rate`),
            for each method whose search is stored whole (every run it asks for, extensions past an
            edge included), so its chosen rate is known while another method's grid is still
            being computed.
        searched: every method's search is whole (``searches`` has them all).
        seeds: the seeds asked for whose runs (warm-up, Fig. 1 at the best and at the authors'
            rates, Fig. 2) are all stored; [] until ``searched``.
        lines: one ``missing: ...`` line per part left out.
    """

    warm_seeds: list[int]
    grid: dict
    searches: dict
    searched: bool
    seeds: list[int]
    lines: list[str]


def stored_scope_08(setup, store: str | Path, seeds: list[int]) -> StoredScope08:
    """What notebook 08 can render from its store without computing (``make figures
    PROFILE=paper``), in the order the campaign fills it
    (:meth:`~fedlib.studies.amplified.AmplifiedSetup.compute_in_order`): the warm-ups stored; the
    rate grid's runs stored, and each method's search where every run it asks for (extensions
    past an edge included) is stored (its chosen rate, whatever the other methods' state); then,
    once every search is whole, the seeds asked for whose runs are all stored; one line per part
    left out naming what it lacks (``make campaign NB=08_amplified_fedavg`` computes them).

    Raises:
        InputError: ``seeds`` is not a list of distinct non-negative integers, or holds a tuning
            seed.
    """
    from .notebook import check_seeds
    from .sweeps import sweep
    seeds = check_seeds(seeds)
    setup.check_seeds(seeds)
    st = Store(store, create=False)                                # a render reads, never writes
    lines = []
    warm_seeds = []
    for k, c in zip([*setup.tuning_seeds, *seeds], setup.warmups([*setup.tuning_seeds, *seeds]), strict=True):
        if st.get(c) is not None:
            warm_seeds.append(k)
        elif k in setup.tuning_seeds:
            lines.append(f"missing: the warm-up of tuning seed {k}: the rate grid continues it")
    stored = functools.cache(lambda c: st.get(c) is not None)     # each entry's meta read once
    grid, searches = {}, {}
    for m in setup.methods:
        asked: list = []

        def read(configs, asked=asked):
            asked.extend(configs)
            if not all(map(stored, configs)):
                raise _NotStored
            return sweep(configs, st, progress=False, compute=False)
        try:
            searches[m] = setup.search_rate(m, read)
        except _NotStored:
            have = [c for c in asked if stored(c)]
            lines.append(f"missing: the rate grid of {m}: {len(have)} of the {len(asked)} runs asked for so "
                         f"far stored (seeds {', '.join(map(str, setup.grid_seeds))})")
        grid.update({c: (m, c.lr_local) for c in asked if stored(c)})
    if len(searches) < len(setup.methods):
        lines.append("missing: Fig. 1, Fig. 2 and the claims: they need every method's rate search whole")
        return StoredScope08(warm_seeds, grid, searches, False, [], lines)
    best = {m: g.best for m, g in searches.items()}
    amp = next(iter(setup.methods))
    whole = []
    for k in seeds:
        need = [*setup.warmups([k]), *setup.fig1_configs(best, [k]),
                *setup.fig1_configs(setup.authors_rates(), [k]), *setup.fig2_configs(best[amp], [k])]
        need = list(dict.fromkeys(need))                           # a rate both sets share: one run
        n = sum(map(stored, need))
        if n == len(need):
            whole.append(k)
        else:
            lines.append(f"missing: seed {k}: {n} of {len(need)} runs stored (warm-up, Fig. 1 at both rate "
                         "sets, Fig. 2); the seed is left out")
    return StoredScope08(warm_seeds, grid, searches, True, whole, lines)


#: notebooks with a campaign, in the order a campaign of several takes them (issue 48: 02's grid
#: and main runs, 08 on Fashion-MNIST, 05, 03), and the function that computes each one's runs in order
CAMPAIGNS: dict[str, Callable[[_Context], None]] = {
    "02_fedsum_main": _plan_02, "08_amplified_fedavg": _plan_08, "05_focus_cifar": _plan_05,
    "03_fedsum_ablations": _plan_03}


def run_campaign(notebook: str | list[str], profile: str = "paper", device: str | None = None,
                 budget_min: float = 12.0, store: str | Path | None = None, seeds: list[int] | None = None,
                 datasets: list[str] | None = None, stand_in_rounds: int = 0,
                 patterns: list[str] | None = None, clock: Callable[[], float] = time.monotonic,
                 echo: Callable[[str], None] = print, graphs: bool = False,
                 root: str | Path | None = None, compiled_draws: bool = False,
                 devices: list[str] | None = None, clients_innermost: bool = False,
                 grouped_layout: bool = False) -> CampaignReport:
    """Compute the runs of ``notebook`` (a name of :data:`CAMPAIGNS`, a list of them, or ``"all"``:
    every one in :data:`CAMPAIGNS`' order) at ``profile`` into their stores, in order, within
    ``budget_min`` minutes in all (see the module docstring).

    Args:
        notebook: a notebook of :data:`CAMPAIGNS`, several (taken in :data:`CAMPAIGNS`' order), or "all".
        profile: ``paper`` (the point), ``quick`` or ``smoke``.
        device: where runs compute (e.g. ``"cuda"``); with ``budget_min=0`` (a listing) it may be
            a device this machine lacks: what is left is then estimated for it.
        budget_min: minutes this call may use; a run is started only if its estimate fits.
        store: the store folder (default ``results/<notebook>/<profile>``); one notebook only.
        seeds: the main runs' seeds, in order (default 0..4).
        datasets: the datasets (default: every dataset of the profile present here).
        stand_in_rounds: random stand-in data, runs cut to this many rounds (tests).
        patterns: participation patterns of notebook 02's main runs (default: all, in order).
        clock: seconds, monotonic (tests pass their own).
        echo: where progress lines go.
        graphs, compiled_draws, clients_innermost, grouped_layout: the options of the
            :class:`~fedlib.engine.VectorizedEngine` runs compute with (CUDA-graph steps, keyed draws
            by a ``torch.compile``'d :func:`fedlib.keyed.step_draws`, the clients innermost, a
            SimpleCNN's gradients in the grouped layout: each where ``benchmarks/gpu_check.py``'s
            rows on that GPU model allow it), recorded in each entry's ``meta.json`` (``engine``),
            not in its config.
        root: the folder whose ``results/<notebook>/<profile>`` hold the stores (default: the project's).
        devices: one process per device (e.g. ``["cuda:0", "cuda:1"]``, ``["cpu", "cpu"]``), all
            of one kind, runs in parallel in the campaign's order; not with ``device``.
    """
    from .notebook import store_path
    devices, device = _check_campaign_devices(devices, device, budget_min)
    names, engine = _check_campaign(notebook, profile, device, budget_min, store, dict(
        graphs=graphs, compiled_draws=compiled_draws, clients_innermost=clients_innermost,
        grouped_layout=grouped_layout), root)
    seeds, datasets, patterns = _check_seeds_and_datasets(seeds, datasets, patterns, names, profile)
    deadline = (t0 := clock()) + 60.0 * budget_min
    report = CampaignReport(budget_s=60.0 * budget_min)
    pooled = devices is not None and budget_min > 0            # (a list computes nothing: no processes)
    with _Pool(devices, engine) if pooled else nullcontext() as pool:
        for nb in names:
            st = Store(store if store is not None else store_path(nb, profile, root), create=budget_min > 0)
            part = NotebookReport(nb)
            report.notebooks.append(part)
            pace = _Pace(st, device, engine, threads=1 if devices else None)    # a pool's: 1 thread each
            compute = _Compute(st, pace, deadline, report, part, device, engine, clock, echo, pool)
            ctx = _Context(profile, compute, list(range(5)) if seeds is None else seeds, datasets,
                           stand_in_rounds, patterns, part, None if root is None else Path(root))
            _plan_notebook(nb, ctx, part, alone=len(names) == 1)
            report.loaded += part.loaded
            report.left += part.left
    _refuse_unknown_datasets(report, datasets, profile)
    report.seconds = clock() - t0
    echo(str(report))
    return report


def _refuse_unknown_datasets(report: CampaignReport, datasets: list[str] | None, profile: str) -> None:
    """An InputError where every notebook of ``report`` that takes datasets stopped its plan on a
    dataset of ``datasets`` (None: none named) its profile does not have (a typo; notebook 05 runs
    its one dataset)."""
    if datasets is None:
        return
    unknown = [p for p in report.notebooks if any(m.startswith(_UNKNOWN) for m in p.missing)]
    takers = [p for p in report.notebooks if p.notebook != "05_focus_cifar"]
    if unknown and len(unknown) == len(takers):
        raise InputError(f"datasets: {', '.join(map(repr, datasets))} names a dataset none of the "
                         f"notebooks {', '.join(p.notebook for p in takers)} has at profile {profile!r}: "
                         + "; ".join(f"{p.notebook}: {next(m for m in p.missing if m.startswith(_UNKNOWN))}"
                                     .replace(_UNKNOWN, "") for p in unknown))


def _plan_notebook(nb: str, ctx: _Context, part: NotebookReport, alone: bool) -> None:
    """Run notebook ``nb``'s plan through ``ctx``; a plan stopped early says why in ``part``
    (a dataset not on this machine is raised when ``nb`` is the campaign's only notebook)."""
    try:
        CAMPAIGNS[nb](ctx)
    except Incomplete:
        part.unlisted = True
    except _UnknownDataset as e:
        if alone:
            raise
        part.missing.append(f"{_UNKNOWN}{e}")
    except ValueError as e:          # e.g. seeds or datasets the notebook's profile does not have
        part.missing.append(f"plan stopped: {e}")


def _check_campaign_devices(devices, device, budget_min) -> tuple[list[str] | None, str | None]:
    """:func:`run_campaign`'s ``devices`` and the device that sets the pace; else a ValueError
    naming the field. ``devices``: None, or device names of one kind (:func:`_device_kind`),
    without ``device``, each existing here (:func:`_check_here`), no GPU named twice (processes
    sharing a GPU time-slice it: an H100, 2026-11-27, ran 8 processes at 29.6 run-rounds/s against
    one run's 31.7, so each run would take several times the pace the budget is checked with),
    and at most one CPU process per core."""
    if devices is None:
        return None, device
    from .sweeps import _check_devices
    devices = _check_devices(devices)
    if device is not None:
        raise InputError(f"devices: give either devices (one process each) or device, not both "
                         f"(got devices={devices!r}, device={device!r})")
    for d in devices:
        _check_here("devices", d, budget_min)
    gpus = [d if ":" in d else f"{d}:0" for d in devices if d.startswith("cuda")]
    for g in gpus:
        if gpus.count(g) > 1:
            raise InputError(f"devices: {g} is named twice: processes sharing one GPU time-slice it, "
                             f"so the budget would be checked with a pace several times too fast; "
                             f"name each GPU once")
    cores = os.cpu_count() or 1
    cpus = sum(d.split(":")[0] == "cpu" for d in devices)
    if cpus > cores:
        raise InputError(f"devices: {cpus} CPU processes on a machine of {cores} cores; "
                         f"name 'cpu' at most once per core")
    if devices[0].startswith("cuda"):
        from .arithmetic import verifiable_cuda
        verifiable_cuda()                # before CUDA computes here (the kinds below ask CUDA)
    kinds = {d: _device_kind(d) for d in devices}
    if len(set(kinds.values())) > 1:
        raise InputError("devices: must all be of one kind (the pace is measured per kind), got "
                         + ", ".join(f"{d} ({' '.join(map(str, k))})" for d, k in kinds.items()))
    return devices, devices[0]


def _check_here(name: str, device: str, budget_min: float) -> None:
    """``device`` must exist on this machine (a ValueError naming ``name``), except a GPU named on
    a machine without CUDA by a call that only lists (``budget_min`` 0: estimated for a GPU
    elsewhere from the stored GPU runs)."""
    import torch

    from .runner import _device
    if budget_min == 0 and str(device).startswith("cuda") and not torch.cuda.is_available():
        return
    _device(device, field=name)


def _check_seeds_and_datasets(seeds, datasets, patterns, names: list[str], profile: str
                              ) -> tuple[list[int] | None, list[str] | None, list[str] | None]:
    """:func:`run_campaign`'s ``seeds`` (:func:`fedlib.notebook.check_seeds`), ``datasets`` and
    ``patterns`` (non-empty lists of distinct names; patterns of notebook 02's profile, and only
    where notebook 02 is named; datasets not for notebook 05 alone, which has one), each None or
    as lists, or an InputError naming the field."""
    from .notebook import check_seeds
    try:
        seeds = None if seeds is None else check_seeds(seeds)
    except ValueError as e:
        raise InputError(str(e)) from None
    for what, value in (("datasets", datasets), ("patterns", patterns)):
        if value is None:
            continue
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value or not all(
                isinstance(v, str) for v in value):
            raise InputError(f"{what}: must be a non-empty list of names, got {value!r}")
        twice = sorted({v for v in value if list(value).count(v) > 1})
        if twice:
            raise InputError(f"{what}: each name once; {', '.join(twice)} repeated in {list(value)!r}")
    if datasets is not None and names == ["05_focus_cifar"]:
        raise InputError("datasets: notebook 05_focus_cifar runs one dataset (FOCUS App. F's); "
                         "leave datasets out")
    if patterns is not None:
        from .studies import fedsum_setup
        setup = fedsum_setup(profile)
        if "02_fedsum_main" not in names:
            raise InputError(f"patterns: are notebook 02's participation patterns "
                             f"({', '.join(setup.patterns)}); notebook 02_fedsum_main is not among "
                             f"{', '.join(names)}")
        patterns = _scope_patterns(setup, patterns)                  # the render's check, one rule
    return seeds, None if datasets is None else list(datasets), patterns


def _check_store_place(store: str | Path | None, names: list[str], profile: str) -> None:
    """A ``store`` that is another notebook's or another profile's store (``.../results/<notebook>/
    <profile>``) refused, naming the one this campaign's notebook and profile use: its runs would
    go, or be read, where that notebook never looks."""
    if store is None:
        return
    from .notebook import PROFILES
    parts = Path(os.path.abspath(store)).parts
    if len(parts) < 3 or parts[-3] != "results" or parts[-1] not in PROFILES or parts[-2] not in CAMPAIGNS:
        return
    if (parts[-2], parts[-1]) != (names[0], profile):
        own = f"results/{names[0]}/{profile}"
        raise InputError(f"store: {store} is the store of notebook {parts[-2]} at profile {parts[-1]}; a "
                         f"campaign of {names[0]} at profile {profile} stores into {own} (leave store out "
                         "for it, or give a folder outside results/)")


def _check_campaign(notebook: str | list[str], profile: str, device: str | None, budget_min: float,
                    store: str | Path | None, flags: dict[str, bool], root: str | Path | None = None
                    ) -> tuple[list[str], VectorizedEngine]:
    """:func:`run_campaign`'s arguments checked (a ValueError naming the first bad one; a CUDA
    device must compute verifiably: :func:`fedlib.arithmetic.verifiable_cuda`); returns the
    notebooks named, in the campaign order, and the engine of the engine options ``flags``."""
    from .notebook import check_profile
    if isinstance(notebook, (list, tuple)) and list(notebook) == ["all"]:
        notebook = "all"                               # the list form of "all", as the command line gives it
    names = (list(CAMPAIGNS) if notebook == "all" else [notebook] if isinstance(notebook, str)
             else list(notebook) if isinstance(notebook, (list, tuple)) else None)
    if not names or not all(isinstance(nb, str) for nb in names):
        raise InputError(f"notebook: name at least one campaign ({', '.join(CAMPAIGNS)}) or all, "
                         f"got {notebook!r}")
    for nb in names:
        if nb == "all" and len(names) > 1:
            raise InputError(f"notebook: 'all' stands alone (it names every campaign), got {list(names)!r}")
        if nb not in CAMPAIGNS:
            raise InputError(f"notebook: no campaign for {nb!r}; campaigns: {', '.join(CAMPAIGNS)} or all")
        if names.count(nb) > 1:
            raise InputError(f"notebook: each campaign once; {nb} repeated in {list(names)!r}")
    names = [nb for nb in CAMPAIGNS if nb in names]
    for what, path in (("store", store), ("root", root)):
        if path is not None and (not isinstance(path, (str, os.PathLike)) or not os.fspath(path).strip()):
            raise InputError(f"{what}: must be a folder path, got {path!r}")
    if store is not None and root is not None:
        raise InputError(f"store, root: give one (store: one notebook's store folder; root: the folder "
                         f"holding results/<notebook>/<profile>), got store={store!r} and root={root!r}")
    if root is not None and Path(root).exists() and not Path(root).is_dir():
        raise InputError(f"root: {root} is a file; give the folder that holds results/<notebook>/<profile>")
    if store is not None and len(names) > 1:
        raise InputError("store: one store folder is for one notebook; leave it out for several "
                         "(each goes to results/<notebook>/<profile>)")
    check_profile(profile)
    _check_store_place(store, names, profile)
    if root is not None and not (Path(root) / "results").is_dir():
        warn(f"root: no results/ folder under {root}: every run is planned anew there (root is the folder "
             "that holds results/<notebook>/<profile>, e.g. a copy of the project)")
    if isinstance(budget_min, bool) or not isinstance(budget_min, (int, float)) or not (
            0 <= budget_min < float("inf")):
        raise InputError(f"budget_min: must be a finite number of minutes >= 0, got {budget_min!r}")
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise InputError(f"{name}: must be True or False, got {flag!r}")
    off_cpu = {"graphs": "CUDA graphs are captured on a CUDA device only",
               "compiled_draws": "keyed draws are compiled off the CPU only (a CPU draws them in numpy)"}
    for name, why in off_cpu.items():
        if flags.get(name) and not str(device).startswith("cuda"):
            raise InputError(f"{name}: {why}; this campaign computes on {device or 'cpu'}, where it would "
                             "change nothing but the engine its entries record: leave it out, or name a "
                             "CUDA device")
    if device is not None:
        _check_here("device", device, budget_min)
    if device is not None and str(device).startswith("cuda"):
        from .arithmetic import verifiable_cuda
        verifiable_cuda()
    from .engine import VectorizedEngine
    return names, VectorizedEngine(**flags)


def _check_stand_in(name: str, value: object) -> None:
    """``stand_in_rounds`` of the public functions: an integer >= 0, checked before any plan (a bad
    one stopped every notebook's plan and the campaign said "nothing left" with status 0)."""
    from .notebook import check_stand_in
    check_stand_in(value, name)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals(), by_name={"stand_in_rounds": _check_stand_in})
