"""Inspect task file: ``inspect eval openenv_train/evals/tasks.py@openenv_live --model openenv/tiny``.

Importing it registers the ``openenv`` model API too (as the ``inspect_ai`` entry point does).
"""

from __future__ import annotations

from inspect_ai import Task, task

from openenv_train.evals import _registry  # noqa: F401  (registers --model openenv/...)
from openenv_train.evals._live import live_task
from openenv_train.evals._replay import replay_task

__all__ = ["openenv_live", "openenv_replay"]


@task
def openenv_replay(dataset: str, rubric: str = "wordle") -> Task:
    """Score a trace dataset (run folder or scored version) with a rubric; no model is called."""
    return replay_task(dataset, rubric)


@task
def openenv_live(env: str = "wordle", rubric: str = "wordle", episodes: int = 2, seed: int = 0, max_turns: int = 8,
                 env_url: str | None = None, trace_dir: str | None = None, replies: list[str] | None = None,
                 epochs: int = 1, success_threshold: float = 1.0) -> Task:
    """Play ``episodes`` episodes of a catalog env (or ``env_url``) with the eval's model; score with a rubric.
    ``epochs`` > 1 plays each that many times and reports pass@1 and pass@epochs (``-T epochs=8``)."""
    return live_task(env, rubric, episodes, seed, max_turns, env_url, trace_dir, replies=replies, epochs=epochs,
                     success_threshold=success_threshold)
