"""``openenv-train import SOURCE``: bring an OpenEnv env folder (or Space) or a folder of Harbor tasks in.

- An OpenEnv env folder (``openenv.yaml`` + ``server/app.py`` calling OpenEnv's ``create_app``, in any form) is
  copied unchanged next to a generated adapter module whose Environment wraps theirs (``load_env_folder_target``),
  so openenv-train's server, clients and pool serve it. A folder whose app is a plain FastAPI app with routes of its
  own (``runtime: fastapi``, no ``create_app``) is copied the same way; its adapter holds the app, served as it is.
  Dependencies its ``pyproject.toml`` declares and this Python lacks are named with the exact ``pip install``
  line (``--install`` runs it).
- A Space (``https://huggingface.co/spaces/USER/NAME`` or any git URL) is cloned first, when reachable.
- A Harbor task folder, or a folder of them, becomes a dataset folder of checked task copies plus
  ``tasks.json``, ready for ``openenv-train harbor run DIR``.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from ._app import app, fail
from ._init import TEMPLATES, render_tree, replacements

__all__ = ["find_create_app"]

_IGNORE = shutil.ignore_patterns("__pycache__", ".git", "*.egg-info", ".venv")


def find_create_app(source: str) -> dict[str, str]:
    """The names given to ``create_app(env, action_cls, observation_cls, ...)`` in an OpenEnv ``server/app.py``.

    Example:
        >>> find_create_app("app = create_app(MyEnv, MyAction, MyObservation, env_name='x')")
        {'factory': 'MyEnv', 'action': 'MyAction', 'observation': 'MyObservation'}
    """
    keys = ("factory", "action", "observation")
    aliases = {"env": "factory", "action_cls": "action", "observation_cls": "observation"}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "create_app", "create_fastapi_app"):
            found = {key: arg.id for key, arg in zip(keys, node.args, strict=False) if isinstance(arg, ast.Name)}
            found.update({aliases[k.arg]: k.value.id for k in node.keywords
                          if k.arg in aliases and isinstance(k.value, ast.Name)})
            if set(found) == set(keys):
                return found
    raise ValueError("server/app.py has no create_app(EnvClass, ActionClass, ObservationClass, ...) call with plain "
                     "names; write the adapter by hand (see 'openenv-train import --help')")


def _clone(url: str, into: Path) -> Path:
    target = into / url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    try:
        subprocess.run(["git", "clone", "--depth", "1", url, str(target)], check=True, capture_output=True, text=True,
                       timeout=120, env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin:/usr/local/bin"})
    except FileNotFoundError:
        raise ValueError("git is not installed; install git or clone the Space yourself and import the folder") from None
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()[-1:] or [""]
        raise ValueError(f"cannot clone {url} ({detail[0]}); check the URL and the network, or clone it yourself and "
                         "import the folder") from None
    return target


_CHECK = """
import json, sys
sys.path.insert(0, sys.argv[1])
from openenv_train.server import AsgiApp, MCPEnvironment
cls = getattr(__import__(sys.argv[2]), sys.argv[3])
asgi = isinstance(cls, AsgiApp)
print(json.dumps({"class": type(cls.app).__name__ if asgi else cls.__qualname__, "asgi": asgi,
                  "mcp": not asgi and issubclass(cls, MCPEnvironment)}))
"""


def _static_names(app_file: Path) -> str:
    """What static parsing of the app file found, for the report (the app is found by importing it)."""
    try:
        names = find_create_app(app_file.read_text())
    except (ValueError, SyntaxError):
        return f"{app_file.name} has no create_app(Env, Action, Observation) call with plain names; found the app by importing it"
    return f"create_app({names['factory']}, {names['action']}, {names['observation']}) in {app_file.name}"


def _check_adapter(name: str, out: Path, adapter: str, cls: str, tried: str) -> dict[str, Any]:
    """Import the written adapter in a fresh Python; a failure says what was tried and what to do."""
    import os
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(out), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _CHECK, str(out), adapter, cls], capture_output=True, text=True,
                          env=env, timeout=300)
    if done.returncode != 0:
        tail = "\n    ".join(done.stderr.strip().splitlines()[-4:])
        raise ValueError(f"the OpenEnv env {name!r} was copied to {out / name} but does not load: {tried}; then "
                         f"importing its app failed:\n    {tail}\nfix the env or install what it imports, then run "
                         f"'cd {out} && PYTHONPATH=. python -c \"import {adapter}\"' to check")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _import_env(folder: Path, out: Path, install: bool = False) -> list[str]:
    from ._env_deps import install_line, missing_requirements, pip_install

    manifest = yaml.safe_load((folder / "openenv.yaml").read_text()) or {}
    name = str(manifest.get("name", ""))
    if not name.isidentifier():
        raise ValueError(f"{folder / 'openenv.yaml'}: 'name' must be the env's package name, got {name!r}")
    module = str(manifest.get("app", "server.app:app")).partition(":")[0]
    app_file = folder / (module.replace(".", "/") + ".py")
    if not app_file.is_file():
        raise ValueError(f"{app_file} not found (openenv.yaml app: {manifest.get('app')!r})")
    lines = []
    missing = missing_requirements(folder)
    if missing and not install:
        raise ValueError(f"the OpenEnv env {name!r} needs packages this Python lacks ({folder / 'pyproject.toml'}): "
                         f"{', '.join(missing)}; install them with\n    {install_line(missing)}\nor rerun with --install")
    if missing:
        pip_install(missing)
        lines.append(f"installed: {install_line(missing)}")
    out.mkdir(parents=True, exist_ok=True)
    if (out / name).exists():
        raise ValueError(f"{out / name} already exists; pick another -o folder")
    shutil.copytree(folder, out / name, ignore=_IGNORE)
    adapter = f"{name}_openenv_train"
    values = {"__ADAPTER_MODULE__": adapter, **replacements(name)}
    rendered = render_tree(TEMPLATES / "import", out, values)
    rendered[0].rename(out / f"{adapter}.py")
    cls = replacements(name)["__ENV_CLASS_NAME__"] + "Adapter"
    info = _check_adapter(name, out, adapter, cls, _static_names(app_file))
    if info.get("asgi"):
        return [*lines, f"imported the OpenEnv env {name!r} into {out}: its own {info['class']} app with routes of its "
                        "own, served as it is (under uvicorn)",
                f"serve: openenv-train serve {out / name}   (or: cd {out} && PYTHONPATH=. openenv-train serve "
                f"{adapter}:{cls})",
                f"use in code: InProcessProvider('{out / name}') or env='{out / name}'"]
    kind = "an MCP env (its tools are listed on /mcp and in list_tools steps)" if info["mcp"] else "a typed env"
    return [*lines, f"imported the OpenEnv env {name!r} into {out}: {kind}",
            f"serve: cd {out} && PYTHONPATH=. openenv-train serve {adapter}:{cls}   (or: openenv-train serve {out / name})",
            f"use in code: env='{adapter}:{cls}' (with {out} on PYTHONPATH)"]


def _import_tasks(source: Path, out: Path) -> list[str]:
    from ..harbor import TaskError, find_tasks, load_task

    tasks, problems = [], []
    for path in find_tasks([source]):
        try:
            tasks.append(load_task(path))
        except TaskError as exc:
            problems.append(f"{path.name}: {exc}")
    if problems:
        raise ValueError("these task folders are broken (nothing was written):\n  " + "\n  ".join(problems))
    out.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = []
    for task in tasks:
        target = out / task.path.name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(task.path, target, ignore=_IGNORE)
        entries.append({"name": task.name, "path": task.path.name, "checksum": task.checksum,
                        "has_solution": (task.path / "solution" / "solve.sh").is_file(), "warnings": list(task.warnings)})
    (out / "tasks.json").write_text(json.dumps({"kind": "harbor-tasks", "source": str(source), "tasks": entries}, indent=2))
    return [f"imported {len(entries)} Harbor task(s) into {out} (manifest: {out / 'tasks.json'})",
            f"run: openenv-train harbor run {out} -o runs/tasks --agent oracle"]


@app.command("import")
def import_(
    source: Annotated[str, typer.Argument(help="OpenEnv env folder, Space / git URL, or Harbor task folder(s).")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Folder to write (default: ./NAME_import).")] = None,
    install: Annotated[bool, typer.Option("--install", help="pip-install the env's missing dependencies (its "
                                                            "pyproject.toml) into this Python first.")] = False,
) -> None:
    """Import an OpenEnv environment (served through a generated adapter) or Harbor tasks (as a dataset folder).

    Exit status 0 on success, 1 when the source cannot be read or cloned, 2 when it is not a known kind.
    """
    workdir = Path(tempfile.mkdtemp(prefix="openenv-train-import-"))
    try:
        try:
            folder = _clone(source, workdir) if "://" in source or source.startswith("git@") else Path(source)
        except ValueError as exc:
            raise fail(str(exc)) from None
        if not folder.is_dir():
            raise fail(f"{source} is not a folder nor a URL", code=2)
        out = output or Path(f"{folder.resolve().name}_import")
        try:
            if (folder / "openenv.yaml").is_file():
                lines = _import_env(folder, out, install)
            elif (folder / "task.toml").is_file() or any(folder.glob("*/task.toml")):
                lines = _import_tasks(folder, out)
            else:
                raise fail(f"{source} is neither an OpenEnv env folder (openenv.yaml) nor Harbor task(s) (task.toml)",
                           code=2)
        except (ValueError, OSError, SyntaxError, yaml.YAMLError) as exc:
            raise fail(str(exc)) from None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for line in lines:
        typer.echo(line)
