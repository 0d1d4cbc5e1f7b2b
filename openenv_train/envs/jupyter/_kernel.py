"""A Jupyter kernel (ipykernel) in the OS sandbox, reached over ZeroMQ's IPC transport through a shared folder."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, Any

from ...core import OpenEnvTrainError
from ...sandbox import SandboxConfig, sandboxed_command
from ..process_group import kill_process_group

__all__ = ["CellRun", "KernelDied", "SandboxedKernel"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
START_TIMEOUT_S = 60.0
INTERRUPT_GRACE_S = 5.0
MAX_TEXT_CHARS = 64 * 1024


class KernelDied(OpenEnvTrainError, RuntimeError):
    """The kernel did not start, exited, or stopped answering."""


@dataclass
class CellRun:
    """What one cell printed, returned and raised."""

    stdout: str = ""
    stderr: str = ""
    result: str | None = None
    displays: list[str] = field(default_factory=list)
    error_name: str | None = None
    error_value: str | None = None
    traceback: str = ""
    execution_count: int | None = None
    timed_out: bool = False


def _text(data: dict[str, Any]) -> str:
    return str(data.get("text/plain", ", ".join(sorted(data))))[:MAX_TEXT_CHARS]


class SandboxedKernel:
    """One ipykernel process in a bubblewrap sandbox: :meth:`start`, :meth:`execute` cells, :meth:`close`.

    The sandbox has no network, so the kernel's five channels are ZeroMQ IPC sockets (Unix sockets) in a host
    folder bind-mounted into the sandbox; the connection file there holds the HMAC key. Interrupts go as
    ``interrupt_request`` messages on the control channel (host pids mean nothing in the sandbox).
    """

    def __init__(self, process: asyncio.subprocess.Process, client: Any, folder: str, log: IO[bytes]) -> None:
        self._process, self._client, self._folder, self._log = process, client, folder, log

    @classmethod
    async def start(cls, config: SandboxConfig) -> SandboxedKernel:
        """Start a kernel and wait until it answers.

        Raises:
            SandboxUnavailable: sandboxes cannot run here.
            KernelDied: the kernel did not come up in time (the message holds its error output).
        """
        from jupyter_client import AsyncKernelClient
        from jupyter_client.connect import write_connection_file

        folder = tempfile.mkdtemp(prefix="openenv-kernel-")
        os.chmod(folder, 0o755)
        connection = os.path.join(folder, "kernel.json")
        write_connection_file(connection, transport="ipc", ip=os.path.join(folder, "k"), shell_port=1, iopub_port=2,
                              stdin_port=3, control_port=4, hb_port=5, key=secrets.token_hex(16).encode())
        os.chmod(connection, 0o644)
        argv = [config.python, "-m", "ipykernel_launcher", "-f", connection]
        log = tempfile.TemporaryFile()  # the kernel's own log: a file, so it never blocks on a full pipe
        try:
            command = sandboxed_command(argv, config, shared_dir=folder)
            process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=log,
                start_new_session=True)
        except BaseException:
            log.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        client = AsyncKernelClient(connection_file=connection)
        client.load_connection_file()
        client.start_channels(hb=False)  # liveness is the sandbox process's; heartbeats miss under load
        kernel = cls(process, client, folder, log)
        try:
            await kernel._wait_ready(START_TIMEOUT_S)
        except KernelDied as exc:
            error = await kernel._stderr_tail()
            await kernel.close()
            raise KernelDied(f"{exc}: {error}") from None
        return kernel

    async def _wait_ready(self, timeout_s: float) -> None:
        """Ask for ``kernel_info`` until the kernel answers (requests sent before it binds are dropped)."""
        deadline = time.monotonic() + timeout_s
        sent: set[str] = set()
        while time.monotonic() < deadline:
            sent.add(self._client.kernel_info())
            try:
                reply = await self._client.get_shell_msg(timeout=1.0)
            except queue.Empty:
                if self._process.returncode is not None:
                    raise KernelDied(f"the kernel exited (code {self._process.returncode}) while starting") from None
                continue
            if reply["parent_header"].get("msg_id") in sent:
                while True:  # drain the replies to the other requests
                    try:
                        await self._client.get_shell_msg(timeout=0.2)
                    except queue.Empty:
                        return
        raise KernelDied(f"the kernel did not answer within {timeout_s:g} s")

    async def execute(self, code: str, timeout_s: float) -> CellRun:
        """Run one cell; past ``timeout_s`` the kernel is interrupted (``KeyboardInterrupt`` in the cell).

        Raises:
            KernelDied: the kernel exited, or did not stop within a grace period after the interrupt.
        """
        if self._process.returncode is not None:
            raise KernelDied("the kernel has exited")
        msg_id = self._client.execute(code, store_history=True, allow_stdin=False)
        run = CellRun()
        deadline = time.monotonic() + timeout_s
        interrupted = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if interrupted:
                    raise KernelDied(f"the kernel did not stop within {INTERRUPT_GRACE_S:g} s of an interrupt")
                run.timed_out, interrupted = True, True
                self._interrupt()
                deadline = time.monotonic() + INTERRUPT_GRACE_S
                continue
            try:
                message = await self._client.get_iopub_msg(timeout=min(left, 1.0))
            except queue.Empty:
                if self._process.returncode is not None:
                    raise KernelDied(f"the kernel exited (code {self._process.returncode}) while running the cell") from None
                continue
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if self._record(run, message["msg_type"], message["content"]):
                return run

    @staticmethod
    def _record(run: CellRun, kind: str, content: dict[str, Any]) -> bool:
        """Fold one iopub message into ``run``; True once the kernel is idle again (the cell is over)."""
        if kind == "stream":
            text = str(content.get("text", ""))
            if content.get("name") == "stderr":
                run.stderr = (run.stderr + text)[-MAX_TEXT_CHARS:]
            else:
                run.stdout = (run.stdout + text)[-MAX_TEXT_CHARS:]
        elif kind == "execute_result":
            run.result, run.execution_count = _text(content.get("data", {})), content.get("execution_count")
        elif kind == "display_data":
            run.displays.append(_text(content.get("data", {})))
        elif kind == "error":
            run.error_name, run.error_value = str(content.get("ename")), str(content.get("evalue"))
            run.traceback = _ANSI.sub("", "\n".join(content.get("traceback", [])))[-MAX_TEXT_CHARS:]
        elif kind == "execute_input":
            run.execution_count = content.get("execution_count")
        return kind == "status" and content.get("execution_state") == "idle"

    def _interrupt(self) -> None:
        session = self._client.session
        session.send(self._client.control_channel.socket, session.msg("interrupt_request", {}))

    async def _stderr_tail(self) -> str:
        self._log.seek(0)
        return self._log.read()[-2000:].decode(errors="replace") or "(no error output)"

    async def close(self) -> None:
        """Stop the channels, kill the sandbox (and the kernel in it), delete the socket folder."""
        self._client.stop_channels()
        await kill_process_group(self._process)
        self._log.close()
        shutil.rmtree(self._folder, ignore_errors=True)

