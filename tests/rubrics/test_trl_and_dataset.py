"""Rubrics as TRL reward functions, and `score` adding components to a new version of a trace dataset."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from openenv_train.cli import main
from openenv_train.rubrics import TrajectoryRubric, reward_function, score_dataset, wordle_rubric
from openenv_train.trace import TraceWriter, load_dataset, read_traces, shard_paths

from ._rows import wordle_row

MESSAGES = [None, ["[slate]", "slate", "[crate]", "[zzzzz]"], ["[crane]"], ["hello", "[moist]", "[pious]"]]


def rows() -> list:
    return [wordle_row("crane", m, group_id="g0", episode_id=f"ep{i}") for i, m in enumerate(MESSAGES)]


def test_trl_reward_function_gives_the_rubrics_numbers() -> None:
    data, rubric = rows(), wordle_rubric()
    direct = [rubric(r).total for r in data]
    reward = reward_function(rubric)
    assert reward.__name__ == "wordle"
    prompts = [[{"role": "user", "content": "play"}]] * len(data)
    completions = [[{"role": "assistant", "content": r.trace.turns[-1].response["choices"][0]["message"]["content"]}]
                   for r in data]
    # TRL passes dataset columns as keyword lists; the row column may hold JSON strings or dicts
    as_json = reward(prompts, completions, completion_ids=[[1]] * len(data), trace_row=[r.model_dump_json() for r in data])
    as_dict = reward(prompts, completions, trace_row=[r.model_dump(mode="json") for r in data])
    assert as_json == as_dict == direct
    greens = reward_function(rubric, component="greens")(prompts, completions, trace_row=data)
    assert greens == [rubric(r).components["greens"] for r in data]
    no_rows = reward_function(rubric)(["p"], ["[crane]"])
    assert no_rows == [None]  # a bare completion has no env steps: not applicable


def _digest(run: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in shard_paths(run)}


def test_score_dataset_writes_a_new_version(tmp_path: Path) -> None:
    run = tmp_path / "run"
    data = rows()
    with TraceWriter(run, flush_rows=2) as writer:
        writer.write_many(data)
    before = _digest(run)
    rubric = TrajectoryRubric(wordle_rubric(), credit="discounted", gamma=0.9)
    v1 = score_dataset(run, rubric)
    assert v1 == run / "versions" / "v1" and _digest(run) == before  # the source is untouched
    table = pq.read_table(shard_paths(v1)[0])
    expected = [rubric(r) for r in read_traces(run)]
    assert table.column("reward_wordle").to_pylist() == [e.components["wordle"] for e in expected]
    assert table.column("reward_correct").to_pylist() == [e.components["correct"] for e in expected]
    assert table.column("step_rewards").to_pylist() == [e.step_rewards for e in expected]
    assert table.column("trace_id").to_pylist() == [r.trace_id for r in read_traces(run)]
    ds = load_dataset(v1)
    assert "reward_greens" in ds.column_names and ds.num_rows == len(data)
    assert json.loads((v1 / "version.json").read_text())["rubric"] == rubric.name
    v2 = score_dataset(v1, wordle_rubric())  # rescoring a version makes the next one
    assert v2 == run / "versions" / "v2" and shard_paths(v1)
    with pytest.raises(FileExistsError):
        score_dataset(run, wordle_rubric(), output=v1)


def test_score_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    with TraceWriter(run) as writer:
        writer.write_many(rows())
    assert main(["score", str(run), "--rubric", "wordle"]) == 0
    out = capsys.readouterr().out
    assert "reward_correct" in out and str(run / "versions" / "v1") in out.replace("\n", "")
    assert main(["score", str(run), "--rubric", "wordel"]) == 1
    assert "did you mean 'wordle'" in capsys.readouterr().err
    assert main(["score", str(run), "--rubric", "wordle", "-o", str(run / "versions" / "v1")]) == 1


@pytest.mark.timeout(180)
def test_inside_a_real_grpo_trainer_step(tmp_path: Path) -> None:
    """GRPOTrainer calls the reward function with the dataset's trace_row column; the numbers are the rubric's."""
    pytest.importorskip("trl", reason="trl is not installed")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from openenv_train.policy import build_tiny_model
    from openenv_train.trace import TraceRow

    data, rubric = rows()[:2], wordle_rubric()
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": "play"}], "trace_row": r.model_dump_json()}
                                 for r in data])
    inner, calls = reward_function(rubric), []

    def wordle(prompts: list, completions: list, **kwargs: object) -> list[float | None]:
        out = inner(prompts, completions, **kwargs)
        calls.append((kwargs["trace_row"], out))
        return out

    path = build_tiny_model(tmp_path / "tiny")
    config = GRPOConfig(output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=2, num_generations=2,
                        max_completion_length=4, max_steps=1, bf16=False, report_to=[], logging_steps=1,
                        use_cpu=True, save_strategy="no", disable_tqdm=True)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(path),
                          processing_class=AutoTokenizer.from_pretrained(path), reward_funcs=[wordle], args=config,
                          train_dataset=dataset)
    trainer.train()
    assert calls
    for row_json, rewards in calls:
        assert rewards == [rubric(TraceRow.model_validate_json(r)).total for r in row_json]  # type: ignore[attr-defined]
    logged = trainer.state.log_history[0]["rewards/wordle/mean"]
    scored = [x for _, out in calls for x in out]
    assert logged == pytest.approx(sum(scored) / len(scored), rel=1e-6)  # type: ignore[arg-type]
