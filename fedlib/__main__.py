"""Command line: ``python -m fedlib verify STORE [--sample K] [--rounds R|all]`` and
``python -m fedlib seal STORE [--force]``, ``python -m fedlib renew STORE [--rounds R] [--import MODULE]``,
``python -m fedlib campaign NOTEBOOK [--profile paper] [--device cuda | --devices D...] [--budget-min 12]``
and
``python -m fedlib strip NOTEBOOK...``.

Replays the first rounds of stored runs (:func:`fedlib.verify`) and prints one line per entry:
``ok`` (it reproduces; the check that ran, exact or cross-CPU, and why), ``FAIL`` (it does not) or
``skip`` (computed with another arithmetic and without an anchor: nothing can be checked here);
exits with status 1 if any entry does not reproduce. An entry whose files differ from the digests
sealed in its meta.json fails without a replay. ``seal`` records those digests in entries that lack
them (stored before fedlib sealed entries, or rewritten by fedlib itself: ``--force``). ``renew``
gives stale entries (what their algorithm, problem or participation code computes may have changed since) the
current code's fingerprint where their code is the same (an entry fingerprinted by its algorithm's
source before behavioural fingerprints: migrated, no replay) or a replay with zero tolerance shows
the change moved no bit (:func:`fedlib.verification.renew_fingerprints`); it prints the counts,
changes nothing on a second run, and exits 1 if any differs or cannot be checked.
``campaign`` computes a notebook's runs into its store in the order that matters within a time
budget, never starting a run it cannot finish, and prints what is left (:mod:`fedlib.campaign`).
``strip`` removes what an execution writes that differs from run to run (papermill's timings,
execution timestamps) from executed notebooks; ``make figures`` runs it after each notebook.
``ledger-same BEFORE AFTER NOTEBOOK`` exits 0 where a notebook's rows are the same in two claims
ledgers (``make figures`` executes a notebook whose rows changed a second time, so that its
summary cell, which reads the ledger first, says what it wrote).
``make verify NB=<notebook>`` runs verify on a notebook's quick store.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ._validate import InputError
from .store import Store
from .verification import _unregistered, verify


def pick(store: Store, sample: int | None, seed: int = 0) -> list[str]:
    """Keys of the entries to replay: all, or ``sample`` of them with every algorithm of the store
    represented at least once (the cheapest-looking spread; seeded)."""
    keys = sorted(store.keys())
    if sample is None or sample >= len(keys):
        return keys
    if sample < 1:
        raise InputError(f"--sample: must be an integer >= 1, got {sample}")
    rng = np.random.default_rng(seed)
    by_algo: dict[str, list[str]] = {}
    for k in keys:
        by_algo.setdefault(k.rsplit("-", 1)[0], []).append(k)
    chosen = [str(rng.choice(v)) for v in by_algo.values()]
    rest = [k for k in keys if k not in chosen]
    extra = max(0, sample - len(chosen))
    chosen += [str(k) for k in rng.choice(rest, size=min(extra, len(rest)), replace=False)] if extra else []
    return sorted(chosen)


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring): parse ``argv`` and run its command; returns
    the exit status (argparse exits with status 2 on a usage error, naming the argument)."""
    args = _parser().parse_args(argv)
    parser = _COMMANDS[args.command]           # a refusal shows the command's usage, not the top level's
    if isinstance(getattr(args, "path", None), str) and not args.path.strip():
        what = "a store or one entry" if args.command == "verify" else "a store"
        parser.error(f"path: must be a folder path ({what}), got {args.path!r}")
    if args.command == "strip":
        return _strip(parser, args.notebooks)
    if args.command == "ledger-same":
        from .claims import same_ledger_rows
        return 0 if same_ledger_rows(args.before, args.after, args.notebook) else 1
    if args.command == "seal":
        return _seal(parser, Path(args.path), args.force)
    if args.command == "campaign":
        return _campaign(parser, args)
    rounds = _rounds(parser, args.rounds)
    if args.command == "renew":
        _import(parser, args.imports)
        return _renew(parser, Path(args.path), rounds)
    if args.sample is not None and args.sample < 1:
        parser.error(f"--sample: must be an integer >= 1, got {args.sample}")
    if args.seed < 0:
        parser.error(f"--seed: must be an integer >= 0 (the sample's seed), got {args.seed}")
    return _verify(parser, Path(args.path), args.sample, args.seed, args.imports, rounds)


def _number(kind: type, allowed: str):
    """An argparse ``type`` that reads ``kind`` (int or float) and, for text that is not one,
    names what is allowed (argparse prefixes the option): ``argument --seed: must be an integer
    >= 0 (the sample's seed), got 'x'`` rather than argparse's ``invalid int value: 'x'``. Ranges
    are checked after parsing, with the same wording."""
    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None
    parse.__name__ = kind.__name__             # argparse's own messages name the type by it
    return parse


def _parser() -> argparse.ArgumentParser:
    """The parser of the command line: one sub-command each for verify, seal, renew, campaign,
    strip and ledger-same."""
    parser = argparse.ArgumentParser(
        prog="python -m fedlib", description="fedlib's command line: check stored runs by replaying them "
        "(verify), seal their files' digests (seal), renew the code fingerprints of entries whose code "
        "change moved no bit (renew), and strip run metadata from executed notebooks (strip). "
        "'python -m fedlib COMMAND --help' says more.")
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="replay the first rounds of stored runs and compare")
    v.add_argument("path", help="a store folder (e.g. results/02_fedsum_main/quick) or one entry folder")
    v.add_argument("--sample", type=_number(int, "an integer >= 1"), default=None,
                   help="replay this many entries (every algorithm at least once) instead of all")
    v.add_argument("--rounds", default="auto",
                   help="rounds to replay: a number, or 'all' for the whole run (default: up to the first "
                        "evaluation after round 0, and the anchor's rounds)")
    v.add_argument("--seed", type=_number(int, "an integer >= 0 (the sample's seed)"), default=0,
                   help="seed of the sample")
    v.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import this module first (one that registers your own algorithms or problems); "
                        "repeatable")
    s = sub.add_parser("seal", help="record the content digests of stored entries in their meta.json")
    s.add_argument("path", help="a store folder")
    s.add_argument("--force", action="store_true",
                   help="also re-seal entries whose files differ from their digests (files fedlib rewrote)")
    w = sub.add_parser("renew", help="give stale entries the current code's fingerprint where their code is "
                                     "the same (migrated) or a replay with zero tolerance shows the code "
                                     "change moved no bit (renewed)")
    w.add_argument("path", help="a store folder")
    w.add_argument("--rounds", default="auto", help="rounds to replay (as verify: a number, 'all' or 'auto')")
    w.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import this module first (one that registers your own algorithms or problems); "
                        "repeatable")
    _campaign_parser(sub)
    n = sub.add_parser("strip", help="remove an executed notebook's run metadata (timestamps, durations)")
    n.add_argument("notebooks", nargs="+", help="executed .ipynb files, rewritten in place")
    g = sub.add_parser("ledger-same", help="exit 0 if a notebook's rows are the same in two claims "
                                           "ledgers, 1 if not (make figures executes a notebook whose rows "
                                           "changed again)")
    g.add_argument("before", help="a claims ledger CSV")
    g.add_argument("after", help="a claims ledger CSV")
    g.add_argument("notebook", help="the notebook whose rows are compared, e.g. 02_fedsum_main")
    _COMMANDS.update(sub.choices)
    return parser


#: each command's parser (:func:`_parser` fills it), for its usage errors
_COMMANDS: dict[str, argparse.ArgumentParser] = {}


def _campaign_parser(sub) -> None:
    """The ``campaign`` sub-command's arguments (:func:`_parser`)."""
    c = sub.add_parser("campaign", help="compute a notebook's runs at a profile into its store, in the order "
                                        "that matters, inside a time budget; resumes where it stopped")
    c.add_argument("notebook", nargs="+",
                   help="e.g. 02_fedsum_main; several (taken in the campaign order 02, 08, 05, 03) or all")
    c.add_argument("--profile", default="paper", help="paper (default), quick or smoke")
    c.add_argument("--device", default=None, help="e.g. cuda (default: cpu)")
    c.add_argument("--devices", nargs="+", default=None,
                   help="one process per device, runs in parallel in the campaign's order, e.g. "
                        "cuda:0 cuda:1 (two GPUs) or cpu cpu (two cores); not with --device")
    c.add_argument("--budget-min", type=_number(float, "a finite number of minutes >= 0"), default=None,
                   help="minutes this call may use (default 12)")
    c.add_argument("--store", default=None,
                   help="one notebook's store (default: results/<notebook>/<profile>)")
    c.add_argument("--root", default=None, help="folder holding results/<notebook>/<profile> (default: the "
                                                "project's)")
    c.add_argument("--seeds", type=_number(int, "integers >= 0"), nargs="+", default=None,
                   help="main runs' seeds, in order (default 0-4)")
    c.add_argument("--datasets", nargs="+", default=None,
                   help="default: every dataset of the profile present")
    c.add_argument("--graphs", action="store_true",
                   help="replay CUDA-graph local steps (keyed draws on CUDA; after benchmarks/gpu_check.py "
                        "showed them bit-equal to plain steps on this GPU)")
    c.add_argument("--compiled-draws", action="store_true",
                   help="keyed draws by a torch.compile'd fedlib.keyed.step_draws (the same bits; after "
                        "benchmarks/gpu_check.py showed them equal to the CPU's on this GPU)")
    c.add_argument("--clients-innermost", action="store_true",
                   help="lay each step's stacked minibatches out with the clients innermost (on CUDA the "
                        "first convolution then runs in cuDNN; another arithmetic: after benchmarks/"
                        "gpu_check.py showed it faster and within CROSS_RTOL of the CPU on this GPU)")
    c.add_argument("--grouped-layout", action="store_true",
                   help="compute a SimpleCNN's minibatch gradients in the grouped layout (fedlib.grouped: "
                        "bit-equal on CPUs; after benchmarks/gpu_check.py's decision row on this GPU)")
    c.add_argument("--list", action="store_true",
                   help="compute nothing: list what the stores lack (as --budget-min 0), in minutes of "
                        "--device (cuda: from the stored GPU runs, also on a machine without one)")
    c.add_argument("--stand-in-rounds", type=_number(int, "an integer >= 0"), default=0,
                   help=argparse.SUPPRESS)


def _strip(parser: argparse.ArgumentParser, notebooks: list[str]) -> int:
    """``strip``: every file checked (an executed .ipynb that reads) before any is rewritten."""
    from .notebook import _read_notebook, strip_run_metadata
    for nb in notebooks:                       # every file checked before any is rewritten
        if not Path(nb).is_file():
            parser.error(f"notebooks: no file {nb}")
        if Path(nb).suffix != ".ipynb":
            parser.error(f"notebooks: {nb} is not an executed notebook (.ipynb); strip rewrites the "
                         f".ipynb of a jupytext pair, not its .py source")
        try:
            _read_notebook(nb)
        except ValueError as e:
            parser.error(f"notebooks: {str(e).removeprefix('path: ')}")
    for nb in notebooks:
        strip_run_metadata(nb)
    return 0


def _campaign(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``campaign``: a notebook's runs into its store within the budget (:mod:`fedlib.campaign`)."""
    from .campaign import run_campaign
    notebooks = "all" if args.notebook == ["all"] else args.notebook
    budget = 12.0 if args.budget_min is None else args.budget_min
    if not 0 <= budget < float("inf"):             # checked even with --list (which computes nothing)
        parser.error(f"--budget-min: must be a finite number of minutes >= 0, got {budget}")
    if args.list and budget > 0 and args.budget_min is not None:
        parser.error(f"--budget-min: --list computes nothing (a budget of 0), so a budget of {budget:g} "
                     "minutes would be ignored; leave one of them out")
    try:
        run_campaign(notebooks, args.profile, args.device, 0.0 if args.list else budget,
                     args.store, args.seeds, args.datasets, args.stand_in_rounds, graphs=args.graphs,
                     root=args.root, compiled_draws=args.compiled_draws, devices=args.devices,
                     clients_innermost=args.clients_innermost, grouped_layout=args.grouped_layout)
    except ValueError as e:
        parser.error(_as_flags(str(e)))
    return 0


#: run_campaign's fields -> the campaign's flags, so that a refusal names what the user typed
_CAMPAIGN_FLAGS = {"profile": "--profile", "device": "--device", "devices": "--devices", "seeds": "--seeds",
                   "datasets": "--datasets", "store": "--store", "root": "--root",
                   "budget_min": "--budget-min", "stand_in_rounds": "--stand-in-rounds", "graphs": "--graphs",
                   "compiled_draws": "--compiled-draws"}


def _as_flags(message: str) -> str:
    """A refusal of :func:`fedlib.campaign.run_campaign` (``field: why`` or ``field, field: why``)
    with its fields named as the command line's flags (``--datasets: why``)."""
    head, sep, rest = message.partition(": ")
    fields = head.split(", ")
    if not sep or not all(f in _CAMPAIGN_FLAGS for f in fields):
        return message
    return f"{', '.join(_CAMPAIGN_FLAGS[f] for f in fields)}: {rest}"


def _import(parser: argparse.ArgumentParser, imports: list[str]) -> None:
    """``--import``: each module imported (one that registers the user's own algorithms or
    problems), or a usage error naming it."""
    for module in imports:
        if not module or module.startswith(".") or not all(p.isidentifier() for p in module.split(".")):
            parser.error(f"--import: {module!r} is not an importable module name (e.g. mypackage.algos)")
        try:
            importlib.import_module(module)
        except ImportError as e:
            parser.error(f"--import: cannot import {module!r} ({e})")


def _verify(parser: argparse.ArgumentParser, path: Path, sample: int | None, seed: int,
            imports: list[str], rounds: int | str | None) -> int:
    """``verify``: replay the entries of ``path`` (a store, or one entry), one line each, then the
    counts; 1 if any differs or cannot be replayed."""
    _import(parser, imports)                   # checked whether or not there is an entry to replay
    targets = _targets(parser, path, sample, seed)
    if not targets:
        print(f"{path}: no entries")
        return 0
    counts = {"exact": 0, "cross-cpu": 0, "unchecked": 0, "failed": 0, "unknown": 0, "stale": 0, "error": 0}
    for t in tqdm(targets, desc="verify", unit="entry", disable=len(targets) < 2):
        counts[_verify_entry(t, rounds)] += 1
    ok = counts["exact"] + counts["cross-cpu"]
    print(f"{ok} of {len(targets)} entries reproduce ({counts['exact']} by the exact check, "
          f"{counts['cross-cpu']} by the cross-CPU check); {counts['unchecked']} not checkable here; "
          f"{counts['failed']} differ; {counts['stale']} differ after a change of their code; "
          f"{counts['unknown']} cannot be replayed without --import (their algorithm, problem, participation "
          "kind or dataset is not registered here)"
          + (f"; {counts['error']} are failed runs (stored with status error): nothing to verify"
             if counts["error"] else ""))
    return 1 if counts["failed"] or counts["stale"] or counts["unknown"] else 0     # 0: all verified


def _targets(parser: argparse.ArgumentParser, path: Path, sample: int | None, seed: int) -> list[Path]:
    """The entry folders to replay: ``path`` itself (an entry), or a sample of its entries (a store);
    a usage error for anything else, and for a folder holding no entries but stores below it."""
    if (path / "meta.json").is_file():
        return [path]
    if not path.is_dir():
        parser.error(f"path: {path} is neither a store folder nor an entry folder")
    store = Store(path, create=False)                 # verify reads: nothing is written into the folder
    targets = [store.path / k for k in pick(store, sample, seed)]
    if not targets:                    # a folder above stores (results/<notebook>, results): name them
        _refuse_above_stores(parser, path, "verify")
    return targets


def _refuse_above_stores(parser: argparse.ArgumentParser, path: Path, verb: str) -> None:
    """A usage error where ``path`` holds no entries but stores lie below it (``results/<notebook>``,
    ``results``), naming them."""
    below = sorted({str(m.parent.parent) for pattern in ("*/*/meta.json", "*/*/*/meta.json")
                    for m in path.glob(pattern)})
    if below:
        shown = ", ".join(below[:6]) + (f" ... ({len(below)} in all)" if len(below) > 6 else "")
        parser.error(f"path: {path} holds no entries, but the stores below it do: {shown}; {verb} one "
                     "of them")


def _store_folder(parser: argparse.ArgumentParser, path: Path, verb: str) -> None:
    """``seal`` and ``renew`` work on a store: a usage error naming ``path`` for an entry, a file, a
    missing folder, a folder above stores (naming them) and a folder of other things (a store
    counted "0 of 0" and exited 0)."""
    from .sweeps import _check_readable
    if not path.is_dir() or (path / "meta.json").is_file():
        parser.error(f"path: {path} is not a store folder")
    _refuse_above_stores(parser, path, verb)
    try:
        _check_readable(path)
    except ValueError as e:
        parser.error(f"path: {str(e).removeprefix('store: ')}")


def _verify_entry(t: Path, rounds: int | str | None) -> str:
    """Replay one entry and write its line; returns what it counts as (``exact``, ``cross-cpu``,
    ``unchecked``, ``failed``, ``stale``, ``unknown``, or ``error``: a failed run, nothing to replay)."""
    try:
        status = json.loads((t / "meta.json").read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        status = None                              # verify() names what is wrong with the entry
    if status == "error":
        tqdm.write(f"skip {t.name}: a failed run (stored with status error): nothing to verify")
        return "error"
    try:
        rep = verify(t, rounds=rounds)
    except ValueError as e:
        if "no such trace file" in str(e):         # an input not on this machine: nothing to judge here
            tqdm.write(f"skip {t.name}: not checkable here: {str(e).splitlines()[0]} (verify it where "
                       "the file is: from the folder the run was computed in, or with it in FEDLIB_DATA)")
            return "unchecked"
        unknown = _unregistered(e)
        hint = "; if it is your own, pass --import <the module that registers it>" if unknown else ""
        tqdm.write(f"{'skip' if unknown else 'FAIL'} {t.name}: cannot replay: "
                   f"{str(e).splitlines()[0]}{hint}")
        return "unknown" if unknown else "failed"
    if rep.ok:
        tqdm.write(f"ok   {t.name} ({rep.check} check, max relative difference "
                   f"{max(rep.max_rel.values(), default=0.0):.1e})")
        return rep.check
    if rep.failed:
        changed = _changed_code(t)
        note = (f"\n  its {' and '.join(changed)} code changed since it was stored: the replay ran "
                "today's code (recompute it, or python -m fedlib renew if the change should move no bit)"
                if changed else "")
        tqdm.write(f"FAIL {rep}{note}")
        return "stale" if changed else "failed"
    tqdm.write(f"skip {rep}")
    return "unchecked"


def _changed_code(entry_dir) -> list[str]:
    """The parts (algorithm, problem, participation) of a stored entry's code fingerprint that differ from the
    code as it is now (:func:`fedlib.fingerprint.stale_parts`); [] if none or unreadable."""
    import json

    from .config import ExperimentConfig
    from .fingerprint import stale_parts
    try:
        meta = json.loads((entry_dir / "meta.json").read_text())
        config = ExperimentConfig.from_dict(json.loads((entry_dir / "config.json").read_text()))
        return stale_parts(meta.get("code"), config)
    except (OSError, ValueError):
        return []


def _rounds(parser: argparse.ArgumentParser, text: str) -> int | str | None:
    if text == "all":
        return None
    if text == "auto":
        return "auto"
    try:
        rounds = int(text)
    except ValueError:
        parser.error(f"--rounds: must be an integer >= 1, 'auto' or 'all', got {text!r}")
    if rounds < 1:
        parser.error(f"--rounds: must be an integer >= 1, 'auto' or 'all', got {rounds}")
    return rounds


def _renew(parser: argparse.ArgumentParser, path: Path, rounds) -> int:
    from .verification import renew_fingerprints
    _store_folder(parser, path, "renew")
    try:                                         # before any replay: renewing rewrites the entries
        Store(path, create=False).require_writable("renew rewrites the meta.json of each entry it renews")
    except InputError as e:
        parser.error(f"path: {str(e).removeprefix('store: ')}; copy the store somewhere writable")
    out = renew_fingerprints(path, rounds=rounds, progress=True)
    for key, outcome in out.items():
        why = f": {outcome.split(': ', 1)[1]}" if ": " in outcome else ""
        print(f"{outcome.split(':')[0]:<13} {key}{why}")
    counts = {k: sum(1 for v in out.values() if v.split(":")[0] == k)
              for k in ("migrated", "renewed", "differs", "not checkable", "unknown", "unreadable")}
    stale = len(out) - counts["unreadable"] - counts["unknown"]
    print(f"{path}: {stale} stale entries of {len(Store(path).keys())}: {counts['migrated']} migrated "
          f"(the same code: behavioural fingerprint, no replay), {counts['renewed']} renewed "
          f"(bitwise replay), {counts['differs']} differ (recompute them), {counts['not checkable']} not "
          "checkable here"
          + (f"; {counts['unknown']} cannot be renewed without --import (their algorithm, problem, "
             "participation kind or dataset is not registered here)" if counts["unknown"] else "")
          + (f"; {counts['unreadable']} unreadable" if counts["unreadable"] else ""))
    return 1 if any(counts[k] for k in ("differs", "not checkable", "unknown", "unreadable")) else 0


def _seal(parser: argparse.ArgumentParser, path: Path, force: bool) -> int:
    _store_folder(parser, path, "seal")
    try:
        out = Store(path, create=False).seal(force=force)
    except InputError as e:                      # a read-only store with entries left to seal
        parser.error(f"path: {str(e).removeprefix('store: ')}; copy the store somewhere writable")
    for key, outcome in out.items():
        if outcome != "unchanged":
            print(f"{outcome.split(':')[0]:<10} {key}" + (f": {outcome.split(': ', 1)[1]}" if ": " in outcome
                                                        else ""))
    counts = {k: sum(1 for v in out.values() if v.split(":")[0] == k)
              for k in ("sealed", "unchanged", "edited", "unreadable")}
    print(f"{path}: {counts['sealed']} sealed, {counts['unchanged']} already sealed, {counts['edited']} "
          f"edited (left alone{'' if force else '; --force re-seals them'}), {counts['unreadable']} "
          "unreadable")
    return 1 if counts["edited"] or counts["unreadable"] else 0


if __name__ == "__main__":
    sys.exit(main())
