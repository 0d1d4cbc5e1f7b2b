"""The model agent loop against a scripted OpenAI-compatible stub, directly and through the capturing policy
endpoint; and one run with the tiny offline model (its turns carry token ids)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_train.harbor._agents import BASH_TOOL, ModelAgent
from openenv_train.harbor._runner import HarborRunConfig, run_task
from openenv_train.trace import read_traces
from tests.harbor_tasks._stub import SOLVE, StubServer
from tests.harbor_tasks._support import EXAMPLES
from tests.sandbox.conftest import require_sandbox

HELLO = EXAMPLES / "hello-world"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    require_sandbox()
    with StubServer().running() as server:
        yield server


async def test_agent_solves_a_task_with_bash_tool_calls(stub: StubServer) -> None:
    agent = ModelAgent(base_url=stub.url, model="solver", client_capture=True, temperature=0.0)
    row = await run_task(HELLO, agent)
    assert row.ok and row.reward == 1.0 and row.done and not row.truncated, row.error
    assert row.policy.model == "solver" and row.rollout_type == "eval"  # no token ids from this server
    agent_step, verifier_step = row.steps
    assert agent_step.action == {"phase": "agent", "tool": "bash", "command": SOLVE}
    assert agent_step.observation["stdout"] == "Hello, world!\n" and agent_step.observation["exit_code"] == 0
    first, second = (request["body"] for request in stub.requests)
    assert first["tools"] == [BASH_TOOL] and first["temperature"] == 0.0 and stub.requests[0]["path"] == "/v1/chat/completions"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"].startswith("Create a file named `hello.txt`")
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_0",
                                     "content": "exit code: 0\nstdout:\nHello, world!"}
    turns = row.trace.turns  # recorded by the agent itself (client_capture)
    assert len(turns) == 2 and turns[0].request["tools"] == [BASH_TOOL]
    assert turns[0].response["choices"][0]["finish_reason"] == "tool_calls" and row.timings["model"] > 0


async def test_max_turns_truncates(stub: StubServer) -> None:
    row = await run_task(HELLO, ModelAgent(base_url=stub.url, model="looper", max_turns=3))
    assert row.ok and row.truncated and row.reward == 0.0
    assert [s.action.get("command") for s in row.steps] == ["echo again"] * 3 + ["bash /tests/test.sh"]


async def test_bad_tool_calls_are_answered_not_run(stub: StubServer) -> None:
    row = await run_task(HELLO, ModelAgent(base_url=stub.url, model="confused"))
    assert row.ok and row.reward == 0.0 and [s.action["phase"] for s in row.steps] == ["verifier"]
    tool_messages = [m["content"] for m in stub.requests[-1]["body"]["messages"] if m["role"] == "tool"]
    assert "unknown tool 'python'" in tool_messages[0] and "not valid JSON" in tool_messages[1]


async def test_a_failing_endpoint_gives_a_failed_row(stub: StubServer) -> None:
    row = await run_task(HELLO, ModelAgent(base_url=stub.url, model="broken"))
    assert not row.ok and row.error is not None and row.error.type == "ModelCallError"
    assert "HTTP 500" in row.error.message and row.done  # the tests still ran



def test_cli_model_url_goes_through_the_capturing_endpoint(stub: StubServer, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("httpx")
    from openenv_train.cli import main

    run = tmp_path / "run"
    code = main(["harbor", "run", str(HELLO), "--agent", "model", "--model", stub.url, "--model-name", "solver",
                 "-o", str(run)])
    assert code == 0, capsys.readouterr()
    (row,) = read_traces(run)
    assert row.ok and row.reward == 1.0 and row.policy.model == "solver"
    assert len(row.trace.turns) == 2  # recorded by the policy endpoint's capture session
    assert all(r["headers"].get("Authorization") is None or "harbor-" not in r["headers"]["Authorization"]
               for r in stub.requests)  # the session id stays between the agent and the endpoint
    assert "hello-world" in capsys.readouterr().out


def test_tiny_model_run_records_token_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_sandbox()
    pytest.importorskip("transformers")
    from openenv_train.cli import main
    from openenv_train.policy import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    run = tmp_path / "run"
    code = main(["harbor", "run", str(HELLO), "--agent", "model", "--model", str(model), "--max-turns", "2",
                 "--max-tokens", "16", "-o", str(run)])
    (row,) = read_traces(run)
    assert code == (0 if row.ok else 1)
    assert row.ok, row.error
    assert row.reward is not None and row.trace.turns and row.rollout_type == "train"
    turn = row.trace.turns[0]
    assert turn.prompt_token_ids and turn.completion_token_ids
    assert len(turn.per_token_logps) == len(turn.completion_token_ids)
    assert turn.request["tools"] == [BASH_TOOL]


def test_run_config_checks() -> None:
    with pytest.raises(ValueError, match="attempts and concurrency"):
        HarborRunConfig(attempts=0)
    with pytest.raises(ValueError, match="agent_timeout_s"):
        HarborRunConfig(agent_timeout_s=-1)
