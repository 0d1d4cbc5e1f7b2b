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


# -- the package order -------------------------------------------------------------------------------------------
LAYOUT = SRC.parent / "docs" / "layout.md"
_LOADERS = {"import_module", "__import__", "lazy_attributes", "moved_names", "find_spec"}
"""Calls whose string arguments name modules they import (``lazy_attributes``: lazy and moved names)."""


def _package_order() -> list[str]:
    """The packages of the table in docs/layout.md (its first table), lowest first (a row of several lists them in
    import order)."""
    lines = LAYOUT.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    order: list[str] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = line.split("|")
        if len(cells) > 2 and "`" in cells[1]:
            order += [name.strip().strip("`") for name in cells[1].split(",")]
    return order


def _references(importer: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """Every module of the toolkit ``importer`` refers to: import statements anywhere (module level, functions,
    ``TYPE_CHECKING``) and the module strings given to ``import_module``, ``lazy_attributes`` and the like."""
    found = _imports(importer, path, modules, module_level_only=False)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in _LOADERS:
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.startswith(ROOT + "."):
                target = sub.value.partition(":")[0]
                while target not in modules and "." in target:  # a name inside a module: its module
                    target = target.rpartition(".")[0]
                found.append((sub.lineno, target))
    return found


def test_the_layout_orders_every_package() -> None:
    packages = {_package(name) for name in _modules()} - {""}
    order = _package_order()
    assert len(order) == len(set(order)), f"a package is listed twice in docs/layout.md: {order}"
    assert set(order) == packages, (f"docs/layout.md lists {sorted(set(order) - packages)} that do not exist "
                                    f"and misses {sorted(packages - set(order))}")


def test_no_package_imports_a_package_above_it() -> None:
    order = {name: rank for rank, name in enumerate(_package_order())}
    modules = _modules()
    bad = []
    for importer, path in modules.items():
        own = _package(importer)
        for line, target in _references(importer, path, modules):
            other = _package(target)
            if own and other and own != other and order[other] > order[own]:
                bad.append(f"{path.relative_to(SRC.parent)}:{line}: {own} imports {other}, which docs/layout.md "
                           f"lists above it ({target})")
    assert not bad, "imports against the package order (docs/layout.md):\n" + "\n".join(sorted(set(bad)))


def test_no_circles_between_packages() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for importer, path in modules.items():
        own = _package(importer)
        for _, target in _references(importer, path, modules):
            if own and _package(target) and _package(target) != own:
                graph.setdefault(own, set()).add(_package(target))

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in graph.get(start, ()))

    circles = sorted(f"{a} -> {b} -> ... -> {a}" for a, targets in graph.items() for b in targets if reaches(b, a, {b}))
    assert not circles, "packages that import each other (counting every import):\n" + "\n".join(circles)


# -- loops between files, counting imports inside functions ------------------------------------------------------


def _runtime_imports(importer: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The toolkit's modules ``importer`` imports when it runs: module level and inside functions, not the imports
    under ``if TYPE_CHECKING:`` (types only). A package's ``__init__`` above ``importer`` is left out, as in the
    cycle test above (``from . import x`` of a sibling module counts as the sibling)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    type_only = {id(n) for stmt in ast.walk(tree)
                 if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)
                 for body in stmt.body for n in ast.walk(body)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, importer, modules)
            if not target.startswith(ROOT):
                continue
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules}
            found |= subs or ({target} & modules.keys())
    packages_above = {importer.rsplit(".", n)[0] for n in range(1, importer.count(".") + 1)}
    return found - packages_above - {importer}


def _runtime_loops(modules: dict[str, Path]) -> set[frozenset[str]]:
    """Each loop of run-time imports among ``modules``, once: the modules that reach each other."""
    graph = {name: _runtime_imports(name, path, modules) for name, path in modules.items()}
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo += graph[name]
        reach[start] = seen
    return {frozenset(n for n in reach[m] if m in reach[n]) for m in graph if m in reach[m]}


def test_no_two_files_import_each_other_at_run_time() -> None:
    loops = sorted(sorted(loop) for loop in _runtime_loops(_modules()))
    assert not loops, ("modules that import each other when they run (counting imports inside functions; move "
                       "the shared piece down into a module both import):\n"
                       + "\n".join(" <-> ".join(loop) for loop in loops))
