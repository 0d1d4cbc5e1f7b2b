"""JSON-RPC 2.0 over ``POST /mcp`` and the ``mcp`` WebSocket message.

Methods: ``tools/list``, ``tools/call``, ``openenv/session/create``, ``openenv/session/close``.
Calls name a session (``params.session_id``), run in the WebSocket's own session, or,
with neither, run on a fresh env that is closed afterwards.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from ..core import JsonRpcCode, JsonRpcError, ProtocolError, jsonrpc_error, jsonrpc_result, parse_jsonrpc_request
from ._mcp_environment import MCPEnvironment, ToolCallFailed, result_payload
from ._session import Session, SessionRegistry

__all__ = ["McpRpc"]

_TOOL_ERROR_CODES = {
    "tool_not_found": JsonRpcCode.INTERNAL_ERROR,
    "invalid_args": JsonRpcCode.INVALID_PARAMS,
}


class McpRpc:
    """Answers JSON-RPC requests against a registry's sessions."""

    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry

    def __call__(self, request: Any, session: Session | None = None) -> Any:
        """Answer one request; returns a response dict or an awaitable of one."""
        request_id = request.get("id") if isinstance(request, dict) else None
        try:
            method, params, request_id = parse_jsonrpc_request(request)
            result = self._dispatch(method, params, session)
        except JsonRpcError as exc:
            return jsonrpc_error(request_id, exc.code, exc.message, exc.data)
        if inspect.isawaitable(result):
            return self._finish(request_id, result)
        return jsonrpc_result(request_id, result)

    async def _finish(self, request_id: Any, awaitable: Any) -> dict[str, Any]:
        try:
            return jsonrpc_result(request_id, await awaitable)
        except JsonRpcError as exc:
            return jsonrpc_error(request_id, exc.code, exc.message, exc.data)

    def _dispatch(self, method: str, params: dict[str, Any], session: Session | None) -> Any:
        if method == "openenv/session/create":
            return self._create(session)
        if method == "openenv/session/close":
            return self._close(params, session)
        if method not in ("tools/list", "tools/call"):
            raise JsonRpcError(JsonRpcCode.METHOD_NOT_FOUND, f"Method not found: {method}")
        target = self._target(params, session)
        if target is None:
            return self._on_temporary_env(method, params)
        return self._run(method, params, target)

    def _create(self, session: Session | None) -> Any:
        if session is not None:
            return {"session_id": session.id}
        if self.registry.executor is not None:
            return self._create_async()
        try:
            created = self.registry.create("mcp")
        except ProtocolError as exc:
            raise JsonRpcError(JsonRpcCode.SERVER_ERROR, exc.message, exc.details) from None
        return {"session_id": created.id}

    async def _create_async(self) -> dict[str, Any]:
        try:
            created = await self.registry.create_async("mcp")
        except ProtocolError as exc:
            raise JsonRpcError(JsonRpcCode.SERVER_ERROR, exc.message, exc.details) from None
        return {"session_id": created.id}

    def _close(self, params: dict[str, Any], session: Session | None) -> Any:
        target_id = params.get("session_id")
        if not target_id:
            raise JsonRpcError(JsonRpcCode.INVALID_PARAMS, "Invalid params - 'session_id' is required")
        _check_session_id(target_id)
        if session is not None and target_id == session.id:
            raise JsonRpcError(
                JsonRpcCode.INVALID_REQUEST, "Cannot close active WebSocket-managed session via MCP method"
            )
        target = self.registry.get(target_id)
        if target is None:
            raise JsonRpcError(JsonRpcCode.INVALID_PARAMS, f"Unknown session_id: {target_id}")
        if target.attached:  # OpenEnv's rule: a /ws?session_id= connection holds it; it closes when that leaves
            target.close_pending = True
            return {"session_id": target_id, "closed": False, "closing": True}
        return self._closed(target)

    async def _closed(self, target: Session) -> dict[str, Any]:
        await self.registry.close(target)
        return {"session_id": target.id, "closed": True}

    def _target(self, params: dict[str, Any], session: Session | None) -> Session | None:
        if session is not None:
            return session
        requested = params.get("session_id")
        if requested is None:
            return None
        _check_session_id(requested)
        target = self.registry.get(requested)
        if target is None:
            raise JsonRpcError(
                JsonRpcCode.INVALID_PARAMS,
                f"Unknown session_id: {requested}; create one with openenv/session/create",
            )
        return target

    async def _on_temporary_env(self, method: str, params: dict[str, Any]) -> Any:
        try:
            env = await self.registry.build_env_async()
        except ProtocolError as exc:
            raise JsonRpcError(JsonRpcCode.SERVER_ERROR, exc.message, exc.details) from None
        temp = Session("temporary", env, self.registry.info, "mcp", self.registry.executor)
        try:
            result = self._run(method, params, temp)
            return (await result) if inspect.isawaitable(result) else result
        finally:
            await self.registry.close(temp)

    def _run(self, method: str, params: dict[str, Any], target: Session) -> Any:
        env = target.env
        target.touch()
        if not isinstance(env, MCPEnvironment):
            raise JsonRpcError(JsonRpcCode.INTERNAL_ERROR, "Environment does not support MCP")
        if method == "tools/list":
            return {
                "tools": [
                    {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                    for t in env.list_tools()
                ]
            }
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise JsonRpcError(JsonRpcCode.INVALID_PARAMS, "Missing 'name' in params")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise JsonRpcError(JsonRpcCode.INVALID_PARAMS, "'arguments' must be an object")
        if self.registry.executor is not None:  # a blocking env's tools must not stall the event loop
            future = asyncio.get_running_loop().run_in_executor(self.registry.executor, env.call_tool, name, arguments)
            return _await_call(future)
        try:
            value = env.call_tool(name, arguments)
        except ToolCallFailed as exc:
            raise _rpc_error(exc) from None
        if inspect.isawaitable(value):
            return _await_call(value)
        return result_payload(value)


def _check_session_id(value: Any) -> None:
    if not isinstance(value, str):
        raise JsonRpcError(
            JsonRpcCode.INVALID_PARAMS, f"Invalid params - 'session_id' must be a string, got {type(value).__name__}"
        )


def _rpc_error(exc: ToolCallFailed) -> JsonRpcError:
    code = _TOOL_ERROR_CODES.get(exc.error.error_type.value, JsonRpcCode.INTERNAL_ERROR)
    return JsonRpcError(code, exc.error.message, {"error_type": exc.error.error_type.value})


async def _await_call(value: Any) -> dict[str, Any]:
    try:
        return result_payload(await value)
    except ToolCallFailed as exc:
        raise _rpc_error(exc) from None
