"""No import circles in src/. Every import counts: at module level, under TYPE_CHECKING, inside functions,
and importlib.import_module("...") with a literal name. Read from the source with ast: fast, imports nothing."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
SKIPPED = ("builtin", "migrations")  # problem files and Alembic revisions: data, not modules of the package


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def origin(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def dependencies(path: Path, modules: set[str]) -> set[str]:
    """`from package import name` depends on package.name where that is a module, else on the package."""
    module, is_package = module_name(path), path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names} & modules
        elif isinstance(node, ast.ImportFrom):
            source = origin(node, module, is_package)
            named = {f"{source}.{alias.name}" for alias in node.names}
            found |= named & modules
            if named - modules:
                found |= {source} & modules
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)):
            found |= {str(node.args[0].value)} & modules
    return found - {module}


def import_graph() -> dict[str, set[str]]:
    paths = [p for p in SRC.rglob("*.py") if not any(part in SKIPPED for part in p.parts)]
    modules = {module_name(p) for p in paths}
    return {module_name(p): dependencies(p, modules) for p in paths}


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "kernelgrade.evaluator.judge.pipeline" in graph["kernelgrade.evaluator"]  # module level
    assert "kernelgrade.evaluator.wire.tensorfile" in graph["kernelgrade.evaluator.child.run_child"]  # from pkg
    assert "kernelgrade.serve" in graph["kernelgrade.cli.service_commands"]  # inside a function
    assert "kernelgrade.cli.service_commands" in graph["kernelgrade.cli"]  # import_module("...")


def test_no_import_cycles_in_src() -> None:
    try:
        TopologicalSorter(import_graph()).prepare()
    except CycleError as found:
        raise AssertionError(f"import cycle: {' -> '.join(found.args[1])}") from None
