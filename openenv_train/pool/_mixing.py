"""A mix of envs, as data: :class:`MixEnv` (one env of it), the task key naming an episode's env, and the
schedule that spreads envs over a run's tasks by weight. Light: no trace or Ray imports (the recipes' configs use it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import PoolError

__all__ = ["MIX_KEY", "MixEnv", "MixEnvFailed", "weighted_schedule"]

#: The task key naming an episode's env in a mix (taken out before the env's ``reset`` sees the task).
MIX_KEY = "env"


@dataclass(frozen=True)
class MixEnv:
    """One env of a mix.

    Args:
        name: its name in the mix (metrics, summaries, the tasks' ``env`` key).
        env: what :class:`RolloutPool` takes: a catalog name, ``module:Class``, a server URL or a fleet.
        weight: its share of the run's tasks (relative to the other envs' weights).
        options: reset options of each of its episodes (a task's own options win).
        max_turns: model turns per episode; None: the pool config's.
    """

    name: str
    env: str | list[str]
    weight: float = 1.0
    options: Mapping[str, Any] = field(default_factory=dict)
    max_turns: int | None = None

    def __post_init__(self) -> None:
        if not self.weight > 0:
            raise ValueError(f"env {self.name!r} of the mix: weight must be > 0, got {self.weight}")


class MixEnvFailed(PoolError):
    """An env of a mix did not start (its name and the cause in the message); the envs started are stopped."""

    def __init__(self, name: str, cause: BaseException) -> None:
        super().__init__(f"env {name!r} of the mix failed to start: {type(cause).__name__}: {cause}")
        self.env_name = name


def weighted_schedule(weights: Mapping[str, float], n: int) -> list[str]:
    """``n`` env names spread by weight: smooth weighted round robin, so every stretch of the run holds each env
    close to its share (a step of 8 tasks over three equal envs has 3, 3 and 2, rotating) and the same weights
    give the same schedule.

    >>> weighted_schedule({"catch": 1, "blackjack": 1, "tic_tac_toe": 2}, 8)
    ['tic_tac_toe', 'catch', 'blackjack', 'tic_tac_toe', 'tic_tac_toe', 'catch', 'blackjack', 'tic_tac_toe']

    Raises:
        ValueError: no env, or a weight that is not > 0.
    """
    if not weights or any(not w > 0 for w in weights.values()):
        raise ValueError(f"a mix needs at least one env, each with a weight > 0; got {dict(weights)}")
    total = float(sum(weights.values()))
    current = dict.fromkeys(weights, 0.0)
    out = []
    for _ in range(n):
        for name, weight in weights.items():
            current[name] += weight
        chosen = max(current, key=lambda k: current[k])  # first of the largest: ties keep the given order
        current[chosen] -= total
        out.append(chosen)
    return out
