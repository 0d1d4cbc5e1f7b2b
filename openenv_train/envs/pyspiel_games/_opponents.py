"""Opponent policies over a pyspiel state: seeded uniform random, or MCTS with random rollouts."""

from __future__ import annotations

import random
from typing import Any, Literal

__all__ = ["Opponent", "SpielOpponent"]

SpielOpponent = Literal["random", "mcts"]


class Opponent:
    """Chooses the moves of every player but the agent; seeded, so the same seed plays the same moves."""

    def __init__(self, kind: SpielOpponent, game: Any, seed: int, simulations: int) -> None:
        self.kind = kind
        self._rng = random.Random(f"{seed}/opponent")
        self._bot: Any = None
        if kind == "mcts":
            import numpy as np
            from open_spiel.python.algorithms import mcts

            evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=np.random.RandomState(seed % 2**32))
            self._bot = mcts.MCTSBot(game, uct_c=2.0, max_simulations=simulations, evaluator=evaluator,
                                     random_state=np.random.RandomState((seed + 1) % 2**32))

    def action(self, state: Any) -> int:
        """The move of the player to move in ``state``."""
        if self._bot is not None:
            return int(self._bot.step(state))
        return int(self._rng.choice(state.legal_actions()))
