"""The coding env: bundled tasks, sandboxed runs, hidden-test grading, rules, and serving over the wire."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from openenv_train.envs import run_limits
from openenv_train.envs.coding import (
    CodingAction,
    CodingEnvironment,
    CodingTask,
    RunLimits,
    bundled_tasks,
    choose_task,
)
from openenv_train.envs.coding._grade_harness import equal
from openenv_train.sandbox import SandboxUnavailable
from tests.conftest import serve_inloop, serve_process
from tests.sandbox.conftest import require_sandbox

# Reference solutions of the bundled tasks (kept out of the package: sandboxed code can read the package).
REFERENCE = {
    "fizzbuzz": '''
def fizzbuzz(n):
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)
''',
    "is_palindrome": '''
def is_palindrome(s):
    kept = [c.lower() for c in s if c.isalnum()]
    return kept == kept[::-1]
''',
    "two_sum": '''
def two_sum(nums, target):
    seen = {}
    for j, x in enumerate(nums):
        if target - x in seen:
            return [seen[target - x], j]
        seen.setdefault(x, j)
''',
    "reverse_words": '''
def reverse_words(s):
    return " ".join(reversed(s.split()))
''',
    "count_vowels": '''
def count_vowels(s):
    return sum(c in "aeiou" for c in s.lower())
''',
    "factorial": '''
def factorial(n):
    out = 1
    for k in range(2, n + 1):
        out *= k
    return out
''',
    "fibonacci": '''
def fibonacci(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
''',
    "is_prime": '''
def is_prime(n):
    if n < 2:
        return False
    k = 2
    while k * k <= n:
        if n % k == 0:
            return False
        k += 1
    return True
''',
    "gcd": '''
def gcd(a, b):
    while b:
        a, b = b, a % b
    return a
''',
    "flatten": '''
def flatten(nested):
    out = []
    for item in nested:
        if isinstance(item, list):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out
''',
    "max_subarray_sum": '''
def max_subarray_sum(nums):
    best = cur = nums[0]
    for x in nums[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best
''',
    "is_anagram": '''
def is_anagram(a, b):
    norm = lambda s: sorted(c for c in s.lower() if c != " ")
    return norm(a) == norm(b)
''',
    "run_length_encode": '''
def run_length_encode(s):
    out = []
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append(f"{s[i]}{j - i}")
        i = j
    return "".join(out)
''',
    "roman_to_int": '''
def roman_to_int(s):
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, c in enumerate(s):
        v = values[c]
        if i + 1 < len(s) and values[s[i + 1]] > v:
            total -= v
        else:
            total += v
    return total
''',
    "binary_search": '''
def binary_search(nums, target):
    lo, hi = 0, len(nums) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if nums[mid] == target:
            return mid
        if nums[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
''',
    "merge_sorted": '''
def merge_sorted(a, b):
    return sorted(a + b)
''',
    "valid_parentheses": '''
def valid_parentheses(s):
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for c in s:
        if c in "([{":
            stack.append(c)
        elif c in pairs:
            if not stack or stack.pop() != pairs[c]:
                return False
    return not stack
''',
    "word_count": '''
import re
def word_count(text):
    counts = {}
    for word in re.findall(r"[a-z]+", text.lower()):
        counts[word] = counts.get(word, 0) + 1
    return counts
''',
    "transpose": '''
def transpose(matrix):
    return [list(row) for row in zip(*matrix)]
''',
    "second_largest": '''
def second_largest(nums):
    distinct = sorted(set(nums))
    return distinct[-2] if len(distinct) >= 2 else None
''',
    "digit_sum": '''
def digit_sum(n):
    return sum(int(d) for d in str(abs(n)))
''',
    "caesar_cipher": '''
def caesar_cipher(s, shift):
    out = []
    for c in s:
        if c.isascii() and c.isalpha():
            base = ord("a") if c.islower() else ord("A")
            out.append(chr((ord(c) - base + shift) % 26 + base))
        else:
            out.append(c)
    return "".join(out)
''',
    "dedupe": '''
def dedupe(items):
    seen = set()
    out = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
''',
    "chunk": '''
def chunk(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]
''',
    "longest_common_prefix": '''
def longest_common_prefix(words):
    if not words:
        return ""
    prefix = words[0]
    for w in words[1:]:
        while not w.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
''',
    "to_binary": '''
def to_binary(n):
    return bin(n)[2:]
''',
}

HALF_FIZZBUZZ = "def fizzbuzz(n):\n    return 'Fizz' if n % 3 == 0 else str(n)\n"
"""Right for multiples of 3 that are not multiples of 5 and for other numbers: 4 of the 8 hidden tests."""


def _call_on_host(source: str, function: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return json.loads(json.dumps(namespace[function](*json.loads(json.dumps(args)), **kwargs)))


# -- bundled tasks and task choice (no sandbox) ----------------------------------------------------------
def test_bundled_tasks_are_well_formed_and_their_reference_solutions_pass() -> None:
    tasks = bundled_tasks()
    assert len(tasks) >= 20 and len({t.id for t in tasks}) == len(tasks)
    assert {t.id for t in tasks} == set(REFERENCE)
    for task in tasks:
        assert task.function in task.prompt and len(task.tests) >= 4
        for test in task.tests:
            got = _call_on_host(REFERENCE[task.id], task.function, test.args, test.kwargs)
            assert equal(test.expected, got), (task.id, test)
        assert not all(equal(task.tests[0].expected, t.expected) for t in task.tests), f"{task.id}: tests too uniform"


def test_equality_of_results_is_json_equality_with_strict_bools() -> None:
    assert equal([1, [2, 3]], [1, [2, 3]]) and equal({"a": 1}, {"a": 1.0}) and equal(0.3, 0.1 + 0.2)
    assert not equal(True, 1) and not equal(0, False) and not equal("1", 1) and not equal([1], [1, 2])
    assert not equal(None, 0) and equal(None, None) and not equal({"a": 1}, {"b": 1})


def test_task_choice_by_seed_id_or_custom_task_and_its_errors() -> None:
    assert choose_task(seed=7) == choose_task(seed=7)
    assert len({choose_task(seed=s).id for s in range(40)}) > 5
    assert choose_task(task_id="two_sum").function == "two_sum"
    with pytest.raises(ValueError, match="did you mean 'two_sum'"):
        choose_task(task_id="two_summ")
    custom = {"prompt": "Double it.", "function": "double", "tests": [{"args": [2], "expected": 4}]}
    assert choose_task(task=custom).id == "custom"
    with pytest.raises(ValueError, match="not both"):
        choose_task(task=custom, task_id="fizzbuzz")
    with pytest.raises(ValidationError):
        choose_task(task={"prompt": "x", "function": "not a name", "tests": []})
    with pytest.raises(ValueError, match="wall_time_s"):
        RunLimits(wall_time_s=61)
    with pytest.raises(ValueError, match="max_output_bytes"):
        RunLimits().with_options(max_output_bytes=10)


def test_action_validation_rejects_wrong_types_extra_fields_and_huge_code() -> None:
    with pytest.raises(ValidationError):
        CodingAction.model_validate({"code": 123})
    with pytest.raises(ValidationError):
        CodingAction.model_validate({"code": "", "language": "c"})
    with pytest.raises(ValidationError):
        CodingAction(code="x" * 100_001)
    with pytest.raises(ValidationError, match="120000 bytes"):
        CodingAction(code="é" * 99_000)  # fewer chars than the cap, but too long for one argv string
    with pytest.raises(ValidationError, match="NUL"):
        CodingAction(code="print(1)\0")
    assert CodingAction.model_validate({}) == CodingAction(code="", submit=False)


# -- the env in the sandbox -------------------------------------------------------------------------------
async def test_runs_share_a_scratch_dir_and_a_busy_loop_times_out_without_ending_the_episode() -> None:
    require_sandbox()
    env = CodingEnvironment()
    try:
        first = await env.reset(task_id="fizzbuzz", wall_time_s=1.0, episode_id="e1")
        assert first.task_id == "fizzbuzz" and "fizzbuzz(n: int)" in first.prompt and first.reward == 0.0
        wrote = await env.step(CodingAction(code="open('notes.txt', 'w').write('kept'); print('hi')"))
        assert (wrote.stdout, wrote.exit_code, wrote.reward, wrote.done) == ("hi\n", 0, 0.0, False)
        stuck = await env.step(CodingAction(code="while True: pass"))
        assert stuck.timed_out and stuck.killed_reason in ("wall_time", "cpu_time") and not stuck.done
        after = await env.step(CodingAction(code="import sys; print(open('notes.txt').read()); sys.exit(3)"))
        assert (after.stdout, after.exit_code, after.timed_out) == ("kept\n", 3, False)
        assert (env.state.step_count, env.state.runs, env.state.submitted) == (3, 3, False)
        # A new episode gets a new, empty scratch dir; the output cap is a reset option.
        await env.reset(task_id="fizzbuzz", max_output_bytes=16384)
        fresh = await env.step(CodingAction(code="import os; print(os.listdir('.'))"))
        assert fresh.stdout == "[]\n"
        flood = await env.step(CodingAction(code="print('x' * 100_000)"))
        assert flood.truncated and 0 < len(flood.stdout) <= 16384 and not flood.done
    finally:
        env.close()


async def test_rejected_steps_leave_the_episode_unchanged() -> None:
    require_sandbox()
    env = CodingEnvironment()
    try:
        early = await env.step(CodingAction(code="print(1)"))
        assert "call reset() first" in (early.error or "") and early.exit_code is None
        assert env.state.step_count == 0
        await env.reset(task_id="fizzbuzz", episode_id="e")
        done = await env.step(CodingAction(code=REFERENCE["fizzbuzz"], submit=True))
        assert done.done and done.reward == 1.0
        before = env.state.model_dump()
        late = await env.step(CodingAction(code="print(1)"))
        assert late.done and late.reward is None and "already ended" in (late.error or "") and late.stdout == ""
        assert env.state.model_dump() == before
    finally:
        env.close()


async def test_hidden_tests_are_out_of_reach_of_runs_and_of_the_graded_code() -> None:
    require_sandbox()
    marker = "hidden-" + "c4f1e9"
    task = {"id": "secret", "prompt": "Return the secret.", "function": "secret",
            "tests": [{"args": [], "expected": marker}, {"args": [1], "expected": marker}]}
    snoop = """
import gc, os
marker = "".join(["hidden-", "c4f1e9"]).encode()
found, denied = [], []
for root in ("/scratch", "/tmp", "/dev/shm", os.path.expanduser("~")):
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                if marker in open(os.path.join(dirpath, name), "rb").read():
                    found.append(name)
            except OSError:
                pass
for pid in (p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
    for what in ("cmdline", "environ", "fd/0"):
        try:
            if marker in open(f"/proc/{pid}/{what}", "rb").read(1 << 20):
                found.append(f"{pid}/{what}")
        except OSError:
            pass
    try:
        open(f"/proc/{pid}/mem", "rb").close()
    except OSError:
        denied.append(pid)
here = globals()
if any(marker.decode() in repr(o)[:10000] for o in gc.get_objects() if isinstance(o, dict | list) and o is not here):
    found.append("gc")
print("found", found, "others", sorted(set(p for p in os.listdir("/proc") if p.isdigit()) - {str(os.getpid())}),
      "denied", denied)

def secret(*args):
    return "guess"
"""
    # The snoop walks every readable file and object, slow on a busy machine: the longest limit, not the default.
    env = CodingEnvironment(wall_time_s=run_limits.MAX_WALL_TIME_S)
    try:
        await env.reset(task=CodingTask.model_validate(task))
        run = await env.step(CodingAction(code=snoop))
        assert run.exit_code == 0 and "found []" in run.stdout, run.stdout + run.stderr
        graded = await env.step(CodingAction(code=snoop, submit=True))
        assert graded.done and graded.reward == 0.0 and graded.tests_total == 2
        assert "found []" in graded.stdout, graded.stdout
        # The grader (the worker's parent, which holds the expected values) is there but unreadable.
        others = graded.stdout.split("others ")[1].split(" denied")[0]
        assert others != "[]" and graded.stdout.split("denied ")[1].strip() != "[]"
        assert graded.test_results[0].error == f'expected "{marker}", got "guess"'
    finally:
        env.close()


async def test_bundled_hidden_tests_are_not_readable_through_the_package_mount() -> None:
    require_sandbox()
    env = CodingEnvironment()
    try:
        await env.reset(task_id="fizzbuzz")
        run = await env.step(CodingAction(code=(
            "import importlib.resources as r\n"
            "print('FizzBuzz' in r.files('openenv_train.envs.coding').joinpath('tasks.json').read_text())")))
        assert run.stdout != "True\n"
    finally:
        env.close()


async def test_grading_survives_hangs_crashes_and_bad_results_test_by_test() -> None:
    require_sandbox()
    code = """
import os, time
def fizzbuzz(n):
    if n == 15:
        time.sleep(60)
    if n == 5:
        os._exit(3)
    if n == 7:
        return {7}
    if n == 1:
        raise ValueError("no ones")
    return "Fizz" if n % 3 == 0 else str(n)
"""
    env = CodingEnvironment()
    try:
        await env.reset(task_id="fizzbuzz", wall_time_s=1.0)
        graded = await env.step(CodingAction(code=code, submit=True))
        errors = [r.error or "" for r in graded.test_results]
        # args 3, 5, 15, 7, 30, 1, 99, 100: 3 and 99 pass.
        assert graded.tests_passed == 2 and graded.reward == pytest.approx(2 / 8)
        assert "exited" in errors[1] and "timed out" in errors[2] and "not JSON" in errors[3]
        assert "ValueError: no ones" in errors[5] and graded.timed_out
        await env.reset(task_id="fizzbuzz", wall_time_s=1.0)
        broken = await env.step(CodingAction(code="def fizzbuzz(n) return n", submit=True))
        assert broken.reward == 0.0 and "SyntaxError" in broken.stderr
        await env.reset(task_id="fizzbuzz", wall_time_s=1.0)
        missing = await env.step(CodingAction(code="print('no function here')", submit=True))
        assert missing.reward == 0.0 and "no function named 'fizzbuzz'" in missing.stderr
        assert missing.stdout == "no function here\n"
    finally:
        env.close()


async def test_same_seed_same_episode() -> None:
    require_sandbox()
    runs = []
    for _ in range(2):
        env = CodingEnvironment()
        try:
            first = await env.reset(seed=11, episode_id="same")
            second = await env.step(CodingAction(code="print(sum(range(10)))"))
            runs.append((first.model_dump(), second.model_dump(), env.state.model_dump()))
        finally:
            env.close()
    assert runs[0] == runs[1] and runs[0][1]["stdout"] == "45\n"


async def test_an_unavailable_sandbox_fails_reset_with_the_fix_and_never_runs_code(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(config: Any) -> Any:
        raise SandboxUnavailable("bubblewrap ('bwrap') is not installed or not on PATH; install bubblewrap >= 0.8")

    monkeypatch.setattr(run_limits, "Sandbox", refuse)
    env = CodingEnvironment()
    with pytest.raises(SandboxUnavailable, match="install bubblewrap.*never unsandboxed"):
        await env.reset(task_id="fizzbuzz")
    assert env.state.task_id == ""
    async with serve_inloop(CodingEnvironment) as server, GenericEnvClient(server.url) as client:
        with pytest.raises(ServerError) as caught:
            await client.reset(task_id="fizzbuzz")
        assert caught.value.code == "EXECUTION_ERROR" and "install bubblewrap" in caught.value.message


# -- a real server process ----------------------------------------------------------------------------------
async def test_scripted_policies_through_a_real_server_and_openenv_client() -> None:
    require_sandbox()
    async with serve_process("coding") as (endpoint, _):
        async with GenericEnvClient(endpoint.base_url) as env:
            result = await env.reset(task_id="fizzbuzz", episode_id="good")
            assert "fizzbuzz" in result.observation["prompt"] and not result.done
            result = await env.step({"code": REFERENCE["fizzbuzz"] + "print(fizzbuzz(15))"})
            assert result.observation["stdout"] == "FizzBuzz\n" and not result.done
            result = await env.step({"code": REFERENCE["fizzbuzz"], "submit": True})
            assert result.done and result.reward == 1.0 and result.observation["tests_passed"] == 8
            state = await env.state()
            assert (state["episode_id"], state["step_count"], state["submitted"]) == ("good", 2, True)

            result = await env.reset(task_id="fizzbuzz", episode_id="half")
            result = await env.step({"code": HALF_FIZZBUZZ, "submit": True})
            assert result.done and result.reward is not None and 0.0 < result.reward < 1.0 and result.reward == 0.5

            custom = {"id": "double", "prompt": "Double x.", "function": "double",
                      "tests": [{"args": [2], "expected": 4}, {"kwargs": {"x": -1}, "expected": -2}]}
            result = await env.reset(task=custom)
            assert result.observation["task_id"] == "double" and "Double x." in result.observation["prompt"]
            result = await env.step({"code": "def double(x):\n    return x + x", "submit": True})
            assert result.done and result.reward == 1.0

            with pytest.raises(ServerError) as caught:
                await env.reset(task_id="fizzbuzz", wall_time_s=1000)
            assert caught.value.code == "VALIDATION_ERROR"
            with pytest.raises(ServerError) as caught:
                await env.step({"code": 5})
            assert caught.value.code == "VALIDATION_ERROR"

        async with OEGenericEnvClient(base_url=endpoint.base_url) as oe:
            first = await oe.reset(task_id="two_sum")
            assert first.observation["function_name"] == "two_sum" and first.done is False
            r = await oe.step({"code": "print(2 + 2)"})
            assert r.observation["stdout"] == "4\n" and r.reward == 0.0 and r.done is False
            r = await oe.step({"code": REFERENCE["two_sum"], "submit": True})
            assert r.done is True and r.reward == 1.0
            assert (await oe.state())["step_count"] == 2
