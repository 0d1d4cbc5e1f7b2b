"""MCP actions, observations and JSON-RPC 2.0 framing for tool-exposing environments (no I/O)."""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import BaseModel, Field

from ._errors import OpenEnvTrainError
from ._types import Action, Observation

__all__ = [
    "RESERVED_TOOL_NAMES",
    "CallToolAction",
    "CallToolObservation",
    "JsonRpcCode",
    "JsonRpcError",
    "ListToolsAction",
    "ListToolsObservation",
    "Tool",
    "ToolError",
    "ToolErrorType",
    "jsonrpc_error",
    "jsonrpc_result",
    "parse_jsonrpc_request",
]

RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})


class ListToolsAction(Action):
    """Ask the env for its tools."""

    type: Literal["list_tools"] = "list_tools"


class CallToolAction(Action):
    """Call one tool with keyword arguments."""

    type: Literal["call_tool"] = "call_tool"
    tool_name: str = Field(description="Name of the tool to call.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of the tool.")


class Tool(BaseModel):
    """A tool as listed to agents: name, description and JSON schema of its arguments."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)


class ToolErrorType(enum.StrEnum):
    """Why a tool call failed."""

    EXECUTION_ERROR = "execution_error"
    INVALID_ARGS = "invalid_args"
    TRANSPORT_ERROR = "transport_error"
    TOOL_NOT_FOUND = "tool_not_found"
    TIMEOUT = "timeout"


class ToolError(BaseModel):
    """The error of a failed tool call."""

    error_type: ToolErrorType
    message: str


class ListToolsObservation(Observation):
    """Reply to ``list_tools``."""

    tools: list[Tool] = Field(default_factory=list)


class CallToolObservation(Observation):
    """Reply to ``call_tool``: the MCP result (value under ``data``) or an error."""

    tool_name: str
    result: Any = None
    error: ToolError | None = None


class JsonRpcCode(enum.IntEnum):
    """JSON-RPC 2.0 error codes used by ``/mcp``."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_ERROR = -32000


class JsonRpcError(OpenEnvTrainError):
    """A JSON-RPC failure that becomes an ``error`` response."""

    def __init__(self, code: JsonRpcCode, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def jsonrpc_result(request_id: Any, result: Any) -> dict[str, Any]:
    """A successful JSON-RPC response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def jsonrpc_error(request_id: Any, code: JsonRpcCode, message: str, data: Any = None) -> dict[str, Any]:
    """A failed JSON-RPC response."""
    error: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def parse_jsonrpc_request(obj: Any) -> tuple[str, dict[str, Any], Any]:
    """Check a JSON-RPC 2.0 request and return ``(method, params, id)``.

    Raises:
        JsonRpcError: INVALID_REQUEST for a malformed envelope, INVALID_PARAMS for non-object params.
    """
    if not isinstance(obj, dict):
        raise JsonRpcError(JsonRpcCode.INVALID_REQUEST, "Invalid request: expected a JSON-RPC 2.0 object")
    request_id = obj.get("id")
    if obj.get("jsonrpc") != "2.0":
        raise JsonRpcError(JsonRpcCode.INVALID_REQUEST, "Invalid request: 'jsonrpc' must be \"2.0\"")
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        raise JsonRpcError(JsonRpcCode.INVALID_REQUEST, "Invalid request: 'method' must be a non-empty string")
    params = obj.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise JsonRpcError(JsonRpcCode.INVALID_PARAMS, "Params must be an object")
    return method, params, request_id
