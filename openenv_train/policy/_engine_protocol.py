"""The messages between a local backend and its engine process, and what each side keeps while a batch is in
flight (no pipes, processes or clocks here: :mod:`._engine_process` moves the messages).

One batch at a time, in order::

    endpoint -> engine   Batch(rows, streamed, version)
    engine -> endpoint   Started, then Tokens per step (streamed rows only), then Done(outputs | error, stats)
    endpoint -> engine   Cancel(rows)     a streamed row's client left (sent when its next tokens arrive)

Rows travel without their guide and stream: the engine builds guides from ``Row.constraint``, and
:class:`EngineStreams` stands in for the streams, collecting a step's tokens into one :class:`Tokens` message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ._engine_core import CoreSettings, PrefixStats
from ._generation import Row, RowOutput, RowStream

__all__ = ["Batch", "BatchInFlight", "Cancel", "Done", "EngineStreams", "Hello", "Setup", "Started", "Tokens",
           "wire_rows"]

#: One streamed token: row index, token id, logprob, top alternatives.
Pushed = tuple[int, int, float, list[tuple[int, float]]]


@dataclass
class Setup:
    """First message to a new engine: what it decodes with (tensors arrive as shared memory)."""

    model: Any
    tokenizer: Any
    settings: CoreSettings


@dataclass(frozen=True)
class Hello:
    """The engine is ready: its pid and its torch threads."""

    pid: int
    threads: int


@dataclass
class Batch:
    """Rows to decode together (without guides or streams), the rows that stream, and the policy version."""

    batch_id: int
    rows: list[Row]
    streamed: list[int]
    version: Any = None


@dataclass(frozen=True)
class Cancel:
    """Stop these streamed rows of a batch at their next step."""

    batch_id: int
    rows: tuple[int, ...]


@dataclass(frozen=True)
class Started:
    """The engine began decoding a batch (after building its guides)."""

    batch_id: int


@dataclass
class Tokens:
    """One step's tokens of a batch's streamed rows."""

    batch_id: int
    pushed: list[Pushed]


@dataclass
class Done:
    """A batch's outputs, or the error that failed all of it; the prefix cache's counters after it."""

    batch_id: int
    outputs: list[RowOutput] | None = None
    error: BaseException | None = None
    stats: PrefixStats | None = None


def wire_rows(rows: list[Row]) -> tuple[list[Row], list[int]]:
    """Rows as an engine process takes them (no guide, no stream) and the indices of the streamed ones."""
    return ([dataclasses.replace(r, guide=None, stream=None) for r in rows],
            [i for i, r in enumerate(rows) if r.stream is not None])


class _EngineStream:
    """The engine's stand-in for one streamed row's stream."""

    def __init__(self, owner: EngineStreams, index: int) -> None:
        self.owner, self.index, self.cancelled = owner, index, False

    def push(self, token: int, logprob: float, top: list[tuple[int, float]]) -> None:
        self.owner.pending.append((self.index, token, logprob, top))


class EngineStreams:
    """The engine's side of a batch's streamed rows: streams to decode into, a step's tokens, cancellations."""

    def __init__(self, batch: Batch) -> None:
        self.batch_id = batch.batch_id
        self.streams = {i: _EngineStream(self, i) for i in batch.streamed}
        self.pending: list[Pushed] = []

    def rows(self, rows: list[Row]) -> list[Row]:
        """``rows`` with their stand-in streams."""
        return [dataclasses.replace(r, stream=self.streams[i]) if i in self.streams else r
                for i, r in enumerate(rows)]

    def take(self) -> Tokens | None:
        """The tokens pushed since the last call, as one message (None: none)."""
        if not self.pending:
            return None
        pushed, self.pending = self.pending, []
        return Tokens(self.batch_id, pushed)

    def cancel(self, message: Cancel) -> None:
        """Mark rows cancelled (called from the engine's receiving thread; the decode loop reads the flag)."""
        if message.batch_id == self.batch_id:
            for i in message.rows:
                if i in self.streams:
                    self.streams[i].cancelled = True


@dataclass
class BatchInFlight:
    """The endpoint's side of a batch: hands streamed tokens to the rows' streams and says which rows to cancel."""

    batch_id: int
    streams: dict[int, RowStream]
    started: bool = False
    cancelled: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, batch_id: int, rows: list[Row]) -> BatchInFlight:
        """The batch of ``rows`` (their streams are the endpoint's)."""
        return cls(batch_id, {i: r.stream for i, r in enumerate(rows) if r.stream is not None})

    def tokens(self, message: Tokens) -> Cancel | None:
        """Push a step's tokens to their streams; the rows whose client has left since, to cancel (or None)."""
        for index, token, logprob, top in message.pushed:
            self.streams[index].push(token, logprob, top)
        gone = tuple(i for i, s in self.streams.items() if i not in self.cancelled and s.cancelled)
        if not gone:
            return None
        self.cancelled.update(gone)
        return Cancel(self.batch_id, gone)
