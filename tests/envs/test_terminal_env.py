"""The terminal env: a tmux shell in the sandbox, keystrokes and screens, hung commands, checks, both clients."""

from __future__ import annotations

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.envs.terminal import (
    TerminalAction,
    TerminalEnv,
    TerminalEnvironment,
    bundled_terminal_tasks,
    pick_terminal_task,
)
from tests import _system_parts
from tests.conftest import serve_inloop
from tests.sandbox.conftest import require_sandbox

# Reference solutions (kept out of the package: sandboxed code can read it).
SOLUTIONS = {
    "make_file": "mkdir -p project/src && echo ready > project/src/main.txt\n",
    "count_errors": "grep -c ERROR log.txt > count.txt\n",
    "sort_unique": "sort -u names.txt > unique.txt\n",
    "run_script": "chmod +x run.sh && ./run.sh\n",
    "replace_host": "find conf -name '*.conf' -exec sed -i s/localhost/db.internal/g {} +\n",
}


def bundled_tasks_file() -> str:
    from importlib import resources

    return str(resources.files("openenv_train.envs.terminal").joinpath("tasks.json"))


def _require() -> None:
    require_sandbox()
    _system_parts.require("tmux")


def test_bundled_tasks_and_action_validation() -> None:
    assert list(bundled_terminal_tasks()) == list(SOLUTIONS)
    assert pick_terminal_task(None, 4, None) == pick_terminal_task(None, 4, None)
    with pytest.raises(ValueError, match="did you mean 'make_file'"):
        pick_terminal_task("make_fil", None, None)
    with pytest.raises(ValidationError):
        TerminalAction(wait_s=0)
    with pytest.raises(ValidationError):
        TerminalAction(keystrokes=["ls"])  # type: ignore[arg-type]


async def test_a_hung_command_is_stopped_and_the_check_decides_the_reward() -> None:
    _require()
    env = TerminalEnvironment(width=60, height=12)
    try:
        first = await env.reset(task_id="count_errors", episode_id="e")
        assert first.screen.startswith("$") and "count.txt" in first.prompt and not first.busy
        hung = await env.step(TerminalAction(keystrokes="sleep 60\n", wait_s=0.3))
        assert hung.busy and hung.screen.endswith("$ sleep 60") and not hung.done
        stopped = await env.step(TerminalAction(keys=["C-c"], wait_s=5))
        assert not stopped.busy and "^C" in stopped.screen
        peek = await env.step(TerminalAction(keystrokes=f"cat {bundled_tasks_file()} | wc -c\n", wait_s=5))
        assert peek.screen.splitlines()[-2] == "0", "the bundled checks are hidden from the sandbox"
        wrong = await env.step(TerminalAction(keystrokes="echo 2 > count.txt\n", submit=True, wait_s=5))
        assert wrong.done and wrong.passed is False and wrong.reward == 0.0
        late = await env.step(TerminalAction())
        assert late.error is not None and "reset()" in late.error

        await env.reset(task_id="sort_unique")
        solved = await env.step(TerminalAction(keystrokes=SOLUTIONS["sort_unique"], submit=True, wait_s=5))
        assert solved.done and solved.passed and solved.reward == 1.0 and env.state.submitted
        with pytest.raises(ValueError, match="setup script"):
            await env.reset(task={"prompt": "p", "setup": "exit 4", "check": "true"})  # type: ignore[arg-type]
    finally:
        await env.close()


async def test_openenv_generic_client_and_the_typed_client_solve_tasks_over_the_wire() -> None:
    _require()
    async with serve_inloop(TerminalEnvironment) as server:
        async with OEGenericEnvClient(base_url=server.url) as oe:
            first = await oe.reset(task_id="make_file")
            assert first.observation["screen"] == "$" and first.done is False
            result = await oe.step({"keystrokes": SOLUTIONS["make_file"], "submit": True, "wait_s": 5})
            assert result.done is True and result.reward == 1.0
        async with TerminalEnv(base_url=server.url) as env:
            await env.reset(task_id="run_script")
            typed = await env.step(TerminalAction(keystrokes=SOLUTIONS["run_script"], submit=True, wait_s=5))
            assert typed.done and typed.reward == 1.0 and typed.observation.passed is True
