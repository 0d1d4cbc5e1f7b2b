"""``openenv-train import``: an OpenEnv env folder served by our server, Harbor tasks as a runnable dataset."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenv_train.cli._init import render_tree, replacements

from .conftest import ROOT, cli, stop, wait_ready

EXAMPLES = ROOT / "openenv_train" / "harbor" / "examples"


@pytest.fixture
def openenv_folder(tmp_path: Path) -> Path:
    """An env folder exactly as 'openenv init oe_echo' writes it (openenv-core's own template)."""
    from openenv.cli import templates

    folder = tmp_path / "src" / "oe_echo"
    render_tree(Path(templates.__file__).parent / "openenv_env", folder, replacements("oe_echo"))
    return folder


def test_openenv_env_is_served_by_our_server(openenv_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "imported"
    done = cli("import", str(openenv_folder), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert (out / "oe_echo" / "openenv.yaml").is_file() and (out / "oe_echo_openenv_train.py").is_file()
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", "oe_echo_openenv_train:OeEchoAdapter",
                               "--port", "0", "--ready-file", str(ready)], cwd=out, stderr=subprocess.DEVNULL,
                              env={"PYTHONPATH": f"{out}:{ROOT}", "PATH": "/usr/bin:/bin"})
    try:
        url = wait_ready(ready, server, timeout_s=120)  # the adapter imports OpenEnv: slow on a busy machine
        report = json.loads(cli("validate", "--url", url, "--json").stdout)
        assert report["passed"], [c for c in report["criteria"] if not c["passed"]]
        from openenv_train.client import GenericEnvClient

        with GenericEnvClient(url).sync() as env:
            env.reset()
            result = env.step({"message": "hello"})
        assert result.observation == {"echoed_message": "hello", "message_length": 5}
        assert result.reward == pytest.approx(0.5)
    finally:
        stop(server)


def test_harbor_tasks_become_a_dataset_that_harbor_run_runs(tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    done = cli("import", str(EXAMPLES / "hello-world"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "tasks.json").read_text())
    assert manifest["kind"] == "harbor-tasks" and [t["path"] for t in manifest["tasks"]] == ["hello-world"]
    assert manifest["tasks"][0]["has_solution"]
    run = cli("harbor", "run", str(out), "-o", str(tmp_path / "run"), "--agent", "oracle")
    assert run.returncode == 0, run.stdout + run.stderr
    assert list((tmp_path / "run" / "traces").glob("*.parquet"))


def test_broken_task_is_named_and_nothing_written(tmp_path: Path) -> None:
    source = tmp_path / "tasks"
    (source / "broken" / "tests").mkdir(parents=True)
    (source / "broken" / "task.toml").write_text("[verifier]\ntimeout_sec = 10\n")
    done = cli("import", str(source), "-o", str(tmp_path / "out"))
    assert done.returncode == 1 and "broken" in done.stderr and "instruction.md" in done.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_source_and_unreachable_url(tmp_path: Path) -> None:
    assert cli("import", str(tmp_path)).returncode == 2
    done = cli("import", "http://127.0.0.1:9/spaces/someone/env.git", "-o", str(tmp_path / "x"))
    assert done.returncode == 1 and "cannot clone" in done.stderr and "network" in done.stderr


_MCP_ENV = '''
import uuid
from typing import Any

from fastmcp import FastMCP
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.types import Action, Observation, State


class OeMcpEnvironment(MCPEnvironment):
    """Echoes messages through MCP tools (as OpenEnv's echo_env)."""

    def __init__(self) -> None:
        mcp = FastMCP("oe_mcp")

        @mcp.tool
        def echo_message(message: str) -> str:
            """Echo back the provided message."""
            return message

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return Observation(done=False, reward=0.0)

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return Observation(done=False, reward=0.0)

    @property
    def state(self) -> State:
        return self._state
'''

_MCP_APP = '''
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

from .oe_mcp_environment import OeMcpEnvironment

app = create_app(OeMcpEnvironment, CallToolAction, CallToolObservation, env_name="oe_mcp")


def main() -> None:
    import uvicorn

    uvicorn.run(app)


if __name__ == "__main__":
    main()
'''


def test_openenv_mcp_env_takes_list_tools_and_call_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv.cli import templates

    folder = tmp_path / "src" / "oe_mcp"
    render_tree(Path(templates.__file__).parent / "openenv_env", folder, replacements("oe_mcp"))
    (folder / "server" / "oe_mcp_environment.py").write_text(_MCP_ENV)
    (folder / "server" / "app.py").write_text(_MCP_APP)
    out = tmp_path / "imported"
    done = cli("import", str(folder), "-o", str(out))
    assert done.returncode == 0, done.stderr
    monkeypatch.syspath_prepend(str(out))
    from openenv_train.client import GenericEnvClient

    async def play() -> tuple[Any, Any]:
        env = await GenericEnvClient.from_env("oe_mcp_openenv_train:OeMcpAdapter", provider="inprocess")
        async with env:
            await env.reset()
            listed = await env.step({"type": "list_tools"})
            called = await env.step({"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}})
            return listed.observation, called.observation

    listed, called = asyncio.run(play())
    assert [tool["name"] for tool in listed["tools"]] == ["echo_message"]
    assert called["tool_name"] == "echo_message" and called["error"] is None, called
