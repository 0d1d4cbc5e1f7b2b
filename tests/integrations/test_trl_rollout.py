"""A real GRPOTrainer step on CPU whose batch is played on wordle through make_rollout_func."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from openenv_train.integrations import flatten_turns
from openenv_train.integrations.trl import field_reward, make_rollout_func, rubric_rewards
from openenv_train.pool import PoolConfig
from openenv_train.trace import TraceWriter, read_traces

pytest.importorskip("trl", reason="trl is not installed")


@pytest.mark.timeout(300)
def test_grpo_step_through_rollout_func_on_wordle(tmp_path: Path) -> None:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from openenv_train.policy import LocalConfig, build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")
    dataset = Dataset.from_list([{"prompt": '{"task": "crane"}'}, {"prompt": '{"task": "moist"}'}])
    writer = TraceWriter(tmp_path / "run")
    rollout = make_rollout_func("wordle", config=PoolConfig(num_actors=1, max_turns=2, run_id="trl"), writer=writer,
                                per_turn_tokens=4, local=LocalConfig(max_batch_rows=3))
    funcs, weights = rubric_rewards({"wordle": 1.0})
    seen: list[dict[str, object]] = []
    env_reward = field_reward("env")

    def env(prompts: list, completions: list, **kwargs: object) -> list[float | None]:
        seen.append(kwargs)
        return [0.0 if r is None else r for r in env_reward(prompts, completions, **kwargs)]

    def varied(prompts: list, completions: list, completion_ids: list, **kwargs: object) -> list[float]:
        # random weights earn the same wordle score everywhere: a reward that differs within groups gives advantages
        return [float(sum(ids) % 1009) / 1009 for ids in completion_ids]

    config = GRPOConfig(output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=4, num_generations=2,
                        max_completion_length=8, max_steps=1, bf16=False, report_to=[], logging_steps=1,
                        use_cpu=True, save_strategy="no", disable_tqdm=True, reward_weights=[*weights, 1.0, 1.0],
                        beta=0.0)
    model = AutoModelForCausalLM.from_pretrained(path)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    outputs: list[dict[str, list]] = []

    def recorded(prompts: list, trainer: GRPOTrainer) -> dict[str, list]:
        outputs.append(rollout(prompts, trainer))
        assert rollout.runner.backend.config.max_batch_rows == 3  # the options given serve the trainer's model
        return outputs[-1]

    trainer = GRPOTrainer(model=model, processing_class=AutoTokenizer.from_pretrained(path),
                          reward_funcs=[*funcs, env, varied], args=config, train_dataset=dataset, rollout_func=recorded)
    grads: list[float] = []

    def on_grad(p: torch.Tensor) -> torch.Tensor:
        grads.append(float(p.norm()))
        return p

    hooks = [p.register_hook(on_grad) for p in model.parameters() if p.requires_grad]
    try:
        trainer.train()
    finally:
        rollout.close()
        writer.close()
        for h in hooks:
            h.remove()

    log = trainer.state.log_history[0]
    # on-policy, the first step's GRPO loss is exactly 0 when every completion has the same model-token count
    # (advantages sum to 0 per group; ratio 1), so the gradient is what shows the step learned something
    assert math.isfinite(log["loss"]) and log["grad_norm"] > 0 and log["reward_std"] > 0
    assert grads and all(math.isfinite(g) for g in grads) and any(g > 0 for g in grads)
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters())  # the step changed weights
    # rewards reach the trainer's logs: the env's and the rubric's
    rows = rollout.last_rows
    assert len(rows) == 4 and all(r.ok for r in rows)
    assert log["rewards/env/mean"] == pytest.approx(sum(r.reward or 0.0 for r in rows) / 4)
    assert "rewards/wordle/mean" in log
    assert seen and seen[0]["reward_env"] == [r.reward for r in rows]
    # the rows of the step are in the writer, and they are what the trainer trained on
    written = {r.episode_id: r for r in read_traces(tmp_path / "run")}
    assert set(written) == {r.episode_id for r in rows}
    assert [r.group_id for r in rows] == [rows[0].group_id] * 2 + [rows[2].group_id] * 2
    assert rows[0].task == rows[1].task and rows[0].task != rows[2].task
    assert all(r.policy.version == 0 for r in rows)
    assert len(outputs) == 1
    out = outputs[0]
    assert any(len(r.trace.turns) > 1 for r in rows)  # multi-turn episodes were played
    for i, row in enumerate(rows):
        flat = flatten_turns(written[row.episode_id].trace.turns)
        # joined completions are cut to max_completion_length (8), as the trainer's own generation would be
        assert out["prompt_ids"][i] == flat.prompt_ids and out["completion_ids"][i] == flat.completion_ids[:8]
        assert out["env_mask"][i] == flat.env_mask[:8] and out["logprobs"][i] == flat.logprobs[:8]
        assert out["trace_row"][i] == row.model_dump_json()
        assert flat.turns_used == len(row.trace.turns) >= 1
        assert len(flat.completion_ids) == len(flat.env_mask) == len(flat.logprobs)
        assert sum(flat.env_mask) == sum(len(t.completion_token_ids) for t in row.trace.turns)
        if len(row.trace.turns) > 1:
            assert 0 in flat.env_mask  # env feedback between turns is masked out


def test_a_batch_that_splits_a_group_says_what_to_change() -> None:
    from types import SimpleNamespace

    rollout = make_rollout_func("wordle")
    rollout.runner = SimpleNamespace(backend=SimpleNamespace(version=None))  # never started: fails before running
    trainer = SimpleNamespace(num_generations=2, state=SimpleNamespace(global_step=0))
    with pytest.raises(ValueError, match="not a multiple of num_generations=2"):
        rollout(["a", "b", "c"], trainer)
