"""MazeEnvironment: walk a seeded perfect maze from the top-left cell to the exit at the bottom-right."""

from __future__ import annotations

import random
from typing import Annotated, Any

from pydantic import Field, validate_call

from ...core import State
from ...server import Environment
from ._common import (
    DIRECTIONS,
    NO_MOVE_HINT,
    GridAction,
    GridObservation,
    Pos,
    legal_moves,
    load_readme,
    make_rng,
    new_episode_id,
    step_to,
)
from ._render import Cell, render_text

__all__ = ["MazeAction", "MazeEnvironment", "MazeObservation", "MazeState", "generate_maze"]

MazeSize = Annotated[int, Field(ge=2, le=40, description="Cells per side; the grid is 2*size+1 wide with walls.")]


class MazeAction(GridAction):
    """One move in the maze: ``direction`` or ``action_id`` (0 up, 1 right, 2 down, 3 left)."""


class MazeObservation(GridObservation):
    """The maze (walls, exit, agent), where the exit is, and whether the last move hit a wall."""

    exit: list[int] = Field(default_factory=lambda: [0, 0], description="The exit's [row, column].")
    size: int = Field(default=0, description="Cells per side of the maze.")
    blocked: bool = Field(default=False, description="The last move ran into a wall and did not move.")
    max_steps: int = Field(default=0, description="Steps after which the episode is truncated.")


class MazeState(State):
    """Episode state plus the agent, the exit and the episode's settings."""

    agent: list[int] = Field(default_factory=lambda: [1, 1])
    exit: list[int] = Field(default_factory=lambda: [1, 1])
    size: int = 0
    max_steps: int = 0
    step_penalty: float = 0.0
    solved: bool = False
    done: bool = False
    truncated: bool = False


def generate_maze(size: int, rng: random.Random) -> list[list[int]]:
    """A perfect maze (exactly one path between any two cells) by randomized depth-first search.

    Cell (r, c) of the maze sits at grid (2r+1, 2c+1); the cells between them are walls or openings.

    Example:
        >>> grid = generate_maze(2, random.Random(0))
        >>> len(grid), sum(row.count(0) for row in grid)
        (5, 7)
    """
    n = 2 * size + 1
    grid = [[int(Cell.WALL)] * n for _ in range(n)]
    grid[1][1] = Cell.EMPTY
    visited = {(0, 0)}
    stack = [(0, 0)]
    while stack:
        r, c = stack[-1]
        unvisited = [
            (nr, nc) for nr, nc in (step_to((r, c), d) for d in DIRECTIONS)
            if 0 <= nr < size and 0 <= nc < size and (nr, nc) not in visited
        ]
        if not unvisited:
            stack.pop()
            continue
        nr, nc = rng.choice(unvisited)
        grid[r + nr + 1][c + nc + 1] = Cell.EMPTY  # the wall between the two cells
        grid[2 * nr + 1][2 * nc + 1] = Cell.EMPTY
        visited.add((nr, nc))
        stack.append((nr, nc))
    return grid


class MazeEnvironment(Environment[MazeAction, MazeObservation, MazeState]):
    """A seeded perfect maze: reach the exit for reward 1.0; walls block moves.

    Each seed draws one maze; moves into walls are legal but leave the agent in place.
    Reaching the exit pays 1.0 and ends the episode; every other step pays ``-step_penalty``
    (0.0 by default); after ``max_steps`` steps the episode is truncated.

    Example:
        >>> env = MazeEnvironment()
        >>> obs = env.reset(seed=0, size=2)
        >>> print(obs.text)
        #####
        #@#.#
        #.#.#
        #..G#
        #####
        >>> env.step(MazeAction(direction="up")).blocked
        True
    """

    name = "maze"
    readme = load_readme("maze.md")
    action_type = MazeAction
    observation_type = MazeObservation
    state_type = MazeState

    def __init__(self) -> None:
        self._walls: list[list[int]] = []
        self._state = MazeState()
        self.reset()

    @validate_call
    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              size: MazeSize = 6,
              max_steps: Annotated[int, Field(ge=1)] | None = None,
              step_penalty: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0) -> MazeObservation:
        """Draw a new maze.

        Args:
            seed: Seeds the maze; the same seed gives the same maze.
            episode_id: Id of the episode; a random one when omitted.
            size: Cells per side (2-40).
            max_steps: Steps before truncation; 4 * size * size when omitted.
            step_penalty: Subtracted from the reward of every step that does not reach the exit.
        """
        self._walls = generate_maze(size, make_rng(seed))
        last = 2 * size - 1
        self._state = MazeState(
            episode_id=new_episode_id(episode_id), agent=[1, 1], exit=[last, last], size=size,
            max_steps=max_steps if max_steps is not None else 4 * size * size, step_penalty=step_penalty,
        )
        return self._observe(reward=0.0)

    def step(self, action: MazeAction) -> MazeObservation:
        state = self._state
        if state.done:
            return self._observe(reward=0.0, error="the episode is over; call reset to start a new one")
        state.step_count += 1
        direction = action.resolved()
        if direction is None:
            return self._finish_step(reward=0.0, error=f"no move given: {NO_MOVE_HINT}")
        r, c = step_to((state.agent[0], state.agent[1]), direction)
        if self._walls[r][c] == Cell.WALL:  # the border is all wall, so (r, c) is always on the grid
            return self._finish_step(reward=0.0 - state.step_penalty, blocked=True)
        state.agent = [r, c]
        if state.agent == state.exit:
            state.solved = state.done = True
            return self._observe(reward=1.0)
        return self._finish_step(reward=0.0 - state.step_penalty)

    @property
    def state(self) -> MazeState:
        return self._state

    def _finish_step(self, reward: float, **extra: Any) -> MazeObservation:
        state = self._state
        if state.step_count >= state.max_steps:
            state.done = state.truncated = True
        return self._observe(reward=reward, **extra)

    def _observe(self, reward: float, **extra: Any) -> MazeObservation:
        state = self._state
        grid = [row[:] for row in self._walls]
        exit_pos: Pos = (state.exit[0], state.exit[1])
        grid[exit_pos[0]][exit_pos[1]] = Cell.GOAL
        grid[state.agent[0]][state.agent[1]] = Cell.AGENT
        return MazeObservation(
            grid=grid, text=render_text(grid), agent=list(state.agent), exit=list(state.exit), size=state.size,
            max_steps=state.max_steps, truncated=state.truncated, done=state.done, reward=reward,
            legal_actions=legal_moves(state.done), **extra,
        )
