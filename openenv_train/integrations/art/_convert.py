"""Trace rows as ART's ``Trajectory`` / ``TrajectoryGroup`` (ART re-tokenises the messages itself).

:func:`to_art_trajectory_fields` is pure data: the keyword arguments of ``art.Trajectory`` with every reply a
plain message (which ART keeps but does not train on). :func:`to_art_trajectory` and :func:`to_art_groups`
build the objects; with ``trainable=True`` each reply whose turn has token ids and logprobs becomes an OpenAI
``Choice`` whose logprob tokens are ``"token_id:<id>"`` (the vLLM form ART reads back as ids), so ART trains
on exactly the tokens that were sampled. ``art`` is imported lazily (``pip install openpipe-art``; its
``[backend]`` extra cannot share our env).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from ...trace import TraceRow, TrainingTurn, conversation, segments
from ._import import import_art

__all__ = ["to_art_choice", "to_art_groups", "to_art_trajectory", "to_art_trajectory_fields"]

_FINISH = {"stop", "length", "tool_calls", "content_filter", "function_call"}


def to_art_trajectory_fields(row: TraceRow) -> dict[str, Any]:
    """``art.Trajectory(**fields)`` for one row: messages (the call graph's main line), the other lines as
    ``additional_histories`` (ART's ``History`` fields, plain messages), tools, reward (None -> 0.0), metrics,
    metadata."""
    turns = row.trace.turns
    tools = turns[0].request.get("tools") if turns else None
    metrics: dict[str, float | int | bool] = {k: float(v) for k, v in row.rewards.items() if v is not None}
    metrics.update(turns=len(turns), steps=len(row.steps), done=row.done, ok=row.ok)
    metadata: dict[str, str | int | float | bool | None] = {
        "episode_id": row.episode_id, "group_id": row.group_id, "run_id": row.run_id, "trace_id": row.trace_id,
        "env": row.env.name, "task": json.dumps(row.task, default=str), "policy_version": row.policy.version}
    graph = row.trace.call_graph()
    others = [{"messages_and_choices": conversation(row.trace, line=line.index, graph=graph), "tools": tools}
              for line in graph.branches]
    return {"messages_and_choices": conversation(row.trace, graph=graph), "additional_histories": others,
            "tools": tools,
            "reward": float(row.reward or 0.0), "metrics": metrics, "metadata": metadata}


def _exact(turn: TrainingTurn) -> bool:
    return bool(turn.completion_token_ids) and len(turn.per_token_logps) == len(turn.completion_token_ids)


def to_art_choice(turn: TrainingTurn, message: dict[str, Any]) -> Any:
    """The OpenAI ``Choice`` of a captured turn: its reply, finish reason and one logprob per sampled token."""
    from openai.types.chat import ChatCompletionMessage, ChatCompletionTokenLogprob
    from openai.types.chat.chat_completion import Choice, ChoiceLogprobs

    calls = []
    for i, call in enumerate(message.get("tool_calls") or []):
        function = dict(call.get("function") or {})
        arguments = function.get("arguments")
        function["arguments"] = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        calls.append({"id": call.get("id") or f"call_{i}", "type": "function", "function": function})
    reply = ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": message.get("content"), **({"tool_calls": calls} if calls else {})})
    choices = turn.response.get("choices") or [{}]
    finish = choices[0].get("finish_reason") or ("tool_calls" if calls else "stop")
    logprobs = [ChatCompletionTokenLogprob(token=f"token_id:{t}", logprob=lp, bytes=None, top_logprobs=[])
                for t, lp in zip(turn.completion_token_ids, turn.per_token_logps, strict=True)]
    return Choice(index=0, message=reply, finish_reason=cast(Any, finish if finish in _FINISH else "stop"),
                  logprobs=ChoiceLogprobs(content=logprobs))


def to_art_trajectory(row: TraceRow, *, trainable: bool = True) -> Any:
    """One ``art.Trajectory``: each line of the trace's call graph is a history of its own, in the order they
    started (the main line, and each branch: a side call, a subagent, a retry, the calls before or after a context
    rewrite); a branch is never mixed into the main line's history.

    A branch that forks from an earlier call starts with the calls before the fork, as plain messages: each
    sampled reply is trained on in one history only.

    Args:
        row: a trace row.
        trainable: replies of turns with token ids and logprobs become ``Choice`` objects ART trains on.

    Raises:
        ImportError: openpipe-art is not installed (with the install line).
    """
    art = import_art()
    fields = to_art_trajectory_fields(row)
    graph = row.trace.call_graph()
    histories: list[list[Any]] = []
    for line in graph.lines:
        histories.append([])
        for segment in segments(row.trace, line=line.index, graph=graph):
            if segment.reset and histories[-1]:
                histories.append([])
            histories[-1].extend(segment.new_messages)
            if segment.reply is not None:
                exact = trainable and not segment.lead and _exact(segment.turn)
                histories[-1].append(to_art_choice(segment.turn, segment.reply) if exact else segment.reply)
    fields["messages_and_choices"] = histories[0] if histories else []
    fields["additional_histories"] = [art.trajectories.History(messages_and_choices=h, tools=fields["tools"])
                                      for h in histories[1:]]
    return art.Trajectory(**fields)


def to_art_groups(rows: Sequence[TraceRow], *, trainable: bool = True) -> list[Any]:
    """``art.TrajectoryGroup`` per ``group_id`` (a row without one is its own group), in first-seen order.

    A failed row (``ok=False``) is one of its group's ``exceptions``, not a trajectory.

    Raises:
        ImportError: openpipe-art is not installed (with the install line).
    """
    art = import_art()
    groups: dict[str, tuple[list[Any], list[BaseException]]] = {}
    for row in rows:
        trajectories, errors = groups.setdefault(row.group_id or row.episode_id, ([], []))
        if row.ok:
            trajectories.append(to_art_trajectory(row, trainable=trainable))
        else:
            error = row.error
            errors.append(RuntimeError(f"episode {row.episode_id} failed: "
                                       f"{error.type if error else 'error'}: {error.message if error else ''}"))
    return [art.TrajectoryGroup(trajectories, exceptions=errors, metadata={"group_id": group})
            for group, (trajectories, errors) in groups.items()]
