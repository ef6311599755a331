"""Analysis of sweep frames: failed runs named, runs labelled, final values per run (diverged runs
blanked), the best cell of a grid."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._validate import InputError
from .store import TIMING_COLUMNS

__all__ = ["FINAL_COLUMNS", "GridSearch", "best_rows", "final_table", "finals", "first_reach", "label",
           "mean_std", "require_ok", "search_log_grid"]

#: the columns of :func:`final_table`: title -> column of :func:`finals`
FINAL_COLUMNS = {"final train loss": "loss", "final test acc": "test_acc", "outcome": "outcome"}


def require_ok(df: pd.DataFrame, allow_diverged: bool = True) -> pd.DataFrame:
    """``df`` (a :func:`sweep` frame) if no run failed, else a RuntimeError naming the failed
    runs and their errors (diverged runs pass unless ``allow_diverged=False``)."""
    bad_status = ("error",) if allow_diverged else ("error", "diverged")
    bad = df[df["status"].isin(bad_status)].drop_duplicates("key")
    if len(bad):
        lines = [f"{k}: {str(e).splitlines()[0] if isinstance(e, str) else s}"
                 for k, e, s in zip(bad["key"], bad["error"], bad["status"], strict=True)]
        raise RuntimeError(f"{len(bad)} run(s) failed: " + "; ".join(lines[:5]))
    return df


def finals(df: pd.DataFrame, last: int = 1) -> pd.DataFrame:
    """One row per run of a :func:`sweep` frame, indexed by ``key``: the mean of each history
    metric over its ``last`` evaluated rounds (1: the final evaluation), with ``round`` the last
    round. Pass the sweep's frame (columns a caller appends after the history are averaged too).

    A run that diverged or failed has no final value: its metrics are NaN (its history stops
    before the divergence, and the last values it had are not where it ended), and the column
    ``outcome`` says ``"ok"``, ``"diverged at round R"`` or ``"error"``.
    """
    if not isinstance(df, pd.DataFrame):
        raise InputError(f"df: expected a frame of fedlib.sweep, got {type(df).__name__}")
    if last < 1:
        raise InputError(f"last: must be >= 1, got {last!r}")
    cols = list(df.columns)
    if "diverged_at" not in cols:
        raise InputError("df: expected a frame of fedlib.sweep (it has no diverged_at column)")
    history = cols[cols.index("diverged_at") + 1:]             # the history columns follow the meta
    metrics = [c for c in history if c != "round" and c not in TIMING_COLUMNS
               and pd.api.types.is_numeric_dtype(df[c])]
    tail = df.sort_values("round").groupby("key", sort=False).tail(last)
    out = tail.groupby("key", sort=False)[metrics].mean()
    info = tail.groupby("key", sort=False)[["round", "status", "diverged_at"]].last()
    out = info.join(out)
    bad = out["status"] != "ok"
    out.loc[bad, metrics] = np.nan
    out["outcome"] = [("ok" if s == "ok" else f"diverged at round {int(d)}" if s == "diverged" and pd.notna(d)
                       else str(s)) for s, d in zip(out["status"], out["diverged_at"], strict=True)]
    return out


def mean_std(values: Sequence[float], digits: int = 4) -> str:
    """``"mean ± std"`` (sample standard deviation) of the values that exist -- NaN marks a run with
    no value (failed, collapsed) and is left out --, the mean alone for one value, ``"-"`` for none."""
    try:
        v = pd.Series(values, dtype=float).dropna()
    except (TypeError, ValueError):
        raise InputError(f"values: must be numbers, got {values!r}") from None
    if v.empty:
        return "-"
    return f"{v.mean():.{digits}f}" if len(v) == 1 else f"{v.mean():.{digits}f} ± {v.std():.{digits}f}"


def label(df: pd.DataFrame, labels: Mapping, names: Sequence[str]) -> pd.DataFrame:
    """``df`` with one column per name in ``names``, from each run's labels.

    Args:
        df: a :func:`fedlib.sweep` frame (a ``key`` column) or a frame indexed by key (as
            :func:`finals` gives).
        labels: config (or key) -> a tuple of values, one per name (or a single value when
            ``names`` has one name).
        names: the new columns, appended in this order.
    """
    by_key = {(c if isinstance(c, str) else c.key()): v if isinstance(v, tuple) else (v,)
              for c, v in labels.items()}
    keys = df["key"] if "key" in df.columns else pd.Series(df.index, index=df.index)
    missing = sorted(set(keys) - set(by_key))
    if missing:
        raise InputError(f"labels: no labels for run {missing[0]} (and {len(missing) - 1} more)")
    short = [(k, v) for k, v in by_key.items() if len(v) < len(names)]
    if short:
        key, values = short[0]
        raise InputError(f"labels: run {key} has {len(values)} value(s) {values!r}, names has "
                         f"{len(names)} ({', '.join(map(str, names))}): one value per name")
    out = df.copy()
    for i, name in enumerate(names):
        out[name] = [by_key[k][i] for k in keys]
    return out


def best_rows(table: pd.DataFrame, score: str, by: str | None = None, lower: bool = True) -> pd.Series:
    """Which rows of a grid's table are chosen: per group of ``by`` (or overall), the row with the
    lowest (``lower``) or highest ``score`` among the runs that finished (``status`` ok and a
    finite score); a diverged or failed run is never chosen. A group with no such run is a
    RuntimeError naming it."""
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"table: expected a frame, got {type(table).__name__}")
    for arg, col in (("score", score), ("by", by)):
        if col is not None and col not in table.columns:
            have = ", ".join(map(str, table.columns))
            raise InputError(f"{arg}: {col!r} is not a column of table (columns: {have})")
    fine = np.isfinite(table[score].astype(float))
    if "status" in table:
        fine &= table["status"] == "ok"
    chosen = pd.Series(False, index=table.index)
    groups = table.groupby(by, sort=False) if by else [(None, table)]
    for name, rows in groups:
        ok = rows[fine.loc[rows.index]]
        if ok.empty:
            where = "" if by is None else f" for {name}"
            raise RuntimeError(f"every run of the learning-rate grid{where} diverged or failed")
        chosen.loc[ok[score].idxmin() if lower else ok[score].idxmax()] = True
    return chosen


def first_reach(df: pd.DataFrame, target: float, metric: str = "test_acc",
                columns: Sequence[str] = ("round",)) -> pd.DataFrame:
    """Per run of a :func:`fedlib.sweep` frame (indexed by key): the values of ``columns`` (rounds,
    model units, local steps, seconds, ...) at the first evaluation where ``metric`` reaches
    ``target`` (``>=``); NaN where it never does."""
    if not isinstance(df, pd.DataFrame) or "key" not in df:
        raise InputError("df: expected a frame of fedlib.sweep (with a key column)")
    for arg, col in [("metric", metric), *(("columns", c) for c in columns)]:
        if col not in df.columns:
            raise InputError(f"{arg}: {col!r} is not a column of df")
    if isinstance(target, bool) or not isinstance(target, (int, float, np.integer, np.floating)) \
            or not np.isfinite(target):
        raise InputError(f"target: must be a finite number, got {target!r}")
    if metric.endswith("acc") and not 0 <= target <= 1:
        raise InputError(f"target: {metric} is a fraction, so the target must lie in [0, 1] (0.9, not 90), "
                         f"got {target!r}")
    rows = {}
    for key, h in df.groupby("key", sort=False):
        hit = h.sort_values("round")
        hit = hit[hit[metric] >= target]
        rows[key] = {c: float(hit.iloc[0][c]) if len(hit) else np.nan for c in columns}
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(columns)).rename_axis("key")


def final_table(df: pd.DataFrame, labels: Mapping, names: Sequence[str], last: int = 1,
                extra: Callable[[Any], dict] | None = None,
                columns: Mapping[str, str] = FINAL_COLUMNS) -> pd.DataFrame:
    """One row per labelled config, in the order of ``labels`` (config -> a tuple of values named
    by ``names``): its labels, then ``extra(config)``'s columns if given, then its final values
    (:func:`finals` over the last ``last`` evaluations; a diverged run has none), titled as in
    ``columns``."""
    fin = finals(df, last)
    rows = []
    for c, v in labels.items():
        row = dict(zip(names, v if isinstance(v, tuple) else (v,), strict=True))
        row.update(extra(c) if extra is not None else {})
        row.update({title: fin.loc[c.key(), col] for title, col in columns.items()})
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class GridSearch:
    """What :func:`search_log_grid` tried and chose.

    Attributes:
        scores: rate -> score of every rate tried (NaN: the run diverged or failed), in the order
            tried.
        best: the chosen rate (the best finite score).
        extended: the rates added past an edge of the starting grid, in order.
        on_edge: True if the choice still lies on an edge of the rates tried (the extension limit
            was reached): a caller reports it, it is never silently accepted.
    """

    scores: dict
    best: float
    extended: tuple
    on_edge: bool


def search_log_grid(evaluate: Callable[[list[float]], Mapping[float, float]], rates: Sequence[float],
                    factor: float = 10.0, lower: bool = True, max_extensions: int = 3) -> GridSearch:
    """A learning-rate grid that does not accept a pick on its edge: while the best rate is the
    largest (smallest) one tried and its score is finite, the rate ``factor`` times larger
    (smaller) is evaluated too, up to ``max_extensions`` times. A neighbour that fails (NaN)
    bounds the grid: the pick next to it is interior.

    Args:
        evaluate: rates -> {rate: score} (NaN for a run that diverged or failed); called once
            with the starting rates, then once per extension with one new rate.
        rates: the starting grid (at least one rate, all positive).
        factor: the step of an extension (> 1).
        lower: whether a lower score is better (a loss) or a higher one (an accuracy).
        max_extensions: how many rates may be added.
    """
    rates = [float(r) for r in rates]
    if not rates or any(not np.isfinite(r) or r <= 0 for r in rates):
        raise InputError(f"rates: must be positive numbers, got {rates!r}")
    if not factor > 1:
        raise InputError(f"factor: must be > 1, got {factor!r}")
    got = evaluate(rates)
    if not isinstance(got, Mapping):
        raise InputError(f"evaluate: must return a mapping rate -> score, got {type(got).__name__} {got!r}")
    scores = {float(k): float(v) for k, v in got.items()}
    missing = sorted(set(rates) - set(scores))
    if missing:
        raise InputError(f"evaluate: returned no score for rate {missing[0]!r}")
    extended: list[float] = []

    def best_rate() -> float:
        finite = {r: v for r, v in scores.items() if np.isfinite(v)}
        if not finite:
            raise RuntimeError("every run of the learning-rate grid diverged or failed "
                               f"(rates {sorted(scores)})")
        return (min if lower else max)(finite, key=finite.get)

    while True:
        best, tried = best_rate(), sorted(scores)
        edge = best in (tried[0], tried[-1])          # a one-rate grid is all edge
        if not edge:
            return GridSearch(scores, best, tuple(extended), False)
        if len(extended) >= max_extensions:
            return GridSearch(scores, best, tuple(extended), True)
        nxt = best * factor if best == tried[-1] else best / factor
        if nxt in scores:                           # a one-rate grid extends downwards next
            nxt = best / factor
        got = evaluate([nxt])
        if not isinstance(got, Mapping):
            raise InputError(f"evaluate: must return a mapping rate -> score, got "
                             f"{type(got).__name__} {got!r}")
        if nxt not in got:
            raise InputError(f"evaluate: returned no score for rate {nxt!r}")
        scores[nxt] = float(got[nxt])
        extended.append(nxt)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
