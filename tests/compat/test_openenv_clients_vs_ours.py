"""OpenEnv's own clients (openenv-core 0.3.0) drive OUR servers (``openenv-train serve`` subprocesses)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from openenv.core.client_types import StepResult as OEStepResult
from openenv.core.env_server.mcp_types import CallToolAction as OECallToolAction
from openenv.core.env_server.mcp_types import CallToolObservation as OECallToolObservation
from openenv.core.env_server.mcp_types import ListToolsAction as OEListToolsAction
from openenv.core.env_server.mcp_types import ListToolsObservation as OEListToolsObservation
from openenv.core.mcp_client import MCPToolClient as OEMCPToolClient

from openenv_train.client import Endpoint
from tests.compat._release import CURRENT


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": tool, "arguments": arguments}


# -- GenericEnvClient against our echo ----------------------------------------------------------------
async def test_generic_client_reset_and_both_echo_tools(our_echo: Endpoint) -> None:
    async with OEGenericEnvClient(base_url=our_echo.base_url) as env:
        first = await env.reset()
        assert isinstance(first, OEStepResult)
        assert (first.observation, first.reward, first.done) == ({}, 0.0, False)

        r = await env.step(call("echo_message", message="hello openenv"))
        assert r.observation["tool_name"] == "echo_message"
        assert r.observation["error"] is None
        assert r.observation["result"]["data"] == "hello openenv"
        assert r.reward is None and r.done is False

        r = await env.step(call("echo_with_length", message="héllo"))
        assert r.observation["tool_name"] == "echo_with_length"
        assert r.observation["result"]["data"] == {"message": "héllo", "length": 5}
        assert r.observation["result"]["is_error"] is False
        assert r.done is False

        r = await env.step({"type": "list_tools"})
        tools = {t["name"]: t for t in r.observation["tools"]}
        assert set(tools) == {"echo_message", "echo_with_length"}
        assert tools["echo_message"]["input_schema"]["required"] == ["message"]
        assert tools["echo_with_length"]["description"]


async def test_generic_client_state_counts_steps_and_reset_restarts(our_echo: Endpoint) -> None:
    async with OEGenericEnvClient(base_url=our_echo.base_url) as env:
        await env.reset()
        state = await env.state()
        first_episode = state["episode_id"]
        assert isinstance(first_episode, str) and first_episode
        assert state["step_count"] == 0

        await env.step(call("echo_message", message="a"))
        await env.step({"type": "list_tools"})
        await env.step(call("echo_with_length", message="bb"))
        await env.step(call("no_such_tool"))  # a failed tool call is still a step
        state = await env.state()
        assert state == {**state, "episode_id": first_episode, "step_count": 4}

        await env.reset()
        state = await env.state()
        assert state["step_count"] == 0
        assert state["episode_id"] not in (None, first_episode)

        await env.reset(episode_id="abc")
        await env.step(call("echo_message", message="x"))
        assert await env.state() == {**state, "episode_id": "abc", "step_count": 1}


async def test_generic_client_unknown_tool_is_an_observation_not_an_error(our_echo: Endpoint) -> None:
    async with OEGenericEnvClient(base_url=our_echo.base_url) as env:
        await env.reset()
        r = await env.step(call("no_such_tool", message="x"))
        assert r.observation["result"] is None
        assert r.observation["error"]["error_type"] == "tool_not_found"
        r = await env.step(call("echo_message"))  # missing argument
        assert r.observation["error"]["error_type"] == "invalid_args"
        # The session is intact.
        r = await env.step(call("echo_message", message="still here"))
        assert r.observation["result"]["data"] == "still here"


async def test_generic_client_sync_wrapper(our_echo: Endpoint) -> None:
    def run() -> tuple[Any, ...]:
        with OEGenericEnvClient(base_url=our_echo.base_url).sync() as env:
            reset = env.reset(episode_id="sync-ep")
            echoed = env.step(call("echo_with_length", message="sync"))
            listed = env.step({"type": "list_tools"})
            state = env.state()
        return reset, echoed, listed, state

    reset, echoed, listed, state = await asyncio.to_thread(run)
    assert (reset.observation, reset.reward, reset.done) == ({}, 0.0, False)
    assert echoed.observation["result"]["data"] == {"message": "sync", "length": 4}
    assert len(listed.observation["tools"]) == 2
    assert state["episode_id"] == "sync-ep" and state["step_count"] == 2


async def test_twenty_concurrent_openenv_sessions_each_keep_their_own_episode(our_echo: Endpoint) -> None:
    async def episode(i: int) -> tuple[int, list[Any], dict[str, Any]]:
        async with OEGenericEnvClient(base_url=our_echo.base_url) as env:
            await env.reset(episode_id=f"ep-{i}")
            echoed = []
            for k in range(i % 4 + 1):
                r = await env.step(call("echo_with_length", message=f"client {i} step {k}"))
                echoed.append(r.observation["result"]["data"])
                await asyncio.sleep(0)
            return i, echoed, await env.state()

    results = await asyncio.gather(*(episode(i) for i in range(20)))
    for i, echoed, state in results:
        steps = i % 4 + 1
        assert echoed == [{"message": f"client {i} step {k}", "length": len(f"client {i} step {k}")}
                          for k in range(steps)]
        assert state["episode_id"] == f"ep-{i}"
        assert state["step_count"] == steps


# -- MCPToolClient against our echo --------------------------------------------------------------------
async def test_mcp_tool_client_default_mode_steps_over_ws(our_echo: Endpoint) -> None:
    async with OEMCPToolClient(base_url=our_echo.base_url) as env:
        await env.reset()
        tools = await env.list_tools()
        assert sorted(t.name for t in tools) == ["echo_message", "echo_with_length"]
        by_name = {t.name: t for t in tools}
        assert by_name["echo_message"].input_schema["properties"]["message"]["type"] == "string"
        assert await env.has_tool("echo_with_length")
        assert not await env.has_tool("reset")

        assert await env.call_tool("echo_message", message="Hello!") == "Hello!"
        assert await env.call_tool("echo_with_length", message="four") == {"message": "four", "length": 4}

        # openenv 0.10's client words it from the error's message, 0.3's from its type
        with pytest.raises(RuntimeError, match="no tool 'missing_tool'" if CURRENT else "tool_not_found"):
            await env.call_tool("missing_tool", message="x")

        listed = await env.step(OEListToolsAction())
        assert isinstance(listed.observation, OEListToolsObservation)
        called = await env.step(OECallToolAction(tool_name="echo_with_length", arguments={"message": "obs"}))
        assert isinstance(called.observation, OECallToolObservation)
        assert called.observation.result["data"] == {"message": "obs", "length": 3}

        state = await env.state()
        # list_tools (1) + 2 calls + the failed call + list_tools + call_tool = 6 steps; has_tool used the cache
        assert state.step_count == 6
        assert state.episode_id


async def test_mcp_tool_client_production_mode_uses_http_mcp_sessions(our_echo: Endpoint) -> None:
    client = OEMCPToolClient(base_url=our_echo.base_url)
    client.use_production_mode = True
    try:
        tools = await client.list_tools()
        # OpenEnv swallows every failure of production list_tools into []: an empty list means it failed.
        assert sorted(t.name for t in tools) == ["echo_message", "echo_with_length"]
        assert tools[0].input_schema.get("properties", {}).get("message", {}).get("type") == "string"
        session_id = client._production_session_id
        assert isinstance(session_id, str) and session_id

        assert await client.call_tool("echo_message", message="prod") == "prod"
        assert await client.call_tool("echo_with_length", message="prod!") == {"message": "prod!", "length": 5}
        with pytest.raises(RuntimeError, match="failed"):
            await client.call_tool("missing_tool")
        assert client._production_session_id == session_id  # one session for all calls
        # The session openenv/session/create made is a live session of our server.
        async with httpx.AsyncClient(base_url=our_echo.base_url) as http:
            reply = (await http.post("/mcp", json={
                "jsonrpc": "2.0", "id": 6, "method": "tools/call",
                "params": {"name": "echo_message", "arguments": {"message": "direct"}, "session_id": session_id},
            })).json()
        assert reply["id"] == 6 and reply["result"]["data"] == "direct"
    finally:
        await client.close()

    # close() sent openenv/session/close: the session is gone on our server.
    async with httpx.AsyncClient(base_url=our_echo.base_url) as http:
        reply = (await http.post("/mcp", json={
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "echo_message", "arguments": {"message": "x"}, "session_id": session_id},
        })).json()
        assert reply["id"] == 7 and reply["error"]["code"] == -32602
        again = (await http.post("/mcp", json={
            "jsonrpc": "2.0", "id": 8, "method": "openenv/session/close", "params": {"session_id": session_id},
        })).json()
        assert again["error"]["code"] == -32602


async def test_mcp_tool_client_sync_wrapper(our_echo: Endpoint) -> None:
    def run() -> tuple[list[str], Any]:
        with OEMCPToolClient(base_url=our_echo.base_url).sync() as env:
            env.reset()
            names = [t.name for t in env.list_tools()]
            return names, env.call_tool("echo_with_length", message="abc")

    names, value = await asyncio.to_thread(run)
    assert sorted(names) == ["echo_message", "echo_with_length"]
    assert value == {"message": "abc", "length": 3}


# -- GenericEnvClient against our counter ---------------------------------------------------------------
async def test_generic_client_drives_counter(our_counter: Endpoint) -> None:
    async with OEGenericEnvClient(base_url=our_counter.base_url) as env:
        r = await env.reset(target=3)
        assert (r.observation, r.reward, r.done) == ({"value": 0, "target": 3}, 0.0, False)
        r = await env.step({"delta": 1})
        assert (r.observation["value"], r.reward, r.done) == (1, 0.0, False)
        r = await env.step({"delta": 2})
        assert (r.observation["value"], r.reward, r.done) == (3, 1.0, True)
        state = await env.state()
        assert state["value"] == 3 and state["target"] == 3 and state["step_count"] == 2

        r = await env.reset(seed=7)
        assert 5 <= r.observation["target"] <= 15
        again = await env.reset(seed=7)
        assert again.observation["target"] == r.observation["target"]


async def test_bad_action_surfaces_as_openenv_runtime_error(our_counter: Endpoint) -> None:
    async with OEGenericEnvClient(base_url=our_counter.base_url) as env:
        await env.reset(target=10, episode_id="keep")
        await env.step({"delta": 2})
        with pytest.raises(RuntimeError, match=r"\(code: VALIDATION_ERROR\)"):
            await env.step({"delta": "lots"})
        with pytest.raises(RuntimeError, match=r"\(code: VALIDATION_ERROR\)"):
            await env.step({"delta": 5000})  # out of range
        with pytest.raises(RuntimeError, match=r"\(code: VALIDATION_ERROR\)"):
            await env.step({"delta": 1, "bogus": True})  # unknown field
        # The same session goes on; rejected actions were not steps.
        r = await env.step({"delta": 3})
        assert r.observation["value"] == 5
        state = await env.state()
        assert (state["episode_id"], state["step_count"], state["value"]) == ("keep", 2, 5)


async def test_action_model_dump_from_openenv_typed_action_is_accepted(our_counter: Endpoint) -> None:
    """OpenEnv clients send ``model_dump()`` of their Action subclasses, metadata included."""
    from openenv.core.env_server.types import Action as OEAction

    class Delta(OEAction):
        delta: int

    async with OEGenericEnvClient(base_url=our_counter.base_url) as env:
        await env.reset(target=4)
        r = await env.step(Delta(delta=4, metadata={"source": "openenv"}))
        assert (r.observation["value"], r.reward, r.done) == (4, 1.0, True)
