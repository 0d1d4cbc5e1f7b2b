"""Env servers in Docker containers: limits, no network, a Unix socket in a bind-mounted directory.

- Socket mode (images built by ``openenv-train build``): ``--network none``, the server listens on
  ``/sock/env.sock`` in a private host directory mounted at ``/sock``.
- Port mode (other images, e.g. OpenEnv's, listening on ``container_port``): a loopback port mapping;
  needs an engine with a bridge network.

Containers carry labels with this process's pid; they are removed on ``stop()``, at exit, by a watchdog
process when this process dies, and by :func:`reap_orphans` (run on every provider start).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..containers import LABEL_TRANSPORT, docker_available, docker_command, docker_command_async
from ..core import ServerStartError
from ._bindings import default_client_class
from ._endpoint import Endpoint, wait_healthy
from ._provider import Provider

__all__ = ["DockerLimits", "DockerProvider", "reap_orphans"]

LABEL = "org.openenv-train.managed"
LABEL_PARENT = "org.openenv-train.parent-pid"
LABEL_HOST = "org.openenv-train.host"
LABEL_SOCKDIR = "org.openenv-train.sockdir"
_SOCKDIR_PREFIX = "openenv-train-docker-"
_LIVE: dict[str, str] = {}  # container id -> docker CLI, for the exit hook
_WATCHDOG: subprocess.Popen[bytes] | None = None
_hooked = False  # the exit hook is registered when the first container starts, not at import


@dataclass(frozen=True)
class DockerLimits:
    """Resource limits of one container (``None`` leaves one unset)."""

    cpus: float | None = 1.0
    memory: str | None = "1g"
    pids: int | None = 256
    tmpfs: str = "64m"
    """Size of the writable ``/tmp``; the rest of the filesystem is read-only."""

    def args(self) -> list[str]:
        """``docker run`` options.

        Example:
            >>> DockerLimits(cpus=0.5, memory="256m", pids=64).args()[:6]
            ['--cpus', '0.5', '--memory', '256m', '--memory-swap', '256m']
        """
        out: list[str] = []
        if self.cpus is not None:
            out += ["--cpus", f"{self.cpus:g}"]
        if self.memory is not None:
            out += ["--memory", self.memory, "--memory-swap", self.memory]
        if self.pids is not None:
            out += ["--pids-limit", str(self.pids)]
        return out + ["--read-only", "--tmpfs", f"/tmp:rw,nosuid,nodev,size={self.tmpfs},mode=1777"]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(docker: str, rows: list[list[str]]) -> None:
    """``docker rm -f`` the containers of ``rows`` (id, parent pid[, socket dir]) and delete their socket dirs."""
    if rows:
        docker_command(["rm", "-f", *(row[0] for row in rows)], docker=docker, timeout_s=120)
    for row in rows:
        if len(row) > 2 and Path(row[2]).name.startswith(_SOCKDIR_PREFIX):
            shutil.rmtree(row[2], ignore_errors=True)


def _managed(docker: str, *filters: str) -> list[list[str]]:
    fmt = " ".join(f'{{{{.Label "{label}"}}}}' for label in (LABEL_PARENT, LABEL_SOCKDIR))
    done = docker_command(["ps", "-a", "--filter", f"label={LABEL}=1", "--filter",
                           f"label={LABEL_HOST}={socket.gethostname()}", *filters, "--format", "{{.ID}} " + fmt],
                          docker=docker, timeout_s=60)
    return [line.split() for line in done.stdout.splitlines()] if done.returncode == 0 else []


def reap_orphans(docker: str = "docker") -> list[str]:
    """Remove this host's managed containers whose parent process is gone; returns their ids."""
    orphans = [row for row in _managed(docker) if len(row) >= 2 and row[1].isdigit() and not _pid_alive(int(row[1]))]
    _remove(docker, orphans)
    return [row[0] for row in orphans]


def _start_watchdog(docker: str) -> None:
    """A process that removes this process's containers once it dies (its stdin pipe reaches EOF)."""
    global _WATCHDOG
    if _WATCHDOG is not None and _WATCHDOG.poll() is None:
        return
    _WATCHDOG = subprocess.Popen(
        [sys.executable, "-m", "openenv_train.launch._docker", docker, str(os.getpid())],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _watch(docker: str, pid: str) -> None:
    sys.stdin.buffer.read()  # returns when the parent is gone (or closed the pipe)
    _remove(docker, _managed(docker, "--filter", f"label={LABEL_PARENT}={pid}"))


def _remove_live() -> None:
    for cid, docker in list(_LIVE.items()):
        with contextlib.suppress(Exception):
            docker_command(["rm", "-f", cid], docker=docker, timeout_s=30)
        _LIVE.pop(cid, None)


def _track(container_id: str, docker: str) -> None:
    """Remember a started container so that it is removed at exit."""
    global _hooked
    if not _hooked:
        atexit.register(_remove_live)
        _hooked = True
    _LIVE[container_id] = docker


async def _run(docker: str, *args: str, timeout_s: float = 60.0) -> str:
    done = await docker_command_async(args, docker=docker, timeout_s=timeout_s)
    if done.timed_out:
        raise ServerStartError(f"'docker {' '.join(args[:2])} ...' did not finish within {timeout_s:g}s")
    if done.exit_code != 0:
        raise ServerStartError(f"'docker {' '.join(args[:2])} ...' failed: {done.stderr.strip()}")
    return done.stdout.strip()


class DockerProvider(Provider):
    """Runs an env image in a container (or one container per session) with limits and no network.

    Args:
        image: an image built by ``openenv-train build`` (socket mode) or one serving on ``container_port``.
        isolation: ``"server"`` (one container, shared by the sessions of :meth:`session`) or ``"session"``
            (each :meth:`session` provider gets a container of its own).
        transport: ``"auto"`` (socket mode for images labelled by ``openenv-train build``), ``"unix"`` or ``"tcp"``.
        limits: CPU/memory/pids limits and the ``/tmp`` size; the root filesystem is read-only.
        network: socket mode's network (default ``"none"``); port mode uses the engine's default.
        max_sessions: the server's session cap (socket mode; 1 per container under ``isolation="session"``).
        run_args: more ``docker run`` options.
    """

    def __init__(self, image: str, *, isolation: str = "server", transport: str = "auto", container_port: int = 8000,
                 limits: DockerLimits | None = None, network: str | None = "none", max_sessions: int | None = None,
                 env_vars: dict[str, str] | None = None, startup_timeout_s: float = 120.0, docker: str = "docker",
                 run_args: tuple[str, ...] = ()) -> None:
        if isolation not in ("server", "session"):
            raise ValueError(f"isolation must be 'server' or 'session', got {isolation!r}")
        if transport not in ("auto", "unix", "tcp"):
            raise ValueError(f"transport must be 'auto', 'unix' or 'tcp', got {transport!r}")
        self.image, self.isolation, self.transport = image, isolation, transport
        self.container_port = container_port
        self.limits = limits or DockerLimits()
        self.network = network
        self.max_sessions = max_sessions
        self.env_vars = env_vars or {}
        self.startup_timeout_s = startup_timeout_s
        self.docker = docker
        self.run_args = list(run_args)
        self.container_id: str | None = None
        self.endpoint: Endpoint | None = None
        self.sockdir: Path | None = None
        self._children: list[DockerProvider] = []
        self._lock = asyncio.Lock()

    # -- sessions ---------------------------------------------------------------------------------
    def session(self) -> Provider:
        """A provider for one client: its own container (``isolation="session"``) or this shared one."""
        if self.isolation == "session":
            child = DockerProvider(self.image, transport=self.transport, container_port=self.container_port,
                                   limits=self.limits, network=self.network, max_sessions=1, env_vars=self.env_vars,
                                   startup_timeout_s=self.startup_timeout_s, docker=self.docker,
                                   run_args=tuple(self.run_args))
            self._children.append(child)
            return child
        return _Shared(self)

    async def client(self, client_cls: Any = None, **kwargs: Any) -> Any:
        """A connected client (default :class:`GenericEnvClient`) on a :meth:`session` provider."""
        if client_cls is None:
            client_cls = default_client_class()
        return await client_cls(provider=self.session(), **kwargs).connect()

    @property
    def container_ids(self) -> list[str]:
        """Ids of the running containers of this provider and its session providers."""
        ids = [self.container_id] if self.container_id else []
        return ids + [cid for child in self._children for cid in child.container_ids]

    # -- lifecycle --------------------------------------------------------------------------------
    async def _use_socket(self) -> bool:
        if self.transport != "auto":
            return self.transport == "unix"
        inspect = ("image", "inspect", "--format", "{{json .Config.Labels}}", self.image)
        try:
            labels = await _run(self.docker, *inspect)
        except ServerStartError:  # not here yet: pull it, as ``docker run`` would
            await _run(self.docker, "pull", self.image, timeout_s=max(600.0, self.startup_timeout_s))
            labels = await _run(self.docker, *inspect)
        return (json.loads(labels) or {}).get(LABEL_TRANSPORT) == "uds"

    def run_command(self, socket_mode: bool, sockdir: Path | None) -> list[str]:
        """The ``docker run`` arguments (after ``docker``)."""
        cmd = ["run", "-d", "--rm", "--label", f"{LABEL}=1", "--label", f"{LABEL_PARENT}={os.getpid()}",
               "--label", f"{LABEL_HOST}={socket.gethostname()}", *self.limits.args(),
               "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
        cmd += [arg for key, value in self.env_vars.items() for arg in ("-e", f"{key}={value}")]
        if socket_mode:
            assert sockdir is not None
            cmd += ["--label", f"{LABEL_SOCKDIR}={sockdir}", "--user", f"{os.getuid()}:{os.getgid()}", "-e", "HOME=/tmp",
                    "-v", f"{sockdir}:/sock"]
            if self.network:
                cmd += ["--network", self.network]
            cmd += [*self.run_args, self.image, "--uds", "/sock/env.sock", "--ready-file", "/sock/ready"]
            if self.max_sessions is not None:
                cmd += ["--max-sessions", str(self.max_sessions)]
            return cmd
        return [*cmd, "-p", f"127.0.0.1::{self.container_port}", *self.run_args, self.image]

    async def start(self) -> Endpoint:
        async with self._lock:
            if self.started and self.endpoint is not None:
                return self.endpoint
            reason = await asyncio.to_thread(docker_available, self.docker)
            if reason is not None:
                raise ServerStartError(f"cannot run {self.image!r}: {reason}; start a Docker engine or use another provider")
            await asyncio.to_thread(reap_orphans, self.docker)
            _start_watchdog(self.docker)
            socket_mode = await self._use_socket()
            if socket_mode:
                self.sockdir = Path(tempfile.mkdtemp(prefix=_SOCKDIR_PREFIX))
            self.container_id = await _run(self.docker, *self.run_command(socket_mode, self.sockdir))
            _track(self.container_id, self.docker)
            self.started = True
            try:
                self.endpoint = await (self._wait_socket() if socket_mode else self._wait_port())
            except (TimeoutError, RuntimeError, ServerStartError, IndexError) as exc:
                logs = ""
                with contextlib.suppress(ServerStartError):
                    logs = await _run(self.docker, "logs", "--tail", "30", self.container_id)
                await self.stop()
                raise ServerStartError(f"container of {self.image!r} did not become healthy: {exc}\n{logs}") from None
            return self.endpoint

    async def _running(self) -> bool:
        assert self.container_id is not None
        try:
            state = await _run(self.docker, "inspect", "--format", "{{.State.Running}}", self.container_id)
        except ServerStartError:
            return False
        return state == "true"

    async def _wait_socket(self) -> Endpoint:
        assert self.sockdir is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.startup_timeout_s
        checked = loop.time()
        while not (self.sockdir / "ready").exists():
            if loop.time() > deadline:
                raise TimeoutError(f"no ready signal within {self.startup_timeout_s:g}s")
            if loop.time() - checked > 1.0:
                checked = loop.time()
                if not await self._running():
                    raise RuntimeError("the container exited before the server was ready")
            await asyncio.sleep(0.05)
        endpoint = Endpoint("http://localhost", str(self.sockdir / "env.sock"))
        await wait_healthy(endpoint, timeout_s=self.startup_timeout_s)
        return endpoint

    async def _wait_port(self) -> Endpoint:
        assert self.container_id is not None
        mapping = await _run(self.docker, "port", self.container_id, f"{self.container_port}/tcp")
        host_port = mapping.splitlines()[0].rsplit(":", 1)[1]
        endpoint = Endpoint(f"http://127.0.0.1:{host_port}")
        await wait_healthy(endpoint, timeout_s=self.startup_timeout_s)
        return endpoint

    async def stop(self) -> None:
        """Remove this provider's container and those of its session providers."""
        for child in self._children:
            await child.stop()
        self._children.clear()
        if self.container_id is not None:
            with contextlib.suppress(ServerStartError):
                await _run(self.docker, "rm", "-f", self.container_id)
            _LIVE.pop(self.container_id, None)
            self.container_id = None
        if self.sockdir is not None:
            shutil.rmtree(self.sockdir, ignore_errors=True)
            self.sockdir = None
        self.endpoint = None
        self.started = False


class _Shared(Provider):
    """One client's view of a shared container: starts it if needed, never stops it."""

    def __init__(self, parent: DockerProvider) -> None:
        self.parent = parent

    async def start(self) -> Endpoint:
        endpoint = await self.parent.start()
        self.started = True
        return endpoint

    async def stop(self) -> None:
        self.started = False


if __name__ == "__main__":  # the watchdog: python -m openenv_train.launch._docker DOCKER PARENT_PID
    _watch(*sys.argv[1:3])
