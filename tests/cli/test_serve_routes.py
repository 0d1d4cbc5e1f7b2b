"""``openenv-train serve`` of a plain ASGI app (an OpenEnv env folder whose app is its own FastAPI app, as OpenEnv's
``calendar_env``) names the routes that app really defines, read from its router; an app with no router is said to
have unknown routes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_train.server._asgi import app_routes
from tests.compat._app_folder import APP, write_app_folder

from .conftest import ROOT, stop, wait_ready

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

NO_WS = APP[:APP.index('@app.websocket("/ws")')]
"""The calendar app without its ``/ws`` route: HTTP routes only, as OpenEnv's ``calendar_env``."""


def test_the_routes_come_from_the_apps_router() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route, WebSocketRoute

    async def ok(request: object) -> None: ...

    async def ws(socket: object) -> None: ...

    app = Starlette(routes=[Route("/reset", ok, methods=["POST"]), Route("/step", ok, methods=["POST"]),
                            WebSocketRoute("/ws", ws), Mount("/static", routes=[])])
    assert app_routes(app) == "its routes: /reset, /step, /ws (WebSocket), /static (mount)"
    assert app_routes(Starlette()) == "it defines no routes"
    assert app_routes(Starlette(routes=[Route(f"/r{i}", ok) for i in range(20)]), most=3) == (
        "its routes: /r0, /r1, /r2, ... (20 in all)")


def test_an_app_without_a_router_has_unknown_routes() -> None:
    async def app(scope: object, receive: object, send: object) -> None: ...

    assert app_routes(app) == "its routes are unknown: the app exposes no router"


@pytest.mark.timeout(300)
def test_serve_lists_the_routes_the_app_has(tmp_path: Path) -> None:
    folder = write_app_folder(tmp_path / "src", app=NO_WS)
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", str(folder), "--port", "0",
                               "--ready-file", str(ready)], stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        wait_ready(ready, server, timeout_s=90)
        server.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0
        assert server.stderr is not None
        said = server.stderr.read().decode()
        assert "its routes: /openapi.json, /docs, /docs/oauth2-redirect, /redoc, /health, /reset, /step, /state, " \
               "/events, /mcp)" in said, said
        assert "/ws" not in said
    finally:
        stop(server)
