"""Which :class:`~openenv_train.core.ServerMode` a server runs in, read from its OpenAPI document."""

from __future__ import annotations

from ..core import ServerError, ServerMode
from ..launch import Endpoint, http_get_json

__all__ = ["server_mode"]


async def server_mode(endpoint: Endpoint | str, *, timeout_s: float = 10.0) -> ServerMode:
    """``PRODUCTION`` when the server leaves out ``POST /reset`` (OpenEnv's and ours alike), else ``SIMULATION``.

    Raises:
        ServerError: the server did not answer ``GET /openapi.json`` with a document.
    """
    if isinstance(endpoint, str):
        endpoint = Endpoint(endpoint)
    status, body = await http_get_json(endpoint, "/openapi.json", timeout_s=timeout_s)
    if status != 200 or not isinstance(body, dict) or not isinstance(body.get("paths"), dict):
        raise ServerError(f"HTTP_{status}", f"{endpoint.base_url}/openapi.json answered HTTP {status}, not an OpenAPI document; "
                          "cannot tell the server's mode (is it an OpenEnv server?)")
    return ServerMode.SIMULATION if "/reset" in body["paths"] else ServerMode.PRODUCTION
