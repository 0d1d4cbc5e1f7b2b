"""blackjack: dealing, aces, the dealer's rule, payoffs, hidden card (OpenSpiel's blackjack in pure Python)."""

from __future__ import annotations

import random

import pytest

from openenv_train.envs.python_games import BlackjackEnvironment, BlackjackState, OpenSpielAction
from openenv_train.envs.python_games._blackjack import card_string

HIT, STAND = 0, 1
# Clubs are ids 0..12 (A, 2..9, T, J, Q, K), diamonds 13..25, hearts 26..38, spades 39..51.
ACE, TWO, FIVE, SIX, NINE, TEN, QUEEN, KING = 0, 1, 4, 5, 8, 9, 11, 12
D = 13  # add to a club to get the same rank in diamonds
H = 26


def _state(*actions: int) -> BlackjackState:
    state = BlackjackState()
    for action in actions:
        state.apply_action(action)
    return state


def test_card_ids_and_names_follow_openspiel() -> None:
    assert [card_string(c) for c in (ACE, NINE, TEN, KING, D + QUEEN, 51)] == ["CA", "C9", "CT", "CK", "DQ", "SK"]


def test_the_deal_gives_two_cards_each_and_hides_the_dealers_first() -> None:
    state = _state(TEN, D + QUEEN, SIX, D + TEN)  # player T Q; dealer 6 (face down), T
    assert state.current_player() == 0 and state.legal_actions() == [HIT, STAND]
    assert state.observation_string(0) == (
        "Current Phase: Player Turn\nCurrent Player: 0\nPlayer 0: Cards: CT DQ\nDealer: Cards: ?? DT\n"
    )
    tensor = state.observation_tensor(0)
    assert tensor[:3] == [0.0, 1.0, 0.0]                   # player to move, not terminal
    assert tensor[3:33] == [1.0] * 21 + [0.0] * 9          # thermometer of the total 20
    assert tensor[33 + D + TEN] == 1.0                     # the dealer's face-up card
    assert tensor[137 + SIX] == 0.0 and tensor[137 + D + TEN] == 1.0  # the hole card is hidden
    assert len(state.deck) == 48 and state.chance_outcomes()[0] == (ACE, 1 / 48)


@pytest.mark.parametrize(("cards", "total"), [
    ((ACE, KING), 21), ((ACE, D + ACE), 12), ((ACE, D + ACE, NINE), 21), ((ACE, SIX, KING), 17),
    ((ACE, FIVE), 16), ((TEN, SIX, KING), 26),
])
def test_aces_count_one_or_eleven(cards: tuple[int, ...], total: int) -> None:
    state = _state(cards[0], cards[1], H + TWO, H + FIVE)
    for card in cards[2:]:
        state.apply_action(HIT)
        state.apply_action(card)
    assert state.best_total(0) == total


def test_the_dealer_hits_on_16_and_busts_or_stops_at_17_or_more() -> None:
    state = _state(TEN, QUEEN, SIX, D + TEN)  # player 20, dealer 16
    state.apply_action(STAND)
    assert state.current_player() == -1  # the dealer must draw
    state.apply_action(FIVE)
    assert state.is_terminal() and state.best_total(1) == 21 and state.returns() == [-1.0]

    state = _state(TEN, TWO, SIX, D + TEN)  # player 12, dealer 16
    state.apply_action(STAND)
    state.apply_action(KING)
    assert state.is_terminal() and state.best_total(1) == 26 and state.returns() == [1.0]


def test_the_dealer_stands_on_soft_17_and_ties_push() -> None:
    state = _state(TEN, QUEEN, ACE, SIX)  # dealer A 6 = soft 17
    state.apply_action(STAND)
    assert state.is_terminal() and state.returns() == [1.0]
    state = _state(TEN, NINE, D + TEN, D + NINE)
    state.apply_action(STAND)
    assert state.is_terminal() and state.returns() == [0.0]
    assert state.observation_tensor(0)[137 + D + TEN] == 1.0  # the hole card shows once the turn is over
    assert "Dealer: Cards: DT D9" in state.observation_string(0)


def test_a_player_bust_loses_at_once_and_the_dealer_does_not_draw() -> None:
    state = _state(TEN, SIX, D + TEN, D + SIX)
    state.apply_action(HIT)
    state.apply_action(KING)
    assert state.is_terminal() and state.returns() == [-1.0] and len(state.cards[1]) == 2


def test_env_rewards_are_the_hand_results_and_the_seed_fixes_the_deal() -> None:
    env = BlackjackEnvironment()
    results = set()
    for seed in range(60):
        obs = env.reset(seed=seed, opponent="heuristic")
        assert env.state.opponent_policy == "none"
        first = obs.info_string
        assert BlackjackEnvironment().reset(seed=seed).info_string == first
        while not obs.done:  # hit below 17
            obs = env.step(OpenSpielAction(action_id=HIT if env.game.best_total(0) < 17 else STAND))
        assert obs.reward == env.game.returns()[0] and obs.current_player_id == -4
        assert obs.info_state[2] == 1.0  # the terminal flag
        results.add(obs.reward)
    assert results == {-1.0, 0.0, 1.0}


def test_out_of_range_actions_are_rejected_and_deal_nothing() -> None:
    env = BlackjackEnvironment()
    before = env.reset(seed=9)
    deck = list(env.game.deck)
    after = env.step(OpenSpielAction(action_id=2))
    assert after.illegal_action and "0=Hit, 1=Stand" in after.message and env.game.deck == deck
    assert after.info_state == before.info_state
    rng = random.Random(0)
    assert env.step(OpenSpielAction(action_id=rng.choice([HIT, STAND]))).illegal_action is False
