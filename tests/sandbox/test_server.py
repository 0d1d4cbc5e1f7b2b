"""An env server runs sandboxed (no network) and is driven from the host through a Unix socket."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from openenv_train.client import MCPToolClient
from openenv_train.launch import UnixSocketProvider
from openenv_train.sandbox import sandboxed_command
from tests.sandbox.conftest import SKIP_REASON

pytestmark = pytest.mark.skipif(SKIP_REASON is not None, reason=str(SKIP_REASON))

SERVE = [sys.executable, "-m", "openenv_train.cli", "serve", "echo"]


@contextlib.contextmanager
def sandboxed_server(shared: Path, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """``openenv-train serve echo ARGS --ready-file SHARED/ready`` in the sandbox; yields it once it is ready."""
    command = sandboxed_command([*SERVE, *args, "--ready-file", str(shared / "ready")], shared_dir=shared)
    with open(shared.parent / f"{shared.name}.log", "wb") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (shared / "ready").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the sandboxed server did not start:\n{(shared.parent / f'{shared.name}.log').read_text()}")
            time.sleep(0.05)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _namespaces(pid: int | str) -> dict[str, str]:
    return {ns: os.readlink(f"/proc/{pid}/ns/{ns}") for ns in ("net", "pid", "mnt", "user")}


def _server_pid(sandbox_pid: int) -> int:
    """The host pid of the server: the descendant of the sandbox process that runs ``serve echo``."""
    for child in psutil.Process(sandbox_pid).children(recursive=True):
        if "serve" in child.cmdline() and "--" not in child.cmdline():
            return child.pid
    raise AssertionError(f"no server process under {sandbox_pid}")


async def test_echo_server_in_the_sandbox_over_a_unix_socket(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    sock = shared / "env.sock"
    with sandboxed_server(shared, "--uds", str(sock)) as proc:
        async with MCPToolClient(provider=UnixSocketProvider(str(sock))) as env:
            await env.reset()
            assert await env.call_tool("echo_message", message="from the host") == "from the host"
            tools = {tool.name for tool in await env.list_tools()}
            assert {"echo_message", "echo_with_length"} <= tools
        server = _server_pid(proc.pid)
        assert all(ours != theirs for ours, theirs in zip(_namespaces("self").values(),
                                                          _namespaces(server).values(), strict=True))
        if os.geteuid() == 0:
            assert Path(f"/proc/{server}/status").read_text().count("\t65534\t") >= 2  # runs as nobody
    assert proc.returncode is not None
    deadline = time.monotonic() + 5  # killing bwrap makes the kernel kill the sandbox's processes right after
    while _listening(sock) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _listening(sock)


def _listening(sock: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as client:
        try:
            client.connect(str(sock))
        except OSError:
            return False
        return True


def test_sandboxed_server_has_its_own_network(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    with socket.socket() as held:  # the port is taken on the host: the sandbox binds it anyway, in its own netns
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        with sandboxed_server(shared, "--host", "127.0.0.1", "--port", str(port)):
            assert (shared / "ready").read_text().strip().endswith(f":{port}")
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=5)


def test_code_in_a_sandboxed_process_cannot_connect_out(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        code = textwrap.dedent(f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=2)
                print("CONNECTED")
            except OSError as exc:
                print(type(exc).__name__)
            open("{tmp_path}/out.txt", "w").write("written through the shared dir")
        """)
        done = subprocess.run(sandboxed_command([sys.executable, "-c", code], shared_dir=tmp_path),
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ConnectionRefusedError\n"
    assert (tmp_path / "out.txt").read_text() == "written through the shared dir"
