"""The one OpenAI-style chat client: ``POST {base_url}/chat/completions`` and ``GET {base_url}/models`` over httpx.

The rollout pool's :class:`~openenv_train.pool.ChatPolicy`, Harbor's model agent, the judge rubric and
:class:`UpstreamBackend` all talk to OpenAI-compatible servers through it; each maps its failures into its own
errors. :func:`api_key_for` builds the key that names a capture session on a :class:`PolicyServer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from ..core import OpenEnvTrainError
from ..http import SSE_DONE, SseDecoder

__all__ = ["ChatClient", "ChatResponse", "ChatStream", "ChatTransportError", "api_key_for"]


def api_key_for(session_id: str | None = None, token: str | None = None) -> str:
    """The ``api_key`` that asks a :class:`PolicyServer` to record a call in capture session ``session_id``.

    ``token`` is the server's token (None when it takes none): the key is then ``<token>:<session id>``.

    >>> api_key_for("s1"), api_key_for("s1", "secret"), api_key_for(None, "secret"), api_key_for()
    ('s1', 'secret:s1', 'secret', 'EMPTY')
    """
    if token is None:
        return session_id or "EMPTY"
    return f"{token}:{session_id}" if session_id else token


class ChatTransportError(OpenEnvTrainError):
    """A request got no HTTP answer: refused, reset or timed out.

    Attributes:
        url: what was asked.
        kind: the transport error's class name (``ConnectError``, ``ReadTimeout``, ...).
        detail: its message.
        timed_out: whether the request ran past its timeout.
    """

    def __init__(self, url: str, kind: str, detail: str, *, timed_out: bool) -> None:
        super().__init__(f"{url}: {kind}: {detail}")
        self.url, self.kind, self.detail, self.timed_out = url, kind, detail, timed_out


@dataclass(frozen=True)
class ChatResponse:
    """An HTTP answer: its status, its JSON body (None when the body is not JSON) and its text."""

    status: int
    data: Any
    text: str


class ChatStream:
    """A streamed answer (``"stream": true``): its status, then its events (or, for an error, its body)."""

    def __init__(self, reply: Any) -> None:
        self._reply = reply
        self.status: int = reply.status_code

    async def body(self) -> ChatResponse:
        """The whole answer (an error's JSON body, when ``status`` is not 200)."""
        await self._reply.aread()
        try:
            data = self._reply.json()
        except ValueError:
            data = None
        return ChatResponse(self.status, data, self._reply.text)

    async def events(self) -> AsyncGenerator[Any, None]:
        """Each event's JSON (``chat.completion.chunk`` or ``{"error": ...}``), until ``data: [DONE]``.

        Raises:
            ValueError: an event is not JSON.
        """
        decoder = SseDecoder()
        async for line in self._reply.aiter_lines():
            data = decoder.feed(line)
            if data is None:
                continue
            if data.strip() == SSE_DONE:
                return
            yield json.loads(data)


class ChatClient:
    """Connections to one OpenAI-compatible server, reused across calls (one pool per event loop).

    Args:
        base_url: the server's OpenAI base URL (``http://host:port/v1``), used as given.
        api_key: sent as ``Authorization: Bearer`` when a call names no key of its own; None sends none.
        headers: extra headers on every request.
        timeout_s: limit on one request (a call may give a shorter one).
        max_connections: connections kept open to the server.
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, headers: dict[str, str] | None = None,
                 timeout_s: float = 300.0, max_connections: int = 256) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def chat_url(self) -> str:
        """``{base_url}/chat/completions``."""
        return f"{self.base_url}/chat/completions"

    def _http(self) -> Any:
        import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # httpx's pool belongs to the loop that opened it
            headers = {**self.headers, **({"authorization": f"Bearer {self.api_key}"} if self.api_key else {})}
            self._client = httpx.AsyncClient(headers=headers, timeout=self.timeout_s,
                                             limits=httpx.Limits(max_connections=self.max_connections))
            self._loop = loop
        return self._client

    async def chat(self, body: dict[str, Any], *, api_key: str | None = None,
                   timeout_s: float | None = None) -> ChatResponse:
        """``POST /chat/completions`` with ``body``; ``api_key`` replaces the client's for this call.

        Raises:
            ChatTransportError: no HTTP answer came (refused, reset, timed out).
        """
        headers = {"authorization": f"Bearer {api_key}"} if api_key else None
        return await self._request("POST", self.chat_url, body, headers, timeout_s)

    @contextlib.asynccontextmanager
    async def stream(self, body: dict[str, Any], *, api_key: str | None = None,
                     timeout_s: float | None = None) -> AsyncIterator[ChatStream]:
        """``POST /chat/completions`` with ``body`` (which should say ``"stream": true``), read as it arrives;
        leaving the block closes the connection (a server that streams then stops generating).

        Raises:
            ChatTransportError: no HTTP answer came, or the stream broke off.
        """
        import httpx

        headers = {"authorization": f"Bearer {api_key}"} if api_key else None
        options: dict[str, Any] = {} if timeout_s is None else {"timeout": timeout_s}
        try:
            async with self._http().stream("POST", self.chat_url, json=body, headers=headers, **options) as reply:
                yield ChatStream(reply)
        except httpx.HTTPError as exc:
            raise ChatTransportError(self.chat_url, type(exc).__name__, str(exc),
                                     timed_out=isinstance(exc, httpx.TimeoutException)) from None

    async def models(self, *, timeout_s: float | None = None) -> ChatResponse:
        """``GET /models``.

        Raises:
            ChatTransportError: no HTTP answer came.
        """
        return await self._request("GET", f"{self.base_url}/models", None, None, timeout_s)

    async def _request(self, method: str, url: str, body: dict[str, Any] | None, headers: dict[str, str] | None,
                       timeout_s: float | None) -> ChatResponse:
        import httpx

        options: dict[str, Any] = {} if timeout_s is None else {"timeout": timeout_s}
        try:
            reply = await self._http().request(method, url, json=body, headers=headers, **options)
        except httpx.HTTPError as exc:
            raise ChatTransportError(url, type(exc).__name__, str(exc),
                                     timed_out=isinstance(exc, httpx.TimeoutException)) from None
        try:
            data = reply.json()
        except ValueError:
            data = None
        return ChatResponse(reply.status_code, data, reply.text)

    async def aclose(self) -> None:
        """Close the connections (a later call opens new ones); those of another loop are dropped."""
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
