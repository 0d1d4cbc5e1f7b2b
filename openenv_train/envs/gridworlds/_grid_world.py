"""GridWorldEnvironment: the classic gridworld with a goal, pits and optionally slippery moves."""

from __future__ import annotations

import random
from typing import Annotated, Any

from pydantic import Field, validate_call

from ...core import State
from ...server import Environment
from ._common import (
    DIRECTIONS,
    NO_MOVE_HINT,
    OPPOSITE,
    Direction,
    GridAction,
    GridObservation,
    Pos,
    legal_moves,
    load_readme,
    make_rng,
    new_episode_id,
    shortest_path,
    step_to,
)
from ._render import Cell, render_text

__all__ = ["GridWorldAction", "GridWorldEnvironment", "GridWorldObservation", "GridWorldState", "parse_layout"]

#: Characters of a ``layout`` row and the cells they stand for (S is the start, an empty cell).
LAYOUT_CHARS: dict[str, int] = {".": Cell.EMPTY, "S": Cell.EMPTY, "#": Cell.WALL, "X": Cell.PIT, "G": Cell.GOAL}
_LAYOUT_TRIES = 200


class GridWorldAction(GridAction):
    """One move: ``direction`` or ``action_id`` (0 up, 1 right, 2 down, 3 left)."""


class GridWorldObservation(GridObservation):
    """The grid (walls, pits, goal, agent), the goal's cell and what the last move did."""

    goal: list[int] = Field(default_factory=lambda: [0, 0], description="The goal's [row, column].")
    moved: Direction | None = Field(default=None, description="The direction actually taken (differs on a slip).")
    slipped: bool = Field(default=False, description="The last move slipped sideways.")
    blocked: bool = Field(default=False, description="The last move hit a wall or the edge and did not move.")
    max_steps: int = Field(default=0, description="Steps after which the episode is truncated.")


class GridWorldState(State):
    """Episode state plus the agent, the goal, the outcome and the episode's settings."""

    agent: list[int] = Field(default_factory=lambda: [0, 0])
    goal: list[int] = Field(default_factory=lambda: [0, 0])
    outcome: str | None = Field(default=None, description='"goal", "pit", "truncated" or null while running.')
    slip_prob: float = 0.0
    step_cost: float = 0.0
    max_steps: int = 0
    done: bool = False
    truncated: bool = False


def parse_layout(rows: list[str]) -> tuple[list[list[int]], Pos, Pos]:
    """A layout (rows of ``. S G X #``) to its grid of cell codes, start and goal.

    Raises:
        ValueError: the rows are ragged, use another character, or lack exactly one S and one G.

    Example:
        >>> parse_layout(["S.X", "..G"])
        ([[0, 0, 4], [0, 0, 3]], (0, 0), (1, 2))
    """
    if not rows or any(len(row) != len(rows[0]) for row in rows) or not rows[0]:
        raise ValueError(f"layout must be non-empty rows of equal length, got {rows!r}")
    found: dict[str, list[Pos]] = {"S": [], "G": []}
    grid: list[list[int]] = []
    for r, row in enumerate(rows):
        for c, char in enumerate(row):
            if char not in LAYOUT_CHARS:
                raise ValueError(f"layout row {r} has {char!r} at column {c}; use only {' '.join(LAYOUT_CHARS)}")
            if char in found:
                found[char].append((r, c))
        grid.append([int(LAYOUT_CHARS[char]) for char in row])
    for char, where in found.items():
        if len(where) != 1:
            raise ValueError(f"layout needs exactly one {char!r}, found {len(where)}")
    return grid, found["S"][0], found["G"][0]


def random_layout(size: int, pits: int, walls: int, rng: random.Random) -> list[list[int]]:
    """A size x size grid, start top-left and goal bottom-right, with pits and walls off a safe path.

    Raises:
        ValueError: no draw left the goal reachable without crossing a pit.
    """
    start, goal = (0, 0), (size - 1, size - 1)
    cells = [(r, c) for r in range(size) for c in range(size) if (r, c) not in (start, goal)]
    if pits + walls > len(cells):
        raise ValueError(f"{pits} pits and {walls} walls do not fit in a {size}x{size} grid; use fewer")
    for _ in range(_LAYOUT_TRIES):
        grid = [[int(Cell.EMPTY)] * size for _ in range(size)]
        grid[goal[0]][goal[1]] = Cell.GOAL
        chosen = rng.sample(cells, pits + walls)
        for i, (r, c) in enumerate(chosen):
            grid[r][c] = Cell.PIT if i < pits else Cell.WALL
        if shortest_path(grid, start, goal) is not None:
            return grid
    raise ValueError(f"could not place {pits} pits and {walls} walls in a {size}x{size} grid with a safe path; use fewer")


class GridWorldEnvironment(Environment[GridWorldAction, GridWorldObservation, GridWorldState]):
    """A gridworld: reach the goal (+1) without falling into a pit (-1); each other step costs ``step_cost``.

    The layout is drawn from the seed (pits and walls, always with a safe path from the
    top-left start to the bottom-right goal) or given as rows of text. With ``slip_prob`` > 0
    a move slips to one of the two perpendicular directions with that probability, drawn
    from the seed. Walls and the edge block moves (the agent stays). Truncated after ``max_steps``.

    Example:
        >>> env = GridWorldEnvironment()
        >>> obs = env.reset(layout=["S.X", "..G"])
        >>> obs.agent, obs.goal
        ([0, 0], [1, 2])
        >>> env.step(GridWorldAction(direction="down")).reward
        -0.01
    """

    name = "grid_world"
    readme = load_readme("grid_world.md")
    action_type = GridWorldAction
    observation_type = GridWorldObservation
    state_type = GridWorldState

    def __init__(self) -> None:
        self._base: list[list[int]] = []
        self._rng = make_rng(None)
        self._state = GridWorldState()
        self.reset()

    @validate_call
    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              size: Annotated[int, Field(ge=2, le=30)] = 5,
              pits: Annotated[int, Field(ge=0)] = 3,
              walls: Annotated[int, Field(ge=0)] = 2,
              layout: list[str] | None = None,
              slip_prob: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0,
              step_cost: Annotated[float, Field(ge=0.0, le=1.0)] = 0.01,
              max_steps: Annotated[int, Field(ge=1)] = 100) -> GridWorldObservation:
        """Start an episode on a seeded random layout, or on ``layout``.

        Args:
            seed: Seeds the layout and the slips.
            episode_id: Id of the episode; a random one when omitted.
            size: Side of a random layout.
            pits: Pits in a random layout.
            walls: Walls in a random layout.
            layout: Rows of ``. S G X #`` (empty, start, goal, pit, wall); overrides size, pits and walls.
            slip_prob: Chance that a move slips to a perpendicular direction.
            step_cost: Subtracted from the reward of each step that ends in neither goal nor pit.
            max_steps: Steps before truncation.

        Raises:
            ValueError: the layout is malformed, or the pits and walls leave no safe path.
        """
        self._rng = make_rng(seed)
        if layout is not None:
            grid, start, goal = parse_layout(layout)
        else:
            grid = random_layout(size, pits, walls, self._rng)
            start, goal = (0, 0), (size - 1, size - 1)
        self._base = grid
        self._state = GridWorldState(
            episode_id=new_episode_id(episode_id), agent=list(start), goal=list(goal),
            slip_prob=slip_prob, step_cost=step_cost, max_steps=max_steps,
        )
        return self._observe(reward=0.0)

    def step(self, action: GridWorldAction) -> GridWorldObservation:
        state = self._state
        if state.done:
            return self._observe(reward=0.0, error="the episode is over; call reset to start a new one")
        state.step_count += 1
        direction = action.resolved()
        if direction is None:
            return self._finish_step(reward=0.0, error=f"no move given: {NO_MOVE_HINT}")
        moved = self._slip(direction)
        r, c = step_to((state.agent[0], state.agent[1]), moved)
        blocked = not (0 <= r < len(self._base) and 0 <= c < len(self._base[0])) or self._base[r][c] == Cell.WALL
        if not blocked:
            state.agent = [r, c]
        info: dict[str, Any] = {"moved": moved, "slipped": moved != direction, "blocked": blocked}
        cell = self._base[state.agent[0]][state.agent[1]]
        if cell in (Cell.GOAL, Cell.PIT):
            state.done = True
            state.outcome = "goal" if cell == Cell.GOAL else "pit"
            return self._observe(reward=1.0 if cell == Cell.GOAL else -1.0, **info)
        return self._finish_step(reward=0.0 - state.step_cost, **info)

    @property
    def state(self) -> GridWorldState:
        return self._state

    def _slip(self, direction: Direction) -> Direction:
        """The direction actually taken: ``direction``, or a perpendicular one with ``slip_prob``."""
        if self._state.slip_prob <= 0.0 or self._rng.random() >= self._state.slip_prob:
            return direction
        sideways = [d for d in DIRECTIONS if d not in (direction, OPPOSITE[direction])]
        return self._rng.choice(sideways)

    def _finish_step(self, reward: float, **extra: Any) -> GridWorldObservation:
        state = self._state
        if state.step_count >= state.max_steps:
            state.done = state.truncated = True
            state.outcome = "truncated"
        return self._observe(reward=reward, **extra)

    def _observe(self, reward: float, **extra: Any) -> GridWorldObservation:
        state = self._state
        grid = [row[:] for row in self._base]
        grid[state.agent[0]][state.agent[1]] = Cell.AGENT
        return GridWorldObservation(
            grid=grid, text=render_text(grid), agent=list(state.agent), goal=list(state.goal),
            max_steps=state.max_steps, truncated=state.truncated, done=state.done, reward=reward,
            legal_actions=legal_moves(state.done), **extra,
        )
