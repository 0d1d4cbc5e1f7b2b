"""A scripted OpenAI-compatible chat server for the model-agent tests (a real HTTP server in a thread).

The ``model`` field picks the script:

- ``solver`` (and any unknown name): a bash tool call that solves hello-world, then, once a tool result is in
  the conversation, a final answer without tool calls;
- ``looper``: a tool call on every turn (never finishes);
- ``confused``: first a call to an unknown tool and a bash call with broken arguments, then a final answer;
- ``broken``: HTTP 500;
- ``mcp-solver`` (the mcp-lookup example): a call of the MCP tool ``mcp__kv__lookup``, then a bash call that
  writes the tool's answer (as the model read it) to codename.txt, then a final answer;
- ``mcp-confused``: a call of an MCP tool the server does not have and a lookup of a missing key, then a
  final answer.
"""

from __future__ import annotations

import json
import shlex
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SOLVE = "echo 'Hello, world!' > hello.txt && cat hello.txt"


def _call(index: int, name: str, arguments: str) -> dict[str, Any]:
    return {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": arguments}}


def _mcp_message(model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    results = [m["content"] for m in messages if m.get("role") == "tool"]
    if model == "mcp-confused":
        if results:
            return {"role": "assistant", "content": "Gave up."}
        return {"role": "assistant", "content": "", "tool_calls": [
            _call(0, "mcp__kv__nope", "{}"), _call(1, "mcp__kv__lookup", json.dumps({"key": "missing"}))]}
    if not results:
        return {"role": "assistant", "content": "", "tool_calls": [
            _call(0, "mcp__kv__lookup", json.dumps({"key": "release-codename"}))]}
    if len(results) == 1:
        command = f"printf '%s\\n' {shlex.quote(results[0])} > codename.txt"
        return {"role": "assistant", "content": "", "tool_calls": [_call(1, "bash", json.dumps({"command": command}))]}
    return {"role": "assistant", "content": "Done: codename.txt is written."}


def _reply(model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    done = any(m.get("role") == "tool" for m in messages)
    turn = sum(m.get("role") == "assistant" for m in messages)
    if model.startswith("mcp-"):
        message = _mcp_message(model, messages)
    elif model == "looper":
        message = {"role": "assistant", "content": "", "tool_calls": [_call(turn, "bash", json.dumps({"command": "echo again"}))]}
    elif model == "confused" and not done:
        message = {"role": "assistant", "content": "", "tool_calls": [_call(0, "python", "{}"), _call(1, "bash", "{not json")]}
    elif done:
        message = {"role": "assistant", "content": "Done: hello.txt is written."}
    else:
        message = {"role": "assistant", "content": "", "tool_calls": [_call(0, "bash", json.dumps({"command": SOLVE}))]}
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 0, "model": model or "stub-default",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class StubServer:
    """Records every request (headers and JSON body) it answers."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "stub-default", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                stub.requests.append({"headers": dict(self.headers), "body": body, "path": self.path})
                model = body.get("model") or "solver"
                if model == "broken":
                    self._send(500, {"error": {"message": "the stub is broken on purpose"}})
                else:
                    self._send(200, _reply(model, body.get("messages", [])))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[StubServer]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join(5)
