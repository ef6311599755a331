"""``python -m fedlib verify``: replaying stored runs from the command line."""

import subprocess
import sys

import pytest

import fedlib
from fedlib import ExperimentConfig, config
from fedlib.__main__ import main, pick
from fedlib.store import Store


def _store(tmp_path):
    base = ExperimentConfig(algorithm="fedavg", problem="quadratic", participation="bernoulli", rounds=10,
                            problem_args={"num_clients": 4, "dim": 3, "seed": 1},
                            participation_args={"p": 0.5}, local_steps=2, lr_local=0.05, eval_every=5)
    cs = config.grid(base, algorithm=["fedavg", "fedsum", "mifa"], seed=[0, 1, 2])
    fedlib.sweep(cs, tmp_path, progress=False)
    return Store(tmp_path), cs


def test_verify_a_whole_store_and_a_sample(tmp_path, capsys):
    st, cs = _store(tmp_path)
    assert main(["verify", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "9 of 9 entries reproduce" in out and out.count("ok  ") == 9
    keys = pick(st, 4, seed=3)
    assert len(keys) == 4 and {k.split("-")[0] for k in keys} == {"fedavg", "fedsum", "mifa"}
    assert main(["verify", str(tmp_path), "--sample", "3"]) == 0
    assert "3 of 3 entries reproduce" in capsys.readouterr().out


def test_verify_on_the_folder_above_stores_names_them_instead_of_passing(tmp_path, capsys):
    """results/<notebook> holds stores, not entries: verifying it must not print "no entries" and
    exit 0 as if everything reproduced (issue 51); an empty store still verifies nothing."""
    _store(tmp_path / "nb" / "quick")
    with pytest.raises(SystemExit) as e:
        main(["verify", str(tmp_path / "nb")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "holds no entries, but the stores below it do" in err and str(tmp_path / "nb" / "quick") in err
    (tmp_path / "empty").mkdir()
    assert main(["verify", str(tmp_path / "empty")]) == 0
    assert "no entries" in capsys.readouterr().out


def test_verify_fails_and_names_an_entry_that_no_longer_reproduces(tmp_path, capsys):
    st, cs = _store(tmp_path)
    entry = st.get(cs[4])
    hist = entry.history.copy()
    hist.loc[hist["round"] == 5, "loss"] *= 1.01
    hist.to_csv(entry.path / "history.csv", index=False)
    assert main(["verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {entry.path.name}" in out and "8 of 9 entries reproduce" in out
    assert main(["verify", str(entry.path)]) == 1                 # one entry folder


def test_the_module_runs_as_a_command(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fedlib", "verify", str(tmp_path / "nowhere")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "path:" in proc.stderr and "nowhere" in proc.stderr


def test_verify_imports_the_module_of_a_users_algorithm(tmp_path):
    import os
    import textwrap
    (tmp_path / "my_algos.py").write_text(textwrap.dedent("""
        from fedlib.algorithms import Algorithm, register

        @register
        class HalfStep(Algorithm):
            name = "half_step_for_cli"
            options = ()

            def init(self, x0, nominal_steps):
                pass

            def round(self, x, r):
                S = r.delivered
                return x if len(S) == 0 else x + 0.5 * (self.local(x, S, r, r.lr_local).X.mean(0) - x)

        import numpy as np
        from fedlib import participation

        @participation.kind("first_two_for_cli", description="the first two clients, every round")
        def first_two(rng, rounds, n):
            active = np.zeros((rounds, n), dtype=np.int64)
            active[:, :2] = 1
            return participation.Draw(active)
    """))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    make = ("import fedlib, my_algos; fedlib.sweep([fedlib.ExperimentConfig(a, 'quadratic', k, 6, "
            "problem_args={'num_clients': 3, 'dim': 2}, eval_every=3) for a, k in (('half_step_for_cli', "
            f"'full'), ('fedavg', 'first_two_for_cli'))], {str(tmp_path / 's')!r}, progress=False)")
    subprocess.run([sys.executable, "-c", make], env=env, check=True, cwd=tmp_path)
    plain = subprocess.run([sys.executable, "-m", "fedlib", "verify", str(tmp_path / "s")], env=env,
                           capture_output=True, text=True, cwd=tmp_path)
    assert plain.returncode == 1 and "unknown algorithm 'half_step_for_cli'" in plain.stdout
    assert "unknown participation kind 'first_two_for_cli'" in plain.stdout     # a user's kind: the same
    assert plain.stdout.count("pass --import <the module that registers it>") == 2
    assert "; 0 differ;" in plain.stdout and "2 cannot be replayed without --import" in plain.stdout
    ok = subprocess.run([sys.executable, "-m", "fedlib", "verify", str(tmp_path / "s"), "--import",
                         "my_algos"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0 and "2 of 2 entries reproduce" in ok.stdout, ok.stdout + ok.stderr
    src = (tmp_path / "my_algos.py").read_text()
    (tmp_path / "my_algos.py").write_text(src.replace("0.5 *", "0.25 *"))     # the user edits the rule
    edited = subprocess.run([sys.executable, "-m", "fedlib", "verify", str(tmp_path / "s"), "--import",
                             "my_algos"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert edited.returncode == 1 and "its algorithm code changed since it was stored" in edited.stdout
    assert "; 0 differ; 1 differ after a change of their code;" in edited.stdout, edited.stdout


def test_renew_reports_a_store_with_nothing_stale_and_refuses_an_entry_folder(tmp_path, capsys):
    import pytest
    st, cs = _store(tmp_path)
    assert main(["renew", str(tmp_path)]) == 0
    assert "0 stale entries" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["renew", str(st.get(cs[0]).path)])
    assert "is not a store folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["renew", str(tmp_path), "--rounds", "0"])
    assert "--rounds: must be an integer >= 1, 'auto' or 'all', got 0" in capsys.readouterr().err


def test_seal_and_renew_refuse_a_read_only_store_with_one_usage_line(tmp_path, capsys, monkeypatch):
    """A store that cannot be written: renew stops before replaying anything, seal when it finds an
    entry to seal (an already sealed store seals nothing and passes); status 2, no traceback."""
    import os

    from fedlib import store as store_mod
    from fedlib import verification
    st, cs = _store(tmp_path)
    meta = st.get(cs[0]).path / "meta.json"
    text = meta.read_text()
    meta.write_text(text.replace('"meta_digest"', '"unsealed_digest"'))       # an entry left to seal
    real = os.access
    monkeypatch.setattr(store_mod.os, "access", lambda p, mode: real(p, mode) and not mode & os.W_OK)
    replays = []
    monkeypatch.setattr(verification, "renew_fingerprints", lambda *a, **k: replays.append(a) or {})
    for command in ("renew", "seal"):
        with pytest.raises(SystemExit) as info:
            main([command, str(tmp_path)])
        err = capsys.readouterr().err
        assert info.value.code == 2 and "Traceback" not in err, err
        assert "copy the store somewhere writable" in err.splitlines()[-1], err
    assert not replays


def test_help_says_what_every_command_does_in_whole_sentences():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "fedlib", "--help"], capture_output=True, text=True,
                         check=True)
    text = " ".join(out.stdout.split())
    assert "says more." in text and "and\n" not in out.stdout.split("positional")[0].splitlines()[-1]
    for cmd in ("verify", "seal", "renew", "strip"):
        assert f"({cmd})" in text


def test_import_fedlib_reaches_analysis_and_claims():
    import fedlib
    assert callable(fedlib.analysis.label) and callable(fedlib.claims.paired)


@pytest.mark.parametrize("argv, message", [
    (["verify", "{tmp}", "--seed", "-1"], "--seed: must be an integer >= 0 (the sample's seed), got -1"),
    (["verify", "", "--sample", "1"], "path: must be a folder path (a store or one entry), got ''"),
    (["seal", ""], "path: must be a folder path (a store), got ''"),
    (["verify", "{tmp}", "--import", ""], "--import: '' is not an importable module name"),
    (["verify", "{tmp}", "--import", ".foo"], "--import: '.foo' is not an importable module name"),
    (["verify", "{tmp}", "--import", "no_such_module_xyz"], "--import: cannot import 'no_such_module_xyz'"),
    (["campaign", "02_fedsum_main", "--list", "--budget-min", "inf"], "--budget-min: must be a finite"),
    (["campaign", "02_fedsum_main", "--list", "--store", ""], "--store: must be a folder path, got ''"),
    (["campaign", "02_fedsum_main", "--list", "--seeds", "0", "0"], "error: --seeds: each seed once"),
    (["campaign", "02_fedsum_main", "--list", "--profile", "big"], "error: --profile: must be one of"),
    (["campaign", "all", "02_fedsum_main", "--list"], "notebook: 'all' stands alone"),
    (["campaign", "02_fedsum_main", "--list", "--budget-min", "30"],
     "--budget-min: --list computes nothing (a budget of 0), so a budget of 30 minutes would be ignored"),
    # text that is not a number: the option and what it allows, not argparse's "invalid int value"
    (["verify", "{tmp}", "--seed", "x"],
     "argument --seed: must be an integer >= 0 (the sample's seed), got 'x'"),
    (["verify", "{tmp}", "--sample", "1.5"], "argument --sample: must be an integer >= 1, got '1.5'"),
    (["verify", "{tmp}", "--sample", "0"], "--sample: must be an integer >= 1, got 0"),
    (["campaign", "02_fedsum_main", "--list", "--budget-min", "ten"],
     "argument --budget-min: must be a finite number of minutes >= 0, got 'ten'"),
    (["campaign", "02_fedsum_main", "--list", "--seeds", "0", "a"],
     "argument --seeds: must be integers >= 0, got 'a'")])
def test_a_bad_command_line_is_one_usage_error_naming_the_option(tmp_path, capsys, argv, message):
    """Refused with status 2 and one line naming the option, never a traceback; an empty store
    (``{tmp}``) does not excuse a bad ``--seed`` or ``--import``."""
    with pytest.raises(SystemExit) as e:
        main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_a_campaign_listing_creates_no_store_folder(tmp_path, capsys):
    """``--list`` only reads: the store of a notebook that has none is not created."""
    for notebooks in (["02_fedsum_main"], ["03_fedsum_ablations"], ["all"]):   # 03 reads 02's grid store
        assert main(["campaign", *notebooks, "--profile", "smoke", "--list", "--root", str(tmp_path),
                     "--seeds", "0"]) == 0
        assert "left" in capsys.readouterr().out and list(tmp_path.iterdir()) == []


def test_verify_writes_nothing_and_names_the_stores_two_levels_down(tmp_path, capsys):
    """verify only reads: the store folder's modification time stays (no probe file written into it);
    a folder two levels above the stores (results/) names them instead of passing with "no entries"."""
    import os
    _store(tmp_path / "results" / "nb" / "quick")
    store = tmp_path / "results" / "nb" / "quick"
    os.utime(store, (1_000_000_000, 1_000_000_000))
    assert main(["verify", str(store), "--sample", "1"]) == 0
    assert store.stat().st_mtime == 1_000_000_000
    with pytest.raises(SystemExit) as e:
        main(["verify", str(tmp_path / "results")])
    assert e.value.code == 2 and str(store) in capsys.readouterr().err


def test_strip_checks_every_notebook_before_it_rewrites_any(tmp_path, capsys):
    """A notebook whose cells or metadata are not JSON objects is a usage error (not an
    AttributeError), and the well-formed notebook named before it is left as it was."""
    import json
    good = tmp_path / "good.ipynb"
    good.write_text(json.dumps({"cells": [], "metadata": {"papermill": {"duration": 1.0}}}))
    before = good.read_bytes()
    for odd in ({"cells": [1, "x"]}, {"cells": [], "metadata": 3}, {"cells": [{"metadata": []}]}):
        bad = tmp_path / "odd.ipynb"
        bad.write_text(json.dumps(odd))
        with pytest.raises(SystemExit) as e:
            main(["strip", str(good), str(bad)])
        assert e.value.code == 2 and "is not an executed notebook" in capsys.readouterr().err
        assert good.read_bytes() == before


@pytest.mark.parametrize("verb", ["seal", "renew"])
def test_seal_and_renew_refuse_a_folder_that_is_not_a_store(tmp_path, capsys, verb):
    """Both counted "0 of 0" and exited 0 on the folder above the stores and on a folder of notes."""
    _store(tmp_path / "nb" / "quick")
    with pytest.raises(SystemExit) as e:
        main([verb, str(tmp_path / "nb")])
    err = capsys.readouterr().err
    below = tmp_path / "nb" / "quick"
    assert e.value.code == 2
    assert f"holds no entries, but the stores below it do: {below}; {verb} one of them" in err
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not a run")
    with pytest.raises(SystemExit) as e:
        main([verb, str(tmp_path / "notes")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "is not a store (no stored entry, no entry folder with a meta.json" in err
    assert main([verb, str(tmp_path / "nb" / "quick")]) == 0


def test_renew_names_an_unreadable_entry_and_goes_on(tmp_path, capsys):
    st, cs = _store(tmp_path)
    (st.get(cs[0]).path / "meta.json").write_text("{not json")
    assert main(["renew", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("unreadable") and "; 1 unreadable" in out and "0 stale entries of" in out


def test_a_campaign_of_several_notebooks_refuses_a_dataset_none_of_them_has(tmp_path, capsys):
    """Each notebook's plan stopped on the typo and the campaign said "nothing left" with status 0."""
    with pytest.raises(SystemExit) as e:
        main(["campaign", "02_fedsum_main", "08_amplified_fedavg", "--profile", "smoke", "--list",
              "--root", str(tmp_path), "--datasets", "nosuch"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--datasets: 'nosuch' names a dataset none of the notebooks" in err


@pytest.mark.parametrize("flag, why", [("--graphs", "CUDA graphs are captured on a CUDA device only"),
                                       ("--compiled-draws", "keyed draws are compiled off the CPU only")])
@pytest.mark.parametrize("where", [[], ["--device", "cpu"], ["--devices", "cpu"]])
def test_a_campaign_on_a_cpu_refuses_gpu_options_it_would_only_record(tmp_path, capsys, where, flag, why):
    """--graphs (--compiled-draws) on a CPU captured (compiled) nothing, and every entry's
    meta.json said graphs=True (compiled_draws=True)."""
    with pytest.raises(SystemExit) as e:
        main(["campaign", "02_fedsum_main", "--profile", "smoke", "--list", "--root", str(tmp_path),
              *where, flag])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"{flag}: {why}" in err and "this campaign computes on cpu" in err
    assert not (tmp_path / "results").exists()


def test_a_campaign_of_notebook_02_leaves_out_a_named_dataset_that_is_not_here(tmp_path, capsys, monkeypatch):
    """Named or not, a dataset whose files are not on this machine is listed as not here, not planned."""
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path / "no-data"))
    assert main(["campaign", "02_fedsum_main", "--profile", "paper", "--list", "--root", str(tmp_path),
                 "--datasets", "cifar10"]) == 0
    out = capsys.readouterr().out
    assert "nothing left" in out and "not on this machine / not run: cifar10" in out


def test_ledger_same_compares_one_notebooks_rows_of_two_ledgers(tmp_path):
    """``make figures`` executes a quick notebook a second time when ``ledger-same`` says its rows
    changed (status 1): its summary cell read the ledger before the notebook rewrote them."""
    import pandas as pd
    rows = pd.DataFrame({"notebook": ["01_a", "02_b"], "claim": ["c1", "c2"], "verdict": ["holds", "holds"]})
    before, after = tmp_path / "before.csv", tmp_path / "after.csv"
    rows.to_csv(before, index=False)
    rows.assign(verdict=["holds", "does not hold"]).to_csv(after, index=False)
    cmd = [sys.executable, "-m", "fedlib", "ledger-same"]
    same = [subprocess.run([*cmd, str(before), str(after), nb]).returncode for nb in ("01_a", "02_b")]
    assert same == [0, 1]
    none = tmp_path / "none.csv"                                   # no ledger before: its rows are new
    assert subprocess.run([*cmd, str(none), str(after), "01_a"]).returncode == 1


def test_renew_counts_the_entries_of_an_algorithm_not_registered_here(tmp_path, capsys, monkeypatch):
    """A store holding runs of a user's own algorithm: renew named them and renewed the others
    (it stopped with a traceback at the first); ``--import`` takes the module that registers it,
    as verify's does."""
    from fedlib.algorithms import base
    _store(tmp_path)
    cls = type("Own", (fedlib.algorithms.get("fedavg"),), {"name": "own_renew_trial"})
    fedlib.algorithms.register(cls)
    try:
        c = ExperimentConfig(algorithm="own_renew_trial", problem="quadratic", participation="full", rounds=2,
                             problem_args={"num_clients": 2, "dim": 2, "seed": 1}, lr_local=0.05)
        fedlib.sweep([c], tmp_path, progress=False)
    finally:
        monkeypatch.delitem(base._REGISTRY, "own_renew_trial")
    assert main(["renew", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "unknown       own_renew_trial-" in out and "unknown algorithm 'own_renew_trial'" in out
    assert f"{tmp_path}: 0 stale entries of 10: 0 migrated" in out                   # the others judged
    assert "1 cannot be renewed without --import" in out.splitlines()[-1]
    with pytest.raises(SystemExit) as e:
        main(["renew", str(tmp_path), "--import", "no_such_module_anywhere"])
    assert e.value.code == 2
    assert "--import: cannot import 'no_such_module_anywhere'" in capsys.readouterr().err
