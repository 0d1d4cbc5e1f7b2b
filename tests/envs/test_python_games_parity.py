"""The pure-Python OpenSpiel games match pyspiel move for move (skipped when open_spiel is absent).

Random trajectories (chance outcomes drawn with their probabilities) are replayed in pyspiel,
comparing at every node: player to move, legal actions, chance outcomes, every player's
tensors and strings, action names, rewards and returns. The env-level tests then check the
observations an agent gets against pyspiel's view of the same history.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from openenv_train.envs.python_games import (
    BlackjackEnvironment,
    BlackjackState,
    CatchEnvironment,
    CatchState,
    ConnectFourEnvironment,
    ConnectFourState,
    GameState,
    KuhnPokerEnvironment,
    KuhnPokerState,
    OpenSpielAction,
    OpenSpielEnvironment,
    TicTacToeEnvironment,
    TicTacToeState,
    TwentyFortyEightEnvironment,
    TwentyFortyEightState,
)

pyspiel = pytest.importorskip(
    "pyspiel", exc_type=ImportError,
    reason="open_spiel is not importable (pip install open_spiel==2.0.2), so parity with OpenSpiel is not checked",
)

# (game factory, episodes): small boards and small max_tile reach the rarer endings (draws, max tile, length cap).
CASES: dict[str, tuple[Any, int]] = {
    "tic_tac_toe": (TicTacToeState, 150),
    "connect_four": (ConnectFourState, 25),
    "connect_four_4x5_3": (lambda: ConnectFourState(rows=4, columns=5, x_in_row=3), 40),
    "connect_four_2x3_3": (lambda: ConnectFourState(rows=2, columns=3, x_in_row=3), 20),
    "catch": (CatchState, 20),
    "catch_4x7": (lambda: CatchState(rows=4, columns=7), 20),
    "blackjack": (BlackjackState, 200),
    "2048": (TwentyFortyEightState, 3),
    "2048_max8": (lambda: TwentyFortyEightState(max_tile=8), 20),
    "2048_max64": (lambda: TwentyFortyEightState(max_tile=64), 10),
    "kuhn_poker": (KuhnPokerState, 100),
}


def _load(ours: GameState) -> Any:
    return pyspiel.load_game(ours.game_name, ours.params).new_initial_state()


def _assert_same(ours: GameState, theirs: Any) -> None:
    where = f"after history {ours.history}"
    assert ours.current_player() == theirs.current_player(), where
    assert ours.is_terminal() == theirs.is_terminal(), where
    assert ours.legal_actions() == theirs.legal_actions(), where
    assert ours.rewards() == pytest.approx(theirs.rewards()), where
    assert ours.returns() == pytest.approx(theirs.returns()), where
    if theirs.is_chance_node():
        assert ours.chance_outcomes() == [tuple(pair) for pair in theirs.chance_outcomes()], where
    for player in range(ours.num_players):
        assert ours.legal_actions(player) == theirs.legal_actions(player), where
        assert ours.observation_tensor(player) == theirs.observation_tensor(player), where
        assert ours.observation_string(player) == theirs.observation_string(player), where
        if ours.uses_information_state:
            assert ours.information_state_tensor(player) == theirs.information_state_tensor(player), where
            assert ours.information_state_string(player) == theirs.information_state_string(player), where
    player = theirs.current_player()
    if player >= 0 or player == pyspiel.PlayerId.CHANCE:
        for action in ours.legal_actions():
            assert ours.action_to_string(player, action) == theirs.action_to_string(player, action), where


@pytest.mark.parametrize("case", list(CASES))
def test_random_trajectories_match_pyspiel(case: str) -> None:
    factory, episodes = CASES[case]
    rng = random.Random(case)
    for _ in range(episodes):
        ours = factory()
        theirs = _load(ours)
        while True:
            _assert_same(ours, theirs)
            if ours.is_terminal():
                break
            action = ours.sample_chance(rng) if theirs.is_chance_node() else rng.choice(ours.legal_actions())
            ours.apply_action(action)
            theirs.apply_action(action)
        assert ours.history == theirs.history()


def test_parameters_and_sizes_match_pyspiel() -> None:
    for ours in (TicTacToeState(), ConnectFourState(), CatchState(), BlackjackState(), TwentyFortyEightState(),
                 KuhnPokerState()):
        game = pyspiel.load_game(ours.game_name)
        assert ours.params == {k: v for k, v in game.get_parameters().items() if k in ours.params}
        assert ours.num_players == game.num_players()
        assert ours.num_distinct_actions == game.num_distinct_actions()
        info = game.information_state_tensor_size() if ours.uses_information_state else game.observation_tensor_size()
        assert len(ours.info_state(0)) == info
        assert ours.uses_information_state == game.get_type().provides_information_state_tensor


ENVS: list[tuple[type[OpenSpielEnvironment], dict[str, Any]]] = [
    (TicTacToeEnvironment, {"opponent": "random"}),
    (TicTacToeEnvironment, {"opponent": "heuristic", "agent_player": 1}),
    (ConnectFourEnvironment, {"opponent": "heuristic"}),
    (CatchEnvironment, {}),
    (BlackjackEnvironment, {}),
    (TwentyFortyEightEnvironment, {"max_tile": 64}),
    (KuhnPokerEnvironment, {"opponent": "random", "agent_player": 1}),
]


@pytest.mark.parametrize(("env_cls", "options"), ENVS, ids=lambda v: getattr(v, "name", str(v)))
def test_env_observations_match_pyspiel_views(env_cls: type[OpenSpielEnvironment], options: dict[str, Any]) -> None:
    """What the agent sees is pyspiel's RL-environment view of the same history, every step."""
    rng = random.Random(env_cls.name)
    for seed in range(8):
        env = env_cls()
        obs = env.reset(seed=seed, **options)
        agent = env.state.agent_player
        theirs = _load(env.game)
        while True:
            for action in env.game.history[len(theirs.history()):]:
                theirs.apply_action(action)
            tensor = (theirs.information_state_tensor(agent) if env.game.uses_information_state
                      else theirs.observation_tensor(agent))
            assert obs.info_state == tensor
            assert obs.legal_actions == theirs.legal_actions(agent)
            assert obs.current_player_id == theirs.current_player()
            assert obs.done == theirs.is_terminal()
            if obs.game_phase != "initial":
                assert obs.reward == pytest.approx(theirs.rewards()[agent])
            if obs.done:
                break
            obs = env.step(OpenSpielAction(action_id=rng.choice(obs.legal_actions)))
