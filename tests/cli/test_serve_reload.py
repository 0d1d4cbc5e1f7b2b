"""``openenv-train serve --reload``: an edit to the env's package restarts the server, which serves the new code."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from openenv_train.client import GenericEnvClient

from .conftest import ROOT, stop, wait_ready


def _echo(url: str) -> object:
    with GenericEnvClient(url).sync() as env:
        env.reset()
        return env.step({"message": "abc"}).reward


def test_edit_restarts_the_server(scaffold: Path, tmp_path: Path) -> None:
    shutil.copytree(scaffold, tmp_path / "demo_env")
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", "demo_env.server.app:app", "--port", "0",
                               "--ready-file", str(ready), "--reload"], cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    try:
        first = wait_ready(ready, server)  # type: ignore[arg-type]
        assert abs(float(_echo(first)) - 0.3) < 1e-9  # type: ignore[arg-type]
        ready.unlink()
        env_file = tmp_path / "demo_env" / "server" / "demo_env_environment.py"
        time.sleep(0.05)  # a later mtime than the first snapshot
        env_file.write_text(env_file.read_text().replace("reward=0.1 * length", "reward=1.0 * length"))
        second = wait_ready(ready, server)  # type: ignore[arg-type]
        assert _echo(second) == 3.0
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(15)
        finally:
            stop(server)  # type: ignore[arg-type]
    log = server.stderr.read() if server.stderr else ""
    assert "--reload watches" in log and "restarting the server" in log, log
    assert server.returncode == 0, log
