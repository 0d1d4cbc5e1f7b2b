"""Which action an MCP env's tasks play under which harness: native tool calls where the harness takes MCP tools.

Real verifiers objects: the exported classes' taskset loads the tasks, ``vf.Agent`` loads each harness by id
(``terminus-2`` is one of verifiers' harnesses without MCP support).
"""

from __future__ import annotations

from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1", reason="verifiers is not installed (pip install 'openenv-train[verifiers]')")

from verifiers.v1.utils.loaders import harness_config_type  # noqa: E402

from openenv_train.integrations.verifiers import VerifiersError, verifiers_classes  # noqa: E402
from openenv_train.integrations.verifiers._run import _kind  # noqa: E402


def _tasks(env: str, **options: Any) -> list[Any]:
    classes = verifiers_classes(env)
    return list(classes["Taskset"](classes["Config"](episodes=2, **options)).load())


def _agent(harness: str) -> Any:
    return vf.Agent(vf.AgentConfig(model="m", harness=harness_config_type(harness)(id=harness)))


def test_auto_plays_native_tool_calls_where_the_harness_supports_mcp() -> None:
    task = _tasks("trading_mcp")[0]
    assert (task.data.action, task.data.fallback, task.data.system_prompt) == ("tool_call", "tool", None)
    assert _kind(task.data, _agent("null")) == "tool_call"
    assert _kind(task.data, _agent("terminus-2")) == "tool"  # JSON text: the tools are listed in the prompt
    assert task.toolsets(task.config) == []  # the URL is the rollout's, filled by Env.run
    live = task.with_tools("http://127.0.0.1:1/mcp?rollout=k", object())
    (tools,) = live.toolsets(live.config)
    assert tools.config.url == "http://127.0.0.1:1/mcp?rollout=k" and tools.server_name == ""  # names unprefixed


def test_tool_call_asked_for_by_name_needs_an_mcp_harness() -> None:
    task = _tasks("trading_mcp", action="tool_call")[0]
    assert task.data.fallback is None
    with pytest.raises(VerifiersError, match="--env.taskset.action tool"):
        _kind(task.data, _agent("terminus-2"))
    assert _kind(_tasks("trading_mcp", action="tool")[0].data, _agent("null")) == "tool"


def test_text_envs_are_unchanged() -> None:
    (task, _) = _tasks("wordle")
    assert (task.data.action, task.data.fallback) == ("message", None)
    assert _kind(task.data, _agent("terminus-2")) == "message"
