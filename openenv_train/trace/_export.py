"""Exports of trace rows: ATIF trajectories (see ``_atif``), an SFT dataset for TRL, and a push to the Hub."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._atif import ATIF_VERSION, export_atif, to_atif
from ._conversation import line_segments, messages_of, text_of
from ._errors import HubPushError
from ._reader import iter_traces, load_dataset
from ._rows import TraceRow

if TYPE_CHECKING:
    import datasets

__all__ = ["ATIF_VERSION", "export_atif", "push_to_hub", "sft_features", "to_atif", "to_sft_dataset"]


def sft_features(tool_arguments: Literal["object", "string"] = "object") -> datasets.Features:
    """Columns of :func:`to_sft_dataset`: ``messages`` (OpenAI-format chat), ``tools`` (JSON), ``trace_id``, ``reward``,
    ``line`` (the index of the conversation's line in the trace's call graph) and ``main_line``.

    Tool-call ``arguments`` are a ``Json()`` value (decoded to a dict) or, with ``"string"``, the JSON text.
    """
    from datasets import Features, Json, List, Value

    arguments = Json() if tool_arguments == "object" else Value("string")
    tool_call = {"id": Value("string"), "type": Value("string"),
                 "function": {"name": Value("string"), "arguments": arguments}}
    message = {"role": Value("string"), "content": Value("string"), "reasoning_content": Value("string"),
               "tool_calls": List(tool_call), "tool_call_id": Value("string"), "name": Value("string")}
    return Features({"messages": List(message), "tools": Value("string"), "trace_id": Value("string"),
                     "reward": Value("float64"), "line": Value("int64"), "main_line": Value("bool")})


def _arguments(raw: Any, tool_arguments: str) -> Any:
    if tool_arguments == "string":
        return raw if isinstance(raw, str) else json.dumps(raw)
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw  # not JSON: kept as the text the model produced


def _sft_message(message: dict[str, Any], tool_arguments: str) -> dict[str, Any]:
    """One message with the fixed keys of :func:`sft_features`."""
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        calls.append({"id": call.get("id"), "type": call.get("type") or "function",
                      "function": {"name": function.get("name"),
                                   "arguments": _arguments(function.get("arguments"), tool_arguments)}})
    content = message.get("content")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return {
        "role": message.get("role"),
        "content": None if content is None else text_of(content),
        "reasoning_content": text_of(reasoning) if reasoning else None,
        "tool_calls": calls or None,
        "tool_call_id": message.get("tool_call_id"),
        "name": message.get("name"),
    }


def _rows(rows_or_run_dir: Iterable[TraceRow] | str | os.PathLike[str]) -> Iterable[TraceRow]:
    if isinstance(rows_or_run_dir, str | os.PathLike):
        return iter_traces(rows_or_run_dir)
    return rows_or_run_dir


def to_sft_dataset(
    rows_or_run_dir: Iterable[TraceRow] | str | os.PathLike[str],
    *,
    min_reward: float | None = None,
    ok_only: bool = True,
    tool_arguments: Literal["object", "string"] = "object",
    branches: Literal["drop", "rows"] = "rows",
) -> datasets.Dataset:
    """A dataset for TRL's SFTTrainer: one conversation per kept episode in a ``messages`` column.

    The conversation follows the main line of the episode's call graph (``trace.call_graph()``): its first
    request's messages, then each reply and the messages that followed it (see ``_conversation``). The calls off
    it (side calls such as a title, subagents, retries, the calls before a context rewrite, and each call of an
    agent that prompts with the current observation alone) are branches: never mixed into it; each one more row
    (``branches="rows"``, the default: every sampled reply reaches the dataset) or dropped (``"drop"``). A branch
    that forks from a call of another line starts with that line's calls up to the fork. Tool calls keep OpenAI's
    shape (``id``, ``type``, ``function.name``, ``function.arguments``). ``tools`` holds the tool schemas of the
    line's first call that offered tools, as JSON (TRL's SFTTrainer parses it), or None.

    Args:
        rows_or_run_dir: rows, or a run directory to read them from.
        min_reward: keep only rows scored at least this (unscored rows are dropped too).
        ok_only: drop failed rollouts (``ok=False``).
        tool_arguments: ``"object"`` (default) parses each call's JSON arguments, as chat templates expect
            (Qwen's renders ``arguments | tojson``; a string would be encoded twice); ``"string"`` keeps
            OpenAI's JSON text.
        branches: ``"rows"`` (default) adds one row per branch, after the main line's (``line`` and ``main_line``
            say which is which); ``"drop"`` exports the main line alone.

    Raises:
        ValueError: ``branches`` is neither ``"drop"`` nor ``"rows"``.
    """
    import datasets

    if branches not in ("drop", "rows"):
        raise ValueError(f"branches must be 'drop' (the main line alone) or 'rows' (a row per branch too), "
                         f"got {branches!r}")
    records = []
    for row in _rows(rows_or_run_dir):
        if (ok_only and not row.ok) or (min_reward is not None and (row.reward is None or row.reward < min_reward)):
            continue
        graph = row.trace.call_graph()
        lines = [line for line in graph.lines if line.main] + (list(graph.branches) if branches == "rows" else [])
        for line in lines:
            parts = list(line_segments(row.trace, graph, line))
            messages = [_sft_message(m, tool_arguments) for m in messages_of(parts)]
            if not any(m["role"] == "assistant" for m in messages):
                continue
            tools = next((p.turn.request["tools"] for p in parts if p.turn.request.get("tools")), None)
            records.append({"messages": messages, "tools": json.dumps(tools) if tools else None,
                            "trace_id": row.trace_id, "reward": row.reward, "line": line.index,
                            "main_line": line.main})
    features = sft_features(tool_arguments)  # from_dict, not from_list: from_list([]) loses the columns
    return datasets.Dataset.from_dict({k: [r[k] for r in records] for k in features}, features=features)


def _offline() -> bool:
    from huggingface_hub import constants

    env = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return env.upper() in {"1", "ON", "YES", "TRUE"} or bool(getattr(constants, "HF_HUB_OFFLINE", False))


def push_to_hub(
    run_dir: str | os.PathLike[str],
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    cache_dir: str | None = None,
) -> str:
    """Push a run's traces (the dataset of :func:`load_dataset`) to a Hub dataset repo; returns its URL.

    The dataset is built first, so a bad run directory fails before any network use.

    Raises:
        HubPushError: ``reason="offline"`` (HF_HUB_OFFLINE set, or no connection), ``"no_token"`` (no ``token``,
            no ``HF_TOKEN``, not logged in), or ``"hub"`` (the Hub refused: bad repo id, no write access...).
    """
    from huggingface_hub import get_token

    dataset = load_dataset(run_dir, cache_dir=cache_dir)
    rows = len(dataset)
    where = f"{rows} trace rows of {Path(run_dir)} to {repo_id!r}"
    if _offline():
        raise HubPushError(f"cannot push {where}: HF_HUB_OFFLINE is set; unset it on a machine with network "
                           "access", reason="offline", rows=rows)
    token = token or get_token()
    if not token:
        raise HubPushError(f"cannot push {where}: no Hugging Face token; pass token=, set HF_TOKEN, or run "
                           "`hf auth login`", reason="no_token", rows=rows)
    try:
        commit = dataset.push_to_hub(repo_id, token=token, private=private)
    except Exception as exc:  # the Hub client raises many types; name the cause in ours
        network = isinstance(exc, ConnectionError | TimeoutError) or "connect" in type(exc).__name__.lower()
        reason = "offline" if network else "hub"
        hint = "check the network connection" if network else "check the repo id and that the token can write to it"
        raise HubPushError(f"cannot push {where}: {type(exc).__name__}: {exc}; {hint}", reason=reason,
                           rows=rows) from exc
    return str(getattr(commit, "repo_url", None) or f"https://huggingface.co/datasets/{repo_id}")
