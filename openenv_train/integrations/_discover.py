"""What a served env takes: its MCP tools (when it is an MCP env) and its action's JSON schema."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from ..client import Endpoint, MCPToolClient

__all__ = ["action_schema", "mcp_tools"]


def mcp_tools(endpoint: Endpoint, *, required: bool = False) -> list[Any]:
    """The env's MCP tools; ``[]`` when it is not an MCP env (with ``required``, that failure is raised)."""
    client = MCPToolClient(endpoint.base_url, uds=endpoint.uds).sync().connect()
    try:
        client.reset()
        return list(client.list_tools())
    except Exception:
        if required:
            raise
        return []
    finally:
        client.close()


def action_schema(endpoint: Endpoint, *, timeout_s: float = 30.0) -> dict[str, Any]:
    """The JSON schema of the env's action from ``GET /schema``, without the ``metadata`` field every action has.

    Raises:
        ValueError: the env is behind a Unix socket (no HTTP ``/schema`` to read).
    """
    if endpoint.uds is not None:
        raise ValueError("an env behind a Unix socket has no HTTP /schema to read; serve it on TCP or pass mode=")
    url = endpoint.base_url.replace("ws://", "http://").replace("wss://", "https://").rstrip("/")
    with urllib.request.urlopen(f"{url}/schema", timeout=timeout_s) as reply:
        schema: dict[str, Any] = json.loads(reply.read())
    action = dict(schema.get("action") or {})
    action["properties"] = {k: v for k, v in (action.get("properties") or {}).items() if k != "metadata"}
    return action
