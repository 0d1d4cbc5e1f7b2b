"""The verifiers ``Env.run`` of :mod:`openenv_train.integrations.verifiers`: one env server per run, our clients.

Nothing here imports verifiers: the task and agents it is handed are verifiers' own objects, used by their
documented v1 surface (``agents.player.interaction(task)``, ``interaction.turn``, ``trace.record_reward``,
``harness.SUPPORTS_MCP``). Native tool calls (action ``tool_call``) go through :mod:`._tools`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ...client import Endpoint, GenericEnvClient, MCPToolClient
from ...launch import LocalProcessProvider
from ...pool import is_url
from ._episode import play_episode, render
from ._errors import VerifiersError
from ._tools import ToolBridge, ToolSession

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
        self.tools = ToolBridge()
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
        """A connected client of ``env`` (MCP tool client for ``kind`` ``tool`` or ``tool_call``)."""
        endpoint = await self.endpoint(env)
        cls = MCPToolClient if kind in ("tool", "tool_call") else GenericEnvClient
        return await cls(endpoint.base_url, uds=endpoint.uds).connect()

    async def run(self, task: Any, agents: Any) -> None:
        """One verifiers episode: ``task.data`` names the env, seed, reset options, action kind and turn limit.

        Raises:
            VerifiersError: action ``tool_call`` asked for by name, and the player's harness does not support MCP.
        """
        kind = _kind(task.data, agents.player)
        client = await self.client(task.data.env, kind)
        try:
            play = self._play_tools if kind == "tool_call" else self._play_text
            trace, episode = await play(task, agents, client, kind)
        finally:
            await client.close()
        # recorded once the exchange is over, as verifiers' own tasksets do
        trace.record_reward("env_reward", episode.reward)
        for name, value in episode.components.items():
            trace.record_reward(name, value, 0.0)
        trace.record_metric("turns", float(episode.turns))
        trace.record_metric("done", float(episode.done))

    async def _play_text(self, task: Any, agents: Any, client: Any, kind: str) -> tuple[Any, Any]:
        """Each user turn an observation, each reply (text) one action."""
        data = task.data
        preamble = tool_preamble(await client.list_tools()) if kind == "tool" else None
        async with agents.player.interaction(task) as interaction:
            first = True

            async def reply(text: str) -> tuple[str, bool]:
                nonlocal first
                message = f"{preamble}\n\n{text}" if first and preamble else text
                first = False
                segment = await interaction.turn(message)
                return segment.last_reply, bool(segment.terminated)

            episode = await play_episode(client, reply, kind=kind, seed=data.seed, reset=data.reset,
                                         max_turns=data.max_turns)
        return interaction.trace, episode

    async def _play_tools(self, task: Any, agents: Any, client: Any, kind: str) -> tuple[Any, Any]:
        """The reset observation is the one user turn; the harness runs the model's tool calls on ``client``."""
        data = task.data
        result = await client.reset(**data.reset, seed=data.seed)
        session = ToolSession(client, await client.list_tools(), data.max_turns)
        session.episode.done = bool(result.done)
        key, url = await self.tools.open(session)
        try:
            async with agents.player.interaction(task.with_tools(url, session)) as interaction:
                if not result.done:
                    await interaction.turn(render(result.observation, kind))
        finally:
            self.tools.close(key)
        session.episode.turns = interaction.trace.num_turns
        return interaction.trace, session.episode

    async def aclose(self) -> None:
        """Stop the servers this runner started."""
        providers, self.providers, self.endpoints = list(self.providers.values()), {}, {}
        await self.tools.aclose()
        for provider in providers:
            await provider.stop(grace_s=1.0)


def _kind(data: Any, player: Any) -> str:
    """The action kind this rollout plays: ``tool_call`` needs a harness that takes MCP tools."""
    if data.action != "tool_call" or getattr(player.harness, "SUPPORTS_MCP", False):
        return str(data.action)
    if data.fallback:
        return str(data.fallback)
    raise VerifiersError(f"action tool_call offers the env's tools over MCP, and harness "
                         f"{player.harness.config.id!r} does not support MCP tools: run a harness that does "
                         "(--env.player.harness.id null), or pass --env.taskset.action tool (tools as JSON text)")
