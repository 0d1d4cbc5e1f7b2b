"""Catalog rubrics on rows of real episodes: Wordle, the games, coding, reasoning_gym."""

from __future__ import annotations

import pytest

from openenv_train.core import OpenEnvTrainError
from openenv_train.rubrics import get_rubric, wordle_rubric
from openenv_train.trace import EnvInfo, EnvStep, TraceRow

from ._rows import wordle_row


def test_wordle_won_by_the_solver() -> None:
    result = wordle_rubric()(wordle_row("crane"))
    c = result.components
    assert (c["correct"], c["greens"], c["format"], c["repetition"], c["invalid_guesses"]) == (1.0, 1.0, 1.0, 1.0, 0.0)
    assert result.total == c["wordle"] == pytest.approx(1.0 + 0.2 + 0.1 * (c["yellows"] or 0.0) + 0.1 + 0.1)


def test_wordle_invalid_repeated_and_unformatted_guesses() -> None:
    row = wordle_row("crane", ["[slate]", "slate", "[crate]", "[zzzzz]"])
    c = wordle_rubric()(row).components
    assert c["correct"] == 0.0
    assert c["format"] == 0.75
    assert c["repetition"] == pytest.approx(3 / 4)
    assert c["invalid_guesses"] == pytest.approx(2 / 4)
    assert c["greens"] == pytest.approx(4 / 5)  # crate vs crane
    assert wordle_rubric()(TraceRow(env=EnvInfo(name="wordle"))).components["correct"] is None


def _game_row(final: float) -> TraceRow:
    return TraceRow(env=EnvInfo(name="tic_tac_toe"), done=True, reward=final,
                    steps=[EnvStep(action={"action_id": 4}, reward=0.0), EnvStep(action={"action_id": 0}, reward=final,
                                                                                  done=True)])


@pytest.mark.parametrize(("final", "win", "draw", "loss"), [(1.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0),
                                                            (-1.0, 0.0, 0.0, 1.0)])
def test_games_win_draw_loss(final: float, win: float, draw: float, loss: float) -> None:
    result = get_rubric("tic_tac_toe")(_game_row(final))
    assert (result.components["win"], result.components["draw"], result.components["loss"]) == (win, draw, loss)
    assert result.total == win - loss


def test_coding_tests_passed() -> None:
    row = TraceRow(env=EnvInfo(name="coding"), steps=[
        EnvStep(action={"code": "x"}, observation={"stdout": ""}),
        EnvStep(action={"code": "y", "submit": True}, observation={"tests_passed": 3, "tests_total": 4}, done=True)])
    assert get_rubric("coding")(row).components["tests_passed"] == 0.75
    assert get_rubric("coding")(TraceRow(env=EnvInfo(name="coding"))).total is None


def test_reasoning_gym_rescored_by_its_scorer() -> None:
    pytest.importorskip("reasoning_gym")
    from openenv_train.envs.reasoning_gym import ReasoningGymEnvironment
    from openenv_train.envs.reasoning_gym._models import ReasoningGymAction

    env = ReasoningGymEnvironment()
    obs = env.reset(seed=3, dataset="basic_arithmetic")
    answer = env._question.answer  # type: ignore[union-attr]
    rows = []
    for text in (str(answer), "not a number"):
        env.reset(seed=3, dataset="basic_arithmetic")
        done = env.step(ReasoningGymAction(answer=text))
        rows.append(TraceRow(env=EnvInfo(name="reasoning_gym"), task={"dataset": "basic_arithmetic", "seed": 3},
                             steps=[EnvStep(action={"answer": text}, observation=done.model_dump(mode="json"),
                                            reward=done.reward, done=True)]))
    rubric = get_rubric("reasoning_gym")
    assert obs.question and [rubric(r).total for r in rows] == [1.0, 0.0]
    assert [rubric(r).total for r in rows] == [r.steps[-1].reward for r in rows]


def test_unknown_rubric_suggests_close_names() -> None:
    with pytest.raises(OpenEnvTrainError, match="did you mean 'wordle'"):
        get_rubric("wordel")
    assert get_rubric("openenv_train.rubrics:wordle_rubric").name == "wordle"
