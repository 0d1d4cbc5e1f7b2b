"""Soak test: thousands of churning sessions against one ``openenv-train serve`` process for minutes.

What it does: starts ``openenv-train serve <env>`` (``echo``, an MCP env, by default; or ``counter``) as a
subprocess, then a load generator in its own process(es) (asyncio, the raw WebSocket client of
``ws_throughput.py``) keeps ``--sessions`` sessions (default 2,000) busy for ``--duration`` seconds (default 300)
with random traffic: ``reset``, ``step``, ``state`` and, on MCP envs, ``mcp`` frames (``tools/list``,
``tools/call``) over ``/ws`` plus JSON-RPC over ``POST /mcp``. After each request a session ends with a small
probability, by a clean close (close frame), an abrupt TCP reset (``SO_LINGER`` 0 then abort) or a reset with a
request still in flight, and a new session takes its place.

What it reports: requests served by kind (``steps`` = successful step replies), errors by code (``error``
replies by their ``code``, JSON-RPC errors as ``jsonrpc:<code>``, transport failures by exception type;
every request is valid, so any error counts against the server), and server health:

- **RSS** (``VmRSS``) sampled every 10 s. The reference ("start") is taken *after* the warm-up
  (``--warmup``, default 120 s), the "end" just before the clients leave; growth above 10 % fails the run.
  The warm-up is that long because the allocator's high-water mark keeps rising in steps for about two
  minutes under this load and then stays flat (three runs with a 30 s warm-up: +9.7 %, +15.5 %, +17.2 %, each
  flat for the last 100-190 s); the growth over the second half of the load is reported as well.
- **open file descriptors** (``/proc/PID/fd``) before any client connects (baseline), at the end of the
  load, and after every client has left: they must return to the baseline (+2 of slack, polled for up
  to 30 s), or the run fails.

RLIMIT_NOFILE: the server holds one fd per session and the generator one per session plus transients, so
both need more than ``--sessions`` + ~100; the driver raises its soft limit to the hard limit before starting
either (they inherit it) and refuses to start if the hard limit is too low.

Run (from the repository root)::

    python benchmarks/soak.py                                  # 2,000 sessions, 5 min (+2 min warm-up)
    python benchmarks/soak.py --sessions 200 --duration 20 --warmup 5 --json soak.json
    python benchmarks/soak.py --env counter --generators 2

Exit status: 0 when the server survived, no RSS growth above 10 % and no fd leak; 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import gc
import json
import os
import random
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from ws_throughput import RawConn, _client_frame, free_port, read_status_kib  # noqa: E402

RSS_GROWTH_LIMIT = 0.10
FD_SLACK = 2


# =====================================================================================================
# Generator (its own process)
# =====================================================================================================
def _dump(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _frames(env: str) -> dict[str, bytes]:
    if env == "echo":
        frames = {
            "reset": _dump({"type": "reset", "data": {}}),
            "step": _dump({"type": "step", "data": {"type": "call_tool", "tool_name": "echo_message",
                                                    "arguments": {"message": "hello"}}}),
            "state": _dump({"type": "state"}),
            "mcp_list": _dump({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}),
            "mcp_call": _dump({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "echo_with_length", "arguments": {"message": "soak"}}}}),
        }
    else:
        frames = {"reset": _dump({"type": "reset", "data": {"target": 10**9}}),
                  "step": _dump({"type": "step", "data": {"delta": 1}}),
                  "state": _dump({"type": "state"})}
    return frames


_WEIGHTS = {"reset": 1, "step": 6, "state": 1, "mcp_list": 1, "mcp_call": 2, "http_mcp": 0.3}


class Stats:
    """Counters of one generator process."""

    def __init__(self) -> None:
        self.ok: collections.Counter[str] = collections.Counter()
        self.errors: collections.Counter[str] = collections.Counter()
        self.examples: dict[str, str] = {}
        self.ends: collections.Counter[str] = collections.Counter()
        self.sessions_opened = 0

    def error(self, code: str, detail: str) -> None:
        self.errors[code] += 1
        self.examples.setdefault(code, detail[:300])


def _classify(kind: str, reply: bytes, stats: Stats) -> None:
    try:
        msg = json.loads(reply)
    except ValueError:
        stats.error("non_json_reply", repr(reply[:200]))
        return
    mtype = msg.get("type")
    data = msg.get("data") or {}
    if mtype == "error":
        stats.error(str(data.get("code")), str(data.get("message")))
    elif kind.startswith("mcp"):
        if mtype != "mcp":
            stats.error(f"unexpected:{mtype}", repr(reply[:200]))
        elif "error" in data:
            stats.error(f"jsonrpc:{data['error'].get('code')}", str(data["error"].get("message")))
        else:
            stats.ok[kind] += 1
    elif (kind in ("reset", "step") and mtype == "observation") or (kind == "state" and mtype == "state"):
        stats.ok[kind] += 1
    else:
        stats.error(f"unexpected:{mtype}", repr(reply[:200]))


def _abort(conn: RawConn) -> None:
    """End the connection with a TCP RST (no close frame, no FIN)."""
    transport = conn.p.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


async def _http_mcp(host: str, port: int, stats: Stats) -> None:
    body = _dump({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                  "params": {"name": "echo_message", "arguments": {"message": "http"}}})
    head = (f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    writer = None
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(head + body)
        raw = await asyncio.wait_for(reader.read(), 30)
    except (TimeoutError, OSError) as exc:
        stats.error(f"http:{type(exc).__name__}", str(exc))
        return
    finally:
        if writer is not None:
            writer.close()
    status_line, _, rest = raw.partition(b"\r\n")
    payload = rest.partition(b"\r\n\r\n")[2]
    if b" 200 " not in status_line + b" ":
        stats.error(f"http:{status_line[9:12].decode(errors='replace')}", repr(raw[:200]))
        return
    try:
        reply = json.loads(payload)
    except ValueError:
        stats.error("http:non_json", repr(raw[:200]))
        return
    if "error" in reply:
        stats.error(f"jsonrpc:{reply['error'].get('code')}", str(reply["error"].get("message")))
    else:
        stats.ok["http_mcp"] += 1


async def _session_loop(spec: dict[str, Any], index: int, deadline: float, stats: Stats) -> None:
    rng = random.Random(spec["seed"] * 100_003 + index)
    host, port = spec["host"], spec["port"]
    frames = _frames(spec["env"])
    kinds = [k for k in _WEIGHTS if k in frames or (k == "http_mcp" and spec["env"] == "echo")]
    weights = [_WEIGHTS[k] for k in kinds]
    # Spread the opening over the ramp so the server's accept queue is not the first thing measured.
    await asyncio.sleep(rng.uniform(0, spec["ramp_s"]))
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        try:
            conn = await asyncio.wait_for(RawConn.open(host, port), 30)
        except Exception as exc:  # noqa: BLE001 - counted, then retried
            stats.error(f"connect:{type(exc).__name__}", str(exc))
            await asyncio.sleep(rng.uniform(0.5, 2.0))
            continue
        stats.sessions_opened += 1
        ended = await _drive(conn, frames, kinds, weights, rng, spec, deadline, stats)
        if not ended:
            with contextlib.suppress(Exception):
                await conn.close()
            stats.ends["final_close"] += 1


async def _drive(conn: RawConn, frames: dict[str, bytes], kinds: list[str], weights: list[float],
                 rng: random.Random, spec: dict[str, Any], deadline: float, stats: Stats) -> bool:
    """Run requests on one session until it is dropped (True) or the deadline passes (False)."""
    loop = asyncio.get_running_loop()
    need_reset = True
    while loop.time() < deadline:
        think = rng.uniform(0, spec["think_s"])
        if think:
            await asyncio.sleep(think)
        kind = "reset" if need_reset else rng.choices(kinds, weights)[0]
        need_reset = False
        if kind == "http_mcp":
            await _http_mcp(spec["host"], spec["port"], stats)
            continue
        roll = rng.random()
        if roll < spec["p_drop"] / 3:  # a reset with a request in flight: the reply goes nowhere
            transport = conn.p.transport
            if transport is not None:
                transport.write(_client_frame(0x1, frames[kind]))
            _abort(conn)
            stats.ends["abort_in_flight"] += 1
            return True
        try:
            reply = await asyncio.wait_for(conn.request(frames[kind]), 30)
        except Exception as exc:  # noqa: BLE001 - a transport failure is a counted error
            stats.error(f"{kind}:{type(exc).__name__}", str(exc))
            _abort(conn)
            return True
        _classify(kind, reply, stats)
        roll = rng.random()
        if roll < spec["p_drop"] / 3:
            with contextlib.suppress(Exception):
                await conn.close()
            stats.ends["clean_close"] += 1
            return True
        if roll < 2 * spec["p_drop"] / 3:
            _abort(conn)
            stats.ends["abort"] += 1
            return True
    return False


async def _generate(spec: dict[str, Any]) -> dict[str, Any]:
    stats = Stats()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + spec["run_s"]
    first = spec["first_index"]
    await asyncio.gather(*(_session_loop(spec, first + i, deadline, stats) for i in range(spec["sessions"])))
    return {"ok": dict(stats.ok), "errors": dict(stats.errors), "examples": stats.examples, "ends": dict(stats.ends),
            "sessions_opened": stats.sessions_opened}


def generator_main(spec_json: str) -> None:
    """Entry of a generator process: run the load, print the counters as one JSON line."""
    raise_nofile()
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    gc.collect()
    gc.freeze()
    print(json.dumps(asyncio.run(_generate(json.loads(spec_json)))), flush=True)


# =====================================================================================================
# Driver
# =====================================================================================================
def raise_nofile(need: int = 0) -> tuple[int, int]:
    """Raise RLIMIT_NOFILE's soft limit to the hard limit; SystemExit when the hard limit is below ``need``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        raise SystemExit(f"RLIMIT_NOFILE hard limit is {hard}, this run needs at least {need} "
                         "(raise it with `ulimit -Hn` as root or run fewer --sessions)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return soft, hard


def fd_count(pid: int) -> int:
    """Open file descriptors of ``pid``."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def _healthy(port: int) -> bool:
    with contextlib.suppress(OSError, ValueError):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            return bool(json.loads(r.read()).get("status") == "healthy")
    return False


def _serve_command(env: str, port: int, max_sessions: int) -> list[str]:
    exe = shutil.which("openenv-train", path=str(Path(sys.executable).parent)) or shutil.which("openenv-train")
    base = [exe] if exe else [sys.executable, "-m", "openenv_train.cli"]
    return [*base, "serve", env, "--port", str(port), "--max-sessions", str(max_sessions), "--idle-timeout", "0"]


def _progress(msg: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start the server and the generators, sample the server, return the report."""
    need = args.sessions + 256
    raise_nofile(need)
    port = free_port()
    log_path = Path(args.log or f"/tmp/soak-server-{port}.log")
    with log_path.open("wb") as log:
        server = subprocess.Popen(_serve_command(args.env, port, args.sessions * 2 + 64), stdout=log,
                                  stderr=subprocess.STDOUT, cwd=REPO)
    report: dict[str, Any] = {"env": args.env, "sessions": args.sessions, "duration_s": args.duration,
                              "warmup_s": args.warmup, "think_s": args.think, "p_drop": args.p_drop,
                              "generators": args.generators, "nofile_needed": need,
                              "nofile_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[1], "samples": []}
    gens: list[subprocess.Popen[bytes]] = []
    try:
        deadline = time.monotonic() + 60
        while not _healthy(port):
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server did not become healthy; log: {log_path.read_text()[-2000:]}")
            time.sleep(0.2)
        time.sleep(0.5)
        pid = server.pid
        report["fd_baseline"] = fd_count(pid)
        report["rss_idle_kib"] = read_status_kib(pid)
        _progress(f"server pid {pid} on port {port}: {report['fd_baseline']} fds, "
                  f"{report['rss_idle_kib'] / 1024:.1f} MiB idle")
        run_s = args.warmup + args.duration
        per_gen = -(-args.sessions // args.generators)
        t0 = time.monotonic()
        for g in range(args.generators):
            n = min(per_gen, args.sessions - g * per_gen)
            spec = {"host": "127.0.0.1", "port": port, "env": args.env, "sessions": n, "first_index": g * per_gen,
                    "run_s": run_s, "ramp_s": min(args.warmup / 2, 10.0), "think_s": args.think,
                    "p_drop": args.p_drop, "seed": args.seed}
            gens.append(subprocess.Popen([sys.executable, __file__, "--_generator", json.dumps(spec)],
                                         stdout=subprocess.PIPE, cwd=REPO))
        next_sample = t0 + args.warmup
        while time.monotonic() < t0 + run_s - 2:
            time.sleep(max(0.0, min(next_sample, t0 + run_s - 2) - time.monotonic()))
            if server.poll() is not None:
                break
            now = time.monotonic()
            sample = {"t_s": round(now - t0, 1), "rss_kib": read_status_kib(pid), "fds": fd_count(pid)}
            report["samples"].append(sample)
            if "rss_start_kib" not in report:
                report["rss_start_kib"], report["fd_start"] = sample["rss_kib"], sample["fds"]
                _progress(f"warm-up over: RSS {sample['rss_kib'] / 1024:.1f} MiB, {sample['fds']} fds")
            next_sample = now + 10
        if server.poll() is None:
            report["rss_end_kib"] = read_status_kib(pid)
            report["fd_end"] = fd_count(pid)
        results = []
        for gen in gens:
            out, _ = gen.communicate(timeout=120)
            lines = out.decode().strip().splitlines()
            results.append(json.loads(lines[-1]) if lines else {"failed": gen.returncode})
        report["load_s"] = round(time.monotonic() - t0, 1)
        _merge(report, results)
        if server.poll() is not None:
            report["server_exit"] = server.returncode
        else:
            deadline = time.monotonic() + 30
            while fd_count(pid) > report["fd_baseline"] + FD_SLACK and time.monotonic() < deadline:
                time.sleep(0.5)
            report["fd_after"] = fd_count(pid)
            report["rss_after_kib"] = read_status_kib(pid)
            report["healthy_after"] = _healthy(port)
    finally:
        for gen in gens:
            if gen.poll() is None:
                gen.kill()
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        report["server_returncode"] = server.returncode
        text = log_path.read_text(errors="replace")
        report["server_log_tracebacks"] = text.count("Traceback (most recent call last)")
    _verdict(report)
    return report


def _merge(report: dict[str, Any], results: list[dict[str, Any]]) -> None:
    ok: collections.Counter[str] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    ends: collections.Counter[str] = collections.Counter()
    examples: dict[str, str] = {}
    opened = 0
    for r in results:
        ok.update(r.get("ok", {}))
        errors.update(r.get("errors", {}))
        ends.update(r.get("ends", {}))
        opened += r.get("sessions_opened", 0)
        for k, v in r.get("examples", {}).items():
            examples.setdefault(k, v)
        if "failed" in r:
            errors[f"generator_exit:{r['failed']}"] += 1
    report.update(ok=dict(ok), errors=dict(errors), error_examples=examples, session_ends=dict(ends),
                  sessions_opened=opened, requests_ok=sum(ok.values()), steps_served=ok.get("step", 0))
    report["requests_per_s"] = round(report["requests_ok"] / max(report["load_s"], 1e-9), 1)


def _verdict(report: dict[str, Any]) -> None:
    problems = []
    if "server_exit" in report:
        problems.append(f"server died during the run (exit code {report['server_exit']})")
    start, end = report.get("rss_start_kib"), report.get("rss_end_kib")
    half = report["warmup_s"] + report["duration_s"] / 2
    later = [s for s in report["samples"] if s["t_s"] >= half]
    if later and end:
        report["rss_mid_kib"] = later[0]["rss_kib"]
        report["rss_growth_second_half_pct"] = round(100 * (end - later[0]["rss_kib"]) / later[0]["rss_kib"], 1)
    if start and end:
        report["rss_growth_pct"] = round(100 * (end - start) / start, 1)
        if end > start * (1 + RSS_GROWTH_LIMIT):
            problems.append(f"RSS grew {report['rss_growth_pct']}% after warm-up (limit {RSS_GROWTH_LIMIT:.0%})")
    if "fd_after" in report and report["fd_after"] > report["fd_baseline"] + FD_SLACK:
        problems.append(f"fd leak: {report['fd_after']} open after the clients left, baseline {report['fd_baseline']}")
    if report.get("healthy_after") is False:
        problems.append("/health did not answer after the run")
    report["problems"] = problems
    report["passed"] = not problems


def print_report(r: dict[str, Any]) -> None:
    """Human-readable summary."""
    mib = lambda k: f"{r[k] / 1024:.1f} MiB" if r.get(k) else "n/a"  # noqa: E731
    print(f"soak: env={r['env']} sessions={r['sessions']} load={r.get('load_s')} s "
          f"(warm-up {r['warmup_s']} s + {r['duration_s']} s), think<= {r['think_s']} s, p_drop={r['p_drop']}")
    print(f"  requests ok: {r.get('requests_ok')} ({r.get('requests_per_s')}/s); by kind: {r.get('ok')}")
    print(f"  steps served: {r.get('steps_served')}; sessions opened: {r.get('sessions_opened')}; "
          f"ends: {r.get('session_ends')}")
    print(f"  errors by code: {r.get('errors') or 'none'}")
    for code, example in (r.get("error_examples") or {}).items():
        print(f"    {code}: {example}")
    print(f"  RSS: idle {mib('rss_idle_kib')}, after warm-up {mib('rss_start_kib')}, end {mib('rss_end_kib')} "
          f"({r.get('rss_growth_pct')}%; {r.get('rss_growth_second_half_pct')}% over the second half), "
          f"after clients left {mib('rss_after_kib')}")
    print(f"  fds: baseline {r.get('fd_baseline')}, after warm-up {r.get('fd_start')}, end {r.get('fd_end')}, "
          f"after clients left {r.get('fd_after')}; RLIMIT_NOFILE needed >= {r['nofile_needed']} "
          f"(hard limit {r['nofile_limit']})")
    print(f"  server log tracebacks: {r.get('server_log_tracebacks')}; exit code after SIGTERM: "
          f"{r.get('server_returncode')}")
    print("  PASSED" if r["passed"] else f"  FAILED: {'; '.join(r['problems'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--_generator", help=argparse.SUPPRESS)
    parser.add_argument("--env", default="echo", help="catalog env to serve (echo: MCP traffic too; counter)")
    parser.add_argument("--sessions", type=int, default=2000, help="concurrent sessions (default 2000)")
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of load after the warm-up")
    parser.add_argument("--warmup", type=float, default=120.0, help="seconds before the RSS/fd reference sample")
    parser.add_argument("--think", type=float, default=0.5, help="max random pause before each request (s)")
    parser.add_argument("--p-drop", type=float, default=0.02, help="chance a session ends after a request")
    parser.add_argument("--generators", type=int, default=1, help="load generator processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", help="server log path (default /tmp/soak-server-PORT.log)")
    parser.add_argument("--json", help="write the report as JSON here")
    args = parser.parse_args()
    if args._generator:
        generator_main(args._generator)
        return
    report = run(args)
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    sys.exit(0 if report["passed"] else 1)


if __name__ == "__main__":
    main()
