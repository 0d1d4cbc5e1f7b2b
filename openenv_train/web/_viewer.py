"""The trace viewer's HTTP server: the stdlib threading server in front of :class:`ViewerApi`.

A viewer is a local, read-only tool with one user, so the stdlib server is enough; each request is a
thread, and the API reads Parquet without holding any lock while it does.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._api import ViewerApi
from ._dataset import TraceIndex

__all__ = ["ViewerApi", "ViewerServer"]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._answer(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(head=True)

    def do_POST(self) -> None:  # noqa: N802
        self._answer(head=False)

    def _answer(self, *, head: bool) -> None:
        try:
            asset = self.server.api.handle("GET" if head else self.command, self.path)
        except Exception as exc:  # a bad shard must show as an error, not a dropped connection
            from ._api import _error

            asset = _error(500, f"internal error: {type(exc).__name__}: {exc}")
        self.send_response(asset.status)
        for name, value in asset.header_list():
            self.send_header(name, value)
        self.send_header("content-length", str(len(asset.body)))
        self.end_headers()
        if not head:
            self.wfile.write(asset.body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        if os.environ.get("OPENENV_TRAIN_VIEW_LOG"):
            super().log_message(format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    api: ViewerApi


class ViewerServer:
    """Serves the viewer for one trace source on ``host:port`` (0 picks a free port).

    Usage::

        server = ViewerServer("runs/my-run", port=0)
        server.start()  # in a background thread; server.url is where to point a browser
        server.stop()

    ``env_class`` (an env name to its class) lets episodes show each step's human view; see :class:`ViewerApi`.

    Raises:
        SourceError: the source holds no trace shards (from the constructor).
        OSError: the address cannot be bound (from the constructor).
    """

    def __init__(self, source: str | os.PathLike[str], *, host: str = "127.0.0.1", port: int = 8080,
                 env_class: Callable[[str], Any] | None = None) -> None:
        self.api = ViewerApi(TraceIndex(source), env_class=env_class)
        self.httpd = _Server((host, port), _Handler)
        self.httpd.api = self.api
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` the viewer listens on."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="viewer", daemon=True)
        self._thread.start()

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        self.httpd.serve_forever()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
