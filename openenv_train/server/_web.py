"""``/web``: the playground page of ``serve --web`` (an env's action form, reset/step, observation, history).

The page is static (``openenv_train/web/static/playground``) and talks to this server over ``/ws`` like any
client; the only dynamic file is ``/web/info.json`` (name, description, whether the env is an MCP env).
"""

from __future__ import annotations

from typing import Any

from ..web import read_static, redirect
from ._environment import Environment
from ._mcp_environment import MCPEnvironment

__all__ = ["WebRoutes"]


class WebRoutes:
    """Answers ``GET /web/...`` with the playground's files."""

    def __init__(self, env_cls: type[Environment[Any, Any, Any]]) -> None:
        meta = env_cls.metadata_info()
        self.info = {"name": meta.name, "description": meta.description, "version": meta.version,
                     "mcp": issubclass(env_cls, MCPEnvironment)}

    def __call__(self, method: str, target: str) -> tuple[int, Any]:
        """Route one request; ``target`` is the raw request target (path and query)."""
        if method not in ("GET", "HEAD"):
            return 405, {"detail": "Method Not Allowed: the playground only serves GET"}
        path = target.split("?", 1)[0]
        if path == "/web":  # relative asset and /ws URLs need the trailing slash
            return 308, redirect("web/")
        name = path[len("/web/"):]
        if name == "info.json":
            return 200, self.info
        asset = read_static("playground", name)
        if asset is None:
            return 404, {"detail": f"no playground file {name!r}"}
        return 200, asset
