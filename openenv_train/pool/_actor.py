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
from ..core import FAULTS_ENV, fault_point
from ..launch import LocalProcessProvider
from ._agents import AgentLoop
from ._config import PoolConfig
from ._context import EpisodeContext
from ._episode import EpisodeSpec
from ._policy import ChatPolicy
from ._rollout import POLICY_RETRIED, Outcome, run_attempt
from ._rows import Job, build_row
from ._shards import ActorShards

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

    def __init__(self, env: str | list[str], policy: str | Callable[..., Any], agent: AgentLoop,
                 config: PoolConfig) -> None:
        self.env, self.agent, self.config = env, agent, config
        self.policy: ChatPolicy | Callable[..., Any] = (
            ChatPolicy(policy, model=config.model, sampling=config.sampling, timeout_s=config.model_timeout_s,
                       token=config.policy_token)
            if isinstance(policy, str) else policy
        )
        self.provider: LocalProcessProvider | None = None
        # A fleet (a list of URLs): the pool names each episode's server; sessions stay open per server.
        self.fleet = isinstance(env, list)
        self.endpoint: Endpoint | None = Endpoint(env) if isinstance(env, str) and is_url(env) else None
        self._fleet_idle: dict[str, list[Any]] = {}
        self.shards: ActorShards | None = None  # write="actors": opened by the first run_many_write
        self.generation = 0  # bumped when the env server is replaced; older clients are dropped
        self.server_restarts = 0
        self._idle: list[tuple[int, Any]] = []
        self._lock = asyncio.Lock()

    async def ready(self) -> dict[str, Any]:
        """Start the env server if needed; the actor's and server's process ids, the Ray node it runs on."""
        await self._ensure_server()
        return {"pid": os.getpid(), "server_pid": self.server_pid(), "url": self.url(), "node_id": _node_id()}

    def server_pid(self) -> int | None:
        """Process id of this actor's env server (None for a URL)."""
        process = self.provider.process if self.provider is not None else None
        return process.pid if process is not None else None

    def url(self) -> str | None:
        """Where this actor's sessions connect."""
        if self.endpoint is None:
            return None
        return self.endpoint.uds or self.endpoint.base_url

    async def run(self, spec: EpisodeSpec, capture_session: str | None, server: str | None = None) -> Outcome:
        """Play one episode attempt on a free session (of fleet server ``server``, when the pool names one);
        a broken session or dead server is replaced."""
        if server is not None:
            return await self._run_on(server, spec, capture_session)
        try:
            generation, client = await self._take_client()
        except Exception as exc:  # the server could not be (re)started: let the pool retry elsewhere or later
            return {"status": "retry", "error": {"type": type(exc).__name__, "message": str(exc)}, "steps": [],
                    "reward": None, "done": False, "truncated": False, "timings": {}, "turns": 0}
        ctx = EpisodeContext(spec, client, self.policy, capture_session=capture_session,
                             max_turns=self.config.max_turns, max_tokens=self.config.max_tokens)
        outcome = await run_attempt(self.agent, ctx, timeout_s=self.config.episode_timeout_s,
                                    retry_timeouts=self.config.retry_timeouts)
        fault_point("pool.actor.attempted")  # the other episodes of this call may be mid-way
        if outcome["status"] == "ok":
            self._idle.append((generation, client))
        else:  # the session may be mid-episode or broken: never reuse it
            await _close_quietly(client)
            if outcome["status"] == "retry" and not _policy_failed(outcome):  # the env server may be dead
                await self._heal(generation)
        outcome["server_restarts"] = self.server_restarts
        outcome["actor_pid"] = os.getpid()
        outcome["url"] = self.url()
        return outcome

    async def run_many(self, episodes: list[tuple[Any, ...]]) -> list[Outcome]:
        """Play several episode attempts at once (each on its own session); outcomes in the same order.

        Each entry is ``(spec, capture_session)`` or, in a fleet, ``(spec, capture_session, server_url)``."""
        outcomes = list(await asyncio.gather(*(self.run(*episode) for episode in episodes)))
        fault_point("pool.actor.played")
        return outcomes

    async def run_many_write(self, episodes: list[tuple[Any, ...]], meta: dict[str, Any]) -> dict[str, Any]:
        """``write="actors"``: play episodes, write their rows to this actor's shards, return small outcomes.

        Each entry is ``(spec, server_url_or_None, attempt, policy_version)``; ``meta`` holds ``run_dir``,
        ``flush_rows``, ``run_id``, ``env`` and ``model``. Returns this incarnation's id, the outcomes (their
        ``trace_id``, no steps) and the shards flushed by this call."""
        if self.shards is None:
            self.shards = ActorShards(meta["run_dir"], meta["flush_rows"])
        outcomes = await asyncio.gather(*(self.run(spec, None, server) for spec, server, _, _ in episodes))
        light: list[Outcome] = []
        for (spec, _, attempt, version), outcome in zip(episodes, outcomes, strict=True):
            if outcome["status"] != "retry":
                row = build_row(Job(spec, 0, attempt=attempt, version=version), outcome, run_id=meta["run_id"],
                                env=meta["env"], model=meta["model"], trace=None)
                self.shards.add(row)
                outcome["trace_id"] = row.trace_id
            outcome["env_steps"], outcome["steps"] = len(outcome.get("steps") or []), []
            light.append(outcome)
        flushed = self.shards.flush() if self.shards.due() else None
        return {"incarnation": self.shards.incarnation, "outcomes": light, "shards": [flushed] if flushed else []}

    async def flush_shards(self) -> dict[str, Any]:
        """``write="actors"``: flush the buffered rows now (the driver asks when its batch is otherwise done)."""
        if self.shards is None:
            return {"incarnation": None, "outcomes": [], "shards": []}
        flushed = self.shards.flush()
        return {"incarnation": self.shards.incarnation, "outcomes": [], "shards": [flushed] if flushed else []}

    async def close(self) -> None:
        """Close every session and stop the env server."""
        if self.shards is not None:
            with contextlib.suppress(Exception):
                self.shards.close()
        idle, self._idle = self._idle, []
        for _, client in idle:
            await _close_quietly(client)
        fleet_idle, self._fleet_idle = self._fleet_idle, {}
        for clients in fleet_idle.values():
            for client in clients:
                await _close_quietly(client)
        if isinstance(self.policy, ChatPolicy):
            await self.policy.aclose()
        if self.provider is not None:
            await self.provider.stop()

    # -- internals ---------------------------------------------------------------------------------
    async def _run_on(self, server: str, spec: EpisodeSpec, capture_session: str | None) -> Outcome:
        """One attempt on a fleet server: its idle session or a new one; a broken session is dropped."""
        idle = self._fleet_idle.setdefault(server, [])
        try:
            client = idle.pop() if idle else await self._connect(server)
        except Exception as exc:  # the server is gone or refuses sessions: the pool retries elsewhere
            return {"status": "retry", "error": {"type": type(exc).__name__, "message": str(exc)}, "steps": [],
                    "reward": None, "done": False, "truncated": False, "timings": {}, "turns": 0, "url": server}
        ctx = EpisodeContext(spec, client, self.policy, capture_session=capture_session,
                             max_turns=self.config.max_turns, max_tokens=self.config.max_tokens)
        outcome = await run_attempt(self.agent, ctx, timeout_s=self.config.episode_timeout_s,
                                    retry_timeouts=self.config.retry_timeouts)
        if outcome["status"] == "ok":
            idle.append(client)
        else:
            await _close_quietly(client)
            if outcome["status"] == "retry":  # the server may be dead: its other idle sessions too
                for stale in self._fleet_idle.pop(server, []):
                    await _close_quietly(stale)
        outcome["url"] = server
        return outcome

    async def _connect(self, url: str) -> Any:
        kind = MCPToolClient if self.config.client == "mcp" else GenericEnvClient
        client = kind(url, reply_timeout_s=self.config.reply_timeout_s, token=self.config.env_token)
        return await client.connect()

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
        if self.fleet:  # fleet servers are the user's: nothing to start
            return
        if self.endpoint is not None and (self.provider is None or self.provider.alive()):
            return
        async with self._lock:
            if self.endpoint is not None and (self.provider is None or self.provider.alive()):
                return
            if self.provider is not None:
                await self.provider.stop(grace_s=1.0)
                self.server_restarts += 1
            self.generation += 1
            assert isinstance(self.env, str)
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
        if not provider.alive():
            await self._ensure_server()


def _policy_failed(outcome: Outcome) -> bool:
    """Whether an attempt to retry failed on the policy's side (the env server is fine: nothing to heal)."""
    return (outcome.get("error") or {}).get("type") in {e.__name__ for e in POLICY_RETRIED}


def _node_id() -> str | None:
    """The Ray node this process runs on (None outside Ray)."""
    try:
        import ray

        # Asking an unconnected process would start a Ray in it (and from LocalRunner's loop thread: Ray's
        # processes die with that thread, and the next Ray call in the process ends it).
        if not ray.is_initialized():
            return None
        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # Ray missing or not usable here: the class used as plain Python
        return None


async def _close_quietly(client: Any) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.close(), 5.0)


def remote_actor_class(config: PoolConfig) -> Any:
    """:class:`RolloutActor` as a Ray actor class with the pool's restart and CPU options."""
    import ray

    options: dict[str, Any] = {"num_cpus": config.actor_num_cpus, "max_restarts": config.max_restarts,
                               "max_task_retries": 0, "max_concurrency": max(64, config.sessions_per_actor * 4)}
    if config.actor_resources:
        options["resources"] = dict(config.actor_resources)
    if config.actor_scheduling == "spread":
        options["scheduling_strategy"] = "SPREAD"
    if os.environ.get(FAULTS_ENV):  # a failure test's fault tokens reach actors of a Ray started before it set them
        options["runtime_env"] = {"env_vars": {FAULTS_ENV: os.environ[FAULTS_ENV]}}
    return ray.remote(**options)(RolloutActor)
