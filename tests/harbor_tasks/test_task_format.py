"""task.toml parsing (Harbor's fields; bad and missing fields named), the folder layout, and the Dockerfile plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_train.harbor._agents import NopAgent, OracleAgent
from openenv_train.harbor._dockerfile import CopyStep, RunStep, parse_dockerfile
from openenv_train.harbor._runner import run_task, run_tasks
from openenv_train.harbor._task_errors import EnvironmentSetupError, TaskFormatError
from openenv_train.harbor._tasks import REQUIRED_FILES, find_tasks, load_task, parse_task_config
from tests.harbor_tasks._support import write_task
from tests.sandbox.conftest import require_sandbox

FULL = """
version = "1.0"

[task]
name = "acme/fix-it"
description = "Fix it."

[metadata]
author_name = "A. Author"
difficulty = "easy"
tags = ["a", "b"]

[verifier]
timeout_sec = 90.0
env = { MODE = "strict" }

[agent]
timeout_sec = 300

[environment]
build_timeout_sec = 120.0
cpus = 2
memory = "2G"
storage_mb = 512
allow_internet = false

[[environment.mcp_servers]]
name = "search"
transport = "stdio"
command = "search-server"

[solution]
env = { SEED = "1" }
"""


def test_full_task_toml() -> None:
    config, warnings = parse_task_config(FULL)
    assert warnings == []
    assert config.task is not None and config.task.name == "acme/fix-it"
    assert config.metadata["tags"] == ["a", "b"]
    assert config.verifier.timeout_sec == 90.0 and config.verifier.env == {"MODE": "strict"}
    assert config.agent.timeout_sec == 300.0
    env = config.environment
    assert (env.cpus, env.memory_mb, env.storage_mb, env.allow_internet) == (2, 2048, 512, False)
    assert env.mcp_servers[0].name == "search" and env.mcp_servers[0].command == "search-server"
    assert config.solution.env == {"SEED": "1"}


def test_defaults_follow_harbor() -> None:
    config, _ = parse_task_config("")
    assert config.verifier.timeout_sec == 600.0 and config.agent.timeout_sec is None
    assert config.environment.memory_mb == 2048 and config.environment.mcp_servers == []


@pytest.mark.parametrize(("text", "field", "words"), [
    ('[verifier]\ntimeout_sec = "soon"', "verifier.timeout_sec", ["[verifier] timeout_sec", "'soon'"]),
    ("[agent]\ntimeout_sec = -5", "agent.timeout_sec", ["[agent] timeout_sec", "greater than 0"]),
    ('[environment]\nmemory = "lots"', "environment", ["[environment]", "'2G'"]),
    ('[environment]\ncpus = "two"', "environment.cpus", ["[environment] cpus"]),
    ('[task]\ndescription = "no name"', "task.name", ["[task] name is required"]),
    ('[task]\nname = "no-org"', "task.name", ["[task] name", "org/name"]),
    ('[[environment.mcp_servers]]\nname = "s"\ntransport = "sse"', "environment.mcp_servers.0",
     ["mcp_servers.0", "url is required"]),
    ('[verifier]\nenv = ["A"]', "verifier.env", ["[verifier] env"]),
])
def test_bad_and_missing_fields_are_named(text: str, field: str, words: list[str]) -> None:
    with pytest.raises(TaskFormatError) as caught:
        parse_task_config(text, task_dir="/tasks/t")
    assert caught.value.field == field and caught.value.file == "task.toml"
    message = str(caught.value)
    assert "task.toml in /tasks/t" in message
    for word in words:
        assert word in message, message


def test_invalid_toml_is_named() -> None:
    with pytest.raises(TaskFormatError, match="task.toml in x is not valid TOML"):
        parse_task_config("[verifier\n", task_dir="x")


def test_unknown_keys_warn_with_a_suggestion() -> None:
    _, warnings = parse_task_config("colour = 1\n[agent]\ntimeout_secs = 5\n[environment]\nnetwork_mod = 'x'")
    assert "task.toml: unknown key colour" in warnings
    assert "task.toml: unknown key [agent] timeout_secs (did you mean 'timeout_sec'?)" in warnings
    assert len(warnings) == 3


@pytest.mark.parametrize("missing", REQUIRED_FILES)
def test_missing_required_file_is_named(tmp_path: Path, missing: str) -> None:
    task = write_task(tmp_path, "t")
    target = task / missing
    if target.is_dir():
        for child in target.iterdir():
            child.unlink()
        target.rmdir()
    else:
        target.unlink()
    with pytest.raises(TaskFormatError) as caught:
        load_task(task)
    assert caught.value.file == missing and missing in str(caught.value)


def test_instruction_canary_is_stripped(tmp_path: Path) -> None:
    task = write_task(tmp_path, "t", instruction="<!-- canary GUID 123 -->\n\nDo the thing.\n")
    assert load_task(task).instruction == "Do the thing.\n"


async def test_missing_file_gives_a_failed_row_without_running(tmp_path: Path) -> None:
    task = write_task(tmp_path, "broken")
    (task / "tests" / "test.sh").unlink()
    row = await run_task(task, NopAgent())
    assert not row.ok and row.error is not None and row.error.type == "TaskFormatError"
    assert "tests/test.sh" in row.error.message and row.reward is None and not row.done
    assert row.env.name == "harbor/broken" and row.episode_id == "broken#0"


async def test_a_dataset_run_continues_past_a_broken_task(tmp_path: Path) -> None:
    require_sandbox()
    write_task(tmp_path, "a-good", solve_sh=None)
    (write_task(tmp_path, "b-broken") / "instruction.md").unlink()
    rows = await run_tasks([tmp_path], NopAgent())
    assert [(r.task["name"], r.ok) for r in rows] == [("a-good", True), ("b-broken", False)]
    assert rows[1].error is not None and "instruction.md" in rows[1].error.message


async def test_oracle_needs_a_solution(tmp_path: Path) -> None:
    require_sandbox()
    row = await run_task(write_task(tmp_path, "t", solve_sh=None), OracleAgent())
    assert not row.ok and row.error is not None and row.error.type == "TaskFormatError"
    assert "solution/solve.sh" in row.error.message and not row.done


def test_find_tasks(tmp_path: Path) -> None:
    one = write_task(tmp_path / "set", "one")
    write_task(tmp_path / "set", "two")
    (tmp_path / "set" / "not-a-task").mkdir()
    assert find_tasks([one]) == [one]
    assert find_tasks([one / "task.toml"]) == [one]
    assert [p.name for p in find_tasks([tmp_path / "set"])] == ["one", "two"]
    with pytest.raises(FileNotFoundError, match="no such file"):
        find_tasks([tmp_path / "nope"])
    with pytest.raises(FileNotFoundError, match="neither a task folder"):
        find_tasks([tmp_path / "set" / "not-a-task"])


def test_dockerfile_plan(tmp_path: Path) -> None:
    env = tmp_path / "environment"
    (env / "src").mkdir(parents=True)
    (env / "src" / "main.py").write_text("print(1)\n")
    (env / "data.csv").write_text("a\n")
    (env / "Dockerfile").write_text(
        "FROM python:3.12-slim\nARG NAME=demo\nENV APP_NAME=$NAME \\\n    MODE=\"test run\"\n"
        "WORKDIR /srv/${NAME}\nCOPY src/ ./src/\nCOPY data.csv .\nRUN [\"python3\", \"src/main.py\"]\n"
        "WORKDIR sub\nCMD [\"bash\"]\n")
    plan = parse_dockerfile(env)
    assert (plan.workspace, plan.workdir, plan.base_image) == ("/srv/demo", "/srv/demo/sub", "python:3.12-slim")
    assert plan.env == {"APP_NAME": "demo", "MODE": "test run"}
    copy_src, copy_data, run = plan.steps
    assert isinstance(copy_src, CopyStep) and list(copy_src.files) == ["src/main.py"]
    assert isinstance(copy_data, CopyStep) and list(copy_data.files) == ["data.csv"]
    assert isinstance(run, RunStep) and run.command == "python3 src/main.py" and run.cwd == "/srv/demo"
    assert plan.ignored == ['CMD ["bash"]']


@pytest.mark.parametrize(("dockerfile", "words"), [
    ("FROM x\nWORKDIR /app\nCOPY a.txt /etc/a.txt\n", "outside the workspace /app"),
    ("FROM x AS build\nFROM y\nWORKDIR /app\nCOPY --from=build /out /app/out\n", "another build stage"),
    ("FROM x\nWORKDIR /app\nWORKDIR /opt\n", "leaves the workspace"),
    ("FROM x\nWORKDIR /app\nCOPY missing.txt .\n", "missing.txt is not in environment/"),
    ("FROM x\nWORKDIR /app\nFROBNICATE\n", "unknown instruction"),
])
def test_dockerfile_refusals_say_why(tmp_path: Path, dockerfile: str, words: str) -> None:
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "Dockerfile").write_text(dockerfile)
    with pytest.raises(EnvironmentSetupError, match=words):
        parse_dockerfile(tmp_path)


def test_compose_only_environment_is_refused_by_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "docker-compose.yaml").write_text("services: {}\n")
    with pytest.raises(EnvironmentSetupError, match="docker-compose tasks need --env docker"):
        parse_dockerfile(tmp_path)
