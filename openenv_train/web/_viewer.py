"""The trace viewer's HTTP server: the project's HTTP core (:class:`~openenv_train.http.HttpServer`) in front of
:class:`ViewerApi`, on an event loop of its own thread.

A viewer is a local, read-only tool with one user; the API reads Parquet in a worker thread per request
(``asyncio.to_thread``) without holding any lock while it does, so a slow episode does not hold up the table.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..http import HttpRequest, HttpResponse, HttpServer
from ..loops import EventLoopThread
from ._api import ViewerApi, _error
from ._trace_index import TraceIndex

__all__ = ["ViewerApi", "ViewerServer"]

_MAX_BODY = 2**20  # the viewer only answers GET and HEAD; a body is never needed


def _error_response(status: int, message: str) -> HttpResponse:
    return _error(status, message).response()


class ViewerServer:
    """Serves the viewer for one trace source on ``host:port`` (0 picks a free port).

    Usage::

        server = ViewerServer("runs/my-run", port=0)
        server.start()  # in a background thread; server.url is where to point a browser
        server.stop()

    ``env_class`` (an env name to its class) lets episodes show each step's human view; see :class:`ViewerApi`.
    Set ``$OPENENV_TRAIN_VIEW_LOG`` to print one line per request on stderr.

    Raises:
        SourceError: the source holds no trace shards (from the constructor).
        ServerStartError: the address cannot be bound (from the constructor).
    """

    def __init__(self, source: str | os.PathLike[str], *, host: str = "127.0.0.1", port: int = 8080,
                 env_class: Callable[[str], Any] | None = None) -> None:
        self.api = ViewerApi(TraceIndex(source), env_class=env_class)
        self.http = HttpServer(self._handle, _error_response, host=host, port=port, max_body=_MAX_BODY,
                               name="trace viewer")
        self._log = bool(os.environ.get("OPENENV_TRAIN_VIEW_LOG"))
        self._stopped = threading.Event()
        self._runner = EventLoopThread("viewer")
        try:
            self._runner.run(self.http.start(), 30)  # binds now: a taken port fails here, not later
        except BaseException:
            self._runner.stop()
            raise

    async def _handle(self, request: HttpRequest) -> HttpResponse:
        asset = await asyncio.to_thread(self.api.handle, request.method, request.target or request.path)
        if self._log:
            print(f'viewer: "{request.method} {request.target or request.path}" {asset.status}', file=sys.stderr)
        return asset.response()

    @property
    def url(self) -> str:
        """``http://host:port`` the viewer listens on."""
        return f"http://{self.http.host}:{self.http.port}"

    def start(self) -> None:
        """Serve in the background (the server accepts connections from its construction on; kept for callers)."""

    def serve_forever(self) -> None:
        """Block this thread until :meth:`stop` or an interrupt (Ctrl-C raises ``KeyboardInterrupt`` here)."""
        while not self._stopped.wait(0.5):
            pass

    def stop(self) -> None:
        """Stop serving and close the socket; idempotent."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        if self._runner.running:
            self._runner.run(self.http.stop(grace_s=2.0), 10)
        self._runner.stop(5)
