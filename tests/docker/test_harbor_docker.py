"""The Harbor task runner's Docker backend against a real engine: the oracle on example tasks, a scripted model
calling the mcp-lookup task's stdio MCP server through ``docker exec -i``, and the CLI.

Task images are built offline on the local base image (``docker_base_image``, the CLI's ``--docker-base-image``)
in place of the examples' ``FROM python:3.12-slim``, which this engine cannot pull.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_train.cli import main
from openenv_train.harbor._agents import BASH_TOOL, ModelAgent, OracleAgent
from openenv_train.harbor._mcp import McpServerError, McpToolset
from openenv_train.harbor._runner import HarborRunConfig, run_task, run_tasks
from openenv_train.harbor._task_env import DockerTaskEnv
from openenv_train.harbor._tasks import load_task
from openenv_train.trace import TraceRow, read_traces
from tests.harbor_tasks._stub import StubServer
from tests.harbor_tasks._support import EXAMPLES, write_task

pytestmark = pytest.mark.timeout(900)  # the first test may install Docker and build the base image
LOOKUP = EXAMPLES / "mcp-lookup"
KV_TOOLS = ["mcp__kv__lookup", "mcp__kv__list_keys"]
CSV_CHECKS = {"valid_json": 1.0, "rows": 1.0, "total_revenue": 1.0, "by_region": 1.0, "top_product": 1.0,
              "reward": 1.0}


def _containers() -> set[str]:
    """Names of the runner's containers (running or not)."""
    done = subprocess.run(["docker", "ps", "-a", "--filter", "name=openenv-harbor-", "--format", "{{.Names}}"],
                          capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def _images() -> set[str]:
    done = subprocess.run(["docker", "images", "--filter", "reference=openenv-harbor-*", "--format",
                           "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


@pytest.fixture(scope="module", autouse=True)
def _drop_new_images(docker_engine: str) -> Iterator[None]:
    """Remove the task images these tests built (the runner keeps them for later attempts)."""
    before = _images()
    yield
    new = sorted(_images() - before)
    if new:
        subprocess.run(["docker", "rmi", "-f", *new], capture_output=True, timeout=120)


@pytest.fixture
def config(docker_engine: str) -> Iterator[HarborRunConfig]:
    before = _containers()
    yield HarborRunConfig(backend="docker", docker_base_image=docker_engine, concurrency=3)
    assert _containers() <= before, "the runner left containers behind"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer().running() as server:
        yield server


async def test_oracle_solves_examples_in_containers(config: HarborRunConfig, docker_engine: str) -> None:
    tasks = [EXAMPLES / name for name in ("mcp-lookup", "csv-sales-summary", "organize-files")]
    rows: dict[str, TraceRow] = {row.task["name"]: row for row in await run_tasks(tasks, OracleAgent(), config=config)}
    for name, row in rows.items():
        assert row.ok and row.reward == 1.0 and row.done and row.env.url == "docker", (name, row.error, row.steps)
    assert rows["csv-sales-summary"].rewards == CSV_CHECKS  # reward.json came back through the /logs bind mount
    # Built on the base image: its python3 is Debian bookworm's 3.11, not the examples' 3.12.
    task = load_task(LOOKUP)
    image = DockerTaskEnv(task, base_image=docker_engine).image
    assert image.startswith(f"openenv-harbor-mcp-lookup:{task.checksum}-")
    version = subprocess.run(["docker", "run", "--rm", "--network", "none", image, "python3", "--version"],
                             capture_output=True, text=True, timeout=60)
    assert version.stdout.startswith("Python 3.11"), version


async def test_model_agent_calls_the_mcp_tool_in_the_container(config: HarborRunConfig, stub: StubServer) -> None:
    assert not Path("/app/tools/kv_server.py").exists()  # so the server can only have run in the container
    agent = ModelAgent(base_url=stub.url, model="mcp-solver", client_capture=True, temperature=0.0)
    row = await run_task(LOOKUP, agent, config=config)
    assert row.ok and row.reward == 1.0 and row.done and not row.truncated and row.env.url == "docker", row.error
    first = stub.requests[0]["body"]
    assert [t["function"]["name"] for t in first["tools"]] == ["bash", *KV_TOOLS] and first["tools"][0] == BASH_TOOL
    second = stub.requests[1]["body"]["messages"]
    assert second[-1] == {"role": "tool", "tool_call_id": "call_0", "content": "blue-heron-42"}  # reached the model
    mcp_step, bash_step, verifier_step = row.steps
    assert mcp_step.action["function"] == "mcp__kv__lookup"
    assert mcp_step.observation == {"content": "blue-heron-42", "is_error": False}
    assert bash_step.action["tool"] == "bash" and bash_step.observation["exit_code"] == 0
    assert verifier_step.observation["stdout"] == "codename.txt is correct\n" and verifier_step.reward == 1.0
    assert len(row.trace.turns) == 3 and row.trace.turns[0].request["tools"] == first["tools"]


async def test_stdio_servers_run_in_the_workdir_and_follow_docker_host(
        docker_engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = (LOOKUP / "environment" / "tools" / "kv_server.py").read_text()
    folder = write_task(tmp_path, "kv-relative", toml='version = "1.0"\n[[environment.mcp_servers]]\nname = "kv"\n'
                        'transport = "stdio"\ncommand = "python3"\nargs = ["tools/kv_server.py"]\n',
                        env_files={"tools/kv_server.py": server},
                        dockerfile="FROM python:3.12-slim\nWORKDIR /app\nCOPY tools /app/tools\n")
    task = load_task(folder)
    env = DockerTaskEnv(task, base_image=docker_engine)
    await env.start()
    try:
        assert env.workdir == "/app"
        async with McpToolset(task, env, connect_timeout_s=30) as tools:  # a relative path: found in the WORKDIR
            assert list(tools.tools) == KV_TOOLS
            assert await tools.call("mcp__kv__lookup", {"key": "owner"}, timeout_s=10) == ("platform-team", False)
            assert await tools.call("mcp__kv__lookup", {"key": "nope"}, timeout_s=10) == (
                "error: no such key: 'nope'", True)
        # docker exec must reach the engine DOCKER_HOST names, though the MCP SDK trims the environment
        monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/openenv-test.sock")
        with pytest.raises(McpServerError, match="nonexistent/openenv-test.sock"):
            async with McpToolset(task, env, connect_timeout_s=30):
                pass
    finally:
        monkeypatch.delenv("DOCKER_HOST")
        await env.close()
    assert env.container is None


async def test_an_unpullable_base_names_the_option(docker_engine: str, tmp_path: Path) -> None:
    folder = write_task(tmp_path, "unpullable", dockerfile="FROM openenv-train/no-such-image:never\nWORKDIR /app\n")
    row = await run_task(folder, OracleAgent(), config=HarborRunConfig(backend="docker"))
    assert not row.ok and row.error is not None and row.error.type == "EnvironmentSetupError"
    assert "docker build failed" in row.error.message and "--docker-base-image" in row.error.message
    rebased = await run_task(folder, OracleAgent(), config=HarborRunConfig(backend="docker",
                                                                           docker_base_image=docker_engine))
    assert rebased.ok and rebased.reward == 1.0, rebased.error


def test_cli_runs_a_task_with_the_docker_backend(docker_engine: str, tmp_path: Path) -> None:
    run = tmp_path / "docker-run"
    assert main(["harbor", "run", str(EXAMPLES / "edit-config"), "--env", "docker", "--docker-base-image",
                 docker_engine, "-o", str(run)]) == 0
    (row,) = read_traces(run)
    assert row.ok and row.reward == 1.0 and row.env.url == "docker"
    assert row.task["name"] == "edit-config" and row.steps[0].action["command"] == "bash /solution/solve.sh"


async def test_a_task_asking_for_more_cpus_than_the_engine_has_still_runs(docker_engine: str, tmp_path: Path) -> None:
    folder = write_task(tmp_path, "greedy", toml='version = "1.0"\n[environment]\ncpus = 512\n')
    row = await run_task(folder, OracleAgent(), config=HarborRunConfig(backend="docker",
                                                                       docker_base_image=docker_engine))
    assert row.ok and row.reward == 1.0, row.error  # docker run --cpus=512 is refused; the runner caps it
