"""connect4: gravity, lines, draws, rewards, opponents, options (OpenSpiel's connect_four in pure Python)."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from openenv_train.envs.python_games import ConnectFourEnvironment, ConnectFourState, OpenSpielAction


def _state(*columns: int, **params: int) -> ConnectFourState:
    state = ConnectFourState(**params)
    for col in columns:
        state.apply_action(col)
    return state


# -- rules -------------------------------------------------------------------------------------------------
def test_pieces_fall_to_the_lowest_free_row() -> None:
    state = _state(3, 3, 3)
    assert state.observation_string(0).splitlines()[-3:] == ["...x...", "...o...", "...x..."]
    tensor = state.observation_tensor(0)
    size = 6 * 7
    assert tensor[0 * size + 0 * 7 + 3] == 1.0  # plane x, row 0 (bottom), column 3
    assert tensor[1 * size + 1 * 7 + 3] == 1.0  # plane o, row 1
    assert tensor[2 * size + 3 * 7 + 3] == 1.0  # row 3 is still empty
    assert sum(tensor) == size


def test_a_full_column_is_not_legal() -> None:
    state = _state(0, 0, 0, 0, 0, 0)
    assert 0 not in state.legal_actions() and state.legal_actions() == [1, 2, 3, 4, 5, 6]
    assert state.illegal_reason(0) == "column 0 is full"


@pytest.mark.parametrize(("moves", "winner"), [
    ((3, 0, 3, 0, 3, 0, 3), 0),                     # vertical
    ((0, 0, 1, 1, 2, 2, 3), 0),                     # horizontal
    ((0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3), 0),         # diagonal up-right
    ((6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3), 0),         # diagonal up-left
    ((6, 0, 6, 1, 5, 2, 5, 3), 1),                  # o wins on the bottom row
])
def test_four_in_a_row_wins(moves: tuple[int, ...], winner: int) -> None:
    state = _state(*moves)
    assert state.is_terminal() and state.current_player() == -4
    assert state.returns() == ([1.0, -1.0] if winner == 0 else [-1.0, 1.0])
    assert not _state(*moves[:-1]).is_terminal()


def test_a_full_board_without_a_line_is_a_draw() -> None:
    state = _state(0, 1, rows=1, columns=2, x_in_row=2)
    assert state.is_terminal() and state.returns() == [0.0, 0.0]
    assert _state(0, 1, 2, 0, 1, 2, rows=2, columns=3, x_in_row=3).returns() == [0.0, 0.0]


# -- rewards and options -----------------------------------------------------------------------------------
def test_stacking_beats_the_first_legal_opponent() -> None:
    env = ConnectFourEnvironment()
    env.reset(seed=0, opponent="first")
    rewards = [env.step(OpenSpielAction(action_id=6)).reward for _ in range(4)]
    assert rewards == [0.0, 0.0, 0.0, 1.0] and env.game.history == [6, 0, 6, 0, 6, 0, 6]


def test_the_last_legal_opponent_wins_on_the_right_edge() -> None:
    env = ConnectFourEnvironment()
    obs = env.reset(seed=0, opponent="last", agent_player=1)
    assert obs.opponent_last_action == 6
    rewards = [env.step(OpenSpielAction(action_id=0)).reward for _ in range(3)]
    assert rewards == [0.0, 0.0, -1.0]


def test_board_size_options_follow_openspiel_parameters() -> None:
    env = ConnectFourEnvironment()
    obs = env.reset(seed=0, rows=4, columns=5, x_in_row=3, opponent="first")
    assert len(obs.info_state) == 3 * 4 * 5 and obs.legal_actions == [0, 1, 2, 3, 4]
    assert env.state.game_params == {"rows": 4, "columns": 5, "x_in_row": 3}
    assert env.state.game_name == "connect_four"
    rewards = [env.step(OpenSpielAction(action_id=4)).reward for _ in range(3)]
    assert rewards[-1] == 1.0
    model = ConnectFourEnvironment.spec_info().reset_model
    for bad in ({"rows": 0}, {"columns": 99}, {"x_in_row": 1}, {"agent_player": 2}):
        with pytest.raises(ValidationError):
            model.model_validate(bad)


# -- opponents ---------------------------------------------------------------------------------------------
def test_heuristic_wins_blocks_and_avoids_handing_over_a_win() -> None:
    rng = random.Random(0)
    assert _state(0, 6, 0, 6, 0, 6).heuristic_action(rng) == 0   # x wins in column 0
    assert _state(0, 6, 0, 6, 0).heuristic_action(rng) == 0      # o blocks column 0
    assert _state().heuristic_action(rng) == 3                   # the centre first
    # x holds row 1, columns 0-2: o dropping into empty column 3 would let x win at row 1, column 3.
    state = _state(0, 1, 2, 6, 0, 6, 1, 5, 2)
    assert state.current_player() == 1 and state._gives_win_above(3, 1)
    assert {state.heuristic_action(random.Random(seed)) for seed in range(20)} == {2, 4}


def test_heuristic_opponent_beats_a_random_agent_most_of_the_time() -> None:
    env = ConnectFourEnvironment()
    losses = 0
    for seed in range(10):
        obs = env.reset(seed=seed, opponent="heuristic")
        rng = random.Random(seed)
        while not obs.done:
            obs = env.step(OpenSpielAction(action_id=rng.choice(obs.legal_actions)))
        losses += obs.reward == -1.0
    assert losses >= 8
