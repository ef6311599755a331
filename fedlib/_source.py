"""The normalised source of classes and functions, read when the code is loaded (the leaf under
:mod:`fedlib.fingerprint`, which the algorithm registry and the problem builders import)."""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import textwrap

__all__ = ["capture", "source_fingerprint"]


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def source_fingerprint(*objects) -> str | None:
    """``"sha256:<hex>"`` of the docstring-free, normalised source of ``objects`` (classes or
    functions) in order; None if any source cannot be read."""
    h = hashlib.sha256()
    for obj in objects:
        text = _normalised(obj)
        if text is None:
            return None
        h.update(text.encode())
        h.update(b"\0")
    return f"sha256:{h.hexdigest()}"


def _normalised(obj) -> str | None:
    """The docstring-free source of one class or function, read once per process (:func:`_read`);
    None where it cannot be read or kept: an unhashable callable, e.g. an instance with
    ``__call__`` and no ``__hash__``, has no entry in the cache and no fingerprint."""
    try:
        hash(obj)
    except TypeError:
        return None
    return _read(obj)


@functools.cache
def _read(obj) -> str | None:
    """The docstring-free source of one class or function, read once per process.

    ``inspect`` reads a source from the file on disk when asked, at the line numbers of the code
    loaded at import: a file edited while a long sweep runs would give the source of other code,
    and the sweep's later entries a wrong fingerprint. So the source is read once and kept, and
    :func:`capture` reads it when the code is loaded (algorithms at registration, problem
    builders with their module)."""
    try:
        src = textwrap.dedent(inspect.getsource(obj))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return None
    return ast.unparse(_strip_docstrings(tree))


def capture(obj):
    """Read and keep ``obj``'s source now, while the file holds the code just loaded; returns
    ``obj`` (a class decorator's or a registry's pass-through)."""
    _normalised(obj)
    return obj
