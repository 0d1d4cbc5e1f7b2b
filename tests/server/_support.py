"""Shared helpers of the server tests: raw WebSocket I/O, small test envs, leak checks."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import threading
import time
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import Close

from openenv_train.core import Action, Observation, State
from openenv_train.server import Environment, EnvServer
from tests.conftest import ws_of

# -- raw WebSocket I/O ------------------------------------------------------------------------------


async def open_ws(server: EnvServer, **options: Any) -> ClientConnection:
    """A plain ``websockets`` client on the server's ``/ws`` (no protocol help from our client)."""
    options = {"max_size": None, "compression": None, "open_timeout": 5, "close_timeout": 2, "proxy": None,
               **options}
    return await connect(ws_of(server), **options)


async def recv_json(ws: ClientConnection, timeout: float = 5.0) -> dict[str, Any]:
    """The next frame, which must be a JSON text frame."""
    raw = await asyncio.wait_for(ws.recv(), timeout)
    assert isinstance(raw, str), f"expected a text frame, got {raw!r}"
    msg = json.loads(raw)
    assert isinstance(msg, dict) and set(msg) == {"type", "data"}, msg
    return msg


async def request(ws: ClientConnection, frame: Any, timeout: float = 5.0) -> dict[str, Any]:
    """Send one frame (a dict is JSON-encoded, str/bytes are sent as is) and return the reply."""
    await ws.send(json.dumps(frame) if isinstance(frame, dict | list) else frame)
    return await recv_json(ws, timeout)


async def expect_error(ws: ClientConnection, frame: Any, code: str) -> dict[str, Any]:
    """Send a frame and return the ``data`` of the error reply, which must carry ``code``."""
    reply = await request(ws, frame)
    assert reply["type"] == "error", reply
    data = reply["data"]
    assert data["code"] == code, data
    assert isinstance(data["message"], str) and data["message"], data
    return data


async def expect_closed(ws: ClientConnection, timeout: float = 5.0) -> Close | None:
    """Wait for the server to end the connection (no further frames); return the close frame it sent."""
    try:
        extra = await asyncio.wait_for(ws.recv(), timeout)
    except ConnectionClosed as exc:
        return exc.rcvd
    raise AssertionError(f"expected the connection to close, got another frame: {extra!r}")


async def wait_active(server: EnvServer, expected: int, timeout: float = 5.0) -> None:
    """Wait until the registry holds ``expected`` sessions (closing is asynchronous)."""
    deadline = time.monotonic() + timeout
    while server.registry.active != expected:
        if time.monotonic() > deadline:
            raise AssertionError(f"registry.active is {server.registry.active}, expected {expected} (leaked sessions?)")
        await asyncio.sleep(0.01)


async def assert_counter_session_works(ws: ClientConnection, value_before: int | None = None) -> int:
    """Step a counter session by 1 and check its state follows; returns the new value."""
    state = (await request(ws, {"type": "state"}))["data"]
    if value_before is not None:
        assert state["value"] == value_before
    obs = await request(ws, {"type": "step", "data": {"delta": 1}})
    assert obs["type"] == "observation", obs
    assert obs["data"]["observation"]["value"] == state["value"] + 1
    after = (await request(ws, {"type": "state"}))["data"]
    assert after["step_count"] == state["step_count"] + 1
    return after["value"]


# -- raw TCP ------------------------------------------------------------------------------------------


def ws_handshake(path: str = "/ws") -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()


def masked_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """A client (masked, all-zero key) WebSocket frame, for payloads a real client refuses to send."""
    n = len(payload)
    if n < 126:
        header = bytes([0x80 | opcode, 0x80 | n])
    else:
        header = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    return header + b"\x00\x00\x00\x00" + payload


async def raw_exchange(port: int | None, data: bytes, *, wait: float = 2.0) -> tuple[bytes, bool]:
    """Write bytes to a fresh TCP connection; return what came back and whether the server closed it."""
    assert port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        out = b""
        while True:
            try:
                chunk = await asyncio.wait_for(reader.read(65536), wait)
            except TimeoutError:
                return out, False
            except ConnectionResetError:
                return out, True
            if not chunk:
                return out, True
            out += chunk
    finally:
        writer.close()


def http_request(method: str, path: str, body: bytes = b"", content_type: str = "application/json") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def parse_http_response(raw: bytes) -> tuple[int, Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body) if body else None


# -- test envs ----------------------------------------------------------------------------------------


class TagAction(Action):
    """Sleep ``delay`` seconds (asyncio or thread, by env), then answer with ``tag``."""

    delay: float = 0.0
    tag: int = 0


class TagObservation(Observation):
    tag: int = 0
    thread: str = ""
    instance: int = 0


_SERIALS = itertools.count()


class CloseCounting:
    """Mixin: counts ``close()`` per instance in a class-level dict (reset it per test)."""

    closes: dict[int, int] = {}
    built: list[int] = []
    #: ``(start, end)`` monotonic times of each slow step (``delay > 0``), so tests wait on them, not on sleeps.
    slow_steps: list[list[float]] = []

    def _register(self) -> None:
        # a serial, not id(self): a closed and freed instance's id is often the next instance's
        self._serial = next(_SERIALS)
        type(self).built.append(self._serial)

    def close(self) -> None:
        cls = type(self)
        cls.closes[self._serial] = cls.closes.get(self._serial, 0) + 1


class SlowAsyncEnv(CloseCounting, Environment[TagAction, TagObservation, State]):
    """Async step that sleeps ``delay`` on the event loop."""

    action_type = TagAction
    observation_type = TagObservation
    closes: dict[int, int] = {}
    built: list[int] = []

    def __init__(self) -> None:
        self._state = State()
        self._register()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> TagObservation:  # type: ignore[override]
        self._state = State(episode_id=episode_id or "ep")
        return TagObservation(reward=0.0, instance=id(self))

    async def step(self, action: TagAction) -> TagObservation:
        if action.delay:
            span = [time.monotonic()]
            type(self).slow_steps.append(span)
            await asyncio.sleep(action.delay)
            span.append(time.monotonic())
        self._state.step_count += 1
        return TagObservation(tag=action.tag, thread=threading.current_thread().name, instance=id(self))

    @property
    def state(self) -> State:
        return self._state


class BlockingEnv(CloseCounting, Environment[TagAction, TagObservation, State]):
    """Sync step that blocks its thread for ``delay``; declares ``blocking = True``."""

    action_type = TagAction
    observation_type = TagObservation
    blocking = True
    closes: dict[int, int] = {}
    built: list[int] = []
    init_delay: float = 0.0

    def __init__(self) -> None:
        if type(self).init_delay:
            time.sleep(type(self).init_delay)
        self._state = State()
        self._register()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> TagObservation:  # type: ignore[override]
        self._state = State(episode_id=episode_id or "ep")
        return TagObservation(reward=0.0, thread=threading.current_thread().name)

    def step(self, action: TagAction) -> TagObservation:
        if action.delay:
            span = [time.monotonic()]
            type(self).slow_steps.append(span)
            time.sleep(action.delay)
            span.append(time.monotonic())
        self._state.step_count += 1
        return TagObservation(tag=action.tag, thread=threading.current_thread().name, instance=id(self))

    @property
    def state(self) -> State:
        return self._state
