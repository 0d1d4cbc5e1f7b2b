"""The conversation of a trace: one line of its call graph, each call's new request messages followed by the
model's reply.

A call usually re-sends the messages of the call it continues (its parent in :func:`~._call_graph.call_graph`),
then that call's reply, then what came since (tool results, user/env messages); only that tail is new. The
conversation follows one line of the graph, the main line by default: side calls (a title, a quota check),
subagents and retries are lines of their own and are not mixed into it; :func:`segments` and
:func:`conversation` take ``line=`` to read one of them (a line that forks from an earlier call starts with the
calls it forks from, so it reads as a whole conversation). When a call does not re-send its parent's messages,
the whole request counts as new and the segment is marked ``reset``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._call_graph import CallGraph, CallLine
from ._rows import TrainingTrace, TrainingTurn

__all__ = ["Segment", "conversation", "line_segments", "line_turns", "messages_of", "new_messages", "reply_of", "segments",
           "text_of"]


@dataclass(frozen=True)
class Segment:
    """One call seen as conversation: the messages new since the call before it on its line, then the reply."""

    turn: TrainingTurn
    new_messages: list[dict[str, Any]]
    reply: dict[str, Any] | None
    reset: bool
    lead: bool = False
    """The call is on another line: one of the calls the line read forks from (its context, not its own)."""


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


def new_messages(messages: Sequence[dict[str, Any]], before: Sequence[dict[str, Any]] | None
                 ) -> list[dict[str, Any]] | None:
    """The messages of a call new since the call before it (``before``: that call's messages), its echo of that
    call's reply dropped; None when there is no call before it or it does not re-send them (all are new)."""
    if before is None or list(messages[:len(before)]) != list(before):
        return None
    new = list(messages[len(before):])
    return new[1:] if new and new[0].get("role") == "assistant" else new


def line_turns(graph: CallGraph, line: CallLine) -> list[int]:
    """Trace indices of a line's calls, after those of the calls it forks from (their parents first)."""
    nodes = {node.node_id: node for node in graph.nodes}
    lead: list[int] = []
    parent = line.parent
    while parent is not None:
        lead.append(nodes[parent].index)
        parent = nodes[parent].parent
    return [*reversed(lead), *(nodes[node_id].index for node_id in line.node_ids)]


def segments(trace: TrainingTrace, *, line: int | None = None, graph: CallGraph | None = None) -> Iterator[Segment]:
    """Yield one :class:`Segment` per call of a line of ``trace.call_graph()``, in order: the main line, or the
    line of index ``line`` (after the calls it forks from, marked ``lead``). ``graph``: the trace's call graph, when
    the caller has it already (reading several lines)."""
    graph = graph or trace.call_graph()
    chosen = graph.main if line is None else graph.lines[line]
    if chosen is not None:
        yield from line_segments(trace, graph, chosen)


def line_segments(trace: TrainingTrace, graph: CallGraph, line: CallLine) -> Iterator[Segment]:
    """:func:`segments` of one line of ``graph`` (the trace's call graph, computed once by the caller)."""
    before: list[dict[str, Any]] | None = None
    for i in line_turns(graph, line):
        turn = trace.turns[i]
        messages = [dict(m) for m in turn.request.get("messages") or []]
        new = new_messages(messages, before)
        yield Segment(turn=turn, new_messages=messages if new is None else new, reply=reply_of(turn),
                      reset=before is not None and new is None, lead=graph.nodes[i].line != line.index)
        before = messages


def conversation(trace: TrainingTrace, *, line: int | None = None,
                 graph: CallGraph | None = None) -> list[dict[str, Any]]:
    """The conversation of a line of the trace's call graph (the main line by default): its first request, then
    each reply and what followed it (``graph`` as :func:`segments`)."""
    return messages_of(segments(trace, line=line, graph=graph))


def messages_of(parts: Iterable[Segment]) -> list[dict[str, Any]]:
    """The conversation of segments: each one's new messages, then its reply."""
    messages: list[dict[str, Any]] = []
    for segment in parts:
        messages.extend(segment.new_messages)
        if segment.reply is not None:
            messages.append(segment.reply)
    return messages
