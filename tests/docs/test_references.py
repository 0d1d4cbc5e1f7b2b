"""Every project file the text names exists: README.md, docs/, benchmarks/RESULTS.md, and the docstrings and comments
of ``openenv_train/`` and ``benchmarks/`` may not send a reader to a file the repository does not have.

A reference is a path-like name ending in ``.md``, ``.py``, ``.yaml`` or ``.yml`` (checked from the repository root
when its first folder is one of the project's top-level folders; a bare upper-case ``NAME.md``, such as
``README.md``, at the root, beside the referring file, in docs/ or in benchmarks/), or a relative markdown link
(``[text](path)``, from the page's folder). Names inside URLs, and files that code writes or that belong to other
repositories (``summary.md`` of a run, ``server/app.py`` of an env folder), are not the project's and are not
checked. The dated records under ``benchmarks/history/`` keep their text as it was.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.docs.conftest import ROOT

TOP = tuple(name for name in ("benchmarks", "configs", "docs", "experiments", "openenv_train", "tests", ".ci")
            if (ROOT / name).is_dir())
"""The project's top-level folders: a path that starts with one of them names a file of the project."""
PATH = re.compile(r"(?<![\w./:<>{}*$~-])((?:[\w.-]+/)+[\w-][\w.-]*\.(?:md|py|ya?ml))(?![\w/])")
UPPER = re.compile(r"(?<![\w./:<>{}*$~-])([A-Z][A-Z0-9_]*\.md)(?![\w/])")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _markdown() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "benchmarks").glob("*.md"))]


def _python() -> list[Path]:
    return [*sorted((ROOT / "openenv_train").rglob("*.py")), *sorted((ROOT / "benchmarks").glob("*.py"))]


def _prose(path: Path) -> str:
    """A Python file's comments and docstrings (triple-quoted strings), one per line."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if token.type == tokenize.COMMENT or (
                token.type == tokenize.STRING and token.string.lstrip("rbuRBU").startswith(('"""', "'''"))):
            found.append(token.string)
    return "\n".join(found)


def dead_references(path: Path, text: str) -> list[str]:
    """The project files ``text`` (from ``path``) names that do not exist."""
    dead = []
    for match in PATH.finditer(text):
        ref = match[1]
        first = ref.split("/")[0]
        if first in TOP and not (ROOT / ref).is_file():
            dead.append(ref)
    for match in UPPER.finditer(text):
        ref = match[1]
        if not any((folder / ref).is_file() for folder in (ROOT, path.parent, ROOT / "docs", ROOT / "benchmarks")):
            dead.append(ref)
    if path.suffix == ".md":
        for match in LINK.finditer(text):
            ref = match[1].split("#")[0]
            if ref and not re.match(r"^[a-z][a-z+.-]*:", ref) and not (path.parent / ref).exists():
                dead.append(ref)
    return list(dict.fromkeys(dead))


@pytest.mark.parametrize("kind", ["markdown", "python"])
def test_every_referenced_project_file_exists(kind: str) -> None:
    files = _markdown() if kind == "markdown" else _python()
    dead = []
    for path in files:
        text = path.read_text(encoding="utf-8") if kind == "markdown" else _prose(path)
        dead += [f"{path.relative_to(ROOT)}: {ref}" for ref in dead_references(path, text)]
    assert not dead, "references to files the project does not have:\n" + "\n".join(dead)


def test_a_dead_reference_is_found(tmp_path: Path) -> None:
    page = ROOT / "docs" / "page.md"
    text = ("See DESIGN.md, [the guide](guides/nowhere.md), `openenv_train/nowhere.py` and `benchmarks/RESULTS.md`;"
            " not https://github.com/o/r/blob/main/docs/x.md nor a run's summary.md, ok: [home](index.md#the-main-job)")
    assert dead_references(page, text) == ["openenv_train/nowhere.py", "DESIGN.md", "guides/nowhere.md"]
