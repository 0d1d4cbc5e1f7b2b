"""The host's side of one terminal: the sandboxed driver process (tmux and a shell) and its JSON-lines pipe."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from ...core import OpenEnvTrainError
from ...sandbox import SandboxConfig, sandboxed_command
from ..process_group import kill_process_group

__all__ = ["TerminalDied", "TerminalSession"]

_DRIVER = str(Path(__file__).with_name("_driver.py"))
_MAX_REPLY_BYTES = 4 * 2**20


class TerminalDied(OpenEnvTrainError, RuntimeError):
    """The sandboxed terminal stopped answering or exited; the episode needs a reset."""


class TerminalSession:
    """One sandboxed tmux terminal: :meth:`start` it, send it :meth:`request` s, :meth:`close` it (which kills
    everything in its sandbox). Pipes cross the sandbox's namespaces; nothing listens on a port."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process

    @classmethod
    async def start(cls, config: SandboxConfig, *, width: int, height: int, timeout_s: float = 30.0) -> tuple[
            TerminalSession, dict[str, Any]]:
        """A new terminal of ``width`` x ``height`` cells and its first screen.

        Raises:
            SandboxUnavailable: sandboxes cannot run here.
            TerminalDied: the terminal did not come up (the message holds its error output).
        """
        command = sandboxed_command([config.python, "-I", "-S", _DRIVER, str(width), str(height)], config)
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, limit=_MAX_REPLY_BYTES)
        session = cls(process)
        try:
            first = await session._reply(timeout_s)
        except TerminalDied:
            await session.close()
            raise
        return session, first

    async def request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and wait up to ``timeout_s`` for its reply.

        Raises:
            TerminalDied: no reply in time, or the driver exited (the session is closed).
        """
        stdin = self._process.stdin
        if stdin is None or self._process.returncode is not None:
            raise TerminalDied("the terminal has exited; call reset() to start another")
        try:
            stdin.write((json.dumps(message) + "\n").encode())
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            await self.close()
            raise TerminalDied("the terminal has exited; call reset() to start another") from None
        return await self._reply(timeout_s)

    async def _reply(self, timeout_s: float) -> dict[str, Any]:
        assert self._process.stdout is not None
        try:
            line = await asyncio.wait_for(self._process.stdout.readline(), timeout_s)
        except (TimeoutError, ValueError) as exc:
            await self.close()
            why = "answer in time" if isinstance(exc, TimeoutError) else "send a reply small enough"
            raise TerminalDied(f"the terminal did not {why} ({timeout_s:g} s); it was killed: call reset()") from None
        if not line:
            error = b""
            if self._process.stderr is not None:
                error = await self._process.stderr.read(4000)
            await self.close()
            raise TerminalDied(f"the terminal exited: {error.decode(errors='replace').strip()[-2000:]}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    async def close(self) -> None:
        """Kill the driver's process group (bubblewrap takes the sandbox's processes with it) and reap it."""
        await kill_process_group(self._process)

