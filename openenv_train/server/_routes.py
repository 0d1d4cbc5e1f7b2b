"""The HTTP side of the env server: routes, their JSON answers and the OpenAPI document.

Routes take ``(method, path, body)`` and return ``(status, json_payload)`` or an
awaitable of it; the connection code in ``_connection`` does the I/O.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from ..core import JsonRpcCode, ProtocolError, ServerMode, dumps, jsonrpc_error, loads
from ._mcp_rpc import McpRpc
from ._session import Session, SessionRegistry, payload_json
from ._task_routes import TaskRoutes

__all__ = ["HttpRoutes", "Response"]

Response = tuple[int, Any]

OPENENV_HTTP_API_VERSION = "1.0.0"

_ROUTES: dict[str, tuple[str, ...]] = {
    "/health": ("GET",),
    "/metadata": ("GET",),
    "/schema": ("GET",),
    "/openapi.json": ("GET",),
    "/reset": ("POST",),
    "/step": ("POST",),
    "/state": ("GET",),
    "/mcp": ("POST",),
    "/ws": ("GET",),
}

#: The routes ``ServerMode.PRODUCTION`` leaves out (as OpenEnv's ``register_routes`` does).
SIMULATION_ONLY = frozenset({"/reset", "/step", "/state"})


def _detail(loc: list[Any], msg: str, kind: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": kind}


class HttpRoutes:
    """Answers every HTTP route of the protocol for one registry."""

    def __init__(self, registry: SessionRegistry, mcp: McpRpc, *, version: str,
                 mode: ServerMode = ServerMode.SIMULATION) -> None:
        self.registry = registry
        self.mode = mode
        self._hidden = SIMULATION_ONLY if mode is ServerMode.PRODUCTION else frozenset()
        self.mcp = mcp
        self.version = version
        env_cls = registry.info.env_cls
        self._metadata = env_cls.metadata_info().model_dump()
        self._schema = registry.info.schema()
        self._openapi = dumps(_openapi(self._metadata, self._schema, version, self._hidden))
        self.tasks = TaskRoutes(self._metadata["name"], self._with_env)
        self.web: Callable[[str, str], Response] | None = None
        """The ``/web`` playground's handler (``ServerConfig.web``); None answers 404 there."""

    def handle(self, method: str, path: str, body: bytes) -> Response | Awaitable[Response]:
        """Route one request."""
        target, path = path, path.split("?", 1)[0].rstrip("/") or "/"
        if self.web is not None and (path == "/web" or path.startswith("/web/")):
            return self.web(method, target)
        allowed = None if path in self._hidden else _ROUTES.get(path)
        task_route = self.tasks.match(path) if allowed is None else None
        if task_route is not None:
            parsed = _json_object(body) if method == "POST" else {}
            return parsed if isinstance(parsed, tuple) else self.tasks.handle(method, *task_route, parsed)
        if allowed is None:
            return 404, {"detail": "Not Found"}
        if method not in allowed and not (method == "HEAD" and "GET" in allowed):
            return 405, {"detail": "Method Not Allowed"}
        if path == "/health":
            return 200, {"status": "healthy"}
        if path == "/metadata":
            return 200, self._metadata
        if path == "/schema":
            return 200, self._schema
        if path == "/openapi.json":
            return 200, RawJson(self._openapi)
        if path == "/ws":
            return 426, {"detail": "/ws is a WebSocket endpoint; connect with a WebSocket client (Upgrade: websocket)"}
        if path == "/mcp":
            return self._mcp(body)
        if path == "/state":
            return self._stateless("state", {})
        parsed = _json_object(body)
        if isinstance(parsed, tuple):
            return parsed
        return self._stateless(path[1:], parsed)

    def _mcp(self, body: bytes) -> Response | Awaitable[Response]:
        try:
            request = loads(body)
        except ValueError:
            return 200, jsonrpc_error(None, JsonRpcCode.PARSE_ERROR, "Parse error: the body is not valid JSON")
        reply = self.mcp(request, None)
        if inspect.isawaitable(reply):
            return _wrap_200(reply)
        return 200, reply

    async def _with_env(self, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """``call(env)`` on a fresh env that is closed afterwards (the Task API's, as OpenEnv builds one per call)."""
        env = await self.registry.build_env_async()
        session = Session("tasks", env, self.registry.info, "http", self.registry.executor)
        try:
            return await call(env)
        finally:
            await self.registry.close(session)

    async def _stateless(self, what: str, body: dict[str, Any]) -> Response:
        """/reset, /step, /state on a fresh env that is closed afterwards (as OpenEnv does)."""
        try:
            env = await self.registry.build_env_async()
        except ProtocolError as exc:
            return 500, {"detail": exc.message}
        session = Session("http", env, self.registry.info, "http", self.registry.executor)
        try:
            if what == "state":
                reply = session.call("state", lambda: env.state, (), {}, _state_json)
            elif what == "reset":
                reply = session.call("reset", env.reset, (), session.check_reset(body), _observation_json)
            else:
                action, timeout_s, extra = _step_body(body)
                parsed = session.parse_action(action)
                # Like OpenEnv: extra body keys reach step() only where its signature names them.
                kwargs = {k: v for k, v in extra.items() if k in self.registry.info.step_params}
                reply = session.call("step", env.step, (parsed,), kwargs, _observation_json)
                if inspect.isawaitable(reply) and timeout_s is not None:
                    reply = _with_timeout(reply, timeout_s)
            frame = (await reply) if inspect.isawaitable(reply) else reply
        except ProtocolError as exc:
            if exc.code.value == "VALIDATION_ERROR":
                return 422, {"detail": exc.details.get("errors") or [_detail(["body"], exc.message, "value_error")]}
            return 500, {"detail": exc.message}
        finally:
            await self.registry.close(session)
        return 200, RawJson(frame)


class RawJson(str):
    """A payload that is already JSON text."""


def _observation_json(obs: Any) -> str:
    return payload_json("observation", Session.observation_data(obs))


def _state_json(state: Any) -> str:
    return payload_json("state", Session.state_data(state))


async def _wrap_200(reply: Awaitable[Any]) -> Response:
    return 200, await reply


async def _with_timeout(reply: Awaitable[str], timeout_s: float) -> str:
    import asyncio

    from ..core import ErrorCode

    try:
        return await asyncio.wait_for(reply, timeout_s)
    except TimeoutError:
        raise ProtocolError(ErrorCode.EXECUTION_ERROR, f"step did not finish within timeout_s={timeout_s}") from None


def _json_object(body: bytes) -> dict[str, Any] | Response:
    if not body.strip():
        return {}
    try:
        obj = loads(body)
    except ValueError as exc:
        return 422, {"detail": [_detail(["body"], f"JSON decode error: {exc}", "json_invalid")]}
    if not isinstance(obj, dict):
        return 422, {"detail": [_detail(["body"], "Input should be a valid dictionary", "dict_type")]}
    return obj


def _step_body(body: dict[str, Any]) -> tuple[dict[str, Any], float | None, dict[str, Any]]:
    from ..core import ErrorCode

    errors = []
    action = body.get("action")
    if not isinstance(action, dict):
        errors.append(_detail(["body", "action"], "Field required (an object of action fields)", "missing"))
    timeout_s = body.get("timeout_s")
    if timeout_s is not None and (isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0):
        errors.append(_detail(["body", "timeout_s"], "Input should be a positive number", "float_type"))
    if errors:
        raise ProtocolError(ErrorCode.VALIDATION_ERROR, "invalid /step body", errors=errors)
    extra = {k: v for k, v in body.items() if k not in ("action", "timeout_s", "request_id")}
    return action, timeout_s, extra  # type: ignore[return-value]


def _openapi(metadata: dict[str, Any], schema: dict[str, Any], version: str,
             hidden: frozenset[str] = frozenset()) -> dict[str, Any]:
    def op(summary: str, request: dict[str, Any] | None = None, response: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "summary": summary,
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": response or {}}}}},
        }
        if request is not None:
            body["requestBody"] = {"content": {"application/json": {"schema": request}}, "required": False}
            body["responses"]["422"] = {"description": "Validation Error"}
        return body

    obs = {
        "type": "object",
        "properties": {"observation": {"type": "object"}, "reward": {"type": ["number", "null"]},
                       "done": {"type": "boolean"}, "metadata": {"type": "object"}},
    }
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        # info.version is the version of the OpenEnv HTTP API served (what `openenv validate` profiles).
        "info": {"title": metadata["name"], "description": metadata["description"], "version": OPENENV_HTTP_API_VERSION,
                 "x-openenv-train-version": version},
        "paths": {
            "/health": {"get": op("Health check", response={"type": "object"})},
            "/metadata": {"get": op("Environment metadata", response={"type": "object"})},
            "/schema": {"get": op("JSON schemas of action, observation and state", response={"type": "object"})},
            "/reset": {"post": op("Reset a fresh environment (stateless)", {"type": "object"}, obs)},
            "/step": {"post": op("Step a fresh environment (stateless)", {
                "type": "object", "required": ["action"],
                "properties": {"action": schema["action"], "timeout_s": {"type": "number"},
                               "request_id": {"type": "string"}},
            }, obs)},
            "/state": {"get": op("State of a fresh environment (stateless)", response=schema["state"])},
            "/mcp": {"post": op("MCP JSON-RPC 2.0", {"type": "object"}, {"type": "object"})},
            "/ws": {"get": op("WebSocket session (upgrade); see the OpenEnv protocol")},
            "/list_environments": {"get": op("Task API: the env served here", response={"type": "array"})},
            **_task_paths(metadata["name"], op),
        },
    }
    for path in hidden:
        del document["paths"][path]
    return document


def _task_paths(name: str, op: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """The Task API's routes under this env's name (501 where it declares no splits)."""
    split = {"type": "object", "required": ["split"], "properties": {"split": {"type": "string"}}}
    index = {"type": "object", "required": ["split", "index"],
             "properties": {"split": {"type": "string"}, "index": {"type": "integer"}}}
    bounds = {"type": "object", "required": ["split"], "properties": {
        "split": {"type": "string"}, "start": {"type": ["integer", "null"]}, "stop": {"type": ["integer", "null"]}}}
    return {
        f"/{name}/splits": {"get": op("Task API: the env's splits", response={"type": "array"})},
        f"/{name}/tasks": {"post": op("Task API: a split's tasks", split, {"type": "object"})},
        f"/{name}/num_tasks": {"post": op("Task API: a split's size", split, {"type": "object"})},
        f"/{name}/task": {"post": op("Task API: one task", index, {"type": "object"})},
        f"/{name}/task_range": {"post": op("Task API: tasks [start, stop)", bounds, {"type": "object"})},
    }
