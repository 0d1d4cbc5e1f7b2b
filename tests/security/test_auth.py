"""Bearer-token authentication of env servers (HTTP and /ws) and of the policy endpoint.

Real servers: ``openenv-train serve`` subprocesses (their log is read back to check the token never
appears) and servers in the test's event loop; real clients: ours (async, sync, MCP) and openenv-core's.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from openenv.core.mcp_client import MCPToolClient as OEMCPToolClient
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from openenv_train.client import GenericEnvClient, MCPToolClient
from openenv_train.core import ConnectionLost, _auth
from openenv_train.envs import load_env_class
from openenv_train.launch import LocalProcessProvider
from openenv_train.policy import PolicyServer
from openenv_train.server import ServerConfig
from openenv_train.trace import CaptureStore
from tests.conftest import serve_inloop
from tests.security._support import TOKEN, ByteBackend, chat_body

HTTP_ROUTES = [("GET", "/metadata"), ("GET", "/schema"), ("GET", "/openapi.json"), ("POST", "/reset"),
               ("POST", "/step"), ("GET", "/state"), ("POST", "/mcp"), ("GET", "/ws"), ("GET", "/no-such-route"),
               ("GET", "/list_environments"), ("GET", "/counter/splits"), ("POST", "/counter/num_tasks")]


def _with_userinfo(base_url: str, token: str) -> str:
    """``http://host:port`` → ``http://openenv:<token>@host:port`` (what URL-only clients can carry)."""
    scheme, rest = base_url.split("://", 1)
    return f"{scheme}://openenv:{token}@{rest}"


# -- the env server over HTTP and /ws ------------------------------------------------------------------
async def test_every_route_but_health_needs_the_token() -> None:
    async with serve_inloop(load_env_class("counter"), token=TOKEN) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            assert (await http.get("/health")).json() == {"status": "healthy"}  # probes stay open
            for method, path in HTTP_ROUTES:
                body = {"action": {"delta": 1}} if path == "/step" else {}
                missing = await http.request(method, path, json=body)
                wrong = await http.request(method, path, json=body, headers={"Authorization": f"Bearer x{TOKEN}"})
                right = await http.request(method, path, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
                assert missing.status_code == wrong.status_code == 401, (path, missing.text)
                assert right.status_code != 401, (path, right.text)
                assert "Authorization: Bearer <token>" in missing.json()["detail"]
                assert "not this server's token" in wrong.json()["detail"]
                assert missing.json()["error"] == "unauthorized"
                assert 'Bearer realm="openenv-train"' in missing.headers.get_list("www-authenticate")
                assert TOKEN not in missing.text + wrong.text
            # Basic auth with the token as password (what a URL's user:password becomes) is accepted too.
            assert (await http.post("/reset", json={}, auth=("anyone", TOKEN))).status_code == 200
            assert (await http.post("/reset", json={}, auth=("anyone", "guess"))).status_code == 401
            # A keep-alive connection still works after a refusal.
            assert (await http.get("/metadata", headers={"Authorization": f"Bearer {TOKEN}"})).status_code == 200
        assert server.limit_hits["token"] == 2 * len(HTTP_ROUTES) + 1


async def test_websocket_upgrade_is_refused_with_401_before_any_session() -> None:
    async with serve_inloop(load_env_class("counter"), token=TOKEN) as server:
        url = f"ws://127.0.0.1:{server.port}/ws"
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {TOKEN} "[:-2]}):
            with pytest.raises(InvalidStatus) as refused:
                await connect(url, additional_headers=headers, proxy=None)
            assert refused.value.response.status_code == 401
            assert TOKEN not in refused.value.response.body.decode()
        assert server.registry.created == 0  # no env was ever built for a refused upgrade
        async with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, proxy=None) as ws:
            await ws.send('{"type": "reset", "data": {"target": 3}}')
            assert '"target":3' in await ws.recv()
        assert server.registry.created == 1


async def test_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bytes, bytes]] = []
    compare = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return compare(a, b)

    monkeypatch.setattr(_auth.hmac, "compare_digest", spy)
    async with serve_inloop(load_env_class("counter"), token=TOKEN) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            assert (await http.get("/metadata", headers={"Authorization": "Bearer nope"})).status_code == 401
            assert (await http.get("/metadata", headers={"Authorization": f"Bearer {TOKEN}"})).status_code == 200
    assert seen == [(b"nope", TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]


def test_token_sources_and_that_no_repr_or_error_shows_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    from_file = ServerConfig(token_file=str(token_file))
    assert from_file.token == TOKEN and TOKEN not in repr(from_file)
    monkeypatch.setenv("OPENENV_TRAIN_TOKEN", TOKEN)
    assert ServerConfig().token == TOKEN
    assert ServerConfig(token="").token is None  # explicitly off
    client = GenericEnvClient("http://127.0.0.1:1")
    assert client._handshake_headers() == {"Authorization": f"Bearer {TOKEN}"}
    assert TOKEN not in repr(client.headers) + repr(ServerConfig())
    assert GenericEnvClient("http://127.0.0.1:1", token="")._handshake_headers() == {}
    bad = tmp_path / "bad"
    bad.write_text("has a space " + TOKEN)
    with pytest.raises(ValueError, match="token file") as error:
        ServerConfig(token_file=str(bad))
    assert TOKEN not in str(error.value)
    with pytest.raises(ValueError, match="cannot read the token file"):
        ServerConfig(token_file=str(tmp_path / "missing"))


# -- real server subprocesses with every client ---------------------------------------------------------
async def test_clients_with_the_token_work_and_the_log_never_shows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Bound to all interfaces with a token: allowed, and no exposure warning.
    provider = LocalProcessProvider("echo", host="0.0.0.0", token=TOKEN)
    endpoint = await provider.start()
    url = endpoint.base_url.replace("0.0.0.0", "127.0.0.1")
    try:
        # Our async client (explicit token), our MCP client, from_url, and the sync client (token from the env var).
        async with GenericEnvClient(url, token=TOKEN) as env:
            assert (await env.reset()).done is False
        async with MCPToolClient(url, token=TOKEN) as mcp:
            assert await mcp.call_tool("echo_message", message="authed") == "authed"
        client = await GenericEnvClient.from_url(url, token=TOKEN)
        await client.close()
        monkeypatch.setenv("OPENENV_TRAIN_TOKEN", TOKEN)
        sync_value = await asyncio.to_thread(_sync_reset, url)
        assert sync_value is False
        monkeypatch.delenv("OPENENV_TRAIN_TOKEN")

        # Without it or with a wrong one: a clear refusal.
        for token in (None, "wrong-token"):
            with pytest.raises(ConnectionLost, match=r"requires a token .*HTTP 401.*OPENENV_TRAIN_TOKEN") as lost:
                await GenericEnvClient(url, token=token, reconnect=False).connect()
            assert TOKEN not in str(lost.value)

        # openenv-core 0.3.0's clients take no headers; the token travels as the URL's password (Basic auth).
        async with OEGenericEnvClient(base_url=_with_userinfo(url, TOKEN)) as oe:
            assert (await oe.reset()).done is False
        with pytest.raises(ConnectionError, match="401"):
            await OEGenericEnvClient(base_url=url).connect()
        oe_mcp = OEMCPToolClient(base_url=_with_userinfo(url, TOKEN))
        oe_mcp.use_production_mode = True  # its HTTP path: POST /mcp through httpx
        try:
            assert sorted(t.name for t in await oe_mcp.list_tools()) == ["echo_message", "echo_with_length"]
            assert await oe_mcp.call_tool("echo_message", message="over http") == "over http"
        finally:
            await oe_mcp.close()
        async with httpx.AsyncClient(base_url=url) as http:  # plain HTTP with a wrong token
            assert (await http.post("/step", json={"action": {}}, headers={"Authorization": "Bearer no"})).status_code == 401
    finally:
        log = provider.log_tail(200)
        await provider.stop()
    assert "serving echo" in log
    assert "without a token" not in log
    assert TOKEN not in log


def _sync_reset(url: str) -> bool:
    with GenericEnvClient(url).sync() as env:
        return bool(env.reset().done)


async def test_non_loopback_bind_without_token_warns(caplog: pytest.LogCaptureFixture) -> None:
    provider = LocalProcessProvider("counter", host="0.0.0.0", token="")
    await provider.start()
    try:
        log = provider.log_tail(50)
    finally:
        await provider.stop()
    assert "listens on 0.0.0.0:" in log and "without a token" in log and "--token-file" in log
    # Loopback (the default) and Unix sockets stay quiet; so does an in-loop server with a token.
    caplog.set_level(logging.WARNING, logger="openenv_train.server")
    async with serve_inloop(load_env_class("counter")):
        pass
    async with serve_inloop(load_env_class("counter"), host="0.0.0.0", token=TOKEN):
        pass
    assert "without a token" not in caplog.text
    async with serve_inloop(load_env_class("counter"), host="0.0.0.0"):
        pass
    assert "without a token" in caplog.text


# -- the policy endpoint ----------------------------------------------------------------------------------
async def _post(server: PolicyServer, body: dict[str, Any], **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url) as http:
        return await http.post("/v1/chat/completions", json=body, headers=headers)


async def test_policy_endpoint_token_with_capture_sessions() -> None:
    store = CaptureStore()
    store.open_session("episode-1")
    store.open_session("episode-2")
    async with PolicyServer(ByteBackend(), capture=store, token=TOKEN) as server:
        assert server.requires_token
        # OpenAI's client with only base_url + api_key: "<token>:<session>" records into that session.
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=server.api_key_for("episode-1"), max_retries=0)
        reply = await client.chat.completions.create(model="bytes", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "ok"
        assert [m.id for m in (await client.models.list()).data] == ["bytes"]
        # The token alone plus an X-Capture-Session header; the token alone (no capture).
        by_header = await _post(server, chat_body(), Authorization=f"Bearer {TOKEN}", **{"X-Capture-Session": "episode-2"})
        no_capture = await _post(server, chat_body(), Authorization=f"Bearer {TOKEN}")
        # A session id alone is not enough once a token is set (unlike api_key), nor a wrong token.
        session_only = await _post(server, chat_body(), Authorization="Bearer episode-1")
        wrong = await _post(server, chat_body(), Authorization="Bearer nope:episode-1")
        missing = await _post(server, chat_body())
        unknown = await _post(server, chat_body(), Authorization=f"Bearer {TOKEN}:no-such-episode")
        clash = await _post(server, chat_body(), Authorization=f"Bearer {TOKEN}:episode-1",
                            **{"X-Capture-Session": "episode-2"})
        async with httpx.AsyncClient(base_url=server.url) as http:
            health = await http.get("/health")
            models = await http.get("/v1/models")
        refused = openai.AsyncOpenAI(base_url=server.base_url, api_key="episode-1", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            await refused.chat.completions.create(model="bytes", messages=[{"role": "user", "content": "hi"}])
    assert by_header.status_code == no_capture.status_code == health.status_code == 200
    assert session_only.status_code == wrong.status_code == missing.status_code == models.status_code == 401
    for response in (session_only, wrong, missing):
        error = response.json()["error"]
        assert error["code"] == "invalid_api_key" and "api_key='<token>:<capture session id>'" in error["message"]
        assert TOKEN not in response.text
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_session"
    assert clash.status_code == 400
    assert len(store.close_session("episode-1").turns) == 1
    assert len(store.close_session("episode-2").turns) == 1
    assert server.limit_hits["token"] == 5


async def test_policy_token_from_env_var_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_TRAIN_POLICY_TOKEN", TOKEN)
    assert PolicyServer(ByteBackend()).api_key_for("s") == f"{TOKEN}:s"
    assert not PolicyServer(ByteBackend(), token="").requires_token
    assert not PolicyServer(ByteBackend(), api_key="k").requires_token  # api_key keeps its own, older rule
    monkeypatch.delenv("OPENENV_TRAIN_POLICY_TOKEN")
    (tmp_path / "policy-token").write_text(TOKEN)
    assert PolicyServer(ByteBackend(), token_file=str(tmp_path / "policy-token")).api_key_for() == TOKEN
    assert PolicyServer(ByteBackend()).api_key_for("s") == "s"
    with pytest.raises(ValueError, match="not both"):
        PolicyServer(ByteBackend(), api_key="k", token=TOKEN)
