"""Command lines that run a long-lived process (an env server) in the sandbox, reachable by a Unix socket."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from ._command import isolated_command, launcher_command, resolve_bwrap, supervisor_spec
from ._config import SandboxConfig, SandboxLimits
from ._errors import SandboxUnavailable
from ._probe import sandbox_available

__all__ = ["sandboxed_command"]

logger = logging.getLogger("openenv_train.sandbox")


def sandboxed_command(argv: Sequence[str], config: SandboxConfig | None = None,
                      shared_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """``argv`` wrapped to run in the sandbox, for ``subprocess.Popen`` (ideally with ``start_new_session=True``).

    The process gets no network, read-only system and Python paths, a private scratch dir, a clean
    environment and the rlimits of ``config.limits`` (default :meth:`SandboxLimits.for_server`; wall time and
    output caps are the caller's business). ``shared_dir`` is bind-mounted read-write at the same path, so a
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
