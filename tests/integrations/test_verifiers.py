"""The verifiers integration's parts that need no verifiers: actions, the export, the episode loop, bad input.

vf-eval itself runs in tests/verifiers (the verifiers venv).
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

from openenv_train.cli import main
from openenv_train.client import GenericEnvClient, MCPToolClient
from openenv_train.core import EnvLoadError, OpenEnvTrainError
from openenv_train.integrations.verifiers import (
    VerifiersError,
    VerifiersNotInstalled,
    check_options,
    export_package,
    import_verifiers,
    package_name,
    parse_action,
    play_episode,
    verifiers_classes,
)
from tests.conftest import serve_process

HAS_VERIFIERS = importlib.util.find_spec("verifiers") is not None


def test_parse_action_kinds() -> None:
    assert parse_action("[crane]", "message") == {"message": "[crane]"}
    assert parse_action('move: {"delta": 3}', "json") == {"delta": 3}
    assert parse_action("no json here", "json") == {"message": "no json here"}
    assert parse_action('{"tool": "advance", "arguments": {"bars": 2}}', "tool") == {
        "type": "call_tool", "tool_name": "advance", "arguments": {"bars": 2}}
    assert parse_action("hello", "tool") == {"type": "call_tool", "tool_name": "", "arguments": {}}


def test_export_writes_an_installable_package(tmp_path: Path) -> None:
    module = export_package("wordle", tmp_path / "pkg")
    assert module.name == "openenv_wordle.py"
    project = tomllib.loads((tmp_path / "pkg" / "pyproject.toml").read_text())
    assert project["project"]["name"] == "openenv-wordle" == package_name("wordle")
    assert "verifiers==0.4.0" in project["project"]["dependencies"]
    assert project["tool"]["setuptools"]["py-modules"] == ["openenv_wordle"]
    source = module.read_text()
    compile(source, str(module), "exec")
    assert "verifiers_classes('wordle')" in source and "__all__" in source


def test_export_cli_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "verifiers", "counter", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "openenv_counter.py").exists()
    assert "vf-eval openenv-counter --no-push" in capsys.readouterr().out
    assert main(["export", "verifiers", "wordel", str(tmp_path / "x")]) == 1
    assert "did you mean 'wordle'" in capsys.readouterr().err
    with pytest.raises(EnvLoadError, match="did you mean 'wordle'"):
        export_package("wordel", tmp_path / "y")
    with pytest.raises(VerifiersError, match="letters, digits"):
        export_package("wordle", tmp_path / "z", name="9 bad")


def test_unknown_taskset_option_names_the_valid_ones() -> None:
    check_options({"env": "wordle", "seed": 3, "max_turns": 4})
    with pytest.raises(VerifiersError, match=r"'max_turn' does not exist; did you mean 'max_turns'.*the options: "):
        check_options({"max_turn": 4})
    assert issubclass(VerifiersError, OpenEnvTrainError) and issubclass(VerifiersNotInstalled, OpenEnvTrainError)


@pytest.mark.skipif(HAS_VERIFIERS, reason="verifiers is installed here")
def test_verifiers_not_installed_gives_the_install_line() -> None:
    with pytest.raises(VerifiersNotInstalled, match=r"pip install 'verifiers==0\.4\.0'"):
        import_verifiers()
    verifiers_classes.cache_clear()
    with pytest.raises(VerifiersNotInstalled, match="openenv-train\\[verifiers\\]"):
        verifiers_classes("wordle")


async def test_play_episode_through_our_client_text_and_tools() -> None:
    """The loop Env.run uses, on real servers: a JSON action env and an MCP env's tools."""
    async def replies(script: list[str]):  # type: ignore[no-untyped-def]
        seen: list[str] = []

        async def reply(text: str) -> tuple[str, bool]:
            seen.append(text)
            return script[min(len(seen) - 1, len(script) - 1)], False
        return reply, seen

    async with serve_process("counter") as (endpoint, _):
        reply, seen = await replies(['{"delta": 4}', '{"delta": 6}'])
        async with GenericEnvClient(endpoint.base_url) as env:
            episode = await play_episode(env, reply, kind="json", seed=0, reset={"target": 10}, max_turns=5)
        assert (episode.done, episode.turns, episode.reward) == (True, 2, 1.0)
        assert [s["action"] for s in episode.steps] == [{"delta": 4}, {"delta": 6}]

    async with serve_process("trading_mcp") as (endpoint, _):
        reply, seen = await replies(['{"tool": "place_order", "arguments": {"side": "buy", "size": 10}}',
                                     '{"tool": "advance", "arguments": {"bars": 3}}'])
        async with MCPToolClient(endpoint.base_url) as env:
            episode = await play_episode(env, reply, kind="tool", seed=1, reset={}, max_turns=3)
        assert episode.turns == 3 and len(seen) == 3 and episode.reward != 0.0  # the position moved with the market
        assert [s["action"]["tool_name"] for s in episode.steps] == ["place_order", "advance", "advance"]
