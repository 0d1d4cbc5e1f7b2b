"""Google's generateContent wire format (``POST /v1beta/models/{model}:generateContent``, what Gemini CLI speaks).
Pure functions (no I/O).

A request becomes the equivalent chat-completions body (:func:`chat_body`), so it is rendered with the chat template
once and captured exactly as a chat call is; the chat answer becomes a ``GenerateContentResponse``
(:func:`response_json`) or the chunks of its stream (:class:`ResponseChunks`, sent as server-sent events,
``alt=sse``); errors become Google's error body (:func:`error_json`). Fields are read in Google's camelCase (the
REST API) or snake_case.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from .._errors import ContextLengthExceeded, InvalidRequest, PolicyError
from .._types import ChatResult, ChoiceDelta, StreamStart

__all__ = ["ResponseChunks", "chat_body", "error_json", "response_json"]

_ROLES = {"user": "user", "model": "assistant"}
_MODES = {"AUTO": "auto", "ANY": "required", "NONE": "none", "VALIDATED": "auto"}
_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS", "abort": "OTHER"}
_STATUS = {400: "INVALID_ARGUMENT", 405: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    """``obj[camel]``, or its snake_case spelling."""
    if camel in obj:
        return obj[camel]
    return obj.get(_snake(camel))


@functools.cache
def _snake(camel: str) -> str:
    """``functionCall`` -> ``function_call`` (of the few field names this module reads: cached)."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)


def _result_text(response: Any) -> str:
    """A function's result as the tool message's text: a lone string output as it is, anything else as JSON."""
    if isinstance(response, dict) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return json.dumps(response, ensure_ascii=False)


def _content(content: Any, where: str) -> list[dict[str, Any]]:
    """One ``Content`` as chat messages: a user's text and function responses, or a model's text and calls."""
    role = content.get("role", "user") if isinstance(content, dict) else None
    if not isinstance(role, str) or role not in _ROLES:
        raise InvalidRequest(f"{where}.role must be 'user' or 'model', got {role!r}", param=f"{where}.role")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise InvalidRequest(f"{where}.parts must be a non-empty list of parts", param=f"{where}.parts")
    out: list[dict[str, Any]] = []
    text: list[str] = []
    calls: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        here = f"{where}.parts[{i}]"
        if not isinstance(part, dict):
            raise InvalidRequest(f"{here} must be an object", param=here)
        call, reply = _get(part, "functionCall"), _get(part, "functionResponse")
        if _get(part, "thought"):
            continue  # the model's hidden reasoning is not part of the chat template's conversation
        if isinstance(part.get("text"), str):
            text.append(part["text"])
        elif call is not None and role == "model":
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
                    or not isinstance(call.get("args", {}), dict):
                raise InvalidRequest(f"{here}.functionCall must be {{'name': ..., 'args': {{...}}}}", param=here)
            entry: dict[str, Any] = {"type": "function",
                                     "function": {"name": call["name"], "arguments": dict(call.get("args") or {})}}
            if isinstance(call.get("id"), str):
                entry = {"id": call["id"], **entry}
            calls.append(entry)
        elif reply is not None and role == "user":
            if not isinstance(reply, dict) or not isinstance(reply.get("name"), str):
                raise InvalidRequest(f"{here}.functionResponse must be {{'name': ..., 'response': {{...}}}}",
                                     param=here)
            message = {"role": "tool", "name": reply["name"], "content": _result_text(reply.get("response"))}
            if isinstance(reply.get("id"), str):
                message["tool_call_id"] = reply["id"]
            out.append(message)
        else:
            raise InvalidRequest(f"{here} must be a text part, a functionCall (from the model) or a functionResponse "
                                 "(from the user); other parts (inline data, files) are not supported", param=here)
    if role == "model":
        message = {"role": "assistant", "content": "".join(text)}
        if calls:
            message["tool_calls"] = calls
        return [message]
    if text or not out:
        out.append({"role": "user", "content": "".join(text)})
    return out


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise InvalidRequest("'tools' must be a list of {'functionDeclarations': [...]}", param="tools")
    out = []
    for i, tool in enumerate(tools):
        declarations = _get(tool, "functionDeclarations") if isinstance(tool, dict) else None
        if not isinstance(declarations, list):
            raise InvalidRequest(f"tools[{i}] must be {{'functionDeclarations': [...]}} (Google's built-in tools "
                                 "are not served here)", param=f"tools[{i}]")
        for j, declaration in enumerate(declarations):
            if not isinstance(declaration, dict) or not isinstance(declaration.get("name"), str):
                raise InvalidRequest(f"tools[{i}].functionDeclarations[{j}] must have a 'name'",
                                     param=f"tools[{i}].functionDeclarations[{j}]")
            function: dict[str, Any] = {"name": declaration["name"]}
            if isinstance(declaration.get("description"), str):
                function["description"] = declaration["description"]
            schema = _get(declaration, "parametersJsonSchema") or declaration.get("parameters")
            if schema is not None:
                function["parameters"] = _lower_types(schema)
            out.append({"type": "function", "function": function})
    return out or None


def _lower_types(schema: Any) -> Any:
    """An OpenAPI schema as JSON Schema: Google writes types in capitals (``OBJECT``, ``INTEGER``)."""
    if isinstance(schema, dict):
        return {k: v.lower() if k == "type" and isinstance(v, str) else _lower_types(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def _tool_choice(config: Any) -> str | dict[str, Any] | None:
    calling = _get(config, "functionCallingConfig") if isinstance(config, dict) else None
    if calling is None:
        return None
    mode = calling.get("mode", "AUTO") if isinstance(calling, dict) else None
    if not isinstance(mode, str) or mode not in _MODES:
        raise InvalidRequest(f"'toolConfig.functionCallingConfig.mode' must be one of {sorted(_MODES)}, got {mode!r}",
                             param="toolConfig")
    allowed = _get(calling, "allowedFunctionNames")
    if mode == "ANY" and isinstance(allowed, list) and len(allowed) == 1 and isinstance(allowed[0], str):
        return {"type": "function", "function": {"name": allowed[0]}}
    return _MODES[mode]


def chat_body(body: Any, *, model: str, stream: bool = False) -> dict[str, Any]:
    """The chat-completions body equivalent to a generateContent body (``model``: the one the URL names).

    >>> chat_body({"systemInstruction": {"parts": [{"text": "Be brief."}]},
    ...            "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, model="m")["messages"]
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]

    Raises:
        InvalidRequest: a missing or mistyped field, an unknown role or part.
    """
    if not isinstance(body, dict):
        raise InvalidRequest("the request body must be a JSON object with 'contents'")
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise InvalidRequest("'contents' must be a non-empty list of {'role': 'user' | 'model', 'parts': [...]}",
                             param="contents")
    messages: list[dict[str, Any]] = []
    system = _get(body, "systemInstruction")
    if system is not None:
        parts = system.get("parts") if isinstance(system, dict) else None
        if not isinstance(parts, list) or not all(isinstance(p, dict) and isinstance(p.get("text"), str)
                                                  for p in parts):
            raise InvalidRequest("'systemInstruction' must be {'parts': [{'text': ...}]}", param="systemInstruction")
        if "".join(p["text"] for p in parts):
            messages.append({"role": "system", "content": "".join(p["text"] for p in parts)})
    for i, content in enumerate(contents):
        messages += _content(content, f"contents[{i}]")
    config = _get(body, "generationConfig") or {}
    if not isinstance(config, dict):
        raise InvalidRequest("'generationConfig' must be an object", param="generationConfig")
    out: dict[str, Any] = {"model": model, "messages": messages}
    for ours, theirs in (("temperature", "temperature"), ("top_p", "topP"), ("top_k", "topK"),
                         ("max_tokens", "maxOutputTokens"), ("seed", "seed"), ("stop", "stopSequences")):
        value = _get(config, theirs)
        if value is not None:
            out[ours] = value
    count = _get(config, "candidateCount")
    if count not in (None, 1):
        raise InvalidRequest("'generationConfig.candidateCount' must be 1 here", param="generationConfig")
    tools = _tools(body.get("tools"))
    if tools:
        out["tools"] = tools
        choice = _tool_choice(_get(body, "toolConfig"))
        if choice is not None:
            out["tool_choice"] = choice
    if stream:
        out["stream"] = True
    return out


def _parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.get("content"):
        parts.append({"text": message["content"]})
    for call in message.get("tool_calls") or ():
        arguments = call["function"].get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                arguments = {"arguments": arguments}
        parts.append({"functionCall": {"name": call["function"]["name"], "args": arguments,
                                       **({"id": call["id"]} if call.get("id") else {})}})
    return parts


def _usage(result: ChatResult) -> dict[str, int]:
    usage = result.usage
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return {"promptTokenCount": prompt, "candidatesTokenCount": completion, "totalTokenCount": prompt + completion}


def response_json(result: ChatResult, *, response_id: str) -> dict[str, Any]:
    """The ``GenerateContentResponse`` of a chat answer (its first choice)."""
    choice = result.choices[0]
    return {"candidates": [{"content": {"role": "model", "parts": _parts(choice.message)},
                            "finishReason": _FINISH.get(choice.finish_reason, "STOP"), "index": 0}],
            "usageMetadata": _usage(result), "modelVersion": result.model, "responseId": response_id}


class ResponseChunks:
    """The chunks of one streamed answer: one per piece of text, then one with the function calls (whole: Google
    sends a call's ``args`` as one object), the ``finishReason`` and ``usageMetadata``."""

    def __init__(self, *, response_id: str, model: str) -> None:
        self.id, self.model = response_id, model

    def start(self, start: StreamStart) -> list[dict[str, Any]]:
        """Nothing: Google's stream begins with the first piece."""
        return []

    def delta(self, delta: ChoiceDelta) -> list[dict[str, Any]]:
        """A chunk with a piece of the first choice's text (calls wait for :meth:`finish`)."""
        if delta.index != 0 or not delta.content:
            return []
        return [{"candidates": [{"content": {"role": "model", "parts": [{"text": delta.content}]}, "index": 0}],
                 "modelVersion": self.model, "responseId": self.id}]

    def finish(self, response: dict[str, Any]) -> list[dict[str, Any]]:
        """The last chunk (``response``: the unstreamed body): calls, finish reason, usage."""
        (candidate,) = response["candidates"]
        calls = [part for part in candidate["content"]["parts"] if "functionCall" in part]
        return [{**response, "candidates": [{**candidate, "content": {"role": "model", "parts": calls}}]}]

    @staticmethod
    def error(exc: PolicyError) -> list[dict[str, Any]]:
        """The chunk of a failure after the stream began."""
        return [error_json(exc)]


def error_json(exc: PolicyError, status: int | None = None) -> dict[str, Any]:
    """Google's error body (``status``: the HTTP status, when it is not the error's own); a prompt too long reads
    as Google words it.

    >>> error_json(InvalidRequest("bad"))
    {'error': {'code': 400, 'message': 'bad', 'status': 'INVALID_ARGUMENT'}}
    """
    code = status or exc.status
    message = exc.message
    if isinstance(exc, ContextLengthExceeded):
        message = (f"The input token count ({exc.prompt_tokens}) exceeds the maximum number of tokens allowed "
                   f"({exc.context}). {exc.message}")
    return {"error": {"code": code, "message": message, "status": _STATUS.get(code, "INTERNAL")}}
