"""One session shared by ``POST /mcp`` and ``/ws?session_id=`` (openenv 0.10's production ``MCPToolClient``), both
ways: their MCPToolClient against our production server, ours against theirs. The ``episode`` tool (called over
HTTP) must see the episode the WebSocket's reset started: the same env, not a second session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from openenv_train.client import MCPToolClient
from tests.compat._release import CURRENT
from tests.compat.conftest import openenv_core_servers
from tests.conftest import serve_inloop
from tests.server.test_shared_sessions import SharedEcho

if CURRENT:
    from openenv.core.mcp_client import MCPToolClient as OEMCPToolClient

pytestmark = pytest.mark.skipif(not CURRENT, reason="/ws?session_id= came with openenv 0.10")


@pytest.fixture(scope="module")
def oe_shared_url() -> Iterator[str]:
    """openenv's echo env with an ``episode`` tool, ``create_app(mode=PRODUCTION)``."""
    with openenv_core_servers("shared") as urls:
        yield urls["shared"]


async def test_their_production_mcp_client_shares_a_session_on_our_server() -> None:
    async with serve_inloop(SharedEcho, mode="production") as ours:
        async with OEMCPToolClient(base_url=ours.url, mode="production") as env:
            await env.reset(episode_id="theirs-on-ours")
            assert await env.call_tool("episode") == "theirs-on-ours"
            session_id = env._production_session_id
            assert session_id is not None and ours.registry.get(session_id) is not None
        for _ in range(500):  # their close detaches, then ends the session: wait on the condition
            if ours.registry.get(session_id) is None:
                break
            await asyncio.sleep(0.01)
        assert ours.registry.get(session_id) is None


async def test_our_production_mcp_client_shares_a_session_on_their_server(oe_shared_url: str) -> None:
    async with MCPToolClient(oe_shared_url, mode="production") as env:
        await env.reset(episode_id="ours-on-theirs")
        assert await env.call_tool("episode") == "ours-on-theirs"
        assert "episode" in {t.name for t in await env.list_tools()}
    async with MCPToolClient(oe_shared_url) as plain:  # simulation mode: tools are steps of the /ws session
        await plain.reset(episode_id="stepped")
        assert await plain.call_tool("episode") == "stepped"
