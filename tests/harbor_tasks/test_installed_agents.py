"""The real, pinned agent CLIs (Claude Code, Codex, OpenCode, Gemini CLI, Qwen Code, mini-swe-agent) complete
hello-world in the OS sandbox through the capture proxy, driven by a scripted backend that answers with each
agent's own tools; the sandbox reaches the proxy and nothing else; a missing agent is a clear error naming the
install command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openenv_train.cli import main
from openenv_train.harbor import (
    AGENT_SPECS,
    SANDBOX_PROXY_PORT,
    AgentNotInstalled,
    CommandAgent,
    InstalledAgent,
    run_task,
    shell_script_reply,
)
from openenv_train.policy import PolicyServer, ScriptedBackend
from openenv_train.trace import CaptureStore, read_traces
from tests import _system_parts
from tests.harbor_tasks._support import EXAMPLES
from tests.sandbox.conftest import require_sandbox

HELLO = EXAMPLES / "hello-world"
WRITE = "echo 'Hello, world!' > hello.txt"

@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("transformers", reason="transformers is not installed")
    from transformers import AutoTokenizer

    from openenv_train.policy import build_tiny_model

    return AutoTokenizer.from_pretrained(build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0))


def require_agents() -> None:
    require_sandbox()
    _system_parts.require("agents")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("agent", list(AGENT_SPECS))
async def test_agent_cli_completes_hello_world_through_the_proxy(agent: str, tokenizer: Any) -> None:
    require_agents()
    store = CaptureStore()
    async with PolicyServer(ScriptedBackend(shell_script_reply(agent, WRITE), tokenizer), capture=store) as server:
        row = await run_task(HELLO, InstalledAgent(agent, server.url), capture=store)
    assert row.ok and row.reward == 1.0, (row.error, [s.observation for s in row.steps])
    agent_step = row.steps[0]
    assert agent_step.action["tool"] == agent and agent_step.observation["exit_code"] == 0
    turns = row.trace.turns
    assert len(turns) >= 2 and row.rollout_type == "train"  # every call captured with token ids and logprobs
    assert all(t.prompt_token_ids and t.completion_token_ids and t.per_token_logps for t in turns)
    dialect = AGENT_SPECS[agent].dialect
    assert {t.metadata.get("dialect") for t in turns} == {None if dialect == "openai_chat" else dialect}
    graph = row.trace.call_graph()
    assert graph.main is not None and len(graph.main.node_ids) >= 2
    # the call after the tool ran extends the call that made it, token for token
    first, then = graph.main.node_ids[-2:]
    assert graph.node(then).parent == first
    calls = [t for t in turns if t.node_id in graph.main.node_ids]
    assert WRITE in json.dumps(calls[0].response)


async def test_the_sandbox_reaches_the_proxy_and_nothing_else(tmp_path: Path) -> None:
    """A command agent probes the network from inside: the forwarder answers, the host's ports and the world do not."""
    require_sandbox()
    tmp_path.chmod(0o755)  # the sandbox's unprivileged user reads the mounted folder
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import json, socket, sys, urllib.request\n"
        "out = {}\n"
        "req = urllib.request.Request(sys.argv[1] + '/v1/models', headers={'Authorization': 'Bearer ' + sys.argv[2]})\n"
        "out['proxy'] = json.load(urllib.request.urlopen(req, timeout=10))['data'][0]['id']\n"
        "for name, address in (('host_port', ('127.0.0.1', int(sys.argv[3]))), ('world', ('1.1.1.1', 80))):\n"
        "    try:\n"
        "        socket.create_connection(address, timeout=3).close()\n"
        "        out[name] = 'reached'\n"
        "    except OSError as exc:\n"
        "        out[name] = type(exc).__name__\n"
        "print(json.dumps(out))\n"
        "open('hello.txt', 'w').write('Hello, world!\\n')\n")
    store = CaptureStore()
    async with PolicyServer(ScriptedBackend(lambda m: "hi", model_id="scripted"), capture=store) as server:
        port = server.url.rsplit(":", 1)[1]
        agent = CommandAgent(f"python3 {probe} {{base_url}} {{api_key}} {port}", server.url, ro_paths=[str(tmp_path)])
        row = await run_task(HELLO, agent, capture=store)
    assert row.ok and row.reward == 1.0, (row.error, [s.observation for s in row.steps])
    seen = json.loads(row.steps[0].observation["stdout"].strip().splitlines()[-1])
    assert seen["proxy"] == "scripted"
    assert seen["host_port"] != "reached" and seen["world"] != "reached", seen
    assert row.steps[0].action["command"].startswith(f"python3 {probe} http://127.0.0.1:{SANDBOX_PROXY_PORT} harbor-")


async def test_a_missing_agent_names_the_install_command(tmp_path: Path) -> None:
    require_sandbox()
    agent = InstalledAgent("codex", "http://127.0.0.1:9", agents_dir=tmp_path)
    with pytest.raises(AgentNotInstalled, match="openenv-train agents install codex"):
        agent.check()
    row = await run_task(HELLO, agent)
    assert not row.ok and row.error is not None and row.error.type == "AgentNotInstalled"
    assert "openenv-train agents install codex" in row.error.message


def test_cli_names_the_install_command_and_checks_its_options(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_TRAIN_AGENTS_DIR", str(tmp_path / "empty"))
    run = ["harbor", "run", str(HELLO), "-o", str(tmp_path / "run")]
    assert main([*run, "--agent", "codex", "--model", "http://127.0.0.1:9"]) == 1
    assert "openenv-train agents install codex" in capsys.readouterr().err
    assert main([*run, "--agent", "codex"]) == 2  # no --model: the model the proxy serves
    assert main([*run, "--agent", "command", "--model", "x"]) == 2  # no --agent-command
    assert main(["agents", "install", "no-such-agent"]) == 2
    assert "the agents are: mini-swe-agent, claude-code" in capsys.readouterr().err


def test_cli_runs_an_agent_cli_against_an_upstream_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``harbor run --agent claude-code --model URL``: the proxy in front of an upstream server, end to end."""
    require_agents()
    upstream = ScriptedBackend(shell_script_reply("claude-code", WRITE), model_id="upstream-model")
    with PolicyServer(upstream) as server:
        code = main(["harbor", "run", str(HELLO), "--agent", "claude-code", "--model", server.url,
                     "-o", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert code == 0, out
    (row,) = read_traces(tmp_path / "run")
    assert row.reward == 1.0 and row.task["agent"] == "claude-code" and len(row.trace.turns) >= 2
    assert {t.metadata.get("dialect") for t in row.trace.turns} == {"anthropic_messages"}


def test_cli_runs_a_command_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--agent command --agent-command ...``: any CLI line, its placeholders filled in."""
    require_sandbox()
    with PolicyServer(ScriptedBackend(lambda m: "hi", model_id="upstream-model")) as server:
        code = main(["harbor", "run", str(HELLO), "--agent", "command", "--model", server.url, "--model-name", "m1",
                     "--agent-command", "echo {model} {base_url} && printf 'Hello, world!\\n' > hello.txt",
                     "-o", str(tmp_path / "run")])
    assert code == 0, capsys.readouterr().out
    (row,) = read_traces(tmp_path / "run")
    assert row.reward == 1.0 and row.task["agent"] == "command"
    assert row.steps[0].observation["stdout"].startswith(f"m1 http://127.0.0.1:{SANDBOX_PROXY_PORT}")
