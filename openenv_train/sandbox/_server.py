"""Command lines that run a long-lived process (an env server) in the sandbox, reachable by a Unix socket."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Sequence

from ._command import isolated_command, launcher_command, resolve_bwrap, supervisor_spec
from ._config import SandboxConfig, SandboxLimits
from ._errors import SandboxUnavailable
from ._mounts import PACKAGE_DIR
from ._probe import sandbox_available

__all__ = ["sandboxed_command"]

logger = logging.getLogger("openenv_train.sandbox")


def sandboxed_command(argv: Sequence[str], config: SandboxConfig | None = None,
                      shared_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """``argv`` wrapped to run in the sandbox, for ``subprocess.Popen`` (ideally with ``start_new_session=True``).

    The process gets no network, read-only system and Python paths, a private scratch dir, a clean
    environment (with this package on ``PYTHONPATH`` when it lies outside the Python installation) and the
    rlimits of ``config.limits`` (default :meth:`SandboxLimits.for_server`; wall time and output caps are the
    caller's business). ``shared_dir`` is bind-mounted read-write at the same path, so a
    server started with ``--uds SHARED/env.sock --ready-file SHARED/ready`` is reached from the host through
    that socket. Killing the returned process (or its parent dying) kills everything in the sandbox, so do
    not pass ``--parent-pid``: host pids mean nothing in the sandbox's PID namespace.

    When this process is root, ``shared_dir`` is chowned to ``config.uid``/``config.gid`` so the sandbox
    can write there.

    Example:
        >>> cmd = sandboxed_command(["openenv-train", "serve", "echo", "--uds", "/tmp/s/env.sock",
        ...                          "--ready-file", "/tmp/s/ready"], shared_dir="/tmp/s")  # doctest: +SKIP

    Raises:
        SandboxUnavailable: namespaces cannot be created here (and ``config.allow_unsafe`` is not set).
    """
    config = config or SandboxConfig(limits=SandboxLimits.for_server())
    package_root = _package_root()
    if package_root is not None:  # only this package is mounted there: nothing else becomes importable
        path = ":".join(filter(None, (package_root, config.env.get("PYTHONPATH"))))
        config = dataclasses.replace(config, env={**config.env, "PYTHONPATH": path})
    rw_dirs = [os.fspath(shared_dir)] if shared_dir is not None else []
    for path in rw_dirs:
        if not os.path.isdir(path):
            raise ValueError(f"shared_dir {path!r} is not a directory; create it first")
        if os.geteuid() == 0:
            os.chown(path, config.uid, config.gid)
    reason = sandbox_available(config)
    if reason is not None and not config.allow_unsafe:
        raise SandboxUnavailable(reason)
    if reason is not None:
        logger.warning("UNSAFE: %s will run WITHOUT isolation (rlimits only) because %s", argv[0], reason)
        workdir = rw_dirs[0] if rw_dirs else os.getcwd()
        return launcher_command(config, supervisor_spec(config, mode="exec", workdir=workdir, pid1=False), argv)
    spec = supervisor_spec(config, mode="exec", workdir=config.workdir, pid1=False)
    return isolated_command(config, launcher_command(config, spec, argv), bwrap=resolve_bwrap(config) or "",
                            pid1=False, rw_dirs=rw_dirs)


def _package_root() -> str | None:
    """The folder holding this package when it lies outside the Python installation (a source checkout, an
    editable install, a git worktree run with ``PYTHONPATH``), else None.

    An editable install's import hook points at the checkout it was installed from, which the sandbox may not
    mount (a worktree beside it): ``PYTHONPATH`` makes ``python -m openenv_train...`` inside import the package
    that is mounted, the one running here.
    """
    root = str(PACKAGE_DIR.parent)
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    return None if any(root == p or root.startswith(p.rstrip("/") + "/") for p in prefixes) else root
