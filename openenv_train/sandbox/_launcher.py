"""The supervisor inside the sandbox: ``python -I -S _launcher.py SPEC_JSON -- COMMAND...``.

Stdlib only; it runs in the sandbox, started by bwrap (the package imports only its constants).

``run`` mode: it is PID 1 of the sandbox's PID namespace (``bwrap --as-pid-1``), which no process in the
sandbox can kill or trace. It restores the scratch dir from tar streams, forks the command under the
rlimits, reaps every process until the command exits or the parent writes a stop reason on the control fd,
then kills every process left and writes one JSON status line plus a tar of the scratch dir on the result fd.
``exec`` mode: it sets the rlimits and environment and execs the command (long-running env servers).
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import resource
import select
import signal
import sys
import tarfile
from typing import Any, NoReturn

__all__ = ["MAX_STATE_ENTRIES", "main"]

MAX_STATE_ENTRIES = 10_000
"""Scratch dirs with more files and directories than this are not saved for the next run."""

_RLIMITS = {
    "cpu_s": resource.RLIMIT_CPU,
    "as_bytes": resource.RLIMIT_AS,
    "nproc": resource.RLIMIT_NPROC,
    "nofile": resource.RLIMIT_NOFILE,
    "fsize": resource.RLIMIT_FSIZE,
}
_PR_SET_DUMPABLE = 4


def _set_limits(limits: dict[str, int | None]) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for key, value in limits.items():
        if value is None:
            continue
        which = _RLIMITS[key]
        hard = value + 1 if key == "cpu_s" else value  # SIGXCPU at the soft limit, SIGKILL one second later
        current_hard = resource.getrlimit(which)[1]
        if current_hard != resource.RLIM_INFINITY:
            value, hard = min(value, current_hard), min(hard, current_hard)
        resource.setrlimit(which, (value, hard))


def _exec(argv: list[str], spec: dict[str, Any]) -> NoReturn:
    """Replace this process by the command, under the limits, in a clean environment; never returns."""
    try:
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        os.chdir(spec["workdir"])
        _set_limits(spec["limits"])
        os.execvpe(argv[0], argv, spec["env"])
    except OSError as exc:
        os.write(2, f"sandbox: cannot run {argv[0]!r}: {exc.strerror}\n".encode())
    except BaseException as exc:  # a forked child must never fall back into the supervisor's code
        os.write(2, f"sandbox: cannot start {argv[0]!r}: {exc!r}\n".encode())
    os._exit(127)


def _restore(fd: int, workdir: str) -> None:
    """Unpack a tar stream (the saved scratch dir, or the caller's files) into the scratch dir."""
    try:
        with os.fdopen(fd, "rb") as f, tarfile.open(fileobj=f, mode="r:") as tar:
            if hasattr(tarfile, "tar_filter"):
                tar.extractall(workdir, filter=_skip_unsafe)
            else:  # Python < 3.11.4; the archive comes from this sandbox only
                tar.extractall(workdir)
    except (OSError, tarfile.TarError) as exc:
        os.write(2, f"sandbox: could not restore the scratch dir: {exc}\n".encode())


def _skip_unsafe(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's 'tar' filter (nothing lands outside ``dest``), skipping the members it refuses."""
    try:
        return tarfile.tar_filter(member, dest)
    except tarfile.FilterError:
        return None


def _reap(pid: int, status: tuple[int, Any] | None) -> tuple[int, Any] | None:
    """Reap every exited process (PID 1 inherits orphans); return the command's status once it has one."""
    while True:
        try:
            wpid, wstatus, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if wpid == 0:
            return status
        if wpid == pid:
            status = (wstatus, usage)


def _wait(pid: int, ctl: int | None, wake: int) -> tuple[tuple[int, Any] | None, str | None]:
    """Wait for the command to exit, or for a stop reason from the parent (EOF: the parent is gone)."""
    status: tuple[int, Any] | None = None
    watched = [wake] if ctl is None else [wake, ctl]
    while True:
        status = _reap(pid, status)
        if status is not None:
            return status, None
        ready, _, _ = select.select(watched, [], [])
        if ctl is not None and ctl in ready:
            return None, os.read(ctl, 64).decode(errors="replace").strip() or "parent_gone"
        with contextlib.suppress(BlockingIOError):
            while os.read(wake, 512):
                pass


def _kill_all(pid: int, pid1: bool, status: tuple[int, Any] | None) -> tuple[int, Any]:
    """SIGKILL every process of the sandbox (only the command's group when not PID 1) and reap them."""
    if not pid1:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        if status is None:
            _, wstatus, usage = os.wait4(pid, 0)
            status = (wstatus, usage)
        return status
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # from PID 1: every other process of this PID namespace
        try:
            wpid, wstatus, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        if wpid == pid and status is None:
            status = (wstatus, usage)
    assert status is not None
    return status


def _archive(workdir: str, max_bytes: int | None = None) -> tuple[str, bytes]:
    """The scratch dir as an uncompressed tar, or why it is not saved.

    Sparse files take no room on the tmpfs but their full size in a tar: their apparent sizes are summed
    first, so that files of holes cannot make this (unlimited) process build gigabytes in memory.
    """
    names: list[str] = []
    total = 0
    for root, dirs, files in os.walk(workdir):
        names.extend(os.path.relpath(os.path.join(root, name), workdir) for name in dirs + files)
        if len(names) > MAX_STATE_ENTRIES:
            return f"not saved: more than {MAX_STATE_ENTRIES} files and directories", b""
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
        if max_bytes is not None and total > max_bytes:
            return f"not saved: its files add up to more than {max_bytes} bytes (sparse files count in full)", b""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            with contextlib.suppress(OSError):  # unreadable files are left out
                tar.add(os.path.join(workdir, name), arcname=name, recursive=False)
    return "saved", buffer.getvalue()


def _report(fd: int, status: tuple[int, Any], stop: str | None, workdir: str, limits: dict[str, Any]) -> None:
    wstatus, usage = status
    try:
        state, archive = _archive(workdir, limits.get("fsize"))
    except OSError as exc:
        state, archive = f"not saved: {exc}", b""
    header = {
        "exit_code": os.waitstatus_to_exitcode(wstatus),
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "stop": stop,
        "state": state,
        "state_bytes": len(archive),
    }
    with contextlib.suppress(BrokenPipeError), os.fdopen(fd, "wb") as out:
        out.write(json.dumps(header).encode() + b"\n" + archive)


def _run(argv: list[str], spec: dict[str, Any]) -> None:
    if spec["pid1"]:  # no process of the sandbox may trace this one or open its fds
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        # The kernel spares PID 1 only the signals it has no handler for; Python's SIGINT handler would let
        # `kill -INT 1` from inside end the supervisor before it reports (the run then fails as a SandboxError).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for key in ("state_fd", "files_fd"):
        if spec.get(key) is not None:
            _restore(spec[key], spec["workdir"])
    ctl, result = spec.get("ctl_fd"), spec["result_fd"]
    for fd in (ctl, result):
        if fd is not None:
            os.set_inheritable(fd, False)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        if not spec["pid1"]:
            os.setpgid(0, 0)  # the group that _kill_all kills; as PID 1 it kills every process instead
        _exec(argv, spec)
    status, stop = _wait(pid, ctl, wake_r)
    status = _kill_all(pid, spec["pid1"], status)
    _report(result, status, stop, spec["workdir"], spec["limits"])


def main() -> None:
    """Entry point: ``_launcher.py SPEC_JSON -- COMMAND...``."""
    spec = json.loads(sys.argv[1])
    argv = sys.argv[3:]
    if spec["mode"] == "exec":
        _exec(argv, spec)
    _run(argv, spec)


if __name__ == "__main__":
    main()
