"""``openenv-train serve ENV``: serve a catalog env or ``module:Class`` over HTTP and WebSocket."""

from __future__ import annotations

from typing import Annotated

import typer

from ..core import EnvLoadError
from ._app import app, fail


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
) -> None:
    """Serve an environment: /ws sessions plus /health, /metadata, /schema, /reset, /step, /state, /mcp."""
    from ..envs import load_env_class
    from ..server import ServerConfig, run_server

    try:
        env_cls = load_env_class(env)
    except EnvLoadError as exc:
        raise fail(str(exc), code=2) from None
    try:
        config = ServerConfig(host=host, port=port, uds=uds, max_sessions=max_sessions,
                              idle_timeout_s=idle_timeout or None, max_message_size=max_message_size)
    except ValueError as exc:
        raise fail(str(exc), code=2) from None
    run_server(env_cls, config, parent_pid=parent_pid, ready_file=ready_file)
