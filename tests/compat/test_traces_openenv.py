"""Traces both ways with OpenEnv's harness (openenv >= 0.10; skipped against openenv-core 0.3.0, which has none).

Our rows (written to Parquet and read back) validate as their ``TrainingTrace``; episodes their
``RolloutSerializer`` writes (``collect``'s ``results.jsonl``) load into our dataset, feed ``to_sft_dataset`` and
rubrics, and ``openenv-train import-traces`` writes them as a run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_train.integrations.openenv_traces import (
    import_openenv_collect,
    read_openenv_collect,
    to_openenv_training_trace,
)
from openenv_train.rubrics import FunctionRubric, score_rows
from openenv_train.trace import EnvInfo, TraceRow, TraceWriter, TrainingTrace, build_turn, read_traces, to_sft_dataset
from tests.cli.conftest import cli

training = pytest.importorskip("openenv.core.harness.training", reason="openenv < 0.10 has no harness")
collect = pytest.importorskip("openenv.core.harness.collect")

MESSAGES = [
    {"role": "system", "content": "Use the tools."},
    {"role": "user", "content": "What is 2 + 3?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "5"},
    {"role": "assistant", "content": "5"},
]


def test_our_rows_validate_as_their_training_trace(tmp_path: Path) -> None:
    turns = [build_turn(messages=MESSAGES[:2], message=MESSAGES[2], finish_reason="tool_calls",
                        prompt_token_ids=[5, 6, 7], completion_token_ids=[8, 9], logprobs=[-0.5, -1.25], node_id="n0"),
             build_turn(messages=MESSAGES[:4], message=MESSAGES[4], finish_reason="stop",
                        prompt_token_ids=[5, 6, 7, 8, 9, 10], completion_token_ids=[11], logprobs=[0.0], node_id="n1")]
    row = TraceRow(episode_id="e1", env=EnvInfo(name="tools"), reward=1.0, trace=TrainingTrace(turns=turns))
    with TraceWriter(tmp_path / "run") as writer:
        writer.write(row)
    (back,) = read_traces(tmp_path / "run")  # through Parquet, as a consumer reads them
    theirs = training.TrainingTrace.model_validate(to_openenv_training_trace(back))
    assert [t.node_id for t in theirs.turns] == ["n0", "n1"]
    assert theirs.turns[0].loss_mask == [0, 0, 0, 1, 1] and theirs.turns[1].per_token_logps == [0.0]
    assert theirs.turns[0].response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "add"


def _their_collect(folder: Path) -> None:
    """Two episodes written by OpenEnv's own RolloutSerializer, as ``collect`` writes them."""
    writer = collect.RolloutSerializer(folder)
    for i, reward in enumerate((1.0, 0.0)):
        writer.write_episode(collect.EpisodeRecord(
            episode_id=f"ep-{i}", messages=MESSAGES if i == 0 else MESSAGES[:2] + [{"role": "assistant", "content": "4"}],
            reward=reward, done=True,
            tool_trace=[{"tool_name": "add", "arguments": {"a": 2, "b": 3},
                         "result": {"data": 5, "done": False, "metadata": {}, "error": None}}] if i == 0 else [],
            metrics={"turns": 2}, verify_metrics={"correct": reward}, artifacts={}, task={"question": "2 + 3"}))
    writer.write_metadata({"env": "calc_env", "num_episodes": 2})


def test_their_collect_output_feeds_our_sft_and_rubrics(tmp_path: Path) -> None:
    _their_collect(tmp_path / "collected")
    rows = read_openenv_collect(tmp_path / "collected")
    assert [(r.episode_id, r.env.name, r.reward, r.rollout_type) for r in rows] == [
        ("ep-0", "calc_env", 1.0, "eval"), ("ep-1", "calc_env", 0.0, "eval")]
    assert rows[0].steps[0].action == {"type": "call_tool", "tool_name": "add", "arguments": {"a": 2, "b": 3}}
    assert rows[0].steps[0].observation["result"] == 5 and rows[0].rewards == {"verify.correct": 1.0}
    assert rows[0].task == {"question": "2 + 3"} and len(rows[0].trace.turns) == 2

    assert import_openenv_collect(tmp_path / "collected", tmp_path / "run") == 2
    sft = to_sft_dataset(tmp_path / "run", min_reward=0.5)
    assert len(sft) == 1
    assert [m["role"] for m in sft[0]["messages"]] == [m["role"] for m in MESSAGES]
    assert sft[0]["messages"][-1]["content"] == "5"
    assert sft[0]["messages"][2]["tool_calls"][0]["function"]["arguments"] == {"a": 2, "b": 3}

    said_five = FunctionRubric(lambda row: float(row.trace.turns[-1].response["choices"][0]["message"]["content"] == "5"),
                               name="said_five")
    assert [r.total for r in score_rows(said_five, read_traces(tmp_path / "run"))] == [1.0, 0.0]


def test_import_traces_command(tmp_path: Path) -> None:
    _their_collect(tmp_path / "collected")
    done = cli("import-traces", str(tmp_path / "collected"), "-o", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert "imported 2 episode(s)" in done.stdout and len(read_traces(tmp_path / "run")) == 2
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.jsonl").write_text('{"episode_id": "x"}\nnot json\n')
    done = cli("import-traces", str(tmp_path / "bad"), "-o", str(tmp_path / "run2"))
    assert done.returncode == 1 and "results.jsonl:2: not JSON" in done.stderr
