"""Fingerprints of the code that computes a run: the algorithm's update rule and the problem's
builder, so that a stored run whose code has changed since it was stored is noticed.

A fingerprint is the SHA-256 of the code's source with its docstrings removed, parsed and
unparsed again (:func:`ast.unparse`), so comments, blank lines, quoting and docstrings do not
count, and any change of what the code does does. It covers:

* the algorithm: its class and every class between it and :class:`fedlib.algorithms.Algorithm`
  in its method resolution order (a variant's parent, a researcher's subclass of a built-in
  algorithm), not the shared base class, the engine or torch;
* the problem: the builder function registered under the config's problem name.

Code whose source cannot be read (a class typed into a plain interactive interpreter) has no
fingerprint: its entries are stored unchecked rather than flagged.
"""

from __future__ import annotations

from ._source import capture, source_fingerprint

__all__ = ["capture", "config_fingerprint", "source_fingerprint", "stale_parts"]


def _algorithm_classes(cls: type) -> list[type]:
    from .algorithms.base import Algorithm
    return [c for c in cls.__mro__ if c is not Algorithm and issubclass(c, Algorithm)]


def config_fingerprint(config) -> dict[str, str | None]:
    """``{"algorithm": ..., "problem": ...}``: the fingerprints (:func:`source_fingerprint`) of a
    config's algorithm classes and problem builder as they are now."""
    from . import algorithms, problems
    builder = problems.builder(config.problem)
    return {"algorithm": source_fingerprint(*_algorithm_classes(algorithms.get(config.algorithm))),
            "problem": None if builder.__name__ == "<lambda>" else source_fingerprint(builder)}


def stale_parts(stored: dict | None, config) -> list[str]:
    """Which parts of a stored fingerprint (an entry's ``meta["code"]``) differ from the code as
    it is now: ``[]`` when they agree, when the entry has none (stored before fingerprints) or
    when either side could not be computed."""
    if not stored:
        return []
    now = config_fingerprint(config)
    return [part for part, fp in stored.items() if fp and now.get(part) and now[part] != fp]


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
