"""CounterEnvironment: add ``delta`` to a counter until it reaches ``target``."""

from __future__ import annotations

import random
import uuid

from pydantic import Field

from ...core import Action, Observation, State
from ...server import Environment


class CounterAction(Action):
    """Add ``delta`` to the counter."""

    delta: int = Field(default=1, ge=-1000, le=1000, description="Amount to add.")


class CounterObservation(Observation):
    """The counter's value and the target that ends the episode."""

    value: int = 0
    target: int = 10


class CounterState(State):
    """Episode state plus the counter's value."""

    value: int = 0
    target: int = 10


class CounterEnvironment(Environment[CounterAction, CounterObservation, CounterState]):
    """Counts up by each action's delta; reaching the target ends the episode with reward 1.

    Each step pays 1.0 when the counter lands exactly on the target, else 0.0; the
    episode ends once the counter is at or past the target. ``reset(seed=...)`` draws a
    target in [5, 15]; ``reset(target=N)`` sets it.
    """

    name = "counter"
    action_type = CounterAction
    observation_type = CounterObservation
    state_type = CounterState

    def __init__(self) -> None:
        self._state = CounterState()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              target: int | None = None) -> CounterObservation:
        if target is None:
            target = random.Random(seed).randint(5, 15) if seed is not None else 10
        self._state = CounterState(episode_id=episode_id or uuid.uuid4().hex, value=0, target=target)
        return CounterObservation(value=0, target=target, reward=0.0)

    def step(self, action: CounterAction) -> CounterObservation:
        state = self._state
        state.step_count += 1
        state.value += action.delta
        return CounterObservation(
            value=state.value,
            target=state.target,
            reward=1.0 if state.value == state.target else 0.0,
            done=state.value >= state.target,
        )

    @property
    def state(self) -> CounterState:
        return self._state
