"""What a config needs from outside fedlib: the modules that define its algorithm, problem,
participation kind and dataset when a user registered them (:func:`fedlib.algorithms.register`,
:func:`fedlib.problems.register_problem`, :func:`fedlib.participation.register_kind`,
:func:`fedlib.data.register_dataset`).

A sweep's worker processes import these modules before computing, so that a user's extension is
known there as it is in the sweep's own process; an extension defined in ``__main__`` (a notebook
cell, a script run directly) cannot be imported by another process and is refused before
anything runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from . import algorithms, data, participation, problems
from ._validate import InputError

__all__ = ["worker_modules"]


def _module(obj: object) -> str:
    fn = getattr(obj, "func", obj)                                      # a functools.partial
    return getattr(fn, "__module__", None) or ""


def _definitions(config) -> Iterator[tuple[str, str, str]]:
    """(what, name, defining module) of the config's algorithm, problem, participation kind and
    dataset."""
    yield "algorithm", config.algorithm, _module(algorithms.get(config.algorithm))
    yield "problem", config.problem, problems.get_problem(config.problem).module
    yield "participation kind", config.participation, participation.get_kind(config.participation).module
    dataset = dict(config.problem_args or ()).get("dataset")
    if isinstance(dataset, str) and dataset in data.available():
        yield "dataset", dataset, data.get_dataset(dataset).module


def worker_modules(configs: Iterable, field: str = "workers") -> tuple[str, ...]:
    """The modules (not fedlib's) a worker process must import to know the configs' algorithms,
    problems, participation kinds and datasets, in first-use order. ``field``: the argument that
    sent the runs to other processes, named in the error (``workers``, ``executor``, ``devices``).

    Raises:
        InputError: one of them is defined in ``__main__`` (a notebook cell or a script), which
            worker processes cannot import; raised before any run.
    """
    out: list[str] = []
    for c in configs:
        for what, name, mod in _definitions(c):
            if mod.split(".")[0] == "fedlib":
                continue
            if not mod or mod == "__main__" or mod.startswith("__"):
                raise InputError(f"{field}: {what} {name!r} is defined in {mod or 'no module'} (a notebook "
                                 "cell or a script), which worker processes cannot import; define it in a "
                                 "module and import that module before sweeping, or compute in this process "
                                 "(workers=1, no executor)")
            if mod not in out:
                out.append(mod)
    return tuple(out)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
