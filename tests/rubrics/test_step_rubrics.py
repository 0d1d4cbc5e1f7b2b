"""Step rubrics (OpenEnv's Rubric API) and an env that scores each step with its attached rubric, served."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from openenv_train.envs.counter import CounterAction, CounterEnvironment, CounterObservation
from openenv_train.rubrics import RubricDict, RubricList, StepRubric
from openenv_train.server import RubricFailed
from tests.conftest import serve_inloop


class Value(StepRubric):
    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.scale = scale
        self.seen = 0

    def forward(self, action: Any, observation: Any) -> float:
        self.seen += 1
        if observation.value == 13:
            raise ValueError("unlucky 13")
        return observation.value * self.scale

    def on_reset(self) -> None:
        self.seen = 0


class Pick(StepRubric):
    """Scores with the child named by the action's sign."""

    def __init__(self) -> None:
        super().__init__()
        self.by_sign = RubricDict({"up": Value(1.0), "down": Value(-1.0)})
        self.extra = RubricList([Value(0.5)])

    def forward(self, action: Any, observation: Any) -> float:
        return self.by_sign["up" if action.delta >= 0 else "down"](action, observation)


class Scored(CounterEnvironment):
    """The counter, its reward from an attached rubric."""

    name = "scored_counter"

    def __init__(self) -> None:
        super().__init__()
        self.rubric = Pick()

    def reset(self, **kwargs: Any) -> CounterObservation:  # type: ignore[override]
        self._reset_rubric()
        return super().reset(**kwargs)

    def step(self, action: CounterAction) -> CounterObservation:
        obs = super().step(action)
        obs.reward = self._apply_rubric(action, obs)
        return obs


def test_children_register_and_resolve_by_path() -> None:
    rubric = Pick()
    assert [name for name, _ in rubric.named_rubrics()] == [
        "by_sign", "by_sign.up", "by_sign.down", "extra", "extra.rubric_0"]
    assert rubric.get_rubric("by_sign.down") is rubric.by_sign["down"]
    assert len(rubric.extra) == 1 and list(rubric.by_sign) == ["up", "down"] and "up" in rubric.by_sign
    with pytest.raises(KeyError, match=r"no rubric at 'by_sign.left'; the paths are \['by_sign'"):
        rubric.get_rubric("by_sign.left")
    with pytest.raises(KeyError, match=r"no rubric named 'left'; the names are \['up', 'down'\]"):
        rubric.by_sign["left"]
    with pytest.raises(NotImplementedError, match="RubricList does not score"):
        rubric.extra(None, None)


def test_scores_hooks_and_reset() -> None:
    rubric, seen = Pick(), []
    rubric.register_forward_hook(lambda r, a, o, score: seen.append(score))
    obs = CounterObservation(value=3)
    assert rubric(CounterAction(delta=-1), obs) == -3.0 and seen == [-3.0] and rubric.last_score == -3.0
    assert rubric.by_sign["down"].seen == 1  # type: ignore[attr-defined]
    rubric.reset()
    assert rubric.by_sign["down"].seen == 0  # type: ignore[attr-defined]


def test_an_async_rubric_is_awaited() -> None:
    class Later(StepRubric):
        async def forward(self, action: Any, observation: Any) -> float:
            return 0.25

    env = CounterEnvironment()
    env.rubric = Later()
    assert asyncio.run(env._apply_rubric_async(None, None)) == 0.25
    with pytest.raises(RubricFailed, match="the rubric is async"):
        env._apply_rubric(None, None)
    assert CounterEnvironment()._apply_rubric(None, None) == 0.0  # no rubric: 0.0, as OpenEnv


async def test_served_steps_are_scored_and_a_raising_rubric_keeps_the_session() -> None:
    async with serve_inloop(Scored) as server, GenericEnvClient(server.url) as env:
        await env.reset(target=100)
        assert (await env.step({"delta": 4})).reward == 4.0
        assert (await env.step({"delta": -1})).reward == -3.0
        with pytest.raises(ServerError, match=r"rubric Pick raised ValueError: unlucky 13; fix the rubric"):
            await env.step({"delta": 10})
        assert (await env.step({"delta": 1})).reward == 14.0  # the session and the server go on
