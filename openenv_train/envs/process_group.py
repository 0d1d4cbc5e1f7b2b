"""Stopping an env's child process that leads its own process group (a sandbox, a driver)."""

from __future__ import annotations

import asyncio
import os
import signal

__all__ = ["kill_process_group"]


async def kill_process_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL ``process``'s group (a sandbox takes the processes in it along), close its stdin and reap it."""
    if process.returncode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if process.stdin is not None and not process.stdin.is_closing():
        process.stdin.close()
    await process.wait()
