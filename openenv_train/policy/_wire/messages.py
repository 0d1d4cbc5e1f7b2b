"""Chat messages: normalising what callers send, parsing Qwen-style tool calls out of completions, and telling
whether a caller's message is the reply the model gave. Pure functions over dicts and str.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import InvalidRequest

__all__ = ["TOOL_CALL_OPEN", "messages_extend", "normalise_message", "normalise_messages", "parse_tool_calls", "reply_message"]

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
#: Where a tool call starts in a completion's text.
TOOL_CALL_OPEN = "<tool_call>"
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def _text(content: Any, where: str) -> str:
    """Message content as text: a string, None (empty) or a list of ``{"type": "text"}`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if not isinstance(part, Mapping) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise InvalidRequest(
                    f"{where}[{j}] is a {kind!r} part; only text parts ({{'type': 'text', 'text': ...}}) are supported",
                    param=f"{where}[{j}]",
                )
            parts.append(part["text"])
        return "".join(parts)
    raise InvalidRequest(f"{where} must be a string, a list of text parts or null, got {type(content).__name__}",
                         param=where)


def _arguments(value: Any) -> Any:
    """Tool-call arguments for a template: a JSON object string becomes the object (templates ``tojson`` it)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def normalise_message(message: Any, index: int = 0) -> dict[str, Any]:
    """One message as a chat template expects it: text content, parsed tool-call arguments, known keys only.

    ``developer`` becomes ``system``; ``None`` content becomes ``""``.

    >>> m = normalise_message({"role": "assistant", "content": None, "refusal": None,
    ...     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]})
    >>> m["content"], m["tool_calls"][0]["function"], "refusal" in m
    ('', {'name': 'f', 'arguments': {'a': 1}}, False)

    Raises:
        InvalidRequest: a missing or unknown role, non-text content, or a malformed tool call.
    """
    where = f"messages[{index}]"
    if not isinstance(message, Mapping):
        raise InvalidRequest(f"{where} must be an object with 'role' and 'content'", param=where)
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidRequest(f"{where}.role must be one of {sorted(ROLES)}, got {role!r}", param=f"{where}.role")
    out: dict[str, Any] = {"role": "system" if role == "developer" else role,
                           "content": _text(message.get("content"), f"{where}.content")}
    for key in ("name", "tool_call_id", "reasoning_content"):
        if isinstance(message.get(key), str):
            out[key] = message[key]
    calls = message.get("tool_calls")
    if calls:
        if role != "assistant" or not isinstance(calls, list):
            raise InvalidRequest(f"{where}.tool_calls must be a list on an assistant message", param=f"{where}.tool_calls")
        out["tool_calls"] = [_tool_call(call, f"{where}.tool_calls[{j}]") for j, call in enumerate(calls)]
    return out


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise InvalidRequest(f"{where} must be {{'type': 'function', 'function': {{'name': ..., 'arguments': ...}}}}",
                             param=where)
    out: dict[str, Any] = {"type": "function",
                           "function": {"name": function["name"], "arguments": _arguments(function.get("arguments", {}))}}
    if isinstance(call.get("id"), str):
        out = {"id": call["id"], **out}
    return out


def normalise_messages(messages: Any) -> list[dict[str, Any]]:
    """Every message normalised (see :func:`normalise_message`).

    Raises:
        InvalidRequest: ``messages`` is not a non-empty list, or a message is malformed.
    """
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' must be a non-empty list of messages", param="messages")
    return [normalise_message(m, i) for i, m in enumerate(messages)]


def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Split a completion into its text and its ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` calls.

    The text is what comes before the first call, trailing whitespace removed. When any call is not valid JSON
    with a ``name``, nothing is parsed and the whole text comes back (the model did not call a tool properly).

    >>> parse_tool_calls('Let me add.\\n<tool_call>\\n{"name": "add", "arguments": {"a": 1}}\\n</tool_call>')
    ('Let me add.', [{'name': 'add', 'arguments': {'a': 1}}])
    >>> parse_tool_calls('<tool_call>\\nnot json\\n</tool_call>')
    ('<tool_call>\\nnot json\\n</tool_call>', [])
    """
    found = list(_TOOL_CALL.finditer(text))
    if not found:
        return text, []
    calls = []
    for match in found:
        try:
            obj = json.loads(match.group(1).strip())
        except ValueError:
            return text, []
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return text, []
        arguments = obj.get("arguments", obj.get("parameters", {}))
        calls.append({"name": obj["name"], "arguments": arguments})
    return text[: found[0].start()].rstrip(), calls


def reply_message(text: str, *, parse_tools: bool) -> dict[str, Any]:
    """The OpenAI assistant message for a completion's text (``tool_calls`` when it called tools)."""
    content, calls = parse_tool_calls(text) if parse_tools else (text, [])
    if not calls:
        return {"role": "assistant", "content": text}
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": c["arguments"] if isinstance(c["arguments"], str)
                    else json.dumps(c["arguments"], ensure_ascii=False),
                },
            }
            for c in calls
        ],
    }


def _comparable(message: Mapping[str, Any]) -> tuple[Any, ...]:
    calls = tuple(
        (c["function"]["name"], json.dumps(c["function"]["arguments"], sort_keys=True))
        for c in message.get("tool_calls") or ()
    )
    return (message["role"], message.get("content") or "", message.get("name"), message.get("tool_call_id"), calls)


def messages_extend(new: Sequence[Mapping[str, Any]], old: Sequence[Mapping[str, Any]],
                    reply: Mapping[str, Any]) -> bool:
    """Whether normalised ``new`` messages start with ``old`` followed by the model's ``reply`` (ids ignored)."""
    n = len(old)
    if len(new) < n + 1:
        return False
    head = [_comparable(m) for m in new[: n + 1]]
    return head == [_comparable(m) for m in old] + [_comparable(normalise_message(reply, n))]
