"""Byte forwarding between a TCP port and a Unix socket (stdlib only).

The OS sandbox has no network, so an agent's CLI reaches the policy endpoint through a Unix socket bound into it:
run as a script inside the sandbox, this module listens on ``127.0.0.1:PORT`` of the sandbox's own loopback
and forwards each connection to the socket; on the host, :mod:`._proxy_bridge` forwards the socket to the
endpoint's TCP port with :func:`splice`.

Usage (inside): ``python -I _forwarder.py SOCKET PORT READY_FILE`` (the ready file appears once it listens).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

__all__ = ["splice"]


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF, then half-close: the other direction goes on (an HTTP answer after the request)."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass


async def splice(a: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                 b: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
    """Forward bytes both ways between two connections until both sides are done, then close both."""
    try:
        await asyncio.gather(_pump(a[0], b[1]), _pump(b[0], a[1]))
    finally:
        for writer in (a[1], b[1]):
            writer.close()
            with contextlib.suppress(OSError, RuntimeError):
                await writer.wait_closed()


async def _serve(socket_path: str, port: int, ready: str) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.open_unix_connection(socket_path)
        except OSError:
            writer.close()
            return
        await splice((reader, writer), upstream)

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    with open(ready, "w"):
        pass
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
