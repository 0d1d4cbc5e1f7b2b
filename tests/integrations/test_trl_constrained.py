"""GRPO under a decoding constraint learns from the distribution it sampled: the trainer's logprobs are the masked
ones the rollout captured (the unmasked ones TRL computes by itself are not)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openenv_train.integrations.trl import field_reward, grpo_trainer_class, make_rollout_func, masked_logprobs
from openenv_train.pool import PoolConfig
from openenv_train.recipes.wordle import WordleAgent, game_metrics, render_turn

pytest.importorskip("trl", reason="trl is not installed")


def test_masked_logprobs_renormalise_over_the_allowed_tokens() -> None:
    import torch

    logits = torch.tensor([[[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5]]])
    allowed = torch.tensor([[[True, False, True, False], [False, False, True, False]]])
    logp, entropy = masked_logprobs(logits, torch.tensor([[2, 2]]), allowed, entropy=True)
    assert torch.allclose(logp[0, 0], torch.log_softmax(torch.tensor([1.0, 3.0]), -1)[1])
    assert logp[0, 1] == 0.0  # a forced token: probability 1, no gradient
    assert entropy is not None and entropy[0, 1] == 0.0 and entropy[0, 0] > 0


def test_an_entropy_bonus_under_the_mask_has_a_finite_gradient() -> None:
    import torch

    logits = torch.tensor([[[1.0, 2.0, 3.0, 4.0]]], requires_grad=True)
    allowed = torch.tensor([[[True, False, True, False]]])
    _, entropy = masked_logprobs(logits, torch.tensor([[2]]), allowed, entropy=True)
    assert entropy is not None
    entropy.sum().backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    assert logits.grad[0, 0, 1] == 0.0 and logits.grad[0, 0, 0] > 0  # forbidden: none; the less likely allowed token: up


def _step(tmp_path: Path, trainer_class: Any, name: str, beta: float = 0.0,
          order: str = "given") -> list[tuple[Any, Any, Any, Any, Any]]:
    """One GRPO step on constrained Wordle games (guesses written in ``order``); per loss call (trainer logprobs,
    sampled logprobs, loss mask, allowed mask, reference logprobs or None)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny", tokenizer="char", init_range=0.2)
    rollout = make_rollout_func("wordle", agent=WordleAgent(constrained=True, order=order),
                                config=PoolConfig(num_actors=1, max_turns=3, run_id=name),
                                per_turn_tokens=8 if order == "given" else 11)
    seen: list[tuple[Any, Any, Any, Any, Any]] = []

    class Recording(trainer_class):  # type: ignore[misc, valid-type]
        def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
            prompt, completion = inputs["prompt_ids"], inputs["completion_ids"]
            import torch

            ids = torch.cat([prompt, completion], 1)
            att = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
            self._allowed = inputs.get("allowed_mask")
            logps, _, _ = self._get_per_token_logps_and_entropies(model, ids, att, completion.size(1))
            mask = inputs["completion_mask"] * inputs["tool_mask"]
            seen.append((logps.detach(), inputs["sampling_per_token_logps"], mask, inputs.get("allowed_mask"),
                         inputs.get("ref_per_token_logps")))
            return super()._compute_loss(model, inputs)

    config = GRPOConfig(output_dir=str(tmp_path / name), per_device_train_batch_size=4, num_generations=2,
                        max_completion_length=48 if order == "given" else 80, max_steps=1, bf16=False, report_to=[],
                        logging_steps=1, use_cpu=True, save_strategy="no", disable_tqdm=True, beta=beta, learning_rate=1e-3)
    dataset = Dataset.from_list([{"prompt": '{"task": "crane"}'}, {"prompt": '{"task": "moist"}'}])
    trainer = Recording(model=AutoModelForCausalLM.from_pretrained(path), processing_class=AutoTokenizer.from_pretrained(path),
                        reward_funcs=[field_reward("env")], args=config, train_dataset=dataset, rollout_func=rollout)
    try:
        trainer.train()
    finally:
        rollout.close()
    return seen


@pytest.mark.timeout(300)
@pytest.mark.parametrize("order", ["given", "any"])
def test_the_trainer_scores_tokens_under_the_mask_they_were_sampled_with(tmp_path: Path, order: str) -> None:
    """Guesses written as words (a choice trie) or letters in any order (``guided_choice_order: any``)."""
    import torch
    from trl import GRPOTrainer

    ours = _step(tmp_path, grpo_trainer_class(), "masked", beta=0.1, order=order)
    assert ours, "the trainer computed no loss"
    for logps, sampled, mask, allowed, ref in ours:
        assert allowed is not None
        on = mask.bool()
        assert on.sum() > 20
        # before the first optimiser step the trainer's policy is the sampling policy: the same logprobs
        assert torch.allclose(logps[on], sampled[on], atol=1e-5), (logps[on] - sampled[on]).abs().max()
        # and so is the reference of the KL term, under the same mask (unmasked, its KL would not start at 0)
        assert ref is not None and torch.allclose(ref[on], sampled[on], atol=1e-5), (ref[on] - sampled[on]).abs().max()
        forced = allowed.sum(-1) == 1
        assert (forced & on).any() and torch.all(logps[forced & on] == 0.0)
    if order == "any":
        return
    # TRL's own log-softmax over the whole vocabulary is another distribution (the bug this trainer fixes)
    plain = _step(tmp_path, GRPOTrainer, "plain")
    gaps = [(logps - sampled)[mask.bool()].abs().max() for logps, sampled, mask, _, _ in plain]
    assert max(gaps) > 0.1


class _OneOpening:
    """Two turns: the forced opening ``pious``, then one of three words; only the secret wins."""

    async def __call__(self, ctx: Any) -> None:
        result = await ctx.reset()
        messages: list[dict[str, Any]] = []
        for choices in (["pious"], ["crane", "moist", "lemon"]):
            if result.done:
                return
            messages.append({"role": "user", "content": render_turn(result.observation)})
            reply = await ctx.chat(messages, extra={"guided_choice": choices})
            text = str(reply.message.get("content") or "")
            messages.append({"role": "assistant", "content": text})
            result = await ctx.step({"message": text})


STEPS, LR = 40, 5e-4


@pytest.mark.timeout(600)
def test_grpo_learns_a_tiny_task_it_must_learn(tmp_path: Path) -> None:
    """Two secrets and one opening: after the opening's marks the right word is known, and an untrained model picks
    it a third of the time. A fixed number of GRPO steps must take the rollouts' win rate well above that (it rose
    to 0.97 in three runs; TRL's plain loss passes this too: the logprob test above is what catches that bug)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny", tokenizer="char", init_range=0.02)
    rollout = make_rollout_func("wordle", agent=_OneOpening(), per_turn_tokens=8,
                                config=PoolConfig(num_actors=1, max_turns=2, run_id="tiny-task"))
    config = GRPOConfig(output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=32, num_generations=8,
                        max_completion_length=64, max_steps=STEPS, bf16=False, report_to=[], logging_steps=1,
                        use_cpu=True, save_strategy="no", disable_tqdm=True, beta=0.0, learning_rate=LR,
                        lr_scheduler_type="constant", seed=0)
    dataset = Dataset.from_list([{"prompt": '{"task": "crane"}'}, {"prompt": '{"task": "moist"}'}] * 2 * STEPS)
    wins: list[float] = []

    def played(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        fields = rollout(prompts, trainer)
        wins.append(sum(game_metrics(row)["win"] for row in rollout.last_rows) / len(rollout.last_rows))
        return fields

    trainer = grpo_trainer_class()(model=AutoModelForCausalLM.from_pretrained(path),
                                   processing_class=AutoTokenizer.from_pretrained(path), args=config,
                                   reward_funcs=[field_reward("env")], train_dataset=dataset, rollout_func=played,
                                   allowed_from=rollout)
    try:
        trainer.train()
    finally:
        rollout.close()
    assert len(wins) == STEPS
    # the first step is played before any update: about a third of the games won
    assert wins[0] < 0.6 and sum(wins[-6:]) / 6 > 0.8, wins
