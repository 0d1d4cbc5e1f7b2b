"""The runner in the real sandbox: timeouts, reward files, Harbor's paths, Dockerfile steps, custom agents."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from openenv_train.harbor._agents import AgentContext, NopAgent, OracleAgent
from openenv_train.harbor._runner import HarborRunConfig, parse_rewards, run_task
from openenv_train.harbor._task_errors import RewardFileError
from tests.harbor_tasks._support import write_task
from tests.sandbox.conftest import require_sandbox

TXT, JSON = "/logs/verifier/reward.txt", "/logs/verifier/reward.json"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


class Bash:
    """A custom agent: any object with a name and ``async run(ctx)``; this one runs fixed commands."""

    name = "bash-script"

    def __init__(self, *commands: str) -> None:
        self.commands = commands

    async def run(self, ctx: AgentContext) -> None:
        for command in self.commands:
            await ctx.bash(command)


class Stuck:
    """An agent that hangs outside bash() (as a stuck model call would)."""

    name = "stuck"

    async def run(self, ctx: AgentContext) -> None:
        await asyncio.sleep(60)


async def test_agent_timeout_gives_a_failed_row(tmp_path: Path) -> None:
    task = write_task(tmp_path, "slow", agent_timeout=1, solve_sh="#!/bin/bash\nsleep 30\ntouch /app/done.txt\n")
    started = time.monotonic()
    row = await run_task(task, OracleAgent())
    assert time.monotonic() - started < 10
    assert not row.ok and row.error is not None and row.error.type == "AgentTimeoutError"
    assert "agent timeout" in row.error.message and "timeout_sec = 1s" in row.error.message
    assert row.truncated and row.steps[0].observation["timed_out"]
    assert row.reward == 0.0 and row.done  # the tests still ran, as in Harbor


async def test_an_agent_stuck_outside_bash_is_stopped(tmp_path: Path) -> None:
    row = await run_task(write_task(tmp_path, "t", agent_timeout=0.5), Stuck())
    assert not row.ok and row.error is not None and row.error.type == "AgentTimeoutError"
    assert row.timings["agent"] < 3


async def test_verifier_timeout_gives_a_failed_row(tmp_path: Path) -> None:
    task = write_task(tmp_path, "t", verifier_timeout=1, test_sh="#!/bin/bash\nsleep 30\necho 1 > /logs/verifier/reward.txt\n")
    row = await run_task(task, OracleAgent())
    assert not row.ok and row.error is not None and row.error.type == "VerifierTimeoutError"
    assert "verifier timeout ([verifier] timeout_sec = 1s)" in row.error.message
    assert row.reward is None and not row.done


async def test_timeout_override_and_multiplier(tmp_path: Path) -> None:
    task = write_task(tmp_path, "t", agent_timeout=60, solve_sh="#!/bin/bash\nsleep 30\n")
    row = await run_task(task, OracleAgent(), config=HarborRunConfig(agent_timeout_s=2, timeout_multiplier=0.5))
    assert row.error is not None and "timeout_sec = 1s" in row.error.message


async def test_reward_json_without_reward_key_averages(tmp_path: Path) -> None:
    test_sh = "#!/bin/bash\necho '{\"tests\": 1, \"style\": 0, \"note\": \"ok\"}' > /logs/verifier/reward.json\n"
    row = await run_task(write_task(tmp_path, "t", test_sh=test_sh), NopAgent())
    assert row.ok and row.reward == 0.5 and row.rewards == {"tests": 1.0, "style": 0.0}


async def test_no_reward_file_is_an_error_naming_the_paths(tmp_path: Path) -> None:
    row = await run_task(write_task(tmp_path, "t", test_sh="#!/bin/bash\necho checked\n"), NopAgent())
    assert not row.ok and row.error is not None and row.error.type == "RewardFileError"
    assert "/logs/verifier/reward.txt" in row.error.message and "checked" in row.error.message


async def test_a_reward_planted_by_the_agent_does_not_count(tmp_path: Path) -> None:
    plant = Bash("mkdir -p /app/.harbor/logs/verifier && echo 1 > /app/.harbor/logs/verifier/reward.txt")
    row = await run_task(write_task(tmp_path, "t", test_sh="#!/bin/bash\ntrue\n"), plant)
    assert row.error is not None and row.error.type == "RewardFileError" and row.reward is None


async def test_harbor_paths_in_tests_and_solution_are_mapped(tmp_path: Path) -> None:
    check = ("import json, pathlib\n"
             "ok = pathlib.Path('/app/done.txt').read_text() == pathlib.Path('/tests/expected.txt').read_text()\n"
             "pathlib.Path('/logs/verifier/reward.json').write_text(json.dumps({'reward': float(ok)}))\n")
    task = write_task(tmp_path, "t", test_sh="#!/bin/bash\ncd /tests && python3 check.py\n",
                      test_files={"check.py": check, "expected.txt": "data\n"},
                      solve_sh="#!/bin/bash\ncp /solution/data.txt /app/done.txt\n")
    (task / "solution" / "data.txt").write_text("data\n")
    row = await run_task(task, OracleAgent())
    assert row.ok and row.reward == 1.0, row


async def test_dockerfile_env_run_and_copy_steps_run_in_the_sandbox(tmp_path: Path) -> None:
    dockerfile = ("FROM python:3.12-slim\nWORKDIR /app\nENV GREETING=hi\nCOPY tool.sh data/ ./\n"
                  "RUN ./tool.sh > made.txt\nWORKDIR /app/sub\n")
    test_sh = ('#!/bin/bash\ncd /app\n[ "$(cat made.txt)" = "hi from tool" ] && [ -x tool.sh ] && [ -f item.txt ] '
               '&& [ "$(cat sub/where)" = /app/sub ] && echo 1 > /logs/verifier/reward.txt '
               '|| echo 0 > /logs/verifier/reward.txt\n')
    task = write_task(tmp_path, "t", dockerfile=dockerfile, test_sh=test_sh,
                      env_files={"tool.sh": "#!/bin/bash\necho \"$GREETING from tool\"\n", "data/item.txt": "x"})
    (task / "environment" / "tool.sh").chmod(0o755)
    row = await run_task(task, Bash("pwd > where"))
    assert row.ok and row.reward == 1.0, row


async def test_a_failing_dockerfile_step_is_named(tmp_path: Path) -> None:
    task = write_task(tmp_path, "t", dockerfile="FROM x\nWORKDIR /app\nRUN cat /no/such/file\n")
    row = await run_task(task, NopAgent())
    assert not row.ok and row.error is not None and row.error.type == "EnvironmentSetupError"
    assert "RUN cat /no/such/file" in row.error.message and row.steps == []


async def test_verifier_env_templates_resolve(tmp_path: Path) -> None:
    toml = ('[verifier]\ntimeout_sec = 30\nenv = { TOKEN = "${OPENENV_TRAIN_SURELY_UNSET:-fallback}", LEVEL = "3" }\n'
            '[environment]\nenv = { SEEN = "yes" }\n')
    test_sh = ('#!/bin/bash\n[ "$TOKEN" = fallback ] && [ "$LEVEL" = 3 ] && [ "$(cat /app/seen)" = yes ] '
               '&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n')
    row = await run_task(write_task(tmp_path, "t", toml=toml, test_sh=test_sh), Bash('echo "$SEEN" > seen'))
    assert row.ok and row.reward == 1.0, row


async def test_step_outputs_are_bounded(tmp_path: Path) -> None:
    row = await run_task(write_task(tmp_path, "t"), Bash("python3 -c \"print('x' * 100000)\""),
                         config=HarborRunConfig(step_output_limit=1000))
    stdout = row.steps[0].observation["stdout"]
    assert len(stdout) < 1100 and "characters omitted" in stdout


def test_parse_rewards_rules() -> None:
    assert parse_rewards({TXT: b" 0.25\n"}) == (0.25, {})
    assert parse_rewards({JSON: b'{"a": 1, "b": true}', TXT: b"0.5"}) == (0.5, {"a": 1.0})
    assert parse_rewards({JSON: b'{"reward": 0, "a": 1}', TXT: b"0.5"}) == (0.0, {"reward": 0.0, "a": 1.0})
    for files, words in [({}, "wrote no reward"), ({TXT: b""}, "is empty"), ({TXT: b"abc"}, "not a number"),
                         ({TXT: b"nan"}, "finite"), ({JSON: b"[1]"}, "JSON object"), ({JSON: b"{"}, "not valid JSON"),
                         ({JSON: b'{"note": "x"}'}, "holds no numbers")]:
        with pytest.raises(RewardFileError, match=words):
            parse_rewards(files)
