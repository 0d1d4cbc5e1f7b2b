"""MCP servers declared in task.toml, given to the model agent: the mcp-lookup example (a stdio key-value server
that runs inside the task's sandbox) with the oracle and with a scripted model that calls the MCP tool; and
the failure paths (a server that exits, unknown tools, tool errors)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_train.harbor._agents import BASH_TOOL, ModelAgent, OracleAgent
from openenv_train.harbor._mcp import McpToolset, tool_function_name
from openenv_train.harbor._runner import HarborRunConfig, run_task, run_tasks
from openenv_train.harbor._task_env import SandboxTaskEnv
from openenv_train.harbor._tasks import load_task
from openenv_train.trace import TraceRow
from tests.harbor_tasks._stub import StubServer
from tests.harbor_tasks._support import EXAMPLES, write_task
from tests.sandbox.conftest import require_sandbox

LOOKUP = EXAMPLES / "mcp-lookup"
KV_TOOLS = ["mcp__kv__lookup", "mcp__kv__list_keys"]


@pytest.fixture
def stub() -> Iterator[StubServer]:
    require_sandbox()
    with StubServer().running() as server:
        yield server


def _task_with_servers(root: Path, name: str, servers: str) -> Path:
    """A task whose environment ships the kv server, and declares ``servers`` (TOML)."""
    server = (LOOKUP / "environment" / "tools" / "kv_server.py").read_text()
    toml = f'version = "1.0"\n[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 30\n{servers}'
    return write_task(root, name, toml=toml, env_files={"tools/kv_server.py": server},
                      dockerfile="FROM python:3.12-slim\nWORKDIR /app\nCOPY tools/kv_server.py /app/tools/kv_server.py\n")


def test_the_example_declares_a_stdio_server() -> None:
    (server,) = load_task(LOOKUP).config.environment.mcp_servers
    assert (server.name, server.transport, server.command, server.args) == (
        "kv", "stdio", "python3", ["/app/tools/kv_server.py"])
    assert tool_function_name("kv", "lookup") == "mcp__kv__lookup"
    assert tool_function_name("my server", "a.b" * 40).startswith("mcp__my_server__a_b") and \
        len(tool_function_name("my server", "a.b" * 40)) == 64


async def test_oracle_solves_the_example() -> None:
    require_sandbox()
    row = await run_task(LOOKUP, OracleAgent())
    assert row.ok and row.reward == 1.0, row.error


async def test_the_toolset_runs_the_server_in_the_sandbox() -> None:
    require_sandbox()
    task = load_task(LOOKUP)
    env = SandboxTaskEnv(task)
    await env.start()
    try:
        async with McpToolset(task, env) as tools:
            assert list(tools.tools) == KV_TOOLS
            lookup = tools.tools["mcp__kv__lookup"].schema["function"]
            assert lookup["parameters"]["required"] == ["key"] and "[MCP server kv]" in lookup["description"]
            assert await tools.call("mcp__kv__lookup", {"key": "owner"}, timeout_s=10) == ("platform-team", False)
            text, is_error = await tools.call("mcp__kv__lookup", {"key": "nope"}, timeout_s=10)
            assert is_error and text == "error: no such key: 'nope'"
            text, is_error = await tools.call("mcp__kv__list_keys", {}, timeout_s=10)
            assert text.splitlines() == ["build-number", "owner", "release-codename"] and not is_error
    finally:
        await env.close()


async def test_model_agent_calls_the_mcp_tool(stub: StubServer) -> None:
    agent = ModelAgent(base_url=stub.url, model="mcp-solver", client_capture=True, temperature=0.0)
    row = await run_task(LOOKUP, agent)
    assert row.ok and row.reward == 1.0 and row.done and not row.truncated, row.error
    first = stub.requests[0]["body"]
    assert [t["function"]["name"] for t in first["tools"]] == ["bash", *KV_TOOLS] and first["tools"][0] == BASH_TOOL
    assert "mcp__<server>__<tool>" in first["messages"][0]["content"]
    second = stub.requests[1]["body"]["messages"]
    assert second[-1] == {"role": "tool", "tool_call_id": "call_0", "content": "blue-heron-42"}  # reached the model
    mcp_step, bash_step, verifier_step = row.steps
    assert mcp_step.action == {"phase": "agent", "tool": "mcp", "server": "kv", "name": "lookup",
                               "function": "mcp__kv__lookup", "arguments": {"key": "release-codename"}}
    assert mcp_step.observation == {"content": "blue-heron-42", "is_error": False} and mcp_step.seconds
    assert bash_step.action["tool"] == "bash" and "blue-heron-42" in bash_step.action["command"]
    assert verifier_step.action["phase"] == "verifier" and verifier_step.reward == 1.0
    assert row.trace.turns[0].request["tools"] == first["tools"]  # recorded turns carry the MCP tools too


async def test_unknown_tools_and_tool_errors_go_back_to_the_model(stub: StubServer) -> None:
    row = await run_task(LOOKUP, ModelAgent(base_url=stub.url, model="mcp-confused"))
    assert row.ok and row.reward == 0.0, row.error
    unknown, failed = (m["content"] for m in stub.requests[-1]["body"]["messages"] if m["role"] == "tool")
    assert unknown == "error: unknown tool 'mcp__kv__nope'; the tools are: bash, " + ", ".join(KV_TOOLS)
    assert failed == "error: no such key: 'missing'"
    mcp_step, verifier_step = row.steps  # the unknown tool ran nothing; the failed lookup is recorded
    assert mcp_step.action["name"] == "lookup" and mcp_step.observation["is_error"] is True


async def test_a_server_that_exits_fails_only_its_task(stub: StubServer, tmp_path: Path) -> None:
    servers = {
        "broken": 'name = "kv"\ntransport = "stdio"\ncommand = "bash"\n'
                  'args = ["-c", "echo kv is broken on purpose >&2; exit 3"]\n',
        "missing": 'name = "ghost"\ntransport = "stdio"\ncommand = "no-such-mcp-server"\n',
        "fine": 'name = "kv"\ntransport = "stdio"\ncommand = "python3"\nargs = ["tools/kv_server.py"]\n',
    }
    for name, server in servers.items():
        _task_with_servers(tmp_path, name, f"[[environment.mcp_servers]]\n{server}")
    rows: dict[str, TraceRow] = {row.task["name"]: row for row in await run_tasks(
        [tmp_path], ModelAgent(base_url=stub.url, model="solver"), config=HarborRunConfig(concurrency=3))}
    for name, server in (("broken", "kv"), ("missing", "ghost")):
        row = rows[name]
        assert not row.ok and row.error is not None and row.error.type == "McpServerError", row.error
        assert f"MCP server {server!r}" in row.error.message and f"of task {name}" in row.error.message
        assert "failed to start or list its tools" in row.error.message
    assert "kv is broken on purpose" in rows["broken"].error.message  # type: ignore[union-attr]
    assert "no-such-mcp-server" in rows["missing"].error.message  # type: ignore[union-attr]
    assert rows["fine"].ok and rows["fine"].error is None  # relative args run in the WORKDIR
    assert all(m["role"] != "tool" or "unknown" not in m["content"] for r in stub.requests
               for m in r["body"]["messages"])


async def test_a_server_that_never_answers_times_out(stub: StubServer, tmp_path: Path) -> None:
    task = _task_with_servers(tmp_path, "silent", '[[environment.mcp_servers]]\nname = "mute"\ntransport = "stdio"\n'
                              'command = "sleep"\nargs = ["30"]\n')
    row = await asyncio.wait_for(run_task(task, ModelAgent(base_url=stub.url, mcp_connect_timeout_s=2)), 20)
    assert not row.ok and row.error is not None and row.error.type == "McpServerError"
    assert "'mute'" in row.error.message and "within 2s" in row.error.message and stub.requests == []


CALC_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


server.run(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]))
"""


@pytest.fixture
def calc_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A real MCP server (the ``mcp`` SDK) serving ``request.param`` (sse or streamable-http); yields its URL."""
    transport = request.param
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = tmp_path / "calc_server.py"
    script.write_text(CALC_SERVER)
    proc = subprocess.Popen([sys.executable, str(script), transport, str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the MCP test server did not start: {proc.stderr.read() if proc.stderr else ''}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize("calc_server", ["sse", "streamable-http"], indirect=True)
async def test_url_servers_are_reached_from_the_agent(calc_server: str, tmp_path: Path) -> None:
    transport = "sse" if calc_server.endswith("/sse") else "streamable-http"
    task_dir = _task_with_servers(tmp_path, "calc", f'[[environment.mcp_servers]]\nname = "calc"\n'
                                  f'transport = "{transport}"\nurl = "{calc_server}"\n')
    task = load_task(task_dir)
    async with McpToolset(task, SandboxTaskEnv(task), connect_timeout_s=20) as tools:
        assert list(tools.tools) == ["mcp__calc__add"]
        assert tools.tools["mcp__calc__add"].schema["function"]["parameters"]["required"] == ["a", "b"]
        assert await tools.call("mcp__calc__add", {"a": 2, "b": 3}, timeout_s=10) == ("5", False)
        text, is_error = await tools.call("mcp__calc__add", {"a": "two"}, timeout_s=10)
        assert is_error and text.startswith("error:")
