"""Connect four: OpenSpiel's ``connect_four`` rules, encodings and action ids, and its env."""

from __future__ import annotations

import random
from typing import Annotated, Any, Literal

from pydantic import Field

from ._env import OpenSpielEnvironment, load_readme
from ._game import TERMINAL_PLAYER, GameState
from ._models import OpenSpielObservation
from ._opponents import OpponentName

__all__ = ["ConnectFourEnvironment", "ConnectFourState"]

#: A cell holds the player whose piece is in it (0 is x, 1 is o), or EMPTY; this is also the
#: plane index of OpenSpiel's (non-egocentric) observation tensor.
EMPTY = 2
_SYMBOLS = "xo."
_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))
_MAX_SIZE = 32


class ConnectFourState(GameState):
    """Drop pieces into columns (action id = column); row 0 is the bottom; x (player 0) moves first.

    Example:
        >>> s = ConnectFourState()
        >>> for col in (3, 0, 3, 0, 3, 0, 3):
        ...     s.apply_action(col)
        >>> s.is_terminal(), s.returns()
        (True, [1.0, -1.0])
    """

    game_name = "connect_four"
    num_players = 2

    def __init__(self, rows: int = 6, columns: int = 7, x_in_row: int = 4) -> None:
        super().__init__()
        for key, value, low in (("rows", rows, 1), ("columns", columns, 1), ("x_in_row", x_in_row, 2)):
            if not low <= value <= _MAX_SIZE:
                raise ValueError(f"connect_four {key}={value} is out of range; use {low}..{_MAX_SIZE}")
        self.rows, self.columns, self.x_in_row = rows, columns, x_in_row
        self.board = [EMPTY] * (rows * columns)
        self._player = 0
        self._outcome: int | None = None  # the winner, or EMPTY for a draw

    @property
    def num_distinct_actions(self) -> int:
        return self.columns

    @property
    def params(self) -> dict[str, Any]:
        return {"rows": self.rows, "columns": self.columns, "x_in_row": self.x_in_row}

    def current_player(self) -> int:
        return TERMINAL_PLAYER if self.is_terminal() else self._player

    def is_terminal(self) -> bool:
        return self._outcome is not None

    def returns(self) -> list[float]:
        if self._outcome == 0:
            return [1.0, -1.0]
        if self._outcome == 1:
            return [-1.0, 1.0]
        return [0.0, 0.0]

    def _player_actions(self) -> list[int]:
        top = (self.rows - 1) * self.columns
        return [col for col in range(self.columns) if self.board[top + col] == EMPTY]

    def _apply(self, action: int) -> None:
        row = self._height(action)
        self.board[row * self.columns + action] = self._player
        # A line can only appear through the newest piece, and an earlier one would have ended the game.
        if self._line_through(row, action, self._player):
            self._outcome = self._player
        elif not self._player_actions():
            self._outcome = EMPTY
        self._player = 1 - self._player

    def _height(self, col: int) -> int:
        row = 0
        while row < self.rows and self.board[row * self.columns + col] != EMPTY:
            row += 1
        return row

    def _line_through(self, row: int, col: int, player: int) -> bool:
        for dr, dc in _DIRECTIONS:
            count = 1
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < self.rows and 0 <= c < self.columns and self.board[r * self.columns + c] == player:
                    count += 1
                    r, c = r + sign * dr, c + sign * dc
            if count >= self.x_in_row:
                return True
        return False

    def observation_tensor(self, player: int) -> list[float]:
        size = self.rows * self.columns
        tensor = [0.0] * (3 * size)
        for index, cell in enumerate(self.board):
            tensor[cell * size + index] = 1.0
        return tensor

    def observation_string(self, player: int) -> str:
        rows = ("".join(_SYMBOLS[self.board[r * self.columns + c]] for c in range(self.columns)) + "\n"
                for r in reversed(range(self.rows)))
        return "".join(rows)

    def action_to_string(self, player: int, action: int) -> str:
        return f"{'xo'[player]}{action}"

    def illegal_reason(self, action: int) -> str:
        return f"column {action} is full"

    def heuristic_action(self, rng: random.Random) -> int:
        """Win, else block, else a move that does not hand the opponent a win, nearest the centre."""
        legal = self.legal_actions()
        me = self._player
        for player in (me, 1 - me):
            completing = [col for col in legal if self._completes(col, player)]
            if completing:
                return rng.choice(completing)
        pool = [col for col in legal if not self._gives_win_above(col, me)] or legal
        centre = (self.columns - 1) / 2
        nearest = min(abs(col - centre) for col in pool)
        return rng.choice([col for col in pool if abs(col - centre) == nearest])

    def _completes(self, col: int, player: int) -> bool:
        row = self._height(col)
        index = row * self.columns + col
        self.board[index] = player
        try:
            return self._line_through(row, col, player)
        finally:
            self.board[index] = EMPTY

    def _gives_win_above(self, col: int, player: int) -> bool:
        row = self._height(col)
        if row + 1 >= self.rows:
            return False
        index = row * self.columns + col
        self.board[index] = player
        try:
            return self._completes(col, 1 - player)
        finally:
            self.board[index] = EMPTY


class ConnectFourEnvironment(OpenSpielEnvironment[ConnectFourState]):
    """Connect four against a built-in opponent (OpenSpiel's ``connect_four``).

    Action id = column to drop a piece into (0..columns-1); pieces fall to the lowest
    free row. The agent is x (player 0, moves first) unless ``agent_player=1``. The
    final step pays 1 for a win, -1 for a loss, 0 for a draw.
    """

    name = "connect4"
    readme = load_readme("connect4.md")
    game_type = ConnectFourState

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              opponent: OpponentName = "random", agent_player: Literal[0, 1] = 0,
              illegal_action_reward: float = 0.0,
              rows: Annotated[int, Field(ge=1, le=_MAX_SIZE)] = 6,
              columns: Annotated[int, Field(ge=1, le=_MAX_SIZE)] = 7,
              x_in_row: Annotated[int, Field(ge=2, le=_MAX_SIZE)] = 4) -> OpenSpielObservation:
        """Start a game; the opponent moves first when the agent plays o.

        Args:
            seed: Seeds the opponent's random choices; same seed and actions, same episode.
            episode_id: Id reported in the state (default: a fresh uuid).
            opponent: ``random``, ``first``, ``last`` or ``heuristic`` (win, else block, else safe and central).
            agent_player: 0 to play x (first), 1 to play o.
            illegal_action_reward: Reward of a step whose action is rejected.
            rows: Board height (OpenSpiel's ``rows``).
            columns: Board width (OpenSpiel's ``columns``).
            x_in_row: Pieces in a row that win (OpenSpiel's ``x_in_row``).
        """
        return self._start(ConnectFourState(rows, columns, x_in_row), seed=seed, episode_id=episode_id,
                           opponent=opponent, agent_player=agent_player, illegal_action_reward=illegal_action_reward)
