"""The repl env: bundled questions, answer matching, a persistent sandboxed session, FINAL, and serving."""

from __future__ import annotations

import collections
import datetime
import math

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from openenv_train.envs.repl import ReplAction, ReplEnvironment, answers_match, bundled_questions, choose_question
from tests.conftest import serve_process
from tests.sandbox.conftest import require_sandbox


def _primes(n: int) -> list[int]:
    return [k for k in range(2, n) if all(k % d for d in range(2, math.isqrt(k) + 1))]


def _collatz(n: int) -> int:
    steps = 0
    while n != 1:
        n, steps = n // 2 if n % 2 == 0 else 3 * n + 1, steps + 1
    return steps


def _fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


# Independent computations of the bundled answers (kept out of the package: sandboxed code can read it).
REFERENCE = {
    "sum_primes_below_1000": sum(_primes(1000)),
    "count_s_mississippi": "mississippi".count("s"),
    "digit_sum_2_pow_100": sum(map(int, str(2**100))),
    "big_product": 123456789 * 987654321,
    "fib_30": _fib(30),
    "multiples_3_or_5": sum(1 for k in range(1, 1001) if k % 3 == 0 or k % 5 == 0),
    "reverse_string": "reinforcement"[::-1],
    "vowels_pangram": sum(c in "aeiou" for c in "the quick brown fox jumps over the lazy dog"),
    "trailing_zeros_100_factorial": 24,
    "gcd_1071_462": math.gcd(1071, 462),
    "power_mod": pow(17, 17, 1000),
    "primes_below_10000": len(_primes(10000)),
    "sum_of_squares_100": sum(k * k for k in range(1, 101)),
    "long_word_length": len("supercalifragilisticexpialidocious"),
    "binary_2024": format(2024, "b"),
    "collatz_27": _collatz(27),
    "most_common_letter": collections.Counter("abracadabra").most_common(1)[0][0],
    "distinct_letters": len(set("helloworld")),
    "digit_product": math.prod(range(1, 10)),
    "square_root": math.isqrt(152399025),
    "sorted_letters": "".join(sorted("python")),
    "sundays_2000": sum(datetime.date(2000, m, 1).weekday() == 6 for m in range(1, 13)),
    "palindromes_below_10000": sum(str(k) == str(k)[::-1] for k in range(1, 10000)),
    "one_seventh": round(1 / 7, 5),
    "roman_1994": 1994,
    "weekday_moon_landing": datetime.date(1969, 7, 20).strftime("%A"),
}


# -- questions and answers (no sandbox) --------------------------------------------------------------------
def test_bundled_questions_have_the_right_answers() -> None:
    questions = bundled_questions()
    assert len(questions) >= 20 and len({q.id for q in questions}) == len(questions)
    assert {q.id: q.answer for q in questions} == REFERENCE


def test_answers_match_numbers_by_value_and_text_normalised() -> None:
    assert answers_match("76127", 76127) and answers_match(" 76,127 ", 76127) and answers_match(76127.0, 76127)
    assert answers_match(0.142857, 0.1428571) and not answers_match(0.1429, 0.14286)
    assert not answers_match(121932631112635268, 121932631112635269) and answers_match("121932631112635269", 121932631112635269)
    assert answers_match("  SUNDAY\n", "Sunday") and answers_match("hello   world", "Hello World")
    assert not answers_match("Monday", "Sunday") and not answers_match(True, 1) and answers_match("nan", "NaN ")
    assert answers_match("11111101000", "11111101000") and not answers_match(None, 0)


def test_question_choice_and_its_errors() -> None:
    assert choose_question(seed=3) == choose_question(seed=3)
    assert len({choose_question(seed=s).id for s in range(40)}) > 5
    assert choose_question(task_id="collatz_27").answer == 111
    custom = choose_question(question="6*7?", answer=42)
    assert (custom.id, custom.answer) == ("custom", 42)
    with pytest.raises(ValueError, match="both options"):
        choose_question(question="6*7?")
    with pytest.raises(ValueError, match="not both"):
        choose_question(question="6*7?", answer=42, task_id="collatz_27")
    with pytest.raises(ValueError, match="did you mean 'collatz_27'"):
        choose_question(task_id="collatz27")
    with pytest.raises(ValidationError):
        ReplAction.model_validate({"code": ["x"]})
    with pytest.raises(ValidationError):
        ReplAction.model_validate({"code": "", "submit": True})


# -- the session in the sandbox -------------------------------------------------------------------------------
async def test_variables_functions_and_files_persist_between_cells() -> None:
    require_sandbox()
    env = ReplEnvironment()
    try:
        first = await env.reset(question="What is 6 * 7?", answer=42, episode_id="p")
        assert "What is 6 * 7?" in first.question and "FINAL(answer)" in first.question and first.steps_left == 20
        cells = [
            "x = 1",
            "print(x + 1)",
            "def f(y):\n    return y * x\nclass Box:\n    size = 3\nbox = Box()\ngen = (i for i in range(3))\n"
            "open('data.txt', 'w').write('saved')",
            "x = 10\nf(2), box.size, type(box).__name__, open('data.txt').read()",
            "import math\nx = 5\n1 / 0",
        ]
        obs = [await env.step(ReplAction(code=code)) for code in cells]
        assert obs[0].stdout == "" and obs[0].variables == {"x": "int"}
        assert obs[1].stdout == "2\n" and obs[1].reward == 0.0 and not obs[1].done
        assert obs[2].dropped == ["gen"] and set(obs[2].variables) == {"Box", "box", "f", "x"}
        assert obs[3].stdout == "(20, 3, 'Box', 'saved')\n"  # f sees the new x; a last expression is shown
        assert "ZeroDivisionError" in obs[4].stderr and 'File "<cell>", line 3' in obs[4].stderr
        after = await env.step(ReplAction(code="print(x, math.pi > 3)"))
        assert after.stdout == "5 True\n"  # assignments before the error were kept, as in a REPL
        assert (env.state.step_count, after.steps_left) == (6, 14)
    finally:
        env.close()


async def test_a_cell_that_never_ends_times_out_and_leaves_the_session_as_it_was() -> None:
    require_sandbox()
    env = ReplEnvironment()
    try:
        await env.reset(question="q", answer=1, wall_time_s=1.0)
        await env.step(ReplAction(code="total = 1"))
        stuck = await env.step(ReplAction(code="total = 99\nwhile True:\n    pass"))
        assert stuck.timed_out and stuck.killed_reason in ("wall_time", "cpu_time") and not stuck.done
        assert "as they were before it" in stuck.notes[0]
        after = await env.step(ReplAction(code="print(total)"))
        assert after.stdout == "1\n" and not after.timed_out
        await env.reset(question="q", answer=1, max_output_bytes=16384)
        flood = await env.step(ReplAction(code="big = 'x' * 100_000\nprint(big)"))
        assert flood.truncated and 0 < len(flood.stdout) <= 16384 and flood.variables == {"big": "str"}
    finally:
        env.close()


async def test_final_pays_one_for_a_match_zero_otherwise_and_max_steps_truncates() -> None:
    require_sandbox()
    env = ReplEnvironment()
    try:
        await env.reset(task_id="collatz_27")
        right = await env.step(ReplAction(code=(
            "n, steps = 27, 0\nwhile n != 1:\n    n = n // 2 if n % 2 == 0 else 3 * n + 1\n    steps += 1\n"
            "FINAL(steps)\nprint('not reached')")))
        assert right.done and right.reward == 1.0 and right.correct and right.answer == 111 and right.stdout == ""
        assert env.state.finished and env.state.reward == 1.0

        await env.reset(task_id="weekday_moon_landing")
        wrong = await env.step(ReplAction(code="FINAL('Monday')"))
        assert wrong.done and wrong.reward == 0.0 and wrong.correct is False and wrong.expected_answer == "Sunday"

        await env.reset(question="Name a colour.", answer="blue", max_steps=2)
        one = await env.step(ReplAction(code="c = 'red'"))
        assert not one.done and one.steps_left == 1
        two = await env.step(ReplAction(code="c"))
        assert two.done and two.max_steps_reached and two.reward == 0.0 and two.expected_answer == "blue"
        before = env.state.model_dump()
        late = await env.step(ReplAction(code="FINAL('blue')"))
        assert late.done and late.reward is None and "episode is over" in (late.error or "")
        assert env.state.model_dump() == before
    finally:
        env.close()


async def test_rejected_before_reset_and_same_seed_same_episode() -> None:
    require_sandbox()
    env = ReplEnvironment()
    early = await env.step(ReplAction(code="print(1)"))
    assert "call reset() first" in (early.error or "") and env.state.step_count == 0
    runs = []
    for _ in range(2):
        env = ReplEnvironment()
        try:
            first = await env.reset(seed=4, episode_id="same")
            second = await env.step(ReplAction(code="import random\nrandom.seed(0)\nr = random.random()\nround(r, 6)"))
            runs.append((first.model_dump(), second.model_dump(), env.state.model_dump()))
        finally:
            env.close()
    assert runs[0] == runs[1] and runs[0][1]["stdout"] == "0.844422\n"


# -- a real server process ----------------------------------------------------------------------------------
async def test_scripted_policy_through_a_real_server_and_openenv_client() -> None:
    require_sandbox()
    async with serve_process("repl") as (endpoint, _):
        async with GenericEnvClient(endpoint.base_url) as env:
            result = await env.reset(task_id="sum_primes_below_1000", episode_id="rlm")
            assert "prime" in result.observation["question"]
            result = await env.step({"code": "primes = [k for k in range(2, 1000) if all(k % d for d in range(2, k))]"})
            assert result.observation["variables"] == {"primes": "list"} and not result.done
            result = await env.step({"code": "len(primes)"})
            assert result.observation["stdout"] == "168\n"
            result = await env.step({"code": "FINAL(sum(primes))"})
            assert result.done and result.reward == 1.0 and result.observation["answer"] == 76127
            state = await env.state()
            assert (state["episode_id"], state["step_count"], state["correct"]) == ("rlm", 3, True)
            with pytest.raises(ServerError) as caught:
                await env.reset(max_steps=0)
            assert caught.value.code == "VALIDATION_ERROR"

        async with OEGenericEnvClient(base_url=endpoint.base_url) as oe:
            first = await oe.reset(question="What is 2 ** 10?", answer=1024)
            assert first.done is False and first.reward == 0.0
            r = await oe.step({"code": "x = 2 ** 10"})
            assert r.done is False and r.observation["variables"] == {"x": "int"}
            r = await oe.step({"code": "FINAL(x)"})
            assert r.done is True and r.reward == 1.0
            assert (await oe.state())["step_count"] == 2
