"""2048: sliding, merging, scoring, legality, seeded spawns, endings (OpenSpiel's 2048 in pure Python)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from openenv_train.envs.python_games import OpenSpielAction, TwentyFortyEightEnvironment, TwentyFortyEightState

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3


def _board(*rows: list[int], max_tile: int = 2048) -> TwentyFortyEightState:
    state = TwentyFortyEightState(max_tile=max_tile)
    state.set_board([v for row in rows for v in row] + [0] * (16 - 4 * len(rows)))
    return state


def _rows(state: TwentyFortyEightState) -> list[list[int]]:
    return [[state.tile(r, c) for c in range(4)] for r in range(4)]


@pytest.mark.parametrize(("row", "move", "after", "points"), [
    ([2, 2, 2, 2], LEFT, [4, 4, 0, 0], 8),
    ([2, 2, 2, 2], RIGHT, [0, 0, 4, 4], 8),
    ([4, 4, 8, 0], LEFT, [8, 8, 0, 0], 8),       # a merged tile does not merge again in the same move
    ([2, 0, 0, 2], LEFT, [4, 0, 0, 0], 4),
    ([2, 4, 2, 4], LEFT, [2, 4, 2, 4], 0),
    ([0, 2, 2, 4], RIGHT, [0, 0, 4, 4], 4),
    ([8, 0, 4, 4], LEFT, [8, 8, 0, 0], 8),
])
def test_rows_slide_and_equal_tiles_merge_once(row: list[int], move: int, after: list[int], points: int) -> None:
    state = _board(row, [16, 32, 64, 128], [128, 64, 32, 16], [16, 32, 64, 128])
    if after == row:
        assert move not in state.legal_actions()
        return
    state.apply_action(move)
    assert _rows(state)[0] == after
    assert state.rewards() == [float(points)] and state.returns() == [float(points)]
    assert state.current_player() == -1  # a tile spawns next


def test_columns_slide_up_and_down() -> None:
    state = _board([2, 0, 0, 0], [2, 0, 0, 0], [4, 0, 0, 0])
    state.apply_action(DOWN)
    assert [row[0] for row in _rows(state)] == [0, 0, 4, 4] and state.rewards() == [4.0]


def test_only_moves_that_change_the_board_are_legal() -> None:
    state = _board([2, 4, 0, 0])
    assert state.legal_actions() == [RIGHT, DOWN]
    assert state.illegal_reason(UP) == "moving Up would not change the board"


def test_spawns_are_twos_nine_times_in_ten_in_free_cells() -> None:
    state = _board([2, 4, 8, 16], [32, 64, 128, 256], [2, 4, 8, 16], [0, 0, 0, 2])
    state.apply_action(LEFT)  # frees cell (3, 3)... and moves the 2 to (3, 0)
    outcomes = state.chance_outcomes()
    assert outcomes == [(26, 0.9 / 3), (27, 0.1 / 3), (28, 0.9 / 3), (29, 0.1 / 3), (30, 0.9 / 3), (31, 0.1 / 3)]
    rng = random.Random(0)
    drawn = Counter(state.sample_chance(rng) % 2 for _ in range(4000))
    assert 0.87 < drawn[0] / 4000 < 0.93
    state.apply_action(31)
    assert state.tile(3, 3) == 4 and state.current_player() == 0
    assert state.action_to_string(-1, 31) == "4 added to row 4, column 4"


def test_the_game_starts_with_two_spawned_tiles_set_by_the_seed() -> None:
    boards = set()
    for seed in range(10):
        env = TwentyFortyEightEnvironment()
        obs = env.reset(seed=seed)
        assert len(env.game.history) == 2 and sum(v > 0 for v in obs.info_state) == 2
        assert set(obs.info_state) <= {0.0, 2.0, 4.0}
        assert TwentyFortyEightEnvironment().reset(seed=seed).info_state == obs.info_state
        boards.add(tuple(obs.info_state))
    assert len(boards) >= 9


def test_same_seed_same_spawns_through_the_game() -> None:
    def play(seed: int) -> list[list[float]]:
        env = TwentyFortyEightEnvironment()
        obs = env.reset(seed=seed)
        boards = [obs.info_state]
        for _ in range(30):
            obs = env.step(OpenSpielAction(action_id=obs.legal_actions[0]))
            boards.append(obs.info_state)
        return boards

    assert play(5) == play(5) and play(5) != play(6)


def test_step_rewards_add_up_to_the_score() -> None:
    env = TwentyFortyEightEnvironment()
    obs = env.reset(seed=1, max_tile=64)
    total = 0.0
    while not obs.done:
        obs = env.step(OpenSpielAction(action_id=obs.legal_actions[-1]))
        assert obs.reward is not None and obs.reward >= 0 and obs.reward % 4 == 0
        total += obs.reward
    assert total == env.game.total_score > 0


def test_the_game_ends_at_max_tile_or_when_stuck() -> None:
    state = _board([32, 32, 0, 0], max_tile=64)
    state.apply_action(LEFT)
    assert state.is_terminal() and state.current_player() == -4 and state.legal_actions() == []
    stuck = _board([2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 2])
    assert stuck.is_terminal()
    assert not _board([2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 4]).is_terminal()


def test_max_tile_is_validated() -> None:
    for bad in (4, 100, 2**18):
        with pytest.raises(ValueError, match="power of two"):
            TwentyFortyEightState(max_tile=bad)
    with pytest.raises(ValueError):
        TwentyFortyEightEnvironment.spec_info().reset_model.model_validate({"max_tile": 100})


def test_a_move_that_changes_nothing_is_rejected_with_the_reason() -> None:
    env = TwentyFortyEightEnvironment()
    env.reset(seed=0, illegal_action_reward=-1.0)
    env.game.set_board([2, 4, 0, 0] + [0] * 12)
    history = list(env.game.history)
    after = env.step(OpenSpielAction(action_id=UP))
    assert after.illegal_action and "action_id 0 (Up) is illegal: moving Up would not change the board" in after.message
    assert "Legal action ids: [1, 2] (1=Right, 2=Down)" in after.message
    assert after.info_state == [2.0, 4.0] + [0.0] * 14 and after.legal_actions == [RIGHT, DOWN]
    assert after.reward == -1.0 and env.game.history == history
