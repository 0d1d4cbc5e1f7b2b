"""The replay task: the same trace row scored directly, in a TRL reward function and in an Inspect scorer."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval

from openenv_train.cli import main
from openenv_train.evals import replay_task
from openenv_train.rubrics import Components, LLMJudge, reward_function, wordle_rubric
from openenv_train.trace import TraceWriter
from tests.rubrics._rows import wordle_row

MESSAGES = [None, ["[slate]", "slate", "[crate]", "[zzzzz]"], ["hello", "[moist]", "[pious]"]]


def _rows() -> list:
    return [wordle_row("crane", m, episode_id=f"ep{i}") for i, m in enumerate(MESSAGES)]


def test_direct_trl_and_inspect_give_the_same_numbers(tmp_path: Path) -> None:
    rows, rubric = _rows(), wordle_rubric()
    direct = [rubric(r) for r in rows]
    trl = reward_function(rubric)(["p"] * len(rows), ["c"] * len(rows), trace_row=[r.model_dump_json() for r in rows])
    assert trl == [d.total for d in direct]
    log = inspect_eval(replay_task(rows, "wordle"), model="mockllm/model", log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success" and log.samples
    by_id = {s.id: s for s in log.samples}
    for row, expected in zip(rows, direct, strict=True):
        scores = by_id[row.trace_id].scores
        assert scores is not None
        value = scores["rubric"].value
        assert isinstance(value, dict)
        assert value == {**expected.components, "env_reward": row.reward}
        assert value["wordle"] == trl[rows.index(row)]
    assert log.results is not None
    metrics = {s.name: s.metrics for s in log.results.scores}
    assert set(metrics) >= {"correct", "greens", "yellows", "format", "repetition", "invalid_guesses", "wordle"}
    assert all(set(m) == {"mean", "stderr"} for m in metrics.values())
    totals = [d.total for d in direct]
    assert metrics["wordle"]["mean"].value == pytest.approx(sum(t for t in totals if t is not None) / len(totals))


def test_failing_judge_does_not_kill_the_eval(tmp_path: Path) -> None:
    rows = _rows()
    rubric = Components([wordle_rubric(), LLMJudge("http://127.0.0.1:9/v1", retries=1, timeout_s=2)])
    log = inspect_eval(replay_task(rows, rubric), model="mockllm/model", log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success" and log.samples and len(log.samples) == len(MESSAGES)
    expected = {r.trace_id: wordle_rubric()(r).total for r in rows}
    for sample in log.samples:
        assert sample.scores is not None
        score = sample.scores["rubric"]
        assert isinstance(score.value, dict) and score.metadata is not None
        assert score.value["judge"] == 0.0 and "JudgeError" in score.metadata["errors"]["judge"]
        assert score.value["wordle"] == score.value["total"] == expected[str(sample.id)]


def test_eval_cli_replays_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    with TraceWriter(run) as writer:
        writer.write_many(_rows())
    code = main(["eval", str(run), "--rubric", "wordle", "--model", "mockllm/model", "--log-dir", str(tmp_path / "logs")])
    out = capsys.readouterr().out
    assert code == 0 and "invalid_guesses" in out and "3 sample(s)" in out
