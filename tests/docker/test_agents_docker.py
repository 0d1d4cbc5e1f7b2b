"""The pinned agent CLIs in a task's Docker container (built offline on the local base image): the host's agent
cache, Python and node mounted read-only, a socket folder to the capture proxy, ``--network none``."""

from __future__ import annotations

import pytest

from openenv_train.harbor import HarborRunConfig, InstalledAgent, run_task, shell_script_reply
from openenv_train.policy import PolicyServer, ScriptedBackend
from openenv_train.trace import CaptureStore
from tests import _system_parts
from tests.harbor_tasks._support import EXAMPLES

pytestmark = pytest.mark.timeout(900)  # the first test may install Docker and build the base image
WRITE = "echo 'Hello, world!' > hello.txt"


# a native binary, a Node.js launcher of a native binary, a Node.js app (all five passed here; OpenCode and
# mini-swe-agent take 20-30 s each, so the suite runs these three)
@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini-cli"])
async def test_agent_cli_completes_hello_world_in_a_container(agent: str, docker_engine: str) -> None:
    _system_parts.require("agents")
    store = CaptureStore()
    config = HarborRunConfig(backend="docker", docker_base_image=docker_engine)
    async with PolicyServer(ScriptedBackend(shell_script_reply(agent, WRITE)), capture=store) as server:
        row = await run_task(EXAMPLES / "hello-world", InstalledAgent(agent, server.url), config=config, capture=store)
    assert row.ok and row.reward == 1.0, (row.error, [s.observation for s in row.steps])
    assert row.env.url == "docker" and len(row.trace.turns) >= 2
