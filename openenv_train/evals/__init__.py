"""Inspect AI tasks, scorers and model provider (guide: docs/guides/evals.md).

- :func:`replay_task`: a trace dataset as Inspect Samples, scored by a rubric (no model is called);
- :func:`live_task`: an Inspect solver (:func:`env_agent`) plays a catalog env through our client (``epochs``
  reduced to pass@k by :func:`sample_epochs`);
- :func:`rubric_scorer`: a rubric as a scorer, one metric group (mean, stderr) per component;
- the ``openenv`` model API (``--model openenv/<tiny|path|url>``), registered by the ``inspect_ai`` entry
  point ``openenv_train.evals._registry``;
- ``openenv_train/evals/tasks.py``: the task file for ``inspect eval``.

Needs ``inspect-ai``; ``import openenv_train`` does not import this package.
"""

from ._live import ACTION_FIELDS, env_agent, live_task, sample_epochs, scripted_model
from ._registry import openenv
from ._replay import replay, replay_task, trace_samples
from ._scorer import ROW_KEY, rubric_scorer, score_value

__all__ = [
    "ACTION_FIELDS",
    "ROW_KEY",
    "env_agent",
    "live_task",
    "openenv",
    "replay",
    "replay_task",
    "rubric_scorer",
    "sample_epochs",
    "score_value",
    "scripted_model",
    "trace_samples",
]
