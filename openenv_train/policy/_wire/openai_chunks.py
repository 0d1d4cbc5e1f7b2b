"""The OpenAI chat-completions streaming format: the ``chat.completion.chunk`` bodies of one answer. Pure functions.

An answer streams as: one chunk per choice with ``delta: {"role": "assistant", "content": ""}``, then content and
``tool_calls`` deltas (``logprobs.content`` of their tokens when asked; vLLM-style ``token_ids`` and
``token_logprobs`` when the backend has them), one chunk per choice with an empty delta and its
``finish_reason``, a chunk with ``usage`` and no choices when ``stream_options.include_usage`` is set, and
``data: [DONE]`` (written by the endpoint).
"""

from __future__ import annotations

from typing import Any

from .._errors import PolicyError
from .._types import ChatRequest, ChatResult, ChoiceDelta, StreamStart

__all__ = ["ChunkWriter"]


class ChunkWriter:
    """The chunks of one streamed answer, in the order they are sent.

    Args:
        request: The parsed request (``n``, ``logprobs``, ``include_usage``).
        request_id: The ``chatcmpl-...`` id every chunk carries.
        created: Unix time of the request.
        model: The model name every chunk carries.
    """

    def __init__(self, request: ChatRequest, *, request_id: str, created: int, model: str) -> None:
        self.request, self.id, self.created, self.model = request, request_id, created, model

    def _chunk(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        chunk: dict[str, Any] = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                 "model": self.model, "system_fingerprint": None, "choices": choices}
        if self.request.include_usage:  # OpenAI: null on every chunk but the last
            chunk["usage"] = None
        return chunk

    def start(self, start: StreamStart) -> list[dict[str, Any]]:
        """The role chunk of each choice; the first also carries ``prompt_token_ids`` when the backend has them."""
        chunks = [self._chunk([{"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                                "finish_reason": None}]) for i in range(self.request.sampling.n)]
        if start.prompt_token_ids is not None:
            chunks[0]["prompt_token_ids"] = start.prompt_token_ids
        return chunks

    def delta(self, delta: ChoiceDelta) -> dict[str, Any]:
        """The chunk of one piece of a choice."""
        body: dict[str, Any] = {}
        if delta.content is not None:
            body["content"] = delta.content
        if delta.tool_calls:
            body["tool_calls"] = delta.tool_calls
        logprobs = None
        if self.request.sampling.logprobs:
            logprobs = {"content": delta.openai_logprobs or []}
        choice: dict[str, Any] = {"index": delta.index, "delta": body, "logprobs": logprobs, "finish_reason": None}
        if delta.token_ids:
            choice["token_ids"] = delta.token_ids
        if delta.logprobs:
            choice["token_logprobs"] = delta.logprobs
        return self._chunk([choice])

    def finish(self, result: ChatResult) -> list[dict[str, Any]]:
        """Each choice's ``finish_reason`` chunk, then the ``usage`` chunk when asked for."""
        chunks = [self._chunk([{"index": i, "delta": {}, "logprobs": None, "finish_reason": choice.finish_reason}])
                  for i, choice in enumerate(result.choices)]
        if self.request.include_usage:
            chunks.append({**self._chunk([]), "usage": result.usage})
        return chunks

    @staticmethod
    def error(exc: PolicyError) -> dict[str, Any]:
        """The event of an error after the stream began (OpenAI's clients raise it): ``{"error": {...}}``."""
        return exc.to_json()
