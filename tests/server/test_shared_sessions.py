"""``/ws?session_id=``: a WebSocket attached to a session ``openenv/session/create`` made, as OpenEnv 0.10.

The WebSocket and ``POST /mcp`` then drive one env; leaving detaches without closing it; a close asked for while
attached (``closing``) happens when the WebSocket leaves; an unknown or already-attached id is refused.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from openenv_train.client import GenericEnvClient, MCPToolClient, ToolCallError, post_mcp
from openenv_train.core import ConnectionLost, ServerError
from openenv_train.envs.echo import EchoEnvironment
from openenv_train.launch import Endpoint
from openenv_train.server import tool
from tests.conftest import serve_inloop


class SharedEcho(EchoEnvironment):
    """The echo env with a tool that tells which episode its session's env holds."""

    @tool
    def episode(self) -> str:
        """The episode id of this env."""
        return str(self.state.episode_id)


async def test_the_websocket_and_post_mcp_share_one_session() -> None:
    async with serve_inloop(SharedEcho) as server:
        endpoint = Endpoint(server.url)
        session_id = (await post_mcp(endpoint, "openenv/session/create"))["session_id"]
        async with GenericEnvClient(server.url, session_id=session_id) as env:
            assert env.url.endswith(f"/ws?session_id={session_id}")
            await env.reset(episode_id="shared-1")
            called = await post_mcp(endpoint, "tools/call", {"name": "episode", "arguments": {},
                                                             "session_id": session_id})
            assert called["data"] == "shared-1"
            with pytest.raises((ServerError, ConnectionLost), match="already has an attached WebSocket"):
                async with GenericEnvClient(server.url, session_id=session_id, reconnect=False) as second:
                    await second.reset()
        assert server.registry.get(session_id) is not None  # leaving detached it; the session stays
        async with GenericEnvClient(server.url, session_id=session_id) as env:  # and can be attached again
            closing = await post_mcp(endpoint, "openenv/session/close", {"session_id": session_id})
            assert closing == {"session_id": session_id, "closed": False, "closing": True}
            assert (await env.state())["episode_id"] == "shared-1"
        await _until_gone(server, session_id)


async def _until_gone(server: object, session_id: str) -> None:
    for _ in range(3000):  # the detach (or reaper) runs as a task of the server's loop: wait on the condition
        if server.registry.get(session_id) is None:  # type: ignore[attr-defined]
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"session {session_id} still open after its pending close")


async def test_an_unknown_session_id_is_refused_with_its_name() -> None:
    async with serve_inloop(SharedEcho) as server:
        with pytest.raises((ServerError, ConnectionLost), match="Unknown session_id: nope"):
            async with GenericEnvClient(server.url, session_id="nope", reconnect=False) as env:
                await env.reset()
        async with httpx.AsyncClient() as http:  # the server still serves
            assert (await http.get(f"{server.url}/health")).json()["status"] == "healthy"


async def test_our_production_mcp_client_shares_and_then_ends_its_session() -> None:
    async with serve_inloop(SharedEcho, mode="production") as server:
        async with MCPToolClient(server.url, mode="production") as env:
            await env.reset(episode_id="ep-7")
            assert await env.call_tool("episode") == "ep-7"
            assert {t.name for t in await env.list_tools()} >= {"episode", "echo_message"}
            assert (await env.state())["step_count"] == 0  # tools over HTTP are not env steps
            with pytest.raises(ToolCallError, match="no_such_tool"):
                await env.call_tool("no_such_tool")
            session_id = env.session_id
            assert session_id is not None and server.registry.get(session_id) is not None
        await _until_gone(server, session_id)
    with pytest.raises(ValueError, match="unknown mode 'staging'"):
        MCPToolClient("http://127.0.0.1:1", mode="staging")


async def test_the_idle_reaper_spares_an_attached_session() -> None:
    async with serve_inloop(SharedEcho, idle_timeout_s=2.0) as server:
        endpoint = Endpoint(server.url)
        attached, loose = [(await post_mcp(endpoint, "openenv/session/create"))["session_id"] for _ in range(2)]
        async with GenericEnvClient(server.url, session_id=attached) as env:
            await env.reset(episode_id="kept")
            await _until_gone(server, loose)  # the reaper has run past the timeout: the unattached one is gone
            assert server.registry.get(attached) is not None
            assert (await env.state())["episode_id"] == "kept"
