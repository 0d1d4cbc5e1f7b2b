"""``openenv-train serve --workers N``: N real server processes behind one port; one killed by pid is restarted
while the port keeps serving."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from openenv_train.client import GenericEnvClient

from .conftest import stop, wait_ready


def _episode(url: str) -> float:
    with GenericEnvClient(url).sync() as env:
        env.reset(target=3)
        env.step({"delta": 1})
        env.step({"delta": 1})
        return float(env.step({"delta": 1}).reward or 0.0)


def _established(pid: int, port: int) -> int:
    return sum(1 for c in psutil.Process(pid).net_connections("tcp")
               if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == port)


def _workers(supervisor: subprocess.Popen[bytes], count: int, timeout_s: float = 60.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = [c.pid for c in psutil.Process(supervisor.pid).children() if c.status() != psutil.STATUS_ZOMBIE]
        if len(pids) == count:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"the supervisor did not hold {count} workers within {timeout_s}s")


def _wait_reaped(pid: int, timeout_s: float = 60.0) -> None:
    # Not "until it is a zombie": a killed multi-threaded process shows its leader as a zombie while its other
    # threads are still exiting and its listening socket still takes connections (then resets them). The
    # supervisor can reap it only once the whole process is gone, sockets closed.
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid):
            return
        time.sleep(0.01)
    raise AssertionError(f"worker {pid} not reaped by the supervisor {timeout_s}s after SIGKILL")


def test_workers_share_one_port_and_a_killed_one_is_restarted(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    supervisor = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", "counter", "--workers", "2",
                                   "--port", "0", "--ready-file", str(ready)], stderr=subprocess.PIPE)
    try:
        url = wait_ready(ready, supervisor, timeout_s=120)  # type: ignore[arg-type]
        port = int(url.rsplit(":", 1)[1])
        pids = _workers(supervisor, 2)
        # Sessions are connections; the kernel spreads them over both workers' listening sockets.
        clients = [GenericEnvClient(url).sync().connect() for _ in range(24)]
        try:
            held = {pid: _established(pid, port) for pid in pids}
            assert all(held.values()) and sum(held.values()) == 24, held
            assert [c.reset(target=1).observation["target"] for c in clients] == [1] * 24
        finally:
            for client in clients:
                client.close()
        os.kill(pids[0], signal.SIGKILL)
        # Connections the kernel queued on the dying worker's socket before it exited are reset (a limit of
        # SO_REUSEPORT); once it is reaped, every new connection goes to a live worker.
        _wait_reaped(pids[0])
        # The port keeps serving while the worker is down and while it restarts: every session works.
        assert [_episode(url) for _ in range(12)] == [1.0] * 12
        restarted = _workers(supervisor, 2)
        assert pids[0] not in restarted and pids[1] in restarted
        assert [_episode(url) for _ in range(12)] == [1.0] * 12
    finally:
        stop(supervisor)  # type: ignore[arg-type]
    assert supervisor.stderr is not None
    log = supervisor.stderr.read().decode()
    assert "exited (-9); restarting it" in log, log
    assert not psutil.pid_exists(pids[1]) or psutil.Process(pids[1]).status() == psutil.STATUS_ZOMBIE


def test_workers_refuse_options_that_cannot_share_a_port(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "openenv_train.cli", "serve", "counter", "--workers", "2",
                             "--uds", str(tmp_path / "s.sock")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "does not combine with --uds" in result.stderr


@pytest.mark.parametrize("bad", ["0"])
def test_workers_must_be_positive(bad: str) -> None:
    result = subprocess.run([sys.executable, "-m", "openenv_train.cli", "serve", "counter", "--workers", bad],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--workers must be >= 1" in result.stderr
