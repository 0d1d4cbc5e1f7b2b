"""MCPEnvironment: tools declared with @tool, reachable as steps and as JSON-RPC, with MCP error types."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv_train.client import MCPToolClient, ToolCallError
from openenv_train.core import CallToolAction, CallToolObservation, ListToolsAction
from openenv_train.server import MCPEnvironment, tool
from tests.conftest import serve_inloop


class Notes(MCPEnvironment):
    """Keeps notes; pays 1.0 for a note that says 'done'."""

    name = "notes"

    def on_reset(self, *, seed: int | None = None, **options: Any) -> None:
        self.notes: list[str] = []

    @tool
    def add_note(self, text: str, times: int = 1) -> int:
        """Add a note `times` times; returns the count."""
        self.notes.extend([text] * times)
        return len(self.notes)

    @tool(name="fetch_later", description="Wait, then return the notes.")
    async def fetch(self, delay_s: float = 0.0) -> list[str]:
        await asyncio.sleep(delay_s)
        return list(self.notes)

    @tool
    def explode(self) -> None:
        """Always fails."""
        raise ValueError("boom")

    def reward_for(self, tool_name: str, arguments: dict[str, Any], value: Any) -> float | None:
        return 1.0 if arguments.get("text") == "done" else None


def test_tools_are_declared_with_schemas() -> None:
    tools = {t.name: t for t in Notes().list_tools()}
    assert set(tools) == {"add_note", "fetch_later", "explode"}
    schema = tools["add_note"].input_schema
    assert schema["required"] == ["text"] and schema["properties"]["times"]["type"] == "integer"
    assert tools["fetch_later"].description == "Wait, then return the notes."
    assert tools["add_note"].description.startswith("Add a note")


def test_reserved_and_variadic_tools_are_refused() -> None:
    with pytest.raises(TypeError, match="reserved"):
        class Bad(MCPEnvironment):
            @tool(name="step")
            def other(self) -> None: ...
    with pytest.raises(TypeError, match=r"\*args"):
        class Variadic(MCPEnvironment):
            @tool
            def many(self, *values: int) -> int:
                return sum(values)


def test_steps_give_results_errors_and_rewards() -> None:
    env = Notes()
    env.reset()
    obs = env.step(CallToolAction(tool_name="add_note", arguments={"text": "a", "times": 2}))
    assert isinstance(obs, CallToolObservation) and obs.result["data"] == 2 and obs.reward is None
    assert env.step(CallToolAction(tool_name="add_note", arguments={"text": "done"})).reward == 1.0
    missing = env.step(CallToolAction(tool_name="nope"))
    assert missing.error.error_type.value == "tool_not_found" and "add_note" in missing.error.message
    bad = env.step(CallToolAction(tool_name="add_note", arguments={"text": "x", "times": "lots"}))
    assert bad.error.error_type.value == "invalid_args" and "times" in bad.error.message
    extra = env.step(CallToolAction(tool_name="add_note", arguments={"text": "x", "colour": "red"}))
    assert extra.error.error_type.value == "invalid_args"
    boom = env.step(CallToolAction(tool_name="explode"))
    assert boom.error.error_type.value == "execution_error" and "ValueError: boom" in boom.error.message
    assert env.step(ListToolsAction()).tools[0].name == "add_note"
    assert env.state.step_count == 7


async def test_async_tools_and_json_rpc_over_the_wire() -> None:
    async with serve_inloop(Notes) as server:
        async with MCPToolClient(server.url) as client:
            await client.reset()
            assert await client.call_tool("add_note", text="hello") == 1
            assert await client.call_tool("fetch_later", delay_s=0.01) == ["hello"]
            with pytest.raises(ToolCallError) as info:
                await client.call_tool("explode")
            assert info.value.error_type == "execution_error"
            # JSON-RPC in the same session sees the same env instance
            listed = await client.rpc("tools/list")
            assert [t["name"] for t in listed["result"]["tools"]] == ["add_note", "fetch_later", "explode"]
            called = await client.rpc("tools/call", {"name": "fetch_later", "arguments": {}})
            assert called["result"]["data"] == ["hello"]
            created = await client.rpc("openenv/session/create")
            assert len(created["result"]["session_id"]) == 32
            refused = await client.rpc("openenv/session/close", {"session_id": created["result"]["session_id"]})
            assert refused["error"]["code"] == -32600
            state = await client.state()
            assert state["step_count"] == 3  # JSON-RPC calls are not env steps
