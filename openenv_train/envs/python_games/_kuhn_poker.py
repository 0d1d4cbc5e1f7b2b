"""Kuhn poker: OpenSpiel's two-player ``kuhn_poker`` rules, encodings and action ids, and its env."""

from __future__ import annotations

import random
from typing import Literal

from ._env import OpenSpielEnvironment, load_readme
from ._game import CHANCE_PLAYER, TERMINAL_PLAYER, GameState
from ._models import OpenSpielObservation
from ._opponents import OpponentName

__all__ = ["KuhnPokerEnvironment", "KuhnPokerState"]

PASS, BET = 0, 1
JACK, QUEEN, KING = 0, 1, 2
_PLAYERS = 2
_CARDS = _PLAYERS + 1
_NOBODY = -1


class KuhnPokerState(GameState):
    """Two players ante 1 chip each, get one card of J, Q, K (0, 1, 2), then pass (0) or bet (1).

    Pass-pass: the higher card wins the antes. A bet is called (bet) or folded
    (pass); after a call the higher card wins the pot. Payoffs are chips won or lost.

    Example:
        >>> s = KuhnPokerState()
        >>> for action in (KING, JACK, PASS, BET, BET):  # deal K and J, pass, bet, call
        ...     s.apply_action(action)
        >>> s.is_terminal(), s.returns()
        (True, [2.0, -2.0])
    """

    game_name = "kuhn_poker"
    num_players = _PLAYERS
    uses_information_state = True

    def __init__(self) -> None:
        super().__init__()
        self._holder = [_NOBODY] * _CARDS  # who was dealt each card
        self._first_bettor = _NOBODY
        self._winner = _NOBODY
        self._pot = _PLAYERS
        self.ante = [1] * _PLAYERS

    @property
    def num_distinct_actions(self) -> int:
        return 2

    @property
    def params(self) -> dict[str, int]:
        return {"players": _PLAYERS}

    def current_player(self) -> int:
        if self.is_terminal():
            return TERMINAL_PLAYER
        return CHANCE_PLAYER if len(self.history) < _PLAYERS else len(self.history) % _PLAYERS

    def is_terminal(self) -> bool:
        return self._winner != _NOBODY

    def returns(self) -> list[float]:
        if not self.is_terminal():
            return [0.0] * _PLAYERS
        stakes = [2 if self._did_bet(p, self.history) else 1 for p in range(_PLAYERS)]
        return [float(self._pot - stakes[p] if p == self._winner else -stakes[p]) for p in range(_PLAYERS)]

    def _player_actions(self) -> list[int]:
        return [PASS, BET]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        p = 1.0 / (_PLAYERS + 1 - len(self.history))
        return [(card, p) for card in range(_CARDS) if self._holder[card] == _NOBODY]

    def _apply(self, action: int) -> None:
        dealt = len(self.history)
        player = self.current_player()
        if dealt < _PLAYERS:
            self._holder[action] = dealt
        elif action == BET:
            if self._first_bettor == _NOBODY:
                self._first_bettor = player
            self._pot += 1
            self.ante[player] += 1
        history = [*self.history, action]
        actions = len(history) - _PLAYERS
        if self._first_bettor == _NOBODY and actions == _PLAYERS:
            # Nobody bet: the higher card of the two dealt wins the antes.
            self._winner = self._holder[_CARDS - 1] if self._holder[_CARDS - 1] != _NOBODY else self._holder[_CARDS - 2]
        elif self._first_bettor != _NOBODY and actions == _PLAYERS + self._first_bettor:
            for card in reversed(range(_CARDS)):
                holder = self._holder[card]
                if holder != _NOBODY and self._did_bet(holder, history):
                    self._winner = holder
                    break

    def _did_bet(self, player: int, history: list[int]) -> bool:
        if self._first_bettor == _NOBODY:
            return False
        if player == self._first_bettor:
            return True
        offset = _PLAYERS if player > self._first_bettor else 2 * _PLAYERS
        return history[offset + player] == BET

    def card(self, player: int) -> int | None:
        """The card dealt to ``player`` (0 J, 1 Q, 2 K), or None before the deal."""
        return self.history[player] if len(self.history) > player else None

    def information_state_tensor(self, player: int) -> list[float]:
        tensor = [0.0] * (6 * _PLAYERS - 1)
        tensor[player] = 1.0
        card = self.card(player)
        if card is not None:
            tensor[_PLAYERS + card] = 1.0
        for turn, action in enumerate(self.history[_PLAYERS:]):
            tensor[_PLAYERS + _CARDS + 2 * turn + action] = 1.0
        return tensor

    def observation_tensor(self, player: int) -> list[float]:
        tensor = [0.0] * (3 * _PLAYERS + 1)
        tensor[player] = 1.0
        card = self.card(player)
        if card is not None:
            tensor[_PLAYERS + card] = 1.0
        for p in range(_PLAYERS):
            tensor[_PLAYERS + _CARDS + p] = float(self.ante[p])
        return tensor

    def information_state_string(self, player: int) -> str:
        card = self.card(player)
        return ("" if card is None else str(card)) + "".join("b" if a else "p" for a in self.history[_PLAYERS:])

    def observation_string(self, player: int) -> str:
        card = self.card(player)
        return "" if card is None else str(card) + "".join(str(a) for a in self.ante)

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE_PLAYER:
            return f"Deal:{action}"
        return "Bet" if action == BET else "Pass"

    def heuristic_action(self, rng: random.Random) -> int:
        """Bet (or call) holding the king; otherwise pass (or fold)."""
        return BET if self.card(self.current_player()) == KING else PASS


class KuhnPokerEnvironment(OpenSpielEnvironment[KuhnPokerState]):
    """Two-player Kuhn poker against a built-in opponent (OpenSpiel's ``kuhn_poker``).

    Action ids: 0 pass (check or fold), 1 bet (bet or call). The agent is player 0
    (acts first) unless ``agent_player=1``. The final step pays the chips won or
    lost: +-1 without a call, +-2 after a call.
    """

    name = "kuhn_poker"
    readme = load_readme("kuhn_poker.md")
    game_type = KuhnPokerState

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              opponent: OpponentName = "random", agent_player: Literal[0, 1] = 0,
              illegal_action_reward: float = 0.0) -> OpenSpielObservation:
        """Deal the cards from ``seed``; the opponent acts first when the agent is player 1.

        Args:
            seed: Seeds the deal and the opponent's random choices; same seed and actions, same episode.
            episode_id: Id reported in the state (default: a fresh uuid).
            opponent: ``random``, ``first`` (always pass), ``last`` (always bet) or ``heuristic`` (bet only with K).
            agent_player: 0 to act first, 1 to act second.
            illegal_action_reward: Reward of a step whose action is rejected.
        """
        return self._start(KuhnPokerState(), seed=seed, episode_id=episode_id, opponent=opponent,
                           agent_player=agent_player, illegal_action_reward=illegal_action_reward)
