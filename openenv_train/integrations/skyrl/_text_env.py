"""OpenEnvTextEnv: any env of ours as a SkyRL ``BaseTextEnv`` (text in, chat messages out). Imports skyrl_gym.

Without skyrl-gym the module still imports (doctest collection, ``hasattr`` probes); building the env then
raises an ImportError with the install line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

    _MISSING: ImportError | None = None
except ImportError as exc:  # pragma: no cover - exercised only where skyrl-gym is absent
    BaseTextEnv, BaseTextEnvStepOutput = object, dict  # type: ignore[assignment,misc]
    _MISSING = exc

from ...client import GenericEnvClient, MCPToolClient, SyncEnvClient
from ...core import CallToolObservation, ServerError
from ...pool import render_observation
from ._actions import ActionParseError
from ._servers import shared_server

__all__ = ["OpenEnvTextEnv"]

Conversation = list[dict[str, str]]


class OpenEnvTextEnv(BaseTextEnv):  # type: ignore[misc]
    """One episode of one of our envs per instance, over its own session on a shared server.

    ``skyrl_gym.make(id, env_config=..., extras=...)`` builds it (SkyRL passes a dataset row's extra fields as
    ``extras``). Reset options come from ``extras["reset"]`` (a mapping, or its JSON text), else from ``extras["task"]`` /
    ``extras["seed"]``; ``extras["max_turns"]`` overrides ``max_turns``.

    Args:
        env_config: SkyRL's env config (unused).
        extras: the dataset row's extras.
        env: catalog name, ``module:Class`` or server URL.
        mode: action format (``"auto"``: MCP if the env lists tools, text for a single string field, else JSON).
        text_field: with the text format, the action field that receives the reply.
        max_turns: steps after which the episode is cut (``metadata["truncated"]``).
        max_sessions: session cap of a server started here.
        render: observation -> text for the model.
        instructions: add the action format's instructions to the first observation.
    """

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None, *, env: str,
                 mode: Literal["auto", "text", "json", "mcp"] = "auto", text_field: str | None = None,
                 max_turns: int = 16, max_sessions: int = 256, render: Callable[[Any], str] = render_observation,
                 instructions: bool = True) -> None:
        if _MISSING is not None:
            raise ImportError("OpenEnvTextEnv needs SkyRL's gym: pip install 'skyrl-gym>=0.4,<0.5'") from _MISSING
        super().__init__()
        extras = dict(extras or {})
        self.env_name = env
        self.server = shared_server(env, mode=mode, text_field=text_field, max_sessions=max_sessions)
        self.format = self.server.format
        self.max_turns = int(extras.get("max_turns", max_turns))
        reset = extras.get("reset")
        if isinstance(reset, str):  # a dataset column stored as JSON text
            reset = json.loads(reset)
        self.reset_options: dict[str, Any] = dict(reset) if isinstance(reset, Mapping) else {
            k: extras[k] for k in ("task", "seed") if extras.get(k) is not None}
        self.render, self.instructions = render, instructions
        kind = MCPToolClient if self.format.kind == "mcp" else GenericEnvClient
        endpoint = self.server.endpoint
        self.client: SyncEnvClient | None = kind(endpoint.base_url, uds=endpoint.uds).sync().connect()
        self.rewards: list[float] = []
        self.done = self.env_done = False

    def init(self, prompt: Conversation) -> tuple[Conversation, dict[str, Any]]:
        """Reset the env; the prompt plus the first observation (and the format) as a user message."""
        result = self._client().reset(**self.reset_options)
        self.turns, self.rewards, self.done = 0, [], bool(result.done)
        self.env_done = self.done
        parts = [self.render(result.observation) if self.format.kind != "mcp" else "",
                 self.format.instructions() if self.instructions else ""]
        text = "\n\n".join(p for p in parts if p)
        messages = list(prompt or []) + ([{"role": "user", "content": text}] if text else [])
        return messages, {"env": self.env_name, "format": self.format.kind, "reset": self.reset_options}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Parse ``action`` (the model's reply), send it, and return the env's answer as a user message.

        A reply that is not an action, or that the env rejects, costs a turn and earns 0.0; the observation
        says what was wrong and how to write an action.
        """
        if self.done:
            raise RuntimeError("the episode is over; call init() to start another")
        self.turns += 1
        reward, texts = 0.0, []
        metadata: dict[str, Any] = {"turn": self.turns}
        try:
            actions = self.format.parse(action)
        except ActionParseError as exc:
            texts.append(f"Your reply is not a valid action: {exc}. {self.format.instructions()}")
            metadata["invalid_action"] = str(exc)
            actions = []
        for payload in actions:
            try:
                result = self._client().step(payload)
            except ServerError as exc:
                if exc.code != "VALIDATION_ERROR":
                    raise
                texts.append(f"The env rejected the action: {exc.message}. {self.format.instructions()}")
                metadata["invalid_action"] = exc.message
                break
            reward += float(result.reward or 0.0)
            self.done = bool(result.done)
            texts.append(self._text(result.observation))
            if self.done:
                break
        self.rewards.append(reward)
        truncated = not self.done and self.turns >= self.max_turns
        metadata.update(env_done=self.done, truncated=truncated)
        self.env_done = self.done
        finished = self.done = self.done or truncated
        observations = [] if finished else [{"role": "user", "content": "\n".join(texts)}]
        metadata["observation"] = "\n".join(texts)
        return BaseTextEnvStepOutput(observations=observations, reward=reward, done=finished, metadata=metadata)

    def _client(self) -> SyncEnvClient:
        if self.client is None:
            raise RuntimeError("this env was closed; make a new one with skyrl_gym.make")
        return self.client

    def _text(self, observation: Any) -> str:
        if isinstance(observation, CallToolObservation):
            if observation.error is not None:
                return f"Tool error: {observation.error.message}"
            data = observation.result
            data = data.get("data", data) if isinstance(data, dict) else data
            return data if isinstance(data, str) else json.dumps(data, default=str)
        return self.render(observation)

    def get_metrics(self) -> dict[str, Any]:
        """Turns, summed reward and whether the env ended the episode."""
        return {"turns": self.turns, "reward": sum(self.rewards), "env_done": float(self.env_done)}

    def close(self) -> None:
        """Close this instance's session (the shared server keeps running)."""
        client, self.client = self.client, None
        if client is not None:
            client.close()
