"""Streaming over any backend: the events of a backend that streams, or of one whole answer cut into one piece
per choice; and :class:`DeltaFold`, which adds a stream's deltas back up (what a client was sent, or what an
upstream sent us)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from ._types import (
    ChatChoice,
    ChatRequest,
    ChatResult,
    ChoiceDelta,
    PolicyBackend,
    StreamEvent,
    StreamingBackend,
    StreamStart,
)

__all__ = ["CUT", "DeltaFold", "stream_chat", "tool_call_deltas", "whole_delta"]

#: ``info["cut"]`` (turn metadata ``cut``) of a streamed reply whose client left before it ended.
CUT = "the client closed the stream before the reply ended"


async def stream_chat(backend: PolicyBackend, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
    """``backend.stream(request)`` when the backend streams, else its whole answer as one piece per choice.

    Raises:
        PolicyError: as the backend's ``chat``.
    """
    if isinstance(backend, StreamingBackend):
        async with contextlib.aclosing(backend.stream(request)) as events:  # type: ignore[type-var]
            async for event in events:
                yield event
        return
    result = await backend.chat(request)
    yield StreamStart(result.model, result.prompt_token_ids, result.exact)
    for i, choice in enumerate(result.choices):
        yield whole_delta(i, choice)
    yield result


def tool_call_deltas(calls: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """A message's tool calls as OpenAI's stream sends them: each whole, with its ``index``."""
    if not calls:
        return None
    return [{"index": j, "id": call.get("id"), "type": call.get("type", "function"),
             "function": {"name": call["function"]["name"], "arguments": call["function"].get("arguments", "")}}
            for j, call in enumerate(calls)]


def whole_delta(index: int, choice: ChatChoice, *, tokens_from: int = 0, text_from: int = 0) -> ChoiceDelta:
    """The rest of a choice as one delta: its text after ``text_from`` characters, its tool calls, and its tokens
    (with their OpenAI logprobs entries) after ``tokens_from``."""
    content = choice.message.get("content") or ""
    entries = (choice.openai_logprobs or {}).get("content") if choice.openai_logprobs else None
    return ChoiceDelta(index, content[text_from:], tool_call_deltas(choice.message.get("tool_calls")),
                       list((choice.token_ids or [])[tokens_from:]), list((choice.logprobs or [])[tokens_from:]),
                       list(entries[tokens_from:]) if entries is not None else None)


@dataclass
class _Choice:
    content: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    entries: list[dict[str, Any]] | None = None


class DeltaFold:
    """The deltas of a stream added up per choice (content joined, tool calls merged by ``index``)."""

    def __init__(self) -> None:
        self._choices: dict[int, _Choice] = {}

    def add(self, delta: ChoiceDelta) -> None:
        """Fold one delta in."""
        choice = self._choices.setdefault(delta.index, _Choice())
        if delta.content:
            choice.content.append(delta.content)
        for call in delta.tool_calls or ():
            slot = choice.calls.setdefault(int(call.get("index") or 0),
                                           {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
            if call.get("id"):
                slot["id"] = call["id"]
            function = call.get("function") or {}
            slot["function"]["name"] += function.get("name") or ""
            slot["function"]["arguments"] += function.get("arguments") or ""
        choice.token_ids += delta.token_ids
        choice.logprobs += delta.logprobs
        if delta.openai_logprobs is not None:
            choice.entries = (choice.entries or []) + delta.openai_logprobs

    def message(self, index: int) -> dict[str, Any]:
        """The assistant message of choice ``index`` so far."""
        choice = self._choices.get(index, _Choice())
        text = "".join(choice.content)
        if not choice.calls:
            return {"role": "assistant", "content": text}
        return {"role": "assistant", "content": text or None, "tool_calls": [
            {k: v for k, v in choice.calls[j].items() if v is not None} for j in sorted(choice.calls)]}

    def tokens(self, index: int) -> tuple[list[int], list[float], list[dict[str, Any]] | None]:
        """Token ids, logprobs and OpenAI logprobs entries of choice ``index`` so far."""
        choice = self._choices.get(index, _Choice())
        return choice.token_ids, choice.logprobs, choice.entries

    def cut(self, start: StreamStart | None, n: int, model: str) -> ChatResult:
        """The answer as far as it went, for a stream cut short: ``finish_reason="abort"``, ``info["cut"]``.

        Its token ids are kept (an exact turn) when the backend said they are exact.
        """
        exact = bool(start is not None and start.exact and start.prompt_token_ids is not None)
        choices = []
        for i in range(n):
            ids, logprobs, entries = self.tokens(i)
            choice = ChatChoice(self.message(i), "abort", list(ids) if exact else None,
                                list(logprobs) if exact else None)
            if entries is not None:
                choice.openai_logprobs = {"content": list(entries)}
            choices.append(choice)
        return ChatResult(start.model if start is not None else model, choices,
                          start.prompt_token_ids if exact and start is not None else None, exact=exact,
                          info={"cut": CUT})
