"""Oumi registration module for the Wordle GRPO example: list this file's path in ``OUMI_EXTRA_DEPS_FILE``.

Oumi imports it before it reads its registry; it registers the rollout function ``openenv_wordle`` and the reward
function ``openenv_wordle_env`` that ``configs/oumi/grpo_wordle.yaml`` names. Traces go to ``runs/oumi/traces``
(or ``$OPENENV_OUMI_TRACES``).
"""

import os

from openenv_train.integrations.oumi import register_oumi
from openenv_train.pool import PoolConfig

register_oumi("wordle", name="openenv_wordle", trace_dir=os.environ.get("OPENENV_OUMI_TRACES", "runs/oumi/traces"),
              config=PoolConfig(num_actors=1, max_turns=2, run_id="oumi"), per_turn_tokens=8)
