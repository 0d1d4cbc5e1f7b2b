"""Hand-written OpenEnv env folders in the shapes OpenEnv's repository holds (our own minimal code).

- ``kw_env``: ``create_app(env=make_env, action_cls=..., observation_cls=..., ...)`` with a factory function
  and keyword arguments;
- ``wrapped_env``: ``create_app`` inside a helper function, a ``functools.partial`` factory, and steps that
  return dataclasses and dicts, not pydantic models;
- ``tools_env``: an MCP env (FastMCP tools) served with ``CallToolAction``/``CallToolObservation``;
- ``needs_env``: an env whose ``pyproject.toml`` declares a package this Python lacks.
"""

from __future__ import annotations

from pathlib import Path

MODELS = '''
from openenv.core.env_server.types import Action, Observation


class CountAction(Action):
    add: int = 1


class CountObservation(Observation):
    total: int = 0
'''

KW_ENV = '''
import uuid

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

from ..models import CountAction, CountObservation


class KwEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, start: int) -> None:
        super().__init__()
        self.start = start
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self.total = start

    def reset(self, seed=None, episode_id=None, **kwargs):
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        self.total = self.start
        return CountObservation(total=self.total, reward=0.0, done=False)

    def step(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        self.total += action.add
        return CountObservation(total=self.total, reward=float(action.add), done=self.total >= self.start + 3)

    @property
    def state(self):
        return self._state
'''

KW_APP = '''
from openenv.core.env_server.http_server import create_app

from ..models import CountAction, CountObservation
from .kw_environment import KwEnvironment


def make_env():
    return KwEnvironment(start=10)


app = create_app(env=make_env, action_cls=CountAction, observation_cls=CountObservation, env_name="kw_env",
                 max_concurrent_envs=8)
'''

WRAPPED_ENV = '''
import dataclasses
import uuid
from typing import Any


@dataclasses.dataclass
class Reading:
    total: int
    reward: float
    done: bool
    metadata: dict


class WrappedEnvironment:
    """Not even OpenEnv's Environment class: plain methods returning dataclasses and dicts."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, start: int = 0) -> None:
        self.start = start
        self.total = start
        self.steps = 0
        self.episode_id = ""

    def reset(self, seed=None, episode_id=None, **kwargs: Any):
        self.total, self.steps, self.episode_id = self.start, 0, episode_id or str(uuid.uuid4())
        return {"total": self.total, "reward": 0.0, "done": False, "metadata": {"seed": seed}}

    def step(self, action, **kwargs: Any):
        self.steps += 1
        self.total += action.add
        return Reading(total=self.total, reward=1.0, done=False, metadata={"step": self.steps})

    @property
    def state(self):
        return {"episode_id": self.episode_id, "step_count": self.steps}
'''

WRAPPED_APP = '''
import functools

from openenv.core.env_server.http_server import create_app

from ..models import CountAction, CountObservation
from .wrapped_environment import WrappedEnvironment


def build_app(**overrides):
    settings = {"env_name": "wrapped_env", "max_concurrent_envs": 4, **overrides}
    return create_app(functools.partial(WrappedEnvironment, start=100), CountAction, CountObservation, **settings)


app = build_app()
'''

TOOLS_ENV = '''
import uuid

from fastmcp import FastMCP
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.types import Action, Observation, State


class ToolsEnvironment(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("tools_env")

        @mcp.tool
        def shout(text: str) -> str:
            """Upper-case the text."""
            return text.upper()

        @mcp.tool
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs):
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return Observation(done=False, reward=0.0)

    def _step_impl(self, action: Action, timeout_s=None, **kwargs) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": "unknown action"})

    def step(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        return super().step(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self):
        return self._state
'''

TOOLS_APP = '''
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

from .tools_environment import ToolsEnvironment

app = create_app(ToolsEnvironment, CallToolAction, CallToolObservation, env_name="tools_env")
'''


def _manifest(name: str) -> str:
    return f"spec_version: 1\nname: {name}\ntype: space\nruntime: fastapi\napp: server.app:app\nport: 8000\n"


def _pyproject(name: str, deps: list[str]) -> str:
    listed = ", ".join(f'"{d}"' for d in deps)
    return f'[project]\nname = "openenv-{name}"\nversion = "0.1.0"\ndependencies = [{listed}]\n'


def write_folder(root: Path, name: str, deps: list[str] | None = None) -> Path:
    """Write the hand-written folder ``name`` (kw_env, wrapped_env, tools_env or needs_env) under ``root``."""
    sources = {"kw_env": (KW_ENV, KW_APP), "wrapped_env": (WRAPPED_ENV, WRAPPED_APP), "tools_env": (TOOLS_ENV, TOOLS_APP),
               "needs_env": (KW_ENV, KW_APP)}[name]
    folder = root / name
    (folder / "server").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "models.py").write_text(MODELS)
    (folder / "openenv.yaml").write_text(_manifest(name))
    (folder / "pyproject.toml").write_text(_pyproject(name, ["openenv>=0.2.2", *(deps or [])]))
    (folder / "server" / "__init__.py").write_text("")
    env_module = {"kw_env": "kw_environment", "needs_env": "kw_environment", "wrapped_env": "wrapped_environment",
                  "tools_env": "tools_environment"}[name]
    (folder / "server" / f"{env_module}.py").write_text(sources[0])
    (folder / "server" / "app.py").write_text(sources[1])
    return folder
