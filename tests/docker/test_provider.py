"""The Docker provider against a real engine: episodes, limits, no network, cleanup, per-session containers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest

from openenv_train.client import GenericEnvClient
from openenv_train.launch import DockerLimits, DockerProvider
from openenv_train.launch._docker import LABEL, LABEL_HOST, LABEL_PARENT, LABEL_SOCKDIR, reap_orphans

pytestmark = pytest.mark.timeout(900)  # the first test may install Docker and build the base image
ECHO = {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}}


def _exists(cid: str) -> bool:
    return subprocess.run(["docker", "inspect", cid], capture_output=True).returncode == 0


def _gone(cid: str, within_s: float = 20.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not _exists(cid):
            return True
        time.sleep(0.2)
    return False


def _gone_dir(path: str, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not os.path.exists(path)


def _exec(cid: str, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", "exec", cid, "python3", "-c", code], capture_output=True, text=True, timeout=60)


async def test_echo_episode_and_container_gone_after_close(echo_image: str) -> None:
    provider = DockerProvider(echo_image)
    async with await GenericEnvClient(provider=provider).connect() as env:
        (cid,) = provider.container_ids
        assert (await env.reset()).done is False
        result = await env.step(ECHO)
        assert result.observation["result"]["data"] == "hi"
    assert _gone(cid, 5.0)


async def test_wordle_episode(wordle_image: str) -> None:
    async with await GenericEnvClient.from_docker_image(wordle_image) as env:
        await env.reset(task="crane")
        first = await env.step({"message": "[slate]"})
        assert first.observation["feedback"] == ["XXGXG"] and not first.done
        win = await env.step({"message": "[crane]"})
        assert win.reward == 1.0 and win.done


async def test_limits_read_only_root_and_no_network(echo_image: str) -> None:
    provider = DockerProvider(echo_image, limits=DockerLimits(cpus=0.5, memory="256m", pids=64))
    try:
        await provider.start()
        (cid,) = provider.container_ids
        host = json.loads(subprocess.run(["docker", "inspect", "--format", "{{json .HostConfig}}", cid],
                                         capture_output=True, text=True, check=True).stdout)
        assert host["Memory"] == 256 * 2**20 and host["PidsLimit"] == 64 and host["NanoCpus"] == 5 * 10**8
        assert host["ReadonlyRootfs"] and host["NetworkMode"] == "none"
        net = _exec(cid, "import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)")
        assert net.returncode != 0 and ("unreachable" in net.stderr or "OSError" in net.stderr), net.stderr
        interfaces = _exec(cid, "import socket; print(sorted(n for _, n in socket.if_nameindex()))")
        assert interfaces.stdout.strip() == "['lo']"
        ro = _exec(cid, "open('/opt/x', 'w')")
        assert ro.returncode != 0 and "Read-only file system" in ro.stderr
        assert _exec(cid, "open('/tmp/x', 'w').write('ok')").returncode == 0
    finally:
        await provider.stop()


def test_memory_limit_kills_a_memory_bomb(echo_image: str) -> None:
    bomb = "x = b'x' * (512 * 2**20); print('survived')"
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", *DockerLimits(memory="128m").args(),
                           "--entrypoint", "python3", echo_image, "-c", bomb], capture_output=True, text=True, timeout=120)
    assert done.returncode == 137 and "survived" not in done.stdout, (done.returncode, done.stderr[-500:])


async def test_session_isolation_gives_each_session_its_container(echo_image: str) -> None:
    provider = DockerProvider(echo_image, isolation="session")
    try:
        clients = await asyncio.gather(provider.client(), provider.client())
        ids = provider.container_ids
        assert len(ids) == 2 and ids[0] != ids[1]
        for env in clients:
            assert (await env.step(ECHO)).observation["result"]["data"] == "hi"
        await clients[0].close()
        assert _gone(ids[0], 5.0) and _exists(ids[1])
    finally:
        await provider.stop()
    assert provider.container_ids == [] and _gone(ids[1], 5.0)


async def test_server_isolation_shares_one_container(echo_image: str) -> None:
    provider = DockerProvider(echo_image)
    try:
        first, second = await provider.client(), await provider.client()
        assert len(provider.container_ids) == 1
        await first.close()
        assert (await second.step(ECHO)).observation["result"]["data"] == "hi"  # the container outlives a client
        (cid,) = provider.container_ids
    finally:
        await provider.stop()
    assert _gone(cid, 5.0)


def test_watchdog_removes_containers_of_a_killed_parent(echo_image: str) -> None:
    code = ("import asyncio, sys\nfrom openenv_train.launch import DockerProvider\n"
            "async def main():\n    p = DockerProvider(sys.argv[1]); await p.start()\n"
            "    print(p.container_ids[0], flush=True); await asyncio.sleep(600)\nasyncio.run(main())\n")
    parent = subprocess.Popen([sys.executable, "-c", code, echo_image], stdout=subprocess.PIPE, text=True)
    try:
        cid = parent.stdout.readline().strip()  # type: ignore[union-attr]
        assert cid and _exists(cid)
        sockdir = subprocess.run(["docker", "inspect", "--format", f'{{{{index .Config.Labels "{LABEL_SOCKDIR}"}}}}', cid],
                                 capture_output=True, text=True, check=True).stdout.strip()
        assert os.path.isdir(sockdir)
        parent.kill()  # SIGKILL: no atexit hooks run
        parent.wait()
        assert _gone(cid, 30.0), "the container outlived its parent"
        assert _gone_dir(sockdir), "the socket directory outlived its parent"
    finally:
        parent.kill()


def test_reaper_removes_containers_whose_parent_is_gone(echo_image: str) -> None:
    import socket

    dead = subprocess.Popen(["true"])
    dead.wait()
    cid = subprocess.run(["docker", "run", "-d", "--network", "none", "--label", f"{LABEL}=1", "--label",
                          f"{LABEL_PARENT}={dead.pid}", "--label", f"{LABEL_HOST}={socket.gethostname()}",
                          "--entrypoint", "sleep", echo_image, "300"], capture_output=True, text=True, check=True).stdout.strip()
    try:
        assert any(cid.startswith(short) for short in reap_orphans())
        assert _gone(cid, 5.0)
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


async def test_port_mode_needs_a_bridge_or_says_why(echo_image: str) -> None:
    bridge = subprocess.run(["docker", "network", "inspect", "bridge"], capture_output=True).returncode == 0
    provider = DockerProvider(echo_image, transport="tcp")
    if not bridge:
        from openenv_train.core import ServerStartError

        with pytest.raises(ServerStartError):
            await provider.start()
        assert provider.container_ids == []
        pytest.skip("the engine has no bridge network (dockerd --bridge=none): port mode cannot be exercised")
    async with await GenericEnvClient(provider=provider).connect() as env:
        assert (await env.step(ECHO)).observation["result"]["data"] == "hi"
