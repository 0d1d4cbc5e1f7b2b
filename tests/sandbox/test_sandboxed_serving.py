"""Env servers in the sandbox through the provider and `openenv-train serve --sandbox`: no network, Unix socket only."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from openenv_train.client import EnvClient, GenericEnvClient, MCPToolClient
from openenv_train.core import ServerStartError
from openenv_train.launch import LocalProcessProvider
from openenv_train.sandbox import SandboxConfig
from tests import _system_parts
from tests.sandbox.conftest import UNAVAILABLE, require_sandbox


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


def test_only_envs_that_open_sandboxes_get_nested_user_namespaces() -> None:
    from openenv_train.envs import load_env_class
    from openenv_train.sandbox import SandboxLimits, sandboxed_command

    assert [name for name in ("coding", "repl", "git", "terminal", "jupyter", "atari", "counter")
            if getattr(load_env_class(name), "opens_sandboxes", False)] == ["coding", "repl", "git", "terminal",
                                                                             "jupyter"]
    if UNAVAILABLE is not None:
        return
    plain = sandboxed_command(["true"], SandboxConfig(limits=SandboxLimits.for_server()))
    nested = sandboxed_command(["true"], SandboxConfig(limits=SandboxLimits.for_server(), nested=True))
    assert "--disable-userns" in plain and "--disable-userns" not in nested
    provider = LocalProcessProvider("repl", sandbox=True)
    assert "--disable-userns" not in provider.command(Path(tempfile.mkdtemp()))
    assert "--disable-userns" in LocalProcessProvider("counter", sandbox=True).command(Path(tempfile.mkdtemp()))


#: A step of each env that opens sandboxes of its own, run under `serve --sandbox`, and what its output shows.
NESTED_STEPS = {
    "repl": ({}, {"code": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                          "print(libc.unshare(0x10000000), ctypes.get_errno())"}, "stdout", "-1 28"),
    "coding": ({"task_id": "fizzbuzz"}, {"code": "print(6 * 7)"}, "stdout", "42"),
    "git": ({"task_id": "add_file"}, {"command": "git status --short --branch && echo $((6 * 7))"}, "stdout", "42"),
    "terminal": ({}, {"keystrokes": "echo $((6 * 7))\n", "wait_s": 5.0}, "screen", "\n42"),
    "jupyter": ({}, {"code": "6 * 7"}, "result", "42"),
}


@pytest.mark.parametrize("name", list(NESTED_STEPS))
async def test_cli_serve_sandbox_runs_envs_that_open_their_own_sandbox(name: str, tmp_path: Path) -> None:
    """The server's sandbox lets the env open one per episode inside; the code there still may not create user
    namespaces (repl: unshare(CLONE_NEWUSER) fails with ENOSPC, 28)."""
    require_sandbox()
    if name in ("git", "terminal"):
        _system_parts.require("tmux" if name == "terminal" else "git")
    if name == "jupyter":
        pytest.importorskip("ipykernel", reason="the jupyter env needs pip install 'openenv-train[jupyter]'")
    reset, action, field, shown = NESTED_STEPS[name]
    sock, ready = tmp_path / "env.sock", tmp_path / "ready"
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", name, "--sandbox", "--uds", str(sock),
                             "--ready-file", str(ready)], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(1200):
            if ready.exists() or proc.poll() is not None:
                break
            await asyncio.sleep(0.05)
        assert ready.exists(), (tmp_path / "serve.log").read_text()[-2000:]
        async with GenericEnvClient(uds=str(sock), reply_timeout_s=120) as env:
            await env.reset(seed=1, **reset)
            result = await env.step(action)
            assert shown in str(result.observation[field]), result.observation
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(20)
        log.close()
    assert "opens a sandbox per episode inside" in (tmp_path / "serve.log").read_text()
