"""Hand-written hostile inputs against a real ``run_server`` subprocess (echo env, MCP).

Deep nesting, huge numbers, invalid UTF-8, a 100 MiB frame, slowloris headers and frames, many
half-open sockets: each gets a clear refusal (or is timed out), other clients keep being served
meanwhile, and the server's RSS and open fds stay bounded (psutil).

The subprocess runs with a short HTTP header timeout (``_connection._HEADER_TIMEOUT_S``, 30 s by
default) and a short session idle timeout, so the timeouts can be seen within a test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psutil
import pytest

from tests.server._support import http_request, masked_frame, parse_http_response, ws_handshake

HEADER_TIMEOUT_S = 1.5
IDLE_TIMEOUT_S = 3.0
MAX_MESSAGE = 4 << 20
_SERVER = (
    "import openenv_train.server._connection as c; c._HEADER_TIMEOUT_S = {header}\n"
    "from openenv_train.server import run_server, ServerConfig\n"
    "from openenv_train.envs.echo import EchoEnvironment\n"
    "run_server(EchoEnvironment, ServerConfig(port={port}, idle_timeout_s={idle}, max_message_size={size}))\n"
)


@dataclass
class Served:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def ps(self) -> psutil.Process:
        return psutil.Process(self.proc.pid)

    def rss_mib(self) -> float:
        return float(self.ps.memory_info().rss) / 2**20

    def fds(self) -> int:
        return int(self.ps.num_fds())

    def alive(self) -> bool:
        return self.proc.poll() is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _health(port: int, timeout: float = 5.0) -> float:
    """Seconds a GET /health took (AssertionError if it failed)."""
    start = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout) as r:
        assert json.loads(r.read()) == {"status": "healthy"}
    return time.monotonic() - start


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    port = _free_port()
    code = _SERVER.format(header=HEADER_TIMEOUT_S, port=port, idle=IDLE_TIMEOUT_S, size=MAX_MESSAGE)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(OSError):
            _health(port, 1.0)
            break
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.1)
    server = Served(port, proc)
    try:
        yield server
    finally:
        proc.terminate()
        try:
            rc = proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        assert rc == 0, f"server exit code {rc}: {err[-2000:]}"
        assert "Traceback" not in err, err[-3000:]


async def _ws(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(ws_handshake())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 101"), head
    return reader, writer


async def _read_frame(reader: asyncio.StreamReader, timeout: float = 5.0) -> tuple[int, bytes]:
    b0, b1 = await asyncio.wait_for(reader.readexactly(2), timeout)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", await reader.readexactly(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", await reader.readexactly(8))[0]
    return b0 & 0x0F, await asyncio.wait_for(reader.readexactly(n), timeout)


def _big_frame_header(n: int, opcode: int = 0x1) -> bytes:
    return struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n) + b"\x00\x00\x00\x00"


def _frame(payload: bytes, opcode: int = 0x1) -> bytes:
    n = len(payload)
    if n < 65536:
        return masked_frame(payload, opcode)
    return _big_frame_header(n, opcode) + payload


async def _ws_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, payload: bytes) -> dict[str, Any]:
    writer.write(_frame(payload))
    opcode, data = await _read_frame(reader)
    assert opcode == 0x1, (opcode, data[:200])
    reply: dict[str, Any] = json.loads(data)
    return reply


async def _echo_works(port: int) -> None:
    reader, writer = await _ws(port)
    try:
        await _ws_request(reader, writer, b'{"type":"reset","data":{}}')
        reply = await _ws_request(reader, writer, json.dumps({"type": "step", "data": {
            "type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "still here"}}}).encode())
        assert reply["type"] == "observation" and reply["data"]["observation"]["result"]["data"] == "still here"
    finally:
        writer.close()


async def _post(port: int, path: str, body: bytes) -> tuple[int, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(http_request("POST", path, body))
        raw = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    return parse_http_response(raw)


async def _read_all(reader: asyncio.StreamReader) -> bytes:
    """Everything until EOF (or a reset, keeping what came before it)."""
    out = b""
    with contextlib.suppress(ConnectionError):
        while chunk := await reader.read(65536):
            out += chunk
    return out


async def _frames_until_close(reader: asyncio.StreamReader) -> list[tuple[int, bytes]]:
    frames: list[tuple[int, bytes]] = []
    with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, TimeoutError):
        while True:
            frames.append(await _read_frame(reader, timeout=20))
            if frames[-1][0] == 0x8:
                break
    return frames


async def _wait_fds(served: Served, at_most: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while served.fds() > at_most and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return served.fds()


# -- JSON bombs ----------------------------------------------------------------------------------------

DEEP = 200_000


@pytest.mark.parametrize("payload", [
    b"[" * DEEP + b"]" * DEEP,
    b'{"type":"step","data":' + b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"}",
    b'{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + b"[" * DEEP + b"]" * DEEP + b"}}",
], ids=["bare-array", "step-data", "mcp-params"])
async def test_deep_nesting_over_ws_is_an_error_reply(served: Served, payload: bytes) -> None:
    reader, writer = await _ws(served.port)
    try:
        reply = await _ws_request(reader, writer, payload)
        assert reply["type"] == "error" and reply["data"]["code"] == "INVALID_JSON", reply
        reply = await _ws_request(reader, writer, b'{"type":"state"}')  # the session survives
        assert reply["type"] == "state", reply
    finally:
        writer.close()
    assert served.alive()


async def test_deep_nesting_over_post_mcp_is_a_parse_error(served: Served) -> None:
    status, reply = await _post(served.port, "/mcp", b"[" * DEEP + b"]" * DEEP)
    assert status == 200 and reply["error"]["code"] == -32700, reply
    status, reply = await _post(served.port, "/mcp", b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":'
                                + b'{"a":' * DEEP + b"0" + b"}" * DEEP + b"}")
    assert status == 200 and reply["error"]["code"] == -32700, reply
    status, _ = await _post(served.port, "/step", b'{"action":' + b"[" * DEEP + b"]" * DEEP + b"}")
    assert status == 422


@pytest.mark.parametrize("number", [b"1e400", b"-1e400",
                                    b"9" * 5000, b"-" + b"1" * 100_000,
                                    b"1" + b"0" * 5000 + b".5"],
                         ids=["1e400", "-1e400", "5000-digits", "100k-digits", "long-float"])
async def test_huge_numbers_are_refused_with_an_error(served: Served, number: bytes) -> None:
    reader, writer = await _ws(served.port)
    try:
        await _ws_request(reader, writer, b'{"type":"reset","data":{}}')
        reply = await _ws_request(reader, writer, b'{"type":"reset","data":{"seed":' + number + b"}}")
        assert reply["type"] == "error" and reply["data"]["code"] in ("INVALID_JSON", "VALIDATION_ERROR"), reply
        # numbers no float can hold are INVALID_JSON; huge integers reach the tool and are refused there
        reply = await _ws_request(reader, writer, b'{"type":"step","data":{"type":"call_tool","tool_name":'
                                  b'"echo_message","arguments":{"message":' + number + b"}}}")
        assert reply["type"] == "error" or reply["data"]["observation"]["error"]["error_type"] == "invalid_args", reply
        reply = await _ws_request(reader, writer, b'{"type":"mcp","data":{"jsonrpc":"2.0","id":' + number
                                  + b',"method":"tools/list"}}')
        assert reply["type"] in ("error", "mcp"), reply
        status, reply = await _post(served.port, "/mcp", b'{"jsonrpc":"2.0","id":' + number
                                    + b',"method":"tools/list"}')
        assert status == 200 and ("error" in reply or "result" in reply), reply
    finally:
        writer.close()
    await _echo_works(served.port)


# -- frames --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("payload", [b"\xff\xfe", b'{"type":"state","x":"\xed\xa0\x80"}', b'{"type":"st\xc3'],
                         ids=["garbage", "surrogate", "truncated"])
async def test_invalid_utf8_text_frame_closes_with_1007(served: Served, payload: bytes) -> None:
    reader, writer = await _ws(served.port)
    try:
        writer.write(masked_frame(payload))
        frames = []
        with contextlib.suppress(asyncio.IncompleteReadError):
            while True:
                frames.append(await _read_frame(reader))
                if frames[-1][0] == 0x8:
                    break
        close = [data for op, data in frames if op == 0x8]
        assert close and struct.unpack("!H", close[0][:2])[0] == 1007, frames
    finally:
        writer.close()
    await _echo_works(served.port)


async def test_a_100_mib_frame_is_refused_without_buffering_it(served: Served) -> None:
    rss_before = served.rss_mib()
    reader, writer = await _ws(served.port)
    frames_task = asyncio.create_task(_frames_until_close(reader))  # read while sending: a RST drops unread data
    size = 100 * 2**20
    writer.write(_big_frame_header(size))
    chunk = b"x" * 2**20
    sent = 0
    with contextlib.suppress(ConnectionError, TimeoutError):
        for _ in range(100):  # the server may close before all of it is sent
            writer.write(chunk)
            await asyncio.wait_for(writer.drain(), 10)
            sent += len(chunk)
    frames = await frames_task
    writer.close()
    # The server closes while we still send, so its RST may discard the error frame on our side: no assertion on
    # the frames here (the next test checks them), only that the connection ended and nothing was buffered.
    assert sent < size or not frames or frames[-1][0] in (0x1, 0x8), frames
    assert served.rss_mib() < rss_before + 20, (rss_before, served.rss_mib(), sent)
    await _echo_works(served.port)


async def test_an_oversized_frame_header_gets_the_error_and_a_1009_close(served: Served) -> None:
    reader, writer = await _ws(served.port)
    writer.write(_big_frame_header(100 * 2**20) + b"x" * 65536)  # declares 100 MiB, then stops sending
    frames = await _frames_until_close(reader)
    writer.close()
    texts = [json.loads(d) for op, d in frames if op == 0x1]
    assert texts and texts[0]["type"] == "error" and "max_message_size" in texts[0]["data"]["message"], frames
    close = [d for op, d in frames if op == 0x8]
    assert close and struct.unpack("!H", close[0][:2])[0] == 1009, frames


async def test_post_body_of_100_mib_is_refused_early(served: Served) -> None:
    rss_before = served.rss_mib()
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    response = asyncio.create_task(_read_all(reader))
    writer.write(f"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: {100 * 2**20}\r\n\r\n".encode())
    with contextlib.suppress(ConnectionError, TimeoutError):
        for _ in range(100):
            writer.write(b"{" * 2**20)
            await asyncio.wait_for(writer.drain(), 10)
    raw = await asyncio.wait_for(response, 10)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 413"), raw[:200]
    assert served.rss_mib() < rss_before + 40, (rss_before, served.rss_mib())
    assert served.alive()


# -- slowloris -----------------------------------------------------------------------------------------


async def test_slowloris_headers_are_timed_out_and_do_not_block_others(served: Served) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    response = asyncio.create_task(_read_all(reader))
    writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    start = time.monotonic()
    for i in range(int(4 * HEADER_TIMEOUT_S / 0.25)):  # one header line every 0.25 s, never the blank line
        await asyncio.sleep(0.25)
        assert await asyncio.to_thread(_health, served.port) < 1.0  # others are served meanwhile
        if response.done():
            break
        with contextlib.suppress(ConnectionError):
            writer.write(f"X-Slow-{i}: a\r\n".encode())
    raw = await asyncio.wait_for(response, 5)
    closed_after = time.monotonic() - start
    writer.close()
    assert raw.startswith(b"HTTP/1.1 408"), raw
    assert b"not completed within" in raw
    assert closed_after < 2 * HEADER_TIMEOUT_S + 1


async def test_slow_body_is_timed_out_with_a_408(served: Served) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
    raw = await asyncio.wait_for(reader.read(), 3 * HEADER_TIMEOUT_S)
    writer.close()
    status, body = parse_http_response(raw)
    assert status == 408 and "not completed" in body["detail"], raw


async def test_idle_keep_alive_connection_is_closed_quietly(served: Served) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    first = await asyncio.wait_for(reader.readuntil(b'"healthy"}'), 5)
    assert first.startswith(b"HTTP/1.1 200")
    rest = await asyncio.wait_for(reader.read(), 3 * HEADER_TIMEOUT_S)
    writer.close()
    assert rest == b""  # closed, with no stray 408 a pooled client could misread


async def test_partial_ws_frames_do_not_block_others_and_stalled_sessions_are_reaped(served: Served) -> None:
    stalled = []
    for cut in (1, 2, 6, 20):  # inside the header, the mask, the payload
        reader, writer = await _ws(served.port)
        writer.write(masked_frame(b'{"type":"state","pad":"' + b"x" * 40 + b'"}')[:cut])
        stalled.append((reader, writer))
    await _echo_works(served.port)
    assert await asyncio.to_thread(_health, served.port) < 1.0
    for reader, _ in stalled:  # the idle reaper ends them: an error frame, then a close frame
        frames = []
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                frames.append(await _read_frame(reader, timeout=4 * IDLE_TIMEOUT_S))
                if frames[-1][0] == 0x8:
                    break
        assert any(op == 0x8 for op, _ in frames), frames
        assert any(b"idle" in d for op, d in frames if op == 0x1), frames
    for _, writer in stalled:
        writer.close()


async def test_many_half_open_connections_are_dropped_and_fds_come_back(served: Served) -> None:
    await _wait_fds(served, 10_000, 0)
    baseline = served.fds()
    rss_before = served.rss_mib()
    conns = []
    for i in range(300):
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        if i % 3 == 1:
            writer.write(b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n")  # a handshake that never ends
        elif i % 3 == 2:
            writer.write(b"POS")
        conns.append((reader, writer))
    await asyncio.sleep(0.3)
    assert served.fds() >= baseline + 250
    assert await asyncio.to_thread(_health, served.port) < 2.0
    await _echo_works(served.port)
    after = await _wait_fds(served, baseline + 2, 4 * HEADER_TIMEOUT_S + 5)
    assert after <= baseline + 2, (baseline, after)
    for _, writer in conns:
        writer.close()
    assert served.rss_mib() < rss_before + 20


async def test_the_server_stays_bounded_after_the_corpus(served: Served) -> None:
    """Runs last in the module: the server is alive, healthy, and holds no leftover sockets."""
    await _echo_works(served.port)
    assert served.alive()
    assert served.rss_mib() < 200
    with contextlib.suppress(psutil.Error):
        assert len([c for c in served.ps.net_connections() if c.status == psutil.CONN_ESTABLISHED]) <= 1
    assert os.path.exists(f"/proc/{served.proc.pid}")
