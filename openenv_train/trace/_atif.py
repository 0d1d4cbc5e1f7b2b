"""Export of trace rows as Harbor ATIF trajectories (Agent Trajectory Interchange Format).

We follow ATIF-v1.4 (Harbor RFC 0001,
https://github.com/laude-institute/harbor/blob/main/docs/rfcs/0001-trajectory-format.md):
v1.4 is the first version with both ``prompt_token_ids`` and ``completion_token_ids`` in step metrics, and
Harbor's own models accept it. Mapping:

- ``session_id`` = trace id; ``agent`` = this project (``model_name`` = the policy model);
- request messages new since the call a turn continues (its parent in the call graph, :func:`call_graph`) become
  steps (all of them, the first marked ``context_reset``, for a call that continues none): ``system``/``developer`` → ``system``,
  ``user`` → ``user``, ``tool`` → a result in the previous agent step's ``observation`` (``source_call_id``
  = its ``tool_call_id`` when that step made the call);
- each model call becomes an ``agent`` step: ``message``, ``reasoning_content``, ``tool_calls``
  (``arguments`` parsed from OpenAI's JSON string; non-object arguments kept as ``{"_raw": text}``) and
  ``metrics`` (token counts, ``prompt_token_ids``, ``completion_token_ids``, ``logprobs``); the turn's node id,
  finish reason, ``parent_id``, ``line`` and ``main_line`` and a non-default loss mask go to the step's ``extra``;
- the call graph's lines (main line and branches: side calls, subagents, retries) go to root ``extra.call_lines``
  (``line``, ``main``, ``parent_id``, ``node_ids``): ATIF-v1.4 steps are one list, so a branch's steps stay in
  call order among the main line's, each naming its line;
- reward, reward components, identity, task and env steps go to ``final_metrics.extra`` and root ``extra``.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._call_graph import CallGraph
from ._conversation import new_messages, reply_of, text_of
from ._reader import iter_traces
from ._rows import TraceRow, TrainingTurn

__all__ = ["ATIF_VERSION", "export_atif", "to_atif"]

#: The ATIF version written by :func:`to_atif`.
ATIF_VERSION = "ATIF-v1.4"


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        return {"_raw": raw}
    return parsed if isinstance(parsed, dict) else {"_raw": raw}


def _tool_calls(message: dict[str, Any], step_id: int) -> list[dict[str, Any]]:
    calls = []
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        calls.append(
            {
                "tool_call_id": str(call.get("id") or f"call_{step_id}_{i}"),
                "function_name": str(function.get("name") or ""),
                "arguments": _arguments(function.get("arguments")),
            }
        )
    return calls


def _timestamp(turn: TrainingTurn) -> str | None:
    started = (turn.metadata.get("timings") or {}).get("started_at")
    if not isinstance(started, int | float):
        return None
    return datetime.fromtimestamp(started, UTC).isoformat().replace("+00:00", "Z")


def _metrics(turn: TrainingTurn) -> dict[str, Any]:
    usage = turn.response.get("usage") or turn.metadata.get("usage") or {}
    n_prompt, n_completion = len(turn.prompt_token_ids), len(turn.completion_token_ids)
    metrics: dict[str, Any] = {
        "prompt_tokens": n_prompt or usage.get("prompt_tokens"),
        "completion_tokens": n_completion or usage.get("completion_tokens"),
    }
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is not None:
        metrics["cached_tokens"] = cached
    if n_prompt:
        metrics["prompt_token_ids"] = list(turn.prompt_token_ids)
    if n_completion:
        metrics["completion_token_ids"] = list(turn.completion_token_ids)
    if turn.per_token_logps:
        metrics["logprobs"] = list(turn.per_token_logps)
    completion_mask = turn.loss_mask[n_prompt:]
    if completion_mask and not all(completion_mask):
        metrics["extra"] = {"completion_loss_mask": completion_mask}
    return {k: v for k, v in metrics.items() if v is not None}


def _agent_step(step_id: int, message: dict[str, Any], model: str | None) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": step_id, "source": "agent"}
    if model:
        step["model_name"] = model
    step["message"] = text_of(message.get("content"))
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        step["reasoning_content"] = text_of(reasoning)
    calls = _tool_calls(message, step_id)
    if calls:
        step["tool_calls"] = calls
    return step


def _steps(row: TraceRow, graph: CallGraph) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    turns = {turn.node_id: turn for turn in row.trace.turns}
    agent_steps: dict[str, dict[str, Any]] = {}  # node id -> its agent step: tool results go to the parent's
    for node, turn in zip(graph.nodes, row.trace.turns, strict=True):
        messages = [dict(m) for m in turn.request.get("messages") or []]
        parent = [dict(m) for m in turns[node.parent].request.get("messages") or []] if node.parent else None
        new = new_messages(messages, parent)
        reset = new is None and node.index > 0
        last_agent = agent_steps.get(node.parent) if node.parent else None
        for i, msg in enumerate(messages if new is None else new):
            role = msg.get("role")
            if role == "tool":
                result: dict[str, Any] = {"content": text_of(msg.get("content"))}
                if last_agent is None:
                    last_agent = {"step_id": len(steps) + 1, "source": "system", "message": ""}
                    steps.append(last_agent)
                call_ids = {c["tool_call_id"] for c in last_agent.get("tool_calls", [])}
                if msg.get("tool_call_id") in call_ids:
                    result["source_call_id"] = msg["tool_call_id"]
                last_agent.setdefault("observation", {"results": []})["results"].append(result)
                continue
            if role == "assistant":  # a reply this trace did not capture (few-shot, prefill, another model)
                step = _agent_step(len(steps) + 1, msg, None)
                step["extra"] = {"captured": False}
                last_agent = step
            else:
                source = "system" if role in ("system", "developer") else "user"
                step = {"step_id": len(steps) + 1, "source": source, "message": text_of(msg.get("content"))}
            if reset and i == 0:
                step.setdefault("extra", {})["context_reset"] = True
            steps.append(step)
        model = turn.metadata.get("model") or turn.response.get("model") or row.policy.model
        step = _agent_step(len(steps) + 1, reply_of(turn) or {}, model)
        timestamp = _timestamp(turn)
        if timestamp:
            step = {"step_id": step["step_id"], "timestamp": timestamp, **step}
        step["metrics"] = _metrics(turn)
        step["extra"] = {"node_id": turn.node_id, "turn": turn.metadata.get("turn"),
                         "finish_reason": turn.metadata.get("finish_reason"), "parent_id": node.parent,
                         "line": node.line, "main_line": graph.lines[node.line].main}
        steps.append(step)
        agent_steps[turn.node_id] = step
    if not steps:
        steps.append({"step_id": 1, "source": "system", "message": "the episode made no model call",
                      "extra": {"error": row.error.model_dump() if row.error else None}})
    return steps


def to_atif(row: TraceRow) -> dict[str, Any]:
    """One trace row as an ATIF trajectory (a JSON-ready dict); see the module docstring for the mapping."""
    from .. import __version__

    graph = row.trace.call_graph()
    steps = _steps(row, graph)
    agent_metrics = [s["metrics"] for s in steps if "metrics" in s]
    agent: dict[str, Any] = {"name": "openenv-train", "version": __version__}
    if row.policy.model:
        agent["model_name"] = row.policy.model
    agent["extra"] = {"policy_version": row.policy.version}
    final = {
        "total_prompt_tokens": sum(m.get("prompt_tokens") or 0 for m in agent_metrics),
        "total_completion_tokens": sum(m.get("completion_tokens") or 0 for m in agent_metrics),
        "total_steps": len(steps),
        "extra": {"reward": row.reward, "rewards": row.rewards},
    }
    extra = row.model_dump(mode="json", include={
        "run_id", "episode_id", "group_id", "env", "task", "done", "truncated", "ok", "error", "rollout_type",
        "timings", "steps", "schema_version"})
    extra["env_steps"] = extra.pop("steps")
    extra["row_schema_version"] = extra.pop("schema_version")
    extra["call_lines"] = [{"line": line.index, "main": line.main, "parent_id": line.parent,
                            "node_ids": list(line.node_ids)} for line in graph.lines]
    return {
        "schema_version": ATIF_VERSION,
        "session_id": row.trace_id,
        "agent": agent,
        "steps": steps,
        "notes": "Exported by openenv_train from a TraceRow; reward, identity and env steps are under extra.",
        "final_metrics": final,
        "extra": extra,
    }


def export_atif(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write every row of a run as ``<out_dir>/<trace_id>.json`` (ATIF); returns the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for row in iter_traces(run_dir):
        path = out / f"{row.trace_id}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(to_atif(row), ensure_ascii=False, indent=2))
        os.replace(tmp, path)
        paths.append(path)
    return paths
