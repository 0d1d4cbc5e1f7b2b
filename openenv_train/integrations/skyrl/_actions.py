"""Model text -> env action, and the instructions that tell a model the format (pure; no I/O).

Three formats, picked from what the env exposes (:func:`discover_format` reads it from a live server):

- ``text``: the action has one string field (Wordle's ``{"message": str}``); the whole reply goes in it, as
  :func:`~openenv_train.pool.message_action` does, and the env reads the ``[guess]`` out of it itself.
- ``json``: a typed action (``{"delta": int}``); the reply holds one JSON object (bare or in a ```json fence).
- ``mcp``: an MCP env; the reply calls tools as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  (parsed by :func:`~openenv_train.policy.parse_tool_calls`) or as one bare ``{"name": ..., "arguments": ...}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from ...client import Endpoint
from ...core import OpenEnvTrainError
from ...policy import parse_tool_calls
from ...pool import message_action
from .._discover import action_schema, mcp_tools

__all__ = ["ActionFormat", "ActionParseError", "discover_format"]

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


class ActionParseError(OpenEnvTrainError, ValueError):
    """The model's reply is not an action in the env's format; the message says what was wrong."""


@dataclass(frozen=True)
class ActionFormat:
    """How replies become actions for one env.

    Args:
        kind: ``"text"``, ``"json"`` or ``"mcp"``.
        text_field: with ``text``, the action field that receives the reply.
        schema: with ``json``, the action's JSON schema (its fields are named in the instructions).
        tools: with ``mcp``, the env's tool names.
    """

    kind: Literal["text", "json", "mcp"]
    text_field: str = "message"
    schema: dict[str, Any] = field(default_factory=dict)
    tools: tuple[str, ...] = ()

    def instructions(self) -> str:
        """One paragraph telling a model how to write an action.

        >>> ActionFormat("json", schema={"properties": {"delta": {"type": "integer"}}}).instructions()
        'Reply with one JSON object holding the action, e.g. {"delta": <integer>}.'
        """
        if self.kind == "text":
            return "Reply in plain text; your whole reply is the action."
        if self.kind == "json":
            props = self.schema.get("properties") or {}
            example = ", ".join(f'"{k}": <{v.get("type", "value")}>' for k, v in props.items())
            return f"Reply with one JSON object holding the action, e.g. {{{example}}}."
        names = ", ".join(self.tools) or "the env's tools"
        return ('Call a tool by replying <tool_call>{"name": <tool>, "arguments": {...}}</tool_call>; '
                f"tools: {names}.")

    def parse(self, text: str) -> list[dict[str, Any]]:
        """The actions a reply asks for (one, or one per tool call with ``mcp``).

        Raises:
            ActionParseError: the reply holds no action of this format.

        >>> ActionFormat("text").parse("I'll try [crane]")
        [{'message': "I'll try [crane]"}]
        >>> ActionFormat("json").parse('ok: {"delta": 2}')
        [{'delta': 2}]
        """
        if self.kind == "text":
            return [message_action(text) if self.text_field == "message" else {self.text_field: text}]
        if self.kind == "json":
            return [_json_object(text)]
        _, calls = parse_tool_calls(text)
        if not calls:
            obj = _json_object(text)
            if not isinstance(obj.get("name"), str):
                raise ActionParseError('the JSON object has no "name" of a tool')
            calls = [{"name": obj["name"], "arguments": obj.get("arguments") or {}}]
        actions = []
        for call in calls:
            args = call["arguments"]
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    raise ActionParseError(f"the arguments of {call['name']!r} are not JSON") from None
            if not isinstance(args, dict):
                raise ActionParseError(f"the arguments of {call['name']!r} are not a JSON object")
            if self.tools and call["name"] not in self.tools:
                raise ActionParseError(f"there is no tool {call['name']!r}; tools: {', '.join(self.tools)}")
            actions.append({"type": "call_tool", "tool_name": call["name"], "arguments": args})
        return actions


def _json_object(text: str) -> dict[str, Any]:
    fenced = _FENCE.search(text)
    candidate = fenced.group(1) if fenced else text[text.find("{"):text.rfind("}") + 1]
    if not candidate:
        raise ActionParseError("the reply holds no JSON object")
    try:
        obj = json.loads(candidate)
    except ValueError as exc:
        raise ActionParseError(f"the JSON in the reply does not parse ({exc})") from None
    return obj  # type: ignore[no-any-return]  # text between braces parses only as an object


def discover_format(endpoint: Endpoint, mode: Literal["auto", "text", "json", "mcp"] = "auto", *,
                    text_field: str | None = None, timeout_s: float = 30.0) -> ActionFormat:
    """The format of the env served at ``endpoint``: MCP when it lists tools, text when its action has a
    single string field, JSON otherwise (``mode`` forces one)."""
    if mode in ("auto", "mcp"):
        tools = mcp_tools(endpoint, required=mode == "mcp")
        if tools or mode == "mcp":
            return ActionFormat("mcp", tools=tuple(t.name for t in tools))
    schema = action_schema(endpoint, timeout_s=timeout_s)
    props = schema["properties"]
    strings = [k for k, v in props.items() if v.get("type") == "string"]
    if mode == "text" or (mode == "auto" and len(props) == 1 and strings):
        chosen = text_field or (strings[0] if strings else "message")
        return ActionFormat("text", text_field=chosen, schema=schema)
    return ActionFormat("json", schema=schema)
