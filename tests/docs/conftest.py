"""The docs' fenced code blocks: README.md and docs/**/*.md, with the files they include (``--8<-- "path"``).

A block is marked by the HTML comment on the line before its fence (blank lines between allowed):
``<!-- skip: reason -->`` (not run on its own: it needs a GPU, the Hub, a server the block does not start, or a
step of the tutorial before it) or ``<!-- skip-all: reason -->`` (not run at all, the tutorial included).
A Python block with ``title="name.py"`` is a file: the blocks after it in the same page see it in their
working directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)(?P<attrs>[^\n`]*)$")
MARK = re.compile(r"^\s*<!--\s*(?P<kind>skip|skip-all):\s*(?P<reason>.*?)\s*-->\s*$")
INCLUDE = re.compile(r'^--8<--\s+"(?P<path>[^":]+)(?::(?P<start>\d*))?(?::(?P<end>\d*))?"\s*$')
TITLE = re.compile(r'title="(?P<title>[^"]+)"')


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its code, and why it is not run (if it is not)."""

    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    title: str | None = None
    skip: str | None = None  # reason; not run on its own
    skip_all: bool = False  # not run by the tutorial test either

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def markdown_files() -> list[Path]:
    """README.md, every page under docs/, and the files the pages include."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files: list[Path] = []
    for page in pages:
        files.append(page)
        for line in page.read_text(encoding="utf-8").splitlines():
            if m := INCLUDE.match(line.strip()):
                included = ROOT / m["path"]
                if included not in files:
                    files.append(included)
    return files


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m["lang"]:
            i += 1
            continue
        start, indent = i, len(m["indent"])
        j = i + 1
        while j < len(lines) and not re.match(rf"^ {{{indent}}}```\s*$", lines[j]):
            j += 1
        code = "\n".join(line[indent:] for line in lines[start + 1:j]) + "\n"
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mark = MARK.match(lines[k]) if k >= 0 else None
        title = TITLE.search(m["attrs"])
        found.append(Block(path, start + 1, m["lang"], code, title["title"] if title else None,
                           mark["reason"] if mark else None, bool(mark and mark["kind"] == "skip-all")))
        i = j + 1
    return found


def all_blocks() -> list[Block]:
    return [b for f in markdown_files() for b in blocks(f)]
