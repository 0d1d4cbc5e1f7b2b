"""MCP JSON-RPC over the ``/mcp`` WebSocket, as OpenEnv 0.10 serves it beside ``POST /mcp``.

One connection holds one env session for its lifetime (the server builds it on connect and closes it on
disconnect); ``tools/list`` and ``tools/call`` run on it directly, without env steps or rewards. It works in
both server modes, so it is the way to a production server's tools.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from ..core import TOKEN_ENV, OpenEnvTrainError, Tool
from ..launch import ws_url
from ._mcp_client import ToolCallError

__all__ = ["McpWsClient", "McpWsError", "mcp_ws_url"]


class McpWsError(OpenEnvTrainError):
    """A JSON-RPC error answer on the ``/mcp`` WebSocket (``code`` and ``data`` as the server sent them)."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"MCP {method} failed ({code}): {message}")
        self.code, self.data = code, data


def mcp_ws_url(base_url: str) -> str:
    """``http(s)://host[/prefix]`` to ``ws(s)://host[/prefix]/mcp``.

    Example:
        >>> mcp_ws_url("http://127.0.0.1:8000")
        'ws://127.0.0.1:8000/mcp'
    """
    return ws_url(base_url)[: -len("/ws")] + "/mcp"


class McpWsClient:
    """Client of a server's ``/mcp`` WebSocket.

    Args:
        base_url: the server's ``http(s)://`` URL.
        token: bearer token for servers that require one (default: ``$OPENENV_TRAIN_TOKEN``).
        timeout_s: how long one answer may take.

    Example (a running server, in a coroutine)::

        async with McpWsClient("http://127.0.0.1:8000") as mcp:
            tools = await mcp.list_tools()
            value = await mcp.call_tool("echo_message", message="hi")
    """

    def __init__(self, base_url: str, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        import os

        self.url = mcp_ws_url(base_url)
        self.token = token if token is not None else os.environ.get(TOKEN_ENV)
        self.timeout_s = timeout_s
        self._ws: ClientConnection | None = None
        self._ids = itertools.count(1)

    async def connect(self) -> McpWsClient:
        """Open the WebSocket (the server builds the session's env)."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        self._ws = await connect(self.url, additional_headers=headers, open_timeout=self.timeout_s, max_size=None)
        return self

    async def close(self) -> None:
        """Close the WebSocket (the server closes the session's env)."""
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    async def __aenter__(self) -> McpWsClient:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send_raw(self, text: str) -> dict[str, Any]:
        """Send one text frame as it is and return the answer (for malformed requests in tests and probes)."""
        import asyncio

        if self._ws is None:
            raise RuntimeError("McpWsClient is not connected; use 'async with McpWsClient(url)' or await connect()")
        with contextlib.suppress(ConnectionClosed):  # a server that refused the session sent why before closing
            await self._ws.send(text)
        try:
            answer = await asyncio.wait_for(self._ws.recv(), self.timeout_s)
        except ConnectionClosed as exc:
            raise McpWsError("(any)", 0, f"the server closed {self.url} ({exc})") from None
        reply: dict[str, Any] = json.loads(answer)
        return reply

    async def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One JSON-RPC request; returns the whole response (``result`` or ``error``)."""
        request = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": next(self._ids)}
        return await self.send_raw(json.dumps(request))

    async def _result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        reply = await self.rpc(method, params)
        error = reply.get("error")
        if error:
            raise McpWsError(method, error.get("code", 0), error.get("message", ""), error.get("data"))
        return reply.get("result")

    async def list_tools(self) -> list[Tool]:
        """The env's tools."""
        result = await self._result("tools/list")
        return [Tool(name=t["name"], description=t.get("description") or "",
                     input_schema=t.get("inputSchema") or t.get("input_schema") or {})
                for t in result.get("tools", [])]

    async def call_tool(self, name: str, **arguments: Any) -> Any:
        """Call a tool and return its value (the result's ``data``, else the result).

        Raises:
            ToolCallError: the server answered an error for the call.
        """
        try:
            result = await self._result("tools/call", {"name": name, "arguments": arguments})
        except McpWsError as exc:
            data = exc.data if isinstance(exc.data, dict) else {}
            raise ToolCallError(name, str(data.get("error_type", exc.code)), str(exc)) from None
        if isinstance(result, dict) and "data" in result:
            return result["data"]
        return result
