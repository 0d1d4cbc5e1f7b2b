"""GRPO that learns from the distribution its rollouts were sampled from: constrained decoding and captured logprobs.

A rollout turn sampled under a decoding constraint (``guided_choice``, ``guided_regex``) comes from the *masked*
distribution, softmax over the allowed tokens only; the captured logprobs are of that distribution. TRL recomputes
a plain log-softmax over the whole vocabulary, so without the mask its policy gradient is not the gradient of the
sampled policy: with a group baseline it keeps pushing probability onto tokens the constraint forbids, and tokens
the constraint forced (one legal continuation) still get gradient. :func:`grpo_trainer_class` gives a
``GRPOTrainer`` that

- recomputes each completion token's logprob under the mask it was sampled with (the masked-vocabulary policy
  gradient of constrained-decoding RL): a forced token has logprob 0 and no gradient, and at every other token
  the logprobs match the captured sampling logprobs (to float rounding while the weights have not moved);
- takes PPO's "old" logprobs from the captured sampling logprobs (as TRL's vLLM path and verl's rollout logprobs
  do), so the clipped ratio corrects for weights that moved between sampling and training (a stale rollout),
  instead of TRL's default of the current logprobs detached (a ratio of 1).

The masks come from the policy backend that answered: :meth:`~openenv_train.policy.LocalBackend.allowed_tokens`
replays each turn's constraint over its tokens. A backend that cannot tell (an upstream server) leaves the turn
unmasked, as TRL would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ._allowed import allowed_mask
from ._turn_credit import branch_advantages, turn_advantages
from ._turn_rows import turn_batch

if TYPE_CHECKING:
    import torch

__all__ = ["CREDITS", "grpo_trainer_class", "masked_logprobs"]

#: How a trainer of :func:`grpo_trainer_class` gives advantages to tokens (its ``credit`` argument).
CREDITS = ("episode", "turn", "branch")

def masked_logprobs(logits: torch.Tensor, tokens: torch.Tensor, allowed: torch.Tensor | None, *,
                    entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probabilities of ``tokens`` under ``logits`` renormalised over the ``allowed`` tokens (all when None),
    and optionally the entropy of that masked distribution.

    >>> import torch
    >>> logits = torch.tensor([[[0.0, 1.0, 2.0]]])
    >>> masked_logprobs(logits, torch.tensor([[1]]), torch.tensor([[[False, True, False]]]))[0]
    tensor([[0.]])
    """
    import torch

    logits = logits.float()
    if allowed is not None:
        logits = logits.masked_fill(~allowed, float("-inf"))
    logp = torch.log_softmax(logits, dim=-1)
    token_logp = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    if not entropy:
        return token_logp, None
    # forbidden tokens' -inf log-probabilities are zeroed, not selected away: torch.where would still send their
    # 0 * -inf = NaN into the gradient of an entropy bonus
    finite = logp.masked_fill(~torch.isfinite(logp), 0.0)
    return token_logp, -(logp.exp() * finite).sum(-1)


def grpo_trainer_class(base: type | None = None) -> type:
    """A ``GRPOTrainer`` subclass (of ``base``, default TRL's) for :func:`~openenv_train.integrations.trl.
    make_rollout_func`'s rollouts: the loss uses each token's logprob under the decoding constraint it was sampled
    with, and the captured sampling logprobs as the importance ratio's old policy (see the module docstring).

    The masks are read after each generation from ``allowed_from.last_allowed`` (a keyword argument of the
    trainer; default its ``rollout_func``, so pass the :class:`~openenv_train.integrations.trl.TrlRolloutFunc`
    when ``rollout_func`` wraps it). Its ``use_sampling_logprobs`` attribute (default True) turns the second part
    off; with ``use_vllm`` TRL's own importance-sampling correction does that part instead.

    ``credit`` (a keyword argument) says how advantages reach tokens, given the turns the rollout scored
    (``allowed_from.last_turns``, from ``make_rollout_func(turn_rewards=...)``): ``episode`` (default; TRL's, one
    per episode), ``turn`` (each turn's tokens add ``turn_reward_weight`` times the turn's group-normalised reward:
    :func:`~openenv_train.integrations.trl.turn_advantages`) or ``branch`` (each group's first episode is a
    reference, the others explored the turns with a reward: :func:`~openenv_train.integrations.trl.
    branch_advantages`).

    With ``make_rollout_func(overlap=True)`` the trainer hands the rollout each next batch before generating and
    trains on the one played meanwhile (one step off-policy; the sampling logprobs as the old policy correct for it).
    """
    if base is None:
        from trl import GRPOTrainer as base

    class ConstrainedGRPOTrainer(base):  # type: ignore[misc, valid-type]
        use_sampling_logprobs = True
        _allowed: torch.Tensor | None = None
        _generating = False
        _generation_mask: torch.Tensor | None = None

        def __init__(self, *args: Any, allowed_from: Any = None, credit: str = "episode",
                     turn_reward_weight: float = 1.0, **kwargs: Any) -> None:
            if credit not in CREDITS:
                raise ValueError(f"credit must be one of {', '.join(CREDITS)}, got {credit!r}")
            super().__init__(*args, **kwargs)
            self.allowed_from = allowed_from if allowed_from is not None else self.rollout_func
            self.credit, self.turn_reward_weight = credit, turn_reward_weight
            self.overlap = bool(getattr(self.allowed_from, "overlap", False))
            self.turn_rows = bool(getattr(self.allowed_from, "turn_rows", False))
            if self.turn_rows and credit != "episode":
                raise ValueError("turn rows (make_rollout_func(turn_rows=True)) train each turn with its episode's "
                                 "advantage: use credit='episode'")
            if self.overlap:
                if self.use_vllm:
                    raise ValueError("overlapped rollouts (make_rollout_func(overlap=True)) serve the trainer's own "
                                     "model; with use_vllm TRL syncs a vLLM server at each generation instead")
                self.add_callback(self.allowed_from.weight_writes())

        def _generate_and_score_completions(self, inputs: Any) -> dict[str, Any]:
            # the reference (and any old-policy) logprobs TRL computes here, after the rollout, are masked too
            self._generating = True
            if self.overlap:  # the batch played while the last step trained; this one plays during this step
                inputs = self.allowed_from.next_inputs(inputs)
            try:
                out = super()._generate_and_score_completions(inputs)
            finally:
                self._generating, self._generation_mask = False, None
            if self.turn_rows:
                return self._turn_layout(out)
            allowed = self._rollout_mask(out["completion_ids"].size(0), out["completion_ids"].size(1),
                                         out["completion_ids"].device)
            if allowed is not None:
                out["allowed_mask"] = allowed
            if self.credit != "episode":
                turns = getattr(self.allowed_from, "last_turns", None)
                rows, length = out["completion_ids"].shape
                if not turns or len(turns) != rows:
                    raise ValueError(f"credit={self.credit!r} needs the rollout's scored turns (make_rollout_func("
                                     "turn_rewards=...)): none came with this batch")
                out["advantages"] = (turn_advantages(out["advantages"], turns, self.num_generations, length,
                                                     self.turn_reward_weight) if self.credit == "turn" else
                                     branch_advantages(out["advantages"], turns, self.num_generations, length))
            # with vLLM, TRL corrects for the sampler with its own importance weights: not twice
            if self.use_sampling_logprobs and not self.use_vllm and out.get("sampling_per_token_logps") is not None:
                out["old_per_token_logps"] = out["sampling_per_token_logps"]
            return out

        def _turn_layout(self, out: dict[str, Any]) -> dict[str, Any]:
            """``out`` (one row per episode, TRL's advantages) re-laid as one row per model turn."""
            import torch

            turns = self.allowed_from.last_turn_rows
            if not turns:  # no model turn in the whole batch: its episode rows are all masked
                return out
            vocab = self.model.get_output_embeddings().weight.size(0)
            # identical turns (a seed's games repeat their states) train as one weighted row where the loss sums
            # per-token terms over the batch, no token is picked by its entropy's rank among rows, and the rows
            # are on policy (no overlapped rollouts, one optimiser step per batch): the same loss
            merge = (self.loss_type in ("dapo", "bnpo") and self.top_entropy_quantile == 1.0 and not self.overlap
                     and self.args.num_iterations == 1 and self.args.steps_per_generation == 1)
            batch = turn_batch(turns, out["advantages"], pad_id=int(self._tokenizer.pad_token_id or 0), vocab=vocab,
                               multiple=self.args.steps_per_generation, merge=merge)
            if self.use_sampling_logprobs or self.use_vllm:
                batch["old_per_token_logps"] = batch["sampling_per_token_logps"]
            if self.use_vllm:  # the sampler's logprobs are the ratio's old policy already: TRL's own weights would
                # correct for the sampler twice (and its episode layout's are gone)
                batch["importance_sampling_ratio"] = torch.ones_like(batch["sampling_per_token_logps"])
            if self.beta != 0.0:
                ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
                att = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
                self._allowed = batch.get("allowed_mask")
                try:
                    with torch.no_grad(), self._reference() as ref:
                        batch["ref_per_token_logps"] = self._get_per_token_logps_and_entropies(
                            ref, ids, att, batch["completion_ids"].size(1),
                            batch_size=self.args.per_device_train_batch_size)[0]
                finally:
                    self._allowed = None
            return batch

        @contextmanager
        def _reference(self) -> Iterator[Any]:
            """The reference model, as TRL takes it: its copy, or a PEFT model's base (or its ``ref`` adapter)."""
            if self.ref_model is not None:
                yield self.ref_model
                return
            from trl.trainer.utils import use_adapter

            model = self.accelerator.unwrap_model(self.model)
            with use_adapter(model, adapter_name="ref" if "ref" in model.peft_config else None):
                yield self.model

        def _rollout_mask(self, rows: int, length: int, device: torch.device) -> torch.Tensor | None:
            """The last rollout's allowed-token mask, (rows, length, vocab); None when it was unconstrained."""
            positions = getattr(self.allowed_from, "last_allowed", None)
            if not positions or not any(positions) or len(positions) != rows:
                return None
            vocab = self.model.get_output_embeddings().weight.size(0)
            return allowed_mask(positions, length, vocab, device)

        def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
            self._allowed = inputs.get("allowed_mask")
            try:
                return super()._compute_loss(model, inputs)
            finally:
                self._allowed = None

        def _get_per_token_logps_and_entropies(self, model: Any, input_ids: torch.Tensor,
                                               attention_mask: torch.Tensor, logits_to_keep: int,
                                               batch_size: int | None = None, compute_entropy: bool = False,
                                               compute_aux_loss: bool = False, **kwargs: Any) -> Any:
            allowed = self._allowed
            if allowed is None and self._generating:
                if self._generation_mask is None:
                    self._generation_mask = self._rollout_mask(input_ids.size(0), logits_to_keep, input_ids.device)
                allowed = self._generation_mask
            if allowed is None or compute_aux_loss or any(v is not None for v in kwargs.values()):
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                    compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **kwargs)
            import torch

            batch_size = batch_size or input_ids.size(0)
            logps, entropies = [], []
            for start in range(0, input_ids.size(0), batch_size):
                ids, att = input_ids[start:start + batch_size], attention_mask[start:start + batch_size]
                with self.accelerator.autocast():
                    logits = model(input_ids=ids, attention_mask=att, use_cache=False).logits
                logits = logits[:, -logits_to_keep - 1:-1] / self.temperature
                lp, ent = masked_logprobs(logits, ids[:, -logits_to_keep:], allowed[start:start + batch_size],
                                          entropy=compute_entropy)
                logps.append(lp)
                if ent is not None:
                    entropies.append(ent)
            return torch.cat(logps), torch.cat(entropies) if compute_entropy else None, None

    return ConstrainedGRPOTrainer
