"""``serve --workers N``: N server processes behind one TCP port (``SO_REUSEPORT``), restarted when one dies.

The kernel spreads new connections over the workers' listening sockets; a session is one WebSocket
connection, so it lives in one worker and nothing is shared between them. The supervisor holds a bound,
never-listening socket on the port (with ``SO_REUSEPORT``) so the port stays reserved while a worker restarts
and ``--port 0`` can pick one port for all of them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["serve_workers"]


def _reserve(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


class _Workers:
    def __init__(self, command: Sequence[str], workers: int, folder: Path) -> None:
        self.command, self.count, self.folder = list(command), workers, folder
        self.processes: list[subprocess.Popen[bytes] | None] = [None] * workers
        self.restarts = 0

    def spawn(self, i: int) -> None:
        ready = self.folder / f"worker-{i}.ready"
        ready.unlink(missing_ok=True)
        process = subprocess.Popen([*self.command, "--ready-file", str(ready)])
        self.processes[i] = process
        print(f"openenv-train: worker {i} pid {process.pid}", file=sys.stderr, flush=True)

    def ready(self, i: int) -> bool:
        return (self.folder / f"worker-{i}.ready").exists()

    def stop(self, grace_s: float = 10.0) -> None:
        live = [p for p in self.processes if p is not None and p.poll() is None]
        for process in live:
            process.terminate()
        deadline = time.monotonic() + grace_s
        for process in live:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def serve_workers(serve_argv: Sequence[str], *, workers: int, host: str, port: int, ready_file: str | None,
                  parent_pid: int | None = None) -> int:
    """Run ``workers`` copies of ``serve SERVE_ARGV`` on one port until SIGTERM/SIGINT; restart any that dies.

    Args:
        serve_argv: the ``serve`` arguments of each worker (env and options, without port, host and ready file).
        workers: how many.
        host, port: where they all listen (port 0 picks a free one).
        ready_file: receives ``http://host:port`` once every worker listens.
        parent_pid: stop when this process is gone.

    Returns:
        0 after a clean stop; 1 when the workers could not start.
    """
    try:
        reserved = _reserve(host, port)
    except OSError as exc:
        print(f"openenv-train: cannot bind {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    port = reserved.getsockname()[1]
    url = f"http://{host}:{port}"
    stopping: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _: stopping.append(signum))
    command = [sys.executable, "-m", "openenv_train.cli", "serve", *serve_argv, "--host", host, "--port", str(port),
               "--reuse-port", "--parent-pid", str(os.getpid())]
    with tempfile.TemporaryDirectory(prefix="openenv-train-workers-") as folder:
        pool = _Workers(command, workers, Path(folder))
        try:
            return _supervise(pool, url, ready_file, stopping, parent_pid)
        finally:
            pool.stop()
            reserved.close()


def _supervise(pool: _Workers, url: str, ready_file: str | None, stopping: list[int], parent_pid: int | None) -> int:
    for i in range(pool.count):
        pool.spawn(i)
    announced, fast_deaths = False, 0
    started = [time.monotonic()] * pool.count
    while not stopping and (parent_pid is None or os.getppid() == parent_pid):
        for i, process in enumerate(pool.processes):
            if process is None or process.poll() is None:
                continue
            # A worker that dies before it ever listened would die again: give up instead of spinning.
            if not pool.ready(i) and time.monotonic() - started[i] < 60:
                fast_deaths += 1
                if fast_deaths > 3 * pool.count:
                    print(f"openenv-train: workers keep exiting before they listen (last: {process.returncode}); "
                          "see the errors above", file=sys.stderr)
                    return 1
            print(f"openenv-train: worker {i} exited ({process.returncode}); restarting it", file=sys.stderr,
                  flush=True)
            pool.restarts += 1
            started[i] = time.monotonic()
            pool.spawn(i)
        if not announced and all(pool.ready(i) for i in range(pool.count)):
            announced = True
            print(f"openenv-train: {pool.count} workers serving on {url} (SO_REUSEPORT)", file=sys.stderr, flush=True)
            if ready_file:
                tmp = f"{ready_file}.tmp"
                Path(tmp).write_text(url)
                os.replace(tmp, ready_file)
        time.sleep(0.1)
    return 0
