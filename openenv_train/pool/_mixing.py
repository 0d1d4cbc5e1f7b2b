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
        max_tokens: completion tokens per model call of its episodes, sent as each request's ``max_tokens``
            (an endpoint that fixes its own, such as a trainer's, must let the request's stand: the GRPO recipe's
            does in a mix); None: the endpoint's.
        request: more fields of each model request of its episodes (e.g. a decoding constraint,
            ``{"guided_regex": "-?[0-9]+"}``), under the agent's own.
        agent: the agent loop that plays its episodes; None: the pool's.
        sandbox: run its env servers in the OS sandbox; None: the pool config's (an env that sandboxes its own
            work, such as a Harbor task folder's, says False: a sandbox cannot nest in another).
    """

    name: str
    env: str | list[str]
    weight: float = 1.0
    options: Mapping[str, Any] = field(default_factory=dict)
    max_turns: int | None = None
    max_tokens: int | None = None
    request: Mapping[str, Any] = field(default_factory=dict)
    agent: Any = None
    sandbox: bool | None = None

    def __post_init__(self) -> None:
        if not self.weight > 0:
            raise ValueError(f"env {self.name!r} of the mix: weight must be > 0, got {self.weight}")
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int)
                                            or self.max_tokens < 1):
            raise ValueError(f"env {self.name!r} of the mix: max_tokens must be an integer >= 1 or None, got "
                             f"{self.max_tokens!r}")

    def request_fields(self) -> dict[str, Any]:
        """What its episodes add to each model request: ``request`` and ``max_tokens``.

        >>> MixEnv("a", "catch", max_tokens=8, request={"guided_regex": "[0-2]"}).request_fields()
        {'guided_regex': '[0-2]', 'max_tokens': 8}
        """
        return {**self.request, **({"max_tokens": self.max_tokens} if self.max_tokens is not None else {})}


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
