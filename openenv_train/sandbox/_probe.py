"""``sandbox_available()``: whether bubblewrap can build the sandbox here, and if not, why and how to fix it."""

from __future__ import annotations

import os
import re
import subprocess

from ._command import isolated_command, launcher_command, resolve_bwrap, supervisor_spec
from ._config import SandboxConfig

__all__ = ["sandbox_available"]

MIN_BWRAP = (0, 8, 0)
_INSTALL = "install bubblewrap >= 0.8 (Debian/Ubuntu: apt-get install -y bubblewrap; Fedora: dnf install bubblewrap)"
_USERNS_FIX = (
    "enable unprivileged user namespaces (sysctl -w user.max_user_namespaces=15000; on Debian "
    "sysctl -w kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 sysctl -w "
    "kernel.apparmor_restrict_unprivileged_userns=0; in Docker run the container with "
    "--security-opt seccomp=unconfined --security-opt apparmor=unconfined)"
)
_cache: dict[tuple[str, int, int, int, str], str | None] = {}


def sandbox_available(config: SandboxConfig | None = None, *, timeout_s: float = 30.0) -> str | None:
    """None when sandboxes can be built with ``config``, else the reason and the fix.

    The first call per bwrap, uid and interpreter starts one empty sandbox (about 50 ms); later calls
    answer from a cache.
    """
    config = config or SandboxConfig()
    bwrap = resolve_bwrap(config)
    if bwrap is None:
        return f"bubblewrap ({config.bwrap!r}) is not installed or not on PATH; {_INSTALL}"
    key = (bwrap, os.geteuid(), config.uid, config.gid, config.python)
    if key not in _cache:
        _cache[key] = _probe(config, bwrap, timeout_s)
    return _cache[key]


def _probe(config: SandboxConfig, bwrap: str, timeout_s: float) -> str | None:
    try:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=timeout_s).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} --version failed ({exc}); {_INSTALL}"
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", version)
    if found is None or tuple(int(part) for part in found.groups()) < MIN_BWRAP:
        return f"{bwrap} is {version.strip() or 'of unknown version'}; {_INSTALL}"
    spec = supervisor_spec(config, mode="exec", workdir=config.workdir, pid1=False)
    command = isolated_command(config, launcher_command(config, spec, ["true"]), bwrap=bwrap, pid1=False)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
                              env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    except subprocess.TimeoutExpired:
        return f"an empty sandbox did not start within {timeout_s:g}s"
    if done.returncode == 0:
        return None
    message = done.stderr.strip()[-600:] or f"exit code {done.returncode}"
    if message.startswith("sandbox: "):  # the root-only staging step (_enter.py) failed
        return (f"as root, preparing the sandbox failed ({message}); run as an unprivileged user, or give this "
                f"process CAP_SYS_ADMIN, or install Python where uid {config.uid} can reach it (not under /root)")
    if "namespace" in message or "Operation not permitted" in message or "uid map" in message:
        return f"bubblewrap cannot create namespaces here ({message}); {_USERNS_FIX}"
    return f"an empty sandbox failed to start: {message}"
