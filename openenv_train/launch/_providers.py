"""Providers start (or find) an env server and hand its endpoint to a client (see :class:`~openenv_train.client.Provider`).

- :class:`InProcessProvider`: a server on a background thread of this process (tests, notebooks).
- :class:`LocalProcessProvider`: ``openenv-train serve`` in a subprocess (TCP or Unix socket);
  its process group is killed on ``stop()``, and the server exits by itself if this process dies.
- :class:`DockerProvider` (in ``_docker``): containers with limits and no network, reached through a Unix socket.
- :class:`RemoteProvider`: a running server by URL, or a Hugging Face Space by ``owner/name``.
- :class:`UnixSocketProvider`: a running server behind a Unix socket path (sandboxes, containers).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any

from ..core import ServerStartError, config_argv
from ..loops import EventLoopThread
from ._bindings import resolve_env
from ._endpoint import Endpoint, wait_healthy
from ._provider import Provider

__all__ = [
    "InProcessProvider",
    "LocalProcessProvider",
    "RemoteProvider",
    "UnixSocketProvider",
    "space_url",
]


# -- in-process ---------------------------------------------------------------------------------------
class InProcessProvider(Provider):
    """Runs an :class:`~openenv_train.server.EnvServer` on its own event loop in a daemon thread.

    ``env`` is an Environment class, a catalog name, ``module:Class`` or an env folder; a folder whose app is a plain
    ASGI app (routes of its own), or an ASGI app object, is served as it is by an
    :class:`~openenv_train.server.AsgiServer` (uvicorn) on the port asked for.
    """

    def __init__(self, env: Any, *, max_sessions: int | None = None, **config: Any) -> None:
        self.env = env
        self.config = {"port": 0, **config}
        if max_sessions is not None:
            self.config["max_sessions"] = max_sessions
        self.server: Any = None
        self._runner: EventLoopThread | None = None

    async def start(self) -> Endpoint:
        from ..server import AsgiApp, AsgiServer, EnvServer, ServerConfig

        env_cls = _resolve_env_class(self.env)

        async def boot() -> str:
            config = ServerConfig(**self.config)
            # an env folder's own ASGI app (routes of its own) runs as it is, under uvicorn
            self.server = AsgiServer(env_cls, config) if isinstance(env_cls, AsgiApp) else EnvServer(env_cls, config)
            await self.server.start()
            return str(self.server.url)

        runner = self._runner = EventLoopThread("openenv-train-server")
        try:
            url = await asyncio.wrap_future(runner.submit(boot()))
        except BaseException:
            self._runner = None
            await asyncio.to_thread(runner.stop, 30)
            raise
        self.started = True
        uds = self.config.get("uds")
        return Endpoint("http://localhost" if uds else url, uds)

    async def stop(self) -> None:
        if not self.started:
            return
        self.started = False
        runner, self._runner = self._runner, None
        if runner is not None:
            with contextlib.suppress(Exception):  # as before: a failing stop still ends the thread
                await asyncio.wrap_future(runner.submit(self.server.stop()))
            await asyncio.to_thread(runner.stop, 30)


def _resolve_env_class(env: Any) -> Any:
    """An Environment class, or an :class:`~openenv_train.server.AsgiApp` for an env's own ASGI app."""
    from ..server import AsgiApp, is_asgi_app

    if isinstance(env, str):
        return resolve_env(env)  # the catalog sits above launch: openenv_train.envs lends its lookup
    if is_asgi_app(env):  # an ASGI app object (a FastAPI app) given directly
        return AsgiApp(env, name=type(env).__name__)
    return env


# -- local subprocess ---------------------------------------------------------------------------------
_LIVE: weakref.WeakSet[LocalProcessProvider] = weakref.WeakSet()
_hooked = False  # the exit hook is registered when the first server starts, not at import


def _kill_leftovers() -> None:
    for provider in list(_LIVE):
        provider.kill()


def _track(provider: LocalProcessProvider) -> None:
    """Remember a started server so that it is killed at exit (the hook is registered on first use)."""
    global _hooked
    if not _hooked:
        atexit.register(_kill_leftovers)
        _hooked = True
    _LIVE.add(provider)


def _opens_sandboxes(env: str) -> bool:
    """Whether ``env``'s class runs code in sandboxes of its own (``Environment.opens_sandboxes``); False when it
    cannot be loaded here (the server then says why when it starts)."""
    try:
        return bool(getattr(resolve_env(env), "opens_sandboxes", False))
    except Exception:  # an env this process cannot import, or no catalog: the plain server sandbox
        return False


class LocalProcessProvider(Provider):
    """Runs ``python -m openenv_train.cli serve ENV`` in its own process group.

    Args:
        env: catalog name, ``package.module:ClassName`` or env folder (one whose app is a plain FastAPI app with
            routes of its own is served as it is).
        transport: ``"tcp"`` (loopback port) or ``"unix"`` (socket in a private temp directory).
        max_sessions: the server's session cap (default: the server's).
        startup_timeout_s: limit on the server becoming healthy.
        extra_args: more ``serve`` options, e.g. ``["--idle-timeout", "60"]``.
        env_vars: variables added to the server's environment (not passed into a sandbox).
        sandbox: run the server in the OS sandbox (``True`` for the server defaults, or a
            :class:`~openenv_train.sandbox.SandboxConfig`): no network inside, reached through a Unix
            socket in a shared directory; implies ``transport="unix"``. With ``True``, an env that opens
            sandboxes of its own (``Environment.opens_sandboxes``) gets ``nested=True``.
        token: the token the server requires (handed over in a private file, never on the command line);
            None uses ``$OPENENV_TRAIN_TOKEN`` when it is set, "" starts the server without one.
    """

    def __init__(self, env: str, *, host: str = "127.0.0.1", port: int = 0, transport: str = "tcp",
                 max_sessions: int | None = None, startup_timeout_s: float = 60.0,
                 extra_args: list[str] | tuple[str, ...] = (), env_vars: dict[str, str] | None = None,
                 python: str = sys.executable, sandbox: Any = None, token: str | None = None) -> None:
        if transport not in ("tcp", "unix"):
            raise ValueError(f"transport must be 'tcp' or 'unix', got {transport!r}")
        self.env = env
        self.sandbox = sandbox or None
        self.host, self.port, self.transport = host, port, "unix" if self.sandbox else transport
        self.max_sessions = max_sessions
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = list(extra_args)
        self.env_vars = env_vars or {}
        self.python = python
        self._token = os.environ.get("OPENENV_TRAIN_TOKEN", "").strip() if token is None else token
        self.process: subprocess.Popen[bytes] | None = None
        self.workdir: Path | None = None

    def command(self, workdir: Path) -> list[str]:
        """The server's command line."""
        from ..server import ServerConfig  # its fields are serve's options

        server = config_argv(ServerConfig, {
            "host": self.host, "port": self.port, "uds": str(workdir / "env.sock") if self.transport == "unix" else None,
            "max_sessions": self.max_sessions, "token_file": str(workdir / "token") if self._token else None,
        })
        cmd = [self.python, "-m", "openenv_train.cli", "serve", self.env, *server, "--ready-file",
               str(workdir / "ready")]
        if not self.sandbox:  # inside a sandbox host pids mean nothing; it dies with its parent instead
            cmd += ["--parent-pid", str(os.getpid())]
        cmd += self.extra_args
        if self.sandbox:
            from ..sandbox import SandboxConfig, SandboxLimits, sandboxed_command

            config = self.sandbox if isinstance(self.sandbox, SandboxConfig) else None
            if config is None and _opens_sandboxes(self.env):
                config = SandboxConfig(limits=SandboxLimits.for_server(), nested=True)
            cmd = sandboxed_command(cmd, config, shared_dir=workdir)
        return cmd

    async def start(self) -> Endpoint:
        self.workdir = Path(tempfile.mkdtemp(prefix="openenv-train-"))
        log_path = self.workdir / "server.log"
        if self._token:  # mkdtemp's directory is private (0700); the file is too
            fd = os.open(self.workdir / "token", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self._token)
        try:
            command = self.command(self.workdir)
        except Exception as exc:  # e.g. SandboxUnavailable: say so instead of starting unsandboxed
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise ServerStartError(f"cannot start {self.env!r}: {exc}") from exc
        with open(log_path, "wb") as log_file:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True, env={**os.environ, "OPENENV_TRAIN_TOKEN": "", **self.env_vars},
            )
        _track(self)
        self.started = True
        try:
            endpoint = await self._wait_ready()
            await wait_healthy(endpoint, timeout_s=self.startup_timeout_s, is_alive=self.alive)
        except (TimeoutError, RuntimeError) as exc:
            tail = self.log_tail()
            await self.stop()
            raise ServerStartError(f"server for {self.env!r} did not start: {exc}\n--- server output ---\n{tail}") from None
        return endpoint

    async def restart(self) -> Endpoint:
        """Kill the server at once and start it again; over TCP on the port it had, so its URL stays right
        (a fleet's clients and probes find it back). The port must still be free."""
        if self.transport == "tcp" and self.workdir is not None and (self.workdir / "ready").exists():
            self.port = int((self.workdir / "ready").read_text().strip().rsplit(":", 1)[1])
        self.kill()
        _LIVE.discard(self)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return await self.start()

    def alive(self) -> bool:
        """Whether the server's process is still running."""
        return self.process is not None and self.process.poll() is None

    async def _wait_ready(self) -> Endpoint:
        assert self.workdir is not None
        ready = self.workdir / "ready"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.startup_timeout_s
        while not ready.exists():
            if not self.alive():
                raise RuntimeError(f"the server process exited with code {self.process.returncode}")  # type: ignore[union-attr]
            if loop.time() > deadline:
                raise TimeoutError(f"no ready signal within {self.startup_timeout_s:g}s")
            await asyncio.sleep(0.02)
        url = ready.read_text().strip()
        if self.transport == "unix":
            return Endpoint("http://localhost", str(self.workdir / "env.sock"))
        return Endpoint(url)

    def log_tail(self, lines: int = 30) -> str:
        """The last lines the server printed."""
        if self.workdir is None or not (self.workdir / "server.log").exists():
            return ""
        return "\n".join((self.workdir / "server.log").read_text(errors="replace").splitlines()[-lines:])

    async def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the server's process group, then SIGKILL it after ``grace_s``."""
        process = self.process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                await asyncio.to_thread(process.wait, grace_s)
            except subprocess.TimeoutExpired:
                self.kill()
        self.kill()
        self.started = False
        _LIVE.discard(self)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL the whole process group at once (no grace)."""
        process = self.process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            process.wait(5)


# -- remote -------------------------------------------------------------------------------------------
_SPACE_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def space_url(space_id: str) -> str:
    """The URL of a Hugging Face Space: ``owner/my_env`` → ``https://owner-my-env.hf.space``.

    Example:
        >>> space_url("openenv/echo_env")
        'https://openenv-echo-env.hf.space'
    """
    owner, name = space_id.split("/", 1)
    return f"https://{owner.lower()}-{re.sub(r'[_.]', '-', name.lower())}.hf.space"


class RemoteProvider(Provider):
    """A server that already runs elsewhere: a URL, or a Space id ``owner/name``."""

    def __init__(self, url: str, *, check_health: bool = True, timeout_s: float = 30.0) -> None:
        self.url = space_url(url) if _SPACE_ID.match(url) else url
        self.check_health = check_health
        self.timeout_s = timeout_s

    async def start(self) -> Endpoint:
        endpoint = Endpoint(self.url)
        if self.check_health:
            try:
                await wait_healthy(endpoint, timeout_s=self.timeout_s)
            except TimeoutError as exc:
                raise ServerStartError(
                    f"{self.url} is not reachable or not healthy: {exc}; check the URL (a Space may be asleep or private)"
                ) from None
        self.started = True
        return endpoint

    async def stop(self) -> None:
        self.started = False


class UnixSocketProvider(Provider):
    """A server that already listens on a Unix socket path (``openenv-train serve ENV --uds PATH``)."""

    def __init__(self, path: str, *, timeout_s: float = 30.0) -> None:
        self.path = path
        self.timeout_s = timeout_s

    async def start(self) -> Endpoint:
        endpoint = Endpoint("http://localhost", self.path)
        try:
            await wait_healthy(endpoint, timeout_s=self.timeout_s)
        except TimeoutError as exc:
            raise ServerStartError(f"no healthy server on Unix socket {self.path}: {exc}") from None
        self.started = True
        return endpoint

    async def stop(self) -> None:
        self.started = False

