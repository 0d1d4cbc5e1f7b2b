"""What the grid worlds share: directions, the action model, the observation base and path finding."""

from __future__ import annotations

import random
import uuid
from collections import deque
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Literal

from pydantic import Field, model_validator

from ...core import Action, Observation
from ._render import Cell

__all__ = [
    "DELTAS",
    "DIRECTIONS",
    "NO_MOVE_HINT",
    "OPPOSITE",
    "Direction",
    "GridAction",
    "GridObservation",
    "Pos",
    "legal_moves",
    "load_readme",
    "make_rng",
    "new_episode_id",
    "shortest_path",
    "step_to",
]

Direction = Literal["up", "down", "left", "right"]
#: Directions in ``action_id`` order, clockwise as in 2048 and Gymnasium's CliffWalking.
DIRECTIONS: tuple[Direction, ...] = ("up", "right", "down", "left")
#: (row, column) change of each direction; row 0 is the top row.
DELTAS: dict[str, tuple[int, int]] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
OPPOSITE: dict[str, Direction] = {"up": "down", "down": "up", "left": "right", "right": "left"}

Pos = tuple[int, int]

NO_MOVE_HINT = (
    'send {"direction": "up"|"down"|"left"|"right"} or {"action_id": 0-3} (0 up, 1 right, 2 down, 3 left)'
)


class GridAction(Action):
    """One move: a ``direction`` name or its ``action_id`` (0 up, 1 right, 2 down, 3 left)."""

    direction: Direction | None = Field(default=None, description='"up", "down", "left" or "right".')
    action_id: int | None = Field(
        default=None, ge=0, le=3, strict=True, description="The direction as an id: 0 up, 1 right, 2 down, 3 left."
    )

    @model_validator(mode="after")
    def _ids_agree(self) -> GridAction:
        if self.direction is not None and self.action_id is not None and DIRECTIONS[self.action_id] != self.direction:
            raise ValueError(
                f"direction {self.direction!r} and action_id {self.action_id} ({DIRECTIONS[self.action_id]!r}) "
                "disagree; give only one of them"
            )
        return self

    def resolved(self) -> Direction | None:
        """The direction this action names, or None when it names none."""
        if self.direction is not None:
            return self.direction
        return None if self.action_id is None else DIRECTIONS[self.action_id]


class GridObservation(Observation):
    """Fields every grid world observes: the grid as cell codes and as text, and the agent's cell."""

    grid: list[list[int]] = Field(default_factory=list, description="Cell codes, row 0 at the top (see Cell).")
    text: str = Field(default="", description="The grid drawn one character per cell.")
    agent: list[int] = Field(default_factory=lambda: [0, 0], description="The agent's [row, column].")
    error: str | None = Field(default=None, description="Why the last action was rejected, or null.")
    truncated: bool = Field(default=False, description="The episode ended because it ran out of steps.")
    legal_actions: list[int] = Field(
        default_factory=list,
        description="The action ids a move may take (OpenSpiel's field): all four while the episode runs, none after.",
    )


def legal_moves(done: bool) -> list[int]:
    """Every move id (a move into a wall is legal too) while the episode runs, none once it is done."""
    return [] if done else list(range(len(DIRECTIONS)))


def make_rng(seed: int | None) -> random.Random:
    """A generator seeded by ``seed``, or by the OS when it is None."""
    return random.Random(seed)


def new_episode_id(episode_id: str | None) -> str:
    """The given episode id, or a fresh random one."""
    return episode_id or uuid.uuid4().hex


def step_to(pos: Pos, direction: str) -> Pos:
    """The cell one move from ``pos`` in ``direction``."""
    dr, dc = DELTAS[direction]
    return pos[0] + dr, pos[1] + dc


def shortest_path(grid: Sequence[Sequence[int]], start: Pos, goal: Pos,
                  blocked: Iterable[int] = (Cell.WALL, Cell.PIT)) -> list[Direction] | None:
    """Breadth-first search: the directions of a shortest path from ``start`` to ``goal``.

    Args:
        grid: Cell codes; leaving the grid is impossible.
        start: (row, column) to start from.
        goal: (row, column) to reach.
        blocked: Cell codes that cannot be entered.

    Returns:
        The moves in order, or None when ``goal`` cannot be reached.

    Example:
        >>> shortest_path([[0, 1, 3], [0, 0, 0]], (0, 0), (0, 2))
        ['down', 'right', 'right', 'up']
    """
    blocked_codes = set(blocked)
    came: dict[Pos, tuple[Pos, Direction] | None] = {start: None}
    queue = deque([start])
    while queue:
        pos = queue.popleft()
        if pos == goal:
            path: list[Direction] = []
            link = came[pos]
            while link is not None:
                pos, direction = link
                path.append(direction)
                link = came[pos]
            return path[::-1]
        for direction in DIRECTIONS:
            r, c = step_to(pos, direction)
            if 0 <= r < len(grid) and 0 <= c < len(grid[r]) and (r, c) not in came and grid[r][c] not in blocked_codes:
                came[(r, c)] = (pos, direction)
                queue.append((r, c))
    return None


def load_readme(name: str) -> str:
    """The text of a Markdown file shipped in this package."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
