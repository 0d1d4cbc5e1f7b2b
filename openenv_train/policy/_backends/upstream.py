"""A policy backend that forwards to any OpenAI-compatible server (vLLM, a hosted API, another PolicyServer).

It asks for token ids where the server may give them (vLLM's ``return_token_ids``, ``logprobs``; our own
endpoint always returns ``prompt_token_ids``, ``token_ids`` and ``token_logprobs``). A server that rejects
those extras is asked plainly from then on. An answer without exact ids is still served, and its turn is
marked ``rollout_type="eval"``: it can be scored and evaluated, not trained on. A streamed request is forwarded
as a stream: each upstream chunk is passed on as it arrives, and the answer is the chunks added up.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Literal

from .._chat_client import ChatClient, ChatStream, ChatTransportError
from .._errors import InvalidRequest, UpstreamFailed
from .._stream_events import DeltaFold
from .._types import ChatChoice, ChatRequest, ChatResult, ChoiceDelta, StreamEvent, StreamStart

__all__ = ["UpstreamBackend", "UpstreamConfig"]


@dataclass(frozen=True)
class UpstreamConfig:
    """Options of an :class:`UpstreamBackend`."""

    token_ids: Literal["auto", "never"] = "auto"
    """"auto" asks for token ids and logprobs (dropping the extras if the server refuses them); "never" sends
    requests as they came (every turn is then "eval")."""
    timeout_s: float = 600.0
    """Longest wait for one upstream answer."""
    max_connections: int = 256
    """Connections kept to the upstream server."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra headers on every upstream request."""


class UpstreamBackend:
    """Forward chat requests to ``base_url`` (e.g. ``http://host:8000/v1``).

    Args:
        base_url: The upstream's OpenAI base URL, ending in ``/v1``.
        api_key: Sent as ``Authorization: Bearer``; None sends none.
        model: Model name to ask for; None forwards the caller's, or the upstream's first listed model.
        config: Token-id policy, timeout and connection limits.
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, model: str | None = None,
                 config: UpstreamConfig | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.config = config or UpstreamConfig()
        self.extras_ok = self.config.token_ids == "auto"
        self._chat = ChatClient(self.base_url, api_key=api_key, headers=self.config.headers,
                                timeout_s=self.config.timeout_s, max_connections=self.config.max_connections)

    @property
    def model_id(self) -> str:
        """The model asked for, or the upstream URL when the caller chooses."""
        return self.model or self.base_url

    async def _post(self, body: dict[str, Any]) -> tuple[int, Any]:
        url = self._chat.chat_url
        try:
            reply = await self._chat.chat(body)
        except ChatTransportError as exc:
            if exc.timed_out:
                raise UpstreamFailed(f"{url} did not answer within {self.config.timeout_s:g}s") from None
            raise UpstreamFailed(f"cannot reach {url}: {exc.kind}: {exc.detail}") from None
        if reply.data is None:
            return reply.status, {"error": {"message": reply.text[:500]}}
        return reply.status, reply.data

    async def chat(self, request: ChatRequest) -> ChatResult:
        """Forward one request and read exact ids from the answer where it has them.

        Raises:
            InvalidRequest: the upstream refused the request (4xx).
            UpstreamFailed: the upstream failed, timed out or could not be reached.
        """
        _forwardable(request)
        start = time.perf_counter()
        body = {k: v for k, v in request.body.items() if k not in ("stream", "stream_options")}
        body["model"] = self.model or body.get("model") or await self._first_model()
        extras = self.extras_ok
        status, data = await self._post(self._with_extras(body, request) if extras else body)
        if status == 400 and extras:
            status, data = await self._post(body)
            if status < 400:
                self.extras_ok = False  # the server refuses the extras, not the request
        if status >= 400:
            raise _refusal(status, data)
        info = {"backend": "upstream", "upstream": self.base_url, "upstream_id": data.get("id"),
                "timings": {"upstream_s": time.perf_counter() - start}}
        return _result(data, request, sent=body, info=info)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Forward one request as a stream (asking for usage and token ids as :meth:`chat` does); closing this
        stream closes the upstream one.

        Raises:
            InvalidRequest: the upstream refused the request (4xx), before the first event.
            UpstreamFailed: the upstream failed, timed out, could not be reached, or broke off its stream.
        """
        _forwardable(request)
        start = time.perf_counter()
        body = {k: v for k, v in request.body.items() if k not in ("stream", "stream_options")}
        body["model"] = self.model or body.get("model") or await self._first_model()
        plain = {**body, "stream": True}
        tries = [{**self._with_extras(body, request), "stream": True, "stream_options": {"include_usage": True}},
                 plain] if self.extras_ok else [plain]
        for attempt, payload in enumerate(tries):
            try:
                async with self._chat.stream(payload) as reply:
                    if reply.status >= 400:
                        data = (await reply.body()).data
                        if reply.status == 400 and attempt + 1 < len(tries):
                            continue
                        raise _refusal(reply.status, data if data is not None else {"error": {"message": ""}})
                    if attempt:
                        self.extras_ok = False  # the server refuses the extras, not the request
                    async for event in self._forward(reply, request, body, start):
                        yield event
                    return
            except ChatTransportError as exc:
                url = self._chat.chat_url
                if exc.timed_out:
                    raise UpstreamFailed(f"{url} did not answer within {self.config.timeout_s:g}s") from None
                raise UpstreamFailed(f"cannot reach {url}, or its stream broke off: {exc.kind}: {exc.detail}") from None

    async def _forward(self, reply: ChatStream, request: ChatRequest, sent: dict[str, Any],
                       start: float) -> AsyncGenerator[StreamEvent, None]:
        """Pass each upstream chunk on as deltas, then the answer they add up to."""
        fold, finish = DeltaFold(), dict[int, Any]()
        head: dict[str, Any] = {"id": None, "model": None, "prompt_token_ids": None, "usage": None}
        began = False
        async for chunk in _chunks(reply):
            for key in ("id", "model", "prompt_token_ids", "usage"):
                head[key] = chunk.get(key) or head[key]
            for raw in chunk.get("choices") or ():
                head["prompt_token_ids"] = raw.get("prompt_token_ids") or head["prompt_token_ids"]
            if not began:
                began = True
                yield StreamStart(str(head["model"] or sent["model"]), head["prompt_token_ids"],
                                  exact=isinstance(head["prompt_token_ids"], list))
            for raw in chunk.get("choices") or ():
                index = int(raw.get("index") or 0)
                finish[index] = raw.get("finish_reason") or finish.get(index)
                delta = _delta(index, raw)
                if delta.content or delta.tool_calls or delta.token_ids or delta.logprobs:
                    fold.add(delta)
                    yield delta
        if not began:
            raise UpstreamFailed("the upstream stream ended without a chunk")
        choices = []
        for index in sorted(finish):
            ids, logprobs, entries = fold.tokens(index)
            choices.append({"index": index, "message": fold.message(index), "finish_reason": finish[index] or "stop",
                            "logprobs": {"content": entries} if entries is not None else None,
                            "token_ids": ids or None, "token_logprobs": logprobs or None})
        data = {**head, "choices": choices}
        info = {"backend": "upstream", "upstream": self.base_url, "upstream_id": head["id"],
                "timings": {"upstream_s": time.perf_counter() - start}}
        yield _result(data, request, sent=sent, info=info)

    def _with_extras(self, body: dict[str, Any], request: ChatRequest) -> dict[str, Any]:
        out = {**body, "logprobs": True, "return_token_ids": True}
        if not request.sampling.logprobs:  # the caller sees no logprobs, so token text does not matter
            out["return_tokens_as_token_ids"] = True
        return out

    async def _first_model(self) -> str:
        try:
            reply = await self._chat.models()
            self.model = str(reply.data["data"][0]["id"])
        except Exception as exc:
            raise UpstreamFailed(f"no model named in the request and {self.base_url}/models lists none: {exc}") from None
        return self.model

    async def aclose(self) -> None:
        """Close the connection pool (a later call opens a new one)."""
        await self._chat.aclose()


def _forwardable(request: ChatRequest) -> None:
    """Refuse what an OpenAI-compatible server would ignore rather than enforce."""
    if request.constraint is not None and request.constraint.order != "given":
        raise InvalidRequest("'guided_choice_order' is enforced only by a local model (LocalBackend); an upstream "
                             "server would ignore it: drop it, or serve the model locally", param="guided_choice_order")

def _refusal(status: int, data: Any) -> Exception:
    error = data.get("error") if isinstance(data, dict) else None
    message = (error.get("message") if isinstance(error, dict) else None) or str(data)[:500]
    if status in (400, 404, 413, 422):
        return InvalidRequest(f"the upstream server refused the request ({status}): {message}", code=f"upstream_{status}")
    return UpstreamFailed(f"the upstream server failed ({status}): {message}", upstream_status=status)


async def _chunks(reply: ChatStream) -> AsyncGenerator[dict[str, Any], None]:
    """The upstream's chunks; an error event or a chunk that is not JSON ends the stream with UpstreamFailed."""
    try:
        async for chunk in reply.events():
            if not isinstance(chunk, dict):
                raise UpstreamFailed(f"the upstream sent a stream event that is not an object: {str(chunk)[:300]}")
            if chunk.get("error") is not None:
                error = chunk["error"]
                message = error.get("message") if isinstance(error, dict) else error
                raise UpstreamFailed(f"the upstream stream failed: {str(message)[:500]}")
            yield chunk
    except ValueError as exc:
        raise UpstreamFailed(f"the upstream sent a stream event that is not JSON: {exc}") from None


def _delta(index: int, raw: dict[str, Any]) -> ChoiceDelta:
    """One upstream chunk's choice as a delta, with its token ids where the upstream gives them."""
    delta = raw.get("delta") or {}
    ids_lp, values = _ids_from_logprobs(raw.get("logprobs"))
    logprobs = raw.get("logprobs")
    entries = logprobs.get("content") if isinstance(logprobs, dict) else None
    return ChoiceDelta(index, delta.get("content"), delta.get("tool_calls") or None,
                       list(raw.get("token_ids") or ids_lp or []), list(raw.get("token_logprobs") or values or []),
                       list(entries) if isinstance(entries, list) else None)


def _ids_from_logprobs(logprobs: Any) -> tuple[list[int] | None, list[float] | None]:
    """Completion ids (from ``token_id:<id>`` tokens) and logprobs out of an OpenAI ``logprobs`` object."""
    content = (logprobs or {}).get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None, None
    values = [min(float(c["logprob"]), 0.0) for c in content]
    tokens = [str(c.get("token", "")) for c in content]
    if all(t.startswith("token_id:") and t[9:].isdigit() for t in tokens):
        return [int(t[9:]) for t in tokens], values
    return None, values


def _result(data: dict[str, Any], request: ChatRequest, *, sent: dict[str, Any], info: dict[str, Any]) -> ChatResult:
    choices, exact = [], True
    raw = data.get("choices") or []
    if not raw:
        raise UpstreamFailed(f"the upstream answer has no choices: {str(data)[:300]}")
    prompt_ids = data.get("prompt_token_ids") or raw[0].get("prompt_token_ids")
    for entry in raw:
        ids_lp, values = _ids_from_logprobs(entry.get("logprobs"))
        ids = entry.get("token_ids") or ids_lp
        logprobs = entry.get("token_logprobs") or values
        if ids is None or logprobs is None or len(ids) != len(logprobs):
            exact, ids, logprobs = False, None, None
        message = dict(entry.get("message") or {"role": "assistant", "content": ""})
        # vLLM names the stop string that ended a choice in stop_reason (a token id when a stop token did)
        stopped = entry.get("stop_reason") if isinstance(entry.get("stop_reason"), str) else None
        choice = ChatChoice(message, entry.get("finish_reason") or "stop", ids, logprobs, stop_sequence=stopped)
        if request.sampling.logprobs:
            choice.openai_logprobs = entry.get("logprobs")
        choices.append(choice)
    exact = exact and isinstance(prompt_ids, list) and bool(prompt_ids)
    used = {k: v for k, v in sent.items() if k not in ("messages", "tools", "tool_choice", "model")}
    return ChatResult(str(data.get("model") or sent["model"]), choices, prompt_ids if exact else None, exact=exact,
                      sampling_used=used, info=info, reported_usage=data.get("usage"))
