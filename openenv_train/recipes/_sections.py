"""Config sections the recipes share: where a run is written, and the rollout pool's defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..pool import PoolConfig

__all__ = ["OutputSection", "recipe_pool"]


@dataclass
class OutputSection:
    """Where the run is written: ``<dir>/<name>/``."""

    dir: str = "runs"
    """Folder of the run folders."""
    name: str | None = None
    """Run folder name; null: the recipe's own (``grpo-wordle``, ``grpo-<env>``)."""


def recipe_pool(**fields: Any) -> PoolConfig:
    """The ``pool`` section's defaults: a :class:`~openenv_train.pool.PoolConfig` with the recipes' own values.

    2 actors x 50 sessions play a whole 100-secret Wordle evaluation in one wave; an episode gets 120 s. Every other
    field keeps PoolConfig's default; ``fields`` replace any of them.
    """
    return PoolConfig(**{"num_actors": 2, "sessions_per_actor": 50, "episode_timeout_s": 120.0, **fields})
