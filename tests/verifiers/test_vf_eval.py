"""vf-eval (verifiers 0.4.0, subprocess runtime, --no-push) on exported envs of ours, against our PolicyServer.

These run in the verifiers venv only (``.ci/run`` builds ``.venv-verifiers``): verifiers pins mcp and openai
versions the test venv cannot take, so the main suite skips this folder when verifiers is absent.

Each case exports a catalog env (``openenv-train export verifiers``), pip-installs the package, runs ``vf-eval``
as a real process against a capturing PolicyServer (scripted replies, or the tiny local model greedy), and
checks every task's reward against the same episodes played by our own pool (``RolloutActor`` with a
``TextAgent``, or a ``ToolAgent`` for native tool calls; same seeds, same endpoint): equal per task. The calls
vf-eval made are captured as one TrainingTrace, written and read back as a TraceRow.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verifiers.v1", reason="verifiers is not installed (pip install 'openenv-train[verifiers]')")

from openenv_train.integrations.verifiers import export_package, package_name, parse_action  # noqa: E402
from openenv_train.policy import LocalBackend, ScriptedBackend, build_tiny_model, captured_policy  # noqa: E402
from openenv_train.pool import EpisodeSpec, Job, PoolConfig, RolloutActor, TextAgent, ToolAgent, build_row  # noqa: E402
from openenv_train.trace import TraceWriter, read_traces  # noqa: E402

pytestmark = pytest.mark.timeout(600)

VF_EVAL = Path(sys.executable).with_name("vf-eval")
SESSION = "vf-eval-capture"
GUESSES = ["[crane]", "[slate]", "[pious]", "[dough]", "[mucky]", "[fjord]"]
TRADES = ['{"tool": "place_order", "arguments": {"side": "buy", "size": 10}}',
          '{"tool": "advance", "arguments": {"bars": 5}}', '{"tool": "get_portfolio", "arguments": {}}']
CALLS = [("place_order", {"side": "buy", "size": 10}), ("advance", {"bars": 5}), ("get_portfolio", {})]


def _turn(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "user")


def wordle_script(messages: list[dict[str, Any]]) -> str:
    return GUESSES[(_turn(messages) - 1) % len(GUESSES)]


def trading_script(messages: list[dict[str, Any]]) -> str:
    return TRADES[min(_turn(messages) - 1, len(TRADES) - 1)]


def native_trading_script(messages: list[dict[str, Any]]) -> str:
    """One native tool call per reply (the ``<tool_call>`` text the scripted backend turns into ``tool_calls``)."""
    name, arguments = CALLS[min(sum(m.get("role") == "assistant" for m in messages), len(CALLS) - 1)]
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _said(message: dict[str, Any]) -> tuple[str, list[str]]:
    """An assistant message's text and the tools it called (verifiers' flat calls, or OpenAI's)."""
    calls = [c.get("name") or c.get("function", {}).get("name") for c in message.get("tool_calls") or []]
    return (message.get("content") or "").strip(), calls


def _install(env: str, root: Path) -> str:
    export_package(env, root / env)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    str(root / env)], check=True, capture_output=True)
    return package_name(env)


def _vf_eval(dist: str, base_url: str, out: Path, *extra: str) -> list[dict[str, Any]]:
    """Run vf-eval; the trace of each task, in task order."""
    cmd = [str(VF_EVAL), dist, "--no-push", "-m", "default", "--client.base-url", base_url,
           "--client.api-key-var", "VF_TEST_KEY", "--env.player.runtime.type", "subprocess",
           "--env.player.harness.id", "null", "-o", str(out), "-c", "1", *extra]
    done = subprocess.run(cmd, cwd=out.parent, env={**os.environ, "VF_TEST_KEY": SESSION}, capture_output=True,
                          text=True, timeout=480)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (traces,) = out.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    assert all(e["ok"] for e in episodes), [e["errors"] for e in episodes]
    return [e["traces"][0] for e in sorted(episodes, key=lambda e: e["task"]["data"]["idx"])]


async def _ours(env: str, base_url: str, agent: TextAgent, seeds: list[int],
                config: PoolConfig) -> list[tuple[float, int]]:
    actor = RolloutActor(env, base_url, agent, config)
    try:
        await actor.ready()
        outcomes = [await actor.run(EpisodeSpec(f"ours-{s}", {}, s, None), None) for s in seeds]
    finally:
        await actor.close()
    return [(float(o["reward"] or 0.0), int(o["turns"])) for o in outcomes]


def _check(env: str, backend: Any, tmp_path: Path, *, agent: Any, client: str, max_turns: int,
           sampling: dict[str, Any], episodes: int = 2, flags: tuple[str, ...] = ()) -> tuple[list[dict[str, Any]], Any]:
    dist = _install(env, tmp_path)
    flags = ("-n", str(episodes), "--env.taskset.max-turns", str(max_turns), *flags)
    flags += tuple(f"--sampling.{k.replace('_', '-')}={v}" for k, v in sampling.items())
    with captured_policy(backend) as served:
        served.capture.open_session(SESSION)
        traces = _vf_eval(dist, served.base_url, tmp_path / "out", *flags)
        captured = served.capture.close_session(SESSION)
        config = PoolConfig(num_actors=1, max_turns=max_turns, client=client, sampling=dict(sampling))
        ours = asyncio.run(_ours(env, served.base_url, agent, list(range(episodes)), config))
    theirs = [t["rewards"]["env_reward"]["score"] for t in traces]
    assert theirs == pytest.approx([reward for reward, _ in ours], abs=1e-9), (theirs, ours)
    assert [t["metrics"]["turns"] for t in traces] == [turns for _, turns in ours] == [len(t["calls"]) for t in traces]
    # the calls vf-eval made are our captured turns: one TrainingTrace, a TraceRow like any other
    assert len(captured.turns) == sum(len(t["calls"]) for t in traces)
    replies = [_said(n["message"]) for t in traces for n in t["nodes"] if n["message"]["role"] == "assistant"]
    assert sorted(_said(t.response["choices"][0]["message"]) for t in captured.turns) == sorted(replies)
    row = build_row(Job(EpisodeSpec("vf-eval", {}, 0, None), 0),
                    {"status": "ok", "reward": sum(theirs), "done": True, "steps": []},
                    run_id="vf-eval", env=env, model="default", trace=captured)
    with TraceWriter(tmp_path / "rows") as writer:
        writer.write(row)
    (back,) = read_traces(tmp_path / "rows")
    assert [t.response for t in back.trace.turns] == [t.response for t in captured.turns]  # tool_calls included
    assert [t.request for t in back.trace.turns] == [t.request for t in captured.turns]  # tools, tool results too
    return traces, captured


def test_vf_eval_wordle_scripted_rewards_equal_ours(tmp_path: Path) -> None:
    traces, _ = _check("wordle", ScriptedBackend(wordle_script), tmp_path, agent=TextAgent(), client="generic",
                    max_turns=10, sampling={})
    # every rubric component Wordle reports is recorded, weight 0 (the reward is the env's)
    assert {"wordle.greens", "wordle.yellows", "wordle.correct"} <= set(traces[0]["rewards"])
    assert all(r["weight"] == 0.0 for k, r in traces[0]["rewards"].items() if k != "env_reward")


def test_vf_eval_mcp_tool_env_native_tool_calls_rewards_equal_ours(tmp_path: Path) -> None:
    """The default for an MCP env: its tools offered as OpenAI tools, the model's tool_calls stepped on the env."""
    traces, captured = _check("trading_mcp", ScriptedBackend(native_trading_script), tmp_path, agent=ToolAgent(),
                              client="mcp", max_turns=3, sampling={})
    assert all(t["rewards"]["env_reward"]["score"] != 0.0 for t in traces)  # advance paid something
    assert all(t["metrics"]["turns"] == 3 for t in traces)  # max_turns ended them: the 4th model call was refused
    offered = {tool["function"]["name"] for tool in captured.turns[0].request["tools"]}
    assert {"place_order", "advance", "get_portfolio"} <= offered
    # each turn called one tool; the next turn's request carries its result as a role "tool" message
    called = [[c["function"]["name"] for c in t.response["choices"][0]["message"]["tool_calls"]] for t in captured.turns]
    assert sorted(called) == sorted([["place_order"], ["advance"], ["get_portfolio"]] * 2)
    results = [m for t in captured.turns for m in t.request["messages"] if m["role"] == "tool"]
    assert results and all(json.loads(m["content"]) for m in results)


def test_vf_eval_mcp_tool_env_json_text_rewards_equal_ours(tmp_path: Path) -> None:
    """The fallback for harnesses without tools: tools listed in the prompt, a JSON text reply is one call."""
    traces, _ = _check("trading_mcp", ScriptedBackend(trading_script), tmp_path,
                    agent=TextAgent(parser=lambda text: parse_action(text, "tool")), client="mcp", max_turns=3,
                    sampling={}, flags=("--env.taskset.action", "tool"))
    assert all(t["rewards"]["env_reward"]["score"] != 0.0 for t in traces)  # advance paid something


def test_vf_eval_wordle_tiny_model_rewards_equal_ours(tmp_path: Path) -> None:
    model = build_tiny_model(tmp_path / "tiny")
    traces, captured = _check("wordle", LocalBackend(str(model)), tmp_path, agent=TextAgent(), client="generic", max_turns=3,
                    sampling={"temperature": 0.0, "max_tokens": 8})
    assert all(t["metrics"]["turns"] >= 1 for t in traces)
    assert all(turn.completion_token_ids for turn in captured.turns)  # exact tokens, for training


def test_vf_eval_mcp_tool_env_tiny_model_rewards_equal_ours(tmp_path: Path) -> None:
    """The tiny model offered the env's tools natively: whatever it writes, vf-eval's episodes score as ours do."""
    model = build_tiny_model(tmp_path / "tiny")
    traces, captured = _check("trading_mcp", LocalBackend(str(model)), tmp_path, agent=ToolAgent(), client="mcp",
                              max_turns=3, sampling={"temperature": 0.0, "max_tokens": 8})
    assert all(t["metrics"]["turns"] >= 1 for t in traces)
    assert {"place_order", "advance"} <= {tool["function"]["name"] for tool in captured.turns[0].request["tools"]}
    assert all(turn.completion_token_ids for turn in captured.turns)  # exact tokens, for training
