"""What the sandbox sees of the host: read-only binds of system and Python paths, staged when out of reach."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from ._config import SandboxConfig

__all__ = ["Binds", "python_roots"]

PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The ``openenv_train`` package: mounted so the supervisor and ``python -m openenv_train.cli`` run inside."""


def python_roots(config: SandboxConfig) -> list[str]:
    """Installation dirs (prefixes, venv) of ``config.python`` and this interpreter, and this package."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, str(PACKAGE_DIR)}
    if config.python != sys.executable:
        roots.update(_prefixes(config.python))
    return sorted({os.path.realpath(root) for root in roots} - {"/"})


@functools.lru_cache(maxsize=16)
def _prefixes(python: str) -> tuple[str, ...]:
    """The prefixes another interpreter reports (none when it does not run: the sandbox then says so)."""
    code = "import sys; print(sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, sep='\\n')"
    try:
        done = subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(line for line in done.stdout.splitlines() if os.path.isabs(line)) if done.returncode == 0 else ()


def _traversable(path: str, uid: int, gid: int) -> bool:
    """Whether ``uid``/``gid`` (no other groups) may look up ``path``: search permission on every parent."""
    for parent in Path(path).parents:
        try:
            st = os.stat(parent)
        except OSError:
            return False
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return False
    return True


_stage_dir: str | None = None


def _stage_mountpoint() -> str:
    """An empty dir, made once per process, that the root-only staging step mounts its tmpfs on.

    It is made in /tmp rather than $TMPDIR: the sandbox uid must be able to reach it.
    """
    global _stage_dir
    if _stage_dir is None:
        _stage_dir = tempfile.mkdtemp(prefix="openenv-sandbox-stage-", dir="/tmp")
        os.chmod(_stage_dir, 0o755)
        atexit.register(_remove_stage_dir)
    return _stage_dir


def _remove_stage_dir() -> None:
    if _stage_dir is not None:
        with contextlib.suppress(OSError):
            os.rmdir(_stage_dir)


class Binds:
    """Collects bwrap bind options; sources that the sandbox uid cannot reach are staged (root callers only).

    Args:
        config: gives the uid and gid the sandbox runs as.
        staging: whether this process is root and will run the staging step before bwrap.
    """

    def __init__(self, config: SandboxConfig, *, staging: bool) -> None:
        self.config = config
        self.staging = staging
        self.args: list[str] = []
        self.staged: list[str] = []
        self._mounted: list[str] = []

    @property
    def stage_dir(self) -> str | None:
        """Where staged sources appear (``stage_dir/<index>``), or None when nothing is staged."""
        return _stage_mountpoint() if self.staged else None

    def add(self, path: str, *, writable: bool = False) -> None:
        """Mount host ``path`` at the same path inside (skipped when missing or already covered)."""
        real = os.path.realpath(path)
        if not os.path.exists(real):
            return
        if os.path.islink(path):  # e.g. /bin -> usr/bin: mount the target, recreate the link
            self.add(real, writable=writable)
            self.args += ["--symlink", os.readlink(path), path]
            return
        if not writable and self._covered(real):
            return
        source = real
        if self.staging and not _traversable(real, self.config.uid, self.config.gid):
            source = os.path.join(_stage_mountpoint(), str(len(self.staged)))
            self.staged.append(real)
        self.args += ["--bind" if writable else "--ro-bind", source, real]
        self._mounted.append(real)

    def _covered(self, path: str) -> bool:
        return any(path == done or path.startswith(done.rstrip("/") + "/") for done in self._mounted)
