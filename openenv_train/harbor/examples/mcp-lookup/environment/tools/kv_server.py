"""A tiny key-value MCP server over stdio (JSON-RPC 2.0, one message per line); standard library only.

Tools: ``lookup`` (the value stored under a key) and ``list_keys``. Declared in task.toml as the ``kv`` server.
"""

from __future__ import annotations

import json
import sys
from typing import Any

STORE = {
    "release-codename": "blue-heron-42",
    "build-number": "7319",
    "owner": "platform-team",
}

TOOLS = [
    {
        "name": "lookup",
        "description": "Return the value stored under a key.",
        "inputSchema": {
            "type": "object",
            "properties": {"key": {"type": "string", "description": "The key to look up."}},
            "required": ["key"],
        },
    },
    {
        "name": "list_keys",
        "description": "List the stored keys.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def _text(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if name == "list_keys":
        return _text("\n".join(sorted(STORE)))
    if name == "lookup":
        key = arguments.get("key")
        if key not in STORE:
            return _text(f"no such key: {key!r}", error=True)
        return _text(STORE[key])
    raise LookupError(f"unknown tool: {name}")


def _answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message:  # a notification (e.g. notifications/initialized) gets no answer
        return None
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        reply["result"] = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                           "capabilities": {"tools": {}}, "serverInfo": {"name": "kv", "version": "1.0"}}
    elif method == "ping":
        reply["result"] = {}
    elif method == "tools/list":
        reply["result"] = {"tools": TOOLS}
    elif method == "tools/call":
        try:
            reply["result"] = _call(str(params.get("name")), params.get("arguments") or {})
        except LookupError as exc:
            reply["error"] = {"code": -32602, "message": str(exc)}
    else:
        reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
    return reply


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            print(json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}),
                  flush=True)
            continue
        reply = _answer(message)
        if reply is not None:
            print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
