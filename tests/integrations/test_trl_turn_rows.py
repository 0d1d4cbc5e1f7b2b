"""GRPO trains each model turn as a row of its own, under the prompt it was sampled from (``turn_rows=True``): every
turn of every episode is trained, with its episode's advantage, and scored exactly as it was sampled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openenv_train.integrations.trl import field_reward, grpo_trainer_class, make_rollout_func
from openenv_train.pool import PoolConfig
from openenv_train.recipes._env_agent import ActionAgent

pytest.importorskip("trl", reason="trl is not installed")


def _step(tmp_path: Path, name: str, history: str, turn_rows: bool,
          compare: bool = False) -> tuple[list[dict[str, Any]], list[Any], int]:
    """One GRPO step (KL term on) on catch 5x5, four games from each of two seeds; per loss call the trainer's
    logprobs and its inputs, the episodes' rows, and the model turns they hold (``compare``: also the loss and
    gradient of the batch as given and of the same turns unmerged, one row each)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny", tokenizer="char", init_range=0.1)
    rollout = make_rollout_func("catch", agent=ActionAgent(history=history), per_turn_tokens=4, turn_rows=turn_rows,
                                config=PoolConfig(num_actors=1, max_turns=10, run_id=name))
    seen: list[dict[str, Any]] = []

    class Recording(grpo_trainer_class()):  # type: ignore[misc]
        def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
            ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
            att = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
            self._allowed = inputs.get("allowed_mask")
            logps, _, _ = self._get_per_token_logps_and_entropies(model, ids, att, inputs["completion_ids"].size(1))
            seen.append({**inputs, "logps": logps.detach()})
            if compare:
                seen[-1]["compare"] = [self._loss_and_grads(model, inputs), self._loss_and_grads(model, self._plain())]
            return super()._compute_loss(model, inputs)

        def _plain(self) -> dict[str, Any]:
            """The step's turns one row each, with the same episode advantages (TRL's, from the rewards)."""
            from openenv_train.integrations.trl import turn_batch

            rewards = torch.tensor([float(r.reward or 0.0) for r in rollout.last_rows]).view(-1, 4)
            advantages = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)).flatten()
            batch = turn_batch(rollout.last_turn_rows, advantages, pad_id=int(self._tokenizer.pad_token_id or 0),
                               vocab=self.model.get_output_embeddings().weight.size(0))
            # before the first optimiser step the reference and the sampling policy are the trained one
            batch["old_per_token_logps"] = batch["ref_per_token_logps"] = batch["sampling_per_token_logps"]
            return batch

        def _loss_and_grads(self, model: Any, inputs: dict[str, Any]) -> dict[str, Any]:
            self._allowed = inputs.get("allowed_mask")
            loss = super()._compute_loss(model, inputs)
            grads = torch.autograd.grad(loss, [p for p in model.parameters() if p.requires_grad])
            self._allowed = None
            return {"loss": loss.detach(), "grads": grads, "rows": int(inputs["completion_ids"].size(0))}

    config = GRPOConfig(output_dir=str(tmp_path / name), per_device_train_batch_size=8, num_generations=4,
                        max_completion_length=256, max_steps=1, bf16=False, report_to=[], logging_steps=1,
                        use_cpu=True, save_strategy="no", disable_tqdm=True, beta=0.1, learning_rate=1e-3)
    dataset = Dataset.from_list([{"prompt": '{"rows": 5, "seed": 1}'}, {"prompt": '{"rows": 5, "seed": 2}'}])
    trainer = Recording(model=AutoModelForCausalLM.from_pretrained(path), processing_class=AutoTokenizer.from_pretrained(path),
                        reward_funcs=[field_reward("env")], args=config, train_dataset=dataset, rollout_func=rollout)
    try:
        trainer.train()
    finally:
        rollout.close()
    return seen, rollout.last_rows, sum(len(r.trace.turns) for r in rollout.last_rows)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("history", ["current", "all"])
def test_every_turn_is_a_row_scored_as_it_was_sampled(tmp_path: Path, history: str) -> None:
    import torch

    seen, rows, turns = _step(tmp_path, f"rows-{history}", history, turn_rows=True)
    assert len(seen) == 1 and turns == 8 * 4  # eight games of four moves on a 5-row board
    batch = seen[0]
    on = batch["completion_mask"].bool()
    # one row per distinct move (its prompt, its action token and the end-of-reply token the constraint then
    # forces), weighted by how many of the episodes' moves it stands for
    distinct = {(tuple(t.prompt_token_ids), tuple(t.completion_token_ids)) for r in rows for t in r.trace.turns}
    assert batch["completion_ids"].shape == (len(distinct), 2) and on.all()
    weights = batch["tool_mask"][:, 0]
    assert int(weights.sum()) == turns and int(batch["num_items_in_batch"]) == 2 * turns
    allowed = batch["allowed_mask"]
    assert allowed[:, 0].sum(-1).eq(3).all() and allowed[:, 1].sum(-1).eq(1).all()  # left, stay, right; forced
    # before the first optimiser step the trainer's policy is the sampling policy: under each turn's own prompt
    # (left-padded where prompts differ in length: history=all) and its decoding mask, the same logprobs
    sampled = batch["sampling_per_token_logps"]
    assert torch.allclose(batch["logps"], sampled, atol=1e-5), (batch["logps"] - sampled).abs().max()
    assert torch.allclose(batch["ref_per_token_logps"], sampled, atol=1e-5)
    assert torch.all(batch["logps"][:, 1] == 0.0)
    # each move carries its episode's advantage (TRL's: the reward against its group's, over the group's std);
    # the trainer shuffles rows, so compare as multisets
    rewards = torch.tensor([float(r.reward or 0.0) for r in rows]).view(2, 4)
    advantages = (rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)
    expected = advantages.flatten().repeat_interleave(4)
    assert torch.allclose((batch["advantages"] * weights).sum(), expected.sum(), atol=1e-4)
    if len(distinct) == turns:
        assert torch.allclose(batch["advantages"].sort().values, expected.sort().values, atol=1e-4)


@pytest.mark.timeout(300)
def test_merged_identical_turns_give_the_loss_and_gradient_of_every_turn(tmp_path: Path) -> None:
    """Identical moves (a seed's games share their first boards) train as one weighted row: TRL's own loss over
    the merged batch equals it over one row per move, value and gradient."""
    import torch

    seen, rows, turns = _step(tmp_path, "merged", "current", turn_rows=True, compare=True)
    merged, plain = seen[0]["compare"]
    assert merged["rows"] < plain["rows"] == turns  # catch's first board is every game's
    assert torch.allclose(merged["loss"], plain["loss"], atol=1e-6), (merged["loss"], plain["loss"])
    for a, b in zip(merged["grads"], plain["grads"], strict=True):
        assert torch.allclose(a, b, atol=1e-6), (a - b).abs().max()


@pytest.mark.timeout(300)
def test_the_joined_layout_trains_only_the_first_turn_of_a_fresh_prompt_each_turn(tmp_path: Path) -> None:
    """Why ``turn_rows`` exists: episodes whose prompts restart each turn cannot be joined into one completion."""
    seen, _, turns = _step(tmp_path, "joined", "current", turn_rows=False)
    assert turns == 8 * 4
    trained = seen[0]["completion_mask"] * seen[0]["tool_mask"]
    assert int(trained.sum()) == 8 * 2  # one move (and its end token) per game, of four
