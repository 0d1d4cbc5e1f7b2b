"""A streamed local request: tokens from the generating thread to the event loop, and from tokens to the deltas a
client may be sent now.

:class:`TokenFeed` takes each row's tokens as the batch samples them (in the generating thread) and wakes the
event loop at most once per step. :class:`RowText` decodes a row's tokens and releases text and tokens together,
holding back what may still change: an incomplete UTF-8 character, text that may become a stop string (the reply
ends before it), and with tools, text that may become a ``<tool_call>`` (sent as ``tool_calls`` at the end) and
trailing whitespace (the reply's text before a tool call is stripped). So the deltas sent add up to the reply the
same request gets without streaming.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from .._stream_events import whole_delta
from .._types import ChatChoice, ChoiceDelta
from .._wire.messages import TOOL_CALL_OPEN

__all__ = ["RowText", "Sampled", "TokenFeed"]

#: Tokens before the last one sent from which :class:`RowText` decodes the rest.
_ANCHOR = 6

#: One sampled token: its id, logprob and top alternatives.
Sampled = tuple[int, float, list[tuple[int, float]]]


class _RowStream:
    """The :class:`~.._engine.generation.RowStream` of one row of a feed."""

    def __init__(self, feed: TokenFeed, index: int) -> None:
        self.feed, self.index = feed, index

    @property
    def cancelled(self) -> bool:
        return self.feed.cancelled

    def push(self, token: int, logprob: float, top: list[tuple[int, float]]) -> None:
        self.feed.push(self.index, (token, logprob, top))


class TokenFeed:
    """The tokens of one request's rows, from the generating thread to the event loop that streams them.

    Args:
        rows: How many rows (choices) the request has.
    """

    def __init__(self, rows: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._lock = threading.Lock()
        self._new: list[list[Sampled]] = [[] for _ in range(rows)]
        self._woken = False
        self.ready = asyncio.Event()
        """Set when tokens are waiting (or :meth:`wake` was called)."""
        self.cancelled = False
        """Set by :meth:`cancel`: the rows stop at the next step."""

    def row(self, index: int) -> _RowStream:
        """The stream that row ``index`` pushes its tokens to."""
        return _RowStream(self, index)

    def push(self, index: int, sampled: Sampled) -> None:
        """In the generating thread: one token of row ``index``."""
        with self._lock:
            self._new[index].append(sampled)
            if self._woken:
                return
            self._woken = True
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            self._loop.call_soon_threadsafe(self.ready.set)

    def wake(self) -> None:
        """In the loop: wake the waiter (e.g. the generation ended)."""
        self.ready.set()

    def take(self) -> list[list[Sampled]]:
        """In the loop: the tokens pushed since the last call, per row."""
        with self._lock:
            new, self._new = self._new, [[] for _ in self._new]
            self._woken = False
        self.ready.clear()  # a push after the lock schedules its own set, which runs after this
        return new

    def cancel(self) -> None:
        """Stop the rows (their client left)."""
        self.cancelled = True


class RowText:
    """One row's released text and tokens.

    Args:
        index: The choice's index.
        decode: ``ids -> text`` as the non-streamed reply is decoded (special tokens skipped).
        entries: ``sampled -> OpenAI logprobs entries``, or None when the request did not ask for logprobs.
        stop: Stop strings of the request.
        stop_ids: Token ids that end the row (their text is not part of the reply).
        tools: Whether the reply's tool calls are parsed out of its text.
    """

    def __init__(self, index: int, decode: Callable[[list[int]], str],
                 entries: Callable[[list[Sampled]], list[dict[str, Any]]] | None, *, stop: tuple[str, ...] = (),
                 stop_ids: frozenset[int] = frozenset(), tools: bool = False) -> None:
        self.index, self.decode, self.entries = index, decode, entries
        self.stop, self.stop_ids, self.tools = stop, stop_ids, tools
        self.sampled: list[Sampled] = []
        self.sent_tokens = 0
        self.sent_text = ""

    def add(self, sampled: list[Sampled]) -> ChoiceDelta | None:
        """Take new tokens; the delta that may be sent now, or None."""
        self.sampled += sampled
        if len(self.sampled) == self.sent_tokens:
            return None
        ids = [s[0] for s in self.sampled]
        if ids[-1] in self.stop_ids:
            ids = ids[:-1]
        text = self._text(ids)
        if self._held(text) or not text.startswith(self.sent_text):
            return None
        new = self.sampled[self.sent_tokens:]
        delta = ChoiceDelta(self.index, text[len(self.sent_text):], None, [s[0] for s in new], [s[1] for s in new],
                            self.entries(new) if self.entries is not None else None)
        self.sent_tokens, self.sent_text = len(self.sampled), text
        return delta

    def _text(self, ids: list[int]) -> str:
        """``decode(ids)``, decoding only from a few tokens before what was sent (a whole decode per token would
        cost quadratic time): a tokenizer that writes a token differently at the start of a text (SentencePiece's
        leading space) writes it the same way in both decodes from the same anchor."""
        anchor = max(0, self.sent_tokens - _ANCHOR)
        head = self.decode(ids[anchor:self.sent_tokens])
        tail = self.decode(ids[anchor:])
        if anchor and tail.startswith(head) and self.sent_text.endswith(head):
            return self.sent_text + tail[len(head):]
        return self.decode(ids)

    def _held(self, text: str) -> bool:
        if text.endswith("\ufffd"):
            return True
        markers = [*self.stop, TOOL_CALL_OPEN] if self.tools else list(self.stop)
        if any(m in text or _ends_with_start_of(text, m) for m in markers):
            return True
        return self.tools and text[-1:].isspace()

    def finish(self, choice: ChatChoice) -> ChoiceDelta:
        """The rest of the reply, from the final choice: its text after what was sent, its tool calls, its tokens."""
        content = choice.message.get("content") or ""
        if not content.startswith(self.sent_text):  # cannot happen with the rules above; say so if it does
            raise AssertionError(f"streamed text {self.sent_text!r} is not a prefix of the reply {content!r}")
        return whole_delta(self.index, choice, tokens_from=self.sent_tokens, text_from=len(self.sent_text))


def _ends_with_start_of(text: str, marker: str) -> bool:
    """Whether ``text`` ends with a proper prefix of ``marker``."""
    return any(text.endswith(marker[:k]) for k in range(1, len(marker)))
