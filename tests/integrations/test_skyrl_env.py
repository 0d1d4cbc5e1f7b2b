"""The SkyRL BaseTextEnv adapter, built through the real skyrl_gym registry, against real env server subprocesses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openenv_train.client import GenericEnvClient
from openenv_train.integrations.skyrl import ActionFormat, ActionParseError, register_skyrl_env, shutdown_servers

skyrl_gym = pytest.importorskip("skyrl_gym", reason="skyrl-gym is not installed (pip install 'skyrl-gym>=0.4,<0.5')")


@pytest.fixture(scope="module", autouse=True)
def _servers() -> Iterator[None]:
    yield
    shutdown_servers()


def test_wordle_episode_through_skyrl_matches_our_client() -> None:
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    name = register_skyrl_env("openenv-wordle-test", env="wordle", replace=True)
    env = skyrl_gym.make(name, env_config=None, extras={"reset": {"task": "crane"}})
    assert isinstance(env, BaseTextEnv) and env.format.kind == "text" and env.format.text_field == "message"
    prompt = [{"role": "system", "content": "You play Wordle."}]
    messages, meta = env.init(prompt)
    assert messages[0] == prompt[0] and messages[-1]["role"] == "user" and meta["format"] == "text"
    assert "[" in messages[-1]["content"]  # the game's instructions: guesses go in brackets

    replies = ["I'll open with [slate]", "no brackets here at all", "[crane]"]
    outs = [env.step(text) for text in replies]
    env.close()

    client = GenericEnvClient(env.server.endpoint.base_url).sync().connect()
    try:
        first = client.reset(task="crane")
        ours = [client.step({"message": text}) for text in replies]
    finally:
        client.close()
    assert env.render(first.observation) in messages[-1]["content"]
    for out, result in zip(outs, ours, strict=True):
        assert out["reward"] == float(result.reward or 0.0) and out["done"] == result.done
        assert out["metadata"]["observation"] == env.render(result.observation)
    assert [o["done"] for o in outs] == [False, False, True] and outs[-1]["reward"] == 1.0
    assert outs[0]["observations"][0]["role"] == "user" and "slate" in outs[0]["observations"][0]["content"].lower()
    assert outs[-1]["observations"] == []
    assert env.get_metrics() == {"turns": 3, "reward": 1.0, "env_done": 1.0}


def test_bad_text_gets_the_format_not_a_crash_and_turns_are_capped() -> None:
    name = register_skyrl_env("openenv-counter-test", env="counter", replace=True, max_turns=3)
    env = skyrl_gym.make(name, extras={"reset": {"target": 3}})
    assert env.format.kind == "json"
    messages, _ = env.init([])
    assert '{"delta": <integer>}' in messages[-1]["content"]
    bad = env.step("I think I should add two")
    assert not bad["done"] and bad["reward"] == 0.0 and "not a valid action" in bad["observations"][0]["content"]
    assert '{"delta": <integer>}' in bad["observations"][0]["content"]
    rejected = env.step('{"delta": "lots"}')  # the server's validation error, told to the model
    assert not rejected["done"] and "rejected" in rejected["observations"][0]["content"]
    cut = env.step('```json\n{"delta": 1}\n```')
    assert cut["done"] and cut["metadata"]["truncated"] and not cut["metadata"]["env_done"]
    env.close()

    env = skyrl_gym.make(name, extras={"reset": '{"target": 3}', "max_turns": 5})  # JSON text, as parquet may hold it
    env.init([])
    out = env.step('{"delta": 3}')
    assert out["done"] and out["reward"] == 1.0 and out["metadata"]["env_done"]
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step('{"delta": 1}')
    env.close()


def test_mcp_env_takes_tool_calls() -> None:
    name = register_skyrl_env("openenv-echo-test", env="echo", replace=True)
    env = skyrl_gym.make(name, extras={})
    assert env.format.kind == "mcp" and "echo_message" in env.format.tools
    messages, _ = env.init([{"role": "user", "content": "Echo hi."}])
    assert "<tool_call>" in messages[-1]["content"]
    out = env.step('<tool_call>{"name": "echo_message", "arguments": {"message": "hi"}}</tool_call>')
    assert "hi" in out["observations"][0]["content"] and not out["done"]
    out = env.step('{"name": "nope", "arguments": {}}')
    assert "no tool 'nope'" in out["observations"][0]["content"]
    env.close()


def test_registering_a_taken_name_needs_replace() -> None:
    register_skyrl_env("openenv-taken-test", env="counter", replace=True)
    with pytest.raises(skyrl_gym.error.RegistrationError):
        register_skyrl_env("openenv-taken-test", env="counter")


def test_parse_formats() -> None:
    assert ActionFormat("text", text_field="code").parse("print(1)") == [{"code": "print(1)"}]
    with pytest.raises(ActionParseError, match="no JSON object"):
        ActionFormat("json").parse("nothing here")
    with pytest.raises(ActionParseError, match="does not parse"):
        ActionFormat("json").parse("{delta: 1}")
    two = ActionFormat("mcp", tools=("a",)).parse(
        '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call><tool_call>{"name": "a", "arguments": "{}"}'
        "</tool_call>")
    assert two == [{"type": "call_tool", "tool_name": "a", "arguments": {"x": 1}},
                   {"type": "call_tool", "tool_name": "a", "arguments": {}}]
