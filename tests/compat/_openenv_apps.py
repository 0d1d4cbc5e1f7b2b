"""Environments written against openenv-core's own API, served by openenv-core's ``create_app``.

Run as a script: ``python _openenv_apps.py {counter|echo|scored|shared} READY_FILE`` (``scored``: the counter with an
attached rubric, in production mode; ``shared``: the echo env with an ``episode`` tool, in production mode; both
openenv >= 0.10 only). It binds a free
127.0.0.1 port itself (no race), serves the app under uvicorn, and writes the port to
READY_FILE once listening. It exits when its parent dies.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from typing import Any

from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

MAX_CONCURRENT_ENVS = 64


# -- a counter env ---------------------------------------------------------------------------------
class OECounterAction(Action):
    """Add ``delta`` to the counter."""

    delta: int = Field(ge=-100, le=100)


class OECounterObservation(Observation):
    value: int = 0
    target: int = 5


class OECounterState(State):
    value: int = 0
    target: int = 5


class OECounterEnvironment(Environment):
    """Counts up to a target; landing on it pays 1.0 and ends the episode. A delta of 13 raises."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = OECounterState(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, target: int = 5,
              split: str | None = None, index: int = 0, **kwargs: Any) -> OECounterObservation:
        if split is not None:  # OpenEnv 0.10's task choice: reset(split=..., index=...)
            target = self.get_task(split, index)["target"]
        self._state = OECounterState(episode_id=episode_id or str(uuid.uuid4()), step_count=0, value=0,
                                     target=target)
        return OECounterObservation(value=0, target=target, reward=0.0, done=False)

    # OpenEnv 0.10's Task API (TaskProvider, declared structurally): targets 1..3 to train on, 7..8 to test on
    TASKS = {"train": [1, 2, 3], "test": [7, 8]}

    def list_splits(self) -> list[Any]:
        return ["train", {"name": "test", "type": "test", "num_tasks": 2}]

    def list_tasks(self, split: str) -> list[Any]:
        return self.get_task_range(split)

    def num_tasks(self, split: str) -> int:
        return len(self.TASKS[split])

    def get_task(self, split: str, index: int) -> Any:
        if not 0 <= index < len(self.TASKS[split]):
            raise IndexError(index)
        return {"id": f"{split}-{index}", "index": index, "target": self.TASKS[split][index]}

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]:
        return [self.get_task(split, i) for i in range(len(self.TASKS[split]))[start:stop]]

    def step(self, action: OECounterAction, timeout_s: float | None = None, **kwargs: Any) -> OECounterObservation:
        if action.delta == 13:
            raise ValueError("unlucky 13")
        s = self._state
        s.step_count += 1
        s.value += action.delta
        return OECounterObservation(value=s.value, target=s.target, reward=1.0 if s.value == s.target else 0.0,
                                    done=s.value >= s.target)

    @property
    def state(self) -> OECounterState:
        return self._state


# -- an MCP echo env, as OpenEnv's echo_env builds it ----------------------------------------------
class OEEchoEnvironment(MCPEnvironment):
    """Echoes messages through MCP tools."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    #: Also serve ``episode`` (the episode id this env holds): the ``shared`` app's proof of one shared session.
    EPISODE_TOOL = False

    def __init__(self) -> None:
        mcp = FastMCP("echo_env")
        if self.EPISODE_TOOL:
            @mcp.tool
            def episode() -> str:
                """The episode id of this env."""
                return str(self._state.episode_id)

        @mcp.tool
        def echo_message(message: str) -> str:
            """Echo back the provided message."""
            return message

        @mcp.tool
        def echo_with_length(message: str) -> dict:
            """Echo back the message with its length."""
            return {"message": message, "length": len(message)}

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": f"unknown action {type(action).__name__}"})

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        return super().step(action, timeout_s=timeout_s, **kwargs)

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        return await super().step_async(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> State:
        return self._state


def build_scored_app() -> Any:
    """OECounterEnvironment whose reward comes from an attached OpenEnv rubric (a RubricDict picked by the action's
    sign), served in ServerMode.PRODUCTION. A rubric that raises (the counter at 13) fails the step."""
    from openenv.core.env_server.types import ServerMode
    from openenv.core.rubrics import Rubric, RubricDict

    class Value(Rubric):
        def __init__(self, scale: float) -> None:
            super().__init__()
            self.scale = scale

        def forward(self, action: Any, observation: Any) -> float:
            if observation.value == 13:
                raise ValueError("unlucky 13")
            return observation.value * self.scale

    class Pick(Rubric):
        def __init__(self) -> None:
            super().__init__()
            self.by_sign = RubricDict({"up": Value(1.0), "down": Value(-1.0)})

        def forward(self, action: Any, observation: Any) -> float:
            return self.by_sign["up" if action.delta >= 0 else "down"](action, observation)

    class OEScoredEnvironment(OECounterEnvironment):
        def __init__(self) -> None:
            super().__init__()
            self.rubric = Pick()

        def reset(self, *args: Any, **kwargs: Any) -> OECounterObservation:
            self._reset_rubric()
            return super().reset(*args, **kwargs)

        def step(self, action: OECounterAction, timeout_s: float | None = None, **kwargs: Any) -> OECounterObservation:
            obs = super().step(action, timeout_s, **kwargs)
            obs.reward = self._apply_rubric(action, obs)
            return obs

    return create_app(OEScoredEnvironment, OECounterAction, OECounterObservation, env_name="oe_scored",
                      max_concurrent_envs=MAX_CONCURRENT_ENVS, mode=ServerMode.PRODUCTION)


class OESharedEchoEnvironment(OEEchoEnvironment):
    EPISODE_TOOL = True


def build_app(kind: str) -> Any:
    if kind == "scored":
        return build_scored_app()
    if kind == "shared":  # production mode: what MCPToolClient(mode="production") shares a session with
        from openenv.core.env_server.types import ServerMode

        return create_app(OESharedEchoEnvironment, CallToolAction, CallToolObservation, env_name="shared_echo",
                          max_concurrent_envs=MAX_CONCURRENT_ENVS, mode=ServerMode.PRODUCTION)
    if kind == "counter":
        return create_app(OECounterEnvironment, OECounterAction, OECounterObservation, env_name="oe_counter",
                          max_concurrent_envs=MAX_CONCURRENT_ENVS)
    if kind == "echo":
        return create_app(OEEchoEnvironment, CallToolAction, CallToolObservation, env_name="echo_env",
                          max_concurrent_envs=MAX_CONCURRENT_ENVS)
    raise SystemExit(f"unknown app kind {kind!r}")


def _watch_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.5)


def main() -> None:
    import uvicorn

    kind, ready_file = sys.argv[1], sys.argv[2]
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    app = build_app(kind)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", ws="websockets", lifespan="on")
    server = uvicorn.Server(config)
    tmp = ready_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.replace(tmp, ready_file)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
