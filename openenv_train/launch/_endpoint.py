"""Where a server is reached (URL or Unix socket), URL rules, and a tiny HTTP GET for health checks."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Endpoint", "http_get_json", "wait_healthy", "ws_url"]


@dataclass(frozen=True)
class Endpoint:
    """A server address: ``base_url`` and, for servers behind a Unix socket, its path."""

    base_url: str
    uds: str | None = None


def ws_url(base_url: str) -> str:
    """``http(s)://host[/prefix]`` (or ``ws(s)://...``) to the session URL ``ws(s)://host[/prefix]/ws``.

    Example:
        >>> ws_url("https://owner-space.hf.space")
        'wss://owner-space.hf.space/ws'
        >>> ws_url("ws://localhost:8000/ws")
        'ws://localhost:8000/ws'
    """
    url = base_url.rstrip("/")
    for old, new in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(old):
            url = new + url[len(old):]
    if not url.startswith(("ws://", "wss://")):
        raise ValueError(f"{base_url!r} is not an http(s):// or ws(s):// URL")
    return url if url.endswith("/ws") else url + "/ws"


async def http_get_json(endpoint: Endpoint, path: str, *, timeout_s: float = 5.0) -> tuple[int, Any]:
    """GET ``path`` from a plain-HTTP server (TCP or Unix socket); returns (status, parsed JSON or text)."""
    parts = urlsplit(endpoint.base_url)
    prefix = parts.path.rstrip("/")
    if parts.scheme in ("https", "wss") and endpoint.uds is None:
        return await asyncio.to_thread(_https_get, endpoint.base_url.rstrip("/") + path, timeout_s)

    async def fetch() -> tuple[int, Any]:
        if endpoint.uds:
            reader, writer = await asyncio.open_unix_connection(endpoint.uds)
        else:
            reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
        try:
            host = parts.netloc or "localhost"
            writer.write(f"GET {prefix}{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            raw = await reader.read(-1)
        finally:
            writer.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body.decode(errors="replace")

    return await asyncio.wait_for(fetch(), timeout_s)


def _https_get(url: str, timeout_s: float) -> tuple[int, Any]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 (https URL of the user's)
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


async def wait_healthy(endpoint: Endpoint, *, timeout_s: float, is_alive: Any = None) -> None:
    """Poll ``GET /health`` until it answers ``{"status": "healthy"}``.

    Args:
        is_alive: optional callable; when it returns False the wait stops early (the server died).

    Raises:
        TimeoutError: not healthy within ``timeout_s`` (message holds the last error seen).
        RuntimeError: ``is_alive`` reported the server gone.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    last: str = "no answer"
    delay = 0.02
    while loop.time() < deadline:
        if is_alive is not None and not is_alive():
            raise RuntimeError("the server process exited before it became healthy")
        try:
            status, body = await http_get_json(endpoint, "/health", timeout_s=min(2.0, timeout_s))
            if status == 200 and isinstance(body, dict) and body.get("status") == "healthy":
                return
            last = f"HTTP {status}: {body!r}"[:200]
        except (TimeoutError, OSError, ValueError, IndexError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)
    raise TimeoutError(f"{endpoint.uds or endpoint.base_url} not healthy within {timeout_s:g}s (last: {last})")
