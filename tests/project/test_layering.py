"""The layers import downward only (docs/design.md, "Layout"):

    API (python/estuary) -> backends -> passes -> dialects -> base
    API -> importers -> dialects -> base

base imports nothing of ours; no folder below the API imports the API package (`estuary`, so
`from estuary import ...` too) or any of its modules, relative imports included; nothing under
passes/ imports backends; and the API package's own modules import each other without a loop.
"""
import ast
import os

import pytest

from helpers import ROOT  # noqa: E402 - the repository
API_DIR = os.path.join(ROOT, "python", "estuary")
# every module of the public API package (python/estuary), by import name
API = tuple(f"estuary.{name[:-3]}" for name in sorted(os.listdir(API_DIR))
            if name.endswith(".py") and name not in ("__init__.py", "__main__.py"))
OURS = ("estuary.dialects", "estuary.importers", "estuary.passes", "estuary.backends") + API
# what each folder may not import
FORBIDDEN = {
    "base": OURS,
    "dialects": API + ("estuary.passes", "estuary.importers", "estuary.backends"),
    "importers": API + ("estuary.passes", "estuary.backends"),
    "passes": API + ("estuary.importers", "estuary.backends"),
    "backends": API + ("estuary.importers",),
}


def package_of(path):
    """The dotted package a source file belongs to (`backends/llvm_cpu/host.py` is in
    estuary.backends.llvm_cpu; python/estuary/*.py in estuary)."""
    rel = os.path.relpath(os.path.dirname(os.path.abspath(path)), ROOT).split(os.sep)
    if rel[:2] == ["python", "estuary"]:
        rel = rel[2:]
    return ".".join(["estuary"] + [part for part in rel if part])


def imported_modules(path, typing_too=True, package=None):
    """Modules a file imports (names and `from X import name` as X.name), also inside functions,
    relative imports resolved against `package` (the file's own, by default); without
    `typing_too`, not those under `if TYPE_CHECKING:` (type annotations only)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = package if package is not None else package_of(path)

    def walk(node):
        if (not typing_too and isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # `from .. import x`: relative to the file's package
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module
            yield module
            for alias in node.names:
                yield f"{module}.{alias.name}"
        for child in ast.iter_child_nodes(node):
            yield from walk(child)

    yield from walk(tree)


def _python_files(folder):
    for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(dirpath, name)


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_imports_go_down(folder):
    bad = []
    for path in _python_files(folder):
        bad += [f"{os.path.relpath(path, ROOT)}: {m}" for m in set(imported_modules(path))
                if m == "estuary" or any(m == f or m.startswith(f + ".") for f in FORBIDDEN[folder])]
    assert not bad, "imports against the layering:\n" + "\n".join(sorted(bad))


def test_relative_imports_are_resolved(tmp_path):
    """A relative import cannot hide an upward one: `from .. import compiler` in backends/ is
    estuary.compiler, and `from estuary import Model` names the API package itself."""
    source = tmp_path / "m.py"
    source.write_text("from .. import compiler\nfrom .pipeline import run\nfrom estuary import Model\n")
    got = set(imported_modules(str(source), package="estuary.backends"))
    assert {"estuary.compiler", "estuary.backends.pipeline.run", "estuary"} <= got, got
    assert package_of(os.path.join(ROOT, "backends", "llvm_cpu", "host.py")) == "estuary.backends.llvm_cpu"
    assert package_of(os.path.join(API_DIR, "compiler.py")) == "estuary"


def test_api_package_has_no_import_loop():
    """The API modules' imports of each other form no cycle (imports inside functions would hide
    one, so those count too; annotations under TYPE_CHECKING do not)."""
    graph = {}
    for module in API:
        path = os.path.join(API_DIR, module.split(".")[1] + ".py")
        graph[module] = {m for m in imported_modules(path, typing_too=False) if m in API and m != module}
    seen, stack = set(), []

    def visit(m):
        if m in stack:
            raise AssertionError("import loop: " + " -> ".join(stack[stack.index(m):] + [m]))
        if m in seen:
            return
        stack.append(m)
        for n in sorted(graph[m]):
            visit(n)
        stack.pop()
        seen.add(m)

    for module in API:
        visit(module)


def test_importing_a_lower_layer_loads_no_api_module():
    """`import estuary.dialects` (or importers, passes, backends) runs estuary/__init__.py, which
    must not load the compiler or the runtime."""
    import subprocess
    import sys

    code = ("import sys, estuary.dialects, estuary.importers, estuary.passes; "
            "print(sorted(m for m in sys.modules if m in %r))" % (API,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_every_target_declares_its_lowering():
    """Each backend declares its target to the lowering registry once its rules are registered
    (the GPU targets without rules of their own too), and llvm-cpu's rules live in backends."""
    from estuary.backends import targets
    from estuary.passes.lowering import RULES, TARGETS

    assert set(TARGETS) == set(targets.TARGETS)
    cpu_rules = {name for name, target in RULES if target == "llvm-cpu"}
    assert {"conv2d", "matmul", "lstm", "quantized_conv2d"} <= cpu_rules
    assert all(RULES.origin((name, "llvm-cpu")).startswith("estuary.backends.llvm_cpu.") for name in cpu_rules)


def test_lowering_refuses_an_undeclared_target():
    """Lowering for a target whose backend was never imported is an internal error, not an
    artefact built with the generic rules alone."""
    import subprocess
    import sys

    code = """
import estuary.passes.lower
from estuary.base.errors import InternalError
from estuary.base.options import CompileOptions
from estuary.importers.mlir_text import parse_mlir
from estuary.passes import PASSES
nn = parse_mlir('func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\\n'
                '  %0 = "nn.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>\\n  return %0 : tensor<4xf32>\\n}\\n', "m.mlir")
try:
    PASSES["lower-nn-to-tosa"](nn, CompileOptions())
except InternalError as e:
    print(e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "no backend has registered the lowering for target 'llvm-cpu'" in out, out
