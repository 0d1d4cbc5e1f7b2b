"""RolloutPool: dispatch episodes to Ray actors' free slots, retry what infrastructure broke, stream rows.

Exactly-once, keyed by ``(run_id, episode_id)``: an episode settles once (the first final outcome of its current
attempt; late results of superseded attempts are dropped) and is written once (the TraceWriter also refuses a
second row of the same ``(run_id, episode_id)``, and a resumed run skips written episodes); a row is yielded only
once its writer holds it. The promise in users' words is in the rollouts guide.
"""

from __future__ import annotations

import collections
import dataclasses
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..trace import CaptureStore, TraceRow, TraceWriter, TrainingTrace, iter_traces
from ._actor import remote_actor_class
from ._agents import AgentLoop, ScriptedAgent, TextAgent
from ._config import PoolConfig
from ._episode import EpisodeSpec
from ._errors import NoLiveActors, PoolClosed, PoolError, PoolStartTimeout
from ._fleet import Fleet, fleet_urls
from ._metrics import PoolMetrics
from ._progress import progress_bar
from ._ray import actor_errors, ensure_ray, restarting
from ._rows import Job, build_row
from ._shards import ShardLedger

__all__ = ["RolloutPool"]

_POLL_S = 0.05


class RolloutPool:
    """A pool of Ray actors that play episodes and turn them into TraceRows.

    Args:
        env: catalog name or ``module:Class`` (each actor starts a server), a server URL, or a fleet of
            servers: a list of URLs, ``"URL1,URL2"`` or a file listing them (episodes balanced over them).
        policy: an OpenAI-compatible base URL (a model; pass ``capture`` to record its turns), or a callable
            ``policy(observation) -> action`` (scripted).
        agent: the agent loop; default :class:`ScriptedAgent` for a callable, :class:`TextAgent` for a URL.
        config: options; keyword ``overrides`` replace its fields (``num_actors=2``...).
        writer: rows stream to it as they finish; written episodes are skipped on resume.
        capture: the store the policy endpoint records into (same process as the pool).

    Example::

        with RolloutPool(env="wordle", policy=WordleSolver().act, num_actors=2) as pool:
            rows = pool.run(make_groups(range(8), num_generations=2))
    """

    def __init__(self, env: str | list[str], policy: str | Callable[..., Any], *, agent: AgentLoop | None = None,
                 config: PoolConfig | None = None, writer: TraceWriter | None = None,
                 capture: CaptureStore | None = None, **overrides: Any) -> None:
        self.config = dataclasses.replace(config or PoolConfig(), **overrides)
        urls = fleet_urls(env)
        self.env: str | list[str] = env if urls is None else urls
        self.env_name = env if isinstance(env, str) and urls is None else "fleet"
        self.fleet: Fleet | None = None
        self.policy = policy
        self.agent: AgentLoop = agent or (TextAgent() if isinstance(policy, str) else ScriptedAgent())
        self.writer, self.capture = writer, capture
        self.run_id = self.config.run_id or uuid.uuid4().hex[:12]
        self.model = (self.config.model or "endpoint") if isinstance(policy, str) else getattr(policy, "__qualname__", None)
        self.metrics = PoolMetrics()
        self.policy_version = self.config.policy_version
        self.actors: list[Any] = []
        self._ray: Any = None
        self._owns_ray = False
        self._actor_args: list[Any] = []
        self._queue: collections.deque[Job] = collections.deque()
        self._ready: collections.deque[TraceRow] = collections.deque()  # rows settled while submit() waited
        self._inflight: dict[Any, list[Job]] = {}
        self._running = 0
        self._load: list[int] = []
        self._strikes: list[int] = []
        self._struck_at: list[float] = []
        self._known: set[str] = set()
        self._settled: set[str] = set()
        self._submitted = 0
        self._closed = False
        self._ledger: ShardLedger | None = None  # write="actors": rows actors hold until their shard is merged
        self._flushing: dict[Any, tuple[int, str | None]] = {}  # flush call -> actor, incarnation known then
        self._shard_meta: dict[str, Any] = {}
        if self.config.write == "actors":
            if writer is None:
                raise ValueError("PoolConfig(write='actors') needs a writer: the actors write its run folder's shards")
            if capture is not None:
                raise ValueError("PoolConfig(write='actors') cannot record model turns (capture=...): the capture store "
                                 "lives in the driver; use write='driver' for model policies with capture")
            self._ledger = ShardLedger(writer)

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self, *, timeout_s: float | None = None) -> RolloutPool:
        """Start Ray (or join it), the actors and their env servers; idempotent.

        Raises:
            PoolStartTimeout: They were not ready within ``timeout_s`` (default ``config.start_timeout_s``); what
                was started is stopped.
        """
        self._check_open()
        if self.actors:
            return self
        if isinstance(self.env, list) and self.fleet is None:
            self.fleet = Fleet(self.env, capacity=self.config.server_capacity, token=self.config.env_token).start()
            self.env_name = self.fleet.name or self.env_name
        self._ray, self._owns_ray = ensure_ray(self.config)
        if self._ledger is not None and self.writer is not None:
            self._shard_meta = {"run_dir": str(self.writer.run_dir.resolve()), "flush_rows": self.writer.flush_rows,
                                "run_id": self.run_id, "env": self.env_name, "model": self.model}
        actor_cls = remote_actor_class(self.config)
        # Held here so a restarted actor can always rebuild from them (ray-project/ray#53727).
        self._actor_args = [self._ray.put(arg) for arg in (self.env, self.policy, self.agent, self.config)]
        self.actors = [actor_cls.remote(*self._actor_args) for _ in range(self.config.num_actors)]
        self._load = [0] * len(self.actors)
        self._strikes = [0] * len(self.actors)
        self._struck_at = [0.0] * len(self.actors)
        limit = self.config.start_timeout_s if timeout_s is None else timeout_s
        try:
            self._ray.get([a.ready.remote() for a in self.actors], timeout=limit)
        except self._ray.exceptions.GetTimeoutError:
            self.close()
            raise PoolStartTimeout(
                f"the pool's {len(self.actors)} actors and their env servers were not ready within {limit:g} s (a busy "
                f"machine, or an env server that does not start: see the Ray worker logs); raise PoolConfig."
                f"start_timeout_s (--start-timeout-s) or pass start(timeout_s=...)") from None
        self.metrics = PoolMetrics()
        return self

    def close(self, *, timeout_s: float = 30.0) -> None:
        """Stop the actors, their env servers and a Ray the pool started; flush the writer; idempotent.

        Unfinished episodes are dropped. A cluster the pool joined (or found connected) keeps running.
        """
        if self._closed:
            return
        self._closed = True
        for job in [j for jobs in self._inflight.values() for j in jobs] + list(self._queue):
            self._discard_capture(job)
        self._inflight.clear()
        self._running = 0
        self._queue.clear()
        if self.actors and self._ray is not None:
            try:
                self._ray.get([a.close.remote() for a in self.actors], timeout=timeout_s)
            except Exception:  # a dead actor has nothing left to close
                pass
            for actor in self.actors:
                self._ray.kill(actor, no_restart=True)
        self.actors = []
        if self.fleet is not None:
            self.fleet.close()
        if self._ledger is not None:
            self._ledger.close()
        self._flushing.clear()
        if self._owns_ray and self._ray is not None:  # the private cluster this pool started; never a joined one
            self._ray.shutdown()
            self._owns_ray = False
        if self.writer is not None and not self.writer.closed:
            self.writer.flush()

    def __enter__(self) -> RolloutPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_policy_version(self, version: int) -> None:
        """The version (training step) of the weights now served; episodes dispatched from now carry it."""
        self.policy_version = version

    # -- submitting and collecting -------------------------------------------------------------------
    def submit(self, spec: EpisodeSpec) -> bool:
        """Queue one episode; False when the writer already holds it (a resumed run).

        Raises:
            ValueError: the episode id was already submitted to this pool.
            PoolClosed: the pool is closed.
        """
        self._check_open()
        if spec.episode_id in self._known:
            raise ValueError(f"episode {spec.episode_id!r} was already submitted; episode ids must be unique in a run")
        self._known.add(spec.episode_id)
        if self.writer is not None and self.writer.written((self.run_id, spec.episode_id)):
            self.metrics.skipped += 1
            return False
        if self.config.max_queued is not None and len(self._queue) >= self.config.max_queued:
            self.start()  # backpressure: play episodes until the queue has room; their rows wait for as_completed
            while len(self._queue) >= self.config.max_queued:
                self._ready.extend(self._step())
        self._queue.append(Job(spec, self._submitted))
        self._submitted += 1
        return True

    @property
    def pending(self) -> int:
        """Episodes queued or in flight (and rows settled but not yet yielded)."""
        waiting = self._ledger.waiting if self._ledger is not None else 0
        return len(self._queue) + self._running + len(self._ready) + waiting

    def as_completed(self, specs: Iterable[EpisodeSpec] = (), *, timeout_s: float | None = None) -> Iterator[TraceRow]:
        """Submit ``specs`` and yield rows as episodes finish, until nothing is pending.

        Raises:
            TimeoutError: ``timeout_s`` passed with episodes still pending (they stay queued).
        """
        self.start()
        if self.metrics.episodes == 0 and not self._running:
            self.metrics.started_at = time.perf_counter()
        bound = self.config.max_queued
        source = iter(specs)
        if bound is None:  # no bound: everything queued up front
            for spec in source:
                self.submit(spec)
        total = self.pending if bound is None else getattr(specs, "__len__", lambda: None)()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with progress_bar(self.config.show_progress, total, self.metrics) as advance:
            while True:
                if bound is not None:  # pull specs lazily: the driver holds at most max_queued of them
                    while len(self._queue) < bound and (more := next(source, None)) is not None:
                        self.submit(more)
                if not self.pending:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"{self.pending} episodes still pending after {timeout_s:g}s")
                while self._ready:
                    advance()
                    yield self._ready.popleft()
                for row in self._step():
                    advance()
                    yield row

    def poll(self) -> list[TraceRow]:
        """One round of the dispatch loop (dispatch queued episodes, wait briefly for results, expire timeouts):
        the rows settled in it. For a driver that runs several pools side by side (:class:`MixedPool`);
        :meth:`as_completed` loops it for one pool."""
        self.start()
        rows = list(self._ready)
        self._ready.clear()
        return rows + self._step()

    def read_written(self, episode_ids: set[str]) -> list[TraceRow]:
        """Rows of these episodes read back from the writer's folder (episodes a resumed run already wrote)."""
        return self._read_written(episode_ids)

    def run(self, specs: Iterable[EpisodeSpec], *, ordered: bool = True, timeout_s: float | None = None,
            include_written: bool = False) -> list[TraceRow]:
        """Run a batch to the end; rows in input order (``ordered``) or as they finished. Episodes the writer
        already holds (a resumed run) are not played again: left out, or with ``include_written`` read back
        from the writer's folder (a trainer resumed mid-step needs every row of the step)."""
        specs = list(specs)
        rows = list(self.as_completed(specs, timeout_s=timeout_s))
        if include_written and self.writer is not None and len(rows) < len(specs):
            rows += self._read_written({s.episode_id for s in specs} - {r.episode_id for r in rows})
        if ordered:
            order = {s.episode_id: i for i, s in enumerate(specs)}
            rows.sort(key=lambda r: order[r.episode_id])
        return rows

    def _read_written(self, episode_ids: set[str]) -> list[TraceRow]:
        assert self.writer is not None
        self.writer.flush()  # rows still buffered are written ones too
        found = [r for r in iter_traces(self.writer.run_dir) if r.run_id == self.run_id and r.episode_id in episode_ids]
        missing = episode_ids - {r.episode_id for r in found}
        if missing:
            raise RuntimeError(f"{len(missing)} episodes are marked written but not in {self.writer.run_dir} "
                               f"(e.g. {sorted(missing)[0]!r}): the trace folder was changed under the run")
        return found

    # -- the dispatch loop ---------------------------------------------------------------------------
    def _step(self) -> list[TraceRow]:
        rows = self._dispatch()
        if self._ledger is not None and not self._queue and not self._inflight and not self._flushing:
            for actor in self._ledger.actors_waiting():  # the batch is played: have the actors flush their rows
                self._flushing[self.actors[actor].flush_shards.remote()] = (actor, self._ledger.incarnations.get(actor))
        if self._inflight or self._flushing:
            refs = [*self._inflight, *self._flushing]
            ready, rest = self._ray.wait(refs, num_returns=1, timeout=_POLL_S)
            if ready and rest:  # take everything else that is already done, without waiting
                ready += self._ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            for ref in ready:
                rows += self._settle_flush(ref) if ref in self._flushing else self._settle(ref)
        elif self._queue:  # only retries waiting out their backoff (or a fleet with no server up)
            time.sleep(_POLL_S / 5)
        rows += self._expire()
        if self.fleet is not None:
            self.metrics.servers = self.fleet.summary()
        return rows

    def _alive(self) -> list[int]:
        return [i for i, s in enumerate(self._strikes) if s <= self.config.max_restarts + 1]

    def _dispatch(self) -> list[TraceRow]:
        alive = self._alive()
        if not alive:
            return self._fail_all(NoLiveActors(f"all {len(self.actors)} actors died beyond max_restarts="
                                               f"{self.config.max_restarts}; see the Ray logs"))
        now = time.monotonic()
        if self.fleet is not None and self._queue and not self.fleet.any_up:
            since = min(s.down_since or now for s in self.fleet.servers)
            if now - since > self.config.episode_timeout_s:
                return self._fail_all(PoolError(
                    f"no server of the fleet answered /health for {now - since:.0f}s: {self.env}; start them "
                    "again or check their URLs"))
        while self._queue and self._running < self.config.capacity:
            actor = min(alive, key=lambda i: self._load[i])
            room = min(self.config.sessions_per_actor - self._load[actor], self.config.capacity - self._running,
                       self.config.episodes_per_call)
            jobs: list[Job] = []
            while len(jobs) < room and (self.fleet is None or self.fleet.pick() is not None) \
                    and (job := self._next_due(now)) is not None:
                if self.fleet is not None:
                    server = self.fleet.pick()
                    assert server is not None
                    server.load += 1
                    job.server = server.url
                jobs.append(job)
            if not jobs:
                break
            for job in jobs:
                job.actor, job.version = actor, self.policy_version
                job.capture_session = self._open_capture(job)
                job.dispatched_at = now
                job.deadline = now + self.config.episode_timeout_s * 1.5 + 60.0
            if self._ledger is not None:
                for job in jobs:
                    job.incarnation = self._ledger.incarnations.get(actor)
                ref = self.actors[actor].run_many_write.remote(
                    [(job.spec, job.server, job.attempt, job.version) for job in jobs], self._shard_meta)
            else:
                ref = self.actors[actor].run_many.remote([
                    (job.spec, job.capture_session) if job.server is None else (job.spec, job.capture_session, job.server)
                    for job in jobs])
            self._inflight[ref] = jobs
            self._load[actor] += len(jobs)
            self._running += len(jobs)
        return []

    def _next_due(self, now: float) -> Job | None:
        """The first queued job whose retry backoff is over (removed from the queue)."""
        for i, job in enumerate(self._queue):
            if job.not_before <= now:
                del self._queue[i]
                return job
        return None

    def _settle(self, ref: Any) -> list[TraceRow]:
        jobs = self._inflight.pop(ref)
        actor = jobs[0].actor
        assert actor is not None
        self._load[actor] -= len(jobs)
        self._running -= len(jobs)
        rows: list[TraceRow] = []
        shards: list[dict[str, Any]] = []
        try:
            outcomes = self._ray.get(ref)
            if self._ledger is not None:
                rows += self._replay(self._ledger.seen(actor, outcomes["incarnation"]))
                outcomes, shards = outcomes["outcomes"], outcomes["shards"]
        except actor_errors() as exc:
            if self._ledger is not None:
                rows += self._replay(self._ledger.lost(actor, jobs[0].incarnation))
            self.metrics.actor_failures += 1
            if jobs[0].dispatched_at > self._struck_at[actor]:  # one death fails many episodes: count it once
                self._strikes[actor] += 1
                self._struck_at[actor] = time.monotonic()
            error = {"status": "retry", "error": {"type": type(exc).__name__, "message": str(exc)[:500]}}
            outcomes = [error] * len(jobs)
            if restarting(exc):  # not dead: Ray is restarting it (slowly, on a busy machine); try later
                for job in jobs:
                    job.unavailable += 1
        else:
            self._strikes[actor] = 0
        for job, outcome in zip(jobs, outcomes, strict=True):
            self._release_server(job, outcome)
            if outcome["status"] == "retry":
                self.metrics.add_attempt(outcome, actor)
                row = self._retry(job, outcome)
            else:
                row = self._finish(job, outcome)
            if row is not None:
                rows.append(row)
        for entry in shards:
            rows += self._merge(actor, entry)
        return rows

    def _settle_flush(self, ref: Any) -> list[TraceRow]:
        """An actor's answer to ``flush_shards``: merge its shards, or replay what it lost."""
        actor, incarnation = self._flushing.pop(ref)
        assert self._ledger is not None
        try:
            result = self._ray.get(ref)
        except actor_errors():
            self.metrics.actor_failures += 1
            return self._replay(self._ledger.lost(actor, incarnation))
        # an incarnation of None has buffered nothing: restarted since, what the actor held is gone
        rows = self._replay(self._ledger.seen(actor, result["incarnation"]))
        for entry in result["shards"]:
            rows += self._merge(actor, entry)
        return rows

    def _merge(self, actor: int, entry: dict[str, Any]) -> list[TraceRow]:
        """Move an actor's shard into the run; its accepted rows, now written (a row missing from it is replayed)."""
        assert self._ledger is not None
        written, missing = self._ledger.merge(actor, entry)
        return written + self._replay(missing)

    def _replay(self, lost: list[tuple[Job, TraceRow]]) -> list[TraceRow]:
        """Accepted episodes whose rows never reached the run (their actor died holding them, or a reported shard
        lacked them): play them again."""
        for job, row in lost:
            self._settled.discard(job.spec.episode_id)
            self.metrics.episodes -= 1
            self.metrics.ok -= row.ok
            self.metrics.failed -= not row.ok
            self.metrics.retries += 1
            job.attempt += 1
            job.not_before = 0.0
            self._queue.appendleft(job)
        return []

    def _retry(self, job: Job, outcome: dict[str, Any]) -> TraceRow | None:
        if job.retries_used >= self.config.max_retries:
            return self._finish(job, outcome, counted=True)
        self._discard_capture(job)
        job.attempt += 1
        job.not_before = time.monotonic() + self.config.retry_backoff_s * 2 ** min(job.attempt - 1, 5)
        self.metrics.retries += 1
        self._queue.appendleft(job)
        return None

    def _finish(self, job: Job, outcome: dict[str, Any], *, counted: bool = False) -> TraceRow | None:
        cap = self.config.max_staleness
        if (cap is not None and job.version is not None and self.policy_version is not None
                and self.policy_version - job.version > cap and outcome.get("status") == "ok"):
            self._discard_capture(job)
            self.metrics.stale_reruns += 1
            self._queue.appendleft(job)
            return None
        if job.spec.episode_id in self._settled:  # never settle twice
            self._discard_capture(job)
            return None
        self._settled.add(job.spec.episode_id)
        trace = self._close_capture(job)
        row = build_row(job, outcome, run_id=self.run_id, env=self.env_name, model=self.model, trace=trace)
        if counted:
            self.metrics.record({}, ok=row.ok, actor=None)
        else:
            self.metrics.record(outcome, ok=row.ok, actor=job.actor)
        if self._ledger is not None and outcome.get("trace_id"):  # an actor holds the row: yielded once merged
            assert job.actor is not None
            row.trace_id = outcome["trace_id"]
            self._ledger.accept(job.actor, row.trace_id, job, row)
            return None
        if self.writer is not None:
            self.writer.write(row)
        return row

    def _expire(self) -> list[TraceRow]:
        """Backstop for an actor that never answers: past its deadline an attempt counts as failed."""
        now, rows = time.monotonic(), []
        for ref, jobs in list(self._inflight.items()):
            if now <= jobs[0].deadline:
                continue
            del self._inflight[ref]
            actor = jobs[0].actor
            assert actor is not None
            self._load[actor] -= len(jobs)
            self._running -= len(jobs)
            self._ray.cancel(ref, force=False)
            for job in jobs:
                outcome = {"status": "retry", "error": {
                    "type": "EpisodeTimeout", "message": f"actor {actor} gave no answer by the pool's deadline"}}
                self._release_server(job, outcome)
                row = self._retry(job, outcome)
                if row is not None:
                    rows.append(row)
        return rows

    def _release_server(self, job: Job, outcome: dict[str, Any]) -> None:
        """A fleet attempt is over: free its server's session and count it there."""
        if self.fleet is None or job.server is None:
            return
        final = outcome["status"] != "retry" or job.retries_used >= self.config.max_retries
        self.fleet.settle(job.server, outcome, final=final)
        job.server = None

    def _fail_all(self, exc: Exception) -> list[TraceRow]:
        rows = []
        while self._queue:
            job = self._queue.popleft()
            row = self._finish(job, {"status": "failed", "error": {"type": type(exc).__name__, "message": str(exc)}})
            if row is not None:
                rows.append(row)
        return rows

    # -- capture sessions ----------------------------------------------------------------------------
    def _open_capture(self, job: Job) -> str | None:
        if self.capture is None or not isinstance(self.policy, str):
            return None
        session = f"{self.run_id}-{job.spec.episode_id}-a{job.attempt}-{uuid.uuid4().hex[:6]}"
        self.capture.open_session(session, metadata={"episode_id": job.spec.episode_id, "attempt": job.attempt})
        return session

    def _close_capture(self, job: Job) -> TrainingTrace | None:
        if self.capture is None or job.capture_session is None or job.capture_session not in self.capture:
            return None
        session, job.capture_session = job.capture_session, None
        return self.capture.close_session(session)

    def _discard_capture(self, job: Job) -> None:
        self._close_capture(job)

    def _check_open(self) -> None:
        if self._closed:
            raise PoolClosed("this RolloutPool is closed; create a new one")

