"""LocalRunner: play episodes in this process (no Ray) against a policy served from a live model.

One background loop thread (:class:`~openenv_train.loops.EventLoopThread`) holds a capturing policy endpoint
(:func:`~openenv_train.policy.captured_policy` over a :class:`~openenv_train.policy.LocalBackend` of the given
model, recording every call into a :class:`~openenv_train.trace.CaptureStore`) and a
:class:`~openenv_train.pool.RolloutActor` (its own env server subprocess, or a URL). ``run(specs)`` plays them
concurrently and returns their TraceRows in order.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..loops import EventLoopThread
from ..pool import AgentLoop, EpisodeSpec, Job, PoolConfig, RolloutActor, TextAgent, build_row
from ..trace import CaptureStore, TraceRow, TraceWriter

if TYPE_CHECKING:
    from ..policy import LocalConfig

__all__ = ["LocalRunner"]

T = TypeVar("T")


class LocalRunner:
    """Episodes in-process, with the model served through a capturing policy endpoint.

    Args:
        env: catalog name, ``module:Class`` or server URL.
        model: a transformers model object (e.g. ``trainer.model``: its current weights answer).
        tokenizer: its tokenizer (with a chat template).
        agent: the agent loop (default :class:`~openenv_train.pool.TextAgent`).
        config: pool options used here: ``sessions_per_actor``, ``max_turns``, ``max_tokens``, ``sampling``,
            ``episode_timeout_s``, ``client``, ``run_id``, ``env_vars``, ``server_args``.
        writer: rows are written to it as well as returned.
        local: options of the :class:`~openenv_train.policy.LocalBackend` serving ``model``.
    """

    def __init__(self, env: str, model: Any, tokenizer: Any, *, agent: AgentLoop | None = None,
                 config: PoolConfig | None = None, writer: TraceWriter | None = None,
                 local: LocalConfig | None = None) -> None:
        from ..policy import LocalBackend, captured_policy

        self.env = env
        self.config = config or PoolConfig(num_actors=1)
        self.run_id = self.config.run_id or uuid.uuid4().hex[:12]
        self.writer = writer
        self.backend = LocalBackend(model, tokenizer, config=local)
        self._policy = captured_policy(self.backend)
        self.capture: CaptureStore = self._policy.capture
        self.server = self._policy.server
        self.agent: AgentLoop = agent or TextAgent()
        self._actor: RolloutActor | None = None
        self._runner = EventLoopThread("local-runner")
        try:
            self._call(self._start())
        except BaseException:
            self.close()
            raise

    @property
    def version(self) -> int | None:
        """The policy version (trainer step) stamped on answers and rows."""
        return self.backend.version

    @version.setter
    def version(self, value: int | None) -> None:
        self.backend.version = value

    def _call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        return self._runner.run(coro, timeout_s)

    async def _start(self) -> None:
        served = await self._policy.__aenter__()
        self._actor = RolloutActor(self.env, served.base_url, self.agent, self.config)
        await self._actor.ready()

    def run(self, specs: Sequence[EpisodeSpec]) -> list[TraceRow]:
        """Play every episode once (concurrently) and return their rows in the order of ``specs``."""
        assert self._actor is not None
        jobs = [Job(spec, i, version=self.version) for i, spec in enumerate(specs)]
        for job in jobs:
            job.capture_session = f"{self.run_id}-{job.spec.episode_id}-{uuid.uuid4().hex[:6]}"
            self.capture.open_session(job.capture_session, metadata={"episode_id": job.spec.episode_id})
        outcomes = self._call(self._run_all(jobs))
        rows = []
        for job, outcome in zip(jobs, outcomes, strict=True):
            assert job.capture_session is not None
            trace = self.capture.close_session(job.capture_session)
            row = build_row(job, outcome, run_id=self.run_id, env=self.env, model=self.backend.model_id, trace=trace)
            rows.append(row)
            if self.writer is not None:
                self.writer.write(row)
        return rows

    async def _run_all(self, jobs: list[Job]) -> list[dict[str, Any]]:
        assert self._actor is not None
        limit = asyncio.Semaphore(self.config.sessions_per_actor)

        async def one(job: Job) -> dict[str, Any]:
            assert self._actor is not None
            async with limit:
                return await self._actor.run(job.spec, job.capture_session)

        return list(await asyncio.gather(*(one(job) for job in jobs)))

    def close(self) -> None:
        """Stop the env server, the policy endpoint and the loop thread; idempotent."""
        if not self._runner.running:
            return
        try:
            if self._actor is not None:
                self._call(self._actor.close(), 30.0)
            self._call(self._policy.__aexit__(None, None, None), 30.0)
        finally:
            self._runner.stop(30.0)
            if self.writer is not None and not self.writer.closed:
                self.writer.flush()

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
