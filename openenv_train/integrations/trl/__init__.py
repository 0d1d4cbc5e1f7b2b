"""TRL adapters: ``rollout_func`` for GRPOTrainer, reward functions from rubrics, SFT datasets from traces.

- :func:`make_rollout_func`: episodes played with the trainer's live model, every turn captured; returns
  ``prompt_ids``, ``completion_ids``, ``logprobs``, ``env_mask`` and ``reward_<name>``/``trace_row`` fields.
- :func:`rubric_rewards`, :func:`field_reward`: reward functions (and weights) for ``GRPOTrainer``.
- :func:`grpo_trainer_class`: ``GRPOTrainer`` whose loss uses the logprobs of the distribution the rollouts were
  sampled from (the decoding constraint's mask; the captured logprobs as the importance ratio's old policy), and
  optionally turn-level credit from a reward per model turn (:func:`turn_advantages`, :func:`branch_advantages`),
  or each model turn trained as a row of its own under its own prompt (``make_rollout_func(turn_rows=True)``).
- :func:`make_environment_factory`: a class for ``GRPOTrainer(environment_factory=...)`` with the env's tools.
- :func:`traces_to_sft_dataset`: a ``messages`` dataset for ``SFTTrainer``.

Importing this package does not import trl, torch or transformers.
"""

from ._allowed import AllowedTokens, constrained_positions
from ._constrained import CREDITS, grpo_trainer_class, masked_logprobs
from ._env_factory import EnvTools, make_environment_factory
from ._rewards import field_reward, rubric_rewards
from ._rollout import PoolFactory, TrlRolloutFunc, default_task, make_rollout_func, rollout_fields
from ._sft import traces_to_sft_dataset
from ._tools import ToolSchemaError, make_tool_method
from ._turn_credit import TurnCredit, TurnRewards, branch_advantages, turn_advantages, turn_credit
from ._turn_rows import TrainedTurns, TurnRow, merge_turns, turn_batch, turn_rows

__all__ = [
    "CREDITS",
    "AllowedTokens",
    "EnvTools",
    "PoolFactory",
    "ToolSchemaError",
    "TrlRolloutFunc",
    "default_task",
    "field_reward",
    "make_environment_factory",
    "make_rollout_func",
    "make_tool_method",
    "rollout_fields",
    "rubric_rewards",
    "constrained_positions",
    "grpo_trainer_class",
    "masked_logprobs",
    "traces_to_sft_dataset",
    "TrainedTurns",
    "TurnCredit",
    "TurnRewards",
    "TurnRow",
    "branch_advantages",
    "turn_advantages",
    "turn_credit",
    "merge_turns",
    "turn_batch",
    "turn_rows",
]
