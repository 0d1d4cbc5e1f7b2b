"""The last OpenEnv env-folder shape: an ``openenv.yaml`` app that is a plain FastAPI app with routes of its own.

Served as it is (uvicorn on the loopback port asked for) by ``openenv-train serve``, ``InProcessProvider(PATH)``,
``LocalProcessProvider(PATH)`` and the adapter ``openenv-train import`` writes; our clients drive its ``/ws``, and
its own routes (``/events``, ``/mcp``, ``/reset``...) answer as the app defines them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from openenv_train.client import GenericEnvClient, MCPToolClient
from openenv_train.core import CallToolAction, EnvLoadError, ServerStartError
from openenv_train.envs import load_env_folder, load_env_target
from openenv_train.launch import InProcessProvider, LocalProcessProvider
from openenv_train.server import AsgiApp
from tests.cli.conftest import ROOT, cli, stop, wait_ready
from tests.compat._app_folder import write_app_folder


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_app_folder(tmp_path / "src")


async def _play(base_url: str, provider: object | None = None, **client: object) -> None:
    """One solved episode through our clients, then the app's own routes, all on ``base_url``."""
    async with GenericEnvClient(base_url=base_url, **client) as env:  # type: ignore[arg-type]
        first = await env.reset(seed=1)
        assert first.observation == {"task": "Add the event 'review' on tuesday.", "events": []}
        assert (first.reward, first.done) == (0.0, False)
    async with MCPToolClient(base_url=base_url, **client) as tools:  # type: ignore[arg-type]
        await tools.reset(seed=1)
        assert [t.name for t in await tools.list_tools()] == ["add_event", "list_events"]
        assert await tools.call_tool("add_event", title="standup", day="monday") == {"added": 1}
        solved = await tools.step(CallToolAction(tool_name="add_event", arguments={"title": "review", "day": "tuesday"}))
        assert (solved.reward, solved.done) == (1.0, True)
        assert await tools.call_tool("list_events") == [{"title": "standup", "day": "monday"},
                                                        {"title": "review", "day": "tuesday"}]
        assert (await tools.state())["step_count"] == 4
    headers = {"Authorization": f"Bearer {client['token']}"} if client.get("token") else {}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as http:
        reset = (await http.post("/reset", json={"seed": 2})).json()
        assert reset["observation"]["task"] == "Add the event 'retro' on friday."
        step = (await http.post("/step", json={"action": {"type": "call_tool", "tool_name": "add_event",
                                                          "arguments": {"title": "retro", "day": "friday"}}})).json()
        assert (step["reward"], step["done"]) == (1.0, True)
        assert (await http.get("/events")).json() == {"events": [{"title": "retro", "day": "friday"}]}
        listed = (await http.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"})).json()
        assert listed["id"] == 7 and [t["name"] for t in listed["result"]["tools"]] == ["add_event", "list_events"]


def test_the_folder_loads_as_its_own_app_not_as_an_environment(folder: Path) -> None:
    target = load_env_target(str(folder))
    assert isinstance(target, AsgiApp) and target.name == "cal_app_env" and target.source == str(folder.resolve())
    assert type(target.app).__name__ == "FastAPI"
    with pytest.raises(EnvLoadError, match="plain ASGI app with routes of its own.*openenv-train serve FOLDER"):
        load_env_folder(folder)


def test_an_app_that_is_no_asgi_app_says_what_it_is(tmp_path: Path) -> None:
    folder = write_app_folder(tmp_path, "not_app_env", app="app = 42\n")
    with pytest.raises(EnvLoadError, match="server.app:app is neither an openenv-train Environment class, an OpenEnv "
                                           "create_app app nor an ASGI app"):
        load_env_target(str(folder))


FAILING_STARTUP = """
import contextlib

from fastapi import FastAPI


@contextlib.asynccontextmanager
async def lifespan(app):
    raise RuntimeError("no database")
    yield


app = FastAPI(lifespan=lifespan)
"""


async def test_an_app_whose_startup_fails_is_a_start_error(tmp_path: Path) -> None:
    folder = write_app_folder(tmp_path, "broken_app_env", app=FAILING_STARTUP)
    provider = InProcessProvider(str(folder))
    with pytest.raises(ServerStartError, match="broken_app_env did not start: its startup failed"):
        await provider.start()
    assert not provider.started
    done = cli("serve", str(folder), "--port", "0")
    assert done.returncode == 1 and "did not start: its startup failed" in done.stderr
    assert "RuntimeError: no database" in done.stderr  # the app's own traceback says why


async def test_in_process_provider_serves_the_app_on_loopback(folder: Path) -> None:
    provider = InProcessProvider(str(folder))
    endpoint = await provider.start()
    try:
        assert endpoint.base_url.startswith("http://127.0.0.1:") and endpoint.uds is None
        await _play(endpoint.base_url)
    finally:
        await provider.stop()
    assert not provider.started
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{endpoint.base_url}/health", timeout=5)


async def test_in_process_provider_takes_an_asgi_app_object_and_a_fixed_port(folder: Path) -> None:
    from tests.cli.conftest import free_port

    target = load_env_target(str(folder))
    assert isinstance(target, AsgiApp)
    port = free_port()
    async with InProcessProvider(target.app, port=port) as endpoint:
        assert endpoint.base_url == f"http://127.0.0.1:{port}"
        await _play(endpoint.base_url)
        with pytest.raises(ServerStartError, match="already in use"):
            await InProcessProvider(str(folder), port=port).start()


async def test_local_process_provider_with_a_token(folder: Path) -> None:
    provider = LocalProcessProvider(str(folder), token="s3cret-token", env_vars={"PYTHONPATH": str(ROOT)})
    endpoint = await provider.start()  # waits for /health, which stays open
    try:
        assert provider.alive() and endpoint.base_url.startswith("http://127.0.0.1:")
        await _play(endpoint.base_url, token="s3cret-token")
        async with httpx.AsyncClient(base_url=endpoint.base_url, timeout=30) as http:
            refused = await http.get("/events")
            assert refused.status_code == 401 and "requires a token" in refused.json()["detail"]
            assert (await http.get("/events", headers={"Authorization": "Bearer wrong"})).status_code == 401
            assert (await http.get("/health")).json() == {"status": "healthy"}
    finally:
        await provider.stop()
    assert not provider.alive()


@pytest.mark.timeout(300)
async def test_serve_inside_the_folder_and_stop_with_sigterm(folder: Path, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", "--port", "0", "--ready-file",
                               str(ready)], cwd=folder, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        url = wait_ready(ready, server, timeout_s=90)
        assert url.startswith("http://127.0.0.1:")
        await _play(url)
        server.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0
        assert server.stderr is not None
        said = server.stderr.read().decode()
        assert "serving cal_app_env's own app" in said
        assert "/events, /mcp, /ws (WebSocket))" in said  # the routes the app defines, from its router
    finally:
        stop(server)


async def test_local_process_provider_over_a_unix_socket(folder: Path) -> None:
    provider = LocalProcessProvider(str(folder), transport="unix", env_vars={"PYTHONPATH": str(ROOT)})
    endpoint = await provider.start()
    try:
        assert endpoint.uds is not None and Path(endpoint.uds).is_socket()
        async with MCPToolClient(uds=endpoint.uds) as tools:
            await tools.reset(seed=0)
            assert await tools.call_tool("add_event", title="standup", day="monday") == {"added": 1}
            assert (await tools.state())["events"] == 1
    finally:
        await provider.stop()
    assert not Path(endpoint.uds).exists()


def test_serve_refuses_workers_for_an_app_of_its_own(folder: Path) -> None:
    done = cli("serve", str(folder), "--workers", "2")
    assert done.returncode == 2 and "served by its own app" in done.stderr and "drop --workers" in done.stderr


@pytest.mark.timeout(300)
async def test_import_then_serve_the_copy_and_the_adapter(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "imported"
    done = cli("import", str(folder), "-o", str(out), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "its own FastAPI app with routes of its own, served as it is" in done.stdout
    assert f"openenv-train serve {out / 'cal_app_env'}" in done.stdout
    assert (out / "cal_app_env" / "openenv.yaml").is_file() and (out / "cal_app_env_openenv_train.py").is_file()
    async with InProcessProvider(str(out / "cal_app_env")) as endpoint:
        await _play(endpoint.base_url)
    # the adapter's module:attr serves too, in a real server process
    adapter = LocalProcessProvider("cal_app_env_openenv_train:CalAppEnvAdapter",
                                   env_vars={"PYTHONPATH": os.pathsep.join([str(out), str(ROOT)])})
    endpoint = await adapter.start()
    try:
        await _play(endpoint.base_url)
    finally:
        await adapter.stop()
