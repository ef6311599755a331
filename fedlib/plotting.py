"""Plotting helpers (matplotlib + seaborn) shared by the notebooks."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

__all__ = ["participation_heatmap", "project_root", "save_figure", "save_table", "set_style"]


def set_style() -> None:
    """Seaborn style used by every figure of the project."""
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.1)


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The folder holding fedlib's ``pyproject.toml`` above ``start`` (default: cwd), so that
    notebooks write to the same ``figures/`` whether run from ``notebooks/`` or the repo root.
    Falls back to ``start`` itself."""
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
        if (d / "pyproject.toml").is_file() and (d / "fedlib").is_dir():
            return d
    return here


def output_dir(out_dir: str | os.PathLike) -> Path:
    """Resolve ``out_dir`` and create it. Relative paths are taken against ``$FEDLIB_OUT_ROOT``
    when set (``make test`` points it at a temporary folder, so re-running the notebooks under
    nbval leaves the committed ``figures/`` alone), else against :func:`project_root`."""
    p = Path(out_dir)
    if not p.is_absolute():
        p = Path(os.environ.get("FEDLIB_OUT_ROOT") or project_root()) / p
    p.mkdir(parents=True, exist_ok=True)
    return p


def notebook_defaults(notebook: str) -> dict:
    """The literal defaults of a notebook's ``parameters`` cell, read from
    ``notebooks/<notebook>.ipynb`` (or its ``.py`` pair) of the project."""
    import json
    root = project_root(Path(__file__).parent)
    ipynb = root / "notebooks" / f"{notebook}.ipynb"
    if ipynb.exists():
        cells = json.loads(ipynb.read_text())["cells"]
        src = next(("".join(c["source"]) for c in cells
                    if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    else:
        text = (root / "notebooks" / f"{notebook}.py").read_text()
        src = text.split('# %% tags=["parameters"]', 1)[1].split("# %%", 1)[0]
    if src is None:
        raise ValueError(f"notebook: {ipynb} has no cell tagged 'parameters'")
    ns: dict = {}
    exec(compile(src, f"{notebook} parameters", "exec"), ns)   # literals only, by convention
    return {k: v for k, v in ns.items() if not k.startswith("__")}


def notebook_output_dir(notebook: str, params: dict, out_dir: str = "",
                        ignore: tuple[str, ...] = ("progress", "out_dir", "workers")) -> str:
    """Where a notebook writes its figures and tables.

    ``out_dir`` if given; else ``figures/<notebook>`` -- the committed figures -- only when
    every parameter has its default value (``ignore`` lists parameters that do not change
    results); else ``results/notebooks/<notebook>-<overrides>/``, so that a run with other
    parameters (``papermill -p ...``) never overwrites the committed figures. Prints the choice.
    """
    if out_dir:
        return out_dir
    defaults = notebook_defaults(notebook)
    changed = {k: params[k] for k, v in defaults.items()
               if k not in ignore and k in params and params[k] != v}
    if not changed:
        return f"figures/{notebook}"
    tag = "-".join(f"{k}={v}" for k, v in sorted(changed.items()))
    tag = "".join(c if c.isalnum() or c in "=-_." else "_" for c in tag)[:120]
    target = f"results/notebooks/{notebook}-{tag}"
    print(f"parameters differ from the defaults ({', '.join(f'{k}={v!r}' for k, v in changed.items())}): "
          f"figures and tables go to {target}/, not to the committed figures/{notebook}/")
    return target


def log_loss_axis(ax: plt.Axes, start: float, factor: float = 3.0) -> plt.Axes:
    """A log-scale loss axis capped at ``factor`` times the starting loss ``start``: a run that
    diverges leaves the plot through the top instead of squeezing every other curve."""
    ax.set_yscale("log")
    if np.isfinite(start) and start > 0:
        bottom, top = ax.get_ylim()
        ax.set_ylim(bottom, min(top, factor * start))
    return ax


def save_figure(fig: plt.Figure, out_dir: str | os.PathLike, name: str) -> list[Path]:
    """Write ``fig`` as ``name.png`` and ``name.pdf`` under ``out_dir``; returns the paths.

    File metadata carry no dates, so the same figure gives the same bytes."""
    d = output_dir(out_dir)
    paths = [d / f"{name}.png", d / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=150, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(paths[1], bbox_inches="tight", metadata={"CreationDate": None, "Creator": None,
                                                           "Producer": None})
    return paths


def save_table(df: pd.DataFrame, out_dir: str | os.PathLike, name: str,
               float_format: str = "%.4g") -> list[Path]:
    """Write ``df`` as ``name.csv`` and ``name.md`` (GitHub Markdown) under ``out_dir``."""
    d = output_dir(out_dir)
    paths = [d / f"{name}.csv", d / f"{name}.md"]
    df.to_csv(paths[0], index=False, float_format=float_format)
    paths[1].write_text(_markdown(df, float_format) + "\n")
    return paths


def _markdown(df: pd.DataFrame, float_format: str) -> str:
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return "n/a" if np.isnan(v) else float_format % v
        return str(v)
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *rows])


def participation_heatmap(ax: plt.Axes, active: np.ndarray, rounds: int | None = None,
                          title: str | None = None) -> plt.Axes:
    """Clients (rows) x rounds (columns) heat-map of a participation matrix [T, N]."""
    a = np.asarray(active)[: rounds or len(active)].T
    ax.imshow(a > 0, aspect="auto", interpolation="nearest", cmap="Greys", vmin=0, vmax=1)
    ax.set_xlabel("round t")
    ax.set_ylabel("client i")
    if title:
        ax.set_title(title)
    ax.grid(False)
    return ax


def label_distribution_bars(ax: plt.Axes, counts: np.ndarray, title: str | None = None) -> plt.Axes:
    """FedSUM Fig. 4: one stacked bar per client (height = its samples), coloured by label.

    Args:
        counts: label-count matrix [N, classes] (``Partition.counts``).
    """
    counts = np.asarray(counts)
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
    counts = np.asarray(counts, dtype=float)
    ii, cc = np.nonzero(counts)
    ax.scatter(ii, cc, s=max_size * counts[ii, cc] / counts.max(), alpha=0.6, color="tab:red")
    ax.set_xlabel("client index")
    ax.set_ylabel("label")
    ax.set_yticks(range(counts.shape[1]))
    if title:
        ax.set_title(title)
    return ax
