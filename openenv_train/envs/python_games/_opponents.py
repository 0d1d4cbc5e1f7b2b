"""Opponent policies: how the env picks the moves of the players the agent does not control."""

from __future__ import annotations

import random
from typing import Literal, get_args

from ._game import GameState

__all__ = ["OPPONENTS", "OpponentName", "opponent_action"]

OpponentName = Literal["random", "first", "last", "heuristic"]
OPPONENTS: tuple[str, ...] = get_args(OpponentName)


def opponent_action(policy: str, state: GameState, rng: random.Random) -> int:
    """The move ``policy`` plays for the player to move in ``state``.

    Args:
        policy: ``random`` (uniform over legal actions, drawn from ``rng``), ``first`` or
            ``last`` (lowest or highest legal id), or ``heuristic`` (the game's own rule).
        state: A state at a player node.
        rng: The episode's opponent random stream (seeded from the reset seed).

    Returns:
        A legal action id.
    """
    legal = state.legal_actions()
    if policy == "first":
        return legal[0]
    if policy == "last":
        return legal[-1]
    if policy == "heuristic":
        return state.heuristic_action(rng)
    return rng.choice(legal)
