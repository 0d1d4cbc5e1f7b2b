"""openenv 0.10's server modes, MCP over the ``/mcp`` WebSocket and env-attached rubrics, both ways.

Our clients drive openenv's servers (a production-mode counter scored by an attached OpenEnv rubric; the echo
env's ``/mcp`` WebSocket) and openenv's client drives ours; rubrics of each attach to the other's Environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from openenv_train.client import GenericEnvClient, McpWsClient, server_mode
from openenv_train.core import ServerError, ServerMode
from openenv_train.envs.counter import CounterAction, CounterObservation
from openenv_train.envs.echo import EchoEnvironment
from openenv_train.rubrics import RubricDict, StepRubric
from tests.compat._release import CURRENT
from tests.compat.conftest import openenv_core_servers
from tests.conftest import serve_inloop
from tests.rubrics.test_step_rubrics import Scored, Value

if CURRENT:
    from openenv.core import GenericEnvClient as OEGenericEnvClient
    from openenv.core.env_server.interfaces import Environment as OEEnvironment
    from openenv.core.rubrics import Rubric as OERubric

pytestmark = pytest.mark.skipif(not CURRENT, reason="server modes, /mcp over WebSocket and rubrics are openenv >= 0.10")

CONTROL = {"/reset", "/step", "/state"}


@pytest.fixture(scope="module")
def oe_scored_url() -> Iterator[str]:
    """openenv's counter with an attached OpenEnv rubric, served by ``create_app(mode=PRODUCTION)``."""
    with openenv_core_servers("scored") as urls:
        yield urls["scored"]


async def _control_routes(url: str) -> tuple[list[int], set[str]]:
    async with httpx.AsyncClient(base_url=url) as http:
        statuses = [(await http.post("/reset", json={})).status_code,
                    (await http.post("/step", json={"action": {"delta": 1}})).status_code,
                    (await http.get("/state")).status_code]
        paths = set((await http.get("/openapi.json")).json()["paths"])
        for path in ("/health", "/schema", "/metadata"):
            assert (await http.get(path)).status_code == 200, (url, path)
    return statuses, paths


async def test_production_mode_drops_the_same_routes_on_both_servers(oe_scored_url: str) -> None:
    async with serve_inloop(Scored, mode="production") as ours:
        for url in (oe_scored_url, ours.url):
            statuses, paths = await _control_routes(url)
            assert statuses == [404, 404, 404] and not CONTROL & paths and {"/health", "/mcp"} <= paths, url
            assert await server_mode(url) is ServerMode.PRODUCTION


async def test_our_client_steps_openenvs_production_server_scored_by_its_rubric(oe_scored_url: str) -> None:
    async with GenericEnvClient(oe_scored_url) as env:
        await env.reset(target=100)
        assert (await env.step({"delta": 4})).reward == 4.0
        assert (await env.step({"delta": -1})).reward == -3.0
        with pytest.raises(ServerError, match="unlucky 13"):  # openenv's rubric raised: an error, the server stays
            await env.step({"delta": 10})
    async with GenericEnvClient(oe_scored_url) as env:
        await env.reset(target=100)
        assert (await env.step({"delta": 2})).reward == 2.0


async def test_openenvs_client_steps_our_production_server_scored_by_our_rubric() -> None:
    async with serve_inloop(Scored, mode="production") as ours:
        async with OEGenericEnvClient(base_url=ours.url) as env:
            await env.reset(target=100)
            assert (await env.step({"delta": 4})).reward == 4.0
            assert (await env.step({"delta": -1})).reward == -3.0
            with pytest.raises(Exception, match="unlucky 13"):
                await env.step({"delta": 10})
            assert (await env.step({"delta": 1})).reward == 14.0


async def test_mcp_over_websocket_answers_alike(oe_echo_url: str) -> None:
    async with serve_inloop(EchoEnvironment, mode="production") as ours:
        answers = []
        for url in (oe_echo_url, ours.url):
            async with McpWsClient(url) as mcp:
                tools = sorted(t.name for t in await mcp.list_tools())
                echoed = await mcp.call_tool("echo_with_length", message="héllo")
                bad = await mcp.send_raw("{not json")
                answers.append((tools, echoed, bad["error"]["code"], (await mcp.rpc("no/such"))["error"]["code"]))
        assert answers[0] == answers[1] == (["echo_message", "echo_with_length"], {"message": "héllo", "length": 5},
                                            -32700, -32601)


# -- rubrics attach across the two packages (in process) ------------------------------------------------
class OEValue(OERubric if CURRENT else object):  # type: ignore[misc]
    def forward(self, action: Any, observation: Any) -> float:
        return float(observation.value)


def test_an_openenv_rubric_scores_our_environment() -> None:
    env = Scored()
    env.rubric = OEValue()
    env.reset(target=100)
    assert env.step(CounterAction(delta=3)).reward == 3.0
    env._reset_rubric()
    assert env.rubric.last_score == 3.0  # OpenEnv's reset() keeps last_score; it clears episode state only


def test_our_rubric_dict_scores_an_openenv_environment() -> None:
    class Parent(StepRubric):
        def __init__(self) -> None:
            super().__init__()
            self.parts = RubricDict({"value": Value(2.0)})

        def forward(self, action: Any, observation: Any) -> float:
            return self.parts["value"](action, observation)

    class OEEnv(OEEnvironment):
        def reset(self, seed: Any = None, episode_id: Any = None, **kwargs: Any) -> Any:
            self._reset_rubric()
            return CounterObservation(value=0)

        def step(self, action: Any, timeout_s: Any = None, **kwargs: Any) -> Any:
            obs = CounterObservation(value=action.delta)
            obs.reward = self._apply_rubric(action, obs)
            return obs

        @property
        def state(self) -> Any:
            return None

    env = OEEnv(rubric=Parent())
    env.reset()
    assert env.step(CounterAction(delta=5)).reward == 10.0
    assert [name for name, _ in env.rubric.named_rubrics()] == ["parts", "parts.value"]
