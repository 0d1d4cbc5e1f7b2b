"""MCPToolClient: list and call the tools of an MCP environment through its session.

In production mode (``mode="production"``, as OpenEnv's ``MCPToolClient``) it shares one server session between
HTTP and the WebSocket: ``openenv/session/create`` on ``POST /mcp`` makes it, the WebSocket attaches to it
(``/ws?session_id=...``) for ``reset``/``step``/``state``, tools are listed and called over ``POST /mcp`` with
that ``session_id`` (no env steps), and ``close()`` detaches, then ends it with ``openenv/session/close``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..core import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Observation,
    OpenEnvTrainError,
    ServerMode,
    StepResult,
    Tool,
)
from ._client import EnvClient
from ._mcp_http import McpHttpError, post_mcp

__all__ = ["MCPToolClient", "ToolCallError"]

M = TypeVar("M", bound="MCPToolClient")


class ToolCallError(OpenEnvTrainError):
    """A tool call came back with an error (``error_type`` as in MCP: tool_not_found, invalid_args, ...)."""

    def __init__(self, tool_name: str, error_type: str, message: str) -> None:
        super().__init__(f"tool {tool_name!r} failed ({error_type}): {message}")
        self.tool_name = tool_name
        self.error_type = error_type


class MCPToolClient(EnvClient[Any, Observation, Any]):
    """Client of an MCP env: ``list_tools()`` and ``call_tool(name, **arguments)``.

    Calls go through ``step`` (so they count as env steps and can carry rewards), exactly
    as OpenEnv's MCPToolClient does by default. With ``mode="production"`` (OpenEnv's meaning) they go over
    ``POST /mcp`` in a session the WebSocket shares (see the module's docstring); a server in either mode serves
    that.
    """

    def __init__(self, *args: Any, mode: ServerMode | str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tools: list[Tool] | None = None
        try:
            self.mode = ServerMode(mode) if mode is not None else ServerMode.SIMULATION
        except ValueError:
            raise ValueError(f"unknown mode {mode!r}; use one of: {', '.join(m.value for m in ServerMode)}") from None
        self._owned_session: str | None = None  # made by connect(); close() ends it

    @property
    def shares_session(self) -> bool:
        """Tools go over ``POST /mcp`` in the session the WebSocket attaches to (production mode)."""
        return self.mode is ServerMode.PRODUCTION

    async def connect(self: M) -> M:
        """Open the session; in production mode, create the shared one over HTTP first and attach to it."""
        if self.shares_session and self.session_id is None:
            if self.provider is not None and not self.provider.started:
                self.endpoint = await self.provider.start()
            created = await self._rpc("openenv/session/create")
            self.session_id = self._owned_session = str(created["session_id"])
        try:
            await super().connect()
        except BaseException:  # as OpenEnv's: a session made for a WebSocket that never came is ended
            await self.close()
            raise
        return self

    async def close(self) -> None:
        """Detach the WebSocket, end the session this client created (production mode), stop the provider."""
        await self._disconnect()
        owned, self._owned_session = self._owned_session, None
        if owned is not None:
            self.session_id = None
            try:
                await self._rpc("openenv/session/close", {"session_id": owned})
            except McpHttpError:  # best effort, as OpenEnv's: the server may be gone already
                pass
        await super().close()

    async def _rpc(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await post_mcp(self.endpoint, method, params, headers=self._handshake_headers(),
                              timeout_s=self.reply_timeout_s)

    async def _session_rpc(self, method: str, params: dict[str, Any]) -> Any:
        if self.session_id is None:
            await self.connect()
        return await self._rpc(method, {**params, "session_id": self.session_id})

    def _result(self, data: dict[str, Any]) -> StepResult[Any]:
        own = dict(data.get("observation") or {})
        reward, done, metadata = data.get("reward"), bool(data.get("done", False)), data.get("metadata") or {}
        metadata = own.pop("metadata", None) or metadata  # openenv >= 0.10 repeats it inside the observation
        common = {"reward": reward, "done": done, "metadata": metadata}
        if "tools" in own:
            obs: Observation = ListToolsObservation.model_validate({**own, **common})
        elif "tool_name" in own:
            obs = CallToolObservation.model_validate({**own, **common})
        else:
            obs = Observation.model_validate(common)
        return StepResult(observation=obs, reward=reward, done=done, metadata=metadata)

    async def list_tools(self, *, use_cache: bool = True) -> list[Tool]:
        """The env's tools (cached after the first call)."""
        if use_cache and self._tools is not None:
            return self._tools
        if self.shares_session:
            listed = await self._session_rpc("tools/list", {})
            self._tools = [Tool(name=t["name"], description=t.get("description") or "",
                                input_schema=t.get("inputSchema") or t.get("input_schema") or {})
                           for t in listed["tools"]]
            return self._tools
        obs = (await self.step(ListToolsAction())).observation
        assert isinstance(obs, ListToolsObservation)
        self._tools = obs.tools
        return self._tools

    async def call_tool(self, name: str, **arguments: Any) -> Any:
        """Call a tool and return its value (the MCP result's ``data``).

        Raises:
            ToolCallError: the env reported an error for the call.
        """
        if self.shares_session:
            try:
                result = await self._session_rpc("tools/call", {"name": name, "arguments": arguments})
            except McpHttpError as exc:
                data = exc.data if isinstance(exc.data, dict) else {}
                raise ToolCallError(name, str(data.get("error_type", "rpc_error")), str(exc)) from None
            return result["data"] if isinstance(result, dict) and "data" in result else result
        obs = (await self.step(CallToolAction(tool_name=name, arguments=arguments))).observation
        if not isinstance(obs, CallToolObservation):
            raise ToolCallError(name, "transport_error", f"expected a call_tool observation, got {obs!r}")
        if obs.error is not None:
            raise ToolCallError(name, obs.error.error_type.value, obs.error.message)
        result = obs.result
        if isinstance(result, dict) and "data" in result:
            return result["data"]
        return result
