"""The OpenAI chat-completions wire format: parse a request body, build a response body. Pure functions."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .._errors import InvalidRequest
from .._types import ChatRequest, ChatResult, SamplingParams
from .constraint_fields import parse_constraint
from .messages import normalise_messages

__all__ = ["completion_json", "parse_chat_request", "v1_url"]

_TOOL_CHOICES = ("none", "auto", "required")
_MAX_STOP = 16


def _number(body: Mapping[str, Any], key: str, default: float, lo: float, hi: float, *, lo_open: bool = False) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidRequest(f"'{key}' must be a number, got {value!r}", param=key)
    if value < lo or value > hi or (lo_open and value == lo):
        low = f"> {lo:g}" if lo_open else f">= {lo:g}"
        raise InvalidRequest(f"'{key}' must be {low} and <= {hi:g}, got {value!r}", param=key)
    return float(value)


def _int(body: Mapping[str, Any], key: str, lo: int, hi: int | None = None) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest(f"'{key}' must be an integer, got {value!r}", param=key)
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"between {lo} and {hi}"
        raise InvalidRequest(f"'{key}' must be {bound}, got {value}", param=key)
    return value


def _bool(body: Mapping[str, Any], key: str) -> bool:
    value = body.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidRequest(f"'{key}' must be true or false, got {value!r}", param=key)
    return value


def _stop(body: Mapping[str, Any]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    items = [stop] if isinstance(stop, str) else stop
    if not isinstance(items, list) or not all(isinstance(s, str) and s for s in items) or len(items) > _MAX_STOP:
        raise InvalidRequest(f"'stop' must be a non-empty string or a list of at most {_MAX_STOP} of them", param="stop")
    return tuple(items)


def _tools(body: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise InvalidRequest("'tools' must be a list of {'type': 'function', 'function': {...}}", param="tools")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not function["name"]:
            raise InvalidRequest(f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ..., 'parameters': "
                                 "...}}", param=f"tools[{i}]")
    return [dict(t) for t in tools] or None


def _tool_choice(body: Mapping[str, Any]) -> str | dict[str, Any] | None:
    choice = body.get("tool_choice")
    if choice is None or choice in _TOOL_CHOICES:
        return choice  # type: ignore[no-any-return]
    if isinstance(choice, Mapping) and isinstance((choice.get("function") or {}).get("name"), str):
        return dict(choice)
    raise InvalidRequest(f"'tool_choice' must be one of {list(_TOOL_CHOICES)} or {{'type': 'function', 'function': "
                         f"{{'name': ...}}}}, got {choice!r}", param="tool_choice")


def _stream_options(body: Mapping[str, Any], stream: bool) -> bool:
    """``stream_options.include_usage``, the only stream option (OpenAI's and vLLM's rules for where it may be)."""
    options = body.get("stream_options")
    if options is None:
        return False
    if not stream:
        raise InvalidRequest("'stream_options' is only allowed with 'stream': true; drop it or set 'stream': true",
                             param="stream_options")
    if not isinstance(options, Mapping):
        raise InvalidRequest(f"'stream_options' must be an object such as {{'include_usage': true}}, got {options!r}",
                             param="stream_options")
    unknown = sorted(str(k) for k in options if k != "include_usage")
    if unknown:
        raise InvalidRequest(f"'stream_options.{unknown[0]}' is not supported; the only stream option is "
                             "'include_usage' (true or false)", param="stream_options")
    value = options.get("include_usage")
    if value is not None and not isinstance(value, bool):
        raise InvalidRequest(f"'stream_options.include_usage' must be true or false, got {value!r}",
                             param="stream_options")
    return bool(value)


def parse_chat_request(body: Any, *, max_n: int = 16) -> ChatRequest:
    """Validate a ``/v1/chat/completions`` body into a :class:`ChatRequest`.

    Unknown keys are kept in ``body`` (an upstream backend forwards them) and otherwise ignored.

    >>> parse_chat_request({"messages": [{"role": "user", "content": "hi"}], "temperature": 0}).sampling.temperature
    0.0

    Raises:
        InvalidRequest: the body is not an object, a field has the wrong type or range (``stream_options`` included),
            or a constraint (``guided_choice``, ``guided_regex``, ``structured_outputs``) is malformed.
    """
    if not isinstance(body, dict):
        raise InvalidRequest("the request body must be a JSON object with 'messages'")
    stream = _bool(body, "stream")
    include_usage = _stream_options(body, stream)
    messages = normalise_messages(body.get("messages"))
    logprobs = _bool(body, "logprobs")
    top_logprobs = _int(body, "top_logprobs", 0, 20) or 0
    if top_logprobs and not logprobs:
        raise InvalidRequest("'top_logprobs' needs 'logprobs': true", param="top_logprobs")
    max_tokens = _int(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _int(body, "max_tokens", 1)
    stop_ids = body.get("stop_token_ids") or []
    if not isinstance(stop_ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0
                                                for t in stop_ids):
        raise InvalidRequest("'stop_token_ids' must be a list of token ids", param="stop_token_ids")
    top_k = _int(body, "top_k", -1)
    seed = _int(body, "seed", -(2**63))
    sampling = SamplingParams(
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 0.0, 1.0, lo_open=True),
        top_k=max(top_k or 0, 0),
        max_tokens=max_tokens,
        stop=_stop(body),
        stop_token_ids=tuple(stop_ids),
        seed=None if seed is None else seed % 2**63,
        n=_int(body, "n", 1, max_n) or 1,
        logprobs=logprobs,
        top_logprobs=top_logprobs,
        use_beam_search=_bool(body, "use_beam_search"),
        length_penalty=_number(body, "length_penalty", 1.0, -10.0, 10.0),
    )
    if sampling.use_beam_search and stream:
        raise InvalidRequest("'use_beam_search' cannot be streamed: the best beams are known only once every beam "
                             "has ended; drop 'stream' (the answer lists the beams as choices, best first)",
                             param="stream")
    kwargs = body.get("chat_template_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise InvalidRequest("'chat_template_kwargs' must be an object", param="chat_template_kwargs")
    model = body.get("model")
    return ChatRequest(
        messages=messages,
        tools=_tools(body),
        tool_choice=_tool_choice(body),
        sampling=sampling,
        model=model if isinstance(model, str) else None,
        return_tokens_as_token_ids=_bool(body, "return_tokens_as_token_ids"),
        chat_template_kwargs=kwargs,
        body=body,
        constraint=parse_constraint(body),
        stream=stream,
        include_usage=include_usage,
    )


def completion_json(result: ChatResult, request: ChatRequest, *, request_id: str, created: int) -> dict[str, Any]:
    """The ``chat.completion`` body, with vLLM-style extras: ``prompt_token_ids`` and per choice ``token_ids``,
    plus ``token_logprobs`` (one logprob per completion token) when the backend has them."""
    choices = []
    for i, choice in enumerate(result.choices):
        entry: dict[str, Any] = {
            "index": i,
            "message": choice.message,
            "logprobs": choice.openai_logprobs if request.sampling.logprobs else None,
            "finish_reason": choice.finish_reason,
        }
        if choice.token_ids is not None:
            entry["token_ids"] = choice.token_ids
        if choice.logprobs is not None:
            entry["token_logprobs"] = choice.logprobs
        if choice.beam_score is not None:
            entry["beam_score"] = choice.beam_score
        choices.append(entry)
    body: dict[str, Any] = {
        "id": request_id,
        "object": "chat.completion",
        "created": created,
        "model": result.model,
        "choices": choices,
        "usage": result.usage,
        "system_fingerprint": None,
    }
    if result.prompt_token_ids is not None:
        body["prompt_token_ids"] = result.prompt_token_ids
    return body


def v1_url(url: str) -> str:
    """The ``/v1`` base URL of an OpenAI-compatible server, from its URL with or without ``/v1``.

    >>> v1_url("http://127.0.0.1:8000/"), v1_url("http://127.0.0.1:8000/v1")
    ('http://127.0.0.1:8000/v1', 'http://127.0.0.1:8000/v1')
    """
    base = url.rstrip("/")
    return base if base.endswith("/v1") else f"{base}/v1"
