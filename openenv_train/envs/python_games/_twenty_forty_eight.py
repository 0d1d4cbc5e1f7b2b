"""2048: OpenSpiel's ``2048`` rules, encodings and action ids, and its env."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator

from ._env import OpenSpielEnvironment, load_readme
from ._game import CHANCE_PLAYER, TERMINAL_PLAYER, GameState
from ._models import OpenSpielObservation
from ._opponents import OpponentName

__all__ = ["TwentyFortyEightEnvironment", "TwentyFortyEightState"]

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3
_NAMES = ("Up", "Right", "Down", "Left")
_SIZE = 4
_VECTORS = ((-1, 0), (0, 1), (1, 0), (0, -1))
# The order tiles are visited in, per move: rows, then columns (farthest along the move first).
_TRAVERSALS = (
    ((0, 1, 2, 3), (0, 1, 2, 3)),
    ((0, 1, 2, 3), (3, 2, 1, 0)),
    ((3, 2, 1, 0), (0, 1, 2, 3)),
    ((0, 1, 2, 3), (0, 1, 2, 3)),
)
#: The chance outcome when no cell is free (OpenSpiel's kNoCellAvailableAction).
NO_CELL_AVAILABLE = _SIZE * _SIZE * 2


def _check_max_tile(value: int) -> int:
    if value < 8 or value > 2**17 or value & (value - 1):
        raise ValueError(f"max_tile={value} must be a power of two from 8 to {2**17}")
    return value


class TwentyFortyEightState(GameState):
    """Slide tiles on a 4x4 board; equal tiles merge; a 2 (p=0.9) or 4 spawns after each move.

    Chance places two tiles first. A move (0 up, 1 right, 2 down, 3 left) is legal
    only if it changes the board; it pays the sum of the tiles it merges. The game
    ends when a tile reaches ``max_tile``, no move is left, or after ``4 * max_tile``
    actions (chance included). A chance outcome ``(row * 4 + col) * 2 + is_four``
    puts a tile in cell (row, col).

    Example:
        >>> s = TwentyFortyEightState()
        >>> s.apply_action(0); s.apply_action(2)  # chance: a 2 in (0, 0) and a 2 in (0, 1)
        >>> s.legal_actions()
        [1, 2, 3]
        >>> s.apply_action(LEFT); s.rewards(), s.tile(0, 0)
        ([4.0], 4)
    """

    game_name = "2048"

    def __init__(self, max_tile: int = 2048) -> None:
        super().__init__()
        self.max_tile = _check_max_tile(max_tile)
        self._values = [0] * (_SIZE * _SIZE)
        # OpenSpiel keeps each tile's "merged" flag from the last move until the next one;
        # legality checks read it, so it is kept here too.
        self._merged = [False] * (_SIZE * _SIZE)
        self._current = CHANCE_PLAYER
        self._extra_chance_turn = True
        self._action_score = 0
        self.total_score = 0

    @property
    def num_distinct_actions(self) -> int:
        return 4

    @property
    def params(self) -> dict[str, Any]:
        return {"max_tile": self.max_tile}

    def tile(self, row: int, col: int) -> int:
        """The value in cell (row, col); 0 when empty."""
        return self._values[row * _SIZE + col]

    def set_board(self, values: Sequence[int]) -> None:
        """Put 16 tile values (row by row, 0 for empty) on the board, with the player to move.

        Like OpenSpiel's ``SetCustomBoard``, for setting up positions; the history is left as it is.
        """
        if len(values) != _SIZE * _SIZE:
            raise ValueError(f"a 2048 board has {_SIZE * _SIZE} cells, got {len(values)} values")
        self._values = [int(v) for v in values]
        self._merged = [False] * (_SIZE * _SIZE)
        self._current = 0
        self._extra_chance_turn = False

    def _content(self, row: int, col: int) -> int:
        return self._values[row * _SIZE + col] if 0 <= row < _SIZE and 0 <= col < _SIZE else 0

    def current_player(self) -> int:
        return TERMINAL_PLAYER if self.is_terminal() else self._current

    def is_terminal(self) -> bool:
        if len(self.history) >= 4 * self.max_tile or self.max_tile in self._values:
            return True
        return 0 not in self._values and not any(self._has_match(r, c) for r in range(_SIZE) for c in range(_SIZE))

    def _has_match(self, row: int, col: int) -> bool:
        value = self.tile(row, col)
        return value > 0 and any(self._content(row + dr, col + dc) == value for dr, dc in _VECTORS)

    def rewards(self) -> list[float]:
        return [float(self._action_score)]

    def returns(self) -> list[float]:
        return [float(self.total_score)]

    def _player_actions(self) -> list[int]:
        return [move for move in (UP, RIGHT, DOWN, LEFT) if self._slide(move, apply=False)]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        free = [cell for cell, value in enumerate(self._values) if value == 0]
        if not free:
            return [(NO_CELL_AVAILABLE, 1.0)]
        return [pair for cell in free for pair in ((cell * 2, 0.9 / len(free)), (cell * 2 + 1, 0.1 / len(free)))]

    def _apply(self, action: int) -> None:
        if self._current == CHANCE_PLAYER:
            # Chance moves twice at the start, as the original game starts with two tiles.
            if not self._extra_chance_turn:
                self._current = 0
            self._extra_chance_turn = False
            if action != NO_CELL_AVAILABLE:
                self._values[action // 2] = 4 if action % 2 else 2
                self._merged[action // 2] = False
            return
        self._action_score = 0
        self._merged = [False] * (_SIZE * _SIZE)
        if self._slide(action, apply=True):
            self._current = CHANCE_PLAYER
        self.total_score += self._action_score

    def _slide(self, move: int, *, apply: bool) -> bool:
        """Whether ``move`` changes the board; with ``apply``, make it (scoring merges)."""
        rows, cols = _TRAVERSALS[move]
        dr, dc = _VECTORS[move]
        changed = False
        for r in rows:
            for c in cols:
                value = self.tile(r, c)
                if value == 0:
                    continue
                far_r, far_c = r, c
                while 0 <= far_r + dr < _SIZE and 0 <= far_c + dc < _SIZE and self.tile(far_r + dr, far_c + dc) == 0:
                    far_r, far_c = far_r + dr, far_c + dc
                next_r, next_c = far_r + dr, far_c + dc
                merges = self._content(next_r, next_c) == value and not self._merged[next_r * _SIZE + next_c]
                if not merges and (far_r, far_c) == (r, c):
                    continue
                if not apply:
                    return True
                changed = True
                target = next_r * _SIZE + next_c if merges else far_r * _SIZE + far_c
                self._values[target] = value * 2 if merges else value
                self._merged[target] = merges
                self._values[r * _SIZE + c], self._merged[r * _SIZE + c] = 0, False
                if merges:
                    self._action_score += value * 2
        return changed

    def observation_tensor(self, player: int) -> list[float]:
        return [float(value) for value in self._values]

    def observation_string(self, player: int) -> str:
        return "".join(
            "".join(f"{self.tile(r, c):>5}" for c in range(_SIZE)) + "\n" for r in range(_SIZE)
        )

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE_PLAYER:
            if action == NO_CELL_AVAILABLE:
                return "No Cell Available"
            cell = action // 2
            return f"{4 if action % 2 else 2} added to row {cell // _SIZE + 1}, column {cell % _SIZE + 1}"
        return _NAMES[action]

    def illegal_reason(self, action: int) -> str:
        return f"moving {_NAMES[action]} would not change the board"


class TwentyFortyEightEnvironment(OpenSpielEnvironment[TwentyFortyEightState]):
    """The 2048 sliding-tile game (OpenSpiel's ``2048``).

    Action ids: 0 up, 1 right, 2 down, 3 left; only moves that change the board are
    legal. Each step pays the points of the tiles merged by the move (OpenSpiel's
    per-step reward). The episode ends when a tile reaches ``max_tile`` (2048) or no
    move is left. One player, so ``opponent`` is ignored.
    """

    name = "2048"
    readme = load_readme("2048.md")
    game_type = TwentyFortyEightState

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              opponent: OpponentName = "random", agent_player: Literal[0] = 0,
              illegal_action_reward: float = 0.0,
              max_tile: Annotated[int, AfterValidator(_check_max_tile)] = 2048) -> OpenSpielObservation:
        """Start a board with two tiles placed from ``seed``.

        Args:
            seed: Seeds every tile spawn; same seed and actions, same episode.
            episode_id: Id reported in the state (default: a fresh uuid).
            opponent: Accepted for uniformity; 2048 has no opponent.
            agent_player: Must be 0 (one player).
            illegal_action_reward: Reward of a step whose action is rejected.
            max_tile: The tile that ends the game (OpenSpiel's ``max_tile``), a power of two >= 8.
        """
        return self._start(TwentyFortyEightState(max_tile), seed=seed, episode_id=episode_id, opponent=opponent,
                           agent_player=agent_player, illegal_action_reward=illegal_action_reward)
