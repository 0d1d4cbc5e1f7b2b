"""The async environment client: one WebSocket session per client, typed or generic.

Beyond OpenEnv's client: a reply that arrives after a timeout (or a cancelled call)
can never be paired with the next request, because the session is failed and its
socket closed at once; a dropped session is replaced by a new one on the next call
(``reconnect=True``) and reported through a warning, ``reconnects`` and ``on_reconnect``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar
from urllib.parse import urlencode

from pydantic import BaseModel, TypeAdapter, ValidationError
from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.protocol import State as WsState

from ..core import (
    TOKEN_ENV,
    ConnectionLost,
    ConnectTimeout,
    ErrorCode,
    ProtocolError,
    ReplyTimeout,
    ServerError,
    SessionFailed,
    StepResult,
    decode_server_message,
    encode_client_message,
)
from ..launch import (
    DockerProvider,
    Endpoint,
    InProcessProvider,
    LocalProcessProvider,
    Provider,
    RemoteProvider,
    ws_url,
)
from ._sync import SyncEnvClient
from ._tasks import TaskClient

__all__ = ["ClientState", "EnvClient", "GenericEnvClient"]

log = logging.getLogger("openenv_train.client")

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")
C = TypeVar("C", bound="EnvClient[Any, Any, Any]")


class ClientState(enum.Enum):
    """Where a client's session stands."""

    IDLE = "idle"  # never connected, or closed: connect() opens a session
    OPEN = "open"
    FAILED = "failed"  # lost or timed out: the next call reconnects (or raises SessionFailed)
    CLOSED = "closed"


class EnvClient(Generic[ActT, ObsT, StateT]):
    """Async client of one environment session over ``/ws``.

    Set ``action_type``/``observation_type``/``state_type`` (class attributes or
    constructor arguments) to get typed results; without them results are dicts.

    Args:
        base_url: ``http(s)://host[:port][/prefix]`` or ``ws(s)://...``; ``/ws`` is appended.
        uds: connect through this Unix socket path instead of TCP (``base_url`` may be omitted).
        connect_timeout_s: limit on opening the WebSocket.
        reply_timeout_s: limit on each reply; past it the session is failed.
        max_message_size: largest reply accepted, in bytes.
        reconnect: open a new session on the next call after the connection was lost.
        headers: extra HTTP headers of the handshake.
        token: the server's token, sent as ``Authorization: Bearer <token>``; None reads
            ``$OPENENV_TRAIN_TOKEN`` (unset: no token), "" sends none.
        provider: starts the server on ``connect()`` and stops it on ``close()``.
        session_id: attach to this existing server session (``/ws?session_id=...``, as OpenEnv 0.10) instead of
            opening a new one: one made by ``openenv/session/create`` on ``POST /mcp``, which then serves this
            WebSocket and the session's HTTP MCP calls alike; closing the WebSocket leaves the session open.

    Example:
        >>> import asyncio
        >>> import openenv_train.envs  # the catalog: in-process servers find "counter" through it
        >>> from openenv_train.client import EnvClient
        >>> async def main():
        ...     async with await EnvClient.from_env("counter", provider="inprocess") as env:
        ...         await env.reset(target=2)
        ...         return (await env.step({"delta": 2})).done
        >>> asyncio.run(main())
        True
    """

    action_type: ClassVar[Any] = None
    observation_type: ClassVar[Any] = None
    state_type: ClassVar[Any] = None

    def __init__(
        self,
        base_url: str | None = None,
        *,
        uds: str | None = None,
        action_type: Any = None,
        observation_type: Any = None,
        state_type: Any = None,
        connect_timeout_s: float = 10.0,
        reply_timeout_s: float = 60.0,
        max_message_size: int = 100 * 2**20,
        reconnect: bool = True,
        headers: dict[str, str] | None = None,
        token: str | None = None,
        provider: Provider | None = None,
        session_id: str | None = None,
    ) -> None:
        if base_url is None and uds is None and provider is None:
            raise ValueError("give base_url, uds or provider")
        self.endpoint = Endpoint(base_url or "http://localhost", uds)
        if action_type is not None:
            self.action_type = action_type  # type: ignore[misc]
        if observation_type is not None:
            self.observation_type = observation_type  # type: ignore[misc]
        if state_type is not None:
            self.state_type = state_type  # type: ignore[misc]
        self._obs_adapter = TypeAdapter(self.observation_type) if self.observation_type is not None else None
        self._state_adapter = TypeAdapter(self.state_type) if self.state_type is not None else None
        self.connect_timeout_s = connect_timeout_s
        self.reply_timeout_s = reply_timeout_s
        self.max_message_size = max_message_size
        self.reconnect = reconnect
        self.headers = dict(headers or {})
        # Kept apart from ``headers`` so that printing those never shows it.
        self._token = (os.environ.get(TOKEN_ENV, "").strip() if token is None else token) or None
        self.provider = provider
        self.session_id = session_id
        self.client_state = ClientState.IDLE
        self.reconnects = 0
        self.on_reconnect: list[Callable[[str], Any]] = []
        self._ws: ClientConnection | None = None
        self._lock = asyncio.Lock()
        self._failure: str | None = None
        self._tasks: TaskClient | None = None

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The WebSocket URL sessions are opened on (with ``?session_id=`` when attaching to one)."""
        url = ws_url(self.endpoint.base_url)
        return url if self.session_id is None else f"{url}?{urlencode({'session_id': self.session_id})}"

    async def connect(self: C) -> C:
        """Open a session (starting the provider's server first, if any).

        Raises:
            ConnectTimeout: no connection within ``connect_timeout_s``.
            ConnectionLost: the server refused the connection or the handshake.
        """
        if self._ws is not None and self.client_state is ClientState.OPEN:
            return self
        if self.provider is not None and not self.provider.started:
            self.endpoint = await self.provider.start()
        target = self.endpoint.uds or self.url
        try:
            if self.endpoint.uds:
                opening = unix_connect(self.endpoint.uds, uri=self.url, **self._ws_options())
            else:
                opening = connect(self.url, **self._ws_options())
            self._ws = await asyncio.wait_for(opening, self.connect_timeout_s)
        except TimeoutError:
            raise ConnectTimeout(
                f"no WebSocket connection to {target} within {self.connect_timeout_s:g}s; is the server up "
                "(GET /health)? raise connect_timeout_s for slow starts"
            ) from None
        except InvalidStatus as exc:
            if exc.response.status_code == 401:
                sent = "a token that the server refused" if self._token else "no token"
                raise ConnectionLost(
                    f"the server at {target} requires a token and this client sent {sent} (HTTP 401); pass "
                    f"token=... (the server's --token-file contents) or set ${TOKEN_ENV}"
                ) from None
            raise ConnectionLost(f"cannot open a session at {target}: {exc}; check the URL and that the server runs") from None
        except (OSError, InvalidHandshake, InvalidURI) as exc:
            raise ConnectionLost(f"cannot open a session at {target}: {exc}; check the URL and that the server runs") from None
        self.client_state = ClientState.OPEN
        self._failure = None
        return self

    async def close(self) -> None:
        """End the session (sending ``close``) and stop the provider's server, if any."""
        await self._disconnect()
        self.client_state = ClientState.CLOSED
        if self.provider is not None and self.provider.started:
            await self.provider.stop()

    async def _disconnect(self) -> None:
        """Send ``close`` and close the WebSocket (an attached session stays open on the server)."""
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                await ws.send(encode_client_message("close"))
                await asyncio.wait_for(ws.close(), 5.0)
            except Exception:  # the session is ending either way
                pass

    async def __aenter__(self: C) -> C:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def sync(self) -> SyncEnvClient:
        """A blocking wrapper of this client that runs it on a background event loop."""
        return SyncEnvClient(self)

    # -- protocol ---------------------------------------------------------------------------------
    async def reset(self, **options: Any) -> StepResult[ObsT]:
        """Start a new episode (``seed``, ``episode_id`` and env-specific options)."""
        return self._result(await self._request("reset", options))

    async def step(self, action: ActT | dict[str, Any]) -> StepResult[ObsT]:
        """Send one action."""
        return self._result(await self._request("step", self._action_payload(action)))

    async def state(self) -> StateT:
        """The episode state."""
        data = await self._request("state", None)
        if self._state_adapter is None:
            return data  # type: ignore[return-value]
        return self._state_adapter.validate_python(data)  # type: ignore[no-any-return]

    async def rpc(self, method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
        """Send a JSON-RPC request through the session's ``mcp`` message and return the response."""
        request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        return await self._request("mcp", request)

    # -- OpenEnv 0.10's Task API (HTTP; any server that serves it) ---------------------------------
    async def task_client(self) -> TaskClient:
        """The Task API of this client's server (its provider's server is started first, if not yet)."""
        if self.provider is not None and not self.provider.started:
            self.endpoint = await self.provider.start()
        if self._tasks is None or self._tasks.endpoint != self.endpoint:  # the env's name is asked once per server
            self._tasks = TaskClient(self.endpoint, headers=self._handshake_headers(), timeout_s=self.reply_timeout_s)
        return self._tasks

    async def list_environments(self) -> list[str]:
        """``GET /list_environments``: the envs the server serves."""
        return await (await self.task_client()).list_environments()

    async def list_splits(self) -> list[dict[str, Any]]:
        """The env's task splits (``TasksNotSupported`` where it has none)."""
        return await (await self.task_client()).list_splits()

    async def list_tasks(self, split: str) -> list[Any]:
        """A split's task specs (a bounded preview for a large split)."""
        return await (await self.task_client()).list_tasks(split)

    async def num_tasks(self, split: str) -> int:
        """How many tasks ``split`` holds."""
        return await (await self.task_client()).num_tasks(split)

    async def get_task(self, split: str, index: int) -> Any:
        """One task spec; ``reset(split=split, index=index)`` plays it."""
        return await (await self.task_client()).get_task(split, index)

    async def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]:
        """Task specs ``[start, stop)`` of ``split``."""
        return await (await self.task_client()).get_task_range(split, start, stop)

    def _action_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, BaseModel):
            return action.model_dump(mode="json")
        if isinstance(action, dict):
            return action
        raise TypeError(f"an action must be a pydantic model or a dict, got {type(action).__name__}")

    def _result(self, data: dict[str, Any]) -> StepResult[Any]:
        own = data.get("observation", {})
        reward, done = data.get("reward"), bool(data.get("done", False))
        metadata = data.get("metadata") or {}
        if isinstance(own, dict) and "metadata" in own:
            # openenv >= 0.10 servers repeat the metadata inside the observation; results keep it in one place
            own = dict(own)
            metadata = own.pop("metadata") or metadata
        if self._obs_adapter is None:
            return StepResult(observation=own, reward=reward, done=done, metadata=metadata)
        try:
            obs = self._obs_adapter.validate_python({**own, "reward": reward, "done": done, "metadata": metadata})
        except ValidationError as exc:
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR,
                f"the server's observation does not match {self.observation_type!r}: {exc}; "
                "is the client typed for this env?",
            ) from None
        return StepResult(observation=obs, reward=reward, done=done, metadata=metadata)

    async def _ensure_open(self) -> ClientConnection:
        if self.client_state is ClientState.OPEN and self._ws is not None:
            return self._ws
        if self.client_state is ClientState.FAILED:
            if not self.reconnect:
                raise SessionFailed(
                    f"this session failed earlier ({self._failure}); call connect() to open a new one"
                )
            reason = self._failure or "unknown"
            await self.connect()
            self.reconnects += 1
            log.warning("env session to %s was lost (%s); reconnected with a new session", self.url, reason)
            for callback in self.on_reconnect:
                callback(reason)
        elif self.client_state is ClientState.CLOSED:
            raise SessionFailed("the client was closed; call connect() to open a new session")
        else:
            await self.connect()
        assert self._ws is not None
        return self._ws

    async def _request(self, kind: str, data: dict[str, Any] | None) -> dict[str, Any]:
        frame = encode_client_message(kind, data)
        async with self._lock:
            if kind == "reset" and self._ended_between_episodes():
                # the server ended this session while it waited (its idle timeout, a restart): a reset starts a new
                # episode anyway, so open a new session instead of failing the episode
                ws_old, self._ws = self._ws, None
                self.client_state = ClientState.IDLE
                self.reconnects += 1
                log.info("env session to %s was ended by the server while idle; reset opens a new one", self.url)
                if ws_old is not None:
                    asyncio.get_running_loop().create_task(_close_quietly(ws_old))
            ws = await self._ensure_open()
            awaiting = False
            try:
                await ws.send(frame)
                awaiting = True
                raw = await asyncio.wait_for(ws.recv(), self.reply_timeout_s)
                awaiting = False
            except TimeoutError:
                self._fail(f"no reply to {kind!r} within {self.reply_timeout_s:g}s")
                raise ReplyTimeout(
                    f"no reply to {kind!r} within reply_timeout_s={self.reply_timeout_s:g}s; the session was closed "
                    "so a late reply cannot be taken for the next one; the next call opens a new session"
                ) from None
            except ConnectionClosed as exc:
                awaiting = False
                code = exc.rcvd.code if exc.rcvd is not None else 1006
                reason = exc.rcvd.reason if exc.rcvd is not None else "no close frame"
                self._fail(f"connection closed during {kind!r} (code {code}: {reason})")
                # A server that refuses a session sends its error frame just before closing: report that.
                await _raise_buffered_error(ws)
                raise ConnectionLost(
                    f"the connection to {self.endpoint.uds or self.url} was lost during {kind!r} (code {code}: "
                    f"{reason}); the episode's state is gone; the next call opens a new session (call reset() first)"
                ) from None
            finally:
                if awaiting:  # cancelled while a reply was due: it must never meet the next request
                    self._fail(f"{kind!r} was cancelled before its reply arrived")
            reply = decode_server_message(raw)
            if reply.type == "error":
                error = ServerError.from_wire(reply.data)
                if error.code in {c.value for c in ErrorCode if c.closes_connection}:
                    self._fail(f"server ended the session: {error.code}: {error.message}")
                raise error
            expected = {"reset": "observation", "step": "observation", "state": "state", "mcp": "mcp"}[kind]
            if reply.type != expected:
                self._fail(f"got a {reply.type!r} reply to {kind!r}")
                raise ProtocolError(
                    ErrorCode.SESSION_ERROR,
                    f"server answered {kind!r} with {reply.type!r}; replies are out of step, session closed",
                )
            return reply.data

    def _ended_between_episodes(self) -> bool:
        """The session is open on our side but the server has closed the connection (a close frame arrived)."""
        return (self.reconnect and self.client_state is ClientState.OPEN and self._ws is not None
                and self._ws.state is not WsState.OPEN)

    def _fail(self, reason: str) -> None:
        self.client_state = ClientState.FAILED
        self._failure = reason
        ws, self._ws = self._ws, None
        if ws is not None:
            asyncio.get_running_loop().create_task(_close_quietly(ws))

    def _ws_options(self) -> dict[str, Any]:
        return {
            "max_size": self.max_message_size,
            "compression": None,
            "additional_headers": self._handshake_headers() or None,
            "open_timeout": self.connect_timeout_s,
            "close_timeout": 5.0,
            "proxy": None,
        }

    def _handshake_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self._token and not any(name.lower() == "authorization" for name in headers):
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    # -- factories --------------------------------------------------------------------------------
    @classmethod
    async def from_url(cls: type[C], url: str, **kwargs: Any) -> C:
        """Connect to a running server (any host, or a Hugging Face Space id ``owner/space``)."""
        return await cls(provider=RemoteProvider(url), **kwargs).connect()

    @classmethod
    async def from_docker_image(cls: type[C], image: str, *, port: int = 8000, env_vars: dict[str, str] | None = None,
                                **kwargs: Any) -> C:
        """Run ``image`` with Docker, wait for ``/health`` and connect; ``close()`` removes the container."""
        return await cls(provider=DockerProvider(image, container_port=port, env_vars=env_vars), **kwargs).connect()

    @classmethod
    async def from_env(cls: type[C], env: str, *, provider: str = "process", max_sessions: int | None = None,
                       transport: str = "tcp", sandbox: Any = None, **kwargs: Any) -> C:
        """Start a catalog env (or ``module:Class``) locally and connect.

        Args:
            env: catalog name such as ``"echo"``, or ``"package.module:ClassName"``.
            provider: ``"process"`` (a server subprocess) or ``"inprocess"`` (a thread of this process).
            transport: ``"tcp"`` or ``"unix"`` (process provider only: a Unix socket in a private directory).
            sandbox: run the server in the OS sandbox (process provider only; ``True`` or a SandboxConfig).
            token: (in ``kwargs``) the token the started server requires and the client sends; None uses
                ``$OPENENV_TRAIN_TOKEN`` for both.
        """
        token = kwargs.get("token")  # the server started here requires the token the client sends
        if provider == "process":
            started: Provider = LocalProcessProvider(env, max_sessions=max_sessions, transport=transport,
                                                     sandbox=sandbox, token=token)
        elif provider == "inprocess":
            started = InProcessProvider(env, max_sessions=max_sessions, **({} if token is None else {"token": token}))
        else:
            raise ValueError(f"provider must be 'process' or 'inprocess', got {provider!r}")
        return await cls(provider=started, **kwargs).connect()


async def _raise_buffered_error(ws: ClientConnection) -> None:
    try:
        raw = await asyncio.wait_for(ws.recv(), 0.05)
    except (ConnectionClosed, TimeoutError):
        return
    with contextlib.suppress(ProtocolError):
        reply = decode_server_message(raw)
        if reply.type == "error":
            raise ServerError.from_wire(reply.data)


async def _close_quietly(ws: ClientConnection) -> None:
    try:
        await asyncio.wait_for(ws.close(), 2.0)
    except Exception:
        ws.transport.abort()


class GenericEnvClient(EnvClient[dict[str, Any], dict[str, Any], dict[str, Any]]):
    """Dicts in, dicts out: drives any env without its Python types."""
