"""WebSocket throughput, concurrency and memory: our env server against openenv-core's, same load, one run.

What it measures, for each framework (``ours`` = ``openenv_train.server.run_server``,
``openenv`` = openenv-core 0.3.0's ``create_app`` under uvicorn, one worker) and each env
(``echo``: MCP tools, ``counter``: a plain typed env; see ``openenv_reference.py``):

1. **throughput**: steps/s and p50/p99 step latency with 1 (sequential), 16 and 256 concurrent
   sessions. Each session connects, resets, then steps in a loop for ``--duration`` seconds;
   only successful step replies (``type == "observation"``) count.
2. **concurrency ladder**: N sessions (1024, 2048, 4096, 8192), opened over ``ramp_s``, each doing
   connect + reset + 3 steps with 1 s of think time before every request. Reports the success
   rate and the p50/p99 latency of requests *including* the think time (from the start of the
   sleep to the reply). A framework's ladder stops after its first level below 100 %.
3. **idle memory**: server RSS (``/proc/PID/status`` VmRSS) before and after opening N sessions
   that each did one reset and then sit idle, divided by N.

Every phase runs against a freshly started server on a loopback port; the load comes from a
separate generator process (asyncio + uvloop, the same code for both frameworks). By default
the generator uses a lean raw WebSocket client (``--client raw``): with the ``websockets`` library
client (``--client websockets``, ``compression=None``) the same server measured about half the
steps/s on a 2-core machine, the client's own per-message cost being the limit. RLIMIT_NOFILE is
raised to the hard limit in the driver, the servers (inherited) and the generator.

Each measurement also records the CPU used by the server, by the generator and by everything else
on the machine; before each phase the driver waits (up to ``--quiet-wait`` s) for other processes
to leave the CPUs, and the tables mark with ``*`` the figures taken while they did not.

Run (from the repository root)::

    python benchmarks/ws_throughput.py                      # full run, ~6-7 min on a quiet 2-core machine
    python benchmarks/ws_throughput.py --quick              # smoke run, ~1 min
    python benchmarks/ws_throughput.py --from-json results.json   # print the tables of a saved run
    python benchmarks/ws_throughput.py --env echo --framework ours --duration 3 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gc
import hashlib
import json
import os
import platform
import random
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

Framework = Literal["ours", "openenv"]
EnvName = Literal["echo", "counter"]
ClientKind = Literal["raw", "websockets"]

FRAMEWORKS: tuple[Framework, ...] = ("ours", "openenv")
ENVS: tuple[EnvName, ...] = ("echo", "counter")
HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MAX_SESSIONS = 20000
QUIET_PCT = 25.0
"""A machine whose other processes use less than this (% of one core) is quiet."""
WAIT_PCT = 5.0
"""A server or generator that waited for a CPU longer than this (% of the window) while the machine was not
quiet was slowed by other processes: the measurement is marked contended."""


# =====================================================================================================
# Plan
# =====================================================================================================
@dataclass(frozen=True)
class Plan:
    """Sizes and durations of one benchmark run."""

    duration_s: float = 5.0
    concurrency: tuple[int, ...] = (1, 16, 256)
    ladder: tuple[int, ...] = (1024, 2048, 4096, 8192)
    think_s: float = 1.0
    ladder_steps: int = 3
    ramp_s: float = 2.0
    idle_sessions: int = 2000
    timeout_s: float = 30.0
    client: ClientKind = "raw"
    quiet_wait_s: float = 10.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        """The plan of ``asdict(plan)`` (after a JSON round trip)."""
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**fields)

    @classmethod
    def quick(cls) -> Plan:
        """A smoke-run plan: short phases, small ladder."""
        return cls(duration_s=1.0, ladder=(256, 512), think_s=0.2, ramp_s=0.5, idle_sessions=200, timeout_s=10.0)


# =====================================================================================================
# Workloads: the messages each env gets and how a reply is checked
# =====================================================================================================
def _dump(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Workload:
    """The reset and step frames of an env, and a full check of a step reply."""

    reset: bytes
    step: bytes
    check_step: Callable[[dict[str, Any], int], str | None]


def _check_echo(obs: dict[str, Any], step_no: int) -> str | None:
    result = obs.get("result") or {}
    if obs.get("error") is not None or result.get("data") != "hello":
        return f"echo step reply has wrong content: {json.dumps(obs)[:200]}"
    return None


def _check_counter(obs: dict[str, Any], step_no: int) -> str | None:
    if obs.get("value") != step_no:
        return f"counter step {step_no} reply has value {obs.get('value')!r}"
    return None


WORKLOADS: dict[EnvName, Workload] = {
    "echo": Workload(
        reset=_dump({"type": "reset", "data": {}}),
        step=_dump({"type": "step", "data": {"type": "call_tool", "tool_name": "echo_message",
                                             "arguments": {"message": "hello"}}}),
        check_step=_check_echo,
    ),
    "counter": Workload(
        reset=_dump({"type": "reset", "data": {"target": 1_000_000}}),
        step=_dump({"type": "step", "data": {"delta": 1}}),
        check_step=_check_counter,
    ),
}

_OBS_PREFIX = b'{"type":"observation"'


class ReplyError(Exception):
    """A reply that is not the expected observation."""


def parse_observation(reply: bytes) -> dict[str, Any]:
    """The ``observation`` object of an observation reply; ReplyError for anything else."""
    try:
        msg = json.loads(reply)
    except ValueError as e:
        raise ReplyError(f"reply is not JSON: {reply[:120]!r}") from e
    if msg.get("type") != "observation":
        raise ReplyError(f"expected an observation, got {reply[:200].decode(errors='replace')}")
    return msg["data"]["observation"]


def is_observation(reply: bytes) -> bool:
    """Cheap check used on the hot path (every step reply); falls back to parsing."""
    if reply.startswith(_OBS_PREFIX):
        return True
    try:
        parse_observation(reply)
    except ReplyError:
        return False
    return True


# =====================================================================================================
# WebSocket clients (one outstanding request per connection, as the protocol has no request ids)
# =====================================================================================================
class Conn(Protocol):
    """A client WebSocket session: send a text frame, get the next reply."""

    async def request(self, payload: bytes) -> bytes: ...

    async def close(self) -> None: ...


class ConnectionClosed(Exception):
    """The server closed the connection or the socket dropped."""


_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _mask(payload: bytes, key: bytes) -> bytes:
    n = len(payload)
    if n == 0:
        return payload
    reps = key * (n // 4 + 1)
    return (int.from_bytes(payload, "little") ^ int.from_bytes(reps[:n], "little")).to_bytes(n, "little")


_apply_mask: Callable[[bytes, bytes], bytes] = _mask
with contextlib.suppress(ImportError):  # the websockets C helper, when built
    from websockets.speedups import apply_mask as _apply_mask  # type: ignore[no-redef]


def _client_frame(opcode: int, payload: bytes) -> bytes:
    key = random.getrandbits(32).to_bytes(4, "little")
    n = len(payload)
    if n < 126:
        head = bytes((0x80 | opcode, 0x80 | n))
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return head + key + _apply_mask(payload, key)


class _RawProtocol(asyncio.Protocol):
    """A minimal RFC 6455 client: HTTP upgrade, masked frames out, unmasked frames in."""

    def __init__(self, key: str) -> None:
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.upgraded: asyncio.Future[None] = loop.create_future()
        self.waiter: asyncio.Future[bytes] | None = None
        self.unsolicited: list[bytes] = []
        self.fragments: list[bytes] = []
        self.closed: asyncio.Future[None] = loop.create_future()
        self.close_sent = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        err = ConnectionClosed(f"connection lost: {exc!r}" if exc else "connection closed by server")
        self._fail(err)
        if not self.closed.done():
            self.closed.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.upgraded.done() and not self._read_handshake():
            return
        self._read_frames()

    def _fail(self, err: Exception) -> None:
        if not self.upgraded.done():
            self.upgraded.set_exception(err)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(err)

    def _read_handshake(self) -> bool:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        head = bytes(self.buf[:end]).decode("latin-1")
        del self.buf[:end + 4]
        status, *lines = head.split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines)}
        accept = base64.b64encode(hashlib.sha1(self.key.encode() + _WS_GUID).digest()).decode()
        if " 101 " not in f"{status} " or headers.get("sec-websocket-accept") != accept:
            self.upgraded.set_exception(ConnectionClosed(f"handshake refused: {status}"))
            if self.transport is not None:
                self.transport.close()
            return False
        self.upgraded.set_result(None)
        return True

    def _read_frames(self) -> None:
        buf = self.buf
        while len(buf) >= 2:
            b0, b1 = buf[0], buf[1]
            n, off = b1 & 0x7F, 2
            if n == 126:
                if len(buf) < 4:
                    return
                n, off = int.from_bytes(buf[2:4], "big"), 4
            elif n == 127:
                if len(buf) < 10:
                    return
                n, off = int.from_bytes(buf[2:10], "big"), 10
            key = b""
            if b1 & 0x80:
                key, off = bytes(buf[off:off + 4]), off + 4
            if len(buf) < off + n:
                return
            payload = bytes(buf[off:off + n])
            del buf[:off + n]
            if key:
                payload = _apply_mask(payload, key)
            self._on_frame(b0 & 0x0F, bool(b0 & 0x80), payload)

    def _on_frame(self, opcode: int, fin: bool, payload: bytes) -> None:
        if opcode in (0x0, 0x1, 0x2):
            self.fragments.append(payload)
            if fin:
                message = b"".join(self.fragments)
                self.fragments.clear()
                self._on_message(message)
        elif opcode == 0x8:
            code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
            self._fail(ConnectionClosed(f"server closed the session: code {code} {payload[2:200]!r}"))
            self._send_close()
            if self.transport is not None:
                self.transport.close()
        elif opcode == 0x9 and self.transport is not None:
            self.transport.write(_client_frame(0xA, payload))

    def _on_message(self, message: bytes) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(message)
        else:
            self.unsolicited.append(message)

    def _send_close(self) -> None:
        if not self.close_sent and self.transport is not None and not self.transport.is_closing():
            self.close_sent = True
            self.transport.write(_client_frame(0x8, (1000).to_bytes(2, "big")))


class RawConn:
    """A session over :class:`_RawProtocol`."""

    def __init__(self, protocol: _RawProtocol) -> None:
        self.p = protocol

    @classmethod
    async def open(cls, host: str, port: int, path: str = "/ws") -> RawConn:
        loop = asyncio.get_running_loop()
        key = base64.b64encode(os.urandom(16)).decode()
        transport, protocol = await loop.create_connection(lambda: _RawProtocol(key), host, port)
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        transport.write(request.encode())
        try:
            await protocol.upgraded
        except BaseException:
            transport.close()
            raise
        return cls(protocol)

    async def request(self, payload: bytes) -> bytes:
        p = self.p
        if p.unsolicited:
            raise ReplyError(f"unsolicited message from server: {p.unsolicited[0][:200]!r}")
        if p.transport is None or p.transport.is_closing():
            raise ConnectionClosed("connection is closed")
        waiter = p.waiter = p.loop.create_future()
        p.transport.write(_client_frame(0x1, payload))
        try:
            return await waiter
        finally:
            p.waiter = None

    async def close(self) -> None:
        p = self.p
        p._send_close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(p.closed), 2.0)
        if p.transport is not None:
            p.transport.close()


class LibConn:
    """A session over the ``websockets`` library's asyncio client (compression off, no pings)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, host: str, port: int, path: str = "/ws") -> LibConn:
        from websockets.asyncio.client import connect

        ws = await connect(f"ws://{host}:{port}{path}", compression=None, ping_interval=None, open_timeout=None,
                           max_size=None, close_timeout=2)
        return cls(ws)

    async def request(self, payload: bytes) -> bytes:
        from websockets.exceptions import ConnectionClosed as LibClosed

        try:
            await self.ws.send(payload.decode())
            return await self.ws.recv(decode=False)
        except LibClosed as e:
            raise ConnectionClosed(str(e)) from e

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()


async def open_conn(kind: ClientKind, host: str, port: int) -> Conn:
    """Open one session with the chosen client."""
    return await (RawConn.open(host, port) if kind == "raw" else LibConn.open(host, port))


# =====================================================================================================
# Generator: measurements (runs in its own process)
# =====================================================================================================
def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of ``values`` (``q`` in [0, 1]); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def read_status_kib(pid: int, key: str = "VmRSS") -> int:
    """A memory figure of ``/proc/PID/status`` in KiB: VmRSS (resident now) or VmHWM (peak resident)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} for pid {pid}")


def read_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (all threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_machine_busy_s() -> float:
    """User + nice + system CPU seconds of the whole machine, all cores (from /proc/stat; no irq time)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:4]]
    return sum(ticks) / os.sysconf("SC_CLK_TCK")


def read_run_delay_s(pid: int | str) -> float:
    """Seconds the main thread of ``pid`` spent runnable but waiting for a CPU (``/proc/PID/schedstat``)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9


@dataclass
class CpuShare:
    """CPU over a measured window, in % of the window: CPU used by the server, the generator and all else on
    the machine, and how long the server's and the generator's main threads waited for a CPU."""

    server_pct: float
    generator_pct: float
    other_pct: float
    server_wait_pct: float
    generator_wait_pct: float

    @property
    def contended(self) -> bool:
        """Other processes were busy and the server or the generator had to wait for a CPU."""
        return self.other_pct > QUIET_PCT and max(self.server_wait_pct, self.generator_wait_pct) > WAIT_PCT


class CpuMeter:
    """Measures :class:`CpuShare` between construction and :meth:`stop`."""

    def __init__(self, server_pid: int) -> None:
        self.pid = server_pid
        self.start = self._sample()

    def _sample(self) -> tuple[float, ...]:
        return (time.perf_counter(), read_cpu_s(self.pid), time.process_time(), read_machine_busy_s(),
                read_run_delay_s(self.pid), read_run_delay_s("self"))

    def stop(self) -> CpuShare:
        wall, srv, gen, busy, srv_wait, gen_wait = (b - a for a, b in zip(self.start, self._sample(), strict=True))
        other = max(0.0, busy - srv - gen)
        return CpuShare(*(round(100 * x / wall, 1) for x in (srv, gen, other, srv_wait, gen_wait)))


@dataclass
class Errors:
    """Failure counts by kind, with a few sample messages."""

    counts: dict[str, int] = field(default_factory=dict)
    samples: list[str] = field(default_factory=list)

    def add(self, where: str, exc: BaseException) -> None:
        kind = f"{where}: {type(exc).__name__}"
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if len(self.samples) < 5:
            self.samples.append(f"{kind}: {str(exc)[:300]}")


@dataclass
class ThroughputResult:
    """Steps/s and step latency at one concurrency level."""

    sessions: int
    sessions_ready: int
    steps: int
    failed_sessions: int
    window_s: float
    steps_per_s: float
    p50_ms: float | None
    p99_ms: float | None
    cpu: CpuShare
    errors: Errors


@dataclass
class LadderResult:
    """One level of the concurrency ladder."""

    sessions: int
    succeeded: int
    success_rate: float
    peak_open: int
    p50_ms: float | None
    p99_ms: float | None
    reply_p99_ms: float | None
    think_lag_p99_ms: float | None
    connect_p99_ms: float | None
    server_peak_rss_mib: float
    wall_s: float
    cpu: CpuShare
    errors: Errors


@dataclass
class IdleRssResult:
    """Server memory per idle session."""

    sessions: int
    opened: int
    rss_before_kib: int
    rss_after_kib: int
    kib_per_session: float | None
    open_wall_s: float
    errors: Errors


@dataclass
class _LadderLatencies:
    with_think: list[float] = field(default_factory=list)  # start of the think sleep -> reply
    reply: list[float] = field(default_factory=list)  # request sent -> reply
    think_lag: list[float] = field(default_factory=list)  # how late the generator woke from its sleep
    connect: list[float] = field(default_factory=list)  # connect + upgrade


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000, 2)


class Generator:
    """The load generator: one instance per phase, in the generator process."""

    def __init__(self, host: str, port: int, pid: int, env: EnvName, plan: Plan) -> None:
        self.host, self.port, self.pid, self.plan = host, port, pid, plan
        self.work = WORKLOADS[env]
        self.open_now = 0
        self.peak_open = 0

    async def _connect(self) -> Conn:
        async with asyncio.timeout(self.plan.timeout_s):
            conn = await open_conn(self.plan.client, self.host, self.port)
        self.open_now += 1
        self.peak_open = max(self.peak_open, self.open_now)
        return conn

    async def _close(self, conn: Conn) -> None:
        self.open_now -= 1
        with contextlib.suppress(Exception):
            await conn.close()

    async def _open_and_reset(self, errors: Errors) -> Conn | None:
        try:
            conn = await self._connect()
        except Exception as e:
            errors.add("connect", e)
            return None
        try:
            async with asyncio.timeout(self.plan.timeout_s):
                parse_observation(await conn.request(self.work.reset))
        except Exception as e:
            errors.add("reset", e)
            await self._close(conn)
            return None
        return conn

    async def _open_many(self, n: int, errors: Errors, parallel: int = 64) -> list[Conn]:
        gate = asyncio.Semaphore(parallel)

        async def one() -> Conn | None:
            async with gate:
                return await self._open_and_reset(errors)

        conns = await asyncio.gather(*(one() for _ in range(n)))
        return [c for c in conns if c is not None]

    # -- throughput ----------------------------------------------------------------------------------
    async def throughput(self, sessions: int) -> ThroughputResult:
        errors = Errors()
        conns = await self._open_many(sessions, errors)
        latencies: list[float] = []
        counts = [0, 0]  # steps, failed sessions
        duration = self.plan.duration_s
        meter = CpuMeter(self.pid)
        start = time.perf_counter()
        deadline = start + duration
        tasks = [asyncio.ensure_future(self._step_loop(c, deadline, latencies, counts, errors)) for c in conns]
        _, pending = await asyncio.wait(tasks, timeout=duration + self.plan.timeout_s) if tasks else (set(), set())
        window = time.perf_counter() - start
        cpu = meter.stop()
        for t in pending:
            t.cancel()
            errors.add("step", TimeoutError("no reply before the phase deadline"))
        if pending:
            await asyncio.wait(pending, timeout=10)
        await asyncio.gather(*(self._close(c) for c in conns))
        return ThroughputResult(
            sessions=sessions, sessions_ready=len(conns), steps=counts[0], failed_sessions=counts[1] + len(pending),
            window_s=round(window, 3), steps_per_s=round(counts[0] / window, 1) if window > 0 else 0.0,
            p50_ms=_ms(percentile(latencies, 0.5)), p99_ms=_ms(percentile(latencies, 0.99)),
            cpu=cpu, errors=errors)

    async def _step_loop(self, conn: Conn, deadline: float, latencies: list[float], counts: list[int],
                         errors: Errors) -> None:
        step, clock, record = self.work.step, time.perf_counter, latencies.append
        try:
            t0 = clock()
            first = await conn.request(step)
            err = self.work.check_step(parse_observation(first), 1)
            if err:
                raise ReplyError(err)
            record(clock() - t0)
            counts[0] += 1
            while True:
                t0 = clock()
                if t0 >= deadline:
                    return
                reply = await conn.request(step)
                if not is_observation(reply):
                    raise ReplyError(f"step reply is not an observation: {reply[:200]!r}")
                record(clock() - t0)
                counts[0] += 1
        except Exception as e:
            counts[1] += 1
            errors.add("step", e)

    # -- concurrency ladder --------------------------------------------------------------------------
    async def ladder_level(self, sessions: int) -> LadderResult:
        plan, errors, lat = self.plan, Errors(), _LadderLatencies()
        meter = CpuMeter(self.pid)
        start = time.perf_counter()
        tasks = [asyncio.ensure_future(self._think_session(i * plan.ramp_s / sessions, lat, errors))
                 for i in range(sessions)]
        bound = plan.ramp_s + (plan.ladder_steps + 1) * (plan.think_s + plan.timeout_s) + plan.timeout_s + 10
        done, pending = await asyncio.wait(tasks, timeout=bound)
        for t in pending:
            t.cancel()
            errors.add("session", TimeoutError("still running at the level deadline"))
        if pending:
            await asyncio.wait(pending, timeout=10)
        cpu = meter.stop()
        succeeded = sum(1 for t in done if not t.cancelled() and t.result())
        return LadderResult(
            sessions=sessions, succeeded=succeeded, success_rate=round(succeeded / sessions, 4),
            peak_open=self.peak_open, p50_ms=_ms(percentile(lat.with_think, 0.5)),
            p99_ms=_ms(percentile(lat.with_think, 0.99)), reply_p99_ms=_ms(percentile(lat.reply, 0.99)),
            think_lag_p99_ms=_ms(percentile(lat.think_lag, 0.99)), connect_p99_ms=_ms(percentile(lat.connect, 0.99)),
            server_peak_rss_mib=round(read_status_kib(self.pid, "VmHWM") / 1024, 1),
            wall_s=round(time.perf_counter() - start, 2), cpu=cpu, errors=errors)

    async def _think_session(self, delay: float, lat: _LadderLatencies, errors: Errors) -> bool:
        plan, work = self.plan, self.work
        await asyncio.sleep(delay)
        t0 = time.perf_counter()
        try:
            conn = await self._connect()
        except Exception as e:
            errors.add("connect", e)
            return False
        lat.connect.append(time.perf_counter() - t0)
        ok, step_no = True, 0
        try:
            for step_no in range(plan.ladder_steps + 1):
                t_think = time.perf_counter()
                await asyncio.sleep(plan.think_s)
                t_send = time.perf_counter()
                async with asyncio.timeout(plan.timeout_s):
                    reply = await conn.request(work.reset if step_no == 0 else work.step)
                obs = parse_observation(reply)
                t_reply = time.perf_counter()
                lat.with_think.append(t_reply - t_think)
                lat.reply.append(t_reply - t_send)
                lat.think_lag.append(t_send - t_think - plan.think_s)
                err = work.check_step(obs, step_no) if step_no else None
                if err:
                    raise ReplyError(err)
        except Exception as e:
            ok = False
            errors.add("reset" if step_no == 0 else f"step {step_no}", e)
        finally:
            await self._close(conn)
        return ok

    # -- idle memory ---------------------------------------------------------------------------------
    async def idle_rss(self, sessions: int) -> IdleRssResult:
        errors = Errors()
        warm = await self._open_many(16, Errors())
        for c in warm:
            with contextlib.suppress(Exception):
                await c.request(self.work.step)
        await asyncio.gather(*(self._close(c) for c in warm))
        await asyncio.sleep(1.5)
        before = read_status_kib(self.pid)
        t0 = time.perf_counter()
        conns = await self._open_many(sessions, errors)
        open_wall = time.perf_counter() - t0
        await asyncio.sleep(1.5)
        after = read_status_kib(self.pid)
        await asyncio.gather(*(self._close(c) for c in conns))
        return IdleRssResult(
            sessions=sessions, opened=len(conns), rss_before_kib=before, rss_after_kib=after,
            kib_per_session=round((after - before) / len(conns), 2) if conns else None,
            open_wall_s=round(open_wall, 2), errors=errors)



def raise_nofile() -> None:
    """Raise this process's RLIMIT_NOFILE soft limit to its hard limit."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def _generate(spec: dict[str, Any]) -> dict[str, Any]:
    plan = Plan.from_dict(spec["plan"])
    gen = Generator(spec["host"], spec["port"], spec["pid"], spec["env"], plan)
    phase = spec["phase"]
    if phase == "throughput":
        return {"throughput": [asdict(await gen.throughput(n)) for n in plan.concurrency]}
    if phase == "ladder":
        return {"level": asdict(await gen.ladder_level(spec["sessions"]))}
    if phase == "idle_rss":
        return {"idle_rss": asdict(await gen.idle_rss(plan.idle_sessions))}
    raise ValueError(f"unknown phase {phase!r}")


def generator_main(spec_json: str) -> None:
    """Entry of the generator process: run one phase, print its result as one JSON line."""
    raise_nofile()
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    gc.collect()
    gc.freeze()
    print(json.dumps(asyncio.run(_generate(json.loads(spec_json)))), flush=True)


# =====================================================================================================
# Driver: servers, phases, report
# =====================================================================================================
def free_port() -> int:
    """A currently free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_OURS_CLASSES: dict[EnvName, str] = {"echo": "openenv_train.envs.echo:EchoEnvironment",
                                     "counter": "openenv_train.envs.counter:CounterEnvironment"}


def server_command(framework: Framework, env: EnvName, port: int) -> list[str]:
    """The command line that serves ``env`` with ``framework`` on ``127.0.0.1:port``."""
    if framework == "openenv":
        return [sys.executable, str(HERE / "openenv_reference.py"), "--env", env, "--port", str(port),
                "--max-concurrent-envs", str(MAX_SESSIONS)]
    module, cls = _OURS_CLASSES[env].split(":")
    code = (f"import resource; h = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
            f"resource.setrlimit(resource.RLIMIT_NOFILE, (h, h)); "
            f"from openenv_train.server import run_server, ServerConfig; from {module} import {cls}; "
            f"run_server({cls}, ServerConfig(host='127.0.0.1', port={port}, max_sessions={MAX_SESSIONS}, "
            f"idle_timeout_s=None))")
    return [sys.executable, "-c", code]


@dataclass
class ServerRun:
    """A started server process and its log."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path
    label: str
    problems: list[str] = field(default_factory=list)


def _wait_healthy(run: ServerRun, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if run.proc.poll() is not None:
            raise RuntimeError(f"{run.label} exited with {run.proc.returncode} before it was healthy; "
                               f"log: {run.log.read_text()[-2000:]}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"http://127.0.0.1:{run.port}/health", timeout=2) as r:
                if json.loads(r.read()).get("status") == "healthy":
                    return
        time.sleep(0.1)
    raise RuntimeError(f"{run.label} not healthy after {timeout_s} s")


def _log_problems(log: Path, framework: Framework) -> list[str]:
    """Error lines in a server log (openenv-core logs a traceback for every closed session: counted only)."""
    text = log.read_text(errors="replace")
    tracebacks = text.count("Traceback (most recent call last)")
    if framework == "openenv":
        return [f"{tracebacks} tracebacks in the server log"] if tracebacks else []
    lines = [ln for ln in text.splitlines() if any(w in ln for w in ("Traceback", "Error", "ERROR", "WARNING"))]
    return [f"{tracebacks} tracebacks; first error lines: {lines[:5]}"] if lines else []


@contextlib.contextmanager
def serve(framework: Framework, env: EnvName, log_dir: Path, tag: str) -> Iterator[ServerRun]:
    """Start a server, wait for /health, yield it, then SIGTERM it (SIGKILL after 15 s)."""
    port = free_port()
    log = log_dir / f"{framework}-{env}-{tag}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(server_command(framework, env, port), stdout=out, stderr=subprocess.STDOUT,
                                cwd=REPO)
    run = ServerRun(proc, port, log, f"{framework}/{env} server")
    try:
        _wait_healthy(run)
        yield run
    finally:
        crashed = proc.poll()
        if crashed is not None:
            run.problems.append(f"server died during the phase with exit code {crashed}")
        else:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(15)
                if rc not in (0, -signal.SIGTERM):
                    run.problems.append(f"exit code {rc} after SIGTERM")
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                run.problems.append("did not stop within 15 s of SIGTERM (killed)")
        run.problems += _log_problems(log, framework)




def wait_for_quiet(max_wait_s: float) -> float:
    """Wait (at most ``max_wait_s``) until the machine's CPU use over 1 s is under QUIET_PCT; return the last."""
    start = time.monotonic()
    waiting = False
    while True:
        busy0 = read_machine_busy_s()
        time.sleep(1.0)
        busy = 100 * (read_machine_busy_s() - busy0)
        waited = time.monotonic() - start
        if busy < QUIET_PCT or waited >= max_wait_s:
            if waiting:
                _progress(f"waited {waited:.0f} s for a quiet machine; now {busy:.0f}% of a core in use")
            return round(busy, 1)
        if not waiting:
            _progress(f"other processes use {busy:.0f}% of a core; waiting up to {max_wait_s:g} s")
            waiting = True


def run_generator(spec: dict[str, Any], timeout_s: float, quiet_wait_s: float = 0.0) -> dict[str, Any]:
    """Run one phase in a fresh generator process and return its JSON result."""
    if quiet_wait_s > 0:
        wait_for_quiet(quiet_wait_s)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--generator-spec", json.dumps(spec)]
    proc = subprocess.run(cmd, capture_output=True, timeout=timeout_s, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"generator failed ({proc.returncode}): {proc.stderr.decode()[-3000:]}")
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def _spec(run: ServerRun, env: EnvName, plan: Plan, phase: str, **extra: Any) -> dict[str, Any]:
    return {"host": "127.0.0.1", "port": run.port, "pid": run.proc.pid, "env": env, "plan": asdict(plan),
            "phase": phase, **extra}


def _progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def bench_framework(framework: Framework, env: EnvName, plan: Plan, log_dir: Path) -> dict[str, Any]:
    """All three phases for one (framework, env), each against a fresh server."""
    out: dict[str, Any] = {"server_problems": []}
    with serve(framework, env, log_dir, "throughput") as run:
        _progress(f"{framework}/{env}: throughput at {plan.concurrency} sessions")
        bound = len(plan.concurrency) * (plan.duration_s + 3 * plan.timeout_s + 120)
        out["throughput"] = run_generator(_spec(run, env, plan, "throughput"), bound, plan.quiet_wait_s)["throughput"]
    out["server_problems"] += [f"throughput: {p}" for p in run.problems]
    out["ladder"] = []
    for n in plan.ladder:
        with serve(framework, env, log_dir, f"ladder{n}") as run:
            _progress(f"{framework}/{env}: ladder level {n}")
            bound = plan.ramp_s + (plan.ladder_steps + 2) * (plan.think_s + plan.timeout_s) + 60
            level = run_generator(_spec(run, env, plan, "ladder", sessions=n), bound, plan.quiet_wait_s)["level"]
        out["ladder"].append(level)
        out["server_problems"] += [f"ladder {n}: {p}" for p in run.problems]
        _progress(f"{framework}/{env}: {n} sessions -> {100 * level['success_rate']:.1f}% ok, "
                  f"p99 {level['p99_ms']} ms")
        if level["success_rate"] < 1.0:
            break
    with serve(framework, env, log_dir, "idle") as run:
        _progress(f"{framework}/{env}: idle memory with {plan.idle_sessions} sessions")
        out["idle_rss"] = run_generator(_spec(run, env, plan, "idle_rss"), 600, plan.quiet_wait_s)["idle_rss"]
    out["server_problems"] += [f"idle: {p}" for p in run.problems]
    return out


# -- report --------------------------------------------------------------------------------------------
def _steps(res: dict[str, Any], n: int) -> float | None:
    for t in res.get("throughput", []):
        if t["sessions"] == n:
            return float(t["steps_per_s"])
    return None


def ratios(results: dict[str, dict[str, Any]], plan: Plan) -> dict[str, float | None]:
    """ours/openenv steps/s at each concurrency level."""
    out: dict[str, float | None] = {}
    for n in plan.concurrency:
        a, b = _steps(results.get("ours", {}), n), _steps(results.get("openenv", {}), n)
        out[str(n)] = round(a / b, 2) if a is not None and b else None
    return out


def _held(res: dict[str, Any]) -> str:
    passed = [lv for lv in res.get("ladder", []) if lv["success_rate"] >= 1.0]
    if not passed:
        return "none"
    top = max(passed, key=lambda lv: lv["sessions"])
    return f"{top['sessions']} ({top['peak_open']})"


def targets(results: dict[str, dict[str, Any]], plan: Plan) -> dict[str, bool | None]:
    """The project's targets for ``ours`` on one env (None: not measured in this run)."""
    ours = results.get("ours")
    if ours is None:
        return {}
    r = ratios(results, plan)
    r16, r256 = r.get("16"), r.get("256")
    top = next((lv for lv in ours["ladder"] if lv["sessions"] == 8192), None)
    per = ours["idle_rss"]["kib_per_session"]
    return {
        "steps/s >= 10x openenv at 16 sessions": None if r16 is None else r16 >= 10,
        "steps/s >= 10x openenv at 256 sessions": None if r256 is None else r256 >= 10,
        "8192 sessions, 100% success, p99 < 1.2 s (think incl.)": None if top is None else (
            top["success_rate"] >= 1.0 and top["p99_ms"] is not None and top["p99_ms"] < 1200),
        "< 32 KiB RSS per idle session": None if per is None else per < 32,
    }


def _contended(measurement: dict[str, Any]) -> str:
    cpu = CpuShare(**measurement["cpu"])
    return f" \\* ({cpu.other_pct:.0f}% other)" if cpu.contended else ""


def _fmt(x: Any, suffix: str = "") -> str:
    return "-" if x is None else f"{x:,.1f}{suffix}" if isinstance(x, float) else f"{x}{suffix}"


def format_env_table(env: EnvName, results: dict[str, dict[str, Any]], plan: Plan) -> str:
    """A markdown table of ours vs openenv for one env."""
    fws = [f for f in FRAMEWORKS if f in results]
    r = ratios(results, plan)
    head = ["metric", *fws] + (["ours/openenv"] if len(fws) == 2 else [])
    rows: list[list[str]] = []
    for n in plan.concurrency:
        cells = []
        for f in fws:
            t = next(t for t in results[f]["throughput"] if t["sessions"] == n)
            cells.append(f"{t['steps_per_s']:,.0f} (p50 {_fmt(t['p50_ms'])} / p99 {_fmt(t['p99_ms'])} ms)"
                         + _contended(t))
        rows.append([f"steps/s @ {n} sessions", *cells] + ([_fmt(r[str(n)], "x")] if len(fws) == 2 else []))
    for n in plan.ladder:
        cells = []
        for f in fws:
            lv = next((lv for lv in results[f]["ladder"] if lv["sessions"] == n), None)
            cells.append("not run" if lv is None else
                         f"{100 * lv['success_rate']:.1f}% ok, p99 {_fmt(lv['p99_ms'])} ms, "
                         f"peak {lv['peak_open']} open" + _contended(lv))
        rows.append([f"{n} sessions, {plan.think_s:g} s think", *cells] + ([""] if len(fws) == 2 else []))
    rows.append(["largest level at 100% (peak open there)", *[_held(results[f]) for f in fws]]
                + ([""] if len(fws) == 2 else []))
    cells = [f"{_fmt(results[f]['idle_rss']['kib_per_session'])} KiB" for f in fws]
    rows.append([f"RSS per idle session ({plan.idle_sessions})", *cells] + ([""] if len(fws) == 2 else []))
    lines = [f"### {env}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if "*" in "".join("".join(row) for row in rows):
        lines += ["", f"\\* contended: other processes used over {QUIET_PCT:g}% of a core and the server or the "
                  f"generator waited over {WAIT_PCT:g}% of the time for a CPU"]
    checks = targets(results, plan)
    if checks:
        lines += ["", "Targets (ours):"]
        lines += [f"- {name}: {'n/a' if ok is None else 'MET' if ok else 'NOT MET'}" for name, ok in checks.items()]
    problems = [f"- {f}: {p}" for f in fws for p in results[f]["server_problems"]]
    if problems:
        lines += ["", "Server log / exit notes:", *problems]
    return "\n".join(lines)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("openenv-train", "openenv-core", "uvicorn", "websockets", "fastmcp", "uvloop"):
        with contextlib.suppress(PackageNotFoundError):
            out[pkg] = version(pkg)
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="short durations and a small ladder (smoke run)")
    p.add_argument("--env", choices=("echo", "counter", "both"), default="both")
    p.add_argument("--framework", choices=("ours", "openenv", "both"), default="both")
    p.add_argument("--duration", type=float, help="seconds per throughput level (default 5, quick 1)")
    p.add_argument("--client", choices=("raw", "websockets"), default="raw", help="generator's WebSocket client")
    p.add_argument("--quiet-wait", type=float, default=10.0,
                   help="before each phase, wait up to this many seconds for other processes to leave the CPUs")
    p.add_argument("--json", type=Path, help="also write the results as JSON to this path")
    p.add_argument("--log-dir", type=Path, help="keep server logs here (default: a temporary directory)")
    p.add_argument("--from-json", type=Path, help="print the tables of a saved --json result and exit")
    p.add_argument("--generator-spec", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def make_plan(args: argparse.Namespace) -> Plan:
    plan = Plan.quick() if args.quick else Plan()
    changes: dict[str, Any] = {"client": args.client, "quiet_wait_s": args.quiet_wait}
    if args.duration is not None:
        changes["duration_s"] = args.duration
    return Plan(**{**asdict(plan), **changes})


def run_benchmark(args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    """Every selected (env, framework), then the report."""
    plan = make_plan(args)
    envs = ENVS if args.env == "both" else (args.env,)
    fws = FRAMEWORKS if args.framework == "both" else (args.framework,)
    started = time.time()
    results: dict[str, dict[str, Any]] = {}
    for env in envs:
        results[env] = {fw: bench_framework(fw, env, plan, log_dir) for fw in fws}
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(started)),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[1]},
        "versions": _versions(),
        "plan": asdict(plan),
        "wall_s": round(time.time() - started, 1),
        "results": results,
        "ratios": {env: ratios(results[env], plan) for env in results},
        "targets": {env: targets(results[env], plan) for env in results},
    }


def print_report(report: dict[str, Any]) -> None:
    """The run's header line and one table per env."""
    plan = Plan.from_dict(report["plan"])
    print(f"\n{report['date']}, {report['machine']['cpus']} CPUs, client={plan.client}, "
          f"{report['wall_s']} s in all\n")
    for env, res in report["results"].items():
        print(format_env_table(env, res, plan), end="\n\n")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.generator_spec:
        generator_main(args.generator_spec)
        return
    if args.from_json:
        print_report(json.loads(args.from_json.read_text()))
        return
    raise_nofile()
    with contextlib.ExitStack() as stack:
        log_dir = args.log_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ws_bench_")))
        log_dir.mkdir(parents=True, exist_ok=True)
        report = run_benchmark(args, log_dir)
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
        print(f"results written to {args.json}")


if __name__ == "__main__":
    main()
