"""Fixtures of the compatibility tests: openenv-core servers (uvicorn subprocesses) and our echo server.

The openenv-core servers take a few seconds to import (FastAPI, FastMCP), so both are started
once per test session, in parallel, each in its own process group on a free 127.0.0.1 port.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from openenv_train.client import Endpoint
from tests.conftest import serve_process

APPS_SCRIPT = Path(__file__).with_name("_openenv_apps.py")
STARTUP_TIMEOUT_S = 180.0  # openenv 0.10 imports FastAPI, FastMCP and more: slow to start on a busy machine


class OpenEnvCoreServer:
    """``_openenv_apps.py KIND`` (openenv-core's ``create_app`` under uvicorn) in a subprocess."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.workdir = Path(tempfile.mkdtemp(prefix=f"oe-core-{kind}-"))
        self.ready_file = self.workdir / "port"
        self.log_path = self.workdir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def launch(self) -> None:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(APPS_SCRIPT), self.kind, str(self.ready_file)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "ENABLE_WEB_INTERFACE": "false", "PYTHONWARNINGS": "ignore"},
            )

    def wait_healthy(self, deadline: float) -> str:
        """Poll the ready file, then ``GET /health``, until healthy; returns the base URL."""
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"openenv-core {self.kind} server exited ({self.process.returncode}):\n{self.log_tail()}")
            if self.ready_file.exists():
                url = f"http://127.0.0.1:{int(self.ready_file.read_text())}"
                try:
                    with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                        if json.loads(response.read()) == {"status": "healthy"}:
                            self.url = url
                            return url
                except (OSError, urllib.error.URLError, ValueError):
                    pass
            time.sleep(0.05)
        raise TimeoutError(f"openenv-core {self.kind} server not healthy in time:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM the process group we started, SIGKILL it if it lingers, remove the temp dir."""
        process = self.process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        shutil.rmtree(self.workdir, ignore_errors=True)


@contextlib.contextmanager
def openenv_core_servers(*kinds: str) -> Iterator[dict[str, str]]:
    """Start the named openenv-core apps side by side; yields ``{kind: base_url}``."""
    servers = [OpenEnvCoreServer(kind) for kind in kinds]
    try:
        for server in servers:
            server.launch()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        yield {server.kind: server.wait_healthy(deadline) for server in servers}
    finally:
        for server in servers:
            server.stop()


@pytest.fixture(scope="session")
def oe_servers() -> Iterator[dict[str, str]]:
    with openenv_core_servers("counter", "echo") as urls:
        yield urls


@pytest.fixture(scope="session")
def oe_counter_url(oe_servers: dict[str, str]) -> str:
    """Base URL of an openenv-core server of OECounterEnvironment (max_concurrent_envs=64)."""
    return oe_servers["counter"]


@pytest.fixture(scope="session")
def oe_echo_url(oe_servers: dict[str, str]) -> str:
    """Base URL of an openenv-core server of OEEchoEnvironment, an MCPEnvironment with a FastMCP echo server."""
    return oe_servers["echo"]


@pytest.fixture
async def our_echo() -> AsyncIterator[Endpoint]:
    """``openenv-train serve echo`` in a subprocess."""
    async with serve_process("echo") as (endpoint, _provider):
        yield endpoint


@pytest.fixture
async def our_counter() -> AsyncIterator[Endpoint]:
    """``openenv-train serve counter`` in a subprocess."""
    async with serve_process("counter") as (endpoint, _provider):
        yield endpoint
