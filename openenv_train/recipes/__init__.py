"""Runnable end-to-end jobs: ``python -m openenv_train.recipes.<name>`` (grpo_wordle, grpo, sft_from_traces, eval,
collect, scripted_rollouts); the Wordle recipe's library is :mod:`openenv_train.recipes.wordle`.

The bootstrap statistics of the recipes' summaries (and pass@k of several samples per task) are exported here for
scripts that compare runs.
"""

import os

from ._passk import pass_at_k, pass_at_k_summary, report_ks, task_pass_at_k
from ._stats import bootstrap_ci, paired_difference

__all__ = ["bootstrap_ci", "paired_difference", "pass_at_k", "pass_at_k_summary", "report_ks", "task_pass_at_k"]

# Recipes run offline: TRL imports weave when it is installed (openpipe-art brings it), and weave reports
# errors to its Sentry unless told not to.
os.environ.setdefault("WANDB_ERROR_REPORTING", "false")
