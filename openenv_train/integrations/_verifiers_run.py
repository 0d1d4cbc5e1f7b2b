"""The verifiers ``Env.run`` of :mod:`openenv_train.integrations.verifiers`: one env server per run, our clients.

Nothing here imports verifiers: the task and agents it is handed are verifiers' own objects, used by their
documented v1 surface (``agents.player.interaction(task)``, ``interaction.turn``, ``trace.record_reward``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..client import Endpoint, GenericEnvClient, MCPToolClient
from ..launch import LocalProcessProvider
from ..pool import is_url

__all__ = ["OpenEnvTrainRunner", "tool_preamble"]


def tool_preamble(tools: list[Any]) -> str:
    """The instructions an MCP env's first user turn starts with: how to call a tool, and the tools."""
    listed = [{"name": t.name, "description": t.description or "", "parameters": t.input_schema or {}} for t in tools]
    return ('Call one tool per reply, as one JSON object {"tool": NAME, "arguments": {...}}. The tools: '
            + json.dumps(listed, default=str))


class OpenEnvTrainRunner:
    """Starts a server per env (once, on first use; a URL is used as it is) and plays verifiers tasks on it."""

    def __init__(self) -> None:
        self.providers: dict[str, LocalProcessProvider] = {}
        self.endpoints: dict[str, Endpoint] = {}
        self._lock = asyncio.Lock()

    async def endpoint(self, env: str) -> Endpoint:
        """Where ``env``'s server listens (started on first use)."""
        async with self._lock:
            if env not in self.endpoints:
                if is_url(env):
                    self.endpoints[env] = Endpoint(env)
                else:
                    provider = self.providers[env] = LocalProcessProvider(env, max_sessions=256)
                    self.endpoints[env] = await provider.start()
            return self.endpoints[env]

    async def client(self, env: str, kind: str) -> Any:
        """A connected client of ``env`` (MCP tool client for ``kind="tool"``)."""
        endpoint = await self.endpoint(env)
        cls = MCPToolClient if kind == "tool" else GenericEnvClient
        return await cls(endpoint.base_url, uds=endpoint.uds).connect()

    async def run(self, task: Any, agents: Any) -> None:
        """One verifiers episode: ``task.data`` names the env, seed, reset options, action kind and turn limit."""
        from .verifiers import play_episode

        data = task.data
        client = await self.client(data.env, data.action)
        try:
            preamble = tool_preamble(await client.list_tools()) if data.action == "tool" else None
            async with agents.player.interaction(task) as interaction:
                first = True

                async def reply(text: str) -> tuple[str, bool]:
                    nonlocal first
                    message = f"{preamble}\n\n{text}" if first and preamble else text
                    first = False
                    segment = await interaction.turn(message)
                    return segment.last_reply, bool(segment.terminated)

                episode = await play_episode(client, reply, kind=data.action, seed=data.seed, reset=data.reset,
                                             max_turns=data.max_turns)
        finally:
            await client.close()
        trace = interaction.trace  # recorded once the exchange is over, as verifiers' own tasksets do
        trace.record_reward("env_reward", episode.reward)
        for name, value in episode.components.items():
            trace.record_reward(name, value, 0.0)
        trace.record_metric("turns", float(episode.turns))
        trace.record_metric("done", float(episode.done))

    async def aclose(self) -> None:
        """Stop the servers this runner started."""
        providers, self.providers, self.endpoints = list(self.providers.values()), {}, {}
        for provider in providers:
            await provider.stop(grace_s=1.0)
