"""Helpers of the CLI tests: run ``openenv-train`` as a user does, and a scaffolded env shared by the tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``python -m openenv_train.cli ARGS`` in a subprocess; stdout and stderr captured as text."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "openenv_train.cli", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(ready: Path, process: subprocess.Popen[bytes], timeout_s: float = 30.0) -> str:
    """The URL a ``serve --ready-file`` child wrote, once it listens."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready.is_file() and ready.read_text():
            return ready.read_text()
        assert process.poll() is None, f"the server exited with {process.returncode}"
        time.sleep(0.1)
    raise AssertionError(f"no server URL in {ready} after {timeout_s}s")


def wait_healthy(url: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url}/health did not answer within {timeout_s}s")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def scaffold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``openenv-train init demo_env``: the folder it made (tests must not change it)."""
    parent = tmp_path_factory.mktemp("init")
    done = cli("init", "demo_env", "-o", str(parent))
    assert done.returncode == 0, done.stderr
    return parent / "demo_env"


@pytest.fixture(scope="session")
def venv_python(tmp_path_factory: pytest.TempPathFactory, scaffold: Path) -> Iterator[Path]:
    """A fresh venv that sees this venv's packages (a .pth file) with the scaffolded env pip-installed into it."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # a venv made from a venv would see the base interpreter's packages, not these: point at them instead
    Path(purelib, "_parent_venv.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    source = tmp_path_factory.mktemp("src") / "demo_env"
    subprocess.run(["cp", "-r", str(scaffold), str(source)], check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           "--disable-pip-version-check", "--quiet", str(source)], capture_output=True, text=True,
                          timeout=180, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    yield python
