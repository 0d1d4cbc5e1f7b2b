"""OUR clients drive openenv-core servers (``create_app`` under uvicorn, in subprocesses).

The envs are written against openenv-core's own API in ``_openenv_apps.py``: a counter
(plain ``Environment``) and an echo env (``MCPEnvironment`` holding a FastMCP server).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import Field

from openenv_train.client import ClientState, EnvClient, GenericEnvClient, MCPToolClient, ToolCallError
from openenv_train.core import (
    Action,
    CallToolObservation,
    ListToolsObservation,
    Observation,
    ServerError,
    State,
    StepResult,
    Tool,
)
from openenv_train.launch import Endpoint, http_get_json
from tests.compat._release import CURRENT


# Our pydantic models mirroring OECounterAction/OECounterObservation/OECounterState.
class CounterAction(Action):
    delta: int = Field(ge=-100, le=100)


class CounterObservation(Observation):
    value: int = 0
    target: int = 5


class CounterState(State):
    value: int = 0
    target: int = 5


class TypedCounterClient(EnvClient[CounterAction, CounterObservation, CounterState]):
    action_type = CounterAction
    observation_type = CounterObservation
    state_type = CounterState


# -- the counter ---------------------------------------------------------------------------------------
async def test_generic_client_drives_openenv_counter(oe_counter_url: str) -> None:
    async with GenericEnvClient(oe_counter_url) as env:
        r = await env.reset(target=3)
        assert isinstance(r, StepResult)
        assert (r.observation, r.reward, r.done) == ({"value": 0, "target": 3}, 0.0, False)
        assert r.metadata == {}  # openenv-core 0.3.0 sends no metadata beside the observation
        r = await env.step({"delta": 2})
        assert (r.observation, r.reward, r.done) == ({"value": 2, "target": 3}, 0.0, False)
        r = await env.step({"delta": 1})
        assert (r.observation, r.reward, r.done) == ({"value": 3, "target": 3}, 1.0, True)
        state = await env.state()
        assert state["step_count"] == 2 and state["value"] == 3 and state["target"] == 3
        assert isinstance(state["episode_id"], str)

        await env.reset(episode_id="mine", target=9)
        assert await env.state() == {"episode_id": "mine", "step_count": 0, "value": 0, "target": 9}


async def test_typed_client_drives_openenv_counter(oe_counter_url: str) -> None:
    async with TypedCounterClient(oe_counter_url) as env:
        r = await env.reset(target=4, episode_id="typed")
        assert isinstance(r.observation, CounterObservation)
        assert (r.observation.value, r.observation.target, r.observation.reward, r.observation.done) == (0, 4, 0.0, False)
        r = await env.step(CounterAction(delta=4, metadata={"why": "because"}))
        assert isinstance(r.observation, CounterObservation)
        assert (r.observation.value, r.reward, r.done) == (4, 1.0, True)
        assert r.observation.reward == 1.0 and r.observation.done is True
        state = await env.state()
        assert isinstance(state, CounterState)
        assert (state.episode_id, state.step_count, state.value, state.target) == ("typed", 1, 4, 4)


async def test_typed_client_given_types_as_arguments(oe_counter_url: str) -> None:
    env = EnvClient(oe_counter_url, action_type=CounterAction, observation_type=CounterObservation,
                    state_type=CounterState)
    async with env:
        await env.reset(target=2)
        r = await env.step(CounterAction(delta=1))
        assert isinstance(r.observation, CounterObservation) and r.observation.value == 1
        assert isinstance(await env.state(), CounterState)


async def test_openenv_validation_error_raises_server_error_and_session_survives(oe_counter_url: str) -> None:
    async with GenericEnvClient(oe_counter_url) as env:
        await env.reset(target=50, episode_id="survivor")
        await env.step({"delta": 5})

        with pytest.raises(ServerError) as caught:
            await env.step({"delta": 1000})
        err = caught.value
        assert err.code == "VALIDATION_ERROR"
        errors = err.details["errors"]
        assert isinstance(errors, list) and errors
        assert errors[0]["loc"] == ["delta"] and errors[0]["type"] == "less_than_equal"

        with pytest.raises(ServerError) as caught:
            await env.step({"delta": 1, "bogus": 2})
        assert caught.value.code == "VALIDATION_ERROR"
        assert any(e["type"] == "extra_forbidden" for e in caught.value.details["errors"])

        # Same session, same episode: the failed actions were not steps.
        assert env.client_state is ClientState.OPEN and env.reconnects == 0
        r = await env.step({"delta": 5})
        assert r.observation["value"] == 10
        state = await env.state()
        assert (state["episode_id"], state["step_count"]) == ("survivor", 2)


async def test_openenv_execution_error_raises_server_error_and_session_survives(oe_counter_url: str) -> None:
    async with TypedCounterClient(oe_counter_url) as env:
        await env.reset(target=50, episode_id="exec")
        await env.step(CounterAction(delta=2))
        with pytest.raises(ServerError) as caught:
            await env.step(CounterAction(delta=13))  # the env raises ValueError("unlucky 13")
        assert caught.value.code == "EXECUTION_ERROR"
        assert "unlucky 13" in caught.value.message
        assert env.client_state is ClientState.OPEN and env.reconnects == 0
        r = await env.step(CounterAction(delta=3))
        assert r.observation.value == 5
        state = await env.state()
        assert (state.episode_id, state.step_count) == ("exec", 2)


async def test_sync_wrapper_drives_openenv_counter(oe_counter_url: str) -> None:
    def run() -> tuple[Any, ...]:
        with TypedCounterClient(oe_counter_url).sync() as env:
            first = env.reset(target=2, episode_id="sync")
            stepped = env.step(CounterAction(delta=2))
            try:
                env.step({"delta": -1000})
            except ServerError as exc:
                error = exc
            state = env.state()
        return first, stepped, error, state

    first, stepped, error, state = await asyncio.to_thread(run)
    assert first.observation.target == 2 and first.observation.value == 0
    assert (stepped.observation.value, stepped.reward, stepped.done) == (2, 1.0, True)
    assert error.code == "VALIDATION_ERROR"
    assert (state.episode_id, state.step_count, state.value) == ("sync", 1, 2)


async def test_many_of_our_sessions_on_an_openenv_server(oe_counter_url: str) -> None:
    async def episode(i: int) -> tuple[int, list[int], Any]:
        async with TypedCounterClient(oe_counter_url) as env:
            await env.reset(target=100, episode_id=f"ep-{i}")
            values = [(await env.step(CounterAction(delta=i))).observation.value for _ in range(3)]
            return i, values, await env.state()

    for i, values, state in await asyncio.gather(*(episode(i) for i in range(12))):
        assert values == [i, 2 * i, 3 * i]
        assert (state.episode_id, state.step_count, state.value) == (f"ep-{i}", 3, 3 * i)


async def test_http_get_json_parses_openenv_endpoints(oe_counter_url: str) -> None:
    endpoint = Endpoint(oe_counter_url)
    assert await http_get_json(endpoint, "/health") == (200, {"status": "healthy"})

    status, metadata = await http_get_json(endpoint, "/metadata")
    assert status == 200
    assert metadata["name"] == "OECounterEnvironment" and isinstance(metadata["description"], str)
    assert {"name", "description", "version", "readme_content", "author", "documentation_url"} <= set(metadata)

    status, schema = await http_get_json(endpoint, "/schema")
    assert status == 200 and set(schema) == {"action", "observation", "state"} | ({"reset_observation"} if CURRENT else set())
    delta = schema["action"]["properties"]["delta"]
    assert (delta["type"], delta["minimum"], delta["maximum"]) == ("integer", -100, 100)
    assert {"value", "target", "done", "reward"} <= set(schema["observation"]["properties"])
    assert {"episode_id", "step_count"} <= set(schema["state"]["properties"])

    status, body = await http_get_json(endpoint, "/no-such-route")
    assert status == 404 and body == {"detail": "Not Found"}


# -- the MCP echo env ----------------------------------------------------------------------------------
async def test_mcp_tool_client_drives_openenv_mcp_env(oe_echo_url: str) -> None:
    async with MCPToolClient(oe_echo_url) as env:
        first = await env.reset()
        assert (first.reward, first.done) == (0.0, False)

        tools = await env.list_tools()
        assert all(isinstance(t, Tool) for t in tools)
        by_name = {t.name: t for t in tools}
        assert set(by_name) == {"echo_message", "echo_with_length"}
        assert by_name["echo_message"].input_schema["properties"]["message"]["type"] == "string"
        assert by_name["echo_with_length"].description == "Echo back the message with its length."

        assert await env.call_tool("echo_message", message="hello") == "hello"
        assert await env.call_tool("echo_with_length", message="hello") == {"message": "hello", "length": 5}

        with pytest.raises(ToolCallError) as caught:
            await env.call_tool("no_such_tool", message="x")
        assert caught.value.tool_name == "no_such_tool"
        assert caught.value.error_type == "tool_not_found"
        with pytest.raises(ToolCallError) as caught:
            await env.call_tool("echo_message")  # missing argument
        assert caught.value.error_type == "invalid_args"

        # The observation types parse as ours, and every step counted on their side.
        obs = (await env.step({"type": "list_tools"})).observation
        assert isinstance(obs, ListToolsObservation) and len(obs.tools) == 2
        obs = (await env.step({"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "m"}})).observation
        assert isinstance(obs, CallToolObservation) and obs.error is None and obs.result["data"] == "m"
        state = await env.state()
        assert state["step_count"] == 7


async def test_generic_client_jsonrpc_through_ws_on_openenv(oe_echo_url: str) -> None:
    async with GenericEnvClient(oe_echo_url) as env:
        listed = await env.rpc("tools/list", request_id=11)
        assert listed["jsonrpc"] == "2.0" and listed["id"] == 11
        assert {t["name"] for t in listed["result"]["tools"]} == {"echo_message", "echo_with_length"}
        called = await env.rpc("tools/call", {"name": "echo_with_length", "arguments": {"message": "rpc"}},
                               request_id=12)
        assert called["id"] == 12 and called["result"]["data"] == {"message": "rpc", "length": 3}
        unknown = await env.rpc("tools/nope", request_id=13)
        assert unknown["id"] == 13 and unknown["error"]["code"] == -32601
        # The session is still usable for steps afterwards.
        r = await env.step({"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "after"}})
        assert r.observation["result"]["data"] == "after"


async def test_mcp_tool_client_sync_wrapper_on_openenv(oe_echo_url: str) -> None:
    def run() -> tuple[list[str], Any]:
        with MCPToolClient(oe_echo_url).sync() as env:
            env.reset()
            return sorted(t.name for t in env.list_tools()), env.call_tool("echo_message", message="sync")

    names, value = await asyncio.to_thread(run)
    assert names == ["echo_message", "echo_with_length"]
    assert value == "sync"
