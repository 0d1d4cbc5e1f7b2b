"""A check_env-style test of every built-in env: types, seeded determinism, and serving over the wire."""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

import pytest
from pydantic import TypeAdapter

from openenv_train.client import GenericEnvClient
from openenv_train.core import EnvLoadError, Observation, State
from openenv_train.envs import get_spec, list_envs, load_env_class
from openenv_train.server import Environment, MCPEnvironment
from tests.conftest import serve_inloop

NAMES = [spec.name for spec in list_envs()]


def _skip_without_sandbox(name: str) -> None:
    spec = get_spec(name)
    missing = [m for m in spec.modules if importlib.util.find_spec(m) is None]
    if missing:  # an extra outside the test extra's pins (the control family's): say how to run the test
        pytest.skip(f"{', '.join(missing)} not installed (to run this test: {spec.install})")
    if "sandbox" in get_spec(name).tags:
        from tests.sandbox.conftest import require_sandbox

        require_sandbox()
    for program in ("git", "terminal"):
        if program in get_spec(name).tags:
            from tests import _system_parts

            _system_parts.require("tmux" if program == "terminal" else program)
    if "browser" in get_spec(name).tags:
        from tests.envs._browser_solvers import require_browser

        require_browser()


def _sample_action(env_cls: type[Environment[Any, Any, Any]]) -> dict[str, Any]:
    if issubclass(env_cls, MCPEnvironment):
        spec = next(iter(env_cls.tools.values()))
        args = {name: "x" for name in spec.args_model.model_fields}
        return {"type": "call_tool", "tool_name": spec.tool.name, "arguments": args}
    # required fields are text (Wordle's message, required as OpenEnv's TextArenaAction); the rest have defaults
    required = env_cls.action_type.model_json_schema().get("required", [])
    return {name: "x" for name in required}


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@pytest.mark.parametrize("name", NAMES)
async def test_env_contract(name: str) -> None:
    _skip_without_sandbox(name)
    env_cls = load_env_class(name)
    assert issubclass(env_cls, Environment)
    assert env_cls.metadata_info().name == name
    adapter = TypeAdapter(env_cls.action_type)
    action = adapter.validate_python(_sample_action(env_cls))
    runs = []
    for _ in range(2):
        env = env_cls()
        first = await _maybe(env.reset(seed=123, episode_id="ep"))
        assert isinstance(first, Observation) and first.done is False
        after = await _maybe(env.step(action))
        assert isinstance(after, Observation)
        state = env.state
        assert isinstance(state, State) and state.episode_id == "ep" and state.step_count == 1
        runs.append((first.model_dump(), after.model_dump(), state.model_dump()))
        await _maybe(env.close())
    assert runs[0] == runs[1], "same seed and actions must give the same episode"
    schema = env_cls.spec_info().schema()
    assert set(schema) == {"action", "observation", "state", "reset_observation"}


@pytest.mark.parametrize("name", NAMES)
async def test_env_is_served_over_the_wire(name: str) -> None:
    _skip_without_sandbox(name)
    env_cls = load_env_class(name)
    async with serve_inloop(env_cls) as server:
        async with GenericEnvClient(server.url) as client:
            await client.reset(seed=1)
            result = await client.step(_sample_action(env_cls))
            assert result.done in (True, False)
            assert (await client.state())["step_count"] == 1


def test_unknown_names_suggest_close_matches() -> None:
    with pytest.raises(EnvLoadError, match="did you mean 'counter'"):
        get_spec("countr")
    with pytest.raises(EnvLoadError, match="module:ClassName"):
        load_env_class("no-such-env")


@pytest.mark.parametrize("name", NAMES)
async def test_openenv_generic_client_drives_every_env(name: str) -> None:
    _skip_without_sandbox(name)
    from openenv.core import GenericEnvClient as OpenEnvGenericClient

    env_cls = load_env_class(name)
    async with serve_inloop(env_cls) as server:
        async with OpenEnvGenericClient(base_url=server.url) as client:
            first = await client.reset(seed=5)
            assert isinstance(first.observation, dict) and first.done is False
            result = await client.step(_sample_action(env_cls))
            assert isinstance(result.observation, dict)
            assert (await client.state())["step_count"] == 1


def test_the_catalog_lists_40_envs_by_family_with_their_extras(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from openenv_train.cli import main

    assert main(["catalog", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    names = [e["name"] for e in listed if e["family"] != "browser"]
    assert len(names) >= 40 and {"trading", "trading_mcp", "calendar", "mock_apis"} <= set(names)
    assert all(e["family"] and (e["install"] == "" or "openenv-train[" in e["install"]) for e in listed)
    spiel = next(e for e in listed if e["name"] == "openspiel/go")
    assert spiel["extra"] == "openspiel" and spiel["install"] == "pip install 'openenv-train[openspiel]'"
    assert main(["catalog", "--family", "finance"]) == 0
    table = capsys.readouterr().out
    assert "finance (2)" in table and "trading_mcp" in table and "chess" not in table
    assert main(["catalog", "--family", "nope"]) == 2
    assert "families:" in capsys.readouterr().err
