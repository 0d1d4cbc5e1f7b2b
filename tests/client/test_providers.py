"""Providers start real servers (threads, subprocesses, Unix sockets) and leave nothing behind."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from openenv_train.client import EnvClient, GenericEnvClient, MCPToolClient, from_env
from openenv_train.containers import docker_available
from openenv_train.core import ServerStartError
from openenv_train.launch import (
    DockerProvider,
    InProcessProvider,
    LocalProcessProvider,
    RemoteProvider,
    UnixSocketProvider,
    http_get_json,
)
from tests.conftest import serve_process


def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


async def test_local_process_provider_serves_and_kills_the_process_group() -> None:
    provider = LocalProcessProvider("counter")
    async with GenericEnvClient(provider=provider) as env:
        assert provider.process is not None
        pid = provider.process.pid
        assert (await env.reset(target=4)).observation["target"] == 4
        status, meta = await http_get_json(env.endpoint, "/metadata")
        assert status == 200 and meta["name"] == "counter"
    assert _gone(pid)
    assert provider.workdir is not None and not provider.workdir.exists()


async def test_unix_socket_transport_and_provider() -> None:
    async with serve_process("echo", transport="unix") as (endpoint, _):
        assert endpoint.uds is not None and Path(endpoint.uds).exists()
        async with MCPToolClient(provider=UnixSocketProvider(endpoint.uds)) as env:
            await env.reset()
            assert await env.call_tool("echo_message", message="via socket") == "via socket"


async def test_in_process_provider_and_from_env() -> None:
    async with await from_env("counter", provider="inprocess") as env:
        assert isinstance(env.provider, InProcessProvider)
        await env.reset(target=1)
        assert (await env.step({"delta": 1})).reward == 1.0
    async with await EnvClient.from_env("echo") as env:  # default: a subprocess
        assert isinstance(env.provider, LocalProcessProvider)
        result = await env.step({"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "m"}})
        assert result.observation["result"]["data"] == "m"


async def test_remote_provider_and_from_url() -> None:
    async with serve_process("counter") as (endpoint, _):
        async with await GenericEnvClient.from_url(endpoint.base_url) as env:
            assert (await env.reset(target=9)).observation["target"] == 9
    with pytest.raises(ServerStartError, match="not reachable or not healthy"):
        await RemoteProvider("http://127.0.0.1:9", timeout_s=0.5).start()


async def test_failed_start_reports_the_server_output() -> None:
    provider = LocalProcessProvider("no_such_module:Env", startup_timeout_s=30)
    with pytest.raises(ServerStartError, match="cannot import module 'no_such_module'"):
        await provider.start()


async def test_server_exits_when_its_parent_dies(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent("""
        import asyncio, sys, time
        from openenv_train.launch import LocalProcessProvider
        async def main():
            provider = LocalProcessProvider("counter")
            await provider.start()
            print(provider.process.pid, flush=True)
            await asyncio.sleep(60)
        asyncio.run(main())
    """))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              cwd=os.getcwd(), env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        line = await asyncio.wait_for(asyncio.to_thread(parent.stdout.readline), 60)  # type: ignore[union-attr]
        server_pid = int(line)
        assert psutil.pid_exists(server_pid)
        parent.kill()  # SIGKILL: no atexit, no cleanup in the parent
        parent.wait()
        assert _gone(server_pid), "the server outlived its parent"
    finally:
        parent.kill()


def test_space_ids_become_space_urls() -> None:
    assert RemoteProvider("openenv/echo_env", check_health=False).url == "https://openenv-echo-env.hf.space"
    assert RemoteProvider("http://example.test:8000", check_health=False).url == "http://example.test:8000"


async def test_docker_provider_says_why_it_cannot_run_without_an_engine(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # With an engine, from_docker_image runs in tests/docker/test_from_docker_image.py (built images there). An
    # engine may answer on this machine (CI starts one before the suite): point the CLI at a socket nobody serves.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    assert docker_available() is not None
    with pytest.raises(ServerStartError, match="cannot run 'openenv-train/echo:latest': .*start a Docker engine"):
        await DockerProvider("openenv-train/echo:latest").start()
