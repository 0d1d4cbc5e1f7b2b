"""Reference environments written with openenv-core's own API, served by openenv-core's ``create_app``.

These are the "openenv" side of ``ws_throughput.py``: the same two envs as
``openenv_train.envs.echo`` and ``openenv_train.envs.counter``, built the way an
OpenEnv environment author builds them (``MCPEnvironment`` + FastMCP for echo, the
typed ``Environment``/``Action``/``Observation``/``State`` for the counter) and served
by uvicorn with its default settings (one worker).

Run a server by hand::

    python benchmarks/openenv_reference.py --env echo --port 8001 --max-concurrent-envs 20000
"""

from __future__ import annotations

import argparse
import random
import resource
from typing import Any
from uuid import uuid4

from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

__all__ = ["CounterAction", "CounterObservation", "CounterState", "RefCounterEnvironment",
           "RefEchoEnvironment", "build_app", "main"]


# -- echo (MCP) -------------------------------------------------------------------------------------
class RefEchoEnvironment(MCPEnvironment):
    """OpenEnv's echo_env: a pure MCP env with two tools, one FastMCP server per session."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("echo_env")

        @mcp.tool
        def echo_message(message: str) -> str:
            """Return the message unchanged."""
            return message

        @mcp.tool
        def echo_with_length(message: str) -> dict[str, Any]:
            """Return the message and its length in characters."""
            return {"message": message, "length": len(message)}

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
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


# -- counter (typed, no MCP) ------------------------------------------------------------------------
class CounterAction(Action):
    """Add ``delta`` to the counter."""

    delta: int = Field(default=1, ge=-1000, le=1000, description="Amount to add.")


class CounterObservation(Observation):
    """The counter's value and the target that ends the episode."""

    value: int = 0
    target: int = 10


class CounterState(State):
    """Episode state plus the counter's value."""

    value: int = 0
    target: int = 10


class RefCounterEnvironment(Environment[CounterAction, CounterObservation, CounterState]):
    """Counts up by each action's delta; landing on the target pays 1.0, reaching it ends the episode."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = CounterState(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, target: int | None = None,
              **kwargs: Any) -> CounterObservation:
        if target is None:
            target = random.Random(seed).randint(5, 15) if seed is not None else 10
        self._state = CounterState(episode_id=episode_id or uuid4().hex, step_count=0, value=0, target=target)
        return CounterObservation(value=0, target=target, reward=0.0)

    def step(self, action: CounterAction, timeout_s: float | None = None, **kwargs: Any) -> CounterObservation:
        state = self._state
        state.step_count += 1
        state.value += action.delta
        return CounterObservation(value=state.value, target=state.target,
                                  reward=1.0 if state.value == state.target else 0.0,
                                  done=state.value >= state.target)

    @property
    def state(self) -> CounterState:
        return self._state


def build_app(env: str, max_concurrent_envs: int) -> Any:
    """The openenv-core FastAPI app serving the reference ``env`` ("echo" or "counter")."""
    if env == "echo":
        return create_app(RefEchoEnvironment, CallToolAction, CallToolObservation, env_name="echo_env",
                          max_concurrent_envs=max_concurrent_envs)
    if env == "counter":
        return create_app(RefCounterEnvironment, CounterAction, CounterObservation, env_name="counter",
                          max_concurrent_envs=max_concurrent_envs)
    raise ValueError(f"unknown env {env!r}; expected 'echo' or 'counter'")


def _raise_nofile() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: list[str] | None = None) -> None:
    """Serve a reference env with uvicorn's default settings (one worker) until SIGTERM."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", choices=("echo", "counter"), required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--max-concurrent-envs", type=int, default=20000)
    args = parser.parse_args(argv)
    _raise_nofile()
    uvicorn.run(build_app(args.env, args.max_concurrent_envs), host=args.host, port=args.port,
                log_level="warning")


if __name__ == "__main__":
    main()
