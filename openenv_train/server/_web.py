"""``/web``: the playground page of ``serve --web`` (an env's action form, reset/step, observation, history).

The page is static (``openenv_train/web/static/playground``) and talks to this server over ``/ws`` like any
client; the dynamic files are ``/web/info.json`` (name, description, whether the env is an MCP env, the state
fields a player must not see: ``Environment.hidden_state_fields``) and
``/web/render?observation=<JSON>`` (``{"html": ...}``: the env's human view of an observation, or null).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from ..web import read_static, redirect
from ._environment import Environment
from ._mcp_environment import MCPEnvironment

__all__ = ["WebRoutes"]


class WebRoutes:
    """Answers ``GET /web/...`` with the playground's files."""

    def __init__(self, env_cls: type[Environment[Any, Any, Any]]) -> None:
        self.env_cls = env_cls
        meta = env_cls.metadata_info()
        self.info = {"name": meta.name, "description": meta.description, "version": meta.version,
                     "mcp": issubclass(env_cls, MCPEnvironment),
                     "hidden_state": sorted(env_cls.hidden_state_fields)}

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
        if name == "render":
            return self.render(target.split("?", 1)[1] if "?" in target else "")
        asset = read_static("playground", name)
        if asset is None:
            return 404, {"detail": f"no playground file {name!r}"}
        return 200, asset

    def render(self, query: str) -> tuple[int, Any]:
        """``{"html": fragment or null}`` of the ``observation`` query parameter (a JSON object)."""
        values = parse_qs(query).get("observation")
        try:
            observation = json.loads(values[-1]) if values else None
        except ValueError as exc:
            return 400, {"detail": f"observation is not valid JSON ({exc}); send /web/render?observation=<JSON object>"}
        if not isinstance(observation, dict):
            return 400, {"detail": "send /web/render?observation=<JSON object> (the observation of a reply)"}
        try:
            fragment = self.env_cls.render_observation(observation)
        except Exception as exc:  # a view is optional: its bug must not break the playground
            return 200, {"html": None, "error": f"{type(exc).__name__}: {exc}"}
        return 200, {"html": fragment if isinstance(fragment, str) else None}
