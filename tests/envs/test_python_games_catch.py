"""catch: the ball falls, the paddle moves, the last step pays +1 or -1 (OpenSpiel's catch in pure Python)."""

from __future__ import annotations

from openenv_train.envs.python_games import CatchEnvironment, CatchState, OpenSpielAction

LEFT, STAY, RIGHT = 0, 1, 2


def _ball_and_paddle(info_state: list[float], rows: int = 10, columns: int = 5) -> tuple[int, int, int]:
    """(ball row, ball column, paddle column) read back from the observation tensor."""
    cells = [i for i, v in enumerate(info_state) if v == 1.0]
    paddle = next(i for i in cells if i // columns == rows - 1)
    ball = next((i for i in cells if i != paddle), paddle)
    return ball // columns, ball % columns, paddle % columns


def test_chance_drops_the_ball_in_row_zero_and_the_paddle_starts_centred() -> None:
    state = CatchState()
    assert state.current_player() == -1
    assert state.chance_outcomes() == [(c, 0.2) for c in range(5)]
    assert sum(state.observation_tensor(0)) == 0.0
    state.apply_action(4)
    assert (state.ball_row, state.ball_col, state.paddle_col) == (0, 4, 2)
    assert state.observation_string(0).splitlines()[0] == "....o"
    assert state.observation_string(0).splitlines()[-1] == "..x.."


def test_each_move_drops_the_ball_one_row_and_the_paddle_stops_at_the_walls() -> None:
    state = CatchState()
    state.apply_action(0)
    for row, (move, paddle) in enumerate([(LEFT, 1), (LEFT, 0), (LEFT, 0), (RIGHT, 1), (STAY, 1)], start=1):
        state.apply_action(move)
        assert (state.ball_row, state.paddle_col) == (row, paddle)
        assert not state.is_terminal() and state.returns() == [0.0]


def test_the_episode_lasts_rows_minus_one_steps_and_pays_one_for_a_catch() -> None:
    env = CatchEnvironment()
    obs = env.reset(seed=11)
    ball_row, ball_col, paddle = _ball_and_paddle(obs.info_state)
    assert ball_row == 0 and paddle == 2
    steps = 0
    while not obs.done:  # follow the ball
        action = STAY if ball_col == paddle else (LEFT if ball_col < paddle else RIGHT)
        obs = env.step(OpenSpielAction(action_id=action))
        steps += 1
        ball_row, ball_col, paddle = _ball_and_paddle(obs.info_state)
        assert ball_row == steps
        assert obs.reward == (1.0 if obs.done else 0.0)
    assert steps == 9 and obs.legal_actions == [] and obs.current_player_id == -4


def test_a_miss_pays_minus_one() -> None:
    env = CatchEnvironment()
    obs = env.reset(seed=11)
    _, ball_col, _ = _ball_and_paddle(obs.info_state)
    away = RIGHT if ball_col <= 2 else LEFT
    while not obs.done:
        obs = env.step(OpenSpielAction(action_id=away))
    assert obs.reward == -1.0


def test_the_seed_sets_the_column_and_every_column_is_drawn() -> None:
    columns = {}
    for seed in range(40):
        obs = CatchEnvironment().reset(seed=seed)
        columns[seed] = _ball_and_paddle(obs.info_state)[1]
        assert CatchEnvironment().reset(seed=seed).info_state == obs.info_state
    assert set(columns.values()) == {0, 1, 2, 3, 4}


def test_grid_size_options() -> None:
    env = CatchEnvironment()
    obs = env.reset(seed=0, rows=4, columns=7)
    assert len(obs.info_state) == 28 and env.state.game_params == {"rows": 4, "columns": 7}
    assert env.state.opponent_policy == "none" and env.state.num_players == 1
    for _ in range(3):
        obs = env.step(OpenSpielAction(action_id=STAY))
    assert obs.done and obs.reward in (1.0, -1.0)


def test_out_of_range_moves_are_rejected() -> None:
    env = CatchEnvironment()
    before = env.reset(seed=2)
    for bad in (3, -1):
        after = env.step(OpenSpielAction(action_id=bad))
        assert after.illegal_action and "out of range: catch action ids are 0..2" in after.message
        assert "0=LEFT, 1=STAY, 2=RIGHT" in after.message
        assert after.info_state == before.info_state and len(env.game.history) == 1  # just the ball drop
    assert env.state.step_count == 2 and env.state.illegal_action_count == 2
