"""SkyRL: trace rows as SkyRL's generator output (pure data; SkyRL itself is not imported).

Each row becomes one trajectory: ``prompt_token_ids`` (the first turn's prompt), ``response_ids`` (model turns
and the env tokens between them), ``loss_masks`` (1 model, 0 env), ``rollout_logprobs`` (0.0 on env tokens),
``rewards`` (the episode reward on the last response token, SkyRL's per-token form, or one float per
trajectory), ``stop_reasons`` (the last turn's finish reason) and ``trajectory_ids``
(``{"instance_id": group_id, "repetition_id": n}``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ...trace import TraceRow
from .._flatten import flatten_turns

__all__ = ["to_skyrl_generator_output"]


def _stop_reason(row: TraceRow) -> str:
    if not row.trace.turns:
        return "error" if not row.ok else "stop"
    choices = row.trace.turns[-1].response.get("choices") or [{}]
    return str(choices[0].get("finish_reason") or "stop")


def to_skyrl_generator_output(rows: Sequence[TraceRow], *, reward_key: str | None = None,
                              rewards: Literal["token", "trajectory"] = "token") -> dict[str, Any]:
    """SkyRL's ``GeneratorOutput`` fields for ``rows`` (episodes without a model turn are dropped).

    Args:
        rows: trace rows with captured token ids (``rollout_type="train"``).
        reward_key: a component of ``row.rewards`` to use instead of ``row.reward`` (None counts as 0.0).
        rewards: ``"token"``: a list per trajectory, the reward on its last token; ``"trajectory"``: one float.
    """
    out: dict[str, list[Any]] = {k: [] for k in ("prompt_token_ids", "response_ids", "rewards", "loss_masks",
                                                 "rollout_logprobs", "stop_reasons", "trajectory_ids")}
    repetition: dict[str, int] = {}
    for row in rows:
        flat = flatten_turns(row.trace.turns)
        if not flat.completion_ids:
            continue
        value = row.rewards.get(reward_key) if reward_key is not None else row.reward
        reward = float(value or 0.0)
        instance = row.group_id or row.episode_id
        out["prompt_token_ids"].append(flat.prompt_ids)
        out["response_ids"].append(flat.completion_ids)
        out["loss_masks"].append(flat.env_mask)
        out["rollout_logprobs"].append(flat.logprobs)
        out["rewards"].append([0.0] * (len(flat.completion_ids) - 1) + [reward] if rewards == "token" else reward)
        out["stop_reasons"].append(_stop_reason(row))
        out["trajectory_ids"].append({"instance_id": instance, "repetition_id": repetition.get(instance, 0)})
        repetition[instance] = repetition.get(instance, 0) + 1
    return out
