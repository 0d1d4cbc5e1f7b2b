"""OpenEnv env folders served and imported by openenv-train, under whichever OpenEnv release is installed.

Folders made by the installed release's own ``openenv init``, and hand-written folders in the shapes of
OpenEnv's repository (``_folders.py``): factory functions, keyword arguments, create_app in helpers,
non-pydantic step results, MCP tools, envs with their own dependencies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import httpx
import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient

from openenv_train.cli._init import render_tree, replacements
from openenv_train.client import GenericEnvClient, MCPToolClient
from openenv_train.launch import InProcessProvider
from tests.cli.conftest import ROOT, cli, stop, wait_ready
from tests.compat._folders import write_folder
from tests.compat._release import DISTRIBUTION, VERSION

OPENENV_CLI = Path(sys.executable).with_name("openenv")


@pytest.fixture(scope="module")
def their_init(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder ``openenv init oe_tpl`` writes: the installed release's own template, rendered as it does.

    (Rendered here rather than through their CLI, which takes 10-20 s to start on a busy machine.)
    """
    from openenv.cli import templates

    folder = tmp_path_factory.mktemp("oe-init") / "oe_tpl"
    values = {**replacements("oe_tpl"), "__ENV_IMAGE_NAME__": "oe_tpl", "__HF_EMOJI__": "x",
              "__HF_COLOR_FROM__": "blue", "__HF_COLOR_TO__": "green"}
    render_tree(Path(templates.__file__).parent / "openenv_env", folder, values)
    return folder


def _serve(args: list[str], cwd: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", *args, "--port", "0",
                               "--ready-file", str(ready)], cwd=cwd, stderr=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    return server, wait_ready(ready, server, timeout_s=90)


@pytest.mark.timeout(600)  # their CLI and fresh Pythons start slowly on a busy machine
async def test_serve_inside_their_init_folder_passes_their_validate_and_client(their_init: Path,
                                                                               tmp_path: Path) -> None:
    server, url = _serve([], their_init, tmp_path)  # `openenv-train serve` with no argument, in the folder
    try:
        done = subprocess.run([str(OPENENV_CLI), "validate", "--url", url, "--timeout", "10",
                               *(["--json"] if VERSION.major > 0 or VERSION.minor >= 10 else [])],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        report = json.loads(done.stdout[done.stdout.find("{"):])
        assert done.returncode == 0 and report["passed"], [c for c in report["criteria"] if not c["passed"]]
        async with OEGenericEnvClient(base_url=url) as env:
            await env.reset()
            result = await env.step({"message": "hello"})
        assert result.observation["echoed_message"] == "hello" and result.reward == pytest.approx(0.5)
    finally:
        stop(server)


@pytest.mark.timeout(600)  # their CLI and fresh Pythons start slowly on a busy machine
def test_import_their_init_folder_then_serve_the_adapter(their_init: Path, tmp_path: Path) -> None:
    out = tmp_path / "imported"
    done = cli("import", str(their_init), "-o", str(out), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "a typed env" in done.stdout and "openenv-train serve oe_tpl_openenv_train:OeTplAdapter" in done.stdout
    with GenericEnvClient(provider=InProcessProvider(str(out / "oe_tpl"))).sync() as env:
        env.reset()
        assert env.step({"message": "four"}).observation == {"echoed_message": "four", "message_length": 4}


async def test_factory_function_with_keyword_arguments(tmp_path: Path) -> None:
    folder = write_folder(tmp_path, "kw_env")
    async with GenericEnvClient(provider=InProcessProvider(str(folder))) as env:
        assert (await env.reset()).observation == {"total": 10}
        result = await env.step({"add": 2})
        assert (result.observation, result.reward, result.done) == ({"total": 12}, 2.0, False)
        assert (await env.state())["step_count"] == 1


async def test_create_app_in_a_helper_with_dataclass_and_dict_results(tmp_path: Path) -> None:
    folder = write_folder(tmp_path, "wrapped_env")
    async with GenericEnvClient(provider=InProcessProvider(str(folder))) as env:
        first = await env.reset(seed=7)
        assert (first.observation, first.metadata) == ({"total": 100}, {"seed": 7})
        result = await env.step({"add": 5})
        assert (result.observation, result.reward, result.metadata) == ({"total": 105}, 1.0, {"step": 1})
        assert (await env.state())["step_count"] == 1


async def test_mcp_env_tools_are_on_our_mcp_route_and_in_steps(tmp_path: Path) -> None:
    folder = write_folder(tmp_path, "tools_env")
    provider = InProcessProvider(str(folder))
    async with MCPToolClient(provider=provider) as env:
        await env.reset()
        assert sorted(t.name for t in await env.list_tools()) == ["add", "shout"]
        assert await env.call_tool("shout", text="hi") == "HI"
        assert await env.call_tool("add", a=2, b=3) == 5
        async with httpx.AsyncClient(base_url=env.endpoint.base_url) as http:
            listed = (await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).json()
            assert sorted(t["name"] for t in listed["result"]["tools"]) == ["add", "shout"]
            assert listed["result"]["tools"][0]["inputSchema"]["properties"]
            called = (await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                    "params": {"name": "add", "arguments": {"a": 1, "b": 1}}})).json()
            assert "2" in json.dumps(called["result"]), called


def _wheel(folder: Path, name: str) -> Path:
    """A minimal pure-Python wheel of ``name`` 1.0 (one module), built by hand so no build backend is needed."""
    dist = name.replace("-", "_")
    path = folder / f"{dist}-1.0-py3-none-any.whl"
    files = {f"{dist}.py": "VALUE = 1\n",
             f"{dist}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{dist}-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{p},,\n" for p in files) + f"{dist}-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for p, text in {**files, f"{dist}-1.0.dist-info/RECORD": record}.items():
            zf.writestr(p, text)
    return path


@pytest.mark.timeout(600)  # their CLI and fresh Pythons start slowly on a busy machine
def test_missing_dependencies_give_the_pip_line_and_install_runs_it(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "src", "needs_env", deps=["oetrain-probe-dep>=1"])
    done = cli("import", str(folder), "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    assert "'needs_env' needs packages" in done.stderr and "-m pip install 'oetrain-probe-dep>=1'" in done.stderr
    assert "--install" in done.stderr and not (tmp_path / "out").exists()
    # --install into a throwaway venv that sees this one's packages (a .pth file), offline from a local wheel
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (next(venv.glob("lib/python*/site-packages")) / "parent.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "oetrain-probe-dep")
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "openenv_train.cli", "import", str(folder), "-o",
                           str(tmp_path / "out"), "--install"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)})
    assert done.returncode == 0, done.stderr
    assert "installed:" in done.stdout and "oetrain-probe-dep" in done.stdout
    assert list(venv.glob("lib/python*/site-packages/oetrain_probe_dep.py"))


@pytest.mark.timeout(600)  # their CLI and fresh Pythons start slowly on a busy machine
def test_a_folder_whose_app_is_no_env_says_what_was_tried(tmp_path: Path) -> None:
    folder = write_folder(tmp_path, "kw_env")
    (folder / "server" / "app.py").write_text("import nothing_like_this_exists\napp = None\n")
    done = cli("import", str(folder), "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    assert "'kw_env'" in done.stderr and "found the app by importing it" in done.stderr
    assert "nothing_like_this_exists" in done.stderr and "to check" in done.stderr
    served = cli("serve", str(folder), "--port", "0")
    assert served.returncode == 2 and "cannot load the app" in served.stderr and "pip install -e" in served.stderr


def test_release_under_test() -> None:
    assert DISTRIBUTION in ("openenv", "openenv-core")
