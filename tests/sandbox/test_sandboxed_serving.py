"""Env servers in the sandbox through the provider and `openenv-train serve --sandbox`: no network, Unix socket only."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_train.client import EnvClient, GenericEnvClient, MCPToolClient
from openenv_train.core import ServerStartError
from openenv_train.launch import LocalProcessProvider
from openenv_train.sandbox import SandboxConfig
from tests.sandbox.conftest import require_sandbox


async def test_provider_runs_the_server_sandboxed() -> None:
    require_sandbox()
    provider = LocalProcessProvider("echo", sandbox=True)
    async with MCPToolClient(provider=provider) as env:
        assert env.endpoint.uds is not None and provider.transport == "unix"
        assert "bwrap" in " ".join(provider.command(provider.workdir))  # type: ignore[arg-type]
        await env.reset()
        assert await env.call_tool("echo_message", message="inside") == "inside"
        # The server's network namespace has no route out: its PID namespace hides the host, too.
        server_pid = provider.process.pid  # type: ignore[union-attr]
        children = subprocess.run(["pgrep", "-P", str(server_pid)], capture_output=True, text=True).stdout.split()
        assert children, "bwrap should run the server as a child"
    assert provider.process is not None and provider.process.poll() is not None


async def test_from_env_with_sandbox_and_a_refusal_that_names_the_fix() -> None:
    require_sandbox()
    async with await EnvClient.from_env("counter", sandbox=True) as env:
        assert (await env.reset(target=3)).observation["target"] == 3
    broken = LocalProcessProvider("echo", sandbox=SandboxConfig(bwrap="/nonexistent/bwrap"))
    with pytest.raises(ServerStartError, match="bubblewrap"):
        await broken.start()


async def test_cli_serve_sandbox(tmp_path: Path) -> None:
    require_sandbox()
    shared = tmp_path / "shared"
    shared.mkdir()
    sock = shared / "env.sock"
    proc = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", "counter", "--sandbox",
                             "--uds", str(sock)], stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if sock.exists():
                break
            await asyncio.sleep(0.05)
        async with GenericEnvClient(uds=str(sock)) as env:
            await env.reset(target=2)
            assert (await env.step({"delta": 2})).done is True
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(10)
    assert "no network" in proc.stderr.read()  # type: ignore[union-attr]
