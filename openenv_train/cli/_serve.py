"""``openenv-train serve ENV``: serve a catalog env or ``module:Class`` over HTTP and WebSocket."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from ..core import EnvLoadError, ServerStartError, config_argv
from ..server import ServerConfig
from ._app import app, err, fail
from ._options import config_values, with_config_options


@app.command()
@with_config_options(ServerConfig, at=2)  # serve's server options: ServerConfig's command-line fields
def serve(
    ctx: typer.Context,
    env: Annotated[str | None, typer.Argument(help="Catalog name (see 'openenv-train catalog'), package.module:ClassName, "
                                                   "or an env folder with openenv.yaml (default: the working "
                                                   "directory's).")] = None,
    ready_file: Annotated[str | None, typer.Option(hidden=True, help="Write the server URL here once listening.")] = None,
    parent_pid: Annotated[int | None, typer.Option(hidden=True, help="Exit when this process is gone.")] = None,
    sandbox: Annotated[bool, typer.Option(help="Run the server in the OS sandbox (no network): reach it via --uds.")] = False,
    reload: Annotated[bool, typer.Option(help="Restart the server when a .py file of the env's package (the working "
                                              "directory's, for a top-level module) changes; for development.")] = False,
    workers: Annotated[int, typer.Option(help="Server processes behind the one TCP port (SO_REUSEPORT), one per core "
                                              "you give it; a session is one connection, so it stays in one worker. "
                                              "A worker that dies is restarted.")] = 1,
    **config: Any,
) -> None:
    """Serve an environment: /ws sessions plus /health, /metadata, /schema, /reset, /step, /state, /mcp (POST and
    WebSocket); --mode production leaves out /reset, /step and /state.

    The server's own options (``--host``, ``--port``, ``--max-sessions``, ...) are ServerConfig's fields. An env
    folder whose app is a plain FastAPI app with routes of its own is served as it is, under uvicorn.
    """
    from ..envs import load_env_target
    from ..server import AsgiApp, run_asgi_server, run_server

    values = config_values(ServerConfig, config)
    uds, token_file = values["uds"], values["token_file"]
    if env is None:
        if not os.path.isfile("openenv.yaml"):
            raise fail("give an env to serve (a catalog name, module:Class or env folder), or run 'serve' inside an "
                       "env folder (one with openenv.yaml)", code=2)
        env = "."
    try:
        env_cls = load_env_target(env)
    except EnvLoadError as exc:
        raise fail(str(exc), code=2) from None
    if workers < 1:
        raise fail(f"--workers must be >= 1, got {workers}", code=2)
    if workers > 1 and isinstance(env_cls, AsgiApp):
        raise fail(f"{env} is served by its own app (routes of its own), in one process; drop --workers, or run one "
                   "server per port", code=2)
    if workers > 1:
        if uds or sandbox or reload:
            raise fail("--workers shares one TCP port between processes; it does not combine with --uds, --sandbox "
                       "or --reload (run one server per socket instead)", code=2)
        from ..server import serve_workers

        argv = _child_argv(ctx, skip=frozenset({"workers", "host", "port", "ready_file", "parent_pid", "reuse_port"}))
        raise typer.Exit(serve_workers(argv, workers=workers, host=values["host"], port=values["port"],
                                       ready_file=ready_file, parent_pid=parent_pid))
    if reload:
        raise typer.Exit(_serve_with_reload(_watch_root(env, env_cls), _child_argv(ctx)))
    if sandbox:
        inner = {name: values[name] for name in ("max_sessions", "idle_timeout_s", "max_message_size", "mode",
                                                 "max_messages_per_s", "message_burst")}
        inner["token_file"] = os.path.abspath(token_file) if token_file else None
        nested = bool(getattr(env_cls, "opens_sandboxes", False))
        raise typer.Exit(_serve_sandboxed(env, uds, ready_file, config_argv(ServerConfig, inner), nested=nested))
    try:
        config_obj = ServerConfig(**values)
    except ValueError as exc:
        raise fail(str(exc), code=2) from None
    if isinstance(env_cls, AsgiApp):  # an env folder's plain FastAPI app: its own routes, under uvicorn
        try:
            run_asgi_server(env_cls, config_obj, parent_pid=parent_pid, ready_file=ready_file)
        except ServerStartError as exc:
            raise fail(str(exc)) from None
        return
    run_server(env_cls, config_obj, parent_pid=parent_pid, ready_file=ready_file)


def _serve_sandboxed(env: str, uds: str | None, ready_file: str | None, options: list[str], *, nested: bool) -> int:
    """Re-run ``serve`` inside the sandbox behind a Unix socket; returns the server's exit code.

    ``nested``: the env opens sandboxes of its own, so the server's sandbox lets it create user namespaces.
    """
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
    config = SandboxConfig(limits=SandboxLimits.for_server(), ro_paths=(cwd,), env={"PYTHONPATH": cwd}, nested=nested)
    try:
        command = sandboxed_command(argv, config, shared_dir=shared)
    except (SandboxUnavailable, ValueError) as exc:
        raise fail(f"cannot sandbox the server: {exc}") from None
    inner = "; it opens a sandbox per episode inside" if nested else ""
    err.print(f"openenv-train: sandboxed server (no network) for {env}{inner}; connect through the Unix socket {uds}")
    process = subprocess.Popen(command)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: process.kill())
    return process.wait()


def _watch_root(env: str, env_cls: Any) -> str:
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
