"""One env server per (env, mode) for this process, shared by every SkyRL env instance (one session each).

SkyRL builds an env object per trajectory; starting a server subprocess for each would cost seconds, so
the first instance of a catalog env starts it and later ones open sessions on it. A URL is used as is.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Literal

from ...client import Endpoint
from ...launch import LocalProcessProvider
from ...loops import run_on_loop
from ...pool import is_url
from ._actions import ActionFormat, discover_format

__all__ = ["SharedServer", "shared_server", "shutdown_servers"]


@dataclass
class SharedServer:
    """A live env server and the action format discovered on it."""

    endpoint: Endpoint
    format: ActionFormat
    provider: LocalProcessProvider | None


_servers: dict[tuple[str, str, str | None], SharedServer] = {}
_lock = threading.Lock()


def _on_loop(coro: Any, timeout_s: float) -> Any:
    return run_on_loop(coro, timeout_s)


def shared_server(env: str, *, mode: Literal["auto", "text", "json", "mcp"] = "auto", text_field: str | None = None,
                  max_sessions: int = 256, startup_timeout_s: float = 60.0) -> SharedServer:
    """The server of ``env`` (a catalog name, ``module:Class`` or URL), started on first use."""
    key = (env, mode, text_field)
    with _lock:
        found = _servers.get(key)
        if found is not None and (found.provider is None or found.provider.alive()):
            return found
        provider = None
        if is_url(env):
            endpoint = Endpoint(env)
        else:
            provider = LocalProcessProvider(env, max_sessions=max_sessions, startup_timeout_s=startup_timeout_s)
            endpoint = _on_loop(provider.start(), startup_timeout_s + 10)
        try:
            server = SharedServer(endpoint, discover_format(endpoint, mode, text_field=text_field), provider)
        except BaseException:
            if provider is not None:
                _on_loop(provider.stop(), 30)
            raise
        _servers[key] = server
        return server


def shutdown_servers() -> None:
    """Stop every server started here (they also exit with this process)."""
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        if server.provider is not None:
            _on_loop(server.provider.stop(), 30)
