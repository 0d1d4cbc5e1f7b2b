"""JSON-RPC 2.0 over ``POST /mcp``: one request, one answer (the HTTP side of a shared MCP session)."""

from __future__ import annotations

import itertools
from typing import Any

import httpx

from ..core import OpenEnvTrainError
from ..launch import Endpoint

__all__ = ["McpHttpError", "post_mcp"]

_ids = itertools.count(1)


class McpHttpError(OpenEnvTrainError):
    """``POST /mcp`` failed: no answer, an HTTP error, or a JSON-RPC error (``code``, ``data`` as sent)."""

    def __init__(self, method: str, message: str, code: int | None = None, data: Any = None) -> None:
        super().__init__(f"MCP {method} over POST /mcp failed: {message}")
        self.method, self.code, self.data = method, code, data


async def post_mcp(endpoint: Endpoint, method: str, params: dict[str, Any] | None = None, *,
                   headers: dict[str, str] | None = None, timeout_s: float = 60.0) -> Any:
    """Send ``method`` to the server's ``POST /mcp`` and return the JSON-RPC ``result``.

    Raises:
        McpHttpError: the request failed or the server answered a JSON-RPC error.
    """
    transport = httpx.AsyncHTTPTransport(uds=endpoint.uds) if endpoint.uds else None
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
    async with httpx.AsyncClient(transport=transport, timeout=timeout_s, headers=headers) as http:
        try:
            response = await http.post(endpoint.base_url.rstrip("/") + "/mcp", json=body)
        except httpx.HTTPError as exc:
            raise McpHttpError(method, f"{type(exc).__name__}: {exc}; is the server up?") from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status_code != 200 or not isinstance(answer, dict):
        raise McpHttpError(method, f"HTTP {response.status_code}: {response.text[:200]}")
    error = answer.get("error")
    if isinstance(error, dict):
        raise McpHttpError(method, str(error.get("message", "unknown error")), error.get("code"), error.get("data"))
    return answer.get("result")
