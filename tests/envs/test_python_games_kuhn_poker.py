"""kuhn_poker: betting sequences, payoffs, opponents, information state (OpenSpiel's kuhn_poker in pure Python)."""

from __future__ import annotations

import itertools
import random

import pytest

from openenv_train.envs.python_games import KuhnPokerEnvironment, KuhnPokerState, OpenSpielAction

PASS, BET = 0, 1
JACK, QUEEN, KING = 0, 1, 2
DEALS = list(itertools.permutations((JACK, QUEEN, KING), 2))


def _payoff(cards: tuple[int, int], sequence: str) -> float:
    """Player 0's chips won, straight from the rules."""
    high = 1.0 if cards[0] > cards[1] else -1.0
    return {"pp": high, "pbp": -1.0, "pbb": 2 * high, "bp": 1.0, "bb": 2 * high}[sequence]


@pytest.mark.parametrize("sequence", ["pp", "pbp", "pbb", "bp", "bb"])
@pytest.mark.parametrize("cards", DEALS)
def test_every_betting_sequence_pays_by_the_rules(cards: tuple[int, int], sequence: str) -> None:
    state = KuhnPokerState()
    for card in cards:
        assert state.current_player() == -1
        state.apply_action(card)
    for i, move in enumerate(sequence):
        assert state.current_player() == i % 2 and not state.is_terminal()
        state.apply_action(BET if move == "b" else PASS)
    assert state.is_terminal() and state.current_player() == -4
    assert state.returns() == [_payoff(cards, sequence), -_payoff(cards, sequence)]
    assert state.information_state_string(0) == f"{cards[0]}{sequence}"


def test_the_deal_draws_two_distinct_cards() -> None:
    state = KuhnPokerState()
    assert state.chance_outcomes() == [(0, 1 / 3), (1, 1 / 3), (2, 1 / 3)]
    state.apply_action(QUEEN)
    assert state.chance_outcomes() == [(JACK, 0.5), (KING, 0.5)]


def test_info_state_shows_own_card_and_the_betting_only() -> None:
    state = KuhnPokerState()
    for action in (KING, JACK, PASS, BET):
        state.apply_action(action)
    assert state.information_state_tensor(0) == [1, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0]
    assert state.information_state_tensor(1) == [0, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0]
    assert state.observation_tensor(0) == [1, 0, 0, 0, 1, 1, 2]


def test_agent_first_against_always_pass_and_always_bet() -> None:
    env = KuhnPokerEnvironment()
    obs = env.reset(seed=0, opponent="first")
    assert obs.legal_actions == [PASS, BET] and obs.current_player_id == 0 and obs.info_state[0] == 1.0
    card = obs.info_state[2:5].index(1.0)
    obs = env.step(OpenSpielAction(action_id=BET))
    assert obs.done and obs.reward == 1.0 and obs.opponent_last_action == PASS  # the opponent folds

    obs = env.reset(seed=0, opponent="last")
    obs = env.step(OpenSpielAction(action_id=PASS))
    assert not obs.done and obs.opponent_last_action == BET and obs.info_string == f"{card}pb"
    obs = env.step(OpenSpielAction(action_id=PASS))
    assert obs.done and obs.reward == -1.0  # the agent folds

    obs = env.reset(seed=0, opponent="last")
    env.step(OpenSpielAction(action_id=PASS))
    obs = env.step(OpenSpielAction(action_id=BET))
    opponent_card = env.game.card(1)
    assert opponent_card is not None
    assert obs.done and obs.reward == (2.0 if card > opponent_card else -2.0)


def test_agent_second_sees_the_opponents_bet() -> None:
    env = KuhnPokerEnvironment()
    obs = env.reset(seed=3, opponent="last", agent_player=1)
    assert obs.opponent_last_action == BET and obs.current_player_id == 1 and obs.info_state[1] == 1.0
    assert obs.info_state[5:7] == [0.0, 1.0]  # round 0: bet
    obs = env.step(OpenSpielAction(action_id=PASS))
    assert obs.done and obs.reward == -1.0 and env.game.returns() == [1.0, -1.0]


def test_heuristic_opponent_bets_only_with_the_king() -> None:
    env = KuhnPokerEnvironment()
    seen = set()
    for seed in range(30):
        obs = env.reset(seed=seed, opponent="heuristic", agent_player=1)
        opponent_card = env.game.card(0)
        assert obs.opponent_last_action == (BET if opponent_card == KING else PASS)
        seen.add(opponent_card)
    assert seen == {JACK, QUEEN, KING}


def test_seeds_fix_the_deal_and_cover_every_deal() -> None:
    deals = set()
    for seed in range(40):
        env = KuhnPokerEnvironment()
        env.reset(seed=seed)
        deal = tuple(env.game.history[:2])
        assert KuhnPokerEnvironment().reset(seed=seed).info_state == env.game.information_state_tensor(0)
        deals.add(deal)
    assert deals == set(DEALS)


def test_random_play_pays_at_most_two_chips() -> None:
    env = KuhnPokerEnvironment()
    rng = random.Random(1)
    for seed in range(30):
        obs = env.reset(seed=seed, agent_player=1) if seed % 2 else env.reset(seed=seed)
        while not obs.done:
            obs = env.step(OpenSpielAction(action_id=rng.choice(obs.legal_actions)))
        assert obs.reward in (-2.0, -1.0, 1.0, 2.0)
        assert obs.reward == env.game.returns()[env.state.agent_player]
