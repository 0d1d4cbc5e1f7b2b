"""The policy endpoint does not let slow or idle clients hold connections: 408 for a stalled request, close when idle."""

from __future__ import annotations

import asyncio

from openenv_train.policy import PolicyServer, ScriptedBackend


async def _read_all(reader: asyncio.StreamReader, timeout_s: float) -> bytes:
    return await asyncio.wait_for(reader.read(), timeout_s)


async def test_stalled_request_gets_408_and_idle_connection_is_closed() -> None:
    async with PolicyServer(ScriptedBackend(lambda messages: "ok"), token="") as server:
        server.http.request_timeout_s, server.http.keepalive_timeout_s = 0.5, 1.0
        reader, writer = await asyncio.open_connection(server.http.host, server.http.port)
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"mess")
        await writer.drain()
        reply = await _read_all(reader, 5.0)  # the server answers and closes: read() returns at EOF
        assert reply.startswith(b"HTTP/1.1 408") and b"not complete within 0.5 s" in reply
        writer.close()

        # a keep-alive connection that sends nothing is closed after keepalive_timeout_s, not request_timeout_s
        reader, writer = await asyncio.open_connection(server.http.host, server.http.port)
        loop = asyncio.get_running_loop()
        start = loop.time()
        assert await _read_all(reader, 5.0) == b""
        assert 0.9 <= loop.time() - start < 4.0
        writer.close()

        # a complete request is answered, and the connection stays usable for the next one
        reader, writer = await asyncio.open_connection(server.http.host, server.http.port)
        body = b'{"messages":[{"role":"user","content":"hi"}]}'
        request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        for _ in range(2):
            writer.write(request)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
            assert head.startswith(b"HTTP/1.1 200")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            assert b'"ok"' in await reader.readexactly(length)
            await asyncio.sleep(0.7)  # longer than the request timeout, shorter than the keep-alive one
        writer.close()
