"""Conversions between Inspect's chat types and the OpenAI dicts our policy backends and traces use."""

from __future__ import annotations

import json
import uuid
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.tool import ToolCall, ToolInfo

__all__ = ["openai_messages", "openai_tools", "output_from_openai"]

_STOP = {"stop": "stop", "length": "max_tokens", "tool_calls": "tool_calls"}


def openai_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Inspect messages as OpenAI chat messages (text content; tool calls and results kept)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.text}
        if isinstance(message, ChatMessageAssistant) and message.tool_calls:
            item["tool_calls"] = [
                {"id": call.id, "type": "function",
                 "function": {"name": call.function, "arguments": json.dumps(call.arguments)}}
                for call in message.tool_calls
            ]
        if isinstance(message, ChatMessageTool):
            item["tool_call_id"] = message.tool_call_id or ""
            item["name"] = message.function or ""
        out.append(item)
    return out


def openai_tools(tools: list[ToolInfo]) -> list[dict[str, Any]]:
    """Inspect tool infos as OpenAI function tools."""
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters.model_dump(exclude_none=True)}}
            for t in tools]


def _tool_call(call: dict[str, Any]) -> ToolCall:
    function = call.get("function") or {}
    raw = function.get("arguments") or {}
    error = None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            raw, error = {}, f"arguments are not JSON: {exc}"
    return ToolCall(id=str(call.get("id") or f"call_{uuid.uuid4().hex[:8]}"), function=str(function.get("name", "")),
                    arguments=raw if isinstance(raw, dict) else {"value": raw}, parse_error=error)


def output_from_openai(model: str, message: dict[str, Any], finish_reason: str, *, input_tokens: int,
                       output_tokens: int) -> ModelOutput:
    """A ModelOutput (with usage set, so Inspect never counts tokens itself) from an OpenAI assistant message."""
    calls = [_tool_call(c) for c in message.get("tool_calls") or []]
    assistant = ChatMessageAssistant(content=message.get("content") or "", tool_calls=calls or None,
                                     model=model, source="generate")
    choice = ChatCompletionChoice(message=assistant, stop_reason=_STOP.get(finish_reason, "unknown"))  # type: ignore[arg-type]
    usage = ModelUsage(input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens)
    return ModelOutput(model=model, choices=[choice], usage=usage)
