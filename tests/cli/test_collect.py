"""``openenv-train collect``: episodes through the Ray pool into a trace dataset; policy errors are usage errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from openenv_train.recipes.collect import RandomPolicy, _env_interface

from .conftest import cli


def test_random_policy_on_a_scaffolded_env_writes_trace_rows(scaffold: Path, tmp_path: Path) -> None:
    """The user's flow: 'init', then collect on the new env (module:Class from the working directory)."""
    shutil.copytree(scaffold, tmp_path / "demo_env")
    done = cli("collect", "demo_env.server.app:app", "--policy", "random", "-n", "3", "-o", "run", "--max-turns", "3",
               cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wrote 3 rows" in done.stdout
    rows = pq.read_table(sorted((tmp_path / "run" / "traces").glob("*.parquet"))).to_pylist()
    assert len(rows) == 3 and all(row["ok"] for row in rows)
    actions = [json.loads(step["action"]) for row in rows for step in row["steps"]]
    assert len(actions) == 9  # done only after 10 steps: each episode runs to --max-turns
    assert all(set(a) == {"message"} and isinstance(a["message"], str) for a in actions)
    assert len({a["message"] for a in actions}) > 1
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["rows"] == 3


def test_random_policy_calls_the_tools_of_an_mcp_env() -> None:
    schema, tools = _env_interface("echo")
    assert tools is not None and {t["name"] for t in tools} == {"echo_message", "echo_with_length"}
    policy = RandomPolicy(schema, tools, seed=1)
    actions = [policy({}) for _ in range(20)]
    assert {a["type"] for a in actions} == {"call_tool"}
    assert {a["tool_name"] for a in actions} == {"echo_message", "echo_with_length"}
    assert all(isinstance(a["arguments"]["message"], str) for a in actions)


def test_policy_errors_are_usage_errors(tmp_path: Path) -> None:
    scripted = cli("collect", "counter", "--policy", "scripted", "-n", "1", "-o", str(tmp_path / "a"))
    assert scripted.returncode == 2 and "no scripted solver" in scripted.stderr and "--policy random" in scripted.stderr
    bogus = cli("collect", "counter", "--policy", "no-such-model", "-n", "1", "-o", str(tmp_path / "b"))
    assert bogus.returncode == 2 and "model folder" in bogus.stderr
    zero = cli("collect", "counter", "--policy", "random", "-n", "0", "-o", str(tmp_path / "c"))
    assert zero.returncode == 2 and ">= 1" in zero.stderr
