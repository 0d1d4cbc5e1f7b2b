"""The conversation of a trace: each turn's new request messages followed by the model's reply.

Turn ``i`` usually re-sends turn ``i-1``'s messages, then its reply, then what came since (tool results,
user/env messages); only that tail is new. When a request does not extend the previous one (the agent
trimmed or summarised its context), the whole request counts as new and the segment is marked ``reset``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._rows import TrainingTrace, TrainingTurn

__all__ = ["Segment", "conversation", "reply_of", "segments", "text_of"]


@dataclass(frozen=True)
class Segment:
    """One turn seen as conversation: the messages new since the previous turn, then the reply (if any)."""

    turn: TrainingTurn
    new_messages: list[dict[str, Any]]
    reply: dict[str, Any] | None
    reset: bool


def reply_of(turn: TrainingTurn) -> dict[str, Any] | None:
    """The assistant message of the turn's first choice, or None when the call produced none."""
    choices = turn.response.get("choices") or []
    message = choices[0].get("message") if choices and isinstance(choices[0], Mapping) else None
    return dict(message) if isinstance(message, Mapping) else None


def text_of(content: Any) -> str:
    """Message content as text: strings as they are, OpenAI content parts joined by their ``text``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content if isinstance(part, Mapping))
    return str(content)


def segments(trace: TrainingTrace) -> Iterator[Segment]:
    """Yield one :class:`Segment` per turn, in order."""
    previous: list[dict[str, Any]] | None = None
    for turn in trace.turns:
        messages = [dict(m) for m in turn.request.get("messages") or []]
        reset = False
        if previous is None:
            new = messages
        elif messages[: len(previous)] == previous:
            new = messages[len(previous) :]
            if new and new[0].get("role") == "assistant":  # the echo of the previous reply
                new = new[1:]
        else:
            new, reset = messages, True
        reply = reply_of(turn)
        yield Segment(turn=turn, new_messages=new, reply=reply, reset=reset)
        previous = messages


def conversation(trace: TrainingTrace) -> list[dict[str, Any]]:
    """The whole conversation of a trace: first request, then each reply and what followed it."""
    messages: list[dict[str, Any]] = []
    for segment in segments(trace):
        messages.extend(segment.new_messages)
        if segment.reply is not None:
            messages.append(segment.reply)
    return messages
