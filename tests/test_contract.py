"""The public boundary's contract, tested by generated inputs: every public function (each name in
``fedlib.__all__`` and in its modules' ``__all__``) given wrong types and out-of-range values for
its parameters -- None, strings, negative and huge integers, NaN and infinities, lists, dicts,
paths that do not exist -- either works or raises one of fedlib's own errors (an
:class:`fedlib.InputError` naming what it refuses; :class:`fedlib.data.DataNotFoundError`;
:class:`fedlib.store.CorruptEntry`), never a plain ValueError, a TypeError,
AttributeError, IndexError, MemoryError or an error from inside numpy, torch or pandas; and no
stored entry is written. Generated with hypothesis (a few examples per function, so the whole
file runs in about a minute); the catalogue of named cases is tests/test_bad_inputs.py."""

import importlib
import inspect
import os
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fedlib
from fedlib.data import DataNotFoundError
from fedlib.store import CorruptEntry

ROOT = Path(__file__).resolve().parents[1]

#: the modules whose ``__all__`` make the public boundary
MODULES = ["fedlib", "fedlib.algorithms", "fedlib.analysis", "fedlib.arithmetic", "fedlib.campaign",
           "fedlib.claims", "fedlib.config", "fedlib.data", "fedlib.delays", "fedlib.engine",
           "fedlib.extensions", "fedlib.grouped",
           "fedlib.fingerprint", "fedlib.keyed", "fedlib.models", "fedlib.notebook", "fedlib.objectives",
           "fedlib.participation", "fedlib.partition", "fedlib.paths", "fedlib.plotting", "fedlib.problems",
           "fedlib.runner", "fedlib.store", "fedlib.sweeps", "fedlib.tasks", "fedlib.theory",
           "fedlib.traces", "fedlib.verification", "fedlib.flower", "fedlib.studies"]

#: public callables the generated inputs leave out, each with the reason
EXCLUDED = {
    "algorithms.Algorithm": "the base class of algorithms: the runner constructs it with a problem and an "
                            "engine it built; a user subclasses it and is checked by run()/validate()",
}

#: wrong types and out-of-range values a user might pass; paths are relative to the test's
#: temporary working directory (so a function that writes where it is told writes there)
FIXED = [None, "", "x", "../missing", -1, 0, 10**12, -(10**12), 2**70, float("nan"), float("inf"), -0.5, 1.5,
         [], [1, 2], [None], {}, {"a": 1}, (), Path("missing/none.npz"), True, b"x"]
BAD = st.one_of(st.sampled_from(FIXED), st.integers(-(2**40), 2**40),
                st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3))


def _public() -> dict[str, object]:
    import fedlib.campaign  # noqa: F401  (modules fedlib does not import by itself)
    import fedlib.flower  # noqa: F401
    import fedlib.notebook  # noqa: F401
    import fedlib.plotting  # noqa: F401
    import fedlib.studies  # noqa: F401
    import fedlib.traces  # noqa: F401
    out, seen = {}, set()
    for m in MODULES:
        mod = importlib.import_module(m)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if obj is None or inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
                continue
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                continue                                  # raised by fedlib, not called by users
            try:
                inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            seen.add(id(obj))
            out[f"{m.removeprefix('fedlib').lstrip('.') or 'fedlib'}.{name}"] = obj
    return out


PUBLIC = _public()


def _params(fn) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(fn).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]


def fedlibs_own(e: BaseException) -> bool:
    """An error fedlib raised on purpose: one of its classes (a refusal is an InputError, so
    ``except fedlib.InputError`` catches them all; not a ValueError from inside numpy or torch
    that fedlib let through, nor a plain ValueError of fedlib's own)."""
    return isinstance(e, (fedlib.InputError, DataNotFoundError, CorruptEntry))


#: functions whose refusals stay plain ValueErrors: the built-in problem builders, whose source is
#: part of stored runs' fingerprints (editing it marks every stored run stale); the public
#: boundary (``_validate.guard``) raises theirs as InputErrors
PLAIN_VALUE_ERRORS = {("problems.py", "random_quadratic"), ("problems.py", "neural")}


def test_fedlib_raises_its_refusals_as_input_errors_but_in_the_fingerprinted_builders():
    """Every ``raise ValueError(...)`` (or a ValueError built to be raised) in fedlib's source is
    an InputError, so ``except fedlib.InputError`` catches each refusal, but in the functions of
    :data:`PLAIN_VALUE_ERRORS`; and those raise an InputError through the public boundary. The
    docstrings say so too (a Raises section names ``InputError``, not ``ValueError``)."""
    import ast
    plain = set()
    for path in sorted((ROOT / "fedlib").rglob("*.py")):
        for top in ast.parse(path.read_text()).body:               # a top-level function, class or line
            for node in ast.walk(top):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ValueError":
                    plain.add((path.name, getattr(top, "name", "<module>")))
    assert plain == PLAIN_VALUE_ERRORS
    # and the docstrings' Raises sections name the class a caller should catch
    said = sorted(f"{p.name}:{i}" for p in (ROOT / "fedlib").rglob("*.py")
                  for i, line in enumerate(p.read_text().splitlines(), 1)
                  if line.strip().startswith("ValueError:"))
    assert not said, f"Raises sections that say ValueError for fedlib's InputError: {said}"
    from fedlib import problems
    for bad in ((0.0, 1.0), (2.0, 1.0), "x"):
        with pytest.raises(fedlib.InputError, match=r"^curvature: "):
            problems.random_quadratic(curvature=bad)
    with pytest.raises(fedlib.InputError, match=r"^model: "):
        problems.neural(dataset="digits", model="fedsum_cifar10_cnn")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("contract")
    old, env = os.getcwd(), os.environ.get("FEDLIB_OUT_ROOT")
    os.chdir(d)
    os.environ["FEDLIB_OUT_ROOT"] = str(d / "out")
    yield d
    os.chdir(old)
    if env is None:
        os.environ.pop("FEDLIB_OUT_ROOT", None)
    else:
        os.environ["FEDLIB_OUT_ROOT"] = env


def test_the_boundary_is_every_public_function_less_the_stated_exclusions():
    assert len(PUBLIC) > 150 and set(EXCLUDED) <= set(PUBLIC)
    assert all(reason for reason in EXCLUDED.values())
    for name in ("fedlib.run", "fedlib.sweep", "fedlib.load", "fedlib.verify", "data.load",
                 "participation.build", "plotting.save_figure", "claims.paired", "notebook.store_path",
                 "studies.fedsum_setup"):
        assert name in PUBLIC, name


@pytest.mark.parametrize("name", sorted(set(PUBLIC) - set(EXCLUDED)))
@settings(max_examples=int(os.environ.get("FEDLIB_CONTRACT_EXAMPLES", "6")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_wrong_values_meet_only_fedlibs_own_errors(name, data, workdir):
    fn = PUBLIC[name]
    params = _params(fn)
    kwargs = {}
    for p in params:          # required ones always wrong; optional ones wrong or left at their default
        if p.default is p.empty or data.draw(st.booleans(), label=f"set {p.name}"):
            kwargs[p.name] = data.draw(BAD, label=p.name)
    if params and not kwargs:                             # defaults alone are a valid call: one wrong
        kwargs[params[0].name] = data.draw(BAD, label=params[0].name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(**kwargs)
        except Exception as e:  # noqa: BLE001 - the property: which exceptions escape
            assert fedlibs_own(e), (f"{name}({kwargs!r}) raised {type(e).__name__}: {e}; expected one of "
                                    "fedlib's own errors naming the argument")
    assert not list(workdir.rglob("meta.json")), f"{name}({kwargs!r}) stored an entry"


def test_the_generated_inputs_wrote_nothing_into_the_project():
    for d in ("results", "figures"):
        recent = [p for p in (ROOT / d).rglob("*") if p.is_file() and p.stat().st_mtime > _START]
        assert not recent, recent[:3]


_START = __import__("time").time()
