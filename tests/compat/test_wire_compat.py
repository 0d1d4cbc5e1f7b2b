"""The same requests against OUR echo server and an openenv-core echo server get replies of the same shape.

Ours is ``openenv-train serve echo``; theirs is openenv-core's ``create_app`` of an
``MCPEnvironment`` holding a FastMCP echo server (see ``_openenv_apps.py``), both in subprocesses.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from openenv_train.client import Endpoint, GenericEnvClient
from openenv_train.core import CapacityError
from openenv_train.launch import LocalProcessProvider
from tests.compat._release import CURRENT
from tests.conftest import serve_process

OBS_KEYS = {"observation", "reward", "done"}
OPENENV_CLI = Path(sys.executable).with_name("openenv")


@pytest.fixture(scope="module")
def shared_echo() -> Iterator[Endpoint]:
    """One ``openenv-train serve echo`` subprocess for this module's stateless comparisons."""
    provider = LocalProcessProvider("echo")
    endpoint = asyncio.run(provider.start())
    try:
        yield endpoint
    finally:
        asyncio.run(provider.stop())


@pytest.fixture
async def both(shared_echo: Endpoint, oe_echo_url: str) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """HTTP clients of our echo server and of openenv-core's, keyed "ours" and "theirs"."""
    async with httpx.AsyncClient(base_url=shared_echo.base_url, timeout=10) as ours, \
            httpx.AsyncClient(base_url=oe_echo_url, timeout=10) as theirs:
        yield {"ours": ours, "theirs": theirs}


async def each(both: dict[str, httpx.AsyncClient], method: str, path: str, **kwargs: Any) -> dict[str, httpx.Response]:
    ours, theirs = await asyncio.gather(
        both["ours"].request(method, path, **kwargs), both["theirs"].request(method, path, **kwargs)
    )
    return {"ours": ours, "theirs": theirs}


def rpc(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def call_tool(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": tool, "arguments": arguments}


# -- info routes ---------------------------------------------------------------------------------------
async def test_health_metadata_schema(both: dict[str, httpx.AsyncClient]) -> None:
    health = await each(both, "GET", "/health")
    for r in health.values():
        assert r.status_code == 200 and r.json() == {"status": "healthy"}

    metadata = await each(both, "GET", "/metadata")
    assert set(metadata["ours"].json()) == set(metadata["theirs"].json()) == {
        "name", "description", "readme_content", "version", "author", "documentation_url"}
    for r in metadata.values():
        assert r.status_code == 200
        assert isinstance(r.json()["name"], str) and isinstance(r.json()["description"], str)
    assert metadata["ours"].json()["name"] == "echo"

    schema = await each(both, "GET", "/schema")
    for side, r in schema.items():
        assert r.status_code == 200
        body = r.json()
        # openenv 0.10 added reset_observation (ours has it against either release)
        assert set(body) == {"action", "observation", "state"} | ({"reset_observation"} if CURRENT or side == "ours" else set())
        assert all(isinstance(v, dict) and v for v in body.values())
        assert {"episode_id", "step_count"} <= set(body["state"]["properties"])
        assert "call_tool" in json.dumps(body["action"])  # both accept call_tool actions


async def test_openapi_has_version_and_the_routes(both: dict[str, httpx.AsyncClient]) -> None:
    openapi = await each(both, "GET", "/openapi.json")
    for r in openapi.values():
        assert r.status_code == 200
        doc = r.json()
        assert isinstance(doc["info"]["version"], str) and doc["info"]["version"]
        assert {"/health", "/metadata", "/schema", "/reset", "/step", "/state", "/mcp"} <= set(doc["paths"])
        assert "post" in doc["paths"]["/step"] and "post" in doc["paths"]["/reset"] and "get" in doc["paths"]["/state"]


async def test_stateless_state(both: dict[str, httpx.AsyncClient]) -> None:
    state = await each(both, "GET", "/state")
    for r in state.values():
        assert r.status_code == 200
        assert {"episode_id", "step_count"} <= set(r.json()) and r.json()["step_count"] == 0


# -- /reset and /step ------------------------------------------------------------------------------------
def _own(side: str, body: dict[str, Any]) -> dict[str, Any]:
    """The observation's own fields: openenv 0.10 servers repeat the top-level metadata inside it (ours do not)."""
    obs = dict(body["observation"])
    if CURRENT and side == "theirs":
        assert (obs.pop("metadata") or {}) == (body.get("metadata") or {})
    return obs


async def test_reset_replies(both: dict[str, httpx.AsyncClient]) -> None:
    for body in ({}, {"seed": 3, "episode_id": "e-1"}):
        replies = await each(both, "POST", "/reset", json=body)
        for name, r in replies.items():
            assert r.status_code == 200
            assert OBS_KEYS <= set(r.json()) and set(r.json()) - OBS_KEYS <= {"metadata"}
            assert (_own(name, r.json()), r.json()["reward"], r.json()["done"]) == ({}, 0.0, False)
    # A body-less POST /reset works too.
    replies = await each(both, "POST", "/reset")
    assert {name: r.status_code for name, r in replies.items()} == {"ours": 200, "theirs": 200}


async def test_step_replies(both: dict[str, httpx.AsyncClient]) -> None:
    replies = await each(both, "POST", "/step", json={"action": call_tool("echo_with_length", message="shape")})
    bodies = {}
    for name, r in replies.items():
        assert r.status_code == 200
        body = bodies[name] = r.json()
        assert OBS_KEYS <= set(body) and set(body) - OBS_KEYS <= {"metadata"}
        assert (body["reward"], body["done"]) == (None, False)
        obs = _own(name, body)
        assert set(obs) == {"tool_name", "result", "error"}
        assert obs["tool_name"] == "echo_with_length" and obs["error"] is None
        assert {"content", "structured_content", "data", "is_error"} <= set(obs["result"])
        assert obs["result"]["content"][0]["type"] == "text"
        assert json.loads(obs["result"]["content"][0]["text"]) == {"message": "shape", "length": 5}
    assert bodies["ours"]["observation"]["result"]["data"] == bodies["theirs"]["observation"]["result"]["data"] \
        == {"message": "shape", "length": 5}

    replies = await each(both, "POST", "/step", json={"action": call_tool("echo_message", message="plain"),
                                                      "timeout_s": 5, "request_id": "r-1"})
    assert [r.json()["observation"]["result"]["data"] for r in replies.values()] == ["plain", "plain"]

    replies = await each(both, "POST", "/step", json={"action": {"type": "list_tools"}})
    names = {}
    for name, r in replies.items():
        assert r.status_code == 200
        tools = r.json()["observation"]["tools"]
        assert all({"name", "description", "input_schema"} <= set(t) for t in tools)
        names[name] = sorted(t["name"] for t in tools)
    assert names["ours"] == names["theirs"] == ["echo_message", "echo_with_length"]


@pytest.mark.parametrize("body", [
    {},
    {"action": "not an object"},
    {"action": {"type": "call_tool"}},  # no tool_name
    {"action": {"type": "call_tool", "tool_name": "echo_message", "bogus": 1}},
    {"action": call_tool("echo_message", message="x"), "timeout_s": 0},
])
async def test_bad_step_bodies_are_422_with_a_detail_list(both: dict[str, httpx.AsyncClient], body: Any) -> None:
    replies = await each(both, "POST", "/step", json=body)
    for name, r in replies.items():
        assert r.status_code == 422, (name, r.text)
        detail = r.json()["detail"]
        assert isinstance(detail, list) and detail, name
        assert all({"loc", "msg", "type"} <= set(d) and isinstance(d["loc"], list) for d in detail), (name, detail)
    if body == {}:
        assert [d["loc"] for d in replies["ours"].json()["detail"]] == \
            [d["loc"] for d in replies["theirs"].json()["detail"]] == [["body", "action"]]


async def test_non_json_step_body_is_422(both: dict[str, httpx.AsyncClient]) -> None:
    replies = await each(both, "POST", "/step", content=b"{not json", headers={"content-type": "application/json"})
    for r in replies.values():
        assert r.status_code == 422
        assert r.json()["detail"][0]["type"] == "json_invalid" and r.json()["detail"][0]["loc"][0] == "body"


async def test_bad_reset_seed_is_422(both: dict[str, httpx.AsyncClient]) -> None:
    replies = await each(both, "POST", "/reset", json={"seed": "abc"})
    for r in replies.values():
        assert r.status_code == 422
        assert any("seed" in d["loc"] for d in r.json()["detail"])


async def test_step_body_with_extra_step_parameters_is_accepted(both: dict[str, httpx.AsyncClient]) -> None:
    body = {"action": call_tool("echo_message", message="x"), "render": True, "verbose": False}
    replies = await each(both, "POST", "/step", json=body)
    assert replies["theirs"].status_code == 200
    assert replies["ours"].status_code == 200, replies["ours"].text


# -- POST /mcp -------------------------------------------------------------------------------------------
async def test_mcp_tools_list_and_call(both: dict[str, httpx.AsyncClient]) -> None:
    replies = await each(both, "POST", "/mcp", json=rpc("tools/list", request_id="list-1"))
    for name, r in replies.items():
        assert r.status_code == 200
        body = r.json()
        assert (body["jsonrpc"], body["id"]) == ("2.0", "list-1") and "error" not in body
        tools = {t["name"]: t for t in body["result"]["tools"]}
        assert set(tools) == {"echo_message", "echo_with_length"}, name
        for t in tools.values():
            # The MCP spec says inputSchema; openenv-core dumps its mcp models (input_schema with mcp 2.x).
            schema = t.get("inputSchema", t.get("input_schema"))
            assert schema["properties"]["message"]["type"] == "string" and schema["required"] == ["message"]
            assert isinstance(t["description"], str) and t["description"]

    replies = await each(both, "POST", "/mcp", json=rpc("tools/call", {
        "name": "echo_with_length", "arguments": {"message": "json-rpc"}}, request_id=42))
    for r in replies.values():
        body = r.json()
        assert r.status_code == 200 and (body["jsonrpc"], body["id"]) == ("2.0", 42)
        assert body["result"]["data"] == {"message": "json-rpc", "length": 8}
        assert body["result"]["is_error"] is False
        assert body["result"]["structured_content"] == {"message": "json-rpc", "length": 8}

    replies = await each(both, "POST", "/mcp", json=rpc("tools/call", {"name": "echo_message",
                                                                       "arguments": {"message": "m"}}))
    assert [r.json()["result"]["data"] for r in replies.values()] == ["m", "m"]


@pytest.mark.parametrize(("body", "code", "request_id"), [
    (rpc("tools/teleport", request_id=5), -32601, 5),
    (rpc("tools/call", {"arguments": {}}, request_id=6), -32602, 6),  # no name
    (rpc("tools/call", {"name": "echo_message", "arguments": {"message": "x"}, "session_id": "nope"}, 7), -32602, 7),
    (rpc("openenv/session/close", {}, request_id=8), -32602, 8),
    (rpc("tools/call", {"name": "no_such_tool", "arguments": {}}, request_id=9), -32603, 9),
    ({}, -32600, None),  # what `openenv validate` posts
    ({"jsonrpc": "1.0", "id": 10, "method": "tools/list"}, -32600, None),
])
async def test_mcp_errors(both: dict[str, httpx.AsyncClient], body: Any, code: int, request_id: Any) -> None:
    replies = await each(both, "POST", "/mcp", json=body)
    for name, r in replies.items():
        assert r.status_code == 200, name
        reply = r.json()
        assert reply["jsonrpc"] == "2.0" and "result" not in reply, (name, reply)
        assert reply["error"]["code"] == code and isinstance(reply["error"]["message"], str), (name, reply)
        if request_id is not None:
            assert reply["id"] == request_id, (name, reply)


async def test_mcp_parse_error(both: dict[str, httpx.AsyncClient]) -> None:
    replies = await each(both, "POST", "/mcp", content=b"{this is not json",
                         headers={"content-type": "application/json"})
    for r in replies.values():
        assert r.status_code == 200
        assert r.json()["jsonrpc"] == "2.0" and r.json()["id"] is None
        assert r.json()["error"]["code"] == -32700


async def test_mcp_http_sessions(both: dict[str, httpx.AsyncClient]) -> None:
    for name, http in both.items():
        created = (await http.post("/mcp", json=rpc("openenv/session/create", request_id=1))).json()
        session_id = created["result"]["session_id"]
        assert isinstance(session_id, str) and session_id, name
        called = (await http.post("/mcp", json=rpc("tools/call", {
            "name": "echo_message", "arguments": {"message": name}, "session_id": session_id}, 2))).json()
        assert called["result"]["data"] == name
        listed = (await http.post("/mcp", json=rpc("tools/list", {"session_id": session_id}, 3))).json()
        assert len(listed["result"]["tools"]) == 2
        closed = (await http.post("/mcp", json=rpc("openenv/session/close", {"session_id": session_id}, 4))).json()
        assert closed == {**closed, "id": 4, "result": {"session_id": session_id, "closed": True}}, name
        again = (await http.post("/mcp", json=rpc("openenv/session/close", {"session_id": session_id}, 5))).json()
        assert again["error"]["code"] == -32602, name


# -- /ws error frames ----------------------------------------------------------------------------------
async def test_ws_error_frames(shared_echo: Endpoint, oe_echo_url: str) -> None:
    async def probe(base_url: str) -> list[Any]:
        url = base_url.replace("http://", "ws://") + "/ws"
        replies: list[Any] = []
        async with ws_connect(url) as ws:
            for frame in ["this is not json", json.dumps({"type": "teleport"}), json.dumps({"type": "step"}),
                          json.dumps({"type": "step", "data": {"type": "call_tool"}}),
                          json.dumps({"type": "reset", "data": {"episode_id": "raw"}}),
                          json.dumps({"type": "step", "data": call_tool("echo_message", message="raw")}),
                          json.dumps({"type": "state"})]:
                await ws.send(frame)
                replies.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            await ws.send(json.dumps({"type": "close"}))
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 10)
        return replies

    ours, theirs = await asyncio.gather(probe(shared_echo.base_url), probe(oe_echo_url))
    for name, replies in (("ours", ours), ("theirs", theirs)):
        bad_json, unknown, no_data, bad_action, reset, step, state = replies
        assert [r["type"] for r in (bad_json, unknown, no_data, bad_action)] == ["error"] * 4, name
        assert bad_json["data"]["code"] == "INVALID_JSON", name
        assert unknown["data"]["code"] == "UNKNOWN_TYPE", name
        assert no_data["data"]["code"] == "VALIDATION_ERROR", name
        assert bad_action["data"]["code"] == "VALIDATION_ERROR", name
        assert isinstance(bad_action["data"]["errors"], list) and bad_action["data"]["errors"], name
        assert reset["type"] == "observation" and OBS_KEYS <= set(reset["data"]), name
        assert step["type"] == "observation" and step["data"]["observation"]["result"]["data"] == "raw", name
        assert state == {"type": "state", "data": {**state["data"], "episode_id": "raw", "step_count": 1}}, name


# -- capacity, as an OpenEnv client sees it --------------------------------------------------------------
async def test_openenv_client_sees_capacity_reached() -> None:
    async with serve_process("echo", "--max-sessions", "1") as (endpoint, _provider):
        async with OEGenericEnvClient(base_url=endpoint.base_url) as holder:
            await holder.reset(episode_id="holder")
            for _ in range(3):
                refused = OEGenericEnvClient(base_url=endpoint.base_url)
                try:
                    await refused.connect()
                    # Depending on timing OpenEnv's client reports the error frame (RuntimeError) or the close
                    # that follows it; either way the user must see CAPACITY_REACHED.
                    with pytest.raises((RuntimeError, ConnectionClosed), match="CAPACITY_REACHED"):
                        await refused.reset()
                finally:
                    await refused.close()
            await holder.step(call_tool("echo_message", message="still mine"))
            assert (await holder.state())["step_count"] == 1
        # With the holder gone, a new session gets in.
        async with OEGenericEnvClient(base_url=endpoint.base_url) as late:
            assert (await late.reset()).observation == {}


async def test_our_client_reports_a_refused_session_as_capacity_error() -> None:
    async with serve_process("echo", "--max-sessions", "1") as (endpoint, _provider):
        async with GenericEnvClient(endpoint.base_url) as holder:
            await holder.reset()
            for _ in range(2):
                refused = GenericEnvClient(endpoint.base_url, reconnect=False)
                try:
                    await refused.connect()
                    await asyncio.sleep(0.3)  # the error frame and the close have surely arrived by now
                    with pytest.raises(CapacityError) as caught:
                        await refused.reset()
                    assert caught.value.details == {"active_sessions": 1, "max_sessions": 1}
                finally:
                    await refused.close()


# -- openenv validate --url ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def validate_report(shared_echo: Endpoint) -> dict[str, Any]:
    """``openenv validate --url`` (openenv-core's own CLI, in a subprocess) run against our echo server."""
    json_flag = ["--json"] if CURRENT else []  # 0.3 printed JSON by default, 0.10 asks for --json
    done = subprocess.run([str(OPENENV_CLI), "validate", "--url", shared_echo.base_url, "--timeout", "10", *json_flag],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)  # their CLI starts slowly
    start = done.stdout.find("{")
    assert start >= 0, f"no JSON report (rc={done.returncode}):\n{done.stdout}\n{done.stderr}"
    return {"rc": done.returncode, "report": json.loads(done.stdout[start:]), "stderr": done.stderr}


@pytest.mark.timeout(600)  # the first to run waits for their CLI (validate_report), slow to start
def test_openenv_validate_url_passes_on_our_server(validate_report: dict[str, Any]) -> None:
    report = validate_report["report"]
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert validate_report["rc"] == 0 and report["passed"] is True, failed
    assert report["mode"] == "simulation"
    assert {c["id"] for c in report["criteria"]} == {
        "openapi_version_available", "health_endpoint", "metadata_endpoint", "schema_endpoint", "mcp_endpoint",
        "mode_endpoint_consistency"}


@pytest.mark.timeout(600)  # the first to run waits for their CLI (validate_report), slow to start
def test_openenv_validate_sees_the_same_api_standard_as_openenv_servers(validate_report: dict[str, Any]) -> None:
    report = validate_report["report"]
    assert report["standard_profile"] == "openenv-http/1.x", report["standard_version"]

