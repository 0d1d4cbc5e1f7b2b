"""Exports: ATIF trajectories, the SFT dataset for TRL, and push_to_hub up to the network boundary."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from openenv_train.trace import (
    ATIF_VERSION,
    EnvInfo,
    ErrorInfo,
    HubPushError,
    TraceRow,
    TraceWriter,
    TrainingTrace,
    build_turn,
    conversation,
    export_atif,
    push_to_hub,
    segments,
    to_atif,
    to_sft_dataset,
)
from tests.trace._rows import make_row

SYSTEM = {"role": "system", "content": "You play wordle."}
USER = {"role": "user", "content": [{"type": "text", "text": "Guess the word."}]}
CALL = {"role": "assistant", "content": None, "reasoning_content": "start with crane",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "guess", "arguments": '{"word": "crane"}'}}]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "C=green R=grey A=grey N=grey E=yellow"}
FINAL = {"role": "assistant", "content": "The word is CLOSE."}
TOOLS = [{"type": "function", "function": {"name": "guess", "parameters": {"type": "object"}}}]


def tool_row(**fields: Any) -> TraceRow:
    """Two model calls: a tool call, then (after the tool result) a final answer."""
    first = build_turn(messages=[SYSTEM, USER], tools=TOOLS, message=CALL, finish_reason="tool_calls",
                       prompt_token_ids=[1, 2, 3], completion_token_ids=[4, 5], logprobs=[-0.1, -0.2],
                       timings={"started_at": 1_700_000_000.5}, model="tiny", node_id="a")
    second = build_turn(messages=[SYSTEM, USER, CALL, RESULT], tools=TOOLS, message=FINAL, finish_reason="stop",
                        prompt_token_ids=[1, 2, 3, 4, 5, 6, 7], completion_token_ids=[8, 9, 10],
                        logprobs=[-0.3, -0.4, -0.5], completion_mask=[1, 0, 1], node_id="b")
    return TraceRow(env=EnvInfo(name="wordle"), run_id="r", episode_id="e", reward=1.0, rewards={"win": 1.0},
                    trace=TrainingTrace(turns=[first, second]), **fields)


def test_conversation_is_first_request_then_replies_and_new_messages() -> None:
    assert conversation(tool_row().trace) == [SYSTEM, USER, CALL, RESULT, FINAL]


def test_atif_structure() -> None:
    row = tool_row()
    atif = json.loads(json.dumps(to_atif(row)))  # JSON-ready
    assert atif["schema_version"] == ATIF_VERSION == "ATIF-v1.4"
    assert atif["session_id"] == row.trace_id
    assert atif["agent"]["name"] == "openenv-train" and atif["agent"]["version"]
    steps = atif["steps"]
    assert [s["step_id"] for s in steps] == [1, 2, 3, 4]
    assert [s["source"] for s in steps] == ["system", "user", "agent", "agent"]
    assert steps[0]["message"] == "You play wordle." and steps[1]["message"] == "Guess the word."
    call = steps[2]
    assert call["timestamp"] == "2023-11-14T22:13:20.500000Z" and call["model_name"] == "tiny"
    assert call["message"] == "" and call["reasoning_content"] == "start with crane"
    assert call["tool_calls"] == [{"tool_call_id": "call_1", "function_name": "guess", "arguments": {"word": "crane"}}]
    assert call["observation"] == {"results": [{"content": RESULT["content"], "source_call_id": "call_1"}]}
    assert call["metrics"] == {"prompt_tokens": 3, "completion_tokens": 2, "prompt_token_ids": [1, 2, 3],
                               "completion_token_ids": [4, 5], "logprobs": [-0.1, -0.2]}
    assert call["extra"] == {"node_id": "a", "turn": None, "finish_reason": "tool_calls", "parent_id": None,
                             "line": 0, "main_line": True}
    assert steps[3]["extra"]["parent_id"] == "a"
    final = steps[3]
    assert final["message"] == "The word is CLOSE." and "tool_calls" not in final
    assert final["metrics"]["extra"] == {"completion_loss_mask": [1, 0, 1]}
    assert len(final["metrics"]["logprobs"]) == len(final["metrics"]["completion_token_ids"]) == 3
    for step in steps:  # agent-only fields appear on agent steps only
        if step["source"] != "agent":
            assert not {"model_name", "reasoning_content", "tool_calls", "metrics"} & step.keys()
    assert atif["final_metrics"]["total_prompt_tokens"] == 10
    assert atif["final_metrics"]["total_completion_tokens"] == 5
    assert atif["final_metrics"]["total_steps"] == 4
    assert atif["final_metrics"]["extra"] == {"reward": 1.0, "rewards": {"win": 1.0}}
    assert atif["extra"]["episode_id"] == "e" and atif["extra"]["env"]["name"] == "wordle"


def test_atif_edge_cases() -> None:
    reset = build_turn(messages=[{"role": "user", "content": "summary so far"}], message=FINAL, node_id="c")
    row = tool_row()
    row = row.model_copy(update={"trace": TrainingTrace(turns=[*row.trace.turns, reset])})
    steps = to_atif(row)["steps"]
    assert steps[4] == {"step_id": 5, "source": "user", "message": "summary so far", "extra": {"context_reset": True}}
    empty = to_atif(TraceRow(env=EnvInfo(name="x"), ok=False, error=ErrorInfo(type="Boom", message="env died")))
    assert empty["steps"][0]["source"] == "system" and empty["extra"]["ok"] is False
    bad_args = build_turn(messages=[], message={"role": "assistant", "tool_calls": [
        {"id": "k", "function": {"name": "f", "arguments": "not json"}}]})
    (step,) = to_atif(TraceRow(env=EnvInfo(name="x"), trace=TrainingTrace(turns=[bad_args])))["steps"]
    assert step["tool_calls"][0]["arguments"] == {"_raw": "not json"}


def test_atif_steps_follow_the_call_graph() -> None:
    """A side call between two calls of the main line: its steps name its line, and the main line's next call adds
    only its new messages (counted from the call it continues, not the side call)."""
    row = tool_row()
    first, second = row.trace.turns
    side = build_turn(messages=[{"role": "system", "content": "Name this chat."}, USER], message=FINAL,
                      prompt_token_ids=[1, 9], completion_token_ids=[8], node_id="title")
    row = row.model_copy(update={"trace": TrainingTrace(turns=[first, side, second])})
    atif = to_atif(row)
    assert [(s["source"], s["message"]) for s in atif["steps"]] == [
        ("system", "You play wordle."), ("user", "Guess the word."), ("agent", ""),
        ("system", "Name this chat."), ("user", "Guess the word."), ("agent", "The word is CLOSE."),
        ("agent", "The word is CLOSE.")]
    assert atif["steps"][3]["extra"] == {"context_reset": True}
    assert [(s["extra"]["node_id"], s["extra"]["line"], s["extra"]["main_line"]) for s in atif["steps"]
            if s["source"] == "agent"] == [("a", 0, True), ("title", 1, False), ("b", 0, True)]
    assert atif["steps"][2]["observation"]["results"][0]["source_call_id"] == "call_1"  # b's tool result, on a
    assert atif["extra"]["call_lines"] == [
        {"line": 0, "main": True, "parent_id": None, "node_ids": ["a", "b"]},
        {"line": 1, "main": False, "parent_id": None, "node_ids": ["title"]}]


def test_export_atif_writes_one_file_per_row(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "run") as writer:
        writer.write_many([tool_row(), make_row(1)])
    paths = export_atif(tmp_path / "run", tmp_path / "atif")
    assert len(paths) == 2 and all(p.suffix == ".json" for p in paths)
    for path in paths:
        doc = json.loads(path.read_text())
        assert doc["session_id"] == path.stem and doc["schema_version"] == ATIF_VERSION


def test_sft_dataset_filters_and_keeps_openai_tool_calls(tmp_path: Path) -> None:
    rows = [tool_row(), make_row(1, reward=0.2), make_row(2, reward=None), make_row(3, ok=False, reward=1.0),
            make_row(4, turns=0)]
    ds = to_sft_dataset(rows)
    # ok_only, needs a reply; make_row's two calls share no prefix (each its own line), so each is a row
    assert ds["trace_id"] == [rows[0].trace_id] + [rows[1].trace_id] * 2 + [rows[2].trace_id] * 2
    assert ds["line"] == [0, 1, 0, 1, 0] and ds["main_line"] == [True, True, False, True, False]  # main line first
    messages = ds[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[1]["content"] == "Guess the word."
    assert messages[2]["tool_calls"] == [{"id": "call_1", "type": "function",
                                          "function": {"name": "guess", "arguments": {"word": "crane"}}}]
    assert messages[2]["content"] is None
    assert messages[2]["reasoning_content"] == "start with crane"
    assert messages[3]["tool_call_id"] == "call_1" and messages[4]["content"] == FINAL["content"]
    assert json.loads(ds[0]["tools"]) == TOOLS and ds[1]["tools"] is None
    verbatim = to_sft_dataset(rows[:1], tool_arguments="string")[0]["messages"][2]["tool_calls"]
    assert verbatim == CALL["tool_calls"]  # OpenAI's JSON text, byte for byte
    assert len(to_sft_dataset(rows, min_reward=0.5)) == 1  # drops 0.2 and the unscored row
    assert len(to_sft_dataset(rows, ok_only=False)) == 7
    assert len(to_sft_dataset(rows, ok_only=False, branches="drop")) == 4  # the main line of each episode
    with TraceWriter(tmp_path) as writer:
        writer.write_many(rows)
    assert len(to_sft_dataset(tmp_path)) == 5 and len(to_sft_dataset([], min_reward=1.0)) == 0


def branched_row() -> TraceRow:
    """tool_row with a side call (a title, its own prompt) after the first call and a retry of the second call."""
    row = tool_row()
    first, second = row.trace.turns
    title = build_turn(messages=[{"role": "system", "content": "Name this chat."}, USER],
                       message={"role": "assistant", "content": "Wordle"}, prompt_token_ids=[1, 9],
                       completion_token_ids=[8], node_id="title")
    retry = build_turn(messages=[SYSTEM, USER, CALL, RESULT], tools=TOOLS,
                       message={"role": "assistant", "content": "The word is CRANE."},
                       prompt_token_ids=[1, 2, 3, 4, 5, 6, 7], completion_token_ids=[11], node_id="retry")
    return row.model_copy(update={"trace": TrainingTrace(turns=[first, title, second, retry])})


def test_sft_follows_the_main_line_and_keeps_branches_apart() -> None:
    """A side call and a retry between the main line's calls are not mixed into its conversation; with
    ``branches="rows"`` each is a row of its own, a fork starting with the calls before it."""
    row = branched_row()
    main = [SYSTEM, USER, CALL, RESULT, FINAL]
    assert conversation(row.trace) == main
    graph = row.trace.call_graph()
    assert [(line.node_ids, line.main) for line in graph.lines] == [
        (("a", "b"), True), (("title",), False), (("retry",), False)]
    assert conversation(row.trace, line=1) == [{"role": "system", "content": "Name this chat."}, USER,
                                               {"role": "assistant", "content": "Wordle"}]
    assert [(s.turn.node_id, s.lead, s.reset) for s in segments(row.trace, line=2)] == [
        ("a", True, False), ("retry", False, False)]

    (only,) = to_sft_dataset([row], branches="drop")
    assert [m["content"] for m in only["messages"]] == [m["content"] if isinstance(m["content"], str | None)
                                                        else "Guess the word." for m in main]
    assert (only["line"], only["main_line"]) == (0, True)
    rows = to_sft_dataset([row])  # branches="rows", the default
    assert [(r["line"], r["main_line"]) for r in rows] == [(0, True), (1, False), (2, False)]
    assert rows[1]["messages"][-1]["content"] == "Wordle" and rows[1]["tools"] is None
    assert [m["role"] for m in rows[2]["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert rows[2]["messages"][-1]["content"] == "The word is CRANE." and json.loads(rows[2]["tools"]) == TOOLS
    with pytest.raises(ValueError, match="branches must be 'drop'"):
        to_sft_dataset([row], branches="all")  # type: ignore[arg-type]


def test_sft_messages_render_with_trl_qwen_template() -> None:
    """TRL's SFTTrainer renders ``messages`` with the chat template: tool arguments must come out as one JSON object."""
    import importlib.util

    pytest.importorskip("transformers")
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("trl is not installed (its shipped chat templates are needed)")
    from transformers.utils.chat_template_utils import render_jinja_template

    template = (Path(next(iter(spec.submodule_search_locations))) / "chat_templates" / "qwen2_5.jinja").read_text()
    example = to_sft_dataset([tool_row()])[0]
    rendered, _ = render_jinja_template([example["messages"]], tools=json.loads(example["tools"]), chat_template=template)
    assert '<tool_call>\n{"name": "guess", "arguments": {"word": "crane"}}\n</tool_call>' in rendered[0]
    assert "<tool_response>\nC=green" in rendered[0] and rendered[0].endswith("The word is CLOSE.<|im_end|>\n")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    with TraceWriter(tmp_path / "run") as writer:
        writer.write_many(make_row(i) for i in range(3))
    return tmp_path / "run"


def test_push_to_hub_offline_fails_fast_after_building(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(HubPushError, match="HF_HUB_OFFLINE") as info:
        push_to_hub(run_dir, "someone/traces", token="hf_dummy", cache_dir=str(run_dir / "cache"))
    assert time.monotonic() - start < 10
    assert info.value.reason == "offline" and info.value.rows == 3  # the dataset was built first


def test_push_to_hub_without_token(run_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from huggingface_hub import constants

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    with pytest.raises(HubPushError, match="no Hugging Face token") as info:
        push_to_hub(run_dir, "someone/traces", cache_dir=str(run_dir / "cache"))
    assert info.value.reason == "no_token" and info.value.rows == 3
