"""Claim checks a reader can trust: per-run summaries of a sweep's curves and paired verdicts
over seeds.

A paper's claim ("A converges faster than B", "A is more stable", "A keeps B's accuracy") is
checked from runs of several seeds, one run of each method per seed (same schedule, split,
model and minibatches), by comparing the methods **seed by seed**:

* :func:`summarize` turns each run's history into numbers: the **late-window** mean of a metric
  (the last ``window`` fraction of the rounds, never one evaluation), the round at which a
  smoothed curve first reaches a target (:func:`rounds_to`), the mean **drop** of test accuracy
  from one evaluation to the next (:func:`mean_drop`: downward moves only, so a climb back after
  a collapse is not counted as instability, but the collapse is), and whether the run
  **collapsed** (:func:`collapse`: test accuracy near chance, or training loss above its start,
  for a sustained window) or diverged. A collapsed or diverged run has no final value; it is
  reported, never averaged.
* :func:`paired` gives one of three verdicts, with the numbers behind it:

  - **holds**: in every seed the difference favours the claim by more than the tie tolerance;
  - **does not hold**: in every seed it goes against the claim by more than the tolerance;
  - **within noise**: the seeds disagree, a difference lies inside the tolerance, or there are
    fewer seeds than the minimum (3 by default).

  A run without a value (collapsed, diverged, never reaching a target) counts as the worst
  value of its seed: the claim gains the seed where only the other method failed and loses it
  where only the claimed method did; where both failed the seed is a tie.
* :func:`paired_reach` checks "A gets there first": per seed, the rounds (or model units) each
  run needs to reach a target near the plateau both reach (a fraction of the lower of their
  late-window values), not a level passed in the first few rounds.
* :func:`against_all` checks one claim against several methods and :func:`combine` joins
  verdicts that must all hold (holds only if each holds; does not hold if any one does not).
* :func:`claims_table` collects verdicts into the five columns every notebook prints (claim,
  verdict, numbers, seeds, cause) and refuses a verdict other than "holds" without a cause.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["HOLDS", "NOT_HOLDS", "NOISE", "VERDICTS", "Verdict", "against_all", "claims_table",
           "collapse", "combine", "late_mean", "mean_drop", "ok_curves", "outcome_counts", "paired",
           "paired_reach", "per_group", "rounds_to", "scale_cause", "summarize"]

HOLDS, NOT_HOLDS, NOISE = "holds", "does not hold", "within noise"
#: the three verdicts of a claim
VERDICTS = (HOLDS, NOT_HOLDS, NOISE)
#: the columns of :func:`claims_table` after the context columns
CLAIM_COLUMNS = ["claim", "verdict", "numbers", "seeds", "cause"]


def _history(h: pd.DataFrame, metric: str) -> pd.DataFrame:
    if "round" not in h.columns or metric not in h.columns:
        raise ValueError(f"history: expected columns 'round' and {metric!r}, got {list(h.columns)}")
    return h.sort_values("round")


def late_mean(h: pd.DataFrame, metric: str = "test_acc", window: float = 0.1,
              rounds: int | None = None) -> float:
    """Mean of ``metric`` over the evaluations in the last ``window`` fraction of the rounds
    (rounds >= T - window T, T = ``rounds`` or the history's last round; at least the last
    evaluation)."""
    if not 0 < window <= 1:
        raise ValueError(f"window: must be in (0, 1], got {window!r}")
    h = _history(h, metric)
    if h.empty:
        return math.nan
    last = float(h["round"].iloc[-1]) if rounds is None else float(rounds)
    tail = h[h["round"] >= last - window * last]
    if tail.empty:
        tail = h.tail(1)
    return float(tail[metric].mean())


def rounds_to(h: pd.DataFrame, target: float, metric: str = "test_acc", smooth: int = 3,
              x: str = "round") -> float:
    """The value of ``x`` (rounds, model units, ...) at the first evaluation where the trailing
    mean of ``metric`` over ``smooth`` evaluations reaches ``target`` (``>=``); NaN if it never
    does. Smoothing keeps one lucky evaluation of a swinging curve from counting as arrival."""
    if smooth < 1:
        raise ValueError(f"smooth: must be >= 1, got {smooth!r}")
    h = _history(h, metric)
    level = h[metric].rolling(smooth, min_periods=smooth).mean()
    hit = h[level.to_numpy() >= target]
    return float(hit[x].iloc[0]) if len(hit) else math.nan


def mean_drop(h: pd.DataFrame, metric: str = "test_acc", start: float = 0.0) -> float:
    """Mean downward move of ``metric`` per evaluation interval over the evaluations at rounds
    >= ``start``: sum of max(0, m_{k-1} - m_k) over the number of intervals. Climbs count zero,
    so a curve that rises smoothly scores 0 and one that falls back and recovers scores its
    falls. NaN with fewer than two evaluations."""
    h = _history(h, metric)
    v = h.loc[h["round"] >= start, metric].to_numpy(dtype=float)
    if len(v) < 2:
        return math.nan
    return float(np.clip(v[:-1] - v[1:], 0, None).mean())


def collapse(h: pd.DataFrame, chance: float, margin: float = 0.1, sustain: int = 4,
             metric: str = "test_acc", loss: str = "loss") -> tuple[float, bool]:
    """Whether a run stopped learning: ``sustain`` consecutive evaluations after round 0 where
    ``metric`` is at most ``chance + margin`` or the training ``loss`` is above its value at the
    first evaluation.

    Returns:
        (the round where the first such window starts, or NaN; whether the run is still
        collapsed at its end: its last ``sustain`` evaluations all meet the condition).
    """
    if sustain < 1:
        raise ValueError(f"sustain: must be >= 1, got {sustain!r}")
    h = _history(h, metric)
    bad = (h[metric].to_numpy(dtype=float) <= chance + margin)
    if loss in h.columns and len(h):
        lv = h[loss].to_numpy(dtype=float)
        bad |= lv > lv[0]
    bad = bad[1:]                                     # round 0 is at chance by construction
    rounds = h["round"].to_numpy()[1:]
    run = 0
    for i, b in enumerate(bad):
        run = run + 1 if b else 0
        if run == sustain:
            start = float(rounds[i - sustain + 1])
            return start, bool(len(bad) >= sustain and bad[-sustain:].all())
    return math.nan, False


def summarize(df: pd.DataFrame, labels: Mapping, names: Sequence[str], chance: float,
              window: float = 0.1, margin: float = 0.1, sustain: int = 4,
              stable_from: float = 0.1) -> pd.DataFrame:
    """One row per run of a :func:`fedlib.sweep` frame, with its labels (``labels``: config or
    key -> tuple of values named by ``names``, as :func:`fedlib.analysis.label` takes):

    * ``outcome``: ``"ok"``, ``"diverged at round R"``, ``"collapsed at round R"`` (still at
      chance or above its starting loss at the end: :func:`collapse`) or ``"error"``;
    * ``collapsed_from``: the round a collapse window started (NaN if none; a run can recover);
    * ``final_acc``, ``final_loss``: :func:`late_mean` of test accuracy and training loss over
      the last ``window`` of the configured rounds (NaN unless the outcome is ok);
    * ``drop``: :func:`mean_drop` of test accuracy from round ``stable_from`` T on (NaN unless
      ok);
    * ``rounds``: the configured T.
    """
    from .analysis import label
    if "key" not in df.columns:
        raise ValueError("df: expected a frame of fedlib.sweep (it has no key column)")
    by_key = {(c if isinstance(c, str) else c.key()): c for c in labels}
    rows = []
    for key, h in df.groupby("key", sort=False):
        h = h.sort_values("round")
        status = h["status"].iloc[-1]
        config = by_key.get(key)
        configured = config is not None and not isinstance(config, str)
        T = int(config.rounds) if configured else int(h["round"].iloc[-1])
        start, stuck = collapse(h, chance, margin, sustain)
        if status == "ok" and stuck:
            outcome = f"collapsed at round {int(start)}"
        elif status == "diverged":
            d = h["diverged_at"].iloc[-1]
            outcome = f"diverged at round {int(d)}" if pd.notna(d) else "diverged"
        else:
            outcome = "ok" if status == "ok" else str(status)
        ok = outcome == "ok"
        rows.append({"key": key, "outcome": outcome, "collapsed_from": start, "rounds": T,
                     "final_acc": late_mean(h, "test_acc", window, T) if ok else math.nan,
                     "final_loss": late_mean(h, "loss", window, T) if ok else math.nan,
                     "drop": mean_drop(h, "test_acc", stable_from * T) if ok else math.nan})
    out = pd.DataFrame(rows)
    return label(out, labels, names) if len(out) else out


def scale_cause(profile: str, stand_in_rounds: int, rounds: int, quick: str) -> str:
    """The cause a notebook gives a verdict other than "holds" where the scale of its runs
    decides: on random stand-in data (``stand_in_rounds > 0``) and at the smoke profile the check
    only tests the code path; at the quick profile the claim is "not reproduced at this scale"
    (``quick`` names the scale, e.g. "MNIST, 1,000 of 10,000 rounds"); at the paper profile "not
    reproduced here"."""
    if stand_in_rounds:
        return f"random stand-in data, {rounds} rounds: a test of the code path, not of the claim"
    if profile == "smoke":
        return "smoke profile: tiny settings, a test of the code path, not of the claim"
    if profile == "quick":
        return f"not reproduced at this scale ({quick})"
    return "not reproduced here"


def ok_curves(tidy: pd.DataFrame, summary: pd.DataFrame, names: Sequence[str]) -> dict:
    """Per label tuple of ``names``: the labelled history in ``tidy`` (one run's rows) if that
    run's outcome in ``summary`` (:func:`summarize`) is ok, else None -- so that claims compare
    only runs that learned, and a collapsed run shows as a missing value, not as a number."""
    ok = set(summary.loc[summary["outcome"] == "ok", "key"])
    return {k: (h if h["key"].iloc[0] in ok else None) for k, h in tidy.groupby(list(names), sort=False)}


def outcome_counts(summary: pd.DataFrame) -> dict[str, int]:
    """How many runs of a :func:`summarize` frame ended ok, diverged, collapsed or in error (the
    round of a divergence or collapse left out)."""
    kinds = summary["outcome"].str.replace(r" at round \d+", "", regex=True).value_counts()
    return {k: int(v) for k, v in kinds.items()}


def per_group(summary: pd.DataFrame, by: Sequence[str], values: Mapping[str, str],
              recovered: bool = False) -> pd.DataFrame:
    """One row per group of ``by`` of a :func:`summarize` frame (its labels as columns or index):
    each column of ``values`` (title -> summary column) as mean ± std over the runs that are ok,
    then ``runs ok`` ("k of n") and ``not ok`` (each such run's seed and outcome) -- a run that
    stopped learning is reported, never averaged; ``recovered`` adds the collapses that ok runs
    came back from. The frame needs a ``seed`` label."""
    from .analysis import mean_std
    by = list(by)
    rows = []
    for key, g in summary.reset_index().groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        ok = g[g["outcome"] == "ok"]
        row = dict(zip(by, key, strict=True))
        row.update({title: mean_std(ok[col]) for title, col in values.items()})
        row["runs ok"] = f"{len(ok)} of {len(g)}"
        row["not ok"] = "; ".join(f"seed {r.seed}: {r.outcome}" for r in g.itertuples()
                                  if r.outcome != "ok") or "-"
        if recovered:
            row["recovered collapse"] = "; ".join(f"seed {r.seed}: from round {r.collapsed_from:.0f}"
                                                  for r in ok.itertuples()
                                                  if np.isfinite(r.collapsed_from)) or "-"
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Verdict:
    """The verdict of one claim and the numbers behind it.

    Attributes:
        verdict: one of :data:`VERDICTS`.
        numbers: the per-seed values and differences, as printed beside the verdict.
        seeds: how many seeds were compared.
        diffs: per seed, how far the claim is ahead (positive: it favours the claim; +inf /
            -inf where only one side has no value).
    """

    verdict: str
    numbers: str
    seeds: int
    diffs: tuple


def _fmt(v: float, digits: int, missing: str = "failed") -> str:
    return missing if not np.isfinite(v) else f"{v:.{digits}f}"


def paired(a: Mapping, b: Mapping, higher: bool = True, tol: float = 0.0, margin: float = 0.0,
           min_seeds: int = 3, names: tuple[str, str] = ("A", "B"), digits: int = 4,
           missing: str = "failed") -> Verdict:
    """The verdict of "``a`` beats ``b``" (or, with ``margin > 0``, "``a`` is no worse than ``b``
    by more than ``margin``") from per-seed values.

    Args:
        a, b: seed -> value of the claimed method and of the other one (NaN: the run has no value:
            collapsed, diverged, or never reached a target; it counts as the worst of its seed).
            Only seeds present in both are compared.
        higher: whether a higher value is better (accuracy) or a lower one (loss, rounds).
        tol: the tie tolerance: a per-seed difference within +-tol is a tie.
        margin: non-inferiority margin: the claim is a - b > -margin (in the better direction).
        min_seeds: fewer common seeds give "within noise".
        names: how the numbers name ``a`` and ``b``.
        digits: decimals of the printed values.
        missing: how the numbers print a value that is NaN.

    Returns:
        holds if every seed's difference d = (a - b or b - a) + margin exceeds ``tol``, does not
        hold if every one is below ``-tol``, else within noise.
    """
    if tol < 0 or margin < 0:
        raise ValueError(f"tol, margin: must be >= 0, got {tol!r}, {margin!r}")
    seeds = [s for s in a if s in b]
    diffs = []
    for s in seeds:
        x, y = float(a[s]), float(b[s])
        fx, fy = np.isfinite(x), np.isfinite(y)
        if fx and fy:
            d = (x - y if higher else y - x) + margin
        elif fx:
            d = math.inf
        elif fy:
            d = -math.inf
        else:
            d = 0.0
        diffs.append(d)
    d = np.array(diffs, dtype=float)
    if len(d) < min_seeds:
        verdict = NOISE
    elif (d > tol).all():
        verdict = HOLDS
    elif (d < -tol).all():
        verdict = NOT_HOLDS
    else:
        verdict = NOISE
    an, bn = names
    per = "; ".join(f"seed {s}: {_fmt(float(a[s]), digits, missing)} vs {_fmt(float(b[s]), digits, missing)}"
                    for s in seeds)
    extra = f", margin {margin:g}" if margin else ""
    few = f"; only {len(d)} seed(s), {min_seeds} needed" if len(d) < min_seeds else ""
    better = "higher" if higher else "lower"
    numbers = f"{an} vs {bn} ({better} is better, tie tol {tol:g}{extra}): {per}{few}"
    return Verdict(verdict, numbers, len(d), tuple(diffs))


def combine(verdicts: Mapping[str, Verdict]) -> Verdict:
    """One verdict from several comparisons (name -> :class:`Verdict`) that must all hold: holds
    if each holds, does not hold if at least one does not (named), else within noise. The numbers
    are those of the comparison that decided (the first failing one, the first within noise, or
    the tightest win), and name the others that were not clear."""
    if not verdicts:
        raise ValueError("verdicts: nothing to combine")
    lost = [o for o, v in verdicts.items() if v.verdict == NOT_HOLDS]
    noise = [o for o, v in verdicts.items() if v.verdict == NOISE]
    if lost:
        key, verdict = lost[0], NOT_HOLDS
    elif noise:
        key, verdict = noise[0], NOISE
    else:                                   # the tightest win: the smallest worst-seed lead
        key = min(verdicts, key=lambda o: min(verdicts[o].diffs) if verdicts[o].diffs else math.inf)
        verdict = HOLDS
    v = verdicts[key]
    also = ""
    if verdict != HOLDS and len(lost) + len(noise) > 1:
        also = f" (also not clear: {', '.join(o for o in lost + noise if o != key)})"
    return Verdict(verdict, v.numbers + also, min(x.seeds for x in verdicts.values()), v.diffs)


def against_all(a: Mapping, others: Mapping[str, Mapping], name: str = "A",
                compare: Callable[..., Verdict] = paired, **kwargs) -> Verdict:
    """"``a`` beats every method of ``others``" (name -> seed -> value, or whatever ``compare``
    takes), each compared with ``compare`` (:func:`paired` or :func:`paired_reach`, given
    ``kwargs``) and the verdicts :func:`combine`-d."""
    if not others:
        raise ValueError("others: no method to compare with")
    return combine({o: compare(a, b, names=(name, o), **kwargs) for o, b in others.items()})


def paired_reach(a: Mapping, b: Mapping, level: float = 0.98, metric: str = "test_acc",
                 x: str = "round", smooth: int = 3, window: float = 0.1, tol: float = 0.0,
                 min_seeds: int = 3, names: tuple[str, str] = ("A", "B")) -> Verdict:
    """"``a`` gets there first": per seed, both runs' :func:`rounds_to` (in ``x``: rounds, model
    units, ...) a target near the plateau both reach -- ``level`` times the lower of their two
    :func:`late_mean` values of ``metric`` in that seed -- compared with :func:`paired` (lower is
    better, tie tolerance ``tol`` in units of ``x``).

    Args:
        a, b: seed -> history (a frame with ``round``, ``metric`` and ``x``), or None for a run
            that collapsed, diverged or failed (it never gets there).
    """
    ta, tb, targets = {}, {}, {}
    for s in (s for s in a if s in b):
        ha, hb = a[s], b[s]
        ends = [late_mean(h, metric, window) for h in (ha, hb) if h is not None]
        if len(ends) < 2:                     # one side failed: it never gets there
            ta[s] = math.nan if ha is None else 0.0
            tb[s] = math.nan if hb is None else 0.0
            continue
        targets[s] = level * min(ends)
        ta[s] = rounds_to(ha, targets[s], metric, smooth, x)
        tb[s] = rounds_to(hb, targets[s], metric, smooth, x)
    v = paired(ta, tb, higher=False, tol=tol, min_seeds=min_seeds, names=names, digits=0, missing="never")
    where = ", ".join(f"seed {s}: {t:.4f}" for s, t in targets.items())
    numbers = f"{x} to {level:g} x the lower plateau ({where}); {v.numbers}"
    return Verdict(v.verdict, numbers, v.seeds, v.diffs)


def claims_table(rows: Sequence[Mapping]) -> pd.DataFrame:
    """The claims table: one row per checked claim, its context columns (dataset, pattern, ...)
    first, then claim, verdict, numbers, seeds and cause. Each row gives ``claim``, a
    :class:`Verdict` under ``"check"`` (or ``verdict``, ``numbers`` and ``seeds``) and a ``cause``;
    a verdict other than "holds" without a cause is a ValueError, as is an unknown verdict."""
    out = []
    for i, r in enumerate(rows):
        r = dict(r)
        check = r.pop("check", None)
        if isinstance(check, Verdict):
            r.update(verdict=check.verdict, numbers=check.numbers, seeds=check.seeds)
        if r.get("verdict") not in VERDICTS:
            raise ValueError(f"rows[{i}].verdict: must be one of {', '.join(VERDICTS)}; "
                             f"got {r.get('verdict')!r}")
        if r["verdict"] != HOLDS and not str(r.get("cause") or "").strip():
            raise ValueError(f"rows[{i}].cause: the claim {r.get('claim')!r} is {r['verdict']!r}: "
                             "give its cause "
                             "(a named departure from the paper, or 'not reproduced at this scale')")
        if r["verdict"] == HOLDS:
            r["cause"] = r.get("cause") or ""
        out.append(r)
    df = pd.DataFrame(out)
    if df.empty:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    context = [c for c in df.columns if c not in CLAIM_COLUMNS]
    return df[context + CLAIM_COLUMNS]
