"""A griffe extension for the API reference: this code base titles its doctest sections ``Example:``.

Griffe's Google parser knows ``Examples:`` only; under ``Example:`` the ``>>>`` lines would render as prose
(and their output lists as broken cross-references); Sphinx roles (``:class:`X```) render as plain code. The docstring is renamed before it is parsed; a
docstring with doctests outside any section gets them fenced as ``pycon`` code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)
_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj):`~?([^`]+)`")


class ExampleSections(griffe.Extension):
    """Read ``Example:`` as ``Examples:`` in every docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None:
            return
        text = _ROLE.sub(r"`\1`", obj.docstring.value)  # Sphinx roles, as plain code
        obj.docstring.value = text
        if _EXAMPLE.search(text):
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", text)
        elif ">>>" in text and "Examples:" not in text:
            obj.docstring.value = _fence_doctests(text)


def _fence_doctests(text: str) -> str:
    """Each paragraph that starts with ``>>>`` becomes a fenced ``pycon`` block."""
    out: list[str] = []
    inside = False
    for line in text.split("\n"):
        if not inside and line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}```pycon")
            inside = True
        elif inside and not line.strip():
            out.append(f"{indent}```")
            inside = False
        out.append(line)
    if inside:
        out.append(f"{indent}```")
    return "\n".join(out)
