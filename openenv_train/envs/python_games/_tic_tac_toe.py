"""Tic-tac-toe: OpenSpiel's ``tic_tac_toe`` rules, encodings and action ids, and its env."""

from __future__ import annotations

import random
from typing import Literal

from ._env import OpenSpielEnvironment, load_readme
from ._game import TERMINAL_PLAYER, GameState
from ._models import OpenSpielObservation
from ._opponents import OpponentName

__all__ = ["TicTacToeEnvironment", "TicTacToeState"]

# OpenSpiel's CellState order, which is also the plane index of the observation tensor.
EMPTY, NOUGHT, CROSS = 0, 1, 2
_MARKS = (CROSS, NOUGHT)  # player 0 plays x, player 1 plays o
_SYMBOLS = ".ox"
_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
_CORNERS = (0, 2, 6, 8)


def _has_line(board: list[int], mark: int) -> bool:
    return any(board[a] == board[b] == board[c] == mark for a, b, c in _LINES)


class TicTacToeState(GameState):
    """A 3x3 board; action ``r*3+c`` marks cell (r, c); x (player 0) moves first.

    Example:
        >>> s = TicTacToeState()
        >>> for cell in (4, 0, 2, 6, 3, 5, 1, 7, 8):
        ...     s.apply_action(cell)
        >>> s.is_terminal(), s.returns()
        (True, [0.0, 0.0])
    """

    game_name = "tic_tac_toe"
    num_players = 2

    def __init__(self) -> None:
        super().__init__()
        self.board = [EMPTY] * 9
        self._player = 0
        self._winner: int | None = None

    @property
    def num_distinct_actions(self) -> int:
        return 9

    def current_player(self) -> int:
        return TERMINAL_PLAYER if self.is_terminal() else self._player

    def is_terminal(self) -> bool:
        return self._winner is not None or EMPTY not in self.board

    def returns(self) -> list[float]:
        if self._winner is None:
            return [0.0, 0.0]
        return [1.0, -1.0] if self._winner == 0 else [-1.0, 1.0]

    def _player_actions(self) -> list[int]:
        return [cell for cell in range(9) if self.board[cell] == EMPTY]

    def _apply(self, action: int) -> None:
        self.board[action] = _MARKS[self._player]
        if _has_line(self.board, _MARKS[self._player]):
            self._winner = self._player
        self._player = 1 - self._player

    def observation_tensor(self, player: int) -> list[float]:
        tensor = [0.0] * 27
        for cell, state in enumerate(self.board):
            tensor[state * 9 + cell] = 1.0
        return tensor

    def observation_string(self, player: int) -> str:
        rows = ("".join(_SYMBOLS[self.board[r * 3 + c]] for c in range(3)) for r in range(3))
        return "\n".join(rows)

    def action_to_string(self, player: int, action: int) -> str:
        return f"{'xo'[player]}({action // 3},{action % 3})"

    def illegal_reason(self, action: int) -> str:
        return f"cell ({action // 3},{action % 3}) is already taken by {_SYMBOLS[self.board[action]]}"

    def heuristic_action(self, rng: random.Random) -> int:
        """Win if possible, else block the opponent's win, else take the centre, a corner, or any cell."""
        legal = self.legal_actions()
        me, them = _MARKS[self._player], _MARKS[1 - self._player]
        for mark in (me, them):
            completing = [cell for cell in legal if _has_line(self._with(cell, mark), mark)]
            if completing:
                return rng.choice(completing)
        if 4 in legal:
            return 4
        corners = [cell for cell in _CORNERS if cell in legal]
        return rng.choice(corners or legal)

    def _with(self, cell: int, mark: int) -> list[int]:
        board = list(self.board)
        board[cell] = mark
        return board


class TicTacToeEnvironment(OpenSpielEnvironment[TicTacToeState]):
    """Tic-tac-toe against a built-in opponent (OpenSpiel's ``tic_tac_toe``).

    Action ids 0..8 mark cell (id // 3, id % 3). The agent is x (player 0, moves
    first) unless ``agent_player=1``. The final step pays 1 for a win, -1 for a
    loss, 0 for a draw.
    """

    name = "tic_tac_toe"
    readme = load_readme("tic_tac_toe.md")
    game_type = TicTacToeState

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              opponent: OpponentName = "random", agent_player: Literal[0, 1] = 0,
              illegal_action_reward: float = 0.0) -> OpenSpielObservation:
        """Start a game; chance and the opponent move until it is the agent's turn.

        Args:
            seed: Seeds the opponent's random choices; same seed and actions, same episode.
            episode_id: Id reported in the state (default: a fresh uuid).
            opponent: ``random``, ``first``, ``last`` or ``heuristic`` (win, else block, else centre/corner).
            agent_player: 0 to play x (first), 1 to play o.
            illegal_action_reward: Reward of a step whose action is rejected.
        """
        return self._start(TicTacToeState(), seed=seed, episode_id=episode_id, opponent=opponent,
                           agent_player=agent_player, illegal_action_reward=illegal_action_reward)
