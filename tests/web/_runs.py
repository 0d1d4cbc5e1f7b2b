"""Runs for the viewer tests: Wordle-like episodes written with the real TraceWriter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openenv_train.trace import EnvInfo, EnvStep, ErrorInfo, PolicyInfo, TraceRow, TraceWriter, TrainingTrace, build_turn

#: The completion tokens of every turn, as (text, logprob); "cr" is the unlikely one.
TOKENS = [("[", -0.01), ("cr", -2.3), ("ane", -0.2), ("]", -0.05)]
SYSTEM = "You are playing Wordle. Reply with your guess in brackets."


#: The reply of a tool-calling turn (echo rows): one call of the echo env's tool.
TOOL_REPLY = {"role": "assistant", "content": "[crane]", "tool_calls": [
    {"id": "call_0", "type": "function", "function": {"name": "echo_message", "arguments": '{"message": "crane"}'}}]}


def _conversation(episode: int, index: int, tools: bool) -> list[dict[str, Any]]:
    """What call ``index`` is sent: the system prompt, then each guess request and the earlier replies."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for k in range(index + 1):
        if k and tools:
            messages += [TOOL_REPLY, {"role": "tool", "tool_call_id": "call_0", "content": "crane"}]
        elif k:
            messages.append({"role": "assistant", "content": "[crane]"})
        messages.append({"role": "user", "content": f"Game {episode}, guess {k + 1}"})
    return messages


def make_turn(episode: int, index: int, *, token_strings: bool, tools: bool = False) -> Any:
    """One model call: the guess ``[crane]`` as four tokens with logprobs (ids derived from the numbers)."""
    base = 100 + episode * 10 + index
    metadata_tokens = [t for t, _ in TOKENS]
    turn = build_turn(
        messages=_conversation(episode, index, tools), tools=[{"type": "function", "function": {"name": "echo_message"}}]
        if tools else None, message=TOOL_REPLY if tools else {"role": "assistant", "content": "[crane]"},
        finish_reason="tool_calls" if tools else "stop",
        prompt_token_ids=list(range(base, base + 8)), completion_token_ids=[base + 20 + k for k in range(len(TOKENS))],
        logprobs=[lp for _, lp in TOKENS], model="tiny-test-model", node_id=f"turn-{index}",
    )
    if token_strings:
        turn = turn.model_copy(update={"metadata": {**turn.metadata, "completion_tokens": metadata_tokens}})
    return turn


def make_row(episode: int, *, env: str = "wordle", reward: float | None = 1.0, ok: bool = True, turns: int = 2,
             token_strings: bool = True) -> TraceRow:
    """Episode ``episode``: group ``g<episode // 2>``, ``turns`` guesses, per-step rewards and components."""
    steps = [EnvStep(action={"message": "[crane]"}, observation={"feedback": ["GYXXX"] * (k + 1), "guesses": ["crane"]},
                     reward=0.1 * k, done=k == turns - 1, seconds=0.01) for k in range(turns)]
    return TraceRow(
        run_id="web-run", episode_id=f"ep{episode}", group_id=f"g{episode // 2}",
        env=EnvInfo(name=env, version="1"), task={"seed": episode}, policy=PolicyInfo(model="tiny-test-model", version=episode),
        reward=reward, rewards={"wordle.greens": 0.2, "wordle.correct": reward}, done=ok, ok=ok,
        error=None if ok else ErrorInfo(type="EnvTimeout", message="the env did not answer within 5 s"),
        steps=steps if ok else [],
        trace=TrainingTrace(turns=[make_turn(episode, i, token_strings=token_strings, tools=env == "echo")
                                   for i in range(turns)]),
        timings={"model": 0.5},
    )


def write_run(run_dir: Path, n: int = 12, *, metrics: bool = True, flush_rows: int = 5) -> list[TraceRow]:
    """A run dir: ``n`` episodes (every 4th on env ``echo``, episode 3 failed) and a metrics.jsonl."""
    rows = [make_row(i, env="echo" if i % 4 == 1 else "wordle", reward=None if i == 3 else round(i / (n - 1), 3),
                     ok=i != 3, token_strings=i % 2 == 0) for i in range(n)]
    with TraceWriter(run_dir, flush_rows=flush_rows) as writer:
        writer.write_many(rows)
    if metrics:
        # a trainer's extras: "clip_ratio" never changes (folded), "lr" does (picked on demand)
        lines = [{"step": s, "clip_ratio": 0.0, "lr": 1e-3 * (8 - s), "reward": 0.1 * s, "win_rate": min(1.0, 0.15 * s),
                  "loss": 1.0 / (s + 1)} for s in range(8)]
        (run_dir / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"step": 8, "rew')
    return rows


def _call(node_id: str, prompt: list[int], completion: list[int], texts: list[str], reply: str) -> Any:
    """One agent call: ``texts`` its messages, user and assistant in turn (a call repeats the ones it continues)."""
    messages = [{"role": "assistant" if k % 2 else "user", "content": t} for k, t in enumerate(texts)]
    return build_turn(messages=messages, message={"role": "assistant", "content": reply}, finish_reason="stop",
                      prompt_token_ids=prompt, completion_token_ids=completion, model="tiny-test-model",
                      node_id=node_id)


#: An agent's calls: a side call for a title, a retry that forks the conversation, a context rewrite.
BRANCHED_CALLS = [
    ("a", [1, 2, 3], [4, 5], ["fix the bug"], "looking"),
    ("title", [1, 9, 9], [7], ["title for: fix the bug"], "Bug fix"),
    ("b", [1, 2, 3, 4, 5, 6], [7], ["fix the bug", "looking", "go on"], "first try"),
    ("b2", [1, 2, 3, 4, 5, 6], [8, 8], ["fix the bug", "looking", "go on"], "second try"),
    ("c", [1, 2, 3, 4, 5, 6, 8, 8, 6], [2], ["fix the bug", "looking", "go on", "second try", "done?"], "done"),
    ("d", [1, 2, 3, 4, 6, 6], [1], ["summary: fix a bug, tried once"], "compacted"),
]


def write_branched_run(run_dir: Path) -> TraceRow:
    """A run dir of one agent episode whose calls branch (see :data:`BRANCHED_CALLS`)."""
    row = TraceRow(run_id="agent-run", episode_id="agent0", env=EnvInfo(name="harbor", version="1"),
                   policy=PolicyInfo(model="tiny-test-model"), reward=1.0, done=True, ok=True,
                   trace=TrainingTrace(turns=[_call(*c) for c in BRANCHED_CALLS]))
    with TraceWriter(run_dir) as writer:
        writer.write(row)
    return row
