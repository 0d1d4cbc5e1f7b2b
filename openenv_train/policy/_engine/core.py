"""What decodes a local backend's batches, wherever it runs: the model, its tokenizer, the constrained-decoding
guides, the prefix cache and the decode settings (:class:`EngineCore`), and the in-thread engine over it.

The same core runs in the backend's own process (:class:`ThreadEngine`, in the batcher's worker thread) or in an
engine process of its own (:mod:`.process`). A row that comes without its guide but with its constraint
(as rows sent to another process do) gets the guide built here, cached by constraint content.

torch is imported when a batch runs, so importing this module is cheap.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from .._errors import PolicyError
from .continuous import ContinuousDecode, Ended
from .generation import Row, RowOutput, generate_rows
from .prefix_cache import PrefixCache

__all__ = ["DECODING", "CoreSettings", "EngineCore", "PrefixStats", "ThreadEngine"]


@dataclass(frozen=True)
class CoreSettings:
    """What an :class:`EngineCore` needs besides its model and tokenizer (plain values: sent to an engine process)."""

    pad_id: int
    """Id that pads prompts on the left."""
    end_id: int
    """End-of-turn id a constraint's guide ends with."""
    fast: bool = True
    """Decode with the static-KV fast path where the model supports it."""
    prefix_bytes: int = 0
    """Prefix cache budget; 0 turns the cache off."""
    threads: int = 0
    """torch threads while a batch decodes (0: torch's setting)."""
    switch_s: float = 0.0
    """Python's switch interval while a batch decodes (0: Python's setting)."""
    continuous: bool = False
    """Let batches join a running decode (:mod:`.continuous`) where the model decodes on the fast path."""


@dataclass(frozen=True)
class PrefixStats:
    """How much a prefix cache reused, as an engine process reports it after each batch."""

    hits: int = 0
    """Lookups that found a prefix."""
    reused_tokens: int = 0
    """Prompt tokens not prefilled again thanks to a hit."""
    entries: int = 0
    """Sequences held."""
    nbytes: int = 0
    """Memory their keys and values take."""


class EngineCore:
    """Decodes batches of rows with one model; used from one thread at a time.

    Args:
        model: The causal LM (its weights are used as they are at each forward pass).
        tokenizer: Its tokenizer (stop strings, the completions' text, guides).
        settings: Padding, fast path, cache budget and decode settings.
    """

    def __init__(self, model: Any, tokenizer: Any, settings: CoreSettings) -> None:
        self.model, self.tokenizer, self.settings = model, tokenizer, settings
        self.prefix_cache = PrefixCache(settings.prefix_bytes) if settings.prefix_bytes else None
        self._guides: Any = None  # GuideCache, built for the first row that comes without its guide
        self.joining = ContinuousDecode(model, tokenizer, settings.pad_id, self.prefix_cache) \
            if settings.continuous and settings.fast and ContinuousDecode.supports(model) else None
        """Where batches join a running decode (None: they decode one at a time, with :meth:`run`)."""
        self._joined: dict[Any, tuple[list[RowOutput | None], list[int]]] = {}  # key -> outputs so far, rows decoding
        self._busy = ExitStack()

    def run(self, rows: list[Row], version: Any = None, on_step: Callable[[], None] | None = None) -> list[RowOutput]:
        """Every row's output, in order; a row whose constraint cannot be built into a guide gets that error.

        Raises:
            Exception: whatever the model raises (the whole batch failed).
        """
        outputs, todo = self._guided(rows)
        todo = self._beams(outputs, todo)
        if todo:
            settings = self.settings
            with DECODING.using(settings.threads, settings.switch_s):
                done = generate_rows(self.model, self.tokenizer, [row for _, row in todo], pad_id=settings.pad_id,
                                     fast=settings.fast, prefix=self.prefix_cache, version=version, on_step=on_step)
            for (i, _), out in zip(todo, done, strict=True):
                outputs[i] = out
        return [out if out is not None else RowOutput() for out in outputs]

    def add(self, batches: list[tuple[Any, list[Row], Callable[[], None] | None]],
            version: Any = None) -> list[Ended]:
        """Let batches (each a key, its rows and its streams' flush, or None) join the running decode together
        (``joining`` must be set and admit ``version``); back at once, a batch none of whose rows decodes (each
        failed its constraint), or every batch if their prefill raised."""
        assert self.joining is not None
        ended, joining = [], []
        for key, rows, on_step in batches:
            outputs, todo = self._guided(rows)
            todo = self._beams(outputs, todo)
            if not todo:
                ended.append(Ended(key, [out if out is not None else RowOutput() for out in outputs]))
                continue
            self._joined[key] = (outputs, [i for i, _ in todo])
            joining.append((key, [row for _, row in todo], on_step))
        if not joining:
            return ended
        if self.joining.idle:
            self._busy.enter_context(DECODING.using(self.settings.threads, self.settings.switch_s))
        try:
            self.joining.add(joining, version)
        except Exception as exc:
            for key, _, _ in joining:
                del self._joined[key]
            self._settle()
            return [*ended, *(Ended(key, exc) for key, _, _ in joining)]
        return ended

    def step(self) -> list[Ended]:
        """One step of every joined batch: those that ended (with their outputs, or the error that ended them),
        and rows that ended before the rest of their batch (their positions in the batch as it was added)."""
        assert self.joining is not None
        ended = []
        for end in self.joining.step():
            outputs, decoded = self._joined[end.key]
            result = end.outputs
            if end.rows is not None:
                end = Ended(end.key, result, [decoded[i] for i in end.rows])
            else:
                del self._joined[end.key]
                if not isinstance(result, BaseException):
                    for i, out in zip(decoded, result, strict=True):
                        outputs[i] = out
                    end = Ended(end.key, [out if out is not None else RowOutput() for out in outputs])
            ended.append(end)
        self._settle()
        return ended

    def _settle(self) -> None:
        if self.joining is not None and self.joining.idle:
            self._busy.close()

    def _guided(self, rows: list[Row]) -> tuple[list[RowOutput | None], list[tuple[int, Row]]]:
        """The rows with their guides built (from their constraints), and an error output for each row whose
        constraint cannot be."""
        outputs: list[RowOutput | None] = [None] * len(rows)
        todo: list[tuple[int, Row]] = []
        for i, row in enumerate(rows):
            if row.guide is None and row.constraint is not None:
                try:
                    row = dataclasses.replace(row, guide=self.guide_for(row.constraint))
                except PolicyError as exc:
                    outputs[i] = RowOutput(error=exc)
                    continue
            todo.append((i, row))
        return outputs, todo

    def _beams(self, outputs: list[RowOutput | None], todo: list[tuple[int, Row]]) -> list[tuple[int, Row]]:
        """Decode the beam-search rows of ``todo`` (all together, now, into ``outputs``); the sampled rows left.
        Beam rows never join a running decode: they decode between its steps, in one batch of their own."""
        beams = [(i, row) for i, row in todo if row.params.use_beam_search]
        if not beams:
            return todo
        from .beam import beam_rows

        settings = self.settings
        with DECODING.using(settings.threads, settings.switch_s):
            done = beam_rows(self.model, self.tokenizer, [row for _, row in beams], pad_id=settings.pad_id)
        for (i, _), out in zip(beams, done, strict=True):
            outputs[i] = out
        return [(i, row) for i, row in todo if not row.params.use_beam_search]

    def guide_for(self, constraint: Any) -> Any:
        """The guide of ``constraint`` (cached by content).

        Raises:
            InvalidRequest: the constraint cannot be enforced with this tokenizer.
        """
        from .guide import GuideCache

        if self._guides is None:
            self._guides = GuideCache(self.tokenizer, self.settings.end_id)
        return self._guides.get(constraint)

    def stats(self) -> PrefixStats | None:
        """The prefix cache's counters (None when it is off)."""
        cache = self.prefix_cache
        if cache is None:
            return None
        return PrefixStats(cache.hits, cache.reused_tokens, len(cache), cache.nbytes)


class ThreadEngine:
    """An :class:`EngineCore` in this process: batches decode in the calling thread (the batcher's worker)."""

    kind = "thread"

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    @property
    def prefix_cache(self) -> PrefixCache | None:
        """The prefix cache itself."""
        return self.core.prefix_cache

    def run(self, rows: list[Row], version: Any = None) -> list[RowOutput]:
        """Decode a batch (rows keep their guides and streams)."""
        return self.core.run(rows, version)

    def sync_weights(self) -> None:
        """Nothing to do: the model is this process's own."""

    def close(self) -> None:
        """Nothing to release."""


class _DecodeSettings:
    """torch's thread setting and Python's switch interval are process-wide: backends decoding at once share one
    change and the last one out restores what was there before the first one in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._threads: int | None = None  # the settings before the first user changed them (None: unchanged)
        self._switch: float | None = None

    @contextmanager
    def using(self, threads: int, switch_s: float = 0.0) -> Iterator[None]:
        """``threads`` torch threads (0: unchanged) and a switch interval of ``switch_s`` (0: unchanged)."""
        import torch

        if not threads and not switch_s:
            yield
            return
        with self._lock:
            self._users += 1
            if threads:
                self._threads = torch.get_num_threads() if self._threads is None else self._threads
                torch.set_num_threads(threads)
            if switch_s:
                self._switch = sys.getswitchinterval() if self._switch is None else self._switch
                sys.setswitchinterval(switch_s)
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if not self._users:
                    if self._threads is not None:
                        torch.set_num_threads(self._threads)
                    if self._switch is not None:
                        sys.setswitchinterval(self._switch)
                    self._threads = self._switch = None


#: The process's decode settings, shared by every core that decodes in it.
DECODING = _DecodeSettings()
