"""Bad input beyond the /ws error codes: late steps, dead servers, busy ports, bad env paths, bad HTTP.

Each case must give a clear error that names the problem, and must neither crash the
server nor leak a session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from openenv_train.cli import main as cli_main
from openenv_train.client import GenericEnvClient
from openenv_train.core import ConnectionLost, EnvLoadError, ServerStartError
from openenv_train.envs import get_spec, load_env_class
from openenv_train.envs.counter import CounterEnvironment
from openenv_train.envs.echo import EchoEnvironment
from openenv_train.server import EnvServer, ServerConfig, load_class
from tests.conftest import serve_inloop, serve_process
from tests.server._support import (
    SlowAsyncEnv,
    assert_counter_session_works,
    expect_closed,
    http_request,
    open_ws,
    parse_http_response,
    raw_exchange,
    recv_json,
    request,
    wait_active,
)

_SCRIPT = Path(sys.executable).with_name("openenv-train")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "openenv_train.cli"]


@contextlib.asynccontextmanager
async def http_client(server: EnvServer, timeout: float = 5.0) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=timeout, trust_env=False) as client:
        yield client


# -- requests after close ---------------------------------------------------------------------------


async def test_steps_after_close_are_not_answered_and_the_session_is_released() -> None:
    SlowAsyncEnv.closes.clear()
    SlowAsyncEnv.built.clear()
    async with serve_inloop(SlowAsyncEnv) as server:
        ws = await open_ws(server)
        await request(ws, {"type": "reset"})
        # close, then more requests in the same burst: none of them may be answered.
        await ws.send(json.dumps({"type": "close"}))
        with contextlib.suppress(ConnectionClosed):
            for tag in range(3):
                await ws.send(json.dumps({"type": "step", "data": {"tag": tag}}))
        close = await expect_closed(ws)
        assert close is not None and close.code == 1000
        await wait_active(server, 0)
        assert list(SlowAsyncEnv.closes.values()) == [1]
        # The server keeps serving.
        again = await open_ws(server)
        assert (await request(again, {"type": "step", "data": {"tag": 9}}))["data"]["observation"]["tag"] == 9
        await again.close()
        await wait_active(server, 0)
    assert sorted(SlowAsyncEnv.closes.values()) == [1, 1]


async def test_close_after_an_in_flight_step_waits_for_its_reply() -> None:
    SlowAsyncEnv.closes.clear()
    async with serve_inloop(SlowAsyncEnv) as server:
        ws = await open_ws(server)
        await ws.send(json.dumps({"type": "step", "data": {"delay": 0.2, "tag": 1}}))
        await ws.send(json.dumps({"type": "close"}))
        await ws.send(json.dumps({"type": "step", "data": {"tag": 2}}))
        reply = await recv_json(ws)
        assert reply["type"] == "observation" and reply["data"]["observation"]["tag"] == 1
        close = await expect_closed(ws)
        assert close is not None and close.code == 1000
        await wait_active(server, 0)
        assert list(SlowAsyncEnv.closes.values()) == [1]


# -- a server killed mid-episode ------------------------------------------------------------------------


async def _killed_server_step() -> tuple[GenericEnvClient, ConnectionLost]:
    async with serve_process("counter") as (endpoint, provider):
        client = GenericEnvClient(endpoint.base_url, uds=endpoint.uds, reply_timeout_s=10)
        await client.connect()
        await client.reset(target=100)
        assert (await client.step({"delta": 4})).observation["value"] == 4
        assert provider.process is not None
        os.killpg(provider.process.pid, signal.SIGKILL)
        await asyncio.to_thread(provider.process.wait, 10)
        with pytest.raises(ConnectionLost) as info:
            await client.step({"delta": 1})
        return client, info.value


async def test_server_killed_mid_episode_raises_connection_lost() -> None:
    client, error = await _killed_server_step()
    message = str(error)
    assert "'step'" in message
    assert "1006" in message or "no close frame" in message  # not a clean close by the server
    assert "state is gone" in message
    # The server is dead: the next call tries a new session and says it cannot open one.
    with pytest.raises(ConnectionLost, match="cannot open a session"):
        await client.step({"delta": 1})
    await client.close()


async def test_server_killed_mid_episode_message_says_the_connection_was_lost() -> None:
    client, error = await _killed_server_step()
    await client.close()
    assert "lost" in str(error) or "dropped" in str(error)
    assert "server closed" not in str(error)


# -- busy port ----------------------------------------------------------------------------------------


async def test_port_in_use_raises_server_start_error() -> None:
    async with serve_inloop(CounterEnvironment) as first:
        clash = EnvServer(CounterEnvironment, ServerConfig(port=first.port or 0))
        with pytest.raises(ServerStartError, match="already in use") as info:
            await clash.start()
        assert str(first.port) in str(info.value)
        # The first server is unaffected.
        async with http_client(first) as http:
            assert (await http.get("/health")).json() == {"status": "healthy"}


def test_cli_serve_on_a_port_in_use_exits_1() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        done = subprocess.run([*CLI, "serve", "counter", "--port", str(port)], capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 1, done
    assert "already in use" in done.stderr
    assert f"127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


# -- env paths and names ---------------------------------------------------------------------------------


def test_cli_serve_a_module_that_does_not_import_exits_2() -> None:
    done = subprocess.run([*CLI, "serve", "no_such_mod:Env"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "no_such_mod" in done.stderr and "cannot import" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("path", "needles"),
    [
        ("no_such_mod:Env", ["cannot import module 'no_such_mod'", "ModuleNotFoundError"]),
        ("openenv_train.envs.counter:NoSuchEnv", ["has no attribute 'NoSuchEnv'", "CounterEnvironment"]),
        ("json:loads", ["not a subclass of openenv_train.server.Environment"]),
        ("openenv_train.envs.counter:CounterAction", ["not a subclass"]),
        ("justaname", ["not a 'package.module:ClassName' path"]),
        (":Env", ["not a 'package.module:ClassName' path"]),
        ("mod:", ["not a 'package.module:ClassName' path"]),
    ],
)
def test_load_class_errors_say_what_is_wrong(path: str, needles: list[str]) -> None:
    with pytest.raises(EnvLoadError) as info:
        load_class(path)
    for needle in needles:
        assert needle in str(info.value)


def test_load_class_resolves_a_good_path() -> None:
    assert load_class("openenv_train.envs.counter:CounterEnvironment") is CounterEnvironment


@pytest.mark.parametrize(("name", "suggestion"), [("countr", "counter"), ("ecko", "echo"), ("Counter", "counter")])
def test_unknown_catalog_name_suggests_a_close_match(name: str, suggestion: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(EnvLoadError, match=f"did you mean '{suggestion}'"):
        get_spec(name)
    with pytest.raises(EnvLoadError, match="Known: .*counter"):
        load_env_class(name)
    assert cli_main(["serve", name, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"'{suggestion}'" in err and repr(name) in err


def test_unknown_catalog_name_without_a_close_match() -> None:
    with pytest.raises(EnvLoadError) as info:
        get_spec("zzzzzzzz")
    assert "did you mean" not in str(info.value)
    assert "module:ClassName" in str(info.value)


# -- malformed HTTP --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"\x00\x01\x02 garbage\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000, 431),  # headers never end
    ],
)
async def test_malformed_http_gets_an_error_and_the_server_keeps_serving(data: bytes, status: int) -> None:
    async with serve_inloop(CounterEnvironment) as server:
        ws = await open_ws(server)
        out, closed = await raw_exchange(server.port, data)
        assert out.startswith(f"HTTP/1.1 {status}".encode()), out[:200]
        assert closed
        _, body = parse_http_response(out)
        assert "bad HTTP request" in body["detail"]
        await assert_counter_session_works(ws)
        async with http_client(server) as http:
            assert (await http.get("/health")).json() == {"status": "healthy"}
        await ws.close()
        await wait_active(server, 0)


async def test_http_body_over_the_limit_is_a_413() -> None:
    async with serve_inloop(CounterEnvironment, max_http_body=2048) as server:
        out, closed = await raw_exchange(server.port, http_request("POST", "/reset", b"{" + b" " * 5000 + b"}"))
        assert out.startswith(b"HTTP/1.1 413") and closed
        assert "2048" in parse_http_response(out)[1]["detail"]
        async with http_client(server) as http:
            assert (await http.post("/reset", json={"target": 3})).json()["observation"]["target"] == 3


async def test_keep_alive_connection_survives_a_bad_request() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        first = http_request("POST", "/step", b"[]")
        second = http_request("POST", "/step", b'{"action":{"delta":2}}').replace(
            b"Host: 127.0.0.1\r\n", b"Host: 127.0.0.1\r\nConnection: close\r\n")
        out, closed = await raw_exchange(server.port, first + second)
        assert closed
        assert out.count(b"HTTP/1.1 ") == 2, out
        assert out.startswith(b"HTTP/1.1 422")
        assert b'"value":2' in out


# -- HTTP bad bodies -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "locs"),
    [
        (b"not json", [["body"]]),
        (b"[1, 2]", [["body"]]),
        (b'"action"', [["body"]]),
        (b"{}", [["body", "action"]]),
        (b'{"action": [1]}', [["body", "action"]]),
        (b'{"action": {"delta": 1}, "timeout_s": -1}', [["body", "timeout_s"]]),
        (b'{"action": {"delta": "x"}}', [["delta"]]),
        (b'{"action": {"delta": 1, "speed": 2}}', [["speed"]]),
    ],
)
async def test_http_step_bad_body_is_a_422_with_a_detail_list(body: bytes, locs: list[list[str]]) -> None:
    async with serve_inloop(CounterEnvironment) as server, http_client(server) as http:
        response = await http.post("/step", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422, response.text
        detail = response.json()["detail"]
        assert isinstance(detail, list) and detail
        assert all({"loc", "msg", "type"} <= set(item) for item in detail)
        for loc in locs:
            assert loc in [item["loc"] for item in detail], detail
        ok = await http.post("/step", json={"action": {"delta": 3}})
        assert ok.status_code == 200 and ok.json()["observation"]["value"] == 3
        assert server.registry.active == 0  # stateless calls hold no session


@pytest.mark.parametrize(("body", "loc"), [({"seed": "x"}, ["seed"]), ({"difficulty": 1}, ["difficulty"]),
                                           ({"episode_id": 3}, ["episode_id"])])
async def test_http_reset_bad_body_is_a_422(body: dict[str, Any], loc: list[str]) -> None:
    async with serve_inloop(CounterEnvironment) as server, http_client(server) as http:
        response = await http.post("/reset", json=body)
        assert response.status_code == 422
        assert loc in [item["loc"] for item in response.json()["detail"]]
        assert (await http.post("/reset", json={"seed": 1})).status_code == 200


async def _rpc(http: httpx.AsyncClient, payload: Any) -> dict[str, Any]:
    content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    response = await http.post("/mcp", content=content, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text  # JSON-RPC errors travel with HTTP 200
    reply = response.json()
    assert reply["jsonrpc"] == "2.0"
    return reply


@pytest.mark.parametrize(
    ("payload", "code", "needle"),
    [
        (b"{not json", -32700, "Parse error"),
        (b"", -32700, "Parse error"),
        ([1, 2], -32600, "JSON-RPC 2.0 object"),
        ({"id": 1, "method": "tools/list"}, -32600, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": 1, "method": ""}, -32600, "method"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}, -32602, "object"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/dance"}, -32601, "tools/dance"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope", "arguments": {}}},
         -32603, "nope"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "echo_message", "arguments": {"message": 5}}}, -32602, "message"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "echo_message", "arguments": {"msg": "x"}}}, -32602, "msg"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}}, -32602, "name"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo_message", "arguments": [1]}},
         -32602, "arguments"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "echo_message", "arguments": {"message": "x"}, "session_id": "nope"}},
         -32602, "Unknown session_id: nope"),
        ({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close", "params": {"session_id": "nope"}},
         -32602, "Unknown session_id"),
        ({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close", "params": {}}, -32602, "session_id"),
    ],
)
async def test_http_mcp_errors(payload: Any, code: int, needle: str) -> None:
    async with serve_inloop(EchoEnvironment) as server, http_client(server) as http:
        reply = await _rpc(http, payload)
        assert "result" not in reply
        assert reply["error"]["code"] == code, reply
        assert needle in reply["error"]["message"], reply
        if isinstance(payload, dict) and "id" in payload:
            assert reply["id"] == payload["id"]
        ok = await _rpc(http, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert {t["name"] for t in ok["result"]["tools"]} == {"echo_message", "echo_with_length"}
        assert server.registry.active == 0


async def test_http_mcp_tool_errors_carry_their_type() -> None:
    async with serve_inloop(EchoEnvironment) as server, http_client(server) as http:
        missing = await _rpc(http, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}})
        assert missing["error"]["data"] == {"error_type": "tool_not_found"}
        assert "echo_message" in missing["error"]["message"]  # lists the tools that exist
        invalid = await _rpc(http, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "echo_message", "arguments": {}}})
        assert invalid["error"]["data"] == {"error_type": "invalid_args"}


async def test_http_mcp_session_lifecycle() -> None:
    async with serve_inloop(EchoEnvironment) as server, http_client(server) as http:
        created = await _rpc(http, {"jsonrpc": "2.0", "id": "a", "method": "openenv/session/create"})
        session_id = created["result"]["session_id"]
        assert isinstance(session_id, str) and session_id
        assert server.registry.active == 1
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "echo_with_length", "arguments": {"message": "héllo"}, "session_id": session_id}}
        reply = await _rpc(http, call)
        assert reply["id"] == 7
        assert reply["result"]["data"] == {"message": "héllo", "length": 5}
        assert reply["result"]["is_error"] is False
        closed = await _rpc(http, {"jsonrpc": "2.0", "id": 8, "method": "openenv/session/close",
                                   "params": {"session_id": session_id}})
        assert closed["result"] == {"session_id": session_id, "closed": True}
        assert server.registry.active == 0
        again = await _rpc(http, call)
        assert again["error"]["code"] == -32602 and session_id in again["error"]["message"]
        twice = await _rpc(http, {"jsonrpc": "2.0", "id": 9, "method": "openenv/session/close",
                                  "params": {"session_id": session_id}})
        assert twice["error"]["code"] == -32602


async def test_http_mcp_session_create_respects_the_cap() -> None:
    async with serve_inloop(EchoEnvironment, max_sessions=1) as server, http_client(server) as http:
        first = await _rpc(http, {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"})
        assert "result" in first
        second = await _rpc(http, {"jsonrpc": "2.0", "id": 2, "method": "openenv/session/create"})
        assert second["error"]["code"] == -32000
        assert second["error"]["data"] == {"active_sessions": 1, "max_sessions": 1}
        ws = await open_ws(server)  # the WebSocket side shares the cap
        assert (await recv_json(ws))["data"]["code"] == "CAPACITY_REACHED"
        await expect_closed(ws)
        await _rpc(http, {"jsonrpc": "2.0", "id": 3, "method": "openenv/session/close",
                          "params": {"session_id": first["result"]["session_id"]}})
        assert server.registry.active == 0


async def test_ws_cannot_close_its_own_session_through_mcp() -> None:
    async with serve_inloop(EchoEnvironment) as server:
        ws = await open_ws(server)
        own = await request(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}})
        session_id = own["data"]["result"]["session_id"]
        reply = await request(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 2, "method": "openenv/session/close",
                                                            "params": {"session_id": session_id}}})
        assert reply["type"] == "mcp" and reply["data"]["error"]["code"] == -32600
        assert server.registry.active == 1
        bad = await request(ws, {"type": "mcp", "data": {"jsonrpc": "1.0", "id": 3, "method": "tools/list"}})
        assert bad["type"] == "mcp" and bad["data"]["error"]["code"] == -32600
        tools = await request(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}})
        assert len(tools["data"]["result"]["tools"]) == 2
        await ws.close()
        await wait_active(server, 0)


@pytest.mark.parametrize("method", ["no/such/method", "tools/list"])
async def test_http_mcp_non_finite_id_gets_an_answer(method: str) -> None:
    async with serve_inloop(EchoEnvironment) as server, http_client(server, timeout=1) as http:
        body = b'{"jsonrpc":"2.0","id":NaN,"method":"%s"}' % method.encode()
        response = await http.post("/mcp", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 200
        assert "error" in response.json()


async def test_http_step_non_finite_number_is_a_422() -> None:
    async with serve_inloop(CounterEnvironment) as server, http_client(server, timeout=1) as http:
        response = await http.post("/step", content=b'{"action":{"delta":NaN}}',
                                   headers={"content-type": "application/json"})
        assert response.status_code == 422


# -- HTTP routes and methods --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/nope", 404),
        ("POST", "/nope", 404),
        ("GET", "/health/extra", 404),
        ("POST", "/health", 405),
        ("DELETE", "/step", 405),
        ("GET", "/step", 405),
        ("GET", "/reset", 405),
        ("POST", "/state", 405),
        ("GET", "/mcp", 405),
        ("POST", "/ws", 405),
        ("GET", "/ws", 426),
    ],
)
async def test_http_404_405_426(method: str, path: str, status: int) -> None:
    async with serve_inloop(CounterEnvironment) as server, http_client(server) as http:
        response = await http.request(method, path)
        assert response.status_code == status, response.text
        detail = response.json()["detail"]
        assert isinstance(detail, str) and detail
        if status == 426:
            assert "WebSocket" in detail
        assert (await http.get("/health")).status_code == 200  # same keep-alive connection still serves
        assert server.registry.active == 0


@pytest.mark.parametrize("method", ["openenv/session/close", "tools/call"])
async def test_http_mcp_unhashable_session_id_is_invalid_params(method: str) -> None:
    async with serve_inloop(EchoEnvironment) as server, http_client(server) as http:
        reply = await _rpc(http, {"jsonrpc": "2.0", "id": 1, "method": method,
                                  "params": {"name": "echo_message", "arguments": {"message": "x"},
                                             "session_id": ["not", "an", "id"]}})
        assert reply["error"]["code"] == -32602


async def test_ws_mcp_unhashable_session_id_is_invalid_params() -> None:
    async with serve_inloop(EchoEnvironment) as server:
        ws = await open_ws(server)
        reply = await request(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close",
                                                            "params": {"session_id": {"a": 1}}}})
        assert reply["type"] == "mcp" and reply["data"]["error"]["code"] == -32602
