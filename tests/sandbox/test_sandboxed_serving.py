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


async def test_cli_serve_sandbox_runs_envs_that_open_their_own_sandbox(tmp_path: Path) -> None:
    """Each env's server starts in a sandbox that lets the env open one per episode inside, and a step runs code
    there; that code still may not create user namespaces (repl: unshare(CLONE_NEWUSER) fails with ENOSPC, 28).
    The five servers start at once (their start-up is most of the cost)."""
    require_sandbox()
    names = [name for name in NESTED_STEPS if _runs_here(name)]
    servers = {}
    for name in names:
        folder = tmp_path / name
        folder.mkdir()
        log = (folder / "serve.log").open("wb")
        servers[name] = (folder, log, subprocess.Popen(
            [sys.executable, "-m", "openenv_train.cli", "serve", name, "--sandbox", "--uds", str(folder / "env.sock"),
             "--ready-file", str(folder / "ready")], stdout=log, stderr=subprocess.STDOUT))
    try:
        for name, (folder, _log, proc) in servers.items():
            for _ in range(2400):
                if (folder / "ready").exists() or proc.poll() is not None:
                    break
                await asyncio.sleep(0.05)
            assert (folder / "ready").exists(), (folder / "serve.log").read_text()[-2000:]
            reset, action, field, shown = NESTED_STEPS[name]
            async with GenericEnvClient(uds=str(folder / "env.sock"), reply_timeout_s=120) as env:
                await env.reset(seed=1, **reset)
                result = await env.step(action)
                assert shown in str(result.observation[field]), (name, result.observation)
    finally:
        for _folder, _log, proc in servers.values():
            os.kill(proc.pid, signal.SIGTERM)
        for _folder, log, proc in servers.values():
            proc.wait(20)
            log.close()
    for name, (folder, _log, _proc) in servers.items():
        assert "opens a sandbox per episode inside" in " ".join((folder / "serve.log").read_text().split()), name


def _runs_here(name: str) -> bool:
    """Whether the env's parts are here: a missing git or tmux leaves that env out (fails where CI requires it)."""
    part = {"git": "git", "terminal": "tmux"}.get(name)
    if part is not None and _system_parts.missing(part) is not None:
        if _system_parts.PARTS[part].required:
            pytest.fail(f"{_system_parts.PARTS[part].switch}=1 but {_system_parts.missing(part)}")
        return False
    if name == "jupyter":
        try:
            import ipykernel  # noqa: F401
        except ImportError:
            return False  # the [jupyter] extra is optional
    return True
