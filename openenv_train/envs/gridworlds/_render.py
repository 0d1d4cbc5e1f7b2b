"""Cell codes shared by the grid worlds and their text rendering."""

from __future__ import annotations

import enum
from collections.abc import Sequence

__all__ = ["Cell", "render_text"]


class Cell(enum.IntEnum):
    """What a cell of an observation's ``grid`` holds; the same codes in every grid world."""

    EMPTY = 0
    WALL = 1
    AGENT = 2
    GOAL = 3
    PIT = 4
    BODY = 5
    FOOD = 6


#: One character per cell code in the ``text`` rendering.
CHARS: dict[int, str] = {
    Cell.EMPTY: ".",
    Cell.WALL: "#",
    Cell.AGENT: "@",
    Cell.GOAL: "G",
    Cell.PIT: "X",
    Cell.BODY: "o",
    Cell.FOOD: "*",
}


def render_text(grid: Sequence[Sequence[int]]) -> str:
    """Render a grid of cell codes as lines of characters, row 0 first.

    Example:
        >>> render_text([[1, 1, 1], [1, 2, 3], [1, 1, 1]])
        '###\\n#@G\\n###'
    """
    return "\n".join("".join(CHARS[cell] for cell in row) for row in grid)
