"""``openenv-train serve ENV``: serve a catalog env or ``module:Class`` over HTTP and WebSocket."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ..core import EnvLoadError
from ._app import app, err, fail


@app.command()
def serve(
    ctx: typer.Context,
    env: Annotated[str | None, typer.Argument(help="Catalog name (see 'openenv-train catalog'), package.module:ClassName, "
                                                   "or an env folder with openenv.yaml (default: the working "
                                                   "directory's).")] = None,
    host: Annotated[str, typer.Option(help="Interface to bind; loopback unless you mean to expose it.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one.")] = 8000,
    max_sessions: Annotated[int, typer.Option(help="Most concurrent sessions.", envvar="MAX_CONCURRENT_ENVS")] = 1024,
    idle_timeout: Annotated[float, typer.Option(help="Close sessions idle this many seconds; 0 never does.")] = 600.0,
    max_message_size: Annotated[int, typer.Option(help="Largest WebSocket message in bytes.")] = 16 * 2**20,
    uds: Annotated[str | None, typer.Option(help="Listen on this Unix socket path instead of TCP.")] = None,
    token_file: Annotated[str | None, typer.Option(
        help="Require 'Authorization: Bearer <token>' (all routes but /health) with the token in this file; "
             "without it, $OPENENV_TRAIN_TOKEN is used when set.")] = None,
    max_messages_per_s: Annotated[float | None, typer.Option(
        help="Per-session cap on WebSocket messages per second (token bucket); off by default.")] = None,
    message_burst: Annotated[int | None, typer.Option(
        help="Messages a session may send at once under --max-messages-per-s (default: the rate).")] = None,
    ready_file: Annotated[str | None, typer.Option(hidden=True, help="Write the server URL here once listening.")] = None,
    parent_pid: Annotated[int | None, typer.Option(hidden=True, help="Exit when this process is gone.")] = None,
    sandbox: Annotated[bool, typer.Option(help="Run the server in the OS sandbox (no network): reach it via --uds.")] = False,
    web: Annotated[bool, typer.Option(help="Also serve a playground page at /web (action form, reset/step, history).")] = False,
    reload: Annotated[bool, typer.Option(help="Restart the server when a .py file of the env's package (the working "
                                              "directory's, for a top-level module) changes; for development.")] = False,
    workers: Annotated[int, typer.Option(help="Server processes behind the one TCP port (SO_REUSEPORT), one per core "
                                              "you give it; a session is one connection, so it stays in one worker. "
                                              "A worker that dies is restarted.")] = 1,
    reuse_port: Annotated[bool, typer.Option(hidden=True, help="Bind with SO_REUSEPORT (a --workers worker).")] = False,
) -> None:
    """Serve an environment: /ws sessions plus /health, /metadata, /schema, /reset, /step, /state, /mcp."""
    from ..envs import load_env_class
    from ..server import ServerConfig, run_server

    if env is None:
        if not os.path.isfile("openenv.yaml"):
            raise fail("give an env to serve (a catalog name, module:Class or env folder), or run 'serve' inside an "
                       "env folder (one with openenv.yaml)", code=2)
        env = "."
    try:
        env_cls = load_env_class(env)
    except EnvLoadError as exc:
        raise fail(str(exc), code=2) from None
    if workers < 1:
        raise fail(f"--workers must be >= 1, got {workers}", code=2)
    if workers > 1:
        if uds or sandbox or reload:
            raise fail("--workers shares one TCP port between processes; it does not combine with --uds, --sandbox "
                       "or --reload (run one server per socket instead)", code=2)
        from ..server import serve_workers

        argv = _child_argv(ctx, skip=frozenset({"workers", "host", "port", "ready_file", "parent_pid", "reuse_port"}))
        raise typer.Exit(serve_workers(argv, workers=workers, host=host, port=port, ready_file=ready_file,
                                       parent_pid=parent_pid))
    if reload:
        raise typer.Exit(_serve_with_reload(_watch_root(env, env_cls), _child_argv(ctx)))
    if sandbox:
        options = ["--max-sessions", str(max_sessions), "--idle-timeout", str(idle_timeout),
                   "--max-message-size", str(max_message_size)]
        options += ["--token-file", os.path.abspath(token_file)] if token_file else []
        options += ["--max-messages-per-s", str(max_messages_per_s)] if max_messages_per_s else []
        options += ["--message-burst", str(message_burst)] if message_burst else []
        raise typer.Exit(_serve_sandboxed(env, uds, ready_file, options))
    try:
        config = ServerConfig(host=host, port=port, uds=uds, max_sessions=max_sessions,
                              idle_timeout_s=idle_timeout or None, max_message_size=max_message_size, web=web,
                              token_file=token_file, max_messages_per_s=max_messages_per_s, message_burst=message_burst,
                              reuse_port=reuse_port)
    except ValueError as exc:
        raise fail(str(exc), code=2) from None
    run_server(env_cls, config, parent_pid=parent_pid, ready_file=ready_file)


def _serve_sandboxed(env: str, uds: str | None, ready_file: str | None, options: list[str]) -> int:
    """Re-run ``serve`` inside the sandbox behind a Unix socket; returns the server's exit code."""
    import signal
    import subprocess
    import sys
    import tempfile

    from ..sandbox import SandboxConfig, SandboxLimits, SandboxUnavailable, sandboxed_command

    if uds is None:
        uds = os.path.join(tempfile.mkdtemp(prefix="openenv-train-sandbox-"), "env.sock")
    uds = os.path.abspath(uds)
    shared = os.path.dirname(uds)
    os.makedirs(shared, exist_ok=True)
    argv = [sys.executable, "-m", "openenv_train.cli", "serve", env, "--uds", uds, *options]
    if ready_file:
        if os.path.dirname(os.path.abspath(ready_file)) != shared:
            raise fail(f"--ready-file must be in the socket's directory {shared} when sandboxed", code=2)
        argv += ["--ready-file", os.path.abspath(ready_file)]
    # A module:Class of the user's lives in the working directory: mount it read-only and import from it.
    cwd = os.getcwd()
    config = SandboxConfig(limits=SandboxLimits.for_server(), ro_paths=(cwd,), env={"PYTHONPATH": cwd})
    try:
        command = sandboxed_command(argv, config, shared_dir=shared)
    except (SandboxUnavailable, ValueError) as exc:
        raise fail(f"cannot sandbox the server: {exc}") from None
    err.print(f"openenv-train: sandboxed server (no network) for {env}; connect through the Unix socket {uds}")
    process = subprocess.Popen(command)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: process.kill())
    return process.wait()


def _watch_root(env: str, env_cls: type) -> str:
    """The folder ``--reload`` watches: a catalog env's package, a ``module:Class``'s top-level package."""
    import importlib.util
    import sys

    from ..envs import is_env_folder

    if is_env_folder(env):
        return os.path.abspath(os.path.expanduser(env))
    module_file = getattr(sys.modules.get(env_cls.__module__), "__file__", None) or os.getcwd()
    if ":" not in env:
        return os.path.dirname(os.path.abspath(module_file))
    spec = importlib.util.find_spec(env.partition(":")[0].split(".")[0])
    origin = spec.origin if spec is not None and spec.origin else module_file
    return os.path.dirname(os.path.abspath(origin))  # a package's folder, or a top-level module's (the working dir)


def _child_argv(ctx: typer.Context, skip: frozenset[str] = frozenset({"reload"})) -> list[str]:
    """This ``serve`` command line without the options in ``skip`` (``--reload``), rebuilt from the parsed options."""
    argv: list[str] = []
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if param.name in skip or value is None:
            continue
        if param.param_type_name == "argument":
            argv.insert(0, str(value))
        elif value == param.default:
            continue
        elif getattr(param, "is_flag", False):
            argv.append(param.opts[0] if value else param.secondary_opts[0])
        else:
            argv += [param.opts[0], str(value)]
    return argv


def _mtimes(root: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                try:
                    found[path] = os.stat(path).st_mtime_ns
                except FileNotFoundError:
                    pass
    return found


def _serve_with_reload(root: str, argv: list[str], poll_s: float = 0.5) -> int:
    """Run ``serve ARGV`` as a child and restart it whenever a .py file under ``root`` changes."""
    import signal
    import subprocess
    import sys
    import time

    stopping: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _: stopping.append(signum))
    # the child exits by itself should this watcher die without stopping it
    own = [] if "--parent-pid" in argv else ["--parent-pid", str(os.getpid())]
    command = [sys.executable, "-m", "openenv_train.cli", "serve", *argv, *own]
    err.print(f"openenv-train: --reload watches {root} (*.py)")
    while not stopping:
        seen = _mtimes(root)
        child = subprocess.Popen(command)
        while not stopping and _mtimes(root) == seen:
            if child.poll() is not None and child.returncode not in (0, None):
                err.print(f"openenv-train: server exited ({child.returncode}); waiting for a change to restart it")
                while not stopping and _mtimes(root) == seen:
                    time.sleep(poll_s)
                break
            time.sleep(poll_s)
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if not stopping:
            err.print("openenv-train: change detected, restarting the server")
    return 0
