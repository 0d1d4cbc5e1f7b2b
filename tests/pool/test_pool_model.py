"""A model-driven pool: the tiny offline model behind a capturing PolicyServer; rows carry its turns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_train.pool import RolloutPool, make_groups
from openenv_train.trace import CaptureStore


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, CaptureStore]]:
    for module in ("torch", "transformers", "tokenizers", "httpx"):
        pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[policy]')")
    from openenv_train.policy import LocalBackend, PolicyServer, build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)
    capture = CaptureStore()
    with PolicyServer(LocalBackend(str(path), model_id="tiny"), capture=capture).run_in_thread() as server:
        yield server.base_url, capture


def test_model_episodes_carry_captured_turns_with_token_ids(ray_local: Any, policy_server: tuple[str, CaptureStore],
                                                            tmp_path: Path) -> None:
    url, capture = policy_server
    with RolloutPool("wordle", url, capture=capture, num_actors=1, sessions_per_actor=2, max_turns=2, model="tiny",
                     sampling={"max_tokens": 6, "temperature": 1.0, "seed": 0}, policy_version=3) as pool:
        rows = pool.run(make_groups(range(2), num_generations=2))
        summary = pool.metrics.summary()
    assert len(rows) == 4 and all(r.ok for r in rows), [r.error for r in rows]
    assert summary["model_ms"] > 0 and summary["episodes"] == 4
    for row in rows:
        assert row.done or row.truncated
        assert 1 <= len(row.trace.turns) <= 2 and len(row.trace.turns) == len(row.steps)
        turn = row.trace.turns[0]
        assert turn.prompt_token_ids and turn.completion_token_ids
        assert len(turn.per_token_logps) == len(turn.completion_token_ids)
        assert turn.request["messages"][0]["role"] == "user"
        assert row.rollout_type == "train" and row.policy.model == "tiny" and row.policy.version == 3
    assert len(capture) == 0  # every capture session was closed with its episode


class ToolCallingBackend:
    """A real PolicyBackend that calls ``echo_message`` once, then answers in text."""

    model_id = "tool-caller"

    async def chat(self, request: Any) -> Any:
        from openenv_train.policy import ChatChoice, ChatResult

        if request.messages[-1]["role"] == "tool":
            return ChatResult(self.model_id, [ChatChoice({"role": "assistant", "content": "done"}, "stop")])
        call = {"id": "call-0", "type": "function",
                "function": {"name": "echo_message", "arguments": '{"message": "hello pool"}'}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        return ChatResult(self.model_id, [ChatChoice(message, "tool_calls")])

    async def aclose(self) -> None:
        return None


def test_tool_agent_maps_tool_calls_to_mcp_tools(ray_local: Any) -> None:
    pytest.importorskip("httpx")
    from openenv_train.policy import PolicyServer
    from openenv_train.pool import ToolAgent

    capture = CaptureStore()
    with PolicyServer(ToolCallingBackend(), capture=capture).run_in_thread() as server, RolloutPool(
        "echo", server.base_url, agent=ToolAgent(), capture=capture, client="mcp", num_actors=1, sessions_per_actor=2,
    ) as pool:
        rows = pool.run(make_groups(range(2)))
    for row in rows:
        assert row.ok, row.error
        assert [s.action["tool_name"] for s in row.steps] == ["echo_message"]
        assert "hello pool" in str(row.steps[0].observation)
        assert len(row.trace.turns) == 2 and row.trace.turns[0].request["tools"]
        assert row.rollout_type == "eval"  # no token ids from this backend: not trainable


def test_episodes_held_by_a_killed_engine_are_retried_and_written_once(ray_local: Any, tmp_path: Path) -> None:
    """The engine process is killed (by its pid) once it has started decoding: the calls it held answer 503, the
    pool plays those episodes again on the engine started in its place, and every episode gives one row."""
    import os
    import signal
    import threading

    from openenv_train.policy import LocalBackend, PolicyServer, build_tiny_model

    capture = CaptureStore()
    backend = LocalBackend(str(build_tiny_model(tmp_path / "tiny", seed=0)), model_id="tiny")
    assert backend.engine.kind == "process"
    killed: list[int] = []

    def kill_once_decoding() -> None:
        if backend.engine.decoding.wait(120):
            killed.append(backend.engine.pid)
            os.kill(killed[0], signal.SIGKILL)

    watcher = threading.Thread(target=kill_once_decoding, daemon=True)
    with PolicyServer(backend, capture=capture).run_in_thread() as server:
        watcher.start()
        with RolloutPool("wordle", server.base_url, capture=capture, num_actors=1, sessions_per_actor=4, max_turns=2,
                         model="tiny", sampling={"max_tokens": 200, "temperature": 1.0, "seed": 0}) as pool:
            rows = pool.run(make_groups(range(2), num_generations=2))
            summary = pool.metrics.summary()
        watcher.join(5)
        assert killed and backend.engine.starts == 2 and backend.engine.pid != killed[0]
    assert len(rows) == 4 and all(r.ok for r in rows), [r.error for r in rows]
    assert sorted(r.episode_id for r in rows) == sorted({r.episode_id for r in rows})  # once each
    assert summary["retries"] >= 1
    assert all(t.completion_token_ids for r in rows for t in r.trace.turns)
    assert len(capture) == 0
