"""The library's shape: every import points down (no cycle, function-level imports included), the
compute path never loads the plotting stack, and every module says what it is for."""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "fedlib"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """fedlib modules that ``name`` imports anywhere in its code (top level or in functions)."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod for a in node.names]
        else:
            continue
        for t in targets:
            if t.split(".")[0] != "fedlib":
                continue
            while t not in MODULES and "." in t:
                t = t.rsplit(".", 1)[0]
            # importing a.b.c runs the package a.b too, unless the importer is inside a.b (then a.b is
            # the package being initialised, already under way)
            parts = t.split(".")
            for i in range(2, len(parts) + 1):
                mod = ".".join(parts[:i])
                if i == len(parts) or not name.startswith(mod + "."):
                    out.add(mod)
            if t == "fedlib":
                out.add("fedlib")
    out.discard(name)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_no_module_imports_the_package_facade():
    offenders = sorted(n for n, deps in GRAPH.items() if n != "fedlib" and "fedlib" in deps)
    assert offenders == [], f"these modules import from fedlib/__init__ (import the module instead): " \
                            f"{offenders}"


def test_there_is_no_import_cycle():
    graph = {n: {d for d in deps if d != "fedlib"} for n, deps in GRAPH.items() if n != "fedlib"}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                cycle = stack[stack.index(d):] + [d]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[n] = 2
    for n in sorted(graph):
        if n not in state:
            visit(n)


def test_the_compute_path_does_not_import_plotting(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        import fedlib
        cfg = fedlib.ExperimentConfig("fedsum", "quadratic", "bernoulli", 5,
                                      problem_args={{"num_clients": 4, "dim": 3}},
                                      participation_args={{"p": 0.5}},
                                      local_steps=2, lr_local=0.05)
        df = fedlib.sweep([cfg], {str(tmp_path)!r}, progress=False)
        assert fedlib.verify({str(tmp_path)!r} + "/" + cfg.key()).ok
        drawing = ("matplotlib", "seaborn", "fedlib.plotting", "fedlib.notebook")
        print(sorted(m for m in drawing if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_every_module_says_in_its_first_line_what_it_is_for():
    for name, path in MODULES.items():
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc and len(doc.splitlines()[0]) > 20, f"{name}: no module docstring"


#: the layers of the package, bottom up: a module imports its own layer or those below, never one
#: above (the facade ``fedlib`` sits on top of all). Packages' submodules take their package's layer.
LAYERS = {
    "base": ("fedlib._source", "fedlib._threads", "fedlib._validate", "fedlib._version", "fedlib.arithmetic",
             "fedlib.data", "fedlib.keyed", "fedlib.locks", "fedlib.paths"),
    "compute core": ("fedlib.algorithms", "fedlib.delays", "fedlib.engine", "fedlib.grouped",
                     "fedlib.models", "fedlib.objectives", "fedlib.participation", "fedlib.partition",
                     "fedlib.problems", "fedlib.tasks", "fedlib.theory", "fedlib.traces"),
    "experiments and stores": ("fedlib.config", "fedlib.extensions", "fedlib.fingerprint", "fedlib.runner",
                               "fedlib.store", "fedlib.sweeps", "fedlib.verification"),
    "evidence and studies": ("fedlib.analysis", "fedlib.campaign", "fedlib.claims", "fedlib.notebook",
                             "fedlib.plotting", "fedlib.studies"),
    "deployment": ("fedlib.__main__", "fedlib.dask_preload", "fedlib.flower"),
    "facade": ("fedlib",),
}


def _layer(module: str) -> int:
    """The index in :data:`LAYERS` of ``module`` (or of the package holding it)."""
    for i, members in enumerate(LAYERS.values()):
        if any(module == m or (m != "fedlib" and module.startswith(m + ".")) for m in members):
            return i
    raise AssertionError(f"{module}: in no layer of tests/test_architecture.py LAYERS; add it to the "
                         "layer it belongs to")


def test_every_import_points_down_the_layers():
    names = list(LAYERS)
    upward = sorted(f"{n} ({names[_layer(n)]}) imports {d} ({names[_layer(d)]})"
                    for n, deps in GRAPH.items() for d in deps if _layer(d) > _layer(n))
    assert upward == [], "imports pointing up the layers:\n" + "\n".join(upward)




def _functions(tree: ast.AST, prefix: str):
    """(qualified name, lines from its ``def`` to its last line) of every function and method."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node.end_lineno - node.lineno + 1
            yield from _functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        else:
            yield from _functions(node, prefix)


def test_no_function_is_over_60_lines():
    long = sorted(f"{name} ({n} lines)" for mod, path in MODULES.items()
                  for name, n in _functions(ast.parse(path.read_text()), mod + ".")
                  if n > 60)
    assert long == [], "functions over 60 lines (def to last line, docstring included):\n" + "\n".join(long)


def test_the_length_check_sees_a_long_function():
    body = "".join(f"        x{i} = {i}\n" for i in range(60))
    source = f"class A:\n    def f(self):\n{body}\ndef g():\n    return 1\n"
    assert dict(_functions(ast.parse(source), "m.")) == {"m.A.f": 61, "m.g": 2}
