"""Episodes played in-process (LocalRunner) become an SFT dataset that SFTTrainer trains on; rubric rewards."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from openenv_train.integrations import LocalRunner
from openenv_train.integrations.trl import field_reward, rubric_rewards, traces_to_sft_dataset
from openenv_train.pool import PoolConfig, make_groups
from openenv_train.rubrics import reward_function, wordle_rubric
from openenv_train.trace import TraceWriter, read_traces


@pytest.mark.timeout(300)
def test_local_runner_rows_train_sft_one_step(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="trl is not installed")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    config = PoolConfig(num_actors=1, max_turns=2, run_id="sft", sampling={"max_tokens": 6})
    with TraceWriter(tmp_path / "run") as writer, LocalRunner("wordle", model, tokenizer, config=config,
                                                              writer=writer) as runner:
        runner.version = 3
        rows = runner.run(make_groups([{"task": "crane"}, {"task": "moist"}], 2))
    assert [r.episode_id for r in rows] == ["g0-0", "g0-1", "g1-0", "g1-1"]
    assert all(r.ok and r.policy.version == 3 and len(r.trace.turns) == 2 for r in rows)
    assert all(t.completion_token_ids and len(t.per_token_logps) == len(t.completion_token_ids)
               for r in rows for t in r.trace.turns)
    assert {r.episode_id for r in read_traces(tmp_path / "run")} == {r.episode_id for r in rows}

    dataset = traces_to_sft_dataset(tmp_path / "run")
    assert dataset.num_rows == 4 and "messages" in dataset.column_names
    assert [m["role"] for m in dataset[0]["messages"]] == ["user", "assistant", "user", "assistant"]
    assert traces_to_sft_dataset(rows, min_reward=0.5).num_rows == 0  # random weights never win

    args = SFTConfig(output_dir=str(tmp_path / "sft"), per_device_train_batch_size=2, max_steps=1, report_to=[],
                     use_cpu=True, bf16=False, save_strategy="no", logging_steps=1, disable_tqdm=True,
                     max_length=256)
    trainer = SFTTrainer(model=model, processing_class=tokenizer, args=args,
                         train_dataset=dataset.remove_columns([c for c in dataset.column_names if c != "messages"]))
    trainer.train()
    log = trainer.state.log_history[0]
    assert math.isfinite(log["loss"]) and log["loss"] > 0 and log["grad_norm"] > 0


def test_rubric_rewards_with_weights_and_components() -> None:
    from tests.rubrics._rows import wordle_row

    rows = [wordle_row("crane", ["[slate]", "[crane]"]), wordle_row("crane", ["[zzzzz]"])]
    funcs, weights = rubric_rewards({"wordle": 1.0, "wordle#greens": 0.5})
    assert weights == [1.0, 0.5] and [f.__name__ for f in funcs] == ["wordle", "wordle_greens"]
    rubric = wordle_rubric()
    kwargs = {"trace_row": [r.model_dump_json() for r in rows]}
    assert funcs[0](["p"] * 2, ["c"] * 2, **kwargs) == reward_function(rubric)(["p"] * 2, ["c"] * 2, **kwargs)
    assert funcs[1](["p"] * 2, ["c"] * 2, **kwargs) == [rubric(r).components["greens"] for r in rows]
    assert rubric_rewards([rubric])[1] == [1.0]
    with pytest.raises(ValueError, match="finite number >= 0"):
        rubric_rewards({"wordle": -1.0})
    with pytest.raises(ValueError, match="at least one"):
        rubric_rewards([])
    with pytest.raises(KeyError, match="reward_env"):
        field_reward("env")(["p"], ["c"])
