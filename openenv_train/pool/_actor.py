"""RolloutActor: one Ray actor's worth of env sessions (its own env server, or a URL) and a policy client.

The class is plain Python; :func:`remote_actor_class` wraps it with ``ray.remote`` when a pool starts, so
this module imports without Ray. Its methods are ``async``: Ray runs them concurrently on the actor's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Callable
from typing import Any

from ..client import Endpoint, GenericEnvClient, MCPToolClient
from ..launch import LocalProcessProvider
from ._agents import AgentLoop
from ._config import PoolConfig
from ._context import EpisodeContext
from ._episode import EpisodeSpec
from ._policy import ChatPolicy
from ._rollout import Outcome, run_attempt

__all__ = ["RolloutActor", "is_url", "remote_actor_class"]


def is_url(env: str) -> bool:
    """Whether ``env`` names a running server rather than an env to start.

    >>> is_url("ws://127.0.0.1:8000"), is_url("wordle")
    (True, False)
    """
    return env.startswith(("http://", "https://", "ws://", "wss://"))


class RolloutActor:
    """Holds up to ``sessions_per_actor`` env sessions and plays the episodes it is sent.

    Args:
        env: catalog name or ``module:Class`` (a server is started for this actor), or a server URL.
        policy: an OpenAI-compatible base URL, or a callable ``policy(observation) -> action``.
        agent: the agent loop.
        config: the pool's options.
    """

    def __init__(self, env: str, policy: str | Callable[..., Any], agent: AgentLoop, config: PoolConfig) -> None:
        self.env, self.agent, self.config = env, agent, config
        self.policy: ChatPolicy | Callable[..., Any] = (
            ChatPolicy(policy, model=config.model, sampling=config.sampling, timeout_s=config.model_timeout_s)
            if isinstance(policy, str) else policy
        )
        self.provider: LocalProcessProvider | None = None
        self.endpoint: Endpoint | None = Endpoint(env) if is_url(env) else None
        self.generation = 0  # bumped when the env server is replaced; older clients are dropped
        self.server_restarts = 0
        self._idle: list[tuple[int, Any]] = []
        self._lock = asyncio.Lock()

    async def ready(self) -> dict[str, Any]:
        """Start the env server if needed; the actor's and server's process ids."""
        await self._ensure_server()
        return {"pid": os.getpid(), "server_pid": self.server_pid(), "url": self.url()}

    def server_pid(self) -> int | None:
        """Process id of this actor's env server (None for a URL)."""
        process = self.provider.process if self.provider is not None else None
        return process.pid if process is not None else None

    def url(self) -> str | None:
        """Where this actor's sessions connect."""
        if self.endpoint is None:
            return None
        return self.endpoint.uds or self.endpoint.base_url

    async def run(self, spec: EpisodeSpec, capture_session: str | None) -> Outcome:
        """Play one episode attempt on a free session; a broken session or dead server is replaced."""
        try:
            generation, client = await self._take_client()
        except Exception as exc:  # the server could not be (re)started: let the pool retry elsewhere or later
            return {"status": "retry", "error": {"type": type(exc).__name__, "message": str(exc)}, "steps": [],
                    "reward": None, "done": False, "truncated": False, "timings": {}, "turns": 0}
        ctx = EpisodeContext(spec, client, self.policy, capture_session=capture_session,
                             max_turns=self.config.max_turns, max_tokens=self.config.max_tokens)
        outcome = await run_attempt(self.agent, ctx, timeout_s=self.config.episode_timeout_s,
                                    retry_timeouts=self.config.retry_timeouts)
        if outcome["status"] == "ok":
            self._idle.append((generation, client))
        else:  # the session may be mid-episode or broken: never reuse it
            await _close_quietly(client)
            if outcome["status"] == "retry":
                await self._heal(generation)
        outcome["server_restarts"] = self.server_restarts
        outcome["url"] = self.url()
        return outcome

    async def run_many(self, episodes: list[tuple[EpisodeSpec, str | None]]) -> list[Outcome]:
        """Play several episode attempts at once (each on its own session); outcomes in the same order."""
        return list(await asyncio.gather(*(self.run(spec, session) for spec, session in episodes)))

    async def close(self) -> None:
        """Close every session and stop the env server."""
        idle, self._idle = self._idle, []
        for _, client in idle:
            await _close_quietly(client)
        if isinstance(self.policy, ChatPolicy):
            await self.policy.aclose()
        if self.provider is not None:
            await self.provider.stop()

    # -- internals ---------------------------------------------------------------------------------
    async def _take_client(self) -> tuple[int, Any]:
        await self._ensure_server()
        while self._idle:
            generation, client = self._idle.pop()
            if generation == self.generation:
                return generation, client
            await _close_quietly(client)
        assert self.endpoint is not None
        kind = MCPToolClient if self.config.client == "mcp" else GenericEnvClient
        client = kind(self.endpoint.base_url, uds=self.endpoint.uds, reply_timeout_s=self.config.reply_timeout_s)
        return self.generation, await client.connect()

    async def _ensure_server(self) -> None:
        if self.endpoint is not None and (self.provider is None or self.provider._alive()):
            return
        async with self._lock:
            if self.endpoint is not None and (self.provider is None or self.provider._alive()):
                return
            if self.provider is not None:
                await self.provider.stop(grace_s=1.0)
                self.server_restarts += 1
            self.generation += 1
            self.provider = LocalProcessProvider(
                self.env, max_sessions=self.config.sessions_per_actor + 4, env_vars=dict(self.config.env_vars),
                extra_args=list(self.config.server_args), sandbox=self.config.sandbox or None,
            )
            self.endpoint = None
            self.endpoint = await self.provider.start()

    async def _heal(self, generation: int) -> None:
        """After an env failure: replace a dead server (once, whoever notices first).

        A killed server drops its connections a moment before its process can be reaped, so wait a little
        for the process to be seen dead before deciding it is alive.
        """
        provider = self.provider
        if generation != self.generation or provider is None or provider.process is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(provider.process.wait, 1.0)
        if not provider._alive():
            await self._ensure_server()


async def _close_quietly(client: Any) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.close(), 5.0)


def remote_actor_class(config: PoolConfig) -> Any:
    """:class:`RolloutActor` as a Ray actor class with the pool's restart and CPU options."""
    import ray

    options: dict[str, Any] = {"num_cpus": config.actor_num_cpus, "max_restarts": config.max_restarts,
                               "max_task_retries": 0, "max_concurrency": max(64, config.sessions_per_actor * 4)}
    return ray.remote(**options)(RolloutActor)
