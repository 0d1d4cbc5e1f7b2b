"""Import rules of the package: packages talk through their public names, and modules import no cycle.

Both checks read the source with ``ast`` (nothing is imported), so they are fast and see lazy imports too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import openenv_train

SRC = Path(openenv_train.__file__).resolve().parent
ROOT = "openenv_train"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _resolve(node: ast.ImportFrom, importer: str, modules: dict[str, Path]) -> str:
    """The absolute module a ``from X import ...`` names."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".") if _is_package(importer, modules) else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(importer: str, path: Path, modules: dict[str, Path], *,
             module_level_only: bool) -> list[tuple[int, str]]:
    """``(line, absolute module)`` for each module of the toolkit ``importer`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    nodes: list[ast.AST]
    if module_level_only:
        nodes = []
        for stmt in tree.body:  # the statements run at import: top level and under a top-level if/try
            if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
                continue
            nodes.extend(ast.walk(stmt) if isinstance(stmt, (ast.If, ast.Try)) else [stmt])
    else:
        nodes = list(ast.walk(tree))
    found: list[tuple[int, str]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith(ROOT)]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, importer, modules)
            if not target.startswith(ROOT):
                continue
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            found += [(node.lineno, target)] + [(node.lineno, s) for s in subs]
    return [(line, name) for line, name in found if name in modules]


def _package(name: str) -> str:
    """The top-level package of the toolkit a module belongs to (``openenv_train.trace._writer`` -> ``trace``)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_module_imports_another_packages_private_module() -> None:
    modules = _modules()
    bad = []
    for importer, path in modules.items():
        for line, target in _imports(importer, path, modules, module_level_only=False):
            own, other = _package(importer), _package(target)
            private = [p for p in target.split(".")[2:] if p.startswith("_")]
            if own and other and own != other and private:
                bad.append(f"{path.relative_to(SRC.parent)}:{line} imports {target}")
    assert not bad, ("import these through the package's public names (its __init__ exports), not its private "
                     "modules:\n" + "\n".join(bad))


def test_no_import_cycles_between_modules() -> None:
    modules = _modules()
    graph = {name: sorted({t for _, t in _imports(name, path, modules, module_level_only=True) if t != name})
             for name, path in modules.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in graph:
        if name not in state:
            visit(name)
    # a package's __init__ importing its own modules, which import the package back for a sibling, is how
    # Python packages work; a cycle is a problem when it runs through modules of two packages or two modules
    real = [c for c in cycles if len({m for m in c if not _is_package(m, modules)}) > 1
            or len({_package(m) for m in c}) > 1]
    assert not real, "import cycles (module-level imports):\n" + "\n".join(" -> ".join(c) for c in real)
