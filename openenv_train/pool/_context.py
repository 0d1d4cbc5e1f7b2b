"""EpisodeContext: what an agent loop drives (env, policy) and what it records (steps, timings, limits)."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

from ..core import OpenEnvTrainError, StepResult
from ._episode import EpisodeSpec
from ._policy import ChatPolicy, ModelReply

__all__ = ["EpisodeContext", "Truncated"]


class Truncated(OpenEnvTrainError):
    """Raised inside an agent loop when a limit (max turns, max tokens) ends the episode."""


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


class EpisodeContext:
    """One episode attempt as an agent loop sees it.

    Attributes:
        spec: the episode's task, seed and ids.
        env: the env client (a :class:`~openenv_train.client.GenericEnvClient` or ``MCPToolClient``).
        policy: a :class:`ChatPolicy` (model endpoint) or a plain callable ``policy(observation) -> action``.
        capture_session: the capture session id model calls are recorded under (None without capture).
        steps: env steps so far, as ``EnvStep`` dicts.
        done, turns, completion_tokens: the episode's progress.
    """

    def __init__(self, spec: EpisodeSpec, env: Any, policy: ChatPolicy | Callable[..., Any], *,
                 capture_session: str | None, max_turns: int, max_tokens: int | None) -> None:
        self.spec = spec
        self.env = env
        self.policy = policy
        self.capture_session = capture_session
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.steps: list[dict[str, Any]] = []
        self.done = False
        self.truncated = False
        self.turns = 0
        self.completion_tokens = 0
        self.timings: dict[str, float] = {"reset_s": 0.0, "env_step_s": 0.0, "model_s": 0.0}
        self.model_calls = 0
        self.observation: Any = None

    async def reset(self) -> StepResult[Any]:
        """Reset the env with the spec's task and seed."""
        start = time.perf_counter()
        result = await self.env.reset(**self.spec.reset_options())
        self.timings["reset_s"] += time.perf_counter() - start
        self.observation, self.done = result.observation, result.done
        return result  # type: ignore[no-any-return]

    async def step(self, action: Any) -> StepResult[Any]:
        """Send one action and record it as an env step."""
        start = time.perf_counter()
        result = await self.env.step(action)
        seconds = time.perf_counter() - start
        self.timings["env_step_s"] += seconds
        self.steps.append({"action": _plain(action), "observation": _plain(result.observation),
                           "reward": result.reward, "done": result.done, "seconds": seconds})
        self.observation, self.done = result.observation, result.done
        return result  # type: ignore[no-any-return]

    def take_turn(self) -> None:
        """Count one policy turn.

        Raises:
            Truncated: the turn or token budget is spent.
        """
        if self.turns >= self.max_turns:
            raise Truncated(f"max_turns={self.max_turns} reached")
        if self.max_tokens is not None and self.completion_tokens >= self.max_tokens:
            raise Truncated(f"max_tokens={self.max_tokens} reached")
        self.turns += 1

    async def act(self, observation: Any) -> Any:
        """Ask a callable policy for the action to an observation (sync or async callable)."""
        if isinstance(self.policy, ChatPolicy):
            raise TypeError("act() needs a callable policy; this pool's policy is a model endpoint: use chat()")
        self.take_turn()
        start = time.perf_counter()
        action = self.policy(observation)
        if inspect.isawaitable(action):
            action = await action
        self.timings["model_s"] += time.perf_counter() - start
        self.model_calls += 1
        return action

    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
                   extra: dict[str, Any] | None = None) -> ModelReply:
        """One call of a model policy, recorded under the episode's capture session; ``extra`` adds request
        fields (e.g. ``guided_choice``)."""
        if not isinstance(self.policy, ChatPolicy):
            raise TypeError("chat() needs a model policy (an OpenAI-compatible URL); this pool has a callable policy")
        self.take_turn()
        start = time.perf_counter()
        reply = await self.policy.chat(messages, tools=tools, session=self.capture_session, extra=extra)
        self.timings["model_s"] += time.perf_counter() - start
        self.model_calls += 1
        self.completion_tokens += reply.completion_tokens
        return reply

    def reward(self) -> float | None:
        """The episode's return: the sum of step rewards (None when no step had one)."""
        rewards = [s["reward"] for s in self.steps if s["reward"] is not None]
        return float(sum(rewards)) if rewards else None
