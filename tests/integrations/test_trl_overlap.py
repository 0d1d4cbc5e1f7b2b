"""Overlapped GRPO rollouts (``make_rollout_func(overlap=True)``): the next batch plays while the trainer trains on
this one, one step off-policy, with the captured sampling logprobs as the loss's old policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openenv_train.integrations.trl import grpo_trainer_class, make_rollout_func
from openenv_train.policy import LocalConfig
from openenv_train.pool import PoolConfig

pytest.importorskip("trl", reason="trl is not installed")

SECRETS = ["crane", "moist", "pious", "lucky", "dwarf", "tiger"]


def _varied(prompts: list[Any], completions: list[Any], completion_ids: list[Any], **kwargs: Any) -> list[float]:
    """A reward that differs within a group (the untrained model never wins): its weights move every step."""
    return [float(len(set(ids))) for ids in completion_ids]


def _trainer(tmp_path: Path, rollout: Any, steps: int, base: type | None = None, **kwargs: Any) -> Any:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny", tokenizer="char", init_range=0.2)
    config = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_generations=4,
                        max_completion_length=48, max_steps=steps, bf16=False, report_to=[], logging_steps=1,
                        use_cpu=True, save_strategy="no", disable_tqdm=True, learning_rate=1e-2, seed=0,
                        temperature=1.0)
    dataset = Dataset.from_list([{"prompt": json.dumps({"task": s})} for s in SECRETS])
    return (base or grpo_trainer_class())(
        model=AutoModelForCausalLM.from_pretrained(path), processing_class=AutoTokenizer.from_pretrained(path),
        args=config, train_dataset=dataset, reward_funcs=[_varied], rollout_func=rollout, **kwargs)


def test_overlapped_rollouts_play_the_next_batch_while_the_trainer_trains(tmp_path: Path) -> None:
    import torch
    from transformers import TrainerCallback

    from openenv_train.integrations import flatten_turns

    rollout = make_rollout_func("wordle", per_turn_tokens=8, overlap=True,
                                config=PoolConfig(num_actors=1, max_turns=3, run_id="overlap"))
    events: list[tuple[str, int]] = []  # (what, global step), in order
    given: list[list[str]] = []  # the batch the trainer drew at each step
    trained: list[dict[str, Any]] = []

    def tasks(inputs: Any) -> list[str]:
        return [json.loads(x["prompt"])["task"] for x in inputs]

    class Recording(grpo_trainer_class()):  # type: ignore[misc]
        def _generate_and_score_completions(self, inputs: Any) -> Any:
            given.append(tasks(inputs))
            out = super()._generate_and_score_completions(inputs)
            trained.append({"seen": self._seen, "played": [r.task["task"] for r in rollout.last_rows],
                            "old": out["old_per_token_logps"], "lag": list(rollout.last_staleness)})
            return out

        def _calculate_rewards(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            self._seen = tasks(inputs)  # what the reward functions are told they score
            return super()._calculate_rewards(inputs, *args, **kwargs)

    class Steps(TrainerCallback):  # type: ignore[misc]
        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            events.append(("optimizer", state.global_step))

    overlapped = rollout._overlapped

    def spy(prompts: Any, trainer: Any, n: int, step: int) -> Any:
        rows = overlapped(prompts, trainer, n, step)
        if rollout._pending is not None:
            events.append(("playing", step + 1))
        return rows

    rollout._overlapped = spy  # type: ignore[method-assign]
    trainer = _trainer(tmp_path, rollout, 3, base=Recording, callbacks=[Steps()])
    try:
        trainer.train()
        backend = rollout.runner.backend
        assert backend.engine.kind == "process"
        assert backend.version == 3  # the last optimizer write set it
    finally:
        rollout.close()

    assert trainer.state.global_step == 3 and len(trained) == 3
    # step 1 trains on its own batch, played at once, and plays it again while it trains (for step 2); step 2
    # plays its batch for step 3; step 3 plays nothing (no step would train on it)
    assert [t["played"] for t in trained] == [given[0], given[0], given[1]]
    assert all(t["seen"] == t["played"] for t in trained)  # the reward functions see the prompts they score
    assert events == [("playing", 1), ("optimizer", 0), ("playing", 2), ("optimizer", 1), ("optimizer", 2)]
    assert [t["lag"] for t in trained] == [[0] * 8, [1] * 8, [1] * 8]  # each row's lag, in optimizer steps
    # the loss's old policy is what sampled: the captured logprobs (lr 1e-2 moved the weights since)
    row = rollout.last_rows[0]
    flat = flatten_turns(row.trace.turns)
    n = min(len(flat.logprobs), 48)
    assert torch.allclose(trained[-1]["old"][0][:n], torch.tensor(flat.logprobs[:n]), atol=1e-5)
    # each turn decoded with one version of the weights: the one it began with or the one after the write
    versions = [turn.metadata["policy_version"] for turn in row.trace.turns]
    assert row.policy.version == 1 and set(versions) <= {1, 2} and versions == sorted(versions)


def test_overlap_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    from trl import GRPOTrainer

    thread = make_rollout_func("wordle", per_turn_tokens=8, overlap=True, local=LocalConfig(engine="thread"),
                               config=PoolConfig(num_actors=1, max_turns=2, run_id="overlap-thread"))
    trainer = _trainer(tmp_path / "a", thread, 1)
    try:
        with pytest.raises(ValueError, match="engine process"):
            trainer.train()
    finally:
        thread.close()
    plain = make_rollout_func("wordle", per_turn_tokens=8, overlap=True,
                              config=PoolConfig(num_actors=1, max_turns=2, run_id="overlap-plain"))
    trainer = _trainer(tmp_path / "b", plain, 1, base=GRPOTrainer)
    try:
        with pytest.raises(ValueError, match="grpo_trainer_class"):
            trainer.train()
    finally:
        plain.close()
