"""The MCP server that hands a live env session's tools to a verifiers harness (action ``tool_call``).

A real env server (``trading_mcp`` in a subprocess) and our client hold the session; the harness's side is
verifiers' own MCP client code (``verifiers.v1.harnesses.utils.mcp``: what the null harness's chat program runs),
so the tools it lists, the calls it makes and the results it reads are the ones a harness sees.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("verifiers.v1", reason="verifiers is not installed (pip install 'openenv-train[verifiers]')")

from verifiers.v1.harnesses.utils.mcp import call_mcp, connect_mcp, mcp_client  # noqa: E402

from openenv_train.client import MCPToolClient  # noqa: E402
from openenv_train.integrations.verifiers._tools import ToolBridge, ToolSession  # noqa: E402
from tests.conftest import serve_process  # noqa: E402

pytestmark = pytest.mark.timeout(180)


async def test_a_harness_calls_the_live_sessions_tools() -> None:
    from contextlib import AsyncExitStack

    bridge = ToolBridge()
    async with serve_process("trading_mcp") as (endpoint, _), MCPToolClient(endpoint.base_url) as env, \
            MCPToolClient(endpoint.base_url) as other:
        await env.reset(seed=3)
        await other.reset(seed=3)
        session = ToolSession(env, await env.list_tools(), max_turns=5)
        key, url = await bridge.open(session)
        try:
            async with AsyncExitStack() as stack:
                schemas, dispatch, servers = await connect_mcp({"mcpServers": {"": {"url": url}}}, stack)
                offered = {s["function"]["name"]: s["function"] for s in schemas}
                assert set(offered) == {t.name for t in session.tools}  # the env's own names, unprefixed
                assert offered["advance"]["parameters"]["properties"]["bars"]["maximum"] == 500
                bought = await call_mcp(servers, dispatch, "place_order", {"side": "buy", "size": 10})
                moved = await call_mcp(servers, dispatch, "advance", {"bars": 5})
            # the same calls on a second session of the same seed: same results, same rewards
            await other.step({"type": "call_tool", "tool_name": "place_order", "arguments": {"side": "buy", "size": 10}})
            direct = await other.step({"type": "call_tool", "tool_name": "advance", "arguments": {"bars": 5}})
        finally:
            bridge.close(key)
            await bridge.aclose()
    assert json.loads(str(bought))["result"] is not None
    assert json.loads(str(moved)) == json.loads(json.dumps(direct.observation.model_dump(mode="json")))
    assert [s["action"]["tool_name"] for s in session.episode.steps] == ["place_order", "advance"]
    assert session.episode.reward == pytest.approx(direct.reward) and direct.reward != 0.0
    assert not session.over(1) and session.over(5)


async def test_an_unknown_rollout_key_is_an_error() -> None:
    bridge = ToolBridge()
    async with serve_process("trading_mcp") as (endpoint, _), MCPToolClient(endpoint.base_url) as env:
        await env.reset(seed=0)
        key, url = await bridge.open(ToolSession(env, await env.list_tools(), max_turns=1))
        bridge.close(key)
        try:  # one client, no retries (the harness's connect_mcp retries for ~20 s)
            async with mcp_client({"url": url}) as client:
                with pytest.raises(Exception, match="no live episode"):
                    await client.list_tools()
        finally:
            await bridge.aclose()
