"""Episodes an external trainer asks for one at a time (ART's rollout, Miles' agent function): one rollout actor on
the caller's event loop, started on first use, ``config.sessions_per_actor`` episodes at once."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

from ..pool import AgentLoop, EpisodeSpec, Job, PoolConfig, RolloutActor, TextAgent, build_row
from ..trace import CaptureStore, TraceRow, TraceWriter

__all__ = ["OneLoopEpisodes"]


class OneLoopEpisodes:
    """The env server, sessions and trace bookkeeping of a trainer's per-episode rollout calls.

    Subclasses set :attr:`policy` (a ``ChatPolicy`` whose ``episodes`` maps a session to that episode's model),
    :attr:`rows` (where finished rows are appended) and :attr:`loop_error` (raised when the instance is used from a
    second event loop).
    """

    policy: Any
    rows: Any
    loop_error: type[Exception] = RuntimeError

    def __init__(self, env: str, *, agent: AgentLoop | None, config: PoolConfig | None, capture: CaptureStore | None,
                 writer: TraceWriter | None) -> None:
        self.env, self.capture, self.writer = env, capture, writer
        self.config = config or PoolConfig(num_actors=1)
        self.run_id = self.config.run_id or uuid.uuid4().hex[:12]
        self.agent: AgentLoop = agent or TextAgent()
        self._actor: RolloutActor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._limit: asyncio.Semaphore | None = None

    async def _ready(self) -> tuple[RolloutActor, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop:
            raise self.loop_error(f"this {type(self).__name__} was started on another event loop; make one per loop "
                                  "(and `await aclose()` the old one on its own loop)")
        if self._actor is None or self._limit is None:
            self._loop, self._limit = loop, asyncio.Semaphore(self.config.sessions_per_actor)
            # a ChatPolicy instance is kept as the actor's policy as is (only a str is wrapped in a new one)
            self._actor = RolloutActor(self.env, cast(Any, self.policy), self.agent, self.config)
            await self._actor.ready()
        return self._actor, self._limit

    async def _play(self, spec: EpisodeSpec, prefix: str, episode: Any,
                    model: str | None) -> tuple[TraceRow, dict[str, Any]]:
        """Play ``spec`` with ``episode`` as its session's model entry; its row (kept in :attr:`rows`, written when
        there is a writer) and the actor's outcome."""
        actor, limit = await self._ready()
        session = f"{prefix}-{self.run_id}-{spec.episode_id}-{uuid.uuid4().hex[:6]}"
        self.policy.episodes[session] = episode
        if self.capture is not None:
            self.capture.open_session(session, metadata={"episode_id": spec.episode_id})
        try:
            async with limit:
                outcome = await actor.run(spec, session)
        finally:
            trace = self.capture.close_session(session) if self.capture is not None else None
            self.policy.episodes.pop(session, None)
        row = build_row(Job(spec, 0), outcome, run_id=self.run_id, env=self.env, model=model, trace=trace)
        self.rows.append(row)
        if self.writer is not None:
            self.writer.write(row)
        return row, outcome

    async def aclose(self) -> None:
        """Stop the env server and close the env sessions (a later call starts them again, on its loop)."""
        actor, self._actor, self._loop = self._actor, None, None
        if actor is not None:
            await actor.close()
