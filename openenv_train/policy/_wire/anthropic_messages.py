"""The Anthropic Messages wire format (``POST /v1/messages``, what Claude Code speaks). Pure functions (no I/O).

A request becomes the equivalent chat-completions body (:func:`chat_body`), so it is rendered with the chat
template once and captured exactly as a chat call is; the chat answer becomes a Messages body
(:func:`message_json`) or its stream of named events (:class:`MessageEvents`); errors become Anthropic's error body
(:func:`error_json`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._errors import ContextLengthExceeded, InvalidRequest, PolicyError
from .._types import ChatResult, ChoiceDelta, StreamStart

__all__ = ["Event", "MessageEvents", "chat_body", "error_json", "message_json"]

#: One server-sent event: its name and its JSON payload.
Event = tuple[str, dict[str, Any]]

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "abort": "end_turn"}
_TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error"}


def _text_of(content: Any, where: str) -> str:
    """Text of a string or a list of ``text`` blocks (``cache_control`` and citations ignored)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidRequest(f"{where} must be a string or a list of text blocks", param=where)
    parts = []
    for i, block in enumerate(content):
        if not isinstance(block, Mapping) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
            raise InvalidRequest(f"{where}[{i}] is a {kind!r} block; only text blocks are supported here",
                                 param=f"{where}[{i}]")
        parts.append(block["text"])
    return "".join(parts)


def _user(content: Any, where: str, names: Mapping[str, str]) -> list[dict[str, Any]]:
    """A user turn: its ``tool_result`` blocks as tool messages, its text as a user message, in their order."""
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    if not isinstance(content, list) or not content:
        raise InvalidRequest(f"{where} must be a string or a non-empty list of content blocks", param=where)
    out: list[dict[str, Any]] = []
    text: list[str] = []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
        elif kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
            if text:
                out.append({"role": "user", "content": "".join(text)})
                text = []
            result = block.get("content")
            body = "" if result is None else _text_of(result, f"{where}[{i}].content")
            message = {"role": "tool", "tool_call_id": block["tool_use_id"], "content": body}
            if block["tool_use_id"] in names:  # templates show the tool's name beside its result
                message["name"] = names[block["tool_use_id"]]
            out.append(message)
        else:
            raise InvalidRequest(f"{where}[{i}] must be a text or tool_result block (with tool_use_id), got "
                                 f"{kind if kind else type(block).__name__!r}", param=f"{where}[{i}]")
    if text or not out:
        out.append({"role": "user", "content": "".join(text)})
    return out


def _assistant(content: Any, where: str, names: dict[str, str]) -> dict[str, Any]:
    """An assistant turn: its text and its ``tool_use`` blocks as tool calls (thinking blocks dropped)."""
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    if not isinstance(content, list):
        raise InvalidRequest(f"{where} must be a string or a list of content blocks", param=where)
    text, calls = [], []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str) \
                    or not isinstance(block.get("input", {}), Mapping):
                raise InvalidRequest(f"{where}[{i}] must be {{'type': 'tool_use', 'id': ..., 'name': ..., "
                                     "'input': {...}}", param=f"{where}[{i}]")
            names[block["id"]] = block["name"]
            calls.append({"id": block["id"], "type": "function",
                          "function": {"name": block["name"], "arguments": dict(block.get("input") or {})}})
        elif kind in ("thinking", "redacted_thinking"):
            continue  # the model's hidden reasoning is not part of the chat template's conversation
        else:
            raise InvalidRequest(f"{where}[{i}] must be a text, tool_use or thinking block, got "
                                 f"{kind if kind else type(block).__name__!r}", param=f"{where}[{i}]")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
    if calls:
        message["tool_calls"] = calls
    return message


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise InvalidRequest("'tools' must be a list of {'name': ..., 'input_schema': {...}}", param="tools")
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str) or not tool["name"] \
                or not isinstance(tool.get("input_schema"), Mapping):
            raise InvalidRequest(f"tools[{i}] must be {{'name': ..., 'description': ..., 'input_schema': {{...}}}} "
                                 "(Anthropic's server tools are not served here)", param=f"tools[{i}]")
        function: dict[str, Any] = {"name": tool["name"]}
        if isinstance(tool.get("description"), str):
            function["description"] = tool["description"]
        function["parameters"] = dict(tool["input_schema"])
        out.append({"type": "function", "function": function})
    return out or None


def _tool_choice(choice: Any) -> str | dict[str, Any] | None:
    if choice is None:
        return None
    kind = choice.get("type") if isinstance(choice, Mapping) else None
    if kind in _TOOL_CHOICES:
        return _TOOL_CHOICES[kind]
    if kind == "tool" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise InvalidRequest("'tool_choice' must be {'type': 'auto' | 'any' | 'none'} or {'type': 'tool', 'name': ...}",
                         param="tool_choice")


def chat_body(body: Any) -> dict[str, Any]:
    """The chat-completions body equivalent to a Messages request body.

    >>> chat_body({"model": "m", "max_tokens": 8, "system": "Be brief.",
    ...            "messages": [{"role": "user", "content": "hi"}]})["messages"]
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]

    Raises:
        InvalidRequest: a missing or mistyped field, an unknown role or content block.
    """
    if not isinstance(body, dict):
        raise InvalidRequest("the request body must be a JSON object with 'model', 'max_tokens' and 'messages'")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidRequest(f"'max_tokens' must be an integer >= 1, got {max_tokens!r}", param="max_tokens")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InvalidRequest("'messages' must be a non-empty list of {'role': 'user' | 'assistant', 'content': ...}",
                             param="messages")
    messages: list[dict[str, Any]] = []
    if body.get("system") is not None:
        system = _text_of(body["system"], "system")
        if system:
            messages.append({"role": "system", "content": system})
    names: dict[str, str] = {}  # tool_use id -> tool name, for the results that answer them
    for i, message in enumerate(raw):
        where = f"messages[{i}]"
        role = message.get("role") if isinstance(message, Mapping) else None
        if role == "user":
            messages += _user(message.get("content"), f"{where}.content", names)
        elif role == "assistant":
            messages.append(_assistant(message.get("content"), f"{where}.content", names))
        elif role == "system":  # Claude Code sends mid-conversation system messages (its reminders)
            messages.append({"role": "system", "content": _text_of(message.get("content"), f"{where}.content")})
        else:
            raise InvalidRequest(f"{where}.role must be 'user', 'assistant' or 'system', got {role!r}",
                                 param=f"{where}.role")
    stop = body.get("stop_sequences")
    if stop is not None and (not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop)):
        raise InvalidRequest("'stop_sequences' must be a list of non-empty strings", param="stop_sequences")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise InvalidRequest(f"'stream' must be true or false, got {stream!r}", param="stream")
    out: dict[str, Any] = {"messages": messages, "max_tokens": max_tokens}
    for key in ("model", "temperature", "top_p", "top_k"):
        if body.get(key) is not None:
            out[key] = body[key]
    tools = _tools(body.get("tools"))
    if tools:
        out["tools"] = tools
        choice = _tool_choice(body.get("tool_choice"))
        if choice is not None:
            out["tool_choice"] = choice
    if stop:
        out["stop"] = stop
    if stream:
        out["stream"] = True
    return out


def _input(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as the ``input`` object of a ``tool_use`` block."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"arguments": arguments}
    return dict(arguments) if isinstance(arguments, Mapping) else {"arguments": arguments}


def _usage(result: ChatResult) -> dict[str, int]:
    usage = result.usage
    return {"input_tokens": int(usage.get("prompt_tokens") or 0), "output_tokens": int(usage.get("completion_tokens") or 0)}


def message_json(result: ChatResult, *, message_id: str) -> dict[str, Any]:
    """The Messages body of a chat answer (its first choice: Messages has no ``n``)."""
    choice = result.choices[0]
    blocks: list[dict[str, Any]] = []
    if choice.message.get("content"):
        blocks.append({"type": "text", "text": choice.message["content"]})
    for call in choice.message.get("tool_calls") or ():
        blocks.append({"type": "tool_use", "id": call.get("id") or f"toolu_{len(blocks)}",
                       "name": call["function"]["name"], "input": _input(call["function"].get("arguments"))})
    stopped = choice.stop_sequence if choice.finish_reason == "stop" else None
    return {"id": message_id, "type": "message", "role": "assistant", "model": result.model, "content": blocks,
            "stop_reason": "stop_sequence" if stopped else _STOP_REASONS.get(choice.finish_reason, "end_turn"),
            "stop_sequence": stopped, "usage": _usage(result)}


class MessageEvents:
    """The named events of one streamed Messages answer, in the order they are sent.

    ``message_start``; per content block ``content_block_start``, its ``content_block_delta`` events
    (``text_delta`` or ``input_json_delta``) and ``content_block_stop``; then ``message_delta`` (stop reason,
    usage) and ``message_stop``. Blocks open as their first piece arrives, so an empty reply has no block.
    """

    def __init__(self, *, message_id: str) -> None:
        self.id = message_id
        self._block = -1  # index of the open content block, -1 before the first
        self._open: str | None = None  # "text" or "tool_use"
        self._calls: dict[int, int] = {}  # tool-call index -> its block index

    def start(self, start: StreamStart) -> list[Event]:
        """``message_start`` (its usage counts the prompt when the backend knows it)."""
        message: dict[str, Any] = {"id": self.id, "type": "message", "role": "assistant", "model": start.model, "content": [],
                   "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": len(start.prompt_token_ids or ()), "output_tokens": 0}}
        return [("message_start", {"type": "message_start", "message": message})]

    def _close(self) -> list[Event]:
        if self._open is None:
            return []
        self._open = None
        return [("content_block_stop", {"type": "content_block_stop", "index": self._block})]

    def _begin(self, block: dict[str, Any]) -> list[Event]:
        events = self._close()
        self._block += 1
        self._open = block["type"]
        return [*events, ("content_block_start", {"type": "content_block_start", "index": self._block,
                                                  "content_block": block})]

    def delta(self, delta: ChoiceDelta) -> list[Event]:
        """The events of one piece of the reply (pieces of other choices than the first are not sent)."""
        events: list[Event] = []
        if delta.index != 0:
            return events
        if delta.content:
            if self._open != "text":
                events += self._begin({"type": "text", "text": ""})
            events.append(("content_block_delta", {"type": "content_block_delta", "index": self._block,
                                                   "delta": {"type": "text_delta", "text": delta.content}}))
        for call in delta.tool_calls or ():
            j = int(call.get("index") or 0)
            function = call.get("function") or {}
            if j not in self._calls:
                events += self._begin({"type": "tool_use", "id": call.get("id") or f"toolu_{j}",
                                       "name": function.get("name") or "", "input": {}})
                self._calls[j] = self._block
            if function.get("arguments"):
                arguments = function["arguments"]
                text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
                events.append(("content_block_delta", {"type": "content_block_delta", "index": self._calls[j],
                                                       "delta": {"type": "input_json_delta", "partial_json": text}}))
        return events

    def finish(self, message: dict[str, Any]) -> list[Event]:
        """Close the open block, then ``message_delta`` and ``message_stop`` (``message``: the unstreamed body)."""
        return [*self._close(),
                ("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": message["stop_reason"],
                                             "stop_sequence": message["stop_sequence"]},
                                   "usage": message["usage"]}),
                ("message_stop", {"type": "message_stop"})]

    @staticmethod
    def error(exc: PolicyError) -> list[Event]:
        """The ``error`` event of a failure after the stream began."""
        return [("error", error_json(exc))]


def error_json(exc: PolicyError) -> dict[str, Any]:
    """Anthropic's error body; a prompt too long reads as Anthropic words it (clients match ``prompt is too long``).

    >>> error_json(InvalidRequest("bad"))
    {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'bad'}}
    """
    message = exc.message
    if isinstance(exc, ContextLengthExceeded):
        message = f"prompt is too long: {exc.prompt_tokens} tokens > {exc.context} maximum"
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(exc.status, "api_error"), "message": message}}
