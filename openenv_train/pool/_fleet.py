"""Env server fleets: episodes balanced over several running servers, with per-server capacity and health.

The driver owns the fleet: it picks a server for each episode it dispatches (least loaded, relative to the
server's capacity), takes a server out of rotation when an episode on it breaks the way a dead server breaks
it, and a background thread probes ``/health`` of servers out of rotation so one that comes back is used
again. Actors only connect where they are told (each keeps idle sessions per server URL).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Fleet", "ServerStats", "fleet_urls", "published_capacity"]

_URL_PREFIXES = ("http://", "https://", "ws://", "wss://")
#: Errors of an attempt that mean its server is gone or refusing sessions (the server is probed before reuse).
SERVER_ERRORS = frozenset({"ConnectionLost", "ConnectTimeout", "SessionFailed", "ConnectionRefusedError",
                           "ConnectionResetError", "OSError", "ServerBusy", "InvalidStatus", "TimeoutError"})


def fleet_urls(env: str | Sequence[str]) -> list[str] | None:
    """The server URLs of a fleet, or None when ``env`` names one env (a catalog name or a single URL).

    A fleet is a list of URLs, ``"URL1,URL2,..."``, or the path of a file with one URL a line (``#`` comments).

    Raises:
        ValueError: an entry is not an ``http(s)://`` or ``ws(s)://`` URL, or the fleet is empty.

    >>> fleet_urls("http://a:8000,http://b:8000")
    ['http://a:8000', 'http://b:8000']
    >>> fleet_urls("wordle") is None, fleet_urls("http://a:8000") is None
    (True, True)
    """
    if isinstance(env, str):
        if "," in env:
            urls = [u.strip() for u in env.split(",") if u.strip()]
        elif not env.startswith(_URL_PREFIXES) and os.path.isfile(env):
            with open(env, encoding="utf-8") as f:
                urls = [line.split("#", 1)[0].strip() for line in f]
            urls = [u for u in urls if u]
            if not urls:
                raise ValueError(f"the fleet file {env} lists no server URLs (one http(s):// URL a line)")
        else:
            return None
    else:
        urls = [str(u).strip() for u in env]
    bad = [u for u in urls if not u.startswith(_URL_PREFIXES)]
    if bad or not urls:
        raise ValueError(f"a fleet is a list of env server URLs (http(s):// or ws(s)://); got {bad or urls!r}")
    if len(set(urls)) != len(urls):
        raise ValueError(f"a fleet lists each server once; {urls!r} repeats one")
    return urls


def published_capacity(metadata: Any) -> int | None:
    """The session capacity a server publishes in its ``/metadata`` (``max_sessions`` or ``max_concurrent_envs``).

    >>> published_capacity({"name": "x", "max_sessions": 16}), published_capacity({"name": "x"})
    (16, None)
    """
    if not isinstance(metadata, dict):
        return None
    for key in ("max_sessions", "max_concurrent_envs"):
        value = metadata.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


@dataclass
class ServerStats:
    """One fleet server: where it is, its capacity, its live load and what happened on it."""

    url: str
    capacity: int | None = None
    """Sessions it takes at once (None: no cap beyond the pool's)."""
    load: int = 0
    up: bool = True
    episodes: int = 0
    """Episodes that finished on it (their final attempt)."""
    ok: int = 0
    failed_attempts: int = 0
    """Attempts on it that broke (retried elsewhere or failed)."""
    outages: int = 0
    """Times it was taken out of rotation."""
    down_since: float | None = None

    def summary(self) -> dict[str, Any]:
        """Plain numbers, for metrics."""
        return {"up": self.up, "capacity": self.capacity, "load": self.load, "episodes": self.episodes,
                "ok": self.ok, "failed_attempts": self.failed_attempts, "outages": self.outages}


class Fleet:
    """The servers of a fleet, their load and health, as the driver sees them.

    Args:
        urls: the servers.
        capacity: sessions per server; None reads each server's ``/metadata`` (no cap when it publishes none).
        token: the fleet's token (``Authorization: Bearer``), sent to every server; None sends none.
        probe_s: how often servers out of rotation are probed (``GET /health``).
    """

    def __init__(self, urls: Sequence[str], *, capacity: int | None = None, token: str | None = None,
                 probe_s: float = 0.25) -> None:
        self.servers = [ServerStats(url, capacity) for url in urls]
        self.by_url = {s.url: s for s in self.servers}
        # The clients' own default: a fleet started with $OPENENV_TRAIN_TOKEN set shares that token.
        self.token = (os.environ.get("OPENENV_TRAIN_TOKEN", "").strip() if token is None else token) or None
        self.probe_s, self._capacity = probe_s, capacity
        self.name: str | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Fleet:
        """Read capacities (and the env's name) from ``/metadata``; servers that do not answer start out of rotation."""
        for server in self.servers:
            try:
                metadata = self._get(server.url, "/metadata", timeout_s=10.0)
            except urllib.error.HTTPError as exc:
                if exc.code == 401:
                    raise PermissionError(
                        f"the fleet server {server.url} requires a token and the pool sent "
                        f"{'one it refused' if self.token else 'none'}: set PoolConfig(env_token=...) to the "
                        "servers' --token-file contents (or $OPENENV_TRAIN_TOKEN)") from None
                self._down(server)
                continue
            except (OSError, ValueError):
                self._down(server)
                continue
            self.name = self.name or (metadata.get("name") if isinstance(metadata, dict) else None)
            if self._capacity is None:
                server.capacity = published_capacity(metadata)
        self._thread = threading.Thread(target=self._probe_loop, name="fleet-probe", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop probing."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def pick(self) -> ServerStats | None:
        """The least loaded server in rotation with a free session, or None."""
        best, best_fill = None, 2.0
        for server in self.servers:
            if not server.up or (server.capacity is not None and server.load >= server.capacity):
                continue
            fill = server.load / server.capacity if server.capacity else server.load / 1e6
            if fill < best_fill:
                best, best_fill = server, fill
        return best

    @property
    def any_up(self) -> bool:
        return any(s.up for s in self.servers)

    def settle(self, url: str | None, outcome: dict[str, Any], *, final: bool) -> None:
        """Count an attempt that ran on ``url``; one that broke like a dead server takes it out of rotation."""
        server = self.by_url.get(url or "")
        if server is None:
            return
        server.load -= 1
        if outcome.get("status") == "ok":
            server.episodes += final
            server.ok += final
            return
        error = (outcome.get("error") or {}).get("type")
        if outcome.get("status") == "retry" or error in SERVER_ERRORS:
            server.failed_attempts += 1
            if error in SERVER_ERRORS:
                self._down(server)
        if final:
            server.episodes += 1

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per-server metrics, by URL."""
        return {s.url: s.summary() for s in self.servers}

    # -- health ----------------------------------------------------------------------------------------
    def _down(self, server: ServerStats) -> None:
        if server.up:
            server.up, server.down_since = False, time.monotonic()
            server.outages += 1
        self._wake.set()

    def _probe_loop(self) -> None:
        while not self._stop.is_set():
            for server in [s for s in self.servers if not s.up]:
                try:
                    healthy = self._get(server.url, "/health", timeout_s=2.0).get("status") == "healthy"
                except (OSError, ValueError, AttributeError):
                    healthy = False
                if healthy:
                    server.up, server.down_since = True, None
            if all(s.up for s in self.servers):
                self._wake.wait()
                self._wake.clear()
            else:
                self._stop.wait(self.probe_s)

    def _get(self, url: str, path: str, *, timeout_s: float) -> Any:
        base = url.rstrip("/")
        base = base[: -len("/ws")] if base.endswith("/ws") else base
        base = "http" + base[2:] if base.startswith("ws") else base
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        request = urllib.request.Request(base + path, headers=headers)
        with _OPENER.open(request, timeout=timeout_s) as response:
            return json.loads(response.read())


# Fleet servers are reached directly (a proxy of the environment would stand between the pool and them).
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
