"""The messages between a local backend and its engine process, and what each side keeps while a batch is in
flight (no pipes, processes or clocks here: :mod:`.process` moves the messages).

Per batch, in order (several batches may be in flight to an engine with continuous batching)::

    endpoint -> engine   Batch(rows, streamed, version)
    engine -> endpoint   Started, then Tokens per step (streamed rows only) and, with continuous batching,
                         Finished(rows, outputs) for rows that end before the rest, then Done(outputs | error, stats)
    endpoint -> engine   Cancel(rows)     a streamed row's client left (sent when its next tokens arrive)

Rows travel without their guide and stream. A guide goes as a :class:`GuideRef`: a number for the guide the
endpoint built, with its constraint the first time this engine sees that number (a Wordle list is 10,000 words:
100 rows sending it each would be 5 MB a batch), and for a cached list less a few words only those words' ids;
:class:`GuideSender` and :class:`GuideStore` keep both sides' numbers in step. A row whose guide has no known
constraint travels with ``Row.constraint`` and the engine builds its guide from that. :class:`EngineStreams`
stands in for the streams, collecting a step's tokens into one :class:`Tokens` message.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .core import CoreSettings, PrefixStats
from .generation import Row, RowOutput, RowStream
from .guide import Guide

__all__ = ["Batch", "BatchInFlight", "Cancel", "Done", "EngineStreams", "Finished", "GuideRef", "GuideSender", "GuideStore",
           "Hello", "Setup", "Started", "Tokens", "wire_rows"]

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


@dataclass(frozen=True)
class GuideRef:
    """A row's guide by number: the endpoint's guide ``key`` (built from ``constraint``, sent the first time),
    less the choices whose token ids are ``dropped`` (``Guide.excluding``), when set."""

    key: int
    constraint: Any = None
    dropped: tuple[tuple[int, ...], ...] | None = None


@dataclass
class Batch:
    """Rows to decode together (without guides or streams), their guides by number, the rows that stream, the
    policy version, and guide numbers the engine may forget."""

    batch_id: int
    rows: list[Row]
    streamed: list[int]
    version: Any = None
    guides: list[GuideRef | None] = field(default_factory=list)
    forget: list[int] = field(default_factory=list)


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
class Finished:
    """Rows of a batch that ended before the rest of it, with their outputs (continuous batching)."""

    batch_id: int
    rows: list[int]
    outputs: list[RowOutput]


@dataclass
class Done:
    """A batch's outputs, or the error that failed all of it; the prefix cache's counters after it."""

    batch_id: int
    outputs: list[RowOutput] | None = None
    error: BaseException | None = None
    stats: PrefixStats | None = None


def wire_rows(rows: list[Row], guides: GuideSender) -> tuple[list[Row], list[int], list[GuideRef | None]]:
    """Rows as an engine process takes them (no guide, no stream; no constraint when the guide goes by number),
    the indices of the streamed ones, and each row's guide by number (None: none, or built from its constraint)."""
    refs = [guides.ref(r.guide) if r.guide is not None else None for r in rows]
    wired = [dataclasses.replace(r, guide=None, stream=None, constraint=None if ref is not None else r.constraint)
             for r, ref in zip(rows, refs, strict=True)]
    return wired, [i for i, r in enumerate(rows) if r.stream is not None], refs


class GuideSender:
    """The endpoint's numbers for the guides it sends, and which ones the current engine already holds.

    Args:
        keep: Base guides numbered at once (older numbers are forgotten on both sides).
    """

    def __init__(self, keep: int = 16) -> None:
        self.keep = keep
        self._keys: OrderedDict[int, tuple[int, Guide]] = OrderedDict()  # id(guide) -> (number, guide kept alive)
        self._held: set[int] = set()  # numbers the engine holds
        self._forget: list[int] = []
        self._numbers = itertools.count()

    def ref(self, guide: Guide) -> GuideRef | None:
        """``guide`` by number (None when it has no constraint to build it from)."""
        base, dropped = (guide.base, tuple(tuple(d) for d in guide.dropped)) if guide.base is not None \
            else (guide, None)
        if base.source is None:
            return None
        entry = self._keys.get(id(base))
        if entry is None or entry[1] is not base:
            entry = self._keys[id(base)] = (next(self._numbers), base)
            while len(self._keys) > self.keep:
                _, (old, _) = self._keys.popitem(last=False)
                if old in self._held:
                    self._held.discard(old)
                    self._forget.append(old)
        self._keys.move_to_end(id(base))
        key = entry[0]
        first = key not in self._held
        self._held.add(key)
        return GuideRef(key, base.source if first else None, dropped)

    def forgotten(self) -> list[int]:
        """Numbers the engine may drop (each said once)."""
        forget, self._forget = self._forget, []
        return forget

    def resend(self) -> None:
        """Send every guide's constraint again (a new engine holds none; after a failed batch, which ones it holds
        is not known)."""
        self._held.clear()
        self._forget.clear()


class GuideStore:
    """The engine's guides by the endpoint's numbers.

    Args:
        build: Builds a guide from its constraint (the engine's guide cache).
    """

    def __init__(self, build: Callable[[Any], Guide]) -> None:
        self.build = build
        self._guides: dict[int, Guide] = {}

    def guide(self, ref: GuideRef) -> Guide:
        """The guide ``ref`` names (built when it comes with its constraint)."""
        if ref.constraint is not None:
            self._guides[ref.key] = self.build(ref.constraint)
        base = self._guides[ref.key]
        return base if ref.dropped is None else base.excluding([list(d) for d in ref.dropped])

    def forget(self, keys: list[int]) -> None:
        """Drop guides the endpoint no longer numbers."""
        for key in keys:
            self._guides.pop(key, None)


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
