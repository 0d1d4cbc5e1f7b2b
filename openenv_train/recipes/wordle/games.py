"""The Wordle recipe's episode player: :class:`~openenv_train.recipes._rollout_setup.Games` with its agent."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._rollout_setup import Games, sandbox_setting
from .chat import WordleAgent
from .config import GrpoWordleConfig

__all__ = ["WordleGames"]


class WordleGames(Games):
    """The rollout pool of the Wordle recipe: its agent and pool settings; episodes named by secret word."""

    def __init__(self, cfg: GrpoWordleConfig, out: Path) -> None:
        super().__init__(cfg.env.url or "wordle", WordleAgent(cfg.constrained, cfg.env.system_prompt, cfg.branch_plan(),
                                                             cfg.order),
                         cfg.pool_config(sandbox=sandbox_setting(cfg.env.sandbox, cfg.env.url)), out)

    def play(self, backend: Any, words: Sequence[str], prefix: str) -> list[Any]:
        """One game per secret, with ``backend`` answering; rows in the order of ``words``."""
        from ...pool import EpisodeSpec

        return self.play_specs(backend, [EpisodeSpec(f"{prefix}-{i:04d}", {"task": word}, i, f"{prefix}-{i:04d}")
                                         for i, word in enumerate(words)])
