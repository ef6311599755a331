"""Drawing (matplotlib + seaborn): the project's style, the figures' shared axes and pictures, and
saving figures (PNG + PDF) and tables (CSV + Markdown) into an output folder."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ._validate import InputError, check_int, check_real
from .paths import output_dir

__all__ = ["CURVE_METRICS", "METHOD_COLORS", "curves", "method_palette", "label_distribution_bars",
           "label_distribution_bubbles",
           "log_loss_axis", "participation_heatmap", "save_figure", "save_table", "set_style"]


def set_style() -> None:
    """Seaborn style used by every figure of the project."""
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.1)


def log_loss_axis(ax: plt.Axes, start: float, factor: float = 3.0) -> plt.Axes:
    """A log-scale loss axis capped at ``factor`` times the starting loss ``start``: a run that
    diverges leaves the plot through the top instead of squeezing every other curve (a NaN
    ``start``: no starting value, only the scale is set)."""
    if isinstance(start, bool) or not isinstance(start, (int, float, np.integer, np.floating)) \
            or (np.isfinite(start) and start <= 0):
        raise InputError(f"start: must be the starting loss, a number > 0 (NaN: none), got {start!r}")
    check_real("factor", factor, 0.0, low_open=True)
    ax.set_yscale("log")
    if np.isfinite(start) and start > 0:
        bottom, top = ax.get_ylim()
        ax.set_ylim(bottom, min(top, factor * start))
    return ax


#: one colour per method, the same in every figure of every notebook (tab10 / tab20 colours)
METHOD_COLORS = {
    "FedSUM": "#d62728", "FedSUM-CR": "#ff7f0e", "FedSUM-B": "#ff9896", "FedAvg": "#1f77b4",
    "FedAU": "#2ca02c", "FedAWE": "#9467bd", "FedVARP": "#8c564b", "MIFA": "#e377c2",
    "SCAFFOLD": "#7f7f7f", "SG-FOCUS": "#17becf", "FOCUS": "#17becf", "FedACS": "#bcbd22",
    "c-a-FedAvg": "#aec7e8", "FedNova": "#98df8a", "OS": "#c5b0d5",
}


def method_palette(labels: Iterable[str]) -> dict[str, tuple]:
    """Label -> colour for ``labels``: a method of :data:`METHOD_COLORS` keeps its colour
    everywhere; a variant labelled after one (``"FedSUM-CR (exact rate sum)"``, ``"FedAU as in
    the authors' code"``, ``"FedSUM*"``: the name, then a space, comma, parenthesis or star) gets
    a lighter shade of it (the longest matching name); other labels (``"FedAvg+SM"``, another
    algorithm) get distinct colours from seaborn's ``husl`` palette, in order."""
    labels = list(dict.fromkeys(labels))
    out, rest = {}, []
    for lab in labels:
        if lab in METHOD_COLORS:
            out[lab] = sns.color_palette([METHOD_COLORS[lab]])[0]
            continue
        base = max((m for m in METHOD_COLORS if re.match(re.escape(m) + r"(?=[\s(,;:*])", lab)), key=len,
                   default=None)
        if base is None:
            rest.append(lab)
        else:
            c = np.array(sns.color_palette([METHOD_COLORS[base]])[0])
            out[lab] = tuple(float(v) for v in c + (1 - c) * 0.45)
    for lab, c in zip(rest, sns.color_palette("husl", len(rest)), strict=True):
        out[lab] = c
    return {lab: out[lab] for lab in labels}


#: the metrics of the training curves: column -> axis label
CURVE_METRICS = {"loss": "training loss", "test_acc": "test accuracy"}


def curves(data: pd.DataFrame, hue: str, col: str | None, x: str = "round", col_order: list | None = None,
           row: str | None = None, metrics: dict | None = None, title: str = "{col}",
           size: tuple[float, float] = (5.2, 3.2), legend_width: float = 3.0, margin: float | None = None,
           **line_kws) -> tuple:
    """Training curves on a grid of panels: a row per metric (per value of ``row`` and metric when
    ``row`` is given), a column per value of ``col`` (one column if None); ``hue`` colours the
    lines (``line_kws`` go to ``seaborn.lineplot``: ``hue_order``, ``palette``, ``errorbar``,
    ``units``...). Loss axes are logarithmic and capped (:func:`log_loss_axis`); one legend,
    outside on the right of the first row, whose title says what a band is (``errorbar=("pi",
    100)``: lowest to highest seed) or that each line is one seed. A run whose status is not ok
    (diverged, error; frames with ``seed`` and ``status`` columns) is marked with an X at its last
    finite value, in its colour, and the legend says so. With ``margin``, a test-accuracy axis
    spanning less than 10 margins says in the panel that it magnifies differences below the
    margin. ``title`` is formatted with ``row`` and ``col``. Returns (figure, axes)."""
    metrics = CURVE_METRICS if metrics is None else metrics
    named = (("hue", hue), ("col", col), ("row", row), ("x", x), *(("metrics", m) for m in metrics))
    for name, column in named:
        if column is not None and column not in data:
            raise InputError(f"{name}: {column!r} is not a column of data (its columns: "
                             f"{', '.join(map(str, data.columns))})")
    cols = [None] if col is None else col_order if col_order is not None else list(dict.fromkeys(data[col]))
    rows = [(r, m) for r in (dict.fromkeys(data[row]) if row else [None]) for m in metrics]
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(size[0] * len(cols) + legend_width,
                                                            size[1] * len(rows)), squeeze=False)
    palette = line_kws.get("palette") if isinstance(line_kws.get("palette"), dict) else {}
    failed = False
    for i, (r, metric) in enumerate(rows):
        for j, c in enumerate(cols):
            sel = data if col is None else data[data[col] == c]
            sel = sel[sel[row] == r] if row else sel
            ax = axes[i, j]
            first = (i, j) == (0, len(cols) - 1)
            sns.lineplot(data=sel, x=x, y=metric, hue=hue, ax=ax, legend="auto" if first else False,
                         **line_kws)
            ax.set(title=title.format(row=r, col=c) if col is not None or row else "", ylabel=metrics[metric])
            if metric == "loss":
                start = sel.loc[sel["round"] == 0, "loss"].max()        # NaN if none; <= 0: no cap either
                log_loss_axis(ax, start if start > 0 else np.nan)
            failed |= _mark_failed(ax, sel, hue, x, metric, palette)
            if margin is not None and metric == "test_acc":
                lo, hi = ax.get_ylim()
                if hi - lo < 10 * margin:
                    ax.text(0.01, 0.02, f"zoomed: the axis spans {hi - lo:.3f}; gaps below {margin:g} "
                            "(the margin) do not count", transform=ax.transAxes, fontsize=7, color="dimgray")
    ax = axes[0, -1]
    if ax.get_legend() is not None:
        errorbar = line_kws.get("errorbar")
        note = ("band: lowest to highest seed" if errorbar == ("pi", 100) else
                "one line per seed" if line_kws.get("units") == "seed" else "")
        handles, labels = ax.get_legend_handles_labels()
        if failed:
            handles.append(plt.Line2D([], [], marker="X", ls="none", color="gray", mec="black", mew=0.5,
                                      ms=8))
            labels.append("a run that failed\n(diverged / error): its last value")
        ax.legend(handles, labels, title=f"{hue}\n({note})" if note else hue, loc="upper left",
                  bbox_to_anchor=(1.02, 1))
    return fig, axes


def _mark_failed(ax: plt.Axes, data: pd.DataFrame, hue: str, x: str, metric: str, palette: dict) -> bool:
    """Mark each run of ``data`` (by hue and seed) whose last status is not ok with an X at its last
    finite ``metric`` value; returns whether any was marked."""
    if "seed" not in data or "status" not in data or hue == "seed":
        return False
    marked = False
    for (level, _), h in data.sort_values(x).groupby([hue, "seed"], sort=False):
        fin = h.dropna(subset=[metric])
        if h["status"].iloc[-1] == "ok" or fin.empty:
            continue
        ax.plot(fin[x].iloc[-1], fin[metric].iloc[-1], marker="X", ls="none", ms=8, mec="black", mew=0.5,
                color=palette.get(level, "gray"), zorder=5)
        marked = True
    return marked


def save_figure(fig: plt.Figure, out_dir: str | os.PathLike, name: str) -> list[Path]:
    """Write ``fig`` as ``name.png`` and ``name.pdf`` under ``out_dir``; returns the paths.

    File metadata carry no dates, so the same figure gives the same bytes."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or os.sep in name:
        raise InputError(f"name: must be a file name without a folder (e.g. 'loss_curves'; the folder is "
                         f"out_dir), got {name!r}")
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InputError(f"out_dir: must be a folder, got {os.fspath(out_dir)!r}, which is a file")
    d = output_dir(out_dir)
    paths = [d / f"{name}.png", d / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=150, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(paths[1], bbox_inches="tight", metadata={"CreationDate": None, "Creator": None,
                                                           "Producer": None})
    return paths


def save_table(df: pd.DataFrame, out_dir: str | os.PathLike, name: str,
               float_format: str = "%.4g") -> list[Path]:
    """Write ``df`` as ``name.csv`` and ``name.md`` (GitHub Markdown) under ``out_dir``; a ``|`` in
    a cell or a column name is escaped (``\\|``) in the Markdown, so that it stays in its cell."""
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InputError(f"out_dir: must be a folder, got {os.fspath(out_dir)!r}, which is a file")
    d = output_dir(out_dir)
    paths = [d / f"{name}.csv", d / f"{name}.md"]
    df.to_csv(paths[0], index=False, float_format=float_format)
    paths[1].write_text(_markdown(df, float_format) + "\n")
    return paths


def _markdown(df: pd.DataFrame, float_format: str) -> str:
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return "n/a" if np.isnan(v) else float_format % v
        return _cell(v)
    head = "| " + " | ".join(map(_cell, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *rows])


def _cell(v: object) -> str:
    """A Markdown table cell's text: a ``|`` in it escaped, else it would end the cell (GitHub
    Markdown reads ``\\|`` as a ``|`` inside a cell, in code spans too)."""
    return str(v).replace("|", "\\|")


def participation_heatmap(ax: plt.Axes, active: np.ndarray, rounds: int | None = None,
                          title: str | None = None) -> plt.Axes:
    """Clients (rows) x rounds (columns) heat-map of a participation matrix [T, N] (its first
    ``rounds`` rounds; None: all)."""
    if rounds is not None:
        rounds = check_int("rounds", rounds, 1)
    a = np.asarray(active)
    if a.ndim != 2:
        raise InputError(f"active: must be a participation matrix, expected [T, N], got shape {a.shape}")
    a = a[: rounds or len(a)].T
    ax.imshow(a > 0, aspect="auto", interpolation="nearest", cmap="Greys", vmin=0, vmax=1)
    ax.set_xlabel("round t")
    ax.set_ylabel("client i")
    if title:
        ax.set_title(title)
    ax.grid(False)
    return ax


def _counts(counts: np.ndarray) -> np.ndarray:
    """A label-count matrix [clients, classes] as floats, or one InputError naming ``counts``."""
    try:
        arr = np.asarray(counts, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"counts: must be numbers, expected [clients, classes], got {counts!r}") from None
    if arr.ndim != 2:
        raise InputError(f"counts: must be a label-count matrix, expected [clients, classes], got shape "
                         f"{arr.shape}")
    if not np.isfinite(arr).all() or (arr < 0).any():
        bad = arr[~(np.isfinite(arr) & (arr >= 0))].ravel()[:3]
        raise InputError(f"counts: must be finite counts >= 0, got values such as {bad.tolist()}")
    return arr


def label_distribution_bars(ax: plt.Axes, counts: np.ndarray, title: str | None = None) -> plt.Axes:
    """FedSUM Fig. 4: one stacked bar per client (height = its samples), coloured by label.

    Args:
        counts: label-count matrix [N, classes] (``Partition.counts``).
    """
    counts = _counts(counts)
    colors = sns.color_palette("tab10" if counts.shape[1] <= 10 else "husl", counts.shape[1])
    bottom = np.zeros(counts.shape[0])
    x = np.arange(counts.shape[0])
    for c in range(counts.shape[1]):
        ax.bar(x, counts[:, c], bottom=bottom, color=colors[c], width=1.0, label=str(c), linewidth=0)
        bottom += counts[:, c]
    ax.set_xlabel("client index")
    ax.set_ylabel("number of samples")
    if title:
        ax.set_title(title)
    return ax


def label_distribution_bubbles(ax: plt.Axes, counts: np.ndarray, title: str | None = None,
                               max_size: float = 300.0) -> plt.Axes:
    """FOCUS Fig. 8: a bubble per (client, label), area proportional to the sample count."""
    counts = _counts(counts)
    max_size = check_real("max_size", max_size, 0, low_open=True)
    if not counts.any():
        raise InputError("counts: must hold at least one positive count, got all zeros")
    ii, cc = np.nonzero(counts)
    ax.scatter(ii, cc, s=max_size * counts[ii, cc] / counts.max(), alpha=0.6, color="tab:red")
    ax.set_xlabel("client index")
    ax.set_ylabel("label")
    ax.set_yticks(range(counts.shape[1]))
    if title:
        ax.set_title(title)
    return ax


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
