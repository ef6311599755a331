"""Paths of the project (no third-party import): its root folder and output folders."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fedlib_project", "output_dir", "project_root"]


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The folder holding fedlib's ``pyproject.toml`` above ``start`` (default: cwd), so that
    notebooks write to the same ``figures/`` whether run from ``notebooks/`` or the repo root.
    Falls back to ``start`` itself."""
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
        if (d / "pyproject.toml").is_file() and (d / "fedlib").is_dir():
            return d
    return here


def fedlib_project() -> Path | None:
    """The project checkout this fedlib package was imported from (the folder holding its
    ``pyproject.toml`` and ``notebooks/``), or None for an installed package: where its notebooks'
    stores and the run cache are, whatever the working directory."""
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").is_file() and (here / "notebooks").is_dir():
        return here
    return None


def output_dir(out_dir: str | os.PathLike) -> Path:
    """Resolve ``out_dir`` and create it. Relative paths are taken against ``$FEDLIB_OUT_ROOT``
    when set (``make test`` points it at a temporary folder, so re-running the notebooks under
    nbval leaves the committed ``figures/`` alone), else against :func:`project_root`."""
    p = Path(out_dir)
    if not p.is_absolute():
        p = Path(os.environ.get("FEDLIB_OUT_ROOT") or project_root()) / p
    p.mkdir(parents=True, exist_ok=True)
    return p


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
