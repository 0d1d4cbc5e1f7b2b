"""``openenv-train serve ENV``: serve a catalog env or ``module:Class`` over HTTP and WebSocket."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ..core import EnvLoadError
from ._app import app, err, fail


@app.command()
def serve(
    env: Annotated[str, typer.Argument(help="Catalog name (see 'openenv-train catalog') or package.module:ClassName.")],
    host: Annotated[str, typer.Option(help="Interface to bind; loopback unless you mean to expose it.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one.")] = 8000,
    max_sessions: Annotated[int, typer.Option(help="Most concurrent sessions.", envvar="MAX_CONCURRENT_ENVS")] = 1024,
    idle_timeout: Annotated[float, typer.Option(help="Close sessions idle this many seconds; 0 never does.")] = 600.0,
    max_message_size: Annotated[int, typer.Option(help="Largest WebSocket message in bytes.")] = 16 * 2**20,
    uds: Annotated[str | None, typer.Option(help="Listen on this Unix socket path instead of TCP.")] = None,
    ready_file: Annotated[str | None, typer.Option(hidden=True, help="Write the server URL here once listening.")] = None,
    parent_pid: Annotated[int | None, typer.Option(hidden=True, help="Exit when this process is gone.")] = None,
    sandbox: Annotated[bool, typer.Option(help="Run the server in the OS sandbox (no network): reach it via --uds.")] = False,
) -> None:
    """Serve an environment: /ws sessions plus /health, /metadata, /schema, /reset, /step, /state, /mcp."""
    from ..envs import load_env_class
    from ..server import ServerConfig, run_server

    try:
        env_cls = load_env_class(env)
    except EnvLoadError as exc:
        raise fail(str(exc), code=2) from None
    if sandbox:
        options = ["--max-sessions", str(max_sessions), "--idle-timeout", str(idle_timeout),
                   "--max-message-size", str(max_message_size)]
        raise typer.Exit(_serve_sandboxed(env, uds, ready_file, options))
    try:
        config = ServerConfig(host=host, port=port, uds=uds, max_sessions=max_sessions,
                              idle_timeout_s=idle_timeout or None, max_message_size=max_message_size)
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
