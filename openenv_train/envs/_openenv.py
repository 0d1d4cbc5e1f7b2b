"""OpenEnv environments served by openenv-train: env folders (``openenv.yaml``) and OpenEnv FastAPI apps.

An OpenEnv folder's ``app`` (``server.app:app``) is either our Environment class (``openenv-train init``
folders) or a FastAPI app built by OpenEnv's ``create_app``. For the latter the env factory and its action
and observation classes are found in the app itself (the routes' handlers hold OpenEnv's server object), so
``create_app`` may be given a class, a factory function, keyword arguments, or be wrapped in helpers. The
wrapping Environment converts their observations (pydantic models, dataclasses, dicts) to ours and, for
OpenEnv MCP envs, lists and calls their tools, so they appear in our ``/mcp`` ``tools/list`` too. Any other ASGI
app (a plain FastAPI app with routes of its own) is served as it is (``load_env_folder_target``).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
from pathlib import Path
from typing import Any, Union

import yaml
from pydantic import BaseModel, ConfigDict, create_model

from ..core import (
    CallToolObservation,
    EnvLoadError,
    ListToolsObservation,
    Observation,
    State,
    Tool,
    ToolError,
    ToolErrorType,
)
from ..server import AsgiApp, Environment, MCPEnvironment, ToolCallFailed, is_asgi_app

__all__ = [
    "OpenEnvObservation",
    "find_openenv_server",
    "load_env_folder",
    "load_env_folder_target",
    "wrap_openenv_app",
    "wrap_openenv_env",
]

_ENVELOPE = ("done", "reward", "metadata")


class OpenEnvObservation(Observation):
    """An observation of an OpenEnv env that is not a pydantic model: its fields kept as they come."""

    model_config = ConfigDict(extra="allow")


def find_openenv_server(app: Any) -> Any:
    """OpenEnv's server object (``_env_factory``, ``action_cls``, ``observation_cls``) behind a FastAPI app.

    Raises:
        EnvLoadError: the app has no route handler that holds one (not an OpenEnv ``create_app`` app).
    """
    seen: set[int] = set()

    def search(value: Any, depth: int) -> Any:
        if id(value) in seen or depth > 3:
            return None
        seen.add(id(value))
        if all(hasattr(value, a) for a in ("_env_factory", "action_cls", "observation_cls")):
            return value
        for cell in getattr(value, "__closure__", None) or ():
            try:
                found = search(cell.cell_contents, depth + 1)
            except ValueError:  # an empty cell
                continue
            if found is not None:
                return found
        bound = getattr(value, "__self__", None)
        return search(bound, depth + 1) if bound is not None else None

    for route in getattr(app, "routes", None) or ():
        for attr in ("endpoint", "app"):
            found = search(getattr(route, attr, None), 0)
            if found is not None:
                return found
    raise EnvLoadError(f"{type(app).__name__} object is not an app made by OpenEnv's create_app "
                       "(no route handler holds an env factory)")


def _as_dict(obs: Any) -> dict[str, Any]:
    if isinstance(obs, BaseModel):
        return obs.model_dump()
    if dataclasses.is_dataclass(obs) and not isinstance(obs, type):
        return dataclasses.asdict(obs)
    if isinstance(obs, dict):
        return dict(obs)
    if hasattr(obs, "__dict__"):
        return {k: v for k, v in vars(obs).items() if not k.startswith("_")}
    raise TypeError(f"the env returned {type(obs).__name__}, not an observation (a pydantic model, dataclass or dict)")


class _Converter:
    """Their observation classes to ours (same fields on our Observation base), made once per class."""

    def __init__(self) -> None:
        self._types: dict[type, type[Observation]] = {}

    def type_for(self, cls: Any) -> type[Observation]:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            return OpenEnvObservation
        if cls not in self._types:
            fields = {k: (f.annotation, f) for k, f in cls.model_fields.items() if k not in _ENVELOPE}
            self._types[cls] = create_model(cls.__name__, __base__=Observation, **fields)  # type: ignore[call-overload]
        return self._types[cls]

    def convert(self, obs: Any) -> Observation:
        data = _as_dict(obs)
        envelope = {"done": bool(data.pop("done", False)), "reward": data.pop("reward", None),
                    "metadata": data.pop("metadata", None) or {}}
        target = self.type_for(type(obs))
        try:
            return target.model_validate({**data, **envelope})
        except ValueError:  # a field that does not round-trip: keep the values as they are
            return OpenEnvObservation.model_validate({**data, **envelope})


def _accepted(method: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments ``method`` takes (OpenEnv passes reset only those, and so do we)."""
    params = inspect.signature(method).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return kwargs
    return {k: v for k, v in kwargs.items() if k in params}


def _state(value: Any) -> State:
    return State.model_validate(_as_dict(value))


class _Wrapped:
    """Methods shared by both adapter bases; ``_factory``/``_converter`` are set on each made class."""

    _factory: Any
    _converter: _Converter
    blocking = True  # OpenEnv envs are synchronous and may block: run them in worker threads

    def __init__(self) -> None:
        self._env = type(self)._factory()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None, **options: Any) -> Any:
        kwargs = {k: v for k, v in {"seed": seed, "episode_id": episode_id, **options}.items() if v is not None}
        return self._converter.convert(self._env.reset(**_accepted(self._env.reset, kwargs)))

    def step(self, action: Any) -> Any:
        return self._converter.convert(self._env.step(action))

    @property
    def state(self) -> State:
        return _state(self._env.state)

    def close(self) -> None:
        close = getattr(self._env, "close", None)
        if callable(close):
            close()


class _WrappedMCP(_Wrapped):
    """An OpenEnv MCP env: their list_tools/call_tool steps also answer our ``/mcp`` JSON-RPC."""

    _list_action: Any
    _call_action: Any

    def step(self, action: Any) -> Any:
        data = _as_dict(self._env.step(action))
        envelope: dict[str, Any] = {"done": bool(data.get("done", False)), "reward": data.get("reward"),
                    "metadata": data.get("metadata") or {}}
        if "tools" in data:
            tools = [_tool(t) for t in data["tools"]]
            return ListToolsObservation(tools=tools, **envelope)
        if "tool_name" in data:
            error = data.get("error")
            return CallToolObservation(tool_name=data["tool_name"], result=_plain(data.get("result")),
                                       error=_tool_error(error) if error else None, **envelope)
        return self._converter.convert(data)

    def list_tools(self) -> list[Tool]:
        obs = self._env.step(self._list_action())
        return [_tool(t) for t in _as_dict(obs).get("tools", [])]

    def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        data = _as_dict(self._env.step(self._call_action(tool_name=tool_name, arguments=arguments)))
        error = data.get("error")
        if error:
            raise ToolCallFailed(_tool_error(error))
        result = _plain(data.get("result"))
        if isinstance(result, dict) and "data" in result:
            return result["data"]
        return getattr(result, "data", result)


def _plain(value: Any) -> Any:
    """A tool result as JSON-able data (FastMCP's result objects become dicts)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _tool(raw: Any) -> Tool:
    t = _as_dict(raw)
    return Tool(name=t["name"], description=t.get("description") or "",
                input_schema=t.get("input_schema") or t.get("inputSchema") or {})


def _tool_error(error: Any) -> ToolError:
    data = _as_dict(error) if not isinstance(error, str) else {"message": error}
    kind = str(getattr(data.get("error_type"), "value", data.get("error_type") or "execution_error"))
    known = {e.value for e in ToolErrorType}
    return ToolError(error_type=ToolErrorType(kind if kind in known else "execution_error"),
                     message=str(data.get("message", error)))


def wrap_openenv_env(factory: Any, action_cls: Any, observation_cls: Any, *, name: str) -> type[Environment[Any, Any, Any]]:
    """An Environment class of ours that builds ``factory()`` (an OpenEnv env) per session and serves it."""
    converter = _Converter()
    namespace: dict[str, Any] = {"__doc__": f"{name} (an OpenEnv environment) served by openenv-train.",
                                 "name": name, "_factory": staticmethod(factory), "_converter": converter,
                                 "state_type": State, "__module__": __name__}
    if getattr(action_cls, "__name__", "") == "CallToolAction":  # an MCP env takes list_tools steps as well
        list_action = sys.modules[action_cls.__module__].ListToolsAction
        namespace.update(action_type=Union[list_action, action_cls],  # noqa: UP007
                         _list_action=list_action, _call_action=action_cls)
        bases: tuple[type, ...] = (_WrappedMCP, MCPEnvironment)
    else:
        namespace.update(action_type=action_cls, observation_type=converter.type_for(observation_cls))
        bases = (_Wrapped, Environment)
    cls_name = "".join(p.capitalize() for p in name.replace("-", "_").split("_")) + "Adapter"
    return type(cls_name, bases, namespace)


def wrap_openenv_app(app: Any, *, name: str | None = None) -> type[Environment[Any, Any, Any]]:
    """An Environment class of ours serving the env behind an OpenEnv FastAPI ``app``."""
    server = find_openenv_server(app)
    factory = server._env_factory
    label = name or getattr(factory, "__name__", None) or "openenv_env"
    return wrap_openenv_env(factory, server.action_cls, server.observation_cls, name=label)


def _import_app(folder: Path, module: str, attr: str, package: str) -> Any:
    """Import ``module:attr`` of an env folder as the package ``package`` (relative imports) or top-level."""
    candidates = [module]
    for root in (folder, folder.parent):  # the parent last, so that it ends up first on sys.path
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
    if package.isidentifier():
        candidates.insert(0, f"{package}.{module}")
    errors = []
    for qualified in candidates:
        try:
            return getattr(importlib.import_module(qualified), attr)
        except ImportError as exc:
            errors.append(f"import {qualified}: {exc}")
        except AttributeError:
            errors.append(f"{qualified} has no {attr!r}")
    raise EnvLoadError(f"cannot load the app of {folder} ({'; '.join(errors)}); install the env's dependencies "
                       f"(pip install -e {folder}) or fix openenv.yaml's 'app'")


def _folder_app(path: str | Path) -> tuple[Path, str, str, Any]:
    """The env folder, its name, ``module:attr`` and the app its ``openenv.yaml`` names, imported."""
    folder = Path(path).resolve()
    manifest_path = folder / "openenv.yaml"
    if not manifest_path.is_file():
        raise EnvLoadError(f"{folder} has no openenv.yaml; pass an env folder, a catalog name or module:Class")
    try:
        manifest = yaml.safe_load(manifest_path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise EnvLoadError(f"{manifest_path} is not valid YAML: {exc}") from None
    module, _, attr = str(manifest.get("app") or "server.app:app").partition(":")
    name = str(manifest.get("name") or folder.name)
    app = _import_app(folder, module, attr or "app", folder.name)
    return folder, name, f"{module}:{attr or 'app'}", app


def load_env_folder_target(path: str | Path) -> type[Environment[Any, Any, Any]] | AsgiApp:
    """What serves the env folder at ``path``: an Environment class, or the folder's own ASGI app.

    The app ``openenv.yaml`` names is our Environment class (``openenv-train init`` folders), an OpenEnv
    ``create_app`` app (wrapped in an Environment of ours), or any other ASGI app, such as a plain FastAPI app with
    routes of its own (``runtime: fastapi``), returned as an :class:`~openenv_train.server.AsgiApp` to be served as
    it is (:class:`~openenv_train.server.AsgiServer`).

    Raises:
        EnvLoadError: no manifest, an app that does not import, or an app that is none of these.
    """
    folder, name, where, app = _folder_app(path)
    if isinstance(app, type) and issubclass(app, Environment):
        return app
    try:
        return wrap_openenv_app(app, name=name)
    except EnvLoadError as exc:
        if is_asgi_app(app):
            return AsgiApp(app, name=name, source=str(folder))
        raise EnvLoadError(f"{folder}: openenv.yaml's app {where} is neither an openenv-train Environment class, an "
                           f"OpenEnv create_app app nor an ASGI app ({exc})") from None


def load_env_folder(path: str | Path) -> type[Environment[Any, Any, Any]]:
    """The Environment class that serves the env folder at ``path`` (its ``openenv.yaml`` names the app).

    Raises:
        EnvLoadError: no manifest, an app that does not import, or an app that is no env (a plain ASGI app with
            routes of its own is served as it is: :func:`load_env_folder_target`); the message says what was tried
            and what to do.
    """
    target = load_env_folder_target(path)
    if isinstance(target, AsgiApp):
        raise EnvLoadError(f"{target.source}: openenv.yaml's app is a plain ASGI app with routes of its own, not an "
                           "Environment; serve it as it is: 'openenv-train serve FOLDER', InProcessProvider(FOLDER) or "
                           "LocalProcessProvider(FOLDER)")
    return target
