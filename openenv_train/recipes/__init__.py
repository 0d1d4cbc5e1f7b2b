"""Runnable end-to-end jobs: ``python -m openenv_train.recipes.<name>`` (grpo_wordle, grpo, sft_from_traces, eval,
collect, scripted_rollouts)."""

import os

# Recipes run offline: TRL imports weave when it is installed (openpipe-art brings it), and weave reports
# errors to its Sentry unless told not to.
os.environ.setdefault("WANDB_ERROR_REPORTING", "false")
