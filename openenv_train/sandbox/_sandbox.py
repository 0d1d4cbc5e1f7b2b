"""Sandbox: run commands and Python code an agent wrote, isolated, with limits and a scratch dir that persists."""

from __future__ import annotations

import asyncio
import enum
import io
import json
import logging
import os
import re
import shutil
import signal
import tarfile
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from ._command import isolated_command, launcher_command, resolve_bwrap, supervisor_spec
from ._config import SandboxConfig, SandboxLimits
from ._errors import SandboxError, SandboxStateError, SandboxUnavailable
from ._launcher import MAX_STATE_ENTRIES
from ._probe import sandbox_available
from ._result import KilledReason, SandboxResult
from ._runner import Outcome, supervise

__all__ = ["Sandbox", "SandboxState"]

logger = logging.getLogger("openenv_train.sandbox")

_HOST_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
_MEMORY_ERROR = re.compile(rb"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory", re.IGNORECASE)


class SandboxState(enum.Enum):
    """READY between runs, RUNNING during one, CLOSED after :meth:`Sandbox.close`."""

    READY = "ready"
    RUNNING = "running"
    CLOSED = "closed"


class Sandbox:
    """Runs commands in an isolated sandbox; one run at a time, files persisting from run to run.

    Each run gets fresh namespaces (user, mount, PID, network, IPC, UTS, cgroup) from bubblewrap, read-only
    system and Python paths, no network, a clean environment and the rlimits of ``config.limits``. The
    scratch dir (``config.workdir``, also HOME and the working directory) is a size-capped tmpfs that is
    saved after each run and restored before the next, until :meth:`close`.

    Args:
        config: mounts, uid, environment and limits; the defaults suit untrusted snippets.

    Raises:
        SandboxUnavailable: namespaces cannot be created here (and ``config.allow_unsafe`` is not set).

    Example:
        >>> with Sandbox() as box:  # doctest: +SKIP
        ...     box.run_python("open('notes.txt', 'w').write('hi')").exit_code
        ...     box.run("cat notes.txt").stdout
        0
        'hi'
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        reason = sandbox_available(self.config)
        if reason is not None and not self.config.allow_unsafe:
            raise SandboxUnavailable(reason)
        if reason is not None:
            logger.warning("UNSAFE: sandboxed code will run WITHOUT isolation (rlimits only) because %s", reason)
        self.isolated = reason is None
        self._bwrap = resolve_bwrap(self.config) or ""
        self._dir = tempfile.mkdtemp(prefix="openenv-sandbox-")
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self.state = SandboxState.READY

    @property
    def _state_path(self) -> str:
        return os.path.join(self._dir, "scratch.tar")

    def run(self, command: Sequence[str] | str, *, stdin: bytes | str | None = None,
            files: Mapping[str, bytes | str] | None = None, timeout_s: float | None = None,
            config: SandboxConfig | None = None) -> SandboxResult:
        """Run ``command`` and wait for it; the blocking twin of :meth:`arun` (not for use inside a running loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(command, stdin=stdin, files=files, timeout_s=timeout_s, config=config))
        raise SandboxStateError("Sandbox.run() blocks, and an event loop is running here; use 'await sandbox.arun(...)'")

    def run_python(self, code: str, **options: Any) -> SandboxResult:
        """Run Python ``code`` with ``config.python`` (``-c``); options as for :meth:`run`."""
        return self.run([self.config.python, "-c", code], **options)

    async def arun_python(self, code: str, **options: Any) -> SandboxResult:
        """Async :meth:`run_python`."""
        return await self.arun([self.config.python, "-c", code], **options)

    async def arun(self, command: Sequence[str] | str, *, stdin: bytes | str | None = None,
                   files: Mapping[str, bytes | str] | None = None, timeout_s: float | None = None,
                   config: SandboxConfig | None = None) -> SandboxResult:
        """Run ``command`` in the sandbox and return what happened.

        Args:
            command: an argv list, or a string run by ``/bin/sh -c``.
            stdin: bytes (or text, sent as UTF-8) on standard input; None gives ``/dev/null``.
            files: ``{relative path: content}`` written into the scratch dir before the command starts.
            timeout_s: wall-time limit of this run instead of ``config.limits.wall_time_s``.
            config: this run's mounts, environment and limits instead of the sandbox's (e.g. a program that needs
                more memory, or a socket folder); its ``workdir`` must be the sandbox's, whose files it sees.

        Raises:
            SandboxStateError: another run is in progress, or the sandbox is closed.
            SandboxError: the sandbox itself failed (its message holds bwrap's error output).
            ValueError: an empty command, a bad ``files`` path or a non-positive ``timeout_s``.
        """
        if self.state is not SandboxState.READY:
            raise SandboxStateError(f"the sandbox is {self.state.value}; runs of one Sandbox go one at a time, "
                                    "and a closed one cannot run (create another Sandbox)")
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("the command is empty; pass a program and its arguments, e.g. ['python3', '-c', 'print(1)']")
        config = self.config if config is None else config
        if config.workdir != self.config.workdir:
            raise ValueError(f"config.workdir {config.workdir!r} must be this sandbox's workdir {self.config.workdir!r}")
        wall_s = config.limits.wall_time_s if timeout_s is None else timeout_s
        if not wall_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        data = stdin.encode() if isinstance(stdin, str) else stdin
        files_tar = _files_tar(files) if files else None
        self.state = SandboxState.RUNNING
        try:
            return await self._run(argv, data, files_tar, wall_s, config)
        finally:
            if self.state is SandboxState.RUNNING:
                self.state = SandboxState.READY

    async def _run(self, argv: list[str], stdin: bytes | None, files_tar: bytes | None, wall_s: float,
                   config: SandboxConfig) -> SandboxResult:
        ctl_r, ctl_w = os.pipe()
        result_r, result_w = os.pipe()
        fds: dict[str, int | None] = {"ctl_fd": ctl_r, "result_fd": result_w, "state_fd": None, "files_fd": None}
        host_scratch = None if self.isolated else tempfile.mkdtemp(dir=self._dir, prefix="scratch-")
        try:
            if os.path.exists(self._state_path):
                fds["state_fd"] = os.open(self._state_path, os.O_RDONLY | os.O_CLOEXEC)
            if files_tar is not None:
                fds["files_fd"] = memfd = os.memfd_create("files", os.MFD_CLOEXEC)
                os.write(memfd, files_tar)
                os.lseek(memfd, 0, os.SEEK_SET)
            spec = supervisor_spec(config, mode="run", workdir=host_scratch or config.workdir, pid1=self.isolated, **fds)
            command = launcher_command(config, spec, argv)
            if self.isolated:
                command = isolated_command(config, command, bwrap=self._bwrap, pid1=True, rw_dirs=config.rw_paths)
        except BaseException:
            for fd in (ctl_w, result_r, *fds.values()):
                if fd is not None:
                    os.close(fd)
            raise
        try:
            outcome = await supervise(
                command, env=_HOST_ENV, cwd=host_scratch, stdin=stdin,
                child_fds=[fd for fd in fds.values() if fd is not None], ctl_fd=ctl_w, result_fd=result_r,
                wall_s=wall_s, output_cap=config.limits.max_output_bytes,
                report_cap=config.limits.scratch_bytes + 2048 * MAX_STATE_ENTRIES + 2**20, grace_s=config.kill_grace_s)
        finally:
            if host_scratch is not None:
                shutil.rmtree(host_scratch, ignore_errors=True)
        return await self._result(outcome, config.limits)

    async def _result(self, outcome: Outcome, limits: SandboxLimits) -> SandboxResult:
        header, archive = _split_report(outcome.report)
        if header is None and outcome.stop is None and self.isolated:
            tail = outcome.stderr.decode(errors="replace")[-2000:]
            raise SandboxError(f"the sandbox failed before reporting (exit code {outcome.returncode}): {tail}")
        exit_code = int(header["exit_code"]) if header else outcome.returncode
        cpu_s = float(header["cpu_s"]) if header else 0.0
        if header is not None:
            state = str(header.get("state"))
            if state == "saved" and outcome.report_complete and len(archive) == header.get("state_bytes"):
                await asyncio.to_thread(self._save_state, archive)
            else:
                logger.warning("the scratch dir was not saved after this run (%s); the next run sees the previous one",
                               state)
        reason = _killed_reason(outcome.stop, exit_code, cpu_s, limits, outcome.stderr)
        return SandboxResult(
            stdout=outcome.stdout.decode(errors="replace"), stderr=outcome.stderr.decode(errors="replace"),
            exit_code=exit_code, timed_out=reason in ("wall_time", "cpu_time"), killed_reason=reason,
            duration_s=outcome.duration_s, truncated=outcome.truncated, cpu_time_s=cpu_s, isolated=self.isolated,
        )

    def _save_state(self, archive: bytes) -> None:
        if self.state is SandboxState.CLOSED:
            return
        tmp = f"{self._state_path}.tmp"
        with open(tmp, "wb") as f:
            f.write(archive)
        os.replace(tmp, self._state_path)

    def close(self) -> None:
        """Delete the scratch dir; the sandbox cannot run again. Safe to call twice."""
        self.state = SandboxState.CLOSED
        self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "isolated" if self.isolated else "UNSAFE (rlimits only)"
        return f"<Sandbox {self.state.value}, {mode}, workdir={self.config.workdir}>"


def _files_tar(files: Mapping[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content in files.items():
            path = PurePosixPath(name)
            if path.is_absolute() or ".." in path.parts or not path.parts or str(path) != name:
                raise ValueError(f"files: {name!r} must be a normalized path relative to the scratch dir, "
                                 "e.g. 'src/main.py'")
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _split_report(report: bytes) -> tuple[dict[str, Any] | None, bytes]:
    """The supervisor's JSON status line and the tar after it; (None, b'') when it wrote no valid line."""
    line, newline, archive = report.partition(b"\n")
    try:
        header = json.loads(line) if newline else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or not isinstance(header.get("exit_code"), int):
        return None, b""
    return header, archive


def _killed_reason(stop: str | None, exit_code: int, cpu_s: float, limits: SandboxLimits,
                   stderr: bytes) -> KilledReason | None:
    if stop == "wall_time":
        return "wall_time"
    if stop == "output_limit":
        return "output_limit"
    if limits.cpu_time_s is not None and (
        exit_code in (-signal.SIGXCPU, 128 + signal.SIGXCPU)
        or (exit_code == -signal.SIGKILL and cpu_s >= limits.cpu_time_s)
    ):
        return "cpu_time"
    if limits.memory_bytes is not None and exit_code != 0 and _MEMORY_ERROR.search(stderr[-4096:]):
        return "memory"
    return None
