"""Collect concurrent generation jobs and run them as one batch in a worker thread.

The wait for company adapts to load: a job waits only while more jobs are on their way (the caller's
``expecting()`` count, e.g. requests still rendering their prompt) or while fewer rows are pending than the
previous batch held; a job that is alone runs at once. The wait lasts at most ``window_s``, or a fraction
(``wait_fraction``) of the previous batch's generate time when that is longer: multi-turn episodes answered
together come back together, a few milliseconds apart (their env steps in between), and a job that runs without
them costs a whole batch's time again while they queue behind it. A batch that raises is retried job by
job, so a failure lands only on the jobs that cause it, except for the errors named ``whole_batch_errors`` (e.g.
the process that ran the batch died): those fail every job of the batch at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Batcher", "BatchInfo"]

RowT = TypeVar("RowT")  # a row to generate
OutT = TypeVar("OutT")  # what a row produced


@dataclass
class BatchInfo:
    """How a job was run: time spent waiting, time generating, rows in its batch."""

    queue_s: float = 0.0
    generate_s: float = 0.0
    batch_rows: int = 0


def _answer(future: asyncio.Future[tuple[list[OutT], BatchInfo]], result: tuple[list[OutT], BatchInfo]) -> None:
    if not future.done():
        future.set_result(result)


@dataclass(eq=False)
class _Job(Generic[RowT, OutT]):
    rows: list[RowT]
    future: asyncio.Future[tuple[list[OutT], BatchInfo]]
    queued_at: float = field(default_factory=time.perf_counter)


class Batcher(Generic[RowT, OutT]):
    """Batches jobs (lists of rows) for ``run_rows``, a blocking function called in one worker thread.

    Args:
        run_rows: Generates all rows of a batch, returning one output per row, in order.
        window_s: The longest a batch's first job waits for company.
        max_rows: Most rows per batch (a single larger job still runs, alone).
        expecting: How many jobs are about to be submitted (None: always wait ``window_s`` for company); call
            :meth:`notify` when that count drops without a submit.
        wait_fraction: With ``expecting``: how long, as a fraction of the previous batch's generate time, a job may
            wait for the rest of a larger previous batch (never less than ``window_s``).
        whole_batch_errors: Errors of ``run_rows`` that fail every job of its batch instead of a retry job by job.
        in_flight: Batches ``run_rows`` may run at once, each in a thread of its own (an engine that lets a batch
            join the one decoding: the next batch need not wait for it to end).
        early: Call ``run_rows(rows, on_rows)``: ``run_rows`` may hand ``on_rows(indices, outputs)`` rows that
            ended before the rest of the batch, and a job whose rows have all ended is answered at once.
    """

    def __init__(self, run_rows: Callable[..., list[OutT]], *, window_s: float = 0.005, max_rows: int = 32,
                 expecting: Callable[[], int] | None = None, wait_fraction: float = 0.0,
                 whole_batch_errors: tuple[type[BaseException], ...] = (), in_flight: int = 1,
                 early: bool = False) -> None:
        self.run_rows = run_rows
        self.early = early
        self.whole_batch_errors = whole_batch_errors
        self.window_s = window_s
        self.wait_fraction = wait_fraction
        self._last_seconds = 0.0
        self.max_rows = max_rows
        self.expecting = expecting
        self._last_rows = 0
        self._executor: ThreadPoolExecutor | None = None
        self._pending: list[_Job[RowT, OutT]] = []
        self.in_flight = in_flight
        self._running: list[_Job[RowT, OutT]] = []  # the batches in the worker threads
        self._flights: set[asyncio.Task[None]] = set()
        self._wake: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def submit(self, rows: list[RowT]) -> tuple[list[OutT], BatchInfo]:
        """Queue one job and wait for its outputs.

        Raises:
            Exception: what ``run_rows`` raised when this job ran on its own.
        """
        loop = asyncio.get_running_loop()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.in_flight, thread_name_prefix="policy-generate")
        if self._loop is not loop or self._worker is None or self._worker.done():
            self._loop, self._wake = loop, asyncio.Event()
            self._worker = loop.create_task(self._run(), name="policy-batcher")
        future: asyncio.Future[tuple[list[OutT], BatchInfo]] = loop.create_future()
        self._pending.append(_Job(rows, future))
        assert self._wake is not None
        self._wake.set()
        return await future

    async def _run(self) -> None:
        assert self._wake is not None and self._loop is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending and len(self._flights) < self.in_flight:
                await self._gather()
                batch: list[_Job[RowT, OutT]] = []
                rows = 0
                while self._pending and (not batch or rows + len(self._pending[0].rows) <= self.max_rows):
                    job = self._pending.pop(0)
                    batch.append(job)
                    rows += len(job.rows)
                batch = [j for j in batch if not j.future.done()]  # callers that went away
                # the rows decoding at once: with batches in flight, theirs too (what the next gather waits for)
                self._last_rows = rows + sum(len(j.rows) for j in self._running if not j.future.done())
                if batch:
                    if self.in_flight == 1:
                        await self._fly(batch)
                    else:
                        flight = self._loop.create_task(self._fly(batch))
                        self._flights.add(flight)
                        flight.add_done_callback(self._landed)

    def _landed(self, flight: asyncio.Task[None]) -> None:
        self._flights.discard(flight)
        if self._wake is not None:
            self._wake.set()  # jobs that queued while every flight was taken

    async def _fly(self, batch: list[_Job[RowT, OutT]]) -> None:
        """Run one batch in a worker thread and settle its jobs."""
        assert self._executor is not None and self._loop is not None
        start = time.perf_counter()
        self._running.extend(batch)
        results = await self._loop.run_in_executor(self._executor, self._run_batch, batch)
        self._running = [j for j in self._running if j not in batch]  # (when cancelled, aclose cancels them)
        self._last_seconds = time.perf_counter() - start
        for job, result in zip(batch, results, strict=True):
            if job.future.done():
                continue
            if isinstance(result, BaseException):
                job.future.set_exception(result)
            else:
                job.future.set_result(result)

    async def _gather(self) -> None:
        """Wait for company: while jobs are on their way or fewer rows are pending than the last batch held."""
        assert self._wake is not None
        if self.expecting is None:
            if sum(len(j.rows) for j in self._pending) < self.max_rows:
                await asyncio.sleep(self.window_s)
            return
        # a batch that can join the running one waits only ``window_s``: the engine is not idle meanwhile
        joining = self.in_flight > 1 and bool(self._flights)
        deadline = time.perf_counter() + (self.window_s if joining else
                                          max(self.window_s, self.wait_fraction * self._last_seconds))
        while True:
            rows = sum(len(j.rows) for j in self._pending)
            remaining = deadline - time.perf_counter()
            if rows >= self.max_rows or remaining <= 0 or (self.expecting() <= 0 and (
                    joining or rows >= self._last_rows)):
                return
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), remaining)

    def notify(self) -> None:
        """Tell a waiting batch that ``expecting()`` changed (a job that was on its way will not come)."""
        if self._wake is not None:
            self._wake.set()

    def _run_batch(self, jobs: list[_Job[RowT, OutT]]) -> list[tuple[list[OutT], BatchInfo] | BaseException]:
        """In the worker thread: the whole batch at once, or on failure each job alone (but those answered)."""
        rows = [r for j in jobs for r in j.rows]
        start = time.perf_counter()
        answered: set[int] = set()  # jobs answered early
        try:
            if self.early:
                outputs = self.run_rows(rows, self._answerer(jobs, len(rows), start, answered))
            else:
                outputs = self.run_rows(rows)
        except Exception as exc:
            if len(jobs) == 1 or isinstance(exc, self.whole_batch_errors):
                return [exc] * len(jobs)
            return [exc if i in answered else self._run_batch([j])[0] for i, j in enumerate(jobs)]
        seconds = time.perf_counter() - start
        results: list[tuple[list[OutT], BatchInfo] | BaseException] = []
        for job in jobs:
            info = BatchInfo(queue_s=start - job.queued_at, generate_s=seconds, batch_rows=len(rows))
            results.append((outputs[: len(job.rows)], info))
            outputs = outputs[len(job.rows):]
        return results

    def _answerer(self, jobs: list[_Job[RowT, OutT]], rows: int, start: float,
                  answered: set[int]) -> Callable[[list[int], list[OutT]], None]:
        """``on_rows`` for a batch: collects rows that ended early and answers each job whose rows all have."""
        assert self._loop is not None
        loop, got = self._loop, dict[int, OutT]()
        owner: list[int] = []  # each row's job
        first: list[int] = []  # each job's first row
        for i, job in enumerate(jobs):
            first.append(len(owner))
            owner += [i] * len(job.rows)

        def on_rows(indices: list[int], outputs: list[OutT]) -> None:
            got.update(zip(indices, outputs, strict=True))
            for i in sorted({owner[r] for r in indices}):
                job, begin = jobs[i], first[i]
                if i in answered or any(r not in got for r in range(begin, begin + len(job.rows))):
                    continue
                answered.add(i)
                info = BatchInfo(queue_s=start - job.queued_at, generate_s=time.perf_counter() - start,
                                 batch_rows=rows)
                result = ([got[r] for r in range(begin, begin + len(job.rows))], info)
                loop.call_soon_threadsafe(_answer, job.future, result)

        return on_rows

    async def aclose(self) -> None:
        """Stop the worker task and the thread (queued jobs and those of the batch in flight are cancelled); a later
        ``submit`` starts them again."""
        worker, loop = self._worker, self._loop
        if worker is not None and loop is not None:
            if loop is asyncio.get_running_loop():
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker
            elif not loop.is_closed():
                loop.call_soon_threadsafe(worker.cancel)
        for flight in list(self._flights):
            flight.cancel()
        self._flights.clear()
        for job in [*self._pending, *self._running]:  # the batches in flight too: nobody would answer them
            if not job.future.done():
                job.future.cancel()
        self._pending.clear()
        self._running = []
        self._worker = self._loop = self._wake = None
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
