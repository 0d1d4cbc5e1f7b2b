"""Capture of model calls: a store of open capture sessions, and builders of TrainingTurns.

A capture session is one episode seen from the policy endpoint. The rollout opens it with an id (which the
endpoint reads from the API key or a header), the endpoint records one :class:`TrainingTurn` per model call,
and the rollout closes it to get the episode's :class:`TrainingTrace`::

    store = CaptureStore()
    store.open_session("sk-episode-1", metadata={"episode_id": "e1"})
    store.record("sk-episode-1", build_turn(messages=[...], message={...}, prompt_token_ids=[...], ...))
    trace = store.close_session("sk-episode-1")

Turn metadata keys written here (see :data:`TURN_METADATA_KEYS`): ``turn`` (0-based index in the trace),
``sampling_requested`` (what the caller asked for), ``sampling_used`` (what the backend applied),
``timings`` (seconds; ``started_at`` is a Unix time), ``finish_reason``, ``model``.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ._errors import CaptureError, CaptureSessionExists, UnknownCaptureSession
from ._rows import TrainingTrace, TrainingTurn

__all__ = ["TURN_METADATA_KEYS", "CaptureStore", "build_turn", "completion_loss_mask", "openai_logprobs"]

#: Keys :func:`build_turn` and :class:`CaptureStore` put in ``TrainingTurn.metadata``.
TURN_METADATA_KEYS = ("turn", "sampling_requested", "sampling_used", "timings", "finish_reason", "model")


class _Session:
    __slots__ = ("metadata", "node_ids", "turns")

    def __init__(self, metadata: dict[str, Any]) -> None:
        self.metadata = metadata
        self.turns: list[TrainingTurn] = []
        self.node_ids: set[str] = set()


def _trace(turns: list[TrainingTurn]) -> TrainingTrace:
    """A trace of turns :meth:`CaptureStore.record` validated (unique node ids included), without validating each
    again: the endpoint reads a session's turns on every call, and validating its token ids each time made a long
    session's calls cost more and more."""
    return TrainingTrace.model_construct(turns=turns)


class CaptureStore:
    """Open capture sessions keyed by session id; safe to call from threads and from asyncio tasks.

    Every method takes the lock only for in-memory work and never awaits, so it neither blocks an event loop
    for long nor interleaves two ``record()`` calls: turns are kept in the order the calls were made.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}

    def open_session(self, session_id: str, *, metadata: Mapping[str, Any] | None = None) -> None:
        """Start capturing calls made with ``session_id``.

        Raises:
            CaptureSessionExists: the id is already open.
            ValueError: the id is empty.
        """
        if not session_id:
            raise ValueError("capture session id must be a non-empty string")
        with self._lock:
            if session_id in self._sessions:
                raise CaptureSessionExists(session_id)
            self._sessions[session_id] = _Session(dict(metadata or {}))

    def record(self, session_id: str, turn: TrainingTurn | Mapping[str, Any]) -> TrainingTurn:
        """Append one model call to the session and return the turn as stored.

        A mapping is validated into a :class:`TrainingTurn`; a missing ``node_id`` becomes ``turn-<index>``
        and a missing ``metadata["turn"]`` becomes the turn's index. The caller's object is not modified.

        Raises:
            UnknownCaptureSession: the session is not open.
            CaptureError: the ``node_id`` is already used in this session.
        """
        fields = turn.model_dump() if isinstance(turn, TrainingTurn) else dict(turn)
        with self._lock:
            session = self._session(session_id)
            index = len(session.turns)
            if not fields.get("node_id"):
                fields["node_id"] = f"turn-{index}"
                while fields["node_id"] in session.node_ids:
                    fields["node_id"] = f"turn-{index}-{uuid.uuid4().hex[:6]}"
            if fields["node_id"] in session.node_ids:
                raise CaptureError(f"node_id {fields['node_id']!r} is already recorded in this capture session")
            metadata = dict(fields.get("metadata") or {})
            metadata.setdefault("turn", index)
            fields["metadata"] = metadata
            stored = TrainingTurn.model_validate(fields)
            session.turns.append(stored)
            session.node_ids.add(stored.node_id)
            return stored

    def get(self, session_id: str) -> TrainingTrace:
        """The turns recorded so far (a copy; the session stays open)."""
        with self._lock:
            return _trace(list(self._session(session_id).turns))

    def metadata(self, session_id: str) -> dict[str, Any]:
        """The metadata given to :meth:`open_session` (a copy)."""
        with self._lock:
            return dict(self._session(session_id).metadata)

    def close_session(self, session_id: str) -> TrainingTrace:
        """Forget the session and return its trace; later calls with this id raise UnknownCaptureSession."""
        with self._lock:
            session = self._session(session_id)
            del self._sessions[session_id]
        return _trace(session.turns)

    def __contains__(self, session_id: object) -> bool:
        with self._lock:
            return session_id in self._sessions

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _session(self, session_id: str) -> _Session:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise UnknownCaptureSession(session_id) from None


def openai_logprobs(logprobs: Mapping[str, Any] | None) -> list[float]:
    """Per-token logprobs from an OpenAI chat choice's ``logprobs`` (``{"content": [{"logprob": ...}]}``).

    Tiny positive values from float rounding are clamped to 0.0.

    >>> openai_logprobs({"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": 1e-9}]})
    [-0.5, 0.0]
    """
    if not logprobs:
        return []
    return [min(float(entry["logprob"]), 0.0) for entry in logprobs.get("content") or []]


def completion_loss_mask(n_prompt: int, n_completion: int) -> list[int]:
    """The default loss mask: 0 over the prompt, 1 over the completion.

    >>> completion_loss_mask(2, 3)
    [0, 0, 1, 1, 1]
    """
    return [0] * n_prompt + [1] * n_completion


def build_turn(
    *,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    choices: Sequence[Mapping[str, Any]] | None = None,
    message: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    prompt_token_ids: Sequence[int] = (),
    completion_token_ids: Sequence[int] = (),
    logprobs: Sequence[float] | None = None,
    completion_mask: Sequence[int] | None = None,
    sampling_requested: Mapping[str, Any] | None = None,
    sampling_used: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    model: str | None = None,
    node_id: str | None = None,
) -> TrainingTurn:
    """A TrainingTurn from one chat-completion call.

    Args:
        messages: the request's ``messages`` (OpenAI format).
        tools: the request's ``tools``.
        choices: the response's ``choices``; or give ``message`` (+ ``finish_reason``) for one choice.
        message: the assistant message of a single-choice response.
        finish_reason: its finish reason (``"stop"``, ``"length"``, ``"tool_calls"``).
        prompt_token_ids: the tokens the model was fed (the rendered chat template).
        completion_token_ids: the tokens it sampled (of the first choice).
        logprobs: one logprob per completion token (see :func:`openai_logprobs`); positive rounding noise
            is clamped to 0.0. Omit when the backend gives none.
        completion_mask: per completion token 1 (model token, trained on) or 0 (e.g. env tokens spliced in);
            default all ones. The prompt part of ``loss_mask`` is always zeros.
        sampling_requested: sampling parameters the caller asked for.
        sampling_used: parameters the backend actually applied.
        timings: seconds per phase; ``started_at`` (Unix time) dates the call in exports.
        model: the model that answered.
        node_id: the turn's id; default a random one (the store keeps it unique in the trace).

    Raises:
        ValueError: a rule of TrainingTurn is broken (e.g. logprob count, negative token id).
    """
    if choices is None:
        choices = [] if message is None else [{"index": 0, "message": dict(message), "finish_reason": finish_reason}]
    elif message is not None:
        raise ValueError("give either choices or message, not both")
    prompt, completion = list(prompt_token_ids), list(completion_token_ids)
    mask = list(completion_mask) if completion_mask is not None else [1] * len(completion)
    if len(mask) != len(completion):
        raise ValueError(f"completion_mask has {len(mask)} entries for {len(completion)} completion tokens")
    metadata: dict[str, Any] = {
        "sampling_requested": dict(sampling_requested or {}),
        "sampling_used": dict(sampling_used or {}),
        "timings": dict(timings or {}),
        "finish_reason": finish_reason if finish_reason is not None else _first_finish_reason(choices),
    }
    if model is not None:
        metadata["model"] = model
    return TrainingTurn(
        node_id=node_id or f"turn-{uuid.uuid4().hex[:12]}",
        prompt_token_ids=prompt,
        completion_token_ids=completion,
        per_token_logps=[min(float(lp), 0.0) for lp in logprobs] if logprobs is not None else [],
        loss_mask=[0] * len(prompt) + mask if (prompt or completion) else [],
        request={"messages": [dict(m) for m in messages], "tools": [dict(t) for t in tools or []]},
        response={"choices": [dict(c) for c in choices]},
        metadata=metadata,
    )


def _first_finish_reason(choices: Sequence[Mapping[str, Any]]) -> str | None:
    reason = choices[0].get("finish_reason") if choices else None
    return str(reason) if reason is not None else None
