"""Run one supervised command: feed stdin, read capped output and the supervisor's report, enforce wall time.

Stopping is two-step: the reason goes to the supervisor on the control pipe (it kills every process of the
sandbox and still saves the scratch dir); if the run has not ended ``grace_s`` later, the whole host process
group is SIGKILLed, which (``bwrap --die-with-parent``) tears down the sandbox's PID namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Outcome", "supervise"]

_CHUNK = 1 << 16


@dataclass(frozen=True)
class Outcome:
    """What the host saw of one run."""

    stdout: bytes
    stderr: bytes
    truncated: bool
    stop: str | None
    """The reason the run was stopped from outside ('wall_time', 'output_limit'), or None."""
    report: bytes
    """Everything the supervisor wrote on the result pipe (a JSON line, then a tar), up to the cap."""
    report_complete: bool
    returncode: int
    duration_s: float


class _Stopper:
    """Asks the supervisor to stop once (first reason wins), then SIGKILLs the process group after a grace."""

    def __init__(self, proc: asyncio.subprocess.Process, ctl_fd: int, grace_s: float) -> None:
        self.proc, self.ctl_fd, self.grace_s = proc, ctl_fd, grace_s
        self.reason: str | None = None
        self._backstop: asyncio.TimerHandle | None = None

    def stop(self, reason: str) -> None:
        if self.reason is not None:
            return
        self.reason = reason
        with contextlib.suppress(OSError):
            os.write(self.ctl_fd, reason.encode())
        self._backstop = asyncio.get_running_loop().call_later(self.grace_s, self.kill)

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def cancel(self) -> None:
        if self._backstop is not None:
            self._backstop.cancel()


async def _read_capped(reader: asyncio.StreamReader, cap: int,
                       on_overflow: Callable[[], None] | None = None) -> tuple[bytes, int]:
    """Read to EOF keeping the first ``cap`` bytes; call ``on_overflow`` once past twice the cap."""
    kept = bytearray()
    total = 0
    while chunk := await reader.read(_CHUNK):
        total += len(chunk)
        if len(kept) < cap:
            kept += chunk[: cap - len(kept)]
        if on_overflow is not None and total > 2 * cap:
            on_overflow()
            on_overflow = None
    return bytes(kept), total


async def _feed(writer: asyncio.StreamWriter | None, data: bytes | None) -> None:
    if writer is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if data:
            writer.write(data)
            await writer.drain()
        writer.close()


async def supervise(command: Sequence[str], *, env: dict[str, str], cwd: str | None, stdin: bytes | None,
                    child_fds: Sequence[int], ctl_fd: int, result_fd: int, wall_s: float, output_cap: int,
                    report_cap: int, grace_s: float) -> Outcome:
    """Run ``command`` (a supervisor chain) to its end and collect what it wrote.

    Takes ownership of ``child_fds`` (passed to the child, closed here after the start), ``ctl_fd``
    (the write end of the control pipe) and ``result_fd`` (the read end of the result pipe).
    """
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, pass_fds=tuple(child_fds), start_new_session=True, env=env, cwd=cwd)
    except BaseException:
        os.close(ctl_fd)
        os.close(result_fd)
        raise
    finally:
        for fd in child_fds:
            os.close(fd)
    assert proc.stdout is not None and proc.stderr is not None
    report_reader = asyncio.StreamReader(limit=_CHUNK)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(report_reader),
                                                os.fdopen(result_fd, "rb", buffering=0))
    stopper = _Stopper(proc, ctl_fd, grace_s)
    overflow = lambda: stopper.stop("output_limit")  # noqa: E731
    readers = [
        asyncio.ensure_future(_read_capped(proc.stdout, output_cap, overflow)),
        asyncio.ensure_future(_read_capped(proc.stderr, output_cap, overflow)),
        asyncio.ensure_future(_read_capped(report_reader, report_cap)),
    ]
    feeder = asyncio.ensure_future(_feed(proc.stdin, stdin))
    try:
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), wall_s)
        except TimeoutError:
            stopper.stop("wall_time")
            await proc.wait()
        await asyncio.wait([*readers, feeder], timeout=grace_s)  # a stray holder of a pipe must not hang us
    finally:
        stopper.cancel()
        stopper.kill()
        for task in (*readers, feeder):
            task.cancel()
        transport.close()
        os.close(ctl_fd)
        if proc.returncode is None:
            await proc.wait()
    (stdout, out_total), (stderr, err_total), (report, report_total) = (
        task.result() if task.done() and not task.cancelled() else (b"", 0) for task in readers)
    return Outcome(
        stdout=stdout, stderr=stderr, truncated=max(out_total - len(stdout), err_total - len(stderr)) > 0,
        stop=stopper.reason, report=report, report_complete=readers[2].done() and report_total <= report_cap,
        returncode=proc.returncode if proc.returncode is not None else -signal.SIGKILL,
        duration_s=time.monotonic() - started,
    )
