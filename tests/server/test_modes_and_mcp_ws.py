"""ServerMode (production drops the stateless HTTP control routes) and MCP JSON-RPC over the ``/mcp`` WebSocket."""

from __future__ import annotations

import json

import httpx
import pytest

from openenv_train.client import GenericEnvClient, McpWsClient, ToolCallError, server_mode
from openenv_train.core import ServerMode
from openenv_train.envs.counter import CounterEnvironment
from openenv_train.envs.echo import EchoEnvironment
from openenv_train.server import ServerConfig
from tests.conftest import serve_inloop


def test_a_mode_parses_in_any_case_and_an_unknown_one_is_named() -> None:
    assert ServerConfig(mode="PRODUCTION").mode == "production"
    assert ServerMode.parse("Simulation") is ServerMode.SIMULATION
    with pytest.raises(ValueError, match=r"unknown server mode 'staging': use one of \['simulation', 'production'\]"):
        ServerConfig(mode="staging")


def test_the_mode_falls_back_to_openenv_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv_train.core import config_options

    (mode,) = [o for o in config_options(ServerConfig) if o.name == "mode"]
    assert (mode.flag, mode.envvar, mode.default) == ("--mode", "OPENENV_MODE", "simulation")


async def test_production_drops_reset_step_state_and_keeps_the_rest() -> None:
    async with serve_inloop(CounterEnvironment, mode="production") as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            for method, path in (("POST", "/reset"), ("POST", "/step"), ("GET", "/state")):
                answer = await http.request(method, path, json={"action": {"delta": 1}} if path == "/step" else {})
                assert (answer.status_code, answer.json()) == (404, {"detail": "Not Found"}), path
            for path in ("/health", "/schema", "/metadata"):
                assert (await http.get(path)).status_code == 200, path
            paths = (await http.get("/openapi.json")).json()["paths"]
            assert not {"/reset", "/step", "/state"} & set(paths) and {"/ws", "/mcp", "/health"} <= set(paths)
        assert await server_mode(server.url) is ServerMode.PRODUCTION
        async with GenericEnvClient(server.url) as env:  # sessions on /ws still reset, step and read state
            await env.reset()
            assert (await env.step({"delta": 2})).observation["value"] == 2
            assert (await env.state())["step_count"] == 1


async def test_simulation_keeps_the_http_routes() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        assert await server_mode(server.url) is ServerMode.SIMULATION
        async with httpx.AsyncClient(base_url=server.url) as http:
            assert (await http.post("/reset", json={})).status_code == 200


async def test_mcp_over_websocket_holds_one_session_per_connection() -> None:
    async with serve_inloop(EchoEnvironment, mode="production") as server:
        async with McpWsClient(server.url) as mcp:
            tools = {t.name for t in await mcp.list_tools()}
            assert {"echo_message", "echo_with_length"} <= tools
            assert await mcp.call_tool("echo_message", message="hi") == "hi"
            created = await mcp.rpc("openenv/session/create")
            session_id = created["result"]["session_id"]
            assert session_id in server.registry.sessions  # the connection's own session
            with pytest.raises(ToolCallError, match="nope"):
                await mcp.call_tool("nope")
            # Bad input answers a JSON-RPC error; the connection and its session stay.
            assert (await mcp.send_raw("{not json"))["error"]["code"] == -32700
            assert (await mcp.rpc("no/such/method"))["error"]["code"] == -32601
            assert (await mcp.send_raw(json.dumps([1, 2])))["error"]["code"] == -32600
            assert await mcp.call_tool("echo_message", message="still here") == "still here"
        assert session_id not in server.registry.sessions  # closing the socket closed it


async def test_mcp_over_websocket_on_an_env_without_tools_answers_an_error() -> None:
    async with serve_inloop(CounterEnvironment) as server, McpWsClient(server.url) as mcp:
        reply = await mcp.rpc("tools/list")
        assert reply["error"]["message"] == "Environment does not support MCP"


async def test_mcp_over_websocket_at_capacity_answers_a_jsonrpc_error() -> None:
    async with serve_inloop(EchoEnvironment, max_sessions=1) as server:
        async with McpWsClient(server.url) as first:
            assert await first.call_tool("echo_message", message="a") == "a"
            async with McpWsClient(server.url) as second:
                reply = await second.rpc("tools/list")
                assert reply["error"]["code"] == -32000 and "max_sessions" in json.dumps(reply["error"])
            assert await first.call_tool("echo_message", message="b") == "b"


def test_serve_refuses_an_unknown_mode(capsys: pytest.CaptureFixture[str]) -> None:
    from openenv_train.cli import main

    assert main(["serve", "counter", "--mode", "staging"]) == 2
    assert "unknown server mode 'staging'" in capsys.readouterr().err
