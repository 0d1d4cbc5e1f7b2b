"""Blackjack: OpenSpiel's ``blackjack`` rules, encodings and action ids, and its env."""

from __future__ import annotations

from typing import Literal

from ._env import OpenSpielEnvironment, load_readme
from ._game import CHANCE_PLAYER, TERMINAL_PLAYER, GameState
from ._models import OpenSpielObservation
from ._opponents import OpponentName

__all__ = ["BlackjackEnvironment", "BlackjackState", "card_string"]

HIT, STAND = 0, 1
PLAYER, DEALER = 0, 1
_DECK_SIZE = 52
_MAX_SUM = 30  # the thermometer's length: hitting on 20 and drawing a ten reaches 30
_TARGET = 21
_DEALER_STANDS_ON = 17
_SUITS, _RANKS = "CDHS", "A23456789TJQK"
_PHASES = ("Initial Deal", "Player Turn", "Dealer Turn")


def card_string(card: int) -> str:
    """OpenSpiel's name of card id 0..51: suit (CDHS) then rank (A23456789TJQK), e.g. ``HQ``."""
    return _SUITS[card // 13] + _RANKS[card % 13]


def _card_value(card: int) -> int:
    rank = card % 13
    return 1 if rank == 0 else min(rank + 1, 10)


class BlackjackState(GameState):
    """One player against a dealer who hits on 16 or less and stands on 17 or more.

    Chance deals two cards to the player, then two to the dealer (the first face
    down), from one 52-card deck (card id = suit * 13 + rank, ace = rank 0). The
    player hits (0) or stands (1); over 21 busts. Aces count 1 or 11, whichever is best.

    Example:
        >>> s = BlackjackState()
        >>> for card in (9, 22, 4, 17):  # the player gets CT and DT, the dealer C5 (face down) and D5
        ...     s.apply_action(card)
        >>> s.legal_actions(), s.best_total(PLAYER)
        ([0, 1], 20)
    """

    game_name = "blackjack"

    def __init__(self) -> None:
        super().__init__()
        self.deck = list(range(_DECK_SIZE))
        self.cards: list[list[int]] = [[], []]
        self._non_ace_total = [0, 0]
        self._aces = [0, 0]
        self.turn_over = [False, False]
        self._phase = 0
        self._current = CHANCE_PLAYER
        self._turn_player = PLAYER
        self._live_players = 1

    @property
    def num_distinct_actions(self) -> int:
        return 2

    def best_total(self, who: int) -> int:
        """The highest total of ``who``'s hand that is at most 21, else the lowest (bust) total."""
        total = self._non_ace_total[who] + self._aces[who]
        return total + 10 if self._aces[who] and total + 10 <= _TARGET else total

    def current_player(self) -> int:
        return self._current

    def is_terminal(self) -> bool:
        return self.turn_over[DEALER]

    def returns(self) -> list[float]:
        if not self.is_terminal():
            return [0.0]
        mine, dealer = self.best_total(PLAYER), self.best_total(DEALER)
        if mine > _TARGET:
            return [-1.0]
        if dealer > _TARGET or mine > dealer:
            return [1.0]
        return [-1.0] if mine < dealer else [0.0]

    def _player_actions(self) -> list[int]:
        return [HIT, STAND]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return [(card, 1.0 / len(self.deck)) for card in self.deck]

    def _apply(self, action: int) -> None:
        if len(self.cards[DEALER]) < 2:  # the initial deal: two cards to the player, then two to the dealer
            self._deal(self._turn_player, action)
            self._current = CHANCE_PLAYER
            if len(self.cards[self._turn_player]) >= 2:
                self._turn_player += 1
                if len(self.cards[DEALER]) >= 2:
                    self._turn_player = self._current = PLAYER
                    self._phase = 1
            return
        if self._current == CHANCE_PLAYER:
            self._deal(self._turn_player, action)
            self._current = self._turn_player
            if self.best_total(self._turn_player) > _TARGET:
                if self._turn_player != DEALER:
                    self._live_players -= 1
                self._end_turn(self._turn_player)
            self._dealer_acts()
        elif action == HIT:
            self._current = CHANCE_PLAYER
        else:
            self._end_turn(self._turn_player)
            self._dealer_acts()

    def _deal(self, who: int, card: int) -> None:
        self.deck.remove(card)
        self.cards[who].append(card)
        if card % 13 == 0:
            self._aces[who] += 1
        else:
            self._non_ace_total[who] += _card_value(card)

    def _end_turn(self, who: int) -> None:
        self.turn_over[who] = True
        if self.is_terminal():
            self._turn_player = TERMINAL_PLAYER
        else:
            self._turn_player = DEALER if self.turn_over[PLAYER] else PLAYER
        self._current = self._turn_player
        self._phase = 2

    def _dealer_acts(self) -> None:
        if self._live_players == 0:  # everyone busted: the dealer does not draw
            self._end_turn(DEALER)
        if self._current == DEALER:
            if self.best_total(DEALER) < _DEALER_STANDS_ON:
                self._current = CHANCE_PLAYER
            else:
                self._end_turn(DEALER)

    def observation_tensor(self, player: int) -> list[float]:
        tensor = [0.0] * (2 + 1 + _MAX_SUM + _DECK_SIZE * 3)
        if self._current + 1 >= 0:  # one-hot of chance (-1) or the player (0); nothing once terminal
            tensor[self._current + 1] = 1.0
        tensor[2] = 1.0 if self.is_terminal() else 0.0
        best = self.best_total(player)
        for i in range(_MAX_SUM):
            tensor[3 + i] = 1.0 if i <= best else 0.0
        offset = 3 + _MAX_SUM
        if len(self.cards[DEALER]) > 1:
            tensor[offset + self.cards[DEALER][1]] = 1.0
        offset += _DECK_SIZE
        for who in (PLAYER, DEALER):
            hidden = 1 if who == DEALER and not self.turn_over[player] else 0
            for card in self.cards[who][hidden:]:
                tensor[offset + card] = 1.0
            offset += _DECK_SIZE
        return tensor

    def observation_string(self, player: int) -> str:
        lines = [f"Current Phase: {_PHASES[self._phase]}", f"Current Player: {self._current}"]
        for who, label in ((PLAYER, "Player 0"), (DEALER, "Dealer")):
            hidden = 1 if who == DEALER and not self.turn_over[player] else 0
            names = ["??"] * min(hidden, len(self.cards[who])) + [card_string(c) for c in self.cards[who][hidden:]]
            lines.append(f"{label}: Cards: {' '.join(names)}")
        return "\n".join(lines) + "\n"

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE_PLAYER:
            return card_string(action)
        return "Hit" if action == HIT else "Stand"


class BlackjackEnvironment(OpenSpielEnvironment[BlackjackState]):
    """Blackjack against OpenSpiel's fixed dealer (OpenSpiel's ``blackjack``).

    Action ids: 0 hit, 1 stand. The dealer's policy is part of the game (hit on 16
    or less, stand on 17 or more), so ``opponent`` is ignored. The final step pays
    1 for a win, -1 for a loss (a bust loses even if the dealer busts too), 0 for a push.
    """

    name = "blackjack"
    readme = load_readme("blackjack.md")
    game_type = BlackjackState

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              opponent: OpponentName = "random", agent_player: Literal[0] = 0,
              illegal_action_reward: float = 0.0) -> OpenSpielObservation:
        """Shuffle and deal a hand from ``seed``.

        Args:
            seed: Seeds the deal; same seed and actions, same episode.
            episode_id: Id reported in the state (default: a fresh uuid).
            opponent: Accepted for uniformity; the dealer's policy is fixed by the rules.
            agent_player: Must be 0 (one player).
            illegal_action_reward: Reward of a step whose action is rejected.
        """
        return self._start(BlackjackState(), seed=seed, episode_id=episode_id, opponent=opponent,
                           agent_player=agent_player, illegal_action_reward=illegal_action_reward)
