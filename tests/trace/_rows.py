"""Deterministic TraceRows for the harbor tests (content derived from the episode number)."""

from __future__ import annotations

import uuid
from typing import Any

from openenv_train.trace import EnvInfo, EnvStep, ErrorInfo, PolicyInfo, TraceRow, TrainingTrace, build_turn


def make_turn(episode: int, index: int, *, n_prompt: int = 6, n_completion: int = 4, tools: bool = False) -> Any:
    """Turn ``index`` of episode ``episode``: token ids and logprobs derived from both numbers."""
    base = episode * 1000 + index * 100
    reply: dict[str, Any] = {"role": "assistant", "content": f"guess {episode}.{index}"}
    if tools:
        reply["tool_calls"] = [{"id": f"call_{index}", "type": "function",
                                "function": {"name": "guess", "arguments": f'{{"word": "w{index}"}}'}}]
    return build_turn(
        messages=[{"role": "system", "content": "play"}, {"role": "user", "content": f"episode {episode}"}],
        tools=[{"type": "function", "function": {"name": "guess", "parameters": {"type": "object"}}}] if tools else None,
        message=reply,
        finish_reason="tool_calls" if tools else "stop",
        prompt_token_ids=[base + k for k in range(n_prompt)],
        completion_token_ids=[base + 50 + k for k in range(n_completion)],
        logprobs=[-0.01 * (k + 1) for k in range(n_completion)],
        sampling_requested={"temperature": 1.0},
        sampling_used={"temperature": 1.0, "top_p": 1.0},
        timings={"started_at": 1_700_000_000.0 + index, "seconds": 0.25},
        node_id=f"n{index}",
    )


def make_row(episode: int, *, run_id: str = "run", turns: int = 2, reward: float | None = 1.0, ok: bool = True,
             n_prompt: int = 6, n_completion: int = 4, **fields: Any) -> TraceRow:
    """Episode ``episode`` of ``run_id``; a fresh random trace id each call (like a re-run attempt)."""
    return TraceRow(
        trace_id=uuid.uuid4().hex,
        run_id=run_id,
        episode_id=f"ep{episode}",
        group_id=f"g{episode // 4}",
        env=EnvInfo(name="wordle", version="1", url="ws://127.0.0.1:1/ws"),
        task={"prompt": f"episode {episode}", "seed": episode, "nested": {"a": [1, 2.5, None]}},
        policy=PolicyInfo(model="tiny", version=3),
        reward=reward,
        rewards={"win": reward, "format": 0.5},
        done=True,
        ok=ok,
        error=None if ok else ErrorInfo(type="Timeout", message="env did not answer"),
        steps=[EnvStep(action={"word": "crane"}, observation={"feedback": "GYXXX"}, reward=0.0, seconds=0.01)],
        trace=TrainingTrace(turns=[make_turn(episode, i, n_prompt=n_prompt, n_completion=n_completion)
                                   for i in range(turns)]),
        timings={"reset": 0.1, "model": 0.5},
        **fields,
    )


def check_row(row: TraceRow, *, turns: int = 2, n_prompt: int = 6, n_completion: int = 4) -> None:
    """Assert a read-back row is complete and holds its episode's exact content."""
    episode = int(row.episode_id.removeprefix("ep"))
    expected = make_row(episode, run_id=row.run_id, turns=turns, n_prompt=n_prompt, n_completion=n_completion)
    assert row.model_dump(exclude={"trace_id"}) == expected.model_dump(exclude={"trace_id"})
