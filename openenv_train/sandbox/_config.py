"""What a sandbox may use: :class:`SandboxLimits` (rlimits, time, sizes) and :class:`SandboxConfig` (mounts, uid)."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_SYSTEM_PATHS", "SandboxConfig", "SandboxLimits"]

MiB = 2**20
GiB = 2**30

DEFAULT_SYSTEM_PATHS: tuple[str, ...] = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime",
)
"""Host paths mounted read-only by default: programs, shared libraries and the loader's files; no other /etc."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED_DIRS = ("/", "/proc", "/dev", "/tmp", "/dev/shm")


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one run (or of one sandboxed server); ``None`` lifts a limit."""

    wall_time_s: float = 30.0
    """Real time a run may take before everything in it is killed (``killed_reason='wall_time'``)."""
    cpu_time_s: int | None = 10
    """CPU seconds per process (RLIMIT_CPU: SIGXCPU, then SIGKILL a second later; ``'cpu_time'``)."""
    memory_bytes: int | None = 1 * GiB
    """Address space per process (RLIMIT_AS); allocations past it fail (``MemoryError``; ``'memory'``)."""
    max_processes: int | None = 64
    """Processes and threads in the sandbox, its supervisor included (RLIMIT_NPROC, counted per sandbox)."""
    max_open_files: int | None = 256
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    max_output_bytes: int = 1 * MiB
    """Bytes kept of stdout and of stderr each; the rest is dropped, and at twice this the run is killed."""
    scratch_bytes: int = 64 * MiB
    """Size of each writable tmpfs (the scratch dir, /tmp, /dev/shm) and the largest file (RLIMIT_FSIZE)."""

    def __post_init__(self) -> None:
        if not self.wall_time_s > 0:
            raise ValueError(f"wall_time_s must be > 0, got {self.wall_time_s}; every run needs a finite time limit")
        _at_least("cpu_time_s", self.cpu_time_s, 1)
        _at_least("memory_bytes", self.memory_bytes, 16 * MiB, "a Python interpreter alone needs about 16 MiB")
        _at_least("max_processes", self.max_processes, 2, "the supervisor and the command are two processes")
        _at_least("max_open_files", self.max_open_files, 16)
        _at_least("max_output_bytes", self.max_output_bytes, 1, optional=False)
        _at_least("scratch_bytes", self.scratch_bytes, 64 * 1024, optional=False)

    @classmethod
    def for_server(cls) -> SandboxLimits:
        """Limits for long-lived env servers: no CPU-time cap, 4 GiB address space, 256 threads.

        ``wall_time_s`` and ``max_output_bytes`` do not apply to servers: their caller owns both.
        """
        return cls(cpu_time_s=None, memory_bytes=4 * GiB, max_processes=256, max_open_files=4096)


@dataclass(frozen=True)
class SandboxConfig:
    """How sandboxes are built: mounts, the unprivileged uid, the environment and the limits."""

    limits: SandboxLimits = field(default_factory=SandboxLimits)
    """Time, memory, process and size limits."""
    bwrap: str = "bwrap"
    """The bubblewrap executable (a name looked up on PATH, or a path)."""
    uid: int = 65534
    """Host uid that sandboxed code runs as when this process is root (the kernel skips RLIMIT_NPROC for uid 0)."""
    gid: int = 65534
    """Host gid that goes with ``uid``."""
    workdir: str = "/scratch"
    """Path of the private writable scratch dir inside the sandbox; also HOME and the working directory."""
    python: str = sys.executable
    """Interpreter of ``run_python`` and of the in-sandbox supervisor; its installation is mounted read-only."""
    system_paths: tuple[str, ...] = DEFAULT_SYSTEM_PATHS
    """Host paths mounted read-only at the same place (missing ones are skipped; symlinks are recreated)."""
    ro_paths: tuple[str, ...] = ()
    """More host paths mounted read-only at the same place, e.g. a data set or another package's source."""
    rw_paths: tuple[str, ...] = ()
    """Host directories bind-mounted read-write at the same place, e.g. a folder holding a Unix socket that
    sandboxed code talks to the host through (the only way out: there is no network)."""
    hidden_paths: tuple[str, ...] = ()
    """Host paths hidden inside even where a mount would show them (an empty directory; a file becomes an
    unreadable device node), e.g. an env's answer key that ships inside the mounted package."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables set inside, on top of the minimal PATH, HOME, LANG, TMPDIR, USER; nothing else is inherited."""
    nested: bool = False
    """Let code in the sandbox create user namespaces, so that it can open sandboxes of its own: an env server
    whose env runs code in sandboxes (coding, repl, git, terminal, jupyter) under ``serve --sandbox``. Off by
    default, because user namespaces widen the kernel interface that the code can reach; the sandboxes opened
    inside still forbid them to their own code."""
    allow_unsafe: bool = False
    """UNSAFE: where bubblewrap cannot isolate, run anyway with only rlimits (logs a warning). Isolation is
    still used wherever it works."""
    kill_grace_s: float = 2.0
    """How long the supervisor gets to stop a run and save the scratch dir before the process tree is killed."""

    def __post_init__(self) -> None:
        if self.uid == 0 or self.gid == 0:
            raise ValueError("uid and gid must not be 0: the kernel does not enforce RLIMIT_NPROC for root; "
                             "use an unprivileged id such as 65534 (nobody)")
        workdir = os.path.normpath(self.workdir)
        if not os.path.isabs(workdir) or workdir != self.workdir or workdir in _RESERVED_DIRS:
            raise ValueError(f"workdir must be a normalized absolute path other than {', '.join(_RESERVED_DIRS)}, "
                             f"got {self.workdir!r}; e.g. '/scratch'")
        for path in (self.python, *self.system_paths, *self.ro_paths, *self.rw_paths, *self.hidden_paths):
            if not os.path.isabs(path):
                raise ValueError(f"sandbox paths must be absolute, got {path!r}")
        if "/" in {os.path.normpath(path) for path in (*self.system_paths, *self.ro_paths, *self.rw_paths)}:
            raise ValueError("system_paths and ro_paths must not contain '/': that exposes the whole host; "
                             "list the directories the code needs")
        for name, value in self.env.items():
            if not _ENV_NAME.match(name) or "\0" in value:
                raise ValueError(f"env: {name!r} is not a valid variable (letters, digits, '_'; no NUL in values)")
        if not self.kill_grace_s > 0:
            raise ValueError(f"kill_grace_s must be > 0, got {self.kill_grace_s}")

    def with_limits(self, **changes: Any) -> SandboxConfig:
        """A copy with some limits changed.

        Example:
            >>> SandboxConfig().with_limits(wall_time_s=3, max_processes=16).limits.max_processes
            16
        """
        return dataclasses.replace(self, limits=dataclasses.replace(self.limits, **changes))


def _at_least(name: str, value: int | None, minimum: int, why: str = "", *, optional: bool = True) -> None:
    if value is None and not optional:
        raise ValueError(f"{name} must be a number >= {minimum}, got None")
    if value is not None and value < minimum:
        rule = f">= {minimum}" + (" or None" if optional else "")
        raise ValueError(f"{name} must be {rule}, got {value}" + (f" ({why})" if why else ""))
