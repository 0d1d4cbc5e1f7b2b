"""The policy endpoint: an OpenAI-compatible HTTP server over a backend that records every call it answers.

``POST /v1/chat/completions`` answers in OpenAI's format (plus vLLM-style ``prompt_token_ids`` and per-choice
``token_ids``/``token_logprobs``); ``GET /v1/models`` and ``GET /health`` say what is served. A call that
names a capture session (``Authorization: Bearer <session id>`` or ``X-Capture-Session: <session id>``) is
recorded in the :class:`~openenv_train.trace.CaptureStore` as one TrainingTurn per choice.

The dialects agent harnesses speak are converted to the chat request they stand for, then answered and captured by
the same path; only their bodies, events and errors differ (:mod:`.._wire`): Anthropic Messages
(``POST /v1/messages``, Claude Code; ``x-api-key`` stands for the bearer key), the OpenAI Responses API
(``POST /v1/responses``, Codex) and Google's generateContent (``POST /v1beta/models/{model}:generateContent``,
Gemini CLI; ``x-goog-api-key``).

``"stream": true`` answers with server-sent events (:mod:`.._wire.openai_chunks`); the turn recorded is the one the
same call without streaming records. The head is sent with the first token, so what fails before it (an engine
that died holding the request: 503) is a plain HTTP error; after it, an error event. A client that leaves
mid-stream stops the generation, and what it had been sent is recorded as a cut turn (``finish_reason="abort"``,
metadata ``cut``).

With a ``token`` (argument, file or ``$OPENENV_TRAIN_POLICY_TOKEN``) every route but ``/health`` requires it:
an OpenAI client passes ``api_key="<token>:<session id>"`` (or ``api_key="<token>"`` plus an
``X-Capture-Session`` header, or no session); :meth:`PolicyServer.api_key_for` builds that key.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import urllib.parse
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ...core import (
    POLICY_TOKEN_ENV,
    bearer_of,
    loads,
    resolve_token,
    token_matches,
    warn_if_exposed,
)
from ...http import SSE_DONE, HttpRequest, HttpResponse, HttpServer, HttpStream, sse_event
from ...loops import EventLoopThread
from ...trace import CaptureStore, UnknownCaptureSession, mask_secret
from .._chat_client import api_key_for
from .._errors import AuthenticationFailed, BackendFailed, InvalidRequest, NotFound, PolicyError, TokenLimitExceeded
from .._stream_events import DeltaFold, stream_chat
from .._types import ChatRequest, ChatResult, ChoiceDelta, PolicyBackend, StreamEvent, StreamStart
from .._wire import anthropic_messages, google_generate, openai_responses
from .._wire.openai_chat import completion_json, parse_chat_request
from .._wire.openai_chunks import ChunkWriter
from .capture import find_continuation, turns_for

__all__ = ["EndpointConfig", "PolicyServer"]

log = logging.getLogger("openenv_train.policy")


@dataclass(frozen=True)
class EndpointConfig:
    """Options of a :class:`PolicyServer` beyond its address and key."""

    max_n: int = 16
    """Most choices per request (``n``); more gets a 400."""
    max_body: int = 32 * 2**20
    """Largest request body, in bytes."""
    token_continuity: bool = True
    """In a capture session, feed the model the exact ids of the earlier turn a request extends (prompt and
    sampled completion, as TRL's multi-turn loop does) and render only the messages after it; the text is the
    same, but sampled tokens that would tokenise differently as text stay as sampled. False always renders the
    whole conversation with the chat template."""
    anonymous_tokens: tuple[str, ...] = ("EMPTY",)
    """Bearer tokens that mean "no session" when no api_key is set (vLLM's convention)."""
    shutdown_grace_s: float = 5.0
    """How long ``stop()`` waits for requests in flight."""
    max_tokens_per_session: int | None = None
    """Most prompt + completion tokens one capture session may use; a call made after that gets a 429 with code
    ``max_tokens_per_session`` (checked before each call, so the call that crosses it still completes).
    None for no cap."""
    responses_kept: int = 256
    """How many ``/v1/responses`` answers are kept in memory (their whole conversation) for a follow-up to name as
    ``previous_response_id``; the oldest is forgotten first."""

    def __post_init__(self) -> None:
        if self.max_tokens_per_session is not None and self.max_tokens_per_session < 1:
            raise ValueError(f"max_tokens_per_session must be >= 1 or None, got {self.max_tokens_per_session}")
        if self.responses_kept < 0:
            raise ValueError(f"responses_kept must be >= 0, got {self.responses_kept}")


# One encoder for every body and event (json.dumps with options builds one per call).
_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def _json(status: int, payload: Any) -> HttpResponse:
    return HttpResponse(status, _encode(payload).encode())


def _event(payload: Any, name: str | None = None) -> bytes:
    return sse_event(_encode(payload), name)


def _error(exc: PolicyError, payload: dict[str, Any] | None = None) -> HttpResponse:
    """The response of a failed request: ``payload`` (a dialect's error body), else OpenAI's."""
    response = _json(exc.status, exc.to_json() if payload is None else payload)
    if isinstance(exc, TokenLimitExceeded):  # retrying cannot help: tell OpenAI's clients not to
        response.headers.append(("x-should-retry", "false"))
    return response


def _http_error(status: int, message: str) -> HttpResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return _json(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})


class _Frames(Protocol):
    """The SSE frames of one streamed answer in a dialect (what its clients read)."""

    def start(self, first: StreamStart) -> list[bytes]: ...
    def delta(self, delta: ChoiceDelta) -> list[bytes]: ...
    def finish(self, result: ChatResult, answer: dict[str, Any]) -> list[bytes]: ...
    def error(self, exc: PolicyError) -> list[bytes]: ...
    def end(self) -> list[bytes]: ...


class _ChatFrames:
    """``chat.completion.chunk`` events, ending with ``data: [DONE]``."""

    def __init__(self, chat: ChatRequest, request_id: str, created: int, model: str) -> None:
        self.writer = ChunkWriter(chat, request_id=request_id, created=created, model=model)

    def start(self, first: StreamStart) -> list[bytes]:
        return [_event(chunk) for chunk in self.writer.start(first)]

    def delta(self, delta: ChoiceDelta) -> list[bytes]:
        return [_event(self.writer.delta(delta))]

    def finish(self, result: ChatResult, answer: dict[str, Any]) -> list[bytes]:
        return [_event(chunk) for chunk in self.writer.finish(result)]

    def error(self, exc: PolicyError) -> list[bytes]:
        return [_event(self.writer.error(exc))]

    def end(self) -> list[bytes]:
        return [sse_event(SSE_DONE)]


class _NamedFrames:
    """The events of a dialect's event writer: ``(name, payload)`` pairs become named events (``event: <name>``,
    Anthropic's and the Responses API's), bare payloads unnamed ones (Google's); no ``[DONE]``."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer

    @staticmethod
    def _frames(events: list[Any]) -> list[bytes]:
        return [_event(e[1], e[0]) if isinstance(e, tuple) else _event(e) for e in events]

    def start(self, first: StreamStart) -> list[bytes]:
        return self._frames(self.writer.start(first))

    def delta(self, delta: ChoiceDelta) -> list[bytes]:
        return self._frames(self.writer.delta(delta))

    def finish(self, result: ChatResult, answer: dict[str, Any]) -> list[bytes]:
        return self._frames(self.writer.finish(answer))

    def error(self, exc: PolicyError) -> list[bytes]:
        return self._frames(self.writer.error(exc))

    def end(self) -> list[bytes]:
        return []


@dataclass(frozen=True)
class _Dialect:
    """How one wire format answers what the shared chat path generated and captured."""

    id_prefix: str
    """The prefix of answer ids (``chatcmpl-``, ``msg_``, ``resp_``); the captured turn's node id is the answer's."""
    answer: Callable[[ChatResult, ChatRequest, dict[str, Any]], dict[str, Any]]
    """``(result, chat request, chat.completion body) -> the dialect's body``."""
    frames: Callable[[ChatRequest, str, int, str], _Frames]
    """``(chat request, answer id, created, model) -> the frames of a streamed answer``."""
    name: str | None = None
    """Recorded as the captured turn's metadata ``dialect`` (None for chat completions, the native one)."""

    def info(self, info: dict[str, Any], **more: Any) -> dict[str, Any]:
        """A result's ``info`` (turn metadata) with the dialect it was asked in."""
        return {**info, **more, **({"dialect": self.name} if self.name else {})}


_CHAT = _Dialect("chatcmpl-", lambda result, chat, completion: completion, _ChatFrames)
_GOOGLE = _Dialect(
    "gen-", lambda result, chat, completion: google_generate.response_json(result, response_id=completion["id"]),
    lambda chat, answer_id, created, model: _NamedFrames(google_generate.ResponseChunks(response_id=answer_id,
                                                                                         model=model)),
    "google_generate_content",
)
_ANTHROPIC = _Dialect(
    "msg_", lambda result, chat, completion: anthropic_messages.message_json(result, message_id=completion["id"]),
    lambda chat, answer_id, created, model: _NamedFrames(anthropic_messages.MessageEvents(message_id=answer_id)),
    "anthropic_messages",
)


class PolicyServer:
    """Serve a policy backend over OpenAI's chat-completions API, recording calls into a capture store.

    Use it in an event loop (``async with PolicyServer(...) as server``) or from sync code
    (``with PolicyServer(...).run_in_thread() as server``); ``server.base_url`` is what an OpenAI client takes.

    Args:
        backend: What answers (:class:`LocalBackend`, :class:`UpstreamBackend`, or any :class:`PolicyBackend`).
        capture: Where calls with a capture session are recorded; None serves without capture.
        host: Interface to bind.
        port: TCP port; 0 picks a free one.
        api_key: When set, every request needs ``Bearer <api_key>`` or an open capture session id (else 401).
        token: A shared secret every route but ``/health`` requires (stricter than ``api_key``: a session id
            alone is not enough). Send ``Bearer <token>:<session id>``, or ``Bearer <token>`` with an
            ``X-Capture-Session`` header. None reads ``token_file``, else ``$OPENENV_TRAIN_POLICY_TOKEN`` (when
            no ``api_key`` is given); "" turns it off.
        token_file: Read the token from this file (its first line).
        config: Limits and behaviour.
    """

    def __init__(self, backend: PolicyBackend, *, capture: CaptureStore | None = None, host: str = "127.0.0.1",
                 port: int = 0, api_key: str | None = None, config: EndpointConfig | None = None,
                 token: str | None = None, token_file: str | None = None) -> None:
        if api_key is not None and (token or token_file):
            raise ValueError("give api_key or token/token_file, not both (token is the stricter form of api_key)")
        self.backend = backend
        self.capture = capture
        self.api_key = api_key
        self._token = None if api_key is not None else resolve_token(token, token_file, POLICY_TOKEN_ENV)
        self.config = config or EndpointConfig()
        self.limit_hits: dict[str, int] = {}
        """How often each limit was hit: ``token`` (refused for a missing or wrong token), ``max_tokens_per_session``."""
        # Per capture session: (tokens used, turns it held then), for max_tokens_per_session.
        self._used: dict[str, tuple[int, int]] = {}
        # Per /v1/responses answer id: its conversation (input and reply, as chat messages), for previous_response_id.
        self._conversations: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self.http = HttpServer(self.handle, _http_error, host=host, port=port, max_body=self.config.max_body,
                               name="policy endpoint")
        self._runner: EventLoopThread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of the started server."""
        return f"http://{self.http.host}:{self.http.port}"

    @property
    def base_url(self) -> str:
        """The ``/v1`` URL an OpenAI client takes as ``base_url``."""
        return f"{self.url}/v1"

    # -- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> PolicyServer:
        """Bind and serve in the running event loop.

        Raises:
            ServerStartError: the address cannot be bound.
        """
        await self.http.start()
        warn_if_exposed(log, "the policy endpoint", self.http.host, self.http.port,
                        authenticated=self._token is not None or self.api_key is not None,
                        option=f"a token (token_file=... or ${POLICY_TOKEN_ENV})")
        return self

    async def stop(self) -> None:
        """Finish requests in flight, close connections, release the backend's tasks and threads."""
        await self.http.stop(self.config.shutdown_grace_s)
        await self.backend.aclose()

    async def __aenter__(self) -> PolicyServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def run_in_thread(self, *, timeout_s: float = 30.0) -> PolicyServer:
        """Serve from a background thread with its own event loop, for sync callers; ``close()`` stops it.

        Raises:
            ServerStartError: the address cannot be bound.
        """
        self._runner = EventLoopThread("policy-server")
        try:
            self._runner.run(self.start(), timeout_s)
        except BaseException:
            self.close()
            raise
        return self

    def replace_backend(self, backend: PolicyBackend, *, timeout_s: float = 30.0) -> None:
        """Answer later requests with ``backend`` and release the previous one (its threads and tasks).

        For a server started with :meth:`run_in_thread`, called from another thread: a recipe moving from a
        scripted expert to the model, or to the model's next checkpoint.
        """
        old, self.backend = self.backend, backend
        if old is backend:
            return
        runner = self._runner
        if runner is not None and runner.running:
            runner.run(old.aclose(), timeout_s)

    def close(self, *, timeout_s: float = 30.0) -> None:
        """Stop a server started with :meth:`run_in_thread`."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        if runner.running:
            runner.run(self.stop(), timeout_s)
        runner.stop(timeout_s)

    def __enter__(self) -> PolicyServer:
        return self if self._runner is not None else self.run_in_thread()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def requires_token(self) -> bool:
        """Whether every route but ``/health`` requires the server's token."""
        return self._token is not None

    def api_key_for(self, session_id: str | None = None) -> str:
        """The ``api_key`` an OpenAI client of this server passes to be recorded in ``session_id``."""
        return api_key_for(session_id, self._token)

    def _hit(self, limit: str) -> None:
        self.limit_hits[limit] = self.limit_hits.get(limit, 0) + 1

    # -- requests ----------------------------------------------------------------------------------
    async def handle(self, request: HttpRequest) -> HttpResponse | HttpStream:
        """Route one HTTP request; every failure becomes an error body in the dialect of its route (OpenAI's;
        Anthropic's on ``/v1/messages``, Google's on its generateContent routes, OpenAI's worded for Responses on
        ``/v1/responses``)."""
        try:
            return await self._route(request)
        except PolicyError as exc:
            if request.path.startswith("/v1/messages"):
                return _error(exc, anthropic_messages.error_json(exc))
            if request.path.startswith("/v1beta/") or _google_route(request.path) is not None:
                return _error(exc, google_generate.error_json(exc))
            if request.path.startswith("/v1/responses"):
                return _error(exc, openai_responses.error_json(exc))
            return _error(exc)

    async def _route(self, request: HttpRequest) -> HttpResponse | HttpStream:
        path = request.path.rstrip("/") or "/"
        if path == "/health":
            return _json(200, {"status": "ok", "model": self.backend.model_id})
        if path == "/v1/chat/completions":
            if request.method != "POST":
                return _http_error(405, "use POST for /v1/chat/completions")
            return await self._chat(request)
        if path in ("/v1/messages", "/v1/messages/count_tokens"):
            if request.method != "POST":
                return _json(405, anthropic_messages.error_json(InvalidRequest(f"use POST for {path}")))
            return await (self._messages(request) if path == "/v1/messages" else self._count_tokens(request))
        google = _google_route(path)
        if google is not None:
            if request.method != "POST":
                return _json(405, google_generate.error_json(InvalidRequest(f"use POST for {path}"), 405))
            return await self._generate_content(request, *google)
        if path.startswith("/v1beta/"):
            raise NotFound(f"no route {request.method} {request.path}; this server answers POST "
                           "/v1beta/models/{model}:generateContent, :streamGenerateContent and :countTokens")
        if path == "/v1/responses":
            if request.method != "POST":
                return _http_error(405, "use POST for /v1/responses")
            return await self._responses(request)
        if path == "/v1/models" or path.startswith("/v1/models/"):
            if request.method not in ("GET", "HEAD"):
                return _http_error(405, f"use GET for {path}")
            self._session(request.headers)
            card = {"id": self.backend.model_id, "object": "model", "created": 0, "owned_by": "openenv-train"}
            if path == "/v1/models":
                return _json(200, {"object": "list", "data": [card]})
            if path[len("/v1/models/"):] != self.backend.model_id:
                raise NotFound(f"model {path[len('/v1/models/'):]!r} is not served here; GET /v1/models lists "
                               f"{self.backend.model_id!r}", code="model_not_found")
            return _json(200, card)
        raise NotFound(f"no route {request.method} {request.path}; this server answers POST /v1/chat/completions, "
                       "POST /v1/messages, POST /v1/responses, POST /v1beta/models/{model}:generateContent, GET /v1/models and "
                       "GET /health")

    def _session(self, headers: dict[str, str]) -> str | None:
        """The capture session a request names, or None.

        Raises:
            NotFound: it names a session that is not open.
            AuthenticationFailed: an api_key is set and the token is neither it nor an open session.
        """
        if self._token is not None:
            return self._token_session(headers, self._token)
        auth = headers.get("authorization", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        store = self.capture
        explicit = headers.get("x-capture-session", "").strip()
        if explicit:
            if store is None or explicit not in store:
                raise NotFound(str(UnknownCaptureSession(explicit)), param="X-Capture-Session", code="unknown_session")
            if self.api_key is not None and token != self.api_key and token not in store:
                raise AuthenticationFailed("the bearer token is not this server's api_key", code="invalid_api_key")
            return explicit
        if token and store is not None and token in store:
            return token
        if self.api_key is not None:
            if token == self.api_key:
                return None
            raise AuthenticationFailed(
                f"the bearer token {mask_secret(token)} is neither this server's api_key nor an open capture session",
                code="invalid_api_key",
            )
        if token and store is not None and token not in self.config.anonymous_tokens:
            raise NotFound(f"{UnknownCaptureSession(token)} (or send no Authorization header to call without capture)",
                           code="unknown_session")
        return None

    def _token_session(self, headers: dict[str, str], token: str) -> str | None:
        """Check the token (``<token>`` or ``<token>:<session id>``) and return the capture session named, or None."""
        given = bearer_of(headers.get("authorization"))
        key, _, keyed = (given or "").partition(":")
        if not token_matches(key if given else None, token):
            self._hit("token")
            problem = "sent no token" if given is None else "sent a token that is not this server's"
            raise AuthenticationFailed(
                f"this endpoint requires a token and the request {problem}; OpenAI clients pass "
                "api_key='<token>:<capture session id>' (or api_key='<token>' to call without capture); the "
                f"token is the one the server was started with (token_file or ${POLICY_TOKEN_ENV})",
                code="invalid_api_key",
            )
        explicit = headers.get("x-capture-session", "").strip()
        if keyed and explicit and keyed != explicit:
            raise InvalidRequest("the api_key and the X-Capture-Session header name different capture sessions; "
                                 "name one", param="X-Capture-Session")
        session = keyed or explicit
        if not session:
            return None
        if self.capture is None or session not in self.capture:
            raise NotFound(str(UnknownCaptureSession(session)), param="X-Capture-Session" if explicit else None,
                           code="unknown_session")
        return session

    def _check_budget(self, session: str) -> None:
        limit = self.config.max_tokens_per_session
        if limit is None:
            return
        assert self.capture is not None
        used, turns = self._used.get(session, (0, 0))
        if turns and self._turns(session) < turns:  # closed and opened again: a new session
            del self._used[session]
            used = 0
        if used >= limit:
            self._hit("max_tokens_per_session")
            raise TokenLimitExceeded(mask_secret(session), used, limit)

    def _spend(self, session: str, usage: dict[str, Any]) -> None:
        """Count a recorded call's prompt + completion tokens against its capture session."""
        if self.config.max_tokens_per_session is None or self.capture is None:
            return
        if session not in self._used:  # forget sessions that were closed
            for gone in [s for s in self._used if s not in self.capture]:
                del self._used[gone]
        spent = int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
        self._used[session] = (self._used.get(session, (0, 0))[0] + spent, self._turns(session))

    def _turns(self, session: str) -> int:
        assert self.capture is not None
        try:
            return len(self.capture.get(session).turns)
        except UnknownCaptureSession:
            return 0

    async def _chat(self, request: HttpRequest) -> HttpResponse | HttpStream:
        started_at, start = time.time(), time.perf_counter()
        session = self._session(request.headers)
        chat = parse_chat_request(_body(request), max_n=self.config.max_n)
        return await self._generate(chat, session, started_at, start, _CHAT)

    async def _messages(self, request: HttpRequest) -> HttpResponse | HttpStream:
        """Anthropic Messages: converted to the chat request it stands for, answered and captured as one."""
        started_at, start = time.time(), time.perf_counter()
        session = self._session(_keyed(request.headers, "x-api-key"))
        chat = parse_chat_request(anthropic_messages.chat_body(_body(request)), max_n=1)
        return await self._generate(chat, session, started_at, start, _ANTHROPIC)

    async def _responses(self, request: HttpRequest) -> HttpResponse | HttpStream:
        """OpenAI Responses: converted to the chat request it stands for (after the conversation of
        ``previous_response_id``), answered and captured as one; its conversation is kept for a follow-up."""
        started_at, start = time.time(), time.perf_counter()
        session = self._session(request.headers)
        body = _body(request)
        history: list[dict[str, Any]] = []
        previous = body.get("previous_response_id") if isinstance(body, dict) else None
        if previous is not None:
            if not isinstance(previous, str) or previous not in self._conversations:
                raise NotFound(f"previous response {previous!r} is not known here (this server keeps the last "
                               f"{self.config.responses_kept} responses in memory); send the whole conversation as "
                               "'input' instead", param="previous_response_id", code="previous_response_not_found")
            history = self._conversations[previous]
        converted, conversation = openai_responses.chat_body(body, history)
        chat = parse_chat_request(converted, max_n=1)
        keep = body.get("store") is not False and self.config.responses_kept > 0

        def answer(result: ChatResult, chat: ChatRequest, completion: dict[str, Any]) -> dict[str, Any]:
            response = openai_responses.response_json(result, response_id=completion["id"], created=int(started_at),
                                                      request=body)
            if keep:
                self._conversations[completion["id"]] = [*conversation, result.choices[0].message]
                while len(self._conversations) > self.config.responses_kept:
                    self._conversations.popitem(last=False)
            return response

        def frames(chat: ChatRequest, answer_id: str, created: int, model: str) -> _Frames:
            return _NamedFrames(openai_responses.ResponseEvents(response_id=answer_id, created=created, request=body))

        return await self._generate(chat, session, started_at, start, _Dialect("resp_", answer, frames, "openai_responses"))

    async def _generate_content(self, request: HttpRequest, model: str, method: str) -> HttpResponse | HttpStream:
        """Google generateContent (``:streamGenerateContent`` streams as server-sent events, whatever ``alt`` says;
        ``:countTokens`` counts the prompt): converted to the chat request it stands for, answered and captured as
        one."""
        started_at, start = time.time(), time.perf_counter()
        headers = request.headers
        if not headers.get("x-goog-api-key") and not headers.get("authorization") and "key=" in request.target:
            # the key may come as ?key=... instead (an Authorization header, when sent, names the session)
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(request.target).query)
            headers = {**headers, "x-goog-api-key": (query.get("key") or [""])[0]}
        session = self._session(_keyed(headers, "x-goog-api-key"))
        body = _body(request)
        if method == "countTokens":
            if isinstance(body, dict) and isinstance(body.get("generateContentRequest"), dict):
                body = body["generateContentRequest"]
            chat = parse_chat_request(google_generate.chat_body(body, model=model), max_n=1)
            return _json(200, {"totalTokens": _prompt_tokens(self.backend, chat)})
        converted = google_generate.chat_body(body, model=model, stream=method == "streamGenerateContent")
        return await self._generate(parse_chat_request(converted, max_n=1), session, started_at, start, _GOOGLE)

    async def _count_tokens(self, request: HttpRequest) -> HttpResponse:
        """Anthropic's ``count_tokens``: the prompt's length under the model's chat template, when the backend has a
        tokenizer; else estimated at 4 characters a token."""
        self._session(_keyed(request.headers, "x-api-key"))
        body = _body(request)
        if isinstance(body, dict) and "max_tokens" not in body:
            body = {**body, "max_tokens": 1}  # count_tokens takes no max_tokens
        chat = parse_chat_request(anthropic_messages.chat_body(body), max_n=1)
        return _json(200, {"input_tokens": _prompt_tokens(self.backend, chat)})

    async def _generate(self, chat: ChatRequest, session: str | None, started_at: float, start: float,
                        dialect: _Dialect) -> HttpResponse | HttpStream:
        """Answer a parsed chat request (from any dialect), record it in its capture session, reply in ``dialect``."""
        if session is not None:
            self._check_budget(session)
        if session is not None and self.config.token_continuity:
            assert self.capture is not None
            chat.continuation = find_continuation(self.capture, session, chat)
        request_id = f"{dialect.id_prefix}{uuid.uuid4().hex}"
        if chat.stream:
            return await self._open_stream(chat, session, started_at, start, dialect, request_id)
        try:
            result = await self.backend.chat(chat)
        except PolicyError:
            raise
        except Exception as exc:  # the model broke on this request; others are unaffected
            raise _backend_failed(exc) from None
        result.info = dialect.info(result.info)
        response = completion_json(result, chat, request_id=request_id, created=int(started_at))
        self._record(session, chat, result, response, started_at, start)
        return _json(200, dialect.answer(result, chat, response))

    def _record(self, session: str | None, chat: ChatRequest, result: ChatResult, response: dict[str, Any],
                started_at: float, start: float) -> None:
        """Record an answered call in its capture session (none: nothing to do)."""
        if session is None:
            return
        assert self.capture is not None
        timings = {"started_at": started_at, "total_s": time.perf_counter() - start, **result.info.get("timings", {})}
        try:
            for turn in turns_for(chat, result, response, timings=timings):
                self.capture.record(session, turn)
            self._spend(session, result.usage)
        except UnknownCaptureSession:
            log.warning("capture session %s closed before its call returned; the turn is not recorded",
                        mask_secret(session))

    async def _open_stream(self, chat: ChatRequest, session: str | None, started_at: float, start: float,
                           dialect: _Dialect, request_id: str) -> HttpStream:
        """Start the backend's stream and wait for its first token (or its whole result) before the head is sent:
        what fails before then (a bad request, a prompt too long, an engine that died holding the request) is still a
        plain HTTP error, which clients retry where its status says so (503)."""
        events = stream_chat(self.backend, chat)
        try:
            first = await anext(events)
            if not isinstance(first, StreamStart):
                raise BackendFailed(f"the backend's stream began with {type(first).__name__}, not StreamStart")
            lead = await anext(events, None)
        except BaseException as exc:
            await events.aclose()
            if isinstance(exc, Exception) and not isinstance(exc, PolicyError):
                raise _backend_failed(exc) from None
            raise
        frames = dialect.frames(chat, request_id, int(started_at), first.model)
        return HttpStream(200, self._stream(chat, session, first, lead, events, started_at, start, dialect,
                                            request_id, frames))

    async def _stream(self, chat: ChatRequest, session: str | None, first: StreamStart, lead: StreamEvent | None,
                      events: AsyncGenerator[StreamEvent, None], started_at: float, start: float, dialect: _Dialect,
                      request_id: str, frames: _Frames) -> AsyncGenerator[bytes, None]:
        """The SSE body of a streamed call (``lead``: its event after ``first``, already taken); records its turn
        before the last events, or a cut turn if it is cut. The events of one step (a dialect may send several for
        one piece of the reply) go out as one chunk: one write, not one per event."""
        sent, ended = DeltaFold(), False
        try:
            async with contextlib.aclosing(events), contextlib.aclosing(_chain(lead, events)) as stream:
                yield b"".join(frames.start(first))
                async for event in stream:
                    if isinstance(event, ChoiceDelta):
                        sent.add(event)
                        yield b"".join(frames.delta(event))
                    elif isinstance(event, ChatResult):
                        ended = True
                        event.info = dialect.info(event.info, stream=True)
                        response = completion_json(event, chat, request_id=request_id, created=int(started_at))
                        self._record(session, chat, event, response, started_at, start)
                        yield b"".join(frames.finish(event, dialect.answer(event, chat, response)))
            if not ended:
                raise BackendFailed("the backend's stream ended without its result")
        except Exception as exc:  # after the head: the error is an event (the clients raise it)
            ended = True
            failure = exc if isinstance(exc, PolicyError) else _backend_failed(exc)
            yield b"".join(frames.error(failure))
        finally:
            if not ended:  # the client left (cancelled, or closed at a yield): record what it was sent
                cut = sent.cut(first, chat.sampling.n, self.backend.model_id)
                cut.info = dialect.info(cut.info, stream=True)
                response = completion_json(cut, chat, request_id=request_id, created=int(started_at))
                self._record(session, chat, cut, response, started_at, start)
        yield b"".join(frames.end())


def _body(request: HttpRequest) -> Any:
    """The request's JSON body.

    Raises:
        InvalidRequest: it is not valid JSON.
    """
    try:
        return loads(request.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"the request body is not valid JSON: {exc}") from None


def _google_route(path: str) -> tuple[str, str] | None:
    """``(model, method)`` of a Google route (``/v1beta/models/{model}:generateContent``, or under ``/v1``, where
    google-genai sends it), else None."""
    for prefix in ("/v1beta/models/", "/v1/models/"):
        if path.startswith(prefix):
            model, _, method = path[len(prefix):].rpartition(":")
            if model and method in ("generateContent", "streamGenerateContent", "countTokens"):
                return model, method
    return None


def _keyed(headers: dict[str, str], key_header: str) -> dict[str, str]:
    """``headers`` with the dialect's key header (``x-api-key``) read as ``Authorization: Bearer``, so it names the
    capture session (or carries the token) as the bearer key does on the chat route."""
    key = headers.get(key_header, "").strip()
    if not key or headers.get("authorization"):
        return headers
    return {**headers, "authorization": f"Bearer {key}"}


def _prompt_tokens(backend: PolicyBackend, chat: ChatRequest) -> int:
    """How many tokens the request's prompt is: rendered with the backend's tokenizer when it has one (a local or
    scripted backend), else estimated from its characters."""
    tokenizer = getattr(backend, "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "apply_chat_template"):
        try:
            return len(tokenizer.apply_chat_template(chat.messages, tools=chat.tools, add_generation_prompt=True,
                                                     tokenize=True, return_dict=False))
        except Exception as exc:  # jinja errors: the same request would be refused by the chat route
            raise InvalidRequest(f"the chat template rejected the messages: {exc}", param="messages") from None
    chars = sum(len(str(m.get("content") or "")) for m in chat.messages) + len(json.dumps(chat.tools or []))
    return max(1, chars // 4)


async def _chain(lead: StreamEvent | None, events: AsyncGenerator[StreamEvent, None]) -> AsyncGenerator[StreamEvent, None]:
    """``lead`` (when there is one), then ``events``."""
    if lead is not None:
        yield lead
    async for event in events:
        yield event


def _backend_failed(exc: Exception) -> BackendFailed:
    log.error("backend failed", exc_info=exc)
    return BackendFailed(f"the model failed on this request: {type(exc).__name__}: {exc}")
