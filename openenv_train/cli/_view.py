"""``openenv-train view RUN_OR_DATASET``: browse a run's episodes, turns, logprobs and reward curves."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import app, err, fail


@app.command()
def view(
    source: Annotated[str, typer.Argument(help="A run dir (<run>/traces/*.parquet, plus metrics.jsonl), "
                                                "a folder of .parquet shards, or one .parquet file.")],
    host: Annotated[str, typer.Option(help="Interface to bind; loopback unless you mean to share it.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one.")] = 8080,
) -> None:
    """Serve a trace viewer: episode table with filters, chat turns, env steps, logprob shading, curves."""
    from ..core import ServerStartError
    from ..envs import load_env_class
    from ..web import SourceError, ViewerServer

    try:
        server = ViewerServer(source, host=host, port=port, env_class=load_env_class)
    except SourceError as exc:
        raise fail(str(exc), code=2) from None
    except ServerStartError as exc:
        raise fail(str(exc)) from None
    if host not in ("127.0.0.1", "localhost", "::1"):
        err.print(f"warning: the viewer has no authentication; anyone who can reach {host}:{port} can read these traces")
    rows = len(server.api.index.entries)
    err.print(f"openenv-train: viewing {rows} episodes of {source} at {server.url}/", highlight=False, soft_wrap=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
