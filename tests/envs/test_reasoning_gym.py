"""The reasoning_gym env: questions from reasoning-gym, one answer scored by the dataset's score_answer."""

from __future__ import annotations

import ast
import operator
import re
import subprocess
import sys
from fractions import Fraction
from typing import Any

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from openenv_train.envs import load_env_class
from openenv_train.envs.reasoning_gym import (
    ReasoningGymAction,
    ReasoningGymEnvironment,
    ReasoningGymObservation,
)
from openenv_train.envs.reasoning_gym._datasets import Question, dataset_names, extract_answer, make_question, score_answer
from tests.conftest import serve_process

_OPS: dict[type[ast.AST], Any] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
}


def _evaluate(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))  # type: ignore[no-any-return]
    raise ValueError(f"not arithmetic: {ast.dump(node)}")


def solve_arithmetic(question: str) -> str:
    """A scripted policy for basic_arithmetic: 'Calculate EXPR.' evaluated exactly."""
    expression = question.strip().removeprefix("Calculate").strip().rstrip(".")
    value = _evaluate(ast.parse(expression, mode="eval").body)
    return str(value.numerator) if value.denominator == 1 else str(float(value))


LEGS: str = make_question("leg_counting", {}, 7, 0).answer or ""  # the reference answer of leg_counting, seed 7
assert LEGS.isdigit()
WRONG_LEGS = str(int(LEGS) + 1)


def fresh(**options: Any) -> tuple[ReasoningGymEnvironment, ReasoningGymObservation]:
    env = ReasoningGymEnvironment()
    return env, env.reset(**options)


# -- loading stays light ---------------------------------------------------------------------------------
def test_importing_the_catalog_and_loading_the_class_does_not_import_reasoning_gym() -> None:
    code = (
        "import sys\n"
        "from openenv_train.envs import load_env_class\n"
        "cls = load_env_class('reasoning_gym')\n"
        "assert cls.readme and 'score_answer' in cls.readme\n"
        "print('reasoning_gym' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
    assert load_env_class("reasoning_gym") is ReasoningGymEnvironment


# -- rules -----------------------------------------------------------------------------------------------
def test_reset_gives_a_question_and_hides_the_answer() -> None:
    env, obs = fresh(seed=7)
    assert obs.dataset == "basic_arithmetic" and obs.question.startswith("Calculate")
    assert "<answer>" in obs.answer_format and obs.reward == 0.0 and obs.done is False
    assert obs.score is None and obs.correct_answer is None and obs.error is None
    state = env.state
    assert (state.dataset, state.seed, state.index, state.step_count, state.answered) == ("basic_arithmetic", 7, 0, 0, False)


def test_one_answer_ends_the_episode_and_reveals_the_reference() -> None:
    env, obs = fresh(dataset="leg_counting", seed=7)
    result = env.step(ReasoningGymAction(answer=LEGS))
    assert (result.done, result.reward, result.score, result.correct_answer) == (True, 1.0, 1.0, LEGS)
    assert result.question == obs.question
    assert env.state.step_count == 1 and env.state.answered and env.state.score == 1.0


def test_config_is_passed_to_the_dataset() -> None:
    config = {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1, "operators": ["+"]}
    env, obs = fresh(seed=3, config=config)
    numbers = re.findall(r"\d+", obs.question)
    assert len(numbers) == 2 and all(len(n) == 1 for n in numbers) and "+" in obs.question
    assert env.state.config == config


def test_seed_and_index_pick_the_question_deterministically() -> None:
    questions = [fresh(dataset="gcd", seed=11, index=i)[1].question for i in range(3)]
    assert questions == [fresh(dataset="gcd", seed=11, index=i)[1].question for i in range(3)]
    assert len(set(questions)) == 3
    assert fresh(dataset="gcd", seed=12)[1].question != questions[0]


def test_no_seed_draws_one_and_records_it_for_replay() -> None:
    env, obs = fresh(dataset="chain_sum")
    seed = env.state.seed
    assert isinstance(seed, int)
    assert fresh(dataset="chain_sum", seed=seed)[1].question == obs.question


@pytest.mark.parametrize("name", ["leg_counting", "basic_arithmetic", "word_sorting", "sudoku", "maze"])
def test_several_datasets_work_offline(name: str) -> None:
    env, obs = fresh(dataset=name, seed=1)
    assert obs.question
    reference = ReasoningGymEnvironment()
    reference.reset(dataset=name, seed=1)
    answer = reference.step(ReasoningGymAction(answer="")).correct_answer
    assert answer is not None
    assert env.step(ReasoningGymAction(answer=answer)).reward == 1.0


def test_every_registered_dataset_is_known() -> None:
    names = dataset_names()
    assert len(names) > 100 and {"basic_arithmetic", "leg_counting", "composite"} <= set(names)


def test_the_tag_of_an_answer_is_what_gets_scored() -> None:
    assert extract_answer("thinking <answer>1</answer> more <answer> 188 </answer>") == "188"
    env, _ = fresh(dataset="leg_counting", seed=7)
    assert env.step(ReasoningGymAction(answer=f"Let me count... <answer>{LEGS}</answer>")).reward == 1.0


# -- rewards ---------------------------------------------------------------------------------------------
def test_a_wrong_answer_scores_zero() -> None:
    env, _ = fresh(dataset="leg_counting", seed=7)
    result = env.step(ReasoningGymAction(answer=WRONG_LEGS))
    assert (result.reward, result.done, result.correct_answer) == (0.0, True, LEGS)


def test_an_empty_answer_is_an_answer_worth_zero() -> None:
    env, _ = fresh(seed=7)
    result = env.step(ReasoningGymAction())
    assert result.reward == 0.0 and result.done is True


def test_a_scorer_that_raises_on_a_malformed_answer_scores_zero() -> None:
    class Raising:
        def score_answer(self, answer: str, entry: dict[str, Any]) -> float:
            return float(int(answer))

    question = Question("stub", "2 + 2?", "4", {"answer": "4"}, Raising())
    assert score_answer(question, "<answer>4</answer>") == (1.0, None)
    score, note = score_answer(question, "four")
    assert score == 0.0 and note is not None and note.startswith("score_answer raised ValueError")
    env, _ = fresh(dataset="prime_factorization", seed=1)  # whose scorer parses numbers
    result = env.step(ReasoningGymAction(answer="not a number"))
    assert result.reward == 0.0 and result.done is True


def test_verified_datasets_pay_for_any_valid_solution_and_have_no_reference() -> None:
    env, obs = fresh(dataset="graph_color", seed=1)
    assert "verified" in obs.answer_format
    result = env.step(ReasoningGymAction(answer="{}"))
    assert result.correct_answer is None and 0.0 <= (result.reward or 0.0) < 1.0


def test_rewards_stay_in_unit_interval_and_partial_credit_passes_through() -> None:
    env, _ = fresh(seed=7, index=2)
    reference = ReasoningGymEnvironment()
    reference.reset(seed=7, index=2)
    answer = reference.step(ReasoningGymAction()).correct_answer
    reward = env.step(ReasoningGymAction(answer=f"The answer is {answer}")).reward
    assert reward is not None and 0.0 < reward < 1.0


# -- invalid actions and options -------------------------------------------------------------------------
def test_a_step_before_reset_is_refused_without_counting() -> None:
    env = ReasoningGymEnvironment()
    obs = env.step(ReasoningGymAction(answer="1"))
    assert obs.error is not None and "call reset first" in obs.error and obs.done is False
    assert env.state.step_count == 0


def test_a_second_answer_is_refused_and_changes_nothing() -> None:
    env, _ = fresh(dataset="leg_counting", seed=7)
    env.step(ReasoningGymAction(answer=WRONG_LEGS))
    before = env.state.model_dump()
    again = env.step(ReasoningGymAction(answer=LEGS))
    assert again.error is not None and "answered" in again.error and "reset" in again.error
    assert again.done is True and again.reward is None and again.score == 0.0
    assert env.state.model_dump() == before


@pytest.mark.parametrize("bad", [{"answer": 5}, {"answer": None}, {"guess": "1"}, {"answer": "x" * 100_001}])
def test_wrongly_typed_actions_fail_validation(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ReasoningGymAction.model_validate(bad)


@pytest.mark.parametrize(("options", "message"), [
    ({"dataset": "leg_countin"}, "did you mean 'leg_counting'"),
    ({"config": {"seed": 3}}, "pass seed and index as reset options"),
    ({"config": {"no_such_field": 1}}, "invalid config"),
    ({"config": {"min_terms": 5, "max_terms": 2}}, "max_terms must be >= min_terms"),
    ({"index": -1}, "out of range"),
    ({"dataset": "composite"}, "invalid config"),
])
def test_a_refused_reset_names_the_problem_and_keeps_the_episode(options: dict[str, Any], message: str) -> None:
    env, obs = fresh(dataset="leg_counting", seed=7)
    before = env.state.model_dump()
    with pytest.raises(ValueError, match=message):
        env.reset(seed=1, **options)
    assert env.state.model_dump() == before
    assert env.step(ReasoningGymAction(answer=LEGS)).reward == 1.0


# -- over the wire ---------------------------------------------------------------------------------------
async def test_scripted_policy_plays_through_a_real_server() -> None:
    async with serve_process("reasoning_gym") as (endpoint, _provider):
        async with GenericEnvClient(endpoint.base_url, uds=endpoint.uds) as client:
            for index in range(3):  # the policy solves the arithmetic itself
                first = await client.reset(dataset="basic_arithmetic", seed=5, index=index, episode_id=f"ep{index}")
                assert first.done is False and first.reward == 0.0
                result = await client.step({"answer": f"<answer>{solve_arithmetic(first.observation['question'])}</answer>"})
                assert (result.done, result.reward) == (True, 1.0)
                state = await client.state()
                assert (state["episode_id"], state["step_count"], state["answered"]) == (f"ep{index}", 1, True)

            # A wrong answer reveals the reference; the same options replay the question on the server.
            await client.reset(dataset="leg_counting", seed=3)
            miss = await client.step({"answer": "-1"})
            assert miss.done is True and miss.reward == 0.0
            replay = await client.reset(dataset="leg_counting", seed=3)
            assert replay.observation["question"] and replay.observation["correct_answer"] is None
            hit = await client.step({"answer": miss.observation["correct_answer"]})
            assert (hit.done, hit.reward) == (True, 1.0)

            # Rejections: a typed action error and a bad reset leave the episode as it was.
            before = await client.state()
            with pytest.raises(ServerError) as info:
                await client.step({"answer": 5})
            assert info.value.code == "VALIDATION_ERROR"
            with pytest.raises(ServerError) as info:
                await client.reset(dataset="no_such_dataset")
            assert info.value.code == "EXECUTION_ERROR" and "no reasoning_gym dataset" in info.value.message
            assert await client.state() == before


async def test_openenv_generic_client_drives_a_real_server() -> None:
    async with serve_process("reasoning_gym") as (endpoint, _provider):
        async with OEGenericEnvClient(base_url=endpoint.base_url) as env:
            first = await env.reset(dataset="basic_arithmetic", seed=9, index=1)
            assert first.done is False and first.observation["dataset"] == "basic_arithmetic"
            answer = solve_arithmetic(first.observation["question"])
            result = await env.step({"answer": answer})
            assert (result.done, result.reward) == (True, 1.0)
            assert result.observation["correct_answer"] == answer
            again = await env.step({"answer": answer})
            assert again.done is True and again.reward is None and again.observation["error"]
            assert (await env.state())["step_count"] == 1
