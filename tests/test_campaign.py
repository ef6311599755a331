"""fedlib.campaign: runs in order inside a budget, never one that cannot finish, resumed without
recomputing (notebook 02's smoke profile, a clock that advances with the store)."""

import os
from pathlib import Path

import pytest
import torch

from fedlib import campaign
from fedlib.store import Store


def _clock(path, per_run=30.0):
    """A clock for the test: every stored run has taken ``per_run`` seconds, nothing else takes time."""
    return lambda: per_run * (len(Store(path).keys()) if path.exists() else 0)


def test_a_campaign_stops_inside_its_budget_and_resumes_without_recomputing(tmp_path):
    path = tmp_path / "paper"
    kw = dict(profile="smoke", store=path, seeds=[0], patterns=["P1"], clock=_clock(path),
              echo=lambda s: None)
    none = campaign.run_campaign("02_fedsum_main", budget_min=0, **kw)
    n_grid, n_main = 2, 9                         # the grid; every method under P1
    assert none.computed == [] and none.stopped == "budget" and len(none.left) == n_grid + n_main
    # 2 minutes: the first grid run (probe: no time) takes 30 s, so the second is estimated at
    # 1.15 x 30 s and fits; a main run (4 rounds at 15 s a round, x 1.15 = 69 s) would end past 120 s
    first = campaign.run_campaign("02_fedsum_main", budget_min=2, **kw)
    assert len(first.computed) == 2 and first.stopped == "budget" and first.seconds <= 120
    assert len(first.left) == n_main and first.left_minutes == pytest.approx(n_main * 69 / 60)
    # what `make figures PROFILE=paper` renders of such a store: the grid's dataset, no whole seed
    from fedlib import studies
    setup = studies.fedsum_setup("smoke")
    scoped, seeds, lines = campaign.stored_scope_02(setup, path, [0, 1], ["P1"])
    assert scoped.datasets == ("digits",) and seeds == []
    assert lines == [f"missing: seed {k}: 0 of {n_main} main runs stored ({setup.dataset_name('digits')}); "
                     "the seed is left out" for k in (0, 1)]
    st = Store(path)
    stamps = {k: (path / k / "history.csv").stat().st_mtime_ns for k in st.keys()}
    assert set(st.seal().values()) == {"unchanged"}                           # sealed as written: committable
    rest = campaign.run_campaign("02_fedsum_main", budget_min=10, **kw)
    assert rest.loaded == 2 and len(rest.computed) == n_main and rest.left == [] and rest.stopped == "done"
    assert {k: (path / k / "history.csv").stat().st_mtime_ns for k in stamps} == stamps   # not recomputed
    scoped, seeds, lines = campaign.stored_scope_02(setup, path, [0, 1], ["P1"])
    assert seeds == [0] and len(lines) == 3 and lines[0].startswith("missing: seed 1: 0 of 9 main runs")
    assert lines[1:] == [f"missing: {p}: not among the patterns asked for (P1); the pattern is left out"
                         for p in ("P2", "P3")]
    assert scoped.patterns == {"P1": setup.patterns["P1"]}
    # P1's runs of seed 0 are whole, P2's are not: rendered cut to P1, P2 named
    scoped, seeds, lines = campaign.stored_scope_02(setup, path, [0, 1], ["P1", "P2"])
    assert seeds == [0] and list(scoped.patterns) == ["P1"]
    digits = "digits (smoke test)"
    assert lines == [f"missing: seed 1: 0 of 18 main runs stored ({digits}); the seed is left out",
                     f"missing: P2: seed 0: 0 of 9 main runs stored ({digits}); the pattern is left out "
                     "(the largest block stored whole is P1 x seed 0)",
                     "missing: P3: not among the patterns asked for (P1, P2); the pattern is left out"]
    scoped, seeds, lines = campaign.stored_scope_02(setup, path, [1, 0])       # the setup's patterns
    assert seeds == [0] and list(scoped.patterns) == ["P1"] and len(lines) == 3
    assert lines[2].startswith("missing: P3: seed 0: 0 of 9 main runs stored")
    with pytest.raises(ValueError, match="seeds: each seed once"):
        campaign.stored_scope_02(setup, path, [0, 0])
    empty, none_seeds, why = campaign.stored_scope_02(setup, tmp_path / "empty", [0], ["P1"])
    assert empty.datasets == () and none_seeds == [] and "0 of 2 grid runs stored" in why[0]
    assert not (tmp_path / "empty").exists()                        # a render reads, creates nothing
    again = campaign.run_campaign("02_fedsum_main", budget_min=10, **kw)
    assert again.computed == [] and again.loaded == n_grid + n_main


def test_the_scope_a_paper_store_renders_is_its_largest_whole_block_of_patterns_and_seeds():
    """``stored_scope_02``'s block: every set of patterns with the seeds that have it whole; the
    most runs win, then more seeds (the claims need two), then more patterns, then the first set."""
    def stored(whole: dict) -> dict:
        return {(k, p): (9 if p in whole[k] else 4, 9) for k in whole for p in ("P1", "P2", "P3")}

    def block(whole: dict) -> tuple:
        return campaign._whole_block(stored(whole), [0, 1, 2], ["P1", "P2", "P3"])
    assert block({0: ["P1", "P2"], 1: ["P1"], 2: ["P1"]}) == (["P1"], [0, 1, 2])        # 27 runs, not 18
    assert block({0: ["P1", "P2", "P3"], 1: ["P1", "P3"], 2: []}) == (["P1", "P3"], [0, 1])  # 36, not 27
    assert block({0: ["P1", "P2"], 1: ["P1"], 2: []}) == (["P1"], [0, 1])      # 18 each: more seeds
    assert block({0: ["P2"], 1: ["P1", "P3"], 2: []}) == (["P1", "P3"], [1])
    assert block({0: ["P2"], 1: ["P3"], 2: []}) == (["P2"], [0])                  # a tie: the first
    assert block({0: [], 1: [], 2: []}) == ([], [])
    assert block({0: ["P1", "P2"], 1: ["P1", "P3"], 2: []}) == (["P1"], [0, 1])   # 18 each: a shared set
    four = {(k, p): (9 if p in w else 0, 9) for k, w in enumerate([["P1", "P2", "P3"], ["P1", "P2", "P4"],
                                                                    ["P1", "P2"], ["P1", "P2"]])
            for p in ("P1", "P2", "P3", "P4")}
    assert campaign._whole_block(four, [0, 1, 2, 3], ["P1", "P2", "P3", "P4"]) == (["P1", "P2"], [0, 1, 2, 3])


def _history(entry_dir):
    import pandas as pd
    h = pd.read_csv(entry_dir / "history.csv")
    return h.drop(columns=[c for c in h.columns if c.endswith("seconds")])      # timings differ


def test_a_campaign_over_two_processes_keeps_its_budget_and_stores_what_one_process_does(tmp_path):
    """``devices``: runs start in order as processes come free, only if they fit the budget (the
    same test clock as above: the grid's 2 runs fit 2 minutes, a main run does not), and each
    entry is the one the campaign computes in its own process, bit for bit. The processes compute
    with the campaign's engine (recorded in each entry; on a CPU the clients' layout changes
    nothing: its runs take the loop strategy)."""
    kw = dict(profile="smoke", seeds=[0], patterns=["P1"], echo=lambda s: None)
    one, two = tmp_path / "one", tmp_path / "two"
    campaign.run_campaign("02_fedsum_main", budget_min=10, store=one, **kw)
    first = campaign.run_campaign("02_fedsum_main", budget_min=2, store=two, clock=_clock(two),
                                  devices=["cpu", "cpu"], clients_innermost=True, **kw)
    assert len(first.computed) == 2 and first.stopped == "budget" and len(first.left) == 9
    assert first.seconds <= 120
    rest = campaign.run_campaign("02_fedsum_main", budget_min=10, store=two, clock=_clock(two),
                                 devices=["cpu", "cpu"], clients_innermost=True, **kw)
    assert rest.loaded == 2 and len(rest.computed) == 9 and rest.left == [] and rest.stopped == "done"
    assert sorted(rest.computed) == sorted(set(rest.computed))                  # each run once
    st1, st2 = Store(one), Store(two)
    assert st2.keys() == st1.keys() and len(st1.keys()) == 11
    assert set(st2.seal().values()) == {"unchanged"}                          # sealed as written
    for key in st1.keys():
        assert st2.read(key).meta["torch_threads"] == 1                         # in the pool's processes
        assert st2.read(key).meta["engine"] == "VectorizedEngine(graphs=False, clients_innermost=True)"
        assert _history(two / key).equals(_history(one / key)), key


def test_a_pool_run_that_raised_is_raised_after_the_others_have_finished(tmp_path):
    """A run that raised in its process (not a failed run: that is a stored entry) stops the
    campaign, but only after the runs still computing have finished and are counted."""
    import threading
    from concurrent.futures import Future, ThreadPoolExecutor

    from fedlib import studies
    st = Store(tmp_path / "s")
    c = next(iter(studies.fedsum_setup("smoke").grid_configs("digits")))
    pace = campaign._Pace(st)
    assert pace.estimate(c) is None                                             # nothing measured yet
    key = st.compute(c, checkpoint_every=None).path.name
    part = campaign.NotebookReport("02_fedsum_main")
    compute = campaign._Compute(st, pace, 1e9, campaign.CampaignReport(), part, None,
                                "vectorized", lambda: 0.0, lambda s: None)
    release = threading.Event()
    bad = Future()
    bad.set_exception(RuntimeError("data missing in that process"))
    with ThreadPoolExecutor(1) as pool:
        ok = pool.submit(lambda: release.wait(10) and key)                      # still computing
        compute.running = {bad: (c, 0.0, 1.0), ok: (c, 0.0, 1.0)}
        threading.Timer(0.3, release.set).start()
        with pytest.raises(RuntimeError, match="data missing in that process"):
            compute._collect(below=2)
    assert compute.running == {} and part.computed == [key]                     # waited for, counted
    assert pace.estimate(c) is not None                                         # its pace noted


def test_campaign_arguments_are_checked(tmp_path, capsys):
    from fedlib.__main__ import main
    with pytest.raises(ValueError, match="notebook: no campaign for '01_participation_delays'"):
        campaign.run_campaign("01_participation_delays", store=tmp_path)
    for budget in (-1, float("inf")):
        with pytest.raises(ValueError, match="budget_min: must be a finite number of minutes >= 0"):
            campaign.run_campaign("02_fedsum_main", profile="smoke", budget_min=budget, store=tmp_path)
    kw = dict(profile="smoke", budget_min=0, store=tmp_path / "refused", echo=lambda s: None)
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    for args, msg in [
            (dict(notebook=[]), r"notebook: name at least one campaign"),
            (dict(notebook=["all", "02_fedsum_main"]), r"notebook: 'all' stands alone"),
            (dict(notebook=["02_fedsum_main"] * 2), r"notebook: each campaign once; 02_fedsum_main repeated"),
            (dict(seeds=[]), r"seeds: must be a non-empty list of non-negative integers"),
            (dict(seeds=[0, 0]), r"seeds: each seed once"),
            (dict(seeds=[2 ** 70]), r"seeds: each seed below 2\*\*63"),
            (dict(patterns=[]), r"patterns: must be a non-empty list of names, got \[\]"),
            (dict(patterns="P1"), r"patterns: must be a non-empty list of names, got 'P1'"),
            (dict(patterns=["P9"]), r"patterns: must be None or .* \(P1, P2, P3\), got \['P9'\]"),
            (dict(patterns=["P1", "P1"]), r"patterns: each name once; P1 repeated"),
            (dict(notebook="08_amplified_fedavg", patterns=["P1"]), r"patterns: are notebook 02's"),
            (dict(datasets=["digits", "digits"]), r"datasets: each name once"),
            (dict(notebook="05_focus_cifar", datasets=["cifar10"]), r"datasets: notebook 05_focus_cifar"),
            (dict(store=""), r"store: must be a folder path, got ''"),
            (dict(store=None, root=""), r"root: must be a folder path, got ''"),
            (dict(root=str(tmp_path)), r"store, root: give one \(store: one notebook's store folder"),
            (dict(store=None, root=str(afile)), r"root: .*afile is a file; give the folder"),
            (dict(device="meta"), r"device: 'meta' is not a device fedlib computes on"),
            (dict(devices=["cpu:0"] * ((os.cpu_count() or 1) + 1)), r"devices: \d+ CPU processes on a")]:
        with pytest.raises(ValueError, match=msg):
            campaign.run_campaign(**{"notebook": "02_fedsum_main", **kw, **args})
    for args in (dict(seeds=[0, 0]), dict(patterns=["P9"]), dict(datasets=[])):    # before a store opens
        with pytest.raises(ValueError):
            campaign.run_campaign("02_fedsum_main", **{**kw, "budget_min": 1, **args})
    assert not (tmp_path / "refused").exists()                      # nothing created by a refused call
    assert campaign.run_campaign(["all"], profile="smoke", budget_min=0, root=tmp_path / "r", seeds=[0],
                                 echo=lambda s: None).notebooks                        # the list form of all

    class Folder:                                                   # any os.PathLike is a folder path
        def __fspath__(self):
            return str(tmp_path / "pathlike")
    campaign.run_campaign("02_fedsum_main", profile="smoke", budget_min=0, store=Folder(), seeds=[0],
                          echo=lambda s: None)
    with pytest.raises(ValueError, match="devices: give either devices .* or device, not both"):
        campaign.run_campaign("02_fedsum_main", profile="smoke", store=tmp_path, device="cpu",
                              devices=["cpu"])
    with pytest.raises(ValueError, match=r"devices: must be a non-empty list of device names"):
        campaign.run_campaign("02_fedsum_main", profile="smoke", store=tmp_path, devices=[])
    if not torch.cuda.is_available():             # a listing may name a GPU this machine lacks
        with pytest.raises(ValueError, match=r"devices: must all be of one kind .*cpu \(cpu .*cuda:0 \(cuda"):
            campaign.run_campaign("02_fedsum_main", profile="smoke", store=tmp_path, budget_min=0,
                                  devices=["cpu", "cuda:0"])
    many = ["cpu"] * ((os.cpu_count() or 1) + 1)
    with pytest.raises(ValueError, match=rf"devices: {len(many)} CPU processes on a machine of "):
        campaign.run_campaign("02_fedsum_main", profile="smoke", store=tmp_path, devices=many)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="devices: 'cuda:0' asked for, but this machine has no CUDA"):
            campaign.run_campaign("02_fedsum_main", profile="smoke", store=tmp_path, devices=["cuda:0"])
        with pytest.raises(ValueError, match="device: 'cuda' asked for, but this machine has no CUDA"):
            campaign.run_campaign("02_fedsum_main", profile="smoke", store=tmp_path, device="cuda")
        # a listing for a GPU window elsewhere: what is left, estimated from GPU runs (none here)
        listed = campaign.run_campaign("02_fedsum_main", profile="smoke", store=tmp_path, device="cuda",
                                       budget_min=0, echo=lambda s: None)
        assert listed.computed == [] and listed.unmeasured == len(listed.left) > 0
    assert main(["campaign", "02_fedsum_main", "--profile", "smoke", "--budget-min", "0",
                 "--store", str(tmp_path / "s"), "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert "(a listing: nothing computed)" in out and "stopped" not in out     # a listing stops at nothing
    assert "29 left" in out and "not measured yet" in out


def test_the_command_passes_its_engine_options_on(tmp_path, monkeypatch):
    """``python -m fedlib campaign``'s engine flags reach :func:`run_campaign` (default off)."""
    from fedlib.__main__ import main
    seen = []
    monkeypatch.setattr(campaign, "run_campaign", lambda *a, **kw: seen.append(kw))
    args = ["campaign", "02_fedsum_main", "--profile", "smoke", "--list", "--store", str(tmp_path)]
    assert main(args) == 0 and main([*args, "--graphs", "--compiled-draws", "--clients-innermost",
                                     "--grouped-layout"]) == 0
    flags = ("graphs", "compiled_draws", "clients_innermost", "grouped_layout")
    got = [{f: kw[f] for f in flags} for kw in seen]
    assert got == [dict.fromkeys(flags, False), dict.fromkeys(flags, True)]


def test_a_whole_runs_pace_replaces_a_probes(tmp_path):
    """A probe's few rounds pay warm-ups a whole run amortises: once a whole run of the setting
    is measured on the campaign's kind (computed in this call: dated now), its pace decides the
    estimates, even where the probe's was slower."""
    from fedlib import ExperimentConfig
    c = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=500)
    pace = campaign._Pace(Store(tmp_path))
    pace.note(c.replace(rounds=10), 2.58, probe=True)                 # 0.258 s a round
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 0.258 * 500)
    pace.note(c, 47.0, date=campaign._now())                          # 0.094 s a round, run here
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 47.0)
    pace.note(c.replace(rounds=10), 5.0, probe=True)                  # a later, slower probe
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 47.0)


def test_once_a_run_does_not_fit_a_later_one_that_does_still_starts(tmp_path):
    """Minutes a long run cannot use go to a shorter one after it whose setting's pace is measured
    (no probe is paid for then); the long run is listed as left, the call raises Incomplete, and
    the next call with the time for it computes it first."""
    from fedlib import ExperimentConfig
    base = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=10)
    long, short = base.replace(rounds=1000), base.replace(seed=1)
    unmeasured = base.replace(participation="bernoulli", participation_args={"p": 0.5}, seed=2)
    st, now = Store(tmp_path), [0.0]
    pace = campaign._Pace(st)
    pace.note(base.replace(seed=9), 1.0, date=campaign._now())         # 0.1 s a round, measured here

    def compute(budget_s):
        report, part = campaign.CampaignReport(), campaign.NotebookReport("test")
        return campaign._Compute(st, pace, budget_s, report, part, "cpu", "vectorized", lambda: now[0],
                                 lambda line: None), report, part

    c, report, part = compute(30.0)                    # the long run needs 115 s; the short 1.15
    with pytest.raises(campaign.Incomplete):
        c([long, short, unmeasured])
    assert st.get(short) is not None and st.get(long) is None and st.get(unmeasured) is None
    assert report.stopped == "budget" and [k for k, _ in part.left] == [long, unmeasured]
    assert part.left[0][1] == pytest.approx(campaign.MARGIN * 100.0) and part.left[1][1] != part.left[1][1]
    c, report, part = compute(200.0)                   # the time for the long run: computed first
    c([long, short])
    assert st.get(long) is not None and part.loaded == 1 and report.stopped == "done" and not part.left


def test_a_run_another_writer_is_computing_is_left_to_it_and_listed_as_left(tmp_path):
    """A sweep (or a second campaign on a shared folder) holds a run's claim: the campaign does
    not wait out that writer's time inside its budget; it says who computes the run, lists it as
    left, and computes the others."""
    from fedlib import ExperimentConfig, locks
    base = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=10)
    held, free = base.replace(seed=1), base.replace(seed=2)
    st, said = Store(tmp_path), []
    pace = campaign._Pace(st)
    pace.note(base.replace(seed=9), 1.0, date=campaign._now())
    report, part = campaign.CampaignReport(), campaign.NotebookReport("test")
    c = campaign._Compute(st, pace, 100.0, report, part, "cpu", "vectorized", lambda: 0.0, said.append)
    with locks.claim(tmp_path, held.key()), pytest.raises(campaign.Incomplete):
        c([held, free])
    assert st.get(held) is None and st.get(free) is not None and [k for k, _ in part.left] == [held]
    import re
    import socket
    assert re.fullmatch(rf"campaign: test {held.key()} is being computed by process {os.getpid()} on "
                        rf"{re.escape(socket.gethostname())} \(since [0-9T:+-]+\): left to it", said[0])


def test_full_batch_local_steps_are_a_setting_of_their_own(tmp_path):
    """A wait-full run (every local step on the client's whole data) is not paced by the
    wait-minibatch runs of the same problem and schedule (several times their cost:
    ``benchmarks/README.md``, "On the Intel Xeon kind"), while algorithms whose steps draw
    minibatches share a pace."""
    from fedlib import ExperimentConfig
    from fedlib.studies import amplified
    setup = amplified.amplified_setup("paper", 0)
    amp, no_amp, minibatch, full = setup.methods
    mb, fb = (setup.grid_config(m, 0.1, setup.grid_seeds[0]) for m in (minibatch, full))
    assert fb == mb.replace(algorithm="wait_full")                       # the same run but for its steps
    assert campaign._setting(fb) != campaign._setting(mb)
    a, n = (setup.grid_config(m, 0.1, setup.grid_seeds[0]) for m in (amp, no_amp))
    assert campaign._setting(a) == campaign._setting(n)
    pace = campaign._Pace(Store(tmp_path))
    pace.note(mb, 45.0, date=campaign._now())
    assert pace.estimate(fb) is None and pace.estimate(mb) == pytest.approx(campaign.MARGIN * 45.0)
    c = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=5)
    assert campaign._setting(c) == campaign._setting(c.replace(algorithm="a_users_unregistered_algorithm"))


def test_a_campaign_of_several_notebooks_lists_what_is_left_of_each(tmp_path):
    """NB=all in one budget: the notebooks in the campaign order (02, 08, 05, 03), each store under
    the root, and per notebook what is left: runs listed with estimates (none measured here),
    stages that wait for earlier results (08's rate search, 03's rates from 02's grid) said so."""
    lines = []
    rep = campaign.run_campaign("all", profile="smoke", budget_min=0, seeds=[0],
                                root=tmp_path, echo=lines.append)
    assert [p.notebook for p in rep.notebooks] == list(campaign.CAMPAIGNS) == [
        "02_fedsum_main", "08_amplified_fedavg", "05_focus_cifar", "03_fedsum_ablations"]
    p02, p08, p05, p03 = rep.notebooks
    assert rep.computed == [] and rep.stopped == "budget"
    assert len(p02.left) == 29 and not p02.unlisted and p02.unmeasured == 29          # grid + 27 main runs
    assert p08.left and p08.unlisted                  # the tuning warm-ups; the rate search waits for them
    assert len(p05.left) > 0 and not p05.unlisted
    assert p03.unlisted and "notebook 02's grid" in p03.missing[0]
    assert len(rep.left) == sum(len(p.left) for p in rep.notebooks)
    text = lines[-1]
    assert all(nb in text for nb in campaign.CAMPAIGNS) and "not listed until" in text
    assert not (tmp_path / "results").exists()                    # a listing reads: no store is created
    order = campaign.run_campaign(["03_fedsum_ablations", "02_fedsum_main"], profile="smoke", budget_min=0,
                                  seeds=[0], root=tmp_path, echo=lambda s: None)
    assert [p.notebook for p in order.notebooks] == ["02_fedsum_main", "03_fedsum_ablations"]
    with pytest.raises(ValueError, match="store: one store folder is for one notebook"):
        campaign.run_campaign("all", profile="smoke", store=tmp_path / "x", budget_min=0)
    with pytest.raises(ValueError, match="graphs: must be True or False"):
        campaign.run_campaign("02_fedsum_main", profile="smoke", root=tmp_path, budget_min=0, graphs="yes")
    with pytest.raises(ValueError, match="clients_innermost: must be True or False"):
        campaign.run_campaign("02_fedsum_main", profile="smoke", root=tmp_path, budget_min=0,
                              clients_innermost=1)
    with pytest.raises(ValueError, match="grouped_layout: must be True or False"):
        campaign.run_campaign("02_fedsum_main", profile="smoke", root=tmp_path, budget_min=0,
                              grouped_layout="on")


def test_the_pace_comes_from_runs_on_the_same_device_kind_and_engine(tmp_path, monkeypatch):
    """A smoke store on this CPU: runs of one setting computed with two engine descriptions
    (``meta.json``'s ``engine``). A campaign's estimate takes the pace of the entries computed on
    its device kind with its engine options (the slowest of the RECENT latest of them, and runs of
    this call), then those on its device kind, and the rule before -- the slowest run of the
    setting on its device type -- only where none match (the second GPU window's 2,000-round
    runs took 158 s where the slowest stored run, of older code, put them at 216 s). A run on
    another device type sets no pace: a probe does."""
    from fedlib import ExperimentConfig
    from fedlib.engine import VectorizedEngine
    st = Store(tmp_path / "smoke")
    base = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=40,
                            local_steps=2, lr_local=0.01)
    graphed, plain = VectorizedEngine(graphs=True), VectorizedEngine()      # graphs: no-op on a CPU
    rates = {}
    for lr, eng in ((0.01, graphed), (0.02, plain), (0.03, plain)):
        e = st.compute(base.replace(lr_local=lr), engine=eng)
        assert e.meta["engine"] == repr(eng)
        rates.setdefault(repr(eng), []).append(e.meta["run_seconds"] / base.rounds)
    est = {repr(eng): campaign._Pace(st, None, eng).estimate(base)
           for eng in (graphed, plain, VectorizedEngine(compiled_draws=True))}
    assert est[repr(plain)] == pytest.approx(campaign.MARGIN * max(rates[repr(plain)]) * base.rounds)
    assert est[repr(graphed)] == pytest.approx(campaign.MARGIN * rates[repr(graphed)][0] * base.rounds)
    # no run with that engine: the latest RECENT (here all 3) on this device kind, whatever the engine
    slowest = max(r for rs in rates.values() for r in rs)
    assert est["VectorizedEngine(graphs=False, compiled_draws=True)"] == pytest.approx(
        campaign.MARGIN * slowest * base.rounds)
    assert campaign._device_kind(None) == campaign._entry_kind(st.read(st.keys()[0]).meta)
    # another thread count (a pool's processes, say): not this kind, but this type: the slowest run
    threads = st.read(st.keys()[0]).meta["torch_threads"]
    other = campaign._Pace(st, None, plain, threads=threads + 1).estimate(base)
    assert other == pytest.approx(campaign.MARGIN * slowest * base.rounds)
    # a campaign on a GPU (its kind stands in here): these CPU entries set no pace (a probe will)
    h100 = ("cuda", "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(campaign, "_device_kind", lambda device, threads=None: h100)
    on_gpu = campaign._Pace(st, "cuda", plain)
    assert on_gpu.estimate(base) is None


def test_a_cpu_campaign_probes_a_setting_that_only_other_cpu_kinds_have_run(tmp_path, monkeypatch):
    """Another CPU's runs are no safe pace for this one (App. H's round costs about twice as much
    on the Intel Xeon kind as on the AMD EPYC kind): a CPU campaign whose kind (model, threads) has no run of
    a setting probes it once, and its estimate is the slower of the probe's pace and the slowest
    stored run; a run on its own kind then decides. Where its own kind has a run: no probe."""
    from fedlib import ExperimentConfig
    st = Store(tmp_path / "s")
    base = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=40,
                            local_steps=2, lr_local=0.01, eval_every=5)
    secs = st.compute(base).meta["run_seconds"]                          # on this machine's kind
    here = campaign._device_kind(None)
    c = base.replace(lr_local=0.02)                                      # the same setting, not stored
    assert not campaign._Pace(st).needs_probe(c)
    monkeypatch.setattr(campaign, "_device_kind", lambda device, threads=None: ("cpu", "Another CPU", 1))
    assert here != campaign._device_kind(None)
    pace = campaign._Pace(st)
    assert pace.needs_probe(c) and pace.estimate(c) == pytest.approx(campaign.MARGIN * secs)
    pace.note(c, 3 * secs, probe=True)                                  # this kind probes slower
    assert not pace.needs_probe(c) and pace.estimate(c) == pytest.approx(campaign.MARGIN * 3 * secs)
    faster = campaign._Pace(st)
    faster.note(c, secs / 2, probe=True)                                 # or faster: the stored run's
    assert faster.estimate(c) == pytest.approx(campaign.MARGIN * secs)
    pace.note(c, 2 * secs, date=campaign._now())                         # a whole run on this kind
    assert not pace.needs_probe(c) and pace.estimate(c) == pytest.approx(campaign.MARGIN * 2 * secs)
    # the campaign's check of a run probes first (the probe computed here, not stored)
    fresh, said = campaign._Pace(st), []
    compute = campaign._Compute(st, fresh, 1e9, campaign.CampaignReport(), campaign.NotebookReport("x"),
                                None, "vectorized", lambda: 0.0, said.append)
    assert compute._fits(c) is not None and not fresh.needs_probe(c) and len(fresh.probed) == 1
    import re  # the probe says what it measured
    est = fresh.estimate(c)
    assert re.fullmatch(rf"campaign: x probed {c.key()}'s setting \(10 rounds in 0 s\): [0-9?]+ s a run "
                        rf"here; estimated {est:.0f} s \(with the setting's stored runs and the margin "
                        rf"x1.15\)", said[0]), said
    assert st.keys() == [st.get(base).path.name]
    # a GPU campaign keeps the rule before: another GPU model's run sets the pace, no probe
    monkeypatch.setattr(campaign, "_device_kind", lambda device, threads=None: ("cuda", "NVIDIA H200"))
    gpu = campaign._Pace(st, "cuda")
    gpu.note(base, secs)                                                 # as if stored from an H100
    assert not gpu.needs_probe(c) and gpu.estimate(c) == pytest.approx(campaign.MARGIN * secs)


def test_another_kinds_latest_runs_set_the_pace_not_its_slowest_ever(tmp_path, monkeypatch):
    """Runs stored on another CPU kind pace this one as this kind's own do: the slowest of the
    RECENT latest, not the slowest ever (notebook 08's slowest Xeon run, a grid run on shared cores,
    put a 5,000-round run at 12,178 s on an AMD EPYC, which started none; two took 5,445-5,495 s);
    a probe here that is slower still decides."""
    from fedlib import ExperimentConfig
    from fedlib.store import write_meta
    st = Store(tmp_path)
    base = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=10)
    for k, per_round in enumerate((10.0, 1.0, 3.0, 2.0)):             # the oldest is the slow one
        e = st.compute(base.replace(seed=k))
        write_meta(e.path, {**e.meta, "run_seconds": per_round * base.rounds,
                            "date": f"2026-11-30T0{k}:00:00+00:00"})
    c = base.replace(seed=9)
    monkeypatch.setattr(campaign, "_device_kind", lambda device, threads=None: ("cpu", "Another CPU", 1))
    pace = campaign._Pace(st)
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 3.0 * base.rounds)
    pace.note(c, 5.0 * base.rounds, probe=True)
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 5.0 * base.rounds)


def test_the_latest_runs_set_the_pace_and_a_run_of_this_call_counts(tmp_path):
    """Of the runs on the same device kind and engine, the RECENT latest decide (the slowest of
    them): an old, slow run of earlier code stops counting; a run computed in this call (dated now)
    is the latest."""
    from fedlib import ExperimentConfig
    c = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="full", rounds=2000)
    pace = campaign._Pace(Store(tmp_path))
    pace.note(c, 189.0, date="2026-11-26T10:00:00+00:00")                      # the first window's
    for k, secs in enumerate((157.8, 157.4, 156.7)):
        pace.note(c, secs, date=f"2026-11-26T13:0{3 + 3 * k}:00+00:00")
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 157.8)           # not 1.15 x 189 = 217 s
    pace.note(c, 150.0, date=campaign._now())
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 157.4)           # 157.8 is 4th latest now
    pace.note(campaign.probe_config(c), 30.0, probe=True)                       # a probe never decides
    assert pace.estimate(c) == pytest.approx(campaign.MARGIN * 157.4)


def test_a_probe_predicts_a_whole_run_from_its_pace_after_the_first_interval():
    """The first rounds pay one-off costs (compiling the draws, capturing graphs): a probe counts
    them once and the pace of its second evaluation interval for the rest. Checked against the
    H100 run stored in notebook 02's paper store (SCAFFOLD, graphs and compiled draws, 2026-11-27):
    its first rounds, as the campaign's probe of its setting sees them (two evaluation intervals),
    predict the whole run within the margin, where the probe's own seconds per round (at its
    first evaluation after round 0) overestimate them more than 9x. Rounds and intervals are read
    from the stored run's config."""
    import json

    import pandas as pd

    from fedlib import ExperimentConfig
    entry = Path(__file__).parent.parent / "results/02_fedsum_main/paper/scaffold-b095e93f72e4025e"
    h = pd.read_csv(entry / "history.csv")
    config = ExperimentConfig.from_dict(json.loads((entry / "config.json").read_text()))
    rounds = config.rounds
    assert int(h["round"].iloc[-1]) == rounds                                # a whole run, not a part
    probe = h[h["round"] <= campaign.probe_config(config).rounds].reset_index(drop=True)
    assert len(probe) == 3                                  # round 0 and two evaluations after it
    whole = float(h["seconds"].iloc[-1])
    predicted = campaign.probe_seconds(probe, rounds)
    assert whole / campaign.MARGIN <= predicted <= whole * campaign.MARGIN
    first_sec, first_round = float(probe["seconds"].iloc[1]), float(probe["round"].iloc[1])
    assert first_sec / first_round * rounds > 9 * whole                      # the old rule's estimate
    assert campaign.probe_seconds(probe.iloc[:2], rounds) is None            # no interval after the first


class _Killed(Exception):
    """Stands for a window's end: the run stops right after a checkpoint."""


def test_a_run_resumed_from_its_checkpoint_is_estimated_and_paced_for_the_rounds_it_has_left(
        tmp_path, monkeypatch):
    """A run an earlier window cut off computes only the rounds after its checkpoint: the budget
    and the listing count those (half of a 12-round run: 34.5 s of 69), and its pace is that of
    the rounds it computed (30 s for 6 of 12 rounds: 5 s a round), not of a whole run (2.5 s a
    round would put the next run at 34.5 s). ``RECENT`` = 1: the newest run decides."""
    from fedlib import runner

    from .run_helpers import base_config
    st = Store(tmp_path / "paper")
    c, other = base_config(), base_config(seed=1)                     # 12 rounds each, one setting
    pace = campaign._Pace(st)
    pace.note(c, 60.0, date="2026-11-29T10:00:00+00:00")              # a whole run: 5 s a round
    save = runner._Checkpointer.save

    def save_then_stop(self, t, *a):
        save(self, t, *a)
        raise _Killed
    monkeypatch.setattr(runner._Checkpointer, "save", save_then_stop)
    with pytest.raises(_Killed):                                      # cut off right after round 6
        runner.run_config(c, checkpoint=st.checkpoint_path(c), checkpoint_every=6)
    monkeypatch.setattr(runner._Checkpointer, "save", save)
    assert runner.checkpoint_round(st.checkpoint_path(c)) == 6
    assert runner.checkpoint_round(tmp_path / "none.pt") == 0
    torch.save({"x": torch.zeros(2)}, tmp_path / "other.pt")                # a torch file, not a checkpoint
    assert runner.checkpoint_round(tmp_path / "other.pt") == 0
    comp = campaign._Compute(st, pace, 40.0, campaign.CampaignReport(), campaign.NotebookReport("nb"),
                             None, "vectorized", clock=lambda: 0.0, echo=lambda s: None)
    assert comp._estimate(c) == pytest.approx(69.0 / 2) and comp._estimate(other) == pytest.approx(69.0)
    assert comp._fits(c) == pytest.approx(34.5) and comp._fits(other) is None      # 40 s of budget
    entry = st.compute(c, checkpoint_every=6)                         # resumes, removes its checkpoint
    assert entry.status == "ok" and not st.checkpoint_path(c).exists()
    comp._finished(entry, 30.0, 34.5)
    monkeypatch.setattr(campaign, "RECENT", 1)
    assert pace.estimate(other) == pytest.approx(69.0)
    here = list(runner.checkpoint_arithmetic("cpu"))
    stale, foreign, unrecorded = base_config(seed=2), base_config(seed=3), base_config(seed=4)
    st.checkpoint_path(stale).parent.mkdir()
    torch.save({"t": 50, "arithmetic": here}, st.checkpoint_path(stale))      # past the run's 12 rounds
    assert comp._estimate(stale) == pytest.approx(69.0 / 12)        # counted as one round left, never <= 0
    torch.save({"t": 6, "arithmetic": ["cuda", *here[1:]]}, st.checkpoint_path(foreign))
    torch.save({"t": 6}, st.checkpoint_path(unrecorded))
    assert comp._estimate(foreign) == comp._estimate(unrecorded) == pytest.approx(69.0)   # not resumed here


def test_a_run_whose_problem_ignores_the_engines_arithmetic_options_is_estimated_as_resumed(
        tmp_path, monkeypatch):
    """A campaign with ``clients_innermost`` (an option that changes a neural problem's arithmetic):
    a quadratic run ignores it, so its checkpoint records none of it and the run resumes under it;
    the campaign's estimate, which builds the problem of a run with a checkpoint to know, counts
    the rounds left (half), where a checkpoint of another arithmetic counts the whole run."""
    from fedlib import runner
    from fedlib.engine import VectorizedEngine

    from .run_helpers import base_config
    st = Store(tmp_path / "paper")
    laid = VectorizedEngine(clients_innermost=True)
    c, foreign = base_config(), base_config(seed=1)
    save = runner._Checkpointer.save

    def save_then_stop(self, t, *a):
        save(self, t, *a)
        raise _Killed
    monkeypatch.setattr(runner._Checkpointer, "save", save_then_stop)
    with pytest.raises(_Killed):
        runner.run_config(c, checkpoint=st.checkpoint_path(c), checkpoint_every=6, engine=laid)
    monkeypatch.setattr(runner._Checkpointer, "save", save)
    plain = list(runner.checkpoint_arithmetic("cpu"))
    assert torch.load(st.checkpoint_path(c), weights_only=True)["arithmetic"] == plain
    torch.save({"t": 6, "arithmetic": ["cuda", *plain[1:]]}, st.checkpoint_path(foreign))
    pace = campaign._Pace(st, None, laid)
    pace.note(c, 60.0, date="2026-11-29T10:00:00+00:00")
    comp = campaign._Compute(st, pace, 1e9, campaign.CampaignReport(), campaign.NotebookReport("nb"),
                             None, laid, clock=lambda: 0.0, echo=lambda s: None)
    assert comp.under == [(*plain, "clients_innermost")]
    assert comp._estimate(c) == pytest.approx(69.0 / 2) and comp._estimate(foreign) == pytest.approx(69.0)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")                              # "saved under another arithmetic"
        resumed = runner.run_config(c, checkpoint=st.checkpoint_path(c), engine=laid)
    assert torch.equal(resumed.params, runner.run_config(c, engine=laid).params)


def test_the_scope_notebook_08_renders_follows_the_order_the_campaign_fills_its_store(tmp_path):
    """Notebook 08's smoke store filled for seed 0 in the campaign's order (warm-ups, the rate
    search, then the seed whole): the scope renders it all; a run of the seed removed leaves the
    seed out (named); a grid run removed leaves that method's search out (the others' searches,
    whole, are kept with their chosen rates), names its grid and renders no seed; an
    empty store renders nothing and names the tuning warm-up; a render creates nothing."""
    import shutil

    from fedlib.studies import amplified
    from fedlib.sweeps import sweep
    setup = amplified.amplified_setup("smoke", 0)
    full = Store(tmp_path / "full")
    best = setup.compute_in_order(lambda cs, keep_params=False: sweep(cs, full, progress=False,
                                                                      keep_params=keep_params), [0])
    whole = campaign.stored_scope_08(setup, full.path, [0])
    assert whole.seeds == [0] and whole.lines == [] and whole.warm_seeds == [*setup.tuning_seeds, 0]
    assert {m: g.best for m, g in whole.searches.items()} == best
    assert set(whole.grid) == {setup.grid_config(m, r, k) for m, g in whole.searches.items() for r in g.scores
                               for k in setup.grid_seeds}
    two = campaign.stored_scope_08(setup, full.path, [0, 1])
    assert two.seeds == [0] and two.warm_seeds == whole.warm_seeds
    assert two.lines == ["missing: seed 1: 0 of 12 runs stored (warm-up, Fig. 1 at both rate sets, Fig. 2); "
                         "the seed is left out"]

    def without(name, config):
        shutil.copytree(full.path, tmp_path / name)
        st = Store(tmp_path / name)
        shutil.rmtree(st.get(config).path)
        return campaign.stored_scope_08(setup, st.path, [0])
    amp = next(iter(setup.methods))
    cut = without("fig2", next(iter(setup.fig2_configs(best[amp], [0]))))
    assert cut.seeds == [] and cut.searched and set(cut.searches) == set(setup.methods)
    assert cut.lines == ["missing: seed 0: 11 of 12 runs stored (warm-up, Fig. 1 at both rate sets, Fig. 2); "
                         "the seed is left out"]
    wait = list(setup.methods)[2]
    gone = setup.grid_config(wait, setup.grid_rates[0], setup.grid_seeds[0])
    grid = without("grid", gone)
    assert not grid.searched and grid.seeds == [] and gone not in grid.grid
    assert {m: g.best for m, g in grid.searches.items()} == {m: r for m, r in best.items() if m != wait}
    assert set(grid.grid) == set(whole.grid) - {gone} - {c for c, (m, _) in whole.grid.items()
                                                          if m == wait and c.lr_local not in setup.grid_rates}
    asked = len(setup.grid_rates) * len(setup.grid_seeds)
    assert grid.lines == [
        f"missing: the rate grid of {wait}: {asked - 1} of the {asked} runs asked for so far stored "
        f"(seeds {', '.join(map(str, setup.grid_seeds))})",
        "missing: Fig. 1, Fig. 2 and the claims: they need every method's rate search whole"]
    empty = campaign.stored_scope_08(setup, tmp_path / "empty", [0])
    assert empty.warm_seeds == [] and empty.grid == {} and empty.searches == {} and not empty.searched
    k = setup.tuning_seeds[0]
    assert empty.lines[0] == f"missing: the warm-up of tuning seed {k}: the rate grid continues it"
    assert len(empty.lines) == len(setup.tuning_seeds) + len(setup.methods) + 1
    assert not (tmp_path / "empty").exists()
    with pytest.raises(ValueError, match="also tune the rates"):
        campaign.stored_scope_08(setup, full.path, [setup.tuning_seeds[0]])


@pytest.mark.parametrize("patterns", [[], "P1", ["P9"], ["P1", "P1"], [["P1"]], [1]])
def test_a_render_scope_refuses_patterns_that_are_not_the_setups(tmp_path, patterns):
    from fedlib import studies
    with pytest.raises(ValueError, match=r"patterns: must be None or a non-empty list of distinct patterns "
                                         r"of the setup \(P1, P2, P3\)"):
        campaign.stored_scope_02(studies.fedsum_setup("smoke"), tmp_path / "s", [0], patterns)
    assert not (tmp_path / "s").exists()


def test_a_store_of_another_notebook_or_profile_is_refused_naming_the_campaigns(tmp_path):
    """Trial 5 (#12): --store results/08_amplified_fedavg/quick for notebook 02, or the quick store
    for a paper campaign, planned (and would have computed) into a store its notebook never reads."""
    from fedlib.campaign import run_campaign
    for nb in ("08_amplified_fedavg", "02_fedsum_main"):
        with pytest.raises(ValueError, match=rf"store: .* is the store of notebook {nb} at profile quick; a "
                                             r"campaign of 02_fedsum_main at profile paper stores into "
                                             r"results/02_fedsum_main/paper"):
            run_campaign("02_fedsum_main", "paper", None, 0.0, tmp_path / "results" / nb / "quick")


def test_a_root_without_results_is_warned(tmp_path):
    """Trial 5 (#12): --root results (the folder itself, not the one above it) planned every run
    anew without a word."""
    from fedlib.campaign import _check_campaign
    with pytest.warns(RuntimeWarning, match=r"root: no results/ folder under .*: every run is planned anew"):
        _check_campaign("02_fedsum_main", "quick", None, 0.0, None, {}, tmp_path)
