"""Typed clients both ways: ours (``openenv_train.envs.*``) against OpenEnv servers, and a typed client written
with OpenEnv's ``EnvClient`` as their env packages write one, against ours; async and ``.sync()``."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult as OEStepResult
from openenv.core.env_client import EnvClient as OEEnvClient
from openenv.core.env_server.types import Action as OEAction
from openenv.core.env_server.types import Observation as OEObservation
from openenv.core.env_server.types import State as OEState

from openenv_train.client import Endpoint
from openenv_train.core import CallToolAction, CallToolObservation, State
from openenv_train.envs.counter import CounterAction, CounterEnv, CounterObservation, CounterState
from openenv_train.envs.echo import EchoEnv


async def test_our_typed_clients_drive_openenv_servers(oe_counter_url: str, oe_echo_url: str) -> None:
    async with CounterEnv(base_url=oe_counter_url) as env:
        first = await env.reset(target=3)
        assert isinstance(first.observation, CounterObservation) and first.observation.target == 3
        result = await env.step(CounterAction(delta=3))
        assert (result.observation.value, result.reward, result.done) == (3, 1.0, True)
        state = await env.state()
        assert isinstance(state, CounterState) and (state.value, state.step_count) == (3, 1)
    with EchoEnv(base_url=oe_echo_url).sync() as echo:
        echo.reset()
        res = echo.step(CallToolAction(tool_name="echo_message", arguments={"message": "Hello"}))
        assert isinstance(res.observation, CallToolObservation) and res.observation.result["data"] == "Hello"
        assert echo.call_tool("echo_with_length", message="ab") == {"message": "ab", "length": 2}
        assert isinstance(echo.state(), State)


class CountAction(OEAction):
    delta: int


class CountObservation(OEObservation):
    value: int = 0
    target: int = 0


class CountEnv(OEEnvClient[CountAction, CountObservation, OEState]):
    """A typed client as OpenEnv's env packages write them (client.py)."""

    def _step_payload(self, action: CountAction) -> dict[str, Any]:
        return {"delta": action.delta}

    def _parse_result(self, payload: dict[str, Any]) -> OEStepResult[CountObservation]:
        obs = CountObservation(**payload["observation"], reward=payload.get("reward"), done=payload.get("done", False))
        return OEStepResult(observation=obs, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> OEState:
        return OEState(**payload)


async def test_their_typed_client_drives_our_server(our_counter: Endpoint) -> None:
    async with CountEnv(base_url=our_counter.base_url) as env:
        first = await env.reset(target=2)
        assert (first.observation.value, first.observation.target) == (0, 2)
        result = await env.step(CountAction(delta=2))
        assert (result.observation.value, result.reward, result.done) == (2, 1.0, True)
        state = await env.state()
        assert (state.step_count, state.value) == (1, 2)  # type: ignore[attr-defined]
    with CountEnv(base_url=our_counter.base_url).sync() as env:
        env.reset(target=5)
        assert env.step(CountAction(delta=1)).observation.value == 1
