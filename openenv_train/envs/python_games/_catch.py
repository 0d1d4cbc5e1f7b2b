"""Catch: OpenSpiel's ``catch`` rules, encodings and action ids, and its env."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ._env import OpenSpielEnvironment, load_readme
from ._game import CHANCE_PLAYER, TERMINAL_PLAYER, GameState
from ._models import OpenSpielObservation
from ._opponents import OpponentName

__all__ = ["CatchEnvironment", "CatchState"]

LEFT, STAY, RIGHT = 0, 1, 2
_NAMES = ("LEFT", "STAY", "RIGHT")
_MAX_SIZE = 100


class CatchState(GameState):
    """A ball falls one row per move from a random column; move the paddle under it.

    Chance drops the ball in row 0 of a uniform column; the paddle starts in the
    bottom row's middle column; each move (0 left, 1 stay, 2 right) moves the ball
    down one row and the paddle at most one column.

    Example:
        >>> s = CatchState(rows=3, columns=3)
        >>> s.apply_action(0)  # chance: ball in column 0
        >>> s.apply_action(LEFT); s.apply_action(STAY)
        >>> s.is_terminal(), s.returns()
        (True, [1.0])
    """

    game_name = "catch"

    def __init__(self, rows: int = 10, columns: int = 5) -> None:
        super().__init__()
        for key, value, low in (("rows", rows, 2), ("columns", columns, 1)):
            if not low <= value <= _MAX_SIZE:
                raise ValueError(f"catch {key}={value} is out of range; use {low}..{_MAX_SIZE}")
        self.rows, self.columns = rows, columns
        self.ball_row = self.ball_col = self.paddle_col = -1

    @property
    def num_distinct_actions(self) -> int:
        return 3

    @property
    def params(self) -> dict[str, Any]:
        return {"rows": self.rows, "columns": self.columns}

    @property
    def _started(self) -> bool:
        return self.ball_row >= 0

    def current_player(self) -> int:
        if not self._started:
            return CHANCE_PLAYER
        return TERMINAL_PLAYER if self.is_terminal() else 0

    def is_terminal(self) -> bool:
        return self._started and self.ball_row >= self.rows - 1

    def returns(self) -> list[float]:
        if not self.is_terminal():
            return [0.0]
        return [1.0] if self.ball_col == self.paddle_col else [-1.0]

    def _player_actions(self) -> list[int]:
        return [LEFT, STAY, RIGHT]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._started:
            return super().chance_outcomes()
        return [(col, 1.0 / self.columns) for col in range(self.columns)]

    def _apply(self, action: int) -> None:
        if not self._started:
            self.ball_row, self.ball_col, self.paddle_col = 0, action, self.columns // 2
            return
        self.ball_row += 1
        self.paddle_col = min(max(self.paddle_col + action - 1, 0), self.columns - 1)

    def observation_tensor(self, player: int) -> list[float]:
        tensor = [0.0] * (self.rows * self.columns)
        if self._started:
            tensor[self.ball_row * self.columns + self.ball_col] = 1.0
            tensor[(self.rows - 1) * self.columns + self.paddle_col] = 1.0
        return tensor

    def observation_string(self, player: int) -> str:
        return "".join("".join(self._cell(r, c) for c in range(self.columns)) + "\n" for r in range(self.rows))

    def _cell(self, row: int, col: int) -> str:
        if row == self.rows - 1 and col == self.paddle_col:
            return "x"
        return "o" if (row, col) == (self.ball_row, self.ball_col) else "."

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE_PLAYER:
            return f"Initialized ball to {action}"
        return _NAMES[action]


class CatchEnvironment(OpenSpielEnvironment[CatchState]):
    """Catch a falling ball with a paddle (OpenSpiel's ``catch``).

    Action ids: 0 left, 1 stay, 2 right. The ball drops from a random column of a
    10x5 grid (``rows``/``columns`` options) one row per step; the last step pays
    1 if the paddle is under the ball, else -1. One player, so ``opponent`` is ignored.
    """

    name = "catch"
    readme = load_readme("catch.md")
    game_type = CatchState

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              opponent: OpponentName = "random", agent_player: Literal[0] = 0,
              illegal_action_reward: float = 0.0,
              rows: Annotated[int, Field(ge=2, le=_MAX_SIZE)] = 10,
              columns: Annotated[int, Field(ge=1, le=_MAX_SIZE)] = 5) -> OpenSpielObservation:
        """Start a game with the ball in a column drawn from ``seed``.

        Args:
            seed: Seeds the ball's column; same seed and actions, same episode.
            episode_id: Id reported in the state (default: a fresh uuid).
            opponent: Accepted for uniformity; catch has no opponent.
            agent_player: Must be 0 (one player).
            illegal_action_reward: Reward of a step whose action is rejected.
            rows: Grid height (OpenSpiel's ``rows``); an episode has rows-1 steps.
            columns: Grid width (OpenSpiel's ``columns``).
        """
        return self._start(CatchState(rows, columns), seed=seed, episode_id=episode_id, opponent=opponent,
                           agent_player=agent_player, illegal_action_reward=illegal_action_reward)
