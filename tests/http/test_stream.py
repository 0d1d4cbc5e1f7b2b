"""HttpStream on the shared HTTP core: chunked bodies sent as produced, a client that leaves cancels the producer,
a client that reads nothing is dropped."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable

import httpx

from openenv_train.http import HttpRequest, HttpResponse, HttpServer, HttpStream, SseDecoder, sse_event

DEADLINE_S = 60.0


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def _error(status: int, message: str) -> HttpResponse:
    return HttpResponse(status, message.encode(), content_type="text/plain")


class Producer:
    """Chunks for a stream, and what happened to it."""

    def __init__(self, chunk: bytes, *, count: int | None = None) -> None:
        self.chunk, self.count = chunk, count
        self.sent = 0
        self.ended: str | None = None  # "done", "cancelled" or "closed"

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        try:
            while self.count is None or self.sent < self.count:
                self.sent += 1
                yield self.chunk
                await asyncio.sleep(0)
            self.ended = "done"
        except asyncio.CancelledError:
            self.ended = "cancelled"
            raise
        except GeneratorExit:
            self.ended = "closed"
            raise


async def _request(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /s HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
    await writer.drain()
    return reader, writer


async def test_chunks_arrive_as_events_and_the_connection_is_kept() -> None:
    producers: list[Producer] = []

    async def handler(request: HttpRequest) -> HttpStream:
        producers.append(Producer(sse_event(f"event {len(producers)}"), count=3))
        return HttpStream(200, producers[-1].chunks())

    server = HttpServer(handler, _error)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", timeout=DEADLINE_S) as client:
            for i in range(2):
                async with client.stream("POST", "/s") as reply:
                    decoder = SseDecoder()
                    events = [e async for e in _events(reply.aiter_lines(), decoder)]
                assert reply.headers["content-type"] == "text/event-stream"
                assert reply.headers["transfer-encoding"] == "chunked" and events == [f"event {i}"] * 3
        assert [p.ended for p in producers] == ["done", "done"] and len(server.connections) <= 1
    finally:
        await server.stop()


async def _events(lines: AsyncGenerator[str, None], decoder: SseDecoder) -> AsyncGenerator[str, None]:
    async for line in lines:
        data = decoder.feed(line)
        if data is not None:
            yield data


async def test_a_client_leaving_cancels_the_waiting_producer() -> None:
    started, producer_ended = asyncio.Event(), []

    async def chunks() -> AsyncGenerator[bytes, None]:
        try:
            yield sse_event("first")
            started.set()
            await asyncio.Event().wait()  # nothing more to send for now: only reading can see the client leave
        except asyncio.CancelledError:
            producer_ended.append("cancelled")
            raise

    async def handler(request: HttpRequest) -> HttpStream:
        return HttpStream(200, chunks())

    server = HttpServer(handler, _error)
    await server.start()
    try:
        reader, writer = await _request(server.port)
        assert b"data: first" in await reader.readuntil(b"data: first")
        await asyncio.wait_for(started.wait(), DEADLINE_S)
        writer.close()
        await _until(lambda: producer_ended == ["cancelled"], "the producer to be cancelled")
    finally:
        await server.stop()


async def test_a_client_that_reads_nothing_is_dropped() -> None:
    producer = Producer(b"x" * 2**20)

    async def handler(request: HttpRequest) -> HttpStream:
        return HttpStream(200, producer.chunks(), content_type="application/octet-stream")

    server = HttpServer(handler, _error, request_timeout_s=0.5)
    await server.start()
    try:
        _, writer = await _request(server.port)
        await _until(lambda: producer.ended is not None, "the stream to be dropped")
        assert producer.ended in ("cancelled", "closed") and producer.sent < 1000
        writer.close()
    finally:
        await server.stop()
