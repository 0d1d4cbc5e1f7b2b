"""The host end of an agent's way to the policy endpoint: a Unix socket in a fresh folder, bound into the task's
sandbox, that forwards each connection to the endpoint's TCP port (the in-sandbox end is :mod:`._forwarder`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from urllib.parse import urlsplit

from ._forwarder import splice

__all__ = ["ProxyBridge"]


class ProxyBridge:
    """``async with ProxyBridge(url) as bridge``: ``bridge.socket_path`` forwards to ``url``'s host and port.

    The folder (``bridge.folder``) is made in ``parent`` (default /tmp) and opened to all users, and the socket
    too: the sandbox runs as an unprivileged user. Both go when the block ends.

    Raises:
        ValueError: ``url`` is not an http:// URL with a host.
    """

    def __init__(self, url: str, *, parent: str | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the policy endpoint must be an http:// URL for an agent in the sandbox, got {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.parent = parent or "/tmp"
        self.folder = ""
        self.socket_path = ""
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.close()
            return
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)  # type: ignore[arg-type]
        try:
            await splice((reader, writer), upstream)
        finally:
            if task is not None:
                self._tasks.discard(task)  # type: ignore[arg-type]

    async def __aenter__(self) -> ProxyBridge:
        self.folder = tempfile.mkdtemp(prefix="openenv-agent-", dir=self.parent)
        os.chmod(self.folder, 0o755)
        self.socket_path = os.path.join(self.folder, "proxy.sock")
        self._server = await asyncio.start_unix_server(self._handle, self.socket_path)
        os.chmod(self.socket_path, 0o777)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        shutil.rmtree(self.folder, ignore_errors=True)
