"""tic_tac_toe: rules, rewards, opponents, illegal moves (OpenSpiel's tic_tac_toe in pure Python)."""

from __future__ import annotations

import random

import pytest

from openenv_train.envs.python_games import OpenSpielAction, TicTacToeEnvironment, TicTacToeState


def _state(*cells: int) -> TicTacToeState:
    state = TicTacToeState()
    for cell in cells:
        state.apply_action(cell)
    return state


def _play(env: TicTacToeEnvironment, *cells: int) -> list[float | None]:
    return [env.step(OpenSpielAction(action_id=cell)).reward for cell in cells]


# -- rules -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("moves", "winner"), [
    ((0, 3, 1, 4, 2), 0),         # x: top row
    ((0, 1, 3, 2, 6), 0),         # x: left column
    ((0, 1, 4, 2, 8), 0),         # x: main diagonal
    ((1, 2, 0, 4, 3, 6), 1),      # o: anti-diagonal
    ((0, 3, 1, 4, 8, 5), 1),      # o: middle row
])
def test_lines_win_and_end_the_game(moves: tuple[int, ...], winner: int) -> None:
    state = _state(*moves)
    assert state.is_terminal() and state.current_player() == -4 and state.legal_actions() == []
    assert state.returns() == ([1.0, -1.0] if winner == 0 else [-1.0, 1.0])
    assert not _state(*moves[:-1]).is_terminal()


def test_full_board_without_a_line_is_a_draw() -> None:
    state = _state(4, 0, 2, 6, 3, 5, 1, 7, 8)
    assert state.is_terminal() and state.returns() == [0.0, 0.0]
    assert state.observation_string(0) == "oxx\nxxo\noox"


def test_players_alternate_and_cells_fill() -> None:
    state = _state(4)
    assert state.current_player() == 1
    assert state.legal_actions() == [0, 1, 2, 3, 5, 6, 7, 8]
    assert state.legal_actions(0) == []  # not player 0's turn
    assert state.action_to_string(1, 5) == "o(1,2)"
    tensor = state.observation_tensor(0)
    assert tensor[9 * 2 + 4] == 1.0 and tensor[4] == 0.0  # plane 2 (x) has cell 4; plane 0 (empty) lost it
    assert sum(tensor) == 9.0


# -- rewards -----------------------------------------------------------------------------------------------
def test_win_loss_and_draw_rewards_against_the_first_legal_opponent() -> None:
    env = TicTacToeEnvironment()
    env.reset(seed=0, opponent="first")
    assert _play(env, 0, 2, 4, 7, 8) == [0.0, 0.0, 0.0, 0.0, 1.0]  # x takes 0, 4, 8
    assert env.game.history == [0, 1, 2, 3, 4, 5, 7, 6, 8]

    env.reset(seed=0, opponent="first")
    rewards = _play(env, 8, 7, 5)  # o (first legal) takes 0, 1, 2
    assert rewards == [0.0, 0.0, -1.0] and env.game.history == [8, 0, 7, 1, 5, 2]

    env.reset(seed=0, opponent="first")
    assert _play(env, 1, 3, 4, 6, 8)[-1] == 0.0
    assert env.game.is_terminal() and env.game.returns() == [0.0, 0.0]


def test_agent_as_o_moves_second_and_is_paid_from_its_side() -> None:
    env = TicTacToeEnvironment()
    obs = env.reset(seed=0, opponent="first", agent_player=1)
    assert obs.opponent_last_action == 0 and obs.legal_actions == list(range(1, 9))
    assert obs.current_player_id == 1 and obs.game_phase == "initial" and obs.info_string == "x..\n...\n..."
    rewards = _play(env, 8, 7)  # x (first legal) plays 0, 1, 2
    assert rewards == [0.0, -1.0] and env.state.agent_player == 1


# -- opponents ---------------------------------------------------------------------------------------------
def test_heuristic_opponent_wins_when_it_can_and_blocks_otherwise() -> None:
    rng = random.Random(0)
    assert _state(0, 3, 1, 4, 8).heuristic_action(rng) == 5   # o completes the middle row
    assert _state(0, 4, 1).heuristic_action(rng) == 2          # o blocks x's top row
    assert _state(0).heuristic_action(rng) == 4                # o takes the centre
    assert _state(4).heuristic_action(rng) in (0, 2, 6, 8)     # then a corner


def test_the_heuristic_opponent_is_harder_to_beat_than_the_random_one() -> None:
    env = TicTacToeEnvironment()
    agent_wins = {}
    for opponent in ("random", "heuristic"):
        wins = 0
        for seed in range(30):
            obs = env.reset(seed=seed, opponent=opponent)
            rng = random.Random(seed)
            while not obs.done:
                obs = env.step(OpenSpielAction(action_id=rng.choice(obs.legal_actions)))
            wins += obs.reward == 1.0
        agent_wins[opponent] = wins
    assert agent_wins["heuristic"] < agent_wins["random"] / 2


# -- illegal moves -----------------------------------------------------------------------------------------
def test_an_occupied_cell_is_rejected_and_changes_nothing() -> None:
    env = TicTacToeEnvironment()
    before = env.reset(seed=4, opponent="first")
    env.step(OpenSpielAction(action_id=4))  # o answers with 0
    mid = env.step(OpenSpielAction(action_id=8))  # o answers with 1
    history, state = list(env.game.history), env.state.model_dump()
    rejected = env.step(OpenSpielAction(action_id=0))
    assert rejected.illegal_action and rejected.done is False and rejected.reward == 0.0
    assert "cell (0,0) is already taken by o" in rejected.message
    assert f"Legal action ids: {mid.legal_actions}" in rejected.message
    assert rejected.model_dump(exclude={"illegal_action", "message"}) == mid.model_dump(exclude={"illegal_action", "message"})
    assert env.game.history == history
    assert env.state.model_dump() == {**state, "step_count": 3, "illegal_action_count": 1}
    assert before.game_phase == "initial" and mid.game_phase == "playing"
    assert env.step(OpenSpielAction(action_id=2)).reward == 0.0  # the game goes on


def test_moves_after_the_end_are_rejected_with_done_still_true() -> None:
    env = TicTacToeEnvironment()
    env.reset(seed=0, opponent="first", illegal_action_reward=-0.5)
    final = env.step(OpenSpielAction(action_id=0))
    for cell in (2, 4, 7, 8):
        final = env.step(OpenSpielAction(action_id=cell))
    assert final.done and final.game_phase == "terminal" and final.legal_actions == []
    after = env.step(OpenSpielAction(action_id=3))
    assert after.done and after.illegal_action and after.reward == -0.5 and "episode is over" in after.message
    assert after.info_state == final.info_state and env.game.returns() == [1.0, -1.0]
