"""The game-state interface every pure-Python OpenSpiel game here implements.

The method names and semantics follow ``pyspiel.State`` (``current_player``,
``legal_actions``, ``chance_outcomes``, ``apply_action``, ``observation_tensor``,
...) so that a state can be checked against pyspiel by replaying its ``history``.
"""

from __future__ import annotations

import copy
import random
from abc import ABC, abstractmethod
from typing import Any, ClassVar

__all__ = ["CHANCE_PLAYER", "TERMINAL_PLAYER", "GameState"]

#: ``pyspiel.PlayerId.CHANCE``: the current player at a chance node.
CHANCE_PLAYER = -1
#: ``pyspiel.PlayerId.TERMINAL``: the current player once the game is over.
TERMINAL_PLAYER = -4


class GameState(ABC):
    """One game in progress, with OpenSpiel's action ids, tensors and strings.

    Subclasses implement the rules; this base keeps the action ``history``
    (chance outcomes included, exactly as ``pyspiel.State.history()``) and
    derives the per-player views.
    """

    #: OpenSpiel's short name of the game (``pyspiel.load_game(game_name)``).
    game_name: ClassVar[str]
    num_players: ClassVar[int] = 1
    #: True where OpenSpiel's RL environment reads ``information_state_tensor``
    #: (the game provides one), else it reads ``observation_tensor``.
    uses_information_state: ClassVar[bool] = False

    def __init__(self) -> None:
        self.history: list[int] = []

    # -- rules -----------------------------------------------------------------------------------------
    @property
    @abstractmethod
    def num_distinct_actions(self) -> int:
        """Player action ids run from 0 to this minus one."""

    @property
    def params(self) -> dict[str, Any]:
        """The game's parameters as ``pyspiel.load_game`` takes them."""
        return {}

    @abstractmethod
    def current_player(self) -> int:
        """The player to move, ``CHANCE_PLAYER`` or ``TERMINAL_PLAYER``."""

    @abstractmethod
    def is_terminal(self) -> bool:
        """Whether the game is over."""

    @abstractmethod
    def returns(self) -> list[float]:
        """Each player's total reward so far (the final payoff once terminal)."""

    def rewards(self) -> list[float]:
        """Each player's reward for the last transition (OpenSpiel's ``Rewards()``)."""
        return self.returns() if self.is_terminal() else [0.0] * self.num_players

    @abstractmethod
    def _player_actions(self) -> list[int]:
        """Legal actions of the player to move; called only at a player node."""

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """``(outcome, probability)`` pairs at a chance node."""
        raise ValueError(f"{self.game_name}: not a chance node")

    @abstractmethod
    def _apply(self, action: int) -> None:
        """Apply a legal action (``history`` does not include it yet)."""

    def legal_actions(self, player: int | None = None) -> list[int]:
        """Legal actions of ``player`` (default: the player to move); empty when not their turn."""
        current = self.current_player()
        if player is None:
            player = current
        if player != current or self.is_terminal():
            return []
        if current == CHANCE_PLAYER:
            return [outcome for outcome, _ in self.chance_outcomes()]
        return self._player_actions()

    def apply_action(self, action: int) -> None:
        """Apply ``action`` (a legal one: this does not check) and record it in ``history``."""
        self._apply(action)
        self.history.append(action)

    def sample_chance(self, rng: random.Random) -> int:
        """Draw one chance outcome with its probability."""
        outcomes, weights = zip(*self.chance_outcomes(), strict=True)
        return rng.choices(outcomes, weights=weights)[0]

    def clone(self) -> GameState:
        """An independent copy."""
        return copy.deepcopy(self)

    # -- views -----------------------------------------------------------------------------------------
    @abstractmethod
    def observation_tensor(self, player: int) -> list[float]:
        """OpenSpiel's ``observation_tensor(player)``, flattened."""

    @abstractmethod
    def observation_string(self, player: int) -> str:
        """OpenSpiel's ``observation_string(player)``."""

    def information_state_tensor(self, player: int) -> list[float]:
        """OpenSpiel's ``information_state_tensor(player)`` where the game provides one."""
        raise NotImplementedError(f"{self.game_name} provides no information state tensor")

    def information_state_string(self, player: int) -> str:
        """OpenSpiel's ``information_state_string(player)`` where the game provides one."""
        raise NotImplementedError(f"{self.game_name} provides no information state string")

    def info_state(self, player: int) -> list[float]:
        """The tensor OpenSpiel's RL environment (and so OpenEnv) reports as ``info_state``."""
        if self.uses_information_state:
            return self.information_state_tensor(player)
        return self.observation_tensor(player)

    def info_string(self, player: int) -> str:
        """The string counterpart of :meth:`info_state`."""
        if self.uses_information_state:
            return self.information_state_string(player)
        return self.observation_string(player)

    @abstractmethod
    def action_to_string(self, player: int, action: int) -> str:
        """OpenSpiel's ``action_to_string(player, action)``."""

    def illegal_reason(self, action: int) -> str:
        """Why an in-range player action is illegal here (the rule it breaks)."""
        return "it is not legal in this position"

    # -- opponents -------------------------------------------------------------------------------------
    def heuristic_action(self, rng: random.Random) -> int:
        """A simple strong-ish move for the player to move; random unless a game overrides it."""
        return rng.choice(self.legal_actions())
