"""Host command lines: the supervisor's spec, bwrap's namespaces and mounts, and the root-only staging step.

The chain for an isolated command is ``[_enter.py (root callers only)] -> bwrap -> _launcher.py -> command``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._config import SandboxConfig
from ._mounts import Binds, python_roots

__all__ = ["isolated_command", "launcher_command", "resolve_bwrap", "sandbox_env", "supervisor_spec"]

HOSTNAME = "sandbox"
_HERE = Path(__file__).resolve().parent
LAUNCHER = str(_HERE / "_launcher.py")
ENTER = str(_HERE / "_enter.py")


def resolve_bwrap(config: SandboxConfig) -> str | None:
    """The absolute path of ``config.bwrap``, or None when it is not installed."""
    return shutil.which(config.bwrap)


def sandbox_env(config: SandboxConfig, workdir: str) -> dict[str, str]:
    """The whole environment of sandboxed code: a minimal set plus ``config.env``; nothing from this process."""
    path = dict.fromkeys([os.path.dirname(config.python), "/usr/local/bin", "/usr/bin", "/bin"])
    env = {
        "PATH": ":".join(path),
        "HOME": workdir,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "MALLOC_ARENA_MAX": "2",  # glibc reserves 64 MiB of address space per arena; RLIMIT_AS counts it
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(config.env)
    return env


def supervisor_spec(config: SandboxConfig, *, mode: str, workdir: str, pid1: bool,
                    **fds: int | None) -> dict[str, Any]:
    """What ``_launcher.py`` needs: mode, rlimits, environment, scratch dir and the fds it talks on."""
    limits = config.limits
    return {
        "mode": mode,
        "pid1": pid1,
        "workdir": workdir,
        "env": sandbox_env(config, workdir),
        "limits": {
            "cpu_s": limits.cpu_time_s,
            "as_bytes": limits.memory_bytes,
            "nproc": limits.max_processes,
            "nofile": limits.max_open_files,
            "fsize": limits.scratch_bytes,
        },
        **fds,
    }


def launcher_command(config: SandboxConfig, spec: dict[str, Any], argv: Sequence[str]) -> list[str]:
    """``python -I -S _launcher.py SPEC -- argv``: the supervisor (isolated, or on the host when unsafe)."""
    if not argv:
        raise ValueError("the command is empty; pass a program and its arguments, e.g. ['python3', '-c', 'print(1)']")
    return [config.python, "-I", "-S", LAUNCHER, json.dumps(spec), "--", *argv]


def isolated_command(config: SandboxConfig, inner: Sequence[str], *, bwrap: str, pid1: bool,
                     rw_dirs: Sequence[str] = ()) -> list[str]:
    """Wrap ``inner`` in bwrap: new user, mount, PID, network, IPC, UTS and cgroup namespaces (no user namespaces
    inside unless ``config.nested``), no network, read-only system and Python paths, size-capped private tmpfs
    for the scratch dir, /tmp and /dev/shm, ``rw_dirs`` bind-mounted read-write at the same path. A root caller
    gets the staging step in front.
    """
    staging = os.geteuid() == 0
    size = str(config.limits.scratch_bytes)
    binds = Binds(config, staging=staging)
    for path in (*config.system_paths, *python_roots(config), *config.ro_paths):
        binds.add(path)
    args = [
        bwrap, "--unshare-all", "--unshare-user", *([] if config.nested else ["--disable-userns"]),
        "--die-with-parent", "--new-session",
        "--hostname", HOSTNAME, "--clearenv",
        *(["--as-pid-1"] if pid1 else []),
        "--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--size", size, "--tmpfs", "/tmp",
    ]
    for path in rw_dirs:
        binds.add(path, writable=True)
    args += binds.args
    for path in config.hidden_paths:  # after the binds, so they cover what the binds expose
        real = os.path.realpath(path)
        if os.path.isdir(real):
            args += ["--size", "4096", "--tmpfs", real, "--remount-ro", real]
        elif os.path.exists(real):
            args += ["--ro-bind", "/dev/null", real]
    args += ["--size", size, "--tmpfs", config.workdir,
             "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", config.workdir, "--", *inner]
    if not staging:
        return args
    enter = {"uid": config.uid, "gid": config.gid, "stage_dir": binds.stage_dir, "stage": binds.staged}
    return [sys.executable, "-I", "-S", ENTER, json.dumps(enter), "--", *args]
