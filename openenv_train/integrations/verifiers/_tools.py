"""Native tool calls for :mod:`openenv_train.integrations.verifiers`: a live env session's tools served over MCP.

verifiers (v1) gives a harness its task's tool servers as MCP URLs (``Task.toolsets``; a toolset whose config has a
``url`` is used as it is, nothing launched). The harness offers their tools to the model as OpenAI ``tools``, runs
each of the model's ``tool_calls`` on the server and sends the result back as a ``role: tool`` message. verifiers'
own toolsets run in processes of their own, which cannot step the env session ``Env.run`` holds, and only that
session's ``call_tool`` steps carry the env's rewards. So :class:`ToolBridge` serves the tools from the process that
holds the sessions: one MCP server (mcp's own streamable-HTTP server, under uvicorn, on 127.0.0.1) per runner, each
rollout's session under its own key (``?rollout=KEY`` in the URL the harness is handed).

Nothing here imports verifiers; ``mcp`` and ``uvicorn`` (both verifiers dependencies) load when the bridge starts.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from ...server import AsgiApp, AsgiServer, ServerConfig
from ._episode import EpisodeResult, plain, record_step

__all__ = ["ToolBridge", "ToolSession"]

_PARAM = "rollout"
_ROLLOUT: contextvars.ContextVar[str] = contextvars.ContextVar("openenv_train_rollout", default="")


@dataclass
class ToolSession:
    """One rollout's env session as the model's tools: each call is one ``call_tool`` step of ``client``.

    Args:
        client: our connected MCP env client, already reset.
        tools: the env's tools (``client.list_tools()``), listed once after the reset as our own ``ToolAgent`` does.
        max_turns: the model turns the episode may take (the task's ``@stop`` reads :meth:`over`).
    """

    client: Any
    tools: list[Any]
    max_turns: int
    episode: EpisodeResult = field(default_factory=EpisodeResult)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    def over(self, model_turns: int) -> bool:
        """Whether the episode takes no more model turns: the env said done, or ``max_turns`` were taken."""
        return self.episode.done or model_turns >= self.max_turns

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Step ``call_tool(name, arguments)``; the tool message's text: the step's observation as JSON.

        A call after the env said done is not stepped (our ``ToolAgent`` stops at done, even between the calls of
        one reply), and says so.
        """
        async with self._lock:  # a harness may run one reply's calls concurrently; the env steps one at a time
            if self.episode.done:
                return "the episode is over: this call was not run"
            action = {"type": "call_tool", "tool_name": name, "arguments": arguments}
            result = await self.client.step(action)
            record_step(self.episode, action, result)
            return json.dumps(plain(result.observation), default=str)


class ToolBridge:
    """One MCP server (started on first use) for the tools of every live :class:`ToolSession` of this process."""

    def __init__(self) -> None:
        self._sessions: dict[str, ToolSession] = {}
        self._server: AsgiServer | None = None
        self._starting = asyncio.Lock()

    async def open(self, session: ToolSession) -> tuple[str, str]:
        """Serve ``session``'s tools; returns its key (for :meth:`close`) and the MCP URL to hand the harness."""
        async with self._starting:
            if self._server is None:
                server = AsgiServer(AsgiApp(self._app(), "verifiers-tools"), ServerConfig(host="127.0.0.1", port=0))
                await server.start()
                self._server = server
        key = secrets.token_urlsafe(16)
        self._sessions[key] = session
        return key, f"{self._server.url}/mcp?{_PARAM}={key}"

    def close(self, key: str) -> None:
        """Stop serving a session (its later calls get an error); idempotent."""
        self._sessions.pop(key, None)

    async def aclose(self) -> None:
        """Stop the server."""
        server, self._server, self._sessions = self._server, None, {}
        if server is not None:
            await server.stop()

    def _app(self) -> Any:
        """mcp's streamable-HTTP app whose tools are the calling rollout's (routed by the URL's key)."""
        from mcp.server.mcpserver import MCPServer
        from mcp.shared.exceptions import MCPError
        from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, Tool

        def session() -> ToolSession:
            found = self._sessions.get(_ROLLOUT.get())
            if found is None:  # an MCPError reaches the client as it is (other errors as "Internal server error")
                raise MCPError(INVALID_PARAMS, "no live episode for this rollout (it ended, or the URL lacks its "
                                               f"?{_PARAM}= key)")
            return found

        async def list_tools() -> list[Any]:
            return [Tool(name=t.name, description=t.description or "", input_schema=t.input_schema or {"type": "object"})
                    for t in session().tools]

        async def call_tool(name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            text = await session().call(name, dict(arguments or {}))
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=False)

        server: Any = MCPServer("openenv-train")
        # The catalog is each rollout's own, so the protocol's handlers are replaced rather than tools registered
        # (as verifiers' NeMo Gym toolset does for its per-rollout tools).
        server.list_tools, server.call_tool = list_tools, call_tool
        # Stateless and JSON answers, as verifiers' own tool servers: the harness reconnects per call.
        mcp_app = server.streamable_http_app(json_response=True, stateless_http=True)

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            query = parse_qs(scope.get("query_string", b"").decode()) if scope["type"] == "http" else {}
            token = _ROLLOUT.set((query.get(_PARAM) or [""])[0])
            try:
                await mcp_app(scope, receive, send)
            finally:
                _ROLLOUT.reset(token)

        return app
