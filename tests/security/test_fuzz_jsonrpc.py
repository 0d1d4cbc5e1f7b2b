"""Hypothesis fuzzing of the JSON-RPC handler (``McpRpc``) over ``POST /mcp`` and ``mcp`` frames on ``/ws``.

Random messages: wrong types everywhere, missing or odd ids, batches (arrays), unknown methods, huge
params. Every request gets exactly one JSON-RPC 2.0 response object (HTTP 200), whose id echoes the
request's, with either a ``result`` or an ``error`` whose code follows from the envelope; nothing
is a 500, no session leaks, and the server keeps serving. ``tests/server/test_fuzz.py`` covers the
session protocol; this file covers the JSON-RPC layer.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openenv_train.core import loads as strict_loads
from openenv_train.envs.echo import EchoEnvironment
from openenv_train.server import EnvServer, ServerConfig
from tests.server._support import http_request, open_ws, parse_http_response, recv_json

FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
KNOWN = ("tools/list", "tools/call", "openenv/session/create", "openenv/session/close")
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL, SERVER_ERROR = (
    -32700, -32600, -32601, -32602, -32603, -32000)

# -- strategies -----------------------------------------------------------------------------------------

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=10)
scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | text)
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3),
                           max_leaves=10)
huge = st.sampled_from([
    "x" * 200_000,
    list(range(20_000)),
    {f"k{i}": i for i in range(5_000)},
    {"name": "echo_message", "arguments": {"message": "y" * 300_000}},
    {"name": "echo_message", "arguments": {f"a{i}": [i] * 10 for i in range(2_000)}},
])
tool_params = st.fixed_dictionaries({}, optional={
    "name": st.sampled_from(["echo_message", "echo_with_length", "nope", ""]) | json_values,
    "arguments": st.fixed_dictionaries({}, optional={"message": text | json_values}) | json_values,
    "session_id": text | json_values,
})
params = st.none() | tool_params | tool_params | json_values | huge
ids = st.none() | st.integers(-(2**70), 2**70) | text | st.floats(allow_nan=False, allow_infinity=False) | json_values
methods = st.sampled_from(KNOWN) | st.sampled_from(["nope", "", "tools/", "TOOLS/LIST", "rpc.discover"]) | json_values
envelopes = st.fixed_dictionaries(
    {}, optional={"jsonrpc": st.just("2.0") | st.just("2.0") | json_values, "id": ids, "method": methods,
                  "params": params, "extra": json_values},
)
messages = st.one_of(envelopes, envelopes, envelopes, json_values, st.lists(envelopes, min_size=1, max_size=3))


def expected_code(request: Any) -> int | None:
    """The error code the envelope alone decides, or None when the method's handler decides."""
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0":
        return INVALID_REQUEST
    method = request.get("method")
    if not isinstance(method, str) or not method:
        return INVALID_REQUEST
    p = request.get("params", {})
    if p is not None and not isinstance(p, dict):
        return INVALID_PARAMS
    if method not in KNOWN:
        return METHOD_NOT_FOUND
    return None


def check_response(request: Any, reply: Any) -> None:
    assert isinstance(reply, dict) and reply.get("jsonrpc") == "2.0", (request, reply)
    assert "id" in reply
    assert reply["id"] == (request.get("id") if isinstance(request, dict) else None), (request, reply)
    assert ("result" in reply) != ("error" in reply), reply
    code = expected_code(request)
    if "result" in reply:
        assert code is None, (request, reply)
        return
    error = reply["error"]
    assert isinstance(error["code"], int) and isinstance(error["message"], str) and error["message"], reply
    if code is not None:
        assert error["code"] == code, (request, reply)
    else:
        assert error["code"] in (INVALID_PARAMS, INTERNAL, INVALID_REQUEST, SERVER_ERROR), (request, reply)


def created_ids(reply: Any) -> list[str]:
    result = reply.get("result") if isinstance(reply, dict) else None
    if isinstance(result, dict) and "session_id" in result and "closed" not in result:
        return [result["session_id"]]
    return []


# -- the live server ------------------------------------------------------------------------------------


@dataclass
class Live:
    loop: asyncio.AbstractEventLoop
    server: EnvServer

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 30))


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    loop = asyncio.new_event_loop()
    server = EnvServer(EchoEnvironment, ServerConfig(port=0, max_sessions=64))
    loop.run_until_complete(server.start())
    try:
        yield Live(loop, server)
    finally:
        loop.run_until_complete(server.stop())
        loop.close()


async def _post(server: EnvServer, body: bytes) -> tuple[int, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(http_request("POST", "/mcp", body).replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nConnection: close\r\n",
                                                                 1))
        raw = await reader.read()
    finally:
        writer.close()
    return parse_http_response(raw)


async def _cleanup(server: EnvServer, sessions: list[str]) -> None:
    for sid in sessions:
        session = server.registry.get(sid)
        if session is not None:
            await server.registry.close(session)
    deadline = time.monotonic() + 5
    while server.registry.active:
        assert time.monotonic() < deadline, f"{server.registry.active} sessions leaked"
        await asyncio.sleep(0.005)


async def _http_example(server: EnvServer, batch: list[Any]) -> None:
    made: list[str] = []
    try:
        for request in batch:
            status, reply = await _post(server, json.dumps(request).encode())
            assert status == 200, (request, status, reply)
            check_response(request, reply)
            made += created_ids(reply)
        status, reply = await _post(server, b'{"jsonrpc":"2.0","id":"ok","method":"tools/list"}')
        assert status == 200 and [t["name"] for t in reply["result"]["tools"]][:1] == ["echo_message"], reply
    finally:
        await _cleanup(server, made)


async def _ws_example(server: EnvServer, batch: list[Any]) -> None:
    made: list[str] = []
    ws = await open_ws(server)
    try:
        for request in batch:  # pipelined: every reply must come back, in order
            await ws.send(json.dumps({"type": "mcp", "data": request}))
        for request in batch:
            frame = await recv_json(ws, 15)
            if not isinstance(request, dict):  # the frame's data must be an object
                assert frame["type"] == "error" and frame["data"]["code"] == "VALIDATION_ERROR", (request, frame)
                continue
            assert frame["type"] == "mcp", (request, frame)
            check_response(request, frame["data"])
            made += created_ids(frame["data"])
        await ws.send('{"type":"state"}')  # the session still works
        state = await recv_json(ws)
        assert state["type"] == "state", state
    finally:
        await ws.close()
        await _cleanup(server, made)


@given(batch=st.lists(messages, min_size=1, max_size=4))
@FUZZ
def test_fuzz_post_mcp(live: Live, batch: list[Any]) -> None:
    live.run(_http_example(live.server, batch))


@given(batch=st.lists(messages, min_size=1, max_size=4))
@FUZZ
def test_fuzz_ws_mcp(live: Live, batch: list[Any]) -> None:
    live.run(_ws_example(live.server, batch))


@given(body=st.binary(max_size=64) | text.map(str.encode)
       | json_values.map(lambda v: json.dumps(v).encode()[:-1]))  # cut-off JSON
@FUZZ
def test_fuzz_post_mcp_raw_bodies(live: Live, body: bytes) -> None:
    async def example() -> None:
        status, reply = await _post(live.server, body)
        assert status == 200, (body, status, reply)
        try:
            request = strict_loads(body)  # the server's own reading: NaN, 1e400, deep nesting are not JSON
        except ValueError:
            assert reply["error"]["code"] == PARSE_ERROR and reply["id"] is None, (body, reply)
            return
        check_response(request, reply)
        await _cleanup(live.server, created_ids(reply))

    live.run(example())


def test_a_batch_is_one_invalid_request_error(live: Live) -> None:
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    status, reply = live.run(_post(live.server, json.dumps(batch).encode()))
    assert status == 200 and reply["error"]["code"] == INVALID_REQUEST and reply["id"] is None, reply
