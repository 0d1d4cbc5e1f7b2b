"""The OpenAI Responses wire format (``POST /v1/responses``, what Codex speaks). Pure functions (no I/O).

A request, with the conversation of the response it follows (``previous_response_id``, kept by the endpoint),
becomes the equivalent chat-completions body (:func:`chat_body`), so it is rendered with the chat template once and
captured exactly as a chat call is; the chat answer becomes a ``response`` object (:func:`response_json`) or its
stream of named events (:class:`ResponseEvents`). Errors keep OpenAI's error body, as the chat route's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import InvalidRequest, PolicyError
from .._types import ChatResult, ChoiceDelta, StreamStart

__all__ = ["Event", "ResponseEvents", "chat_body", "response_json"]

#: One server-sent event: its name and its JSON payload.
Event = tuple[str, dict[str, Any]]

_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
_TEXT_PARTS = ("input_text", "output_text", "text", "refusal")
_TOOL_CHOICES = ("auto", "none", "required")


def _text(content: Any, where: str) -> str:
    """A message's text: a string or a list of ``input_text`` / ``output_text`` parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidRequest(f"{where} must be a string or a list of input_text parts", param=where)
    parts = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        text = part.get("text", part.get("refusal")) if isinstance(part, Mapping) else None
        if kind not in _TEXT_PARTS or not isinstance(text, str):
            raise InvalidRequest(f"{where}[{i}] is a {kind or type(part).__name__!r} part; only text parts "
                                 "(input_text, output_text) are supported", param=f"{where}[{i}]")
        parts.append(text)
    return "".join(parts)


def _names(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Tool-call id -> tool name, over the assistant messages' calls."""
    return {call["id"]: call["function"]["name"] for m in messages for call in m.get("tool_calls") or ()
            if isinstance(call.get("id"), str)}


def _items(items: Any, names: dict[str, str]) -> list[dict[str, Any]]:
    """Input items as chat messages: a model's text and the function calls after it make one assistant message."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise InvalidRequest("'input' must be a string or a non-empty list of items", param="input")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidRequest(f"{where} must be an object (a message, function_call or function_call_output item)",
                                 param=where)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in _ROLES:
                raise InvalidRequest(f"{where}.role must be one of {sorted(_ROLES)}, got {role!r}",
                                     param=f"{where}.role")
            out.append({"role": _ROLES[role], "content": _text(item.get("content"), f"{where}.content")})
        elif kind == "function_call":
            call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments", "{}")
            if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, str):
                raise InvalidRequest(f"{where} must be {{'type': 'function_call', 'call_id': ..., 'name': ..., "
                                     "'arguments': '<JSON>'}}", param=where)
            names[call_id] = name
            if not out or out[-1]["role"] != "assistant":  # calls the model made after no text of its own
                out.append({"role": "assistant", "content": ""})
            out[-1].setdefault("tool_calls", []).append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        elif kind == "function_call_output":
            call_id, output = item.get("call_id"), item.get("output")
            if not isinstance(call_id, str):
                raise InvalidRequest(f"{where}.call_id must be the call_id of the function_call it answers",
                                     param=f"{where}.call_id")
            message = {"role": "tool", "tool_call_id": call_id, "content": _text(output, f"{where}.output")}
            if call_id in names:  # templates show the tool's name beside its result
                message["name"] = names[call_id]
            out.append(message)
        elif kind == "reasoning":
            continue  # the model's hidden reasoning is not part of the chat template's conversation
        else:
            raise InvalidRequest(f"{where}.type {kind!r} is not supported; send message, function_call, "
                                 "function_call_output or reasoning items", param=f"{where}.type")
    return out


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise InvalidRequest("'tools' must be a list of {'type': 'function', 'name': ..., 'parameters': {...}}",
                             param="tools")
    out = []
    for i, tool in enumerate(tools):
        if isinstance(tool, Mapping) and isinstance(tool.get("type"), str) and tool["type"] != "function":
            continue  # a hosted or freeform tool (web_search, custom, ...): no chat template can offer it
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise InvalidRequest(f"tools[{i}] must be {{'type': 'function', 'name': ..., 'parameters': {{...}}}} "
                                 "(only function tools are served here)", param=f"tools[{i}]")
        function = {k: tool[k] for k in ("name", "description", "parameters") if tool.get(k) is not None}
        out.append({"type": "function", "function": function})
    return out or None


def _tool_choice(choice: Any) -> str | dict[str, Any] | None:
    if choice is None or choice in _TOOL_CHOICES:
        return choice  # type: ignore[no-any-return]
    if isinstance(choice, Mapping) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise InvalidRequest(f"'tool_choice' must be one of {list(_TOOL_CHOICES)} or {{'type': 'function', 'name': ...}}",
                         param="tool_choice")


def chat_body(body: Any, history: Sequence[Mapping[str, Any]] = ()) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The chat-completions body equivalent to a Responses request, and the conversation it holds (``history``,
    the conversation of ``previous_response_id``, then the new input; ``instructions`` are not part of it: they
    do not carry over to a follow-up).

    >>> chat_body({"model": "m", "instructions": "Be brief.", "input": "hi"})[0]["messages"]
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]

    Raises:
        InvalidRequest: a missing or mistyped field, an unknown role or item type.
    """
    if not isinstance(body, dict):
        raise InvalidRequest("the request body must be a JSON object with 'input'")
    if "input" not in body:
        raise InvalidRequest("'input' is required: a string or a list of items", param="input")
    conversation = [dict(m) for m in history] + _items(body["input"], _names(history))
    messages = list(conversation)
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise InvalidRequest("'instructions' must be a string", param="instructions")
        if instructions:
            messages.insert(0, {"role": "system", "content": instructions})
    out: dict[str, Any] = {"messages": messages}
    max_tokens = body.get("max_output_tokens")
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidRequest(f"'max_output_tokens' must be an integer >= 1, got {max_tokens!r}",
                                 param="max_output_tokens")
        out["max_tokens"] = max_tokens
    for key in ("model", "temperature", "top_p", "stream"):
        if body.get(key) is not None:
            out[key] = body[key]
    tools = _tools(body.get("tools"))
    if tools:
        out["tools"] = tools
        choice = _tool_choice(body.get("tool_choice"))
        if choice is not None:
            out["tool_choice"] = choice
    return out, conversation


def _output(result: ChatResult, response_id: str) -> list[dict[str, Any]]:
    """The output items of a chat answer's first choice: its text as a ``message``, its calls as ``function_call``."""
    message = result.choices[0].message
    items: list[dict[str, Any]] = []
    if message.get("content"):
        items.append(_message_item(response_id, message["content"]))
    for j, call in enumerate(message.get("tool_calls") or ()):
        arguments = call["function"].get("arguments", "")
        items.append({"type": "function_call", "id": _call_item_id(response_id, j), "call_id": call.get("id") or "",
                      "name": call["function"]["name"], "status": "completed",
                      "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)})
    return items


def _message_item(response_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}] if status == "completed" else []
    return {"type": "message", "id": f"msg_{response_id.removeprefix('resp_')}", "status": status, "role": "assistant",
            "content": content}


def _call_item_id(response_id: str, j: int) -> str:
    return f"fc_{response_id.removeprefix('resp_')}_{j}"


def _skeleton(response_id: str, created: int, model: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """The ``response`` object without its output: what the request asked for, echoed."""
    return {"id": response_id, "object": "response", "created_at": created, "status": "in_progress", "model": model,
            "output": [], "error": None, "incomplete_details": None, "instructions": request.get("instructions"),
            "max_output_tokens": request.get("max_output_tokens"), "metadata": request.get("metadata") or {},
            "parallel_tool_calls": True, "previous_response_id": request.get("previous_response_id"),
            "temperature": request.get("temperature"), "top_p": request.get("top_p"),
            "tool_choice": request.get("tool_choice") or "auto", "tools": request.get("tools") or [],
            "text": {"format": {"type": "text"}}, "truncation": "disabled", "usage": None}


def response_json(result: ChatResult, *, response_id: str, created: int, request: Mapping[str, Any]) -> dict[str, Any]:
    """The ``response`` object of a chat answer (``request``: the Responses body, whose settings it echoes)."""
    usage = result.usage
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    cut = result.choices[0].finish_reason == "length"
    return {**_skeleton(response_id, created, result.model, request),
            "status": "incomplete" if cut else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
            "output": _output(result, response_id),
            "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": prompt + completion}}


class ResponseEvents:
    """The named events of one streamed Responses answer, in the order they are sent.

    ``response.created``, ``response.in_progress``; the message item (``response.output_item.added``,
    ``response.content_part.added``, ``response.output_text.delta`` ...) and each function call
    (``response.output_item.added``, ``response.function_call_arguments.delta``); at the end each item's ``.done``
    events, then ``response.completed`` (or ``response.incomplete``) with the whole response.
    """

    def __init__(self, *, response_id: str, created: int, request: Mapping[str, Any]) -> None:
        self.id, self.created, self.request = response_id, created, request
        self._seq = 0
        self._items: list[str] = []  # kind of each output item opened, by output index
        self._calls: dict[int, int] = {}  # tool-call index -> output index

    def _event(self, kind: str, **fields: Any) -> Event:
        event = (kind, {"type": kind, "sequence_number": self._seq, **fields})
        self._seq += 1
        return event

    def start(self, start: StreamStart) -> list[Event]:
        """``response.created`` and ``response.in_progress``."""
        skeleton = _skeleton(self.id, self.created, start.model, self.request)
        return [self._event("response.created", response=skeleton),
                self._event("response.in_progress", response=skeleton)]

    def delta(self, delta: ChoiceDelta) -> list[Event]:
        """The events of one piece of the reply (pieces of other choices than the first are not sent)."""
        events: list[Event] = []
        if delta.index != 0:
            return events
        if delta.content:
            if "message" not in self._items:
                self._items.append("message")
                events += [self._event("response.output_item.added", output_index=len(self._items) - 1,
                                       item=_message_item(self.id, "", "in_progress")),
                           self._event("response.content_part.added", item_id=_message_item(self.id, "")["id"],
                                       output_index=len(self._items) - 1, content_index=0,
                                       part={"type": "output_text", "text": "", "annotations": []})]
            events.append(self._event("response.output_text.delta", item_id=_message_item(self.id, "")["id"],
                                      output_index=self._items.index("message"), content_index=0,
                                      delta=delta.content, logprobs=[]))
        for call in delta.tool_calls or ():
            j = int(call.get("index") or 0)
            function = call.get("function") or {}
            if j not in self._calls:
                self._items.append("function_call")
                self._calls[j] = len(self._items) - 1
                events.append(self._event("response.output_item.added", output_index=self._calls[j], item={
                    "type": "function_call", "id": _call_item_id(self.id, j), "call_id": call.get("id") or "",
                    "name": function.get("name") or "", "arguments": "", "status": "in_progress"}))
            arguments = function.get("arguments")
            if arguments:
                text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
                events.append(self._event("response.function_call_arguments.delta", item_id=_call_item_id(self.id, j),
                                          output_index=self._calls[j], delta=text))
        return events

    def finish(self, response: dict[str, Any]) -> list[Event]:
        """Each item's ``.done`` events, then ``response.completed`` (``response``: the unstreamed body)."""
        events: list[Event] = []
        for index, item in enumerate(response["output"]):
            if item["type"] == "message":
                part = item["content"][0]
                events += [self._event("response.output_text.done", item_id=item["id"], output_index=index,
                                       content_index=0, text=part["text"], logprobs=[]),
                           self._event("response.content_part.done", item_id=item["id"], output_index=index,
                                       content_index=0, part=part)]
            else:
                events.append(self._event("response.function_call_arguments.done", item_id=item["id"],
                                          output_index=index, arguments=item["arguments"], name=item["name"]))
            events.append(self._event("response.output_item.done", output_index=index, item=item))
        kind = "response.completed" if response["status"] == "completed" else "response.incomplete"
        return [*events, self._event(kind, response=response)]

    def error(self, exc: PolicyError) -> list[Event]:
        """The ``error`` event of a failure after the stream began (OpenAI's clients raise it)."""
        return [self._event("error", code=exc.code, message=exc.message, param=exc.param, **exc.to_json())]
