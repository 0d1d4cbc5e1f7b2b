"""One error tree: every exception class the project defines derives from ``OpenEnvTrainError``.

The check reads the source with ``ast`` (nothing is imported, so optional dependencies do not matter): a class is
an exception when one of its bases is a built-in exception or another exception class of the project.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import openenv_train

SRC = Path(openenv_train.__file__).resolve().parent
ROOT = "OpenEnvTrainError"
BUILTIN = {name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)}
#: Control flow, not errors: raised to leave user code that may catch ``Exception``, never shown to a user.
NOT_ERRORS = {"_Final": "envs/repl/_cell.py: a BaseException that ends a cell's run"}
PENDING: dict[str, str] = {}


def _bases(node: ast.ClassDef) -> list[str]:
    names = []
    for base in node.bases:
        if isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Attribute):
            names.append(base.attr)
        elif isinstance(base, ast.Name):
            names.append(base.id)
    return names


def _classes() -> dict[str, list[tuple[str, list[str]]]]:
    """Class name -> (where, its bases) for every class of the package."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where = f"{path.relative_to(SRC.parent)}:{node.lineno}"
                found.setdefault(node.name, []).append((where, _bases(node)))
    return found


def test_every_exception_derives_from_the_root() -> None:
    classes = _classes()

    def ancestors(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        out = {name}
        for _, bases in classes.get(name, []):
            for base in bases:
                if base not in seen:
                    out |= ancestors(base, seen | {name})
        return out

    bad = []
    for name, defs in classes.items():
        for where, bases in defs:
            above: set[str] = set()
            for base in bases:
                above |= ancestors(base)
            is_exception = bool(above & BUILTIN) or ROOT in above
            if any(issubclass(getattr(builtins, b), Warning) for b in above & BUILTIN):  # warned, not raised
                continue
            if is_exception and name != ROOT and ROOT not in above and name not in {**NOT_ERRORS, **PENDING}:
                bad.append(f"{where}: {name}({', '.join(bases)})")
    assert not bad, f"exceptions outside the tree of {ROOT} (add it as a base):\n" + "\n".join(sorted(bad))


def test_the_root_catches_errors_of_every_package() -> None:
    from openenv_train.core import OpenEnvTrainError
    from openenv_train.harbor import HarborError, TaskError
    from openenv_train.trace import TraceError

    assert issubclass(TraceError, OpenEnvTrainError) and not issubclass(TraceError, HarborError)
    assert issubclass(TaskError, HarborError) and issubclass(HarborError, OpenEnvTrainError)
