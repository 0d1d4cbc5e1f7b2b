"""SnakeEnvironment: steer a growing snake to seeded food without hitting the edge or itself."""

from __future__ import annotations

import random
from typing import Annotated, Any

from pydantic import Field, validate_call

from ...core import State
from ...server import Environment
from ._common import (
    OPPOSITE,
    Direction,
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

__all__ = ["SnakeAction", "SnakeEnvironment", "SnakeObservation", "SnakeState"]

DEATH_REWARD = -1.0
FOOD_REWARD = 1.0


class SnakeAction(GridAction):
    """Turn the snake: ``direction`` or ``action_id`` (0 up, 1 right, 2 down, 3 left); neither keeps its heading."""


class SnakeObservation(GridObservation):
    """The board (head ``agent``, body, food), the snake's heading, length and score."""

    body: list[list[int]] = Field(default_factory=list, description="The snake's cells, head first.")
    food: list[int] | None = Field(default=None, description="The food's [row, column]; null once the board is full.")
    heading: Direction = Field(default="right", description="The direction the snake moves in.")
    length: int = Field(default=0, description="Cells the snake occupies.")
    score: int = Field(default=0, description="Food eaten this episode.")
    dead: bool = Field(default=False, description="The snake hit the edge or itself.")
    cause: str | None = Field(default=None, description='"wall" or "self" once dead, "full" when the board is filled.')
    note: str | None = Field(default=None, description="What the last action could not do (a reversal is ignored).")
    max_steps: int = Field(default=0, description="Steps after which the episode is truncated.")


class SnakeState(State):
    """Episode state plus the snake, the food and the episode's settings."""

    body: list[list[int]] = Field(default_factory=list)
    food: list[int] | None = None
    heading: Direction = "right"
    score: int = 0
    size: int = 0
    max_steps: int = 0
    cause: str | None = None
    done: bool = False
    truncated: bool = False


class SnakeEnvironment(Environment[SnakeAction, SnakeObservation, SnakeState]):
    """Snake on a size x size board: eating food pays +1 and grows the snake; dying pays -1 and ends it.

    The snake starts with length 3 in the middle, heading right; food appears on a free
    cell drawn from the seed. Leaving the board or running into its own body kills it
    (the cell the tail leaves this step is free). Turning straight back is ignored. An
    action without a direction keeps the heading. Truncated after ``max_steps`` steps.

    Example:
        >>> env = SnakeEnvironment()
        >>> obs = env.reset(seed=0, size=5)
        >>> obs.agent, obs.body, obs.heading
        ([2, 2], [[2, 2], [2, 1], [2, 0]], 'right')
        >>> env.step(SnakeAction(direction="up")).agent
        [1, 2]
    """

    name = "snake"
    readme = load_readme("snake.md")
    action_type = SnakeAction
    observation_type = SnakeObservation
    state_type = SnakeState

    def __init__(self) -> None:
        self._rng: random.Random = make_rng(None)
        self._state = SnakeState()
        self.reset()

    @validate_call
    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              size: Annotated[int, Field(ge=4, le=32)] = 8,
              max_steps: Annotated[int, Field(ge=1)] = 500) -> SnakeObservation:
        """Start a snake of length 3 in the middle of the board, heading right.

        Args:
            seed: Seeds the food's placements.
            episode_id: Id of the episode; a random one when omitted.
            size: Side of the board (4-32).
            max_steps: Steps before truncation.
        """
        self._rng = make_rng(seed)
        mid = size // 2
        self._state = SnakeState(
            episode_id=new_episode_id(episode_id), body=[[mid, mid], [mid, mid - 1], [mid, mid - 2]],
            size=size, max_steps=max_steps,
        )
        self._state.food = self._place_food()
        return self._observe(reward=0.0)

    def step(self, action: SnakeAction) -> SnakeObservation:
        state = self._state
        if state.done:
            return self._observe(reward=0.0, error="the episode is over; call reset to start a new one")
        state.step_count += 1
        wanted = action.resolved() or state.heading
        note = None
        if wanted == OPPOSITE[state.heading]:
            note = f"turning straight back ({wanted}) is not allowed; kept heading {state.heading}"
        else:
            state.heading = wanted
        head = step_to((state.body[0][0], state.body[0][1]), state.heading)
        eating = state.food is not None and list(head) == state.food
        cause = self._collision(head, eating)
        if cause is not None:
            state.done, state.cause = True, cause
            return self._observe(reward=DEATH_REWARD, note=note)
        state.body.insert(0, list(head))
        reward = 0.0
        if eating:
            state.score += 1
            reward = FOOD_REWARD
            state.food = self._place_food()
            if state.food is None:
                state.done, state.cause = True, "full"
                return self._observe(reward=reward, note=note)
        else:
            state.body.pop()
        if state.step_count >= state.max_steps:
            state.done = state.truncated = True
        return self._observe(reward=reward, note=note)

    @property
    def state(self) -> SnakeState:
        return self._state

    def _collision(self, head: Pos, eating: bool) -> str | None:
        """``"wall"``, ``"self"`` or None for the head's next cell (the tail moves on unless eating)."""
        size = self._state.size
        if not (0 <= head[0] < size and 0 <= head[1] < size):
            return "wall"
        body = self._state.body if eating else self._state.body[:-1]
        return "self" if list(head) in body else None

    def _place_food(self) -> list[int] | None:
        """A free cell drawn from the episode's generator, or None when the snake fills the board."""
        size = self._state.size
        taken = {(r, c) for r, c in self._state.body}
        free = [[r, c] for r in range(size) for c in range(size) if (r, c) not in taken]
        return self._rng.choice(free) if free else None

    def _observe(self, reward: float, **extra: Any) -> SnakeObservation:
        state = self._state
        grid = [[int(Cell.EMPTY)] * state.size for _ in range(state.size)]
        if state.food is not None:
            grid[state.food[0]][state.food[1]] = Cell.FOOD
        for r, c in state.body[1:]:
            grid[r][c] = Cell.BODY
        grid[state.body[0][0]][state.body[0][1]] = Cell.AGENT
        return SnakeObservation(
            grid=grid, text=render_text(grid), agent=list(state.body[0]), body=[list(p) for p in state.body],
            food=None if state.food is None else list(state.food), heading=state.heading, length=len(state.body),
            score=state.score, dead=state.cause in ("wall", "self"), cause=state.cause, max_steps=state.max_steps,
            truncated=state.truncated, done=state.done, reward=reward,
            legal_actions=legal_moves(state.done), **extra,
        )
