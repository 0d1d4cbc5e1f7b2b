"""The live task: an Inspect solver plays a catalog env (or a server URL) through our client, any Inspect model.

Each turn the model may call the ``env_step`` tool (``action``: a JSON object, or text for the env's main
field) or just answer in text, which is sent as the action. The observation goes back as the tool result (or a
user message) until the episode ends or ``max_turns`` is reached. The episode becomes a TraceRow (env steps
and the conversation's turns, ``rollout_type="eval"``), kept in the state's metadata for the rubric scorer and
written to ``trace_dir`` when given.
"""

from __future__ import annotations

import atexit
import json
import time
from pathlib import Path
from typing import Any

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser, ModelOutput, ModelUsage
from inspect_ai.scorer import mean_score, pass_at
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef

from .. import envs  # noqa: F401 - loading the catalog lends InProcessProvider (below it) its env names
from ..client import GenericEnvClient
from ..launch import InProcessProvider, RemoteProvider
from ..rubrics import Rubric
from ..trace import EnvInfo, EnvStep, ErrorInfo, PolicyInfo, TraceRow, TraceWriter, TrainingTrace, build_turn
from ._convert import openai_messages
from ._scorer import ROW_KEY, rubric_scorer

__all__ = ["ACTION_FIELDS", "env_agent", "live_task", "sample_epochs", "scripted_model"]

#: The action field a plain-text answer fills, per env (others: ``message``).
ACTION_FIELDS = {"reasoning_gym": "answer", "coding": "code", "repl": "code", "counter": "delta",
                 **{g: "action_id" for g in ("tic_tac_toe", "connect4", "catch", "blackjack", "2048", "kuhn_poker")}}
_WRITERS: dict[Path, TraceWriter] = {}


def _writer(trace_dir: str) -> TraceWriter:
    path = Path(trace_dir).resolve()
    if path not in _WRITERS:
        _WRITERS[path] = TraceWriter(path, flush_rows=1)
        atexit.register(_WRITERS[path].close)
    return _WRITERS[path]


def _action(env: str, raw: Any) -> dict[str, Any]:
    """An env action from a tool argument or reply text: a JSON object as is, else the env's main field."""
    if isinstance(raw, dict):
        return raw
    text = str(raw).strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    field = ACTION_FIELDS.get(env, "message")
    if field in ("action_id", "delta"):
        digits = "".join(c for c in text if c.isdigit() or c == "-")[:6]
        return {field: int(digits) if digits.lstrip("-").isdigit() else 0}
    return {field: text}


def _observation_text(obs: dict[str, Any]) -> str:
    for key in ("prompt", "question", "info_string", "stdout"):
        if isinstance(obs.get(key), str) and obs[key] and obs[key] != "Wordle-v0":
            return str(obs[key])
    messages = obs.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        return str(messages[-1].get("content", ""))[-2000:]
    return json.dumps(obs, ensure_ascii=False)[:4000]


def _tool() -> Any:
    async def env_step(action: str) -> str:
        """Send one action to the environment.

        Args:
            action: the action, as a JSON object or as the text of the env's main field (e.g. a Wordle guess).
        """
        return ""  # executed by the env_agent solver, which owns the env session

    return ToolDef(env_step, name="env_step").as_tool()


async def _play(state: TaskState, generate: Generate, env: str, client: Any, max_turns: int,
                reset: dict[str, Any], steps: list[EnvStep]) -> None:
    """Play until done or ``max_turns``, appending each env step to ``steps``."""
    result = await client.reset(**reset)
    state.messages.append(ChatMessageUser(content=_observation_text(result.observation)))
    for _ in range(max_turns):
        state = await generate(state, tool_calls="none")
        reply = state.messages[-1]
        calls = reply.tool_calls if isinstance(reply, ChatMessageAssistant) else None
        raw: Any = calls[0].arguments.get("action", calls[0].arguments) if calls else state.output.completion
        action, start = _action(env, raw), time.perf_counter()
        result = await client.step(action)
        steps.append(EnvStep(action=action, observation=result.observation, reward=result.reward, done=result.done,
                             seconds=time.perf_counter() - start))
        text = _observation_text(result.observation)
        if calls:
            state.messages.append(ChatMessageTool(content=text, tool_call_id=calls[0].id, function=calls[0].function))
        else:
            state.messages.append(ChatMessageUser(content=text))
        if result.done:
            break


def _turns(state: TaskState) -> TrainingTrace:
    messages = openai_messages(state.messages)
    turns = [build_turn(messages=messages[:i], message=m, finish_reason="stop", node_id=f"turn-{n}")
             for n, (i, m) in enumerate((i, m) for i, m in enumerate(messages) if m["role"] == "assistant")]
    return TrainingTrace(turns=turns)


@solver
def env_agent(env: str = "wordle", env_url: str | None = None, max_turns: int = 8,
              trace_dir: str | None = None, run_id: str = "inspect") -> Solver:
    """Play one episode of ``env`` per sample (reset options from the sample's ``reset`` metadata)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.tools = [_tool()]
        reset = dict(state.metadata.get("reset") or {})
        provider = RemoteProvider(env_url) if env_url else InProcessProvider(env)
        started = time.perf_counter()
        steps: list[EnvStep] = []
        error: ErrorInfo | None = None
        try:
            async with GenericEnvClient(provider=provider) as client:
                await _play(state, generate, env, client, max_turns, reset, steps)
        except Exception as exc:  # a failed episode is a row (ok=False), scored on the steps it took
            error = ErrorInfo(type=type(exc).__name__, message=str(exc)[:2000])
        done = bool(steps and steps[-1].done)
        row = TraceRow(
            run_id=run_id, episode_id=f"{env}-{state.sample_id}-{state.epoch}",
            env=EnvInfo(name=env, url=env_url), task={"env": env, **reset},
            policy=PolicyInfo(model=str(state.model)), reward=steps[-1].reward if steps else None, done=done,
            truncated=bool(steps) and not done and error is None, ok=error is None, error=error, steps=steps,
            trace=_turns(state), rollout_type="eval", timings={"episode": time.perf_counter() - started},
        )
        state.metadata[ROW_KEY] = row.model_dump_json()
        if trace_dir:
            _writer(trace_dir).write(row)
        return state

    return solve


def scripted_model(replies: list[str]) -> Any:
    """``mockllm/model`` answering ``replies`` in turn (then the last again), with usage set on every output."""
    from inspect_ai.model import get_model

    def outputs() -> Any:
        i = 0
        while True:
            text = replies[min(i, len(replies) - 1)]
            i += 1
            output = ModelOutput.from_content(model="mockllm", content=text)
            output.usage = ModelUsage(input_tokens=1, output_tokens=len(text.split()), total_tokens=1 + len(text.split()))
            yield output

    return get_model("mockllm/model", custom_outputs=outputs())


def sample_epochs(epochs: int, success_threshold: float = 1.0) -> Epochs:
    """``epochs`` epochs of every sample, reduced by Inspect's ``mean`` and its pass@k (Chen et al. 2021) for
    k = 1 and ``epochs``: a score key at or above ``success_threshold`` is a success (the rubric's ``correct``,
    ``env_reward`` 1.0 = a win or a solved task)."""
    ks = sorted({1, epochs})
    return Epochs(epochs, [mean_score(), *(pass_at(k, value=success_threshold) for k in ks)])


def live_task(env: str = "wordle", rubric: str | Rubric = "wordle", episodes: int = 2, seed: int = 0,
              max_turns: int = 8, env_url: str | None = None, trace_dir: str | None = None,
              reset: dict[str, Any] | None = None, replies: list[str] | None = None, epochs: int = 1,
              success_threshold: float = 1.0, **task_args: Any) -> Task:
    """An Inspect Task: ``episodes`` episodes of ``env`` (seeds ``seed``..), scored by ``rubric``.

    ``replies`` makes the task's model ``mockllm/model`` answering those texts (usage set, fully offline).
    ``epochs`` > 1 plays each episode that many times (trace rows ``<env>-<id>-<epoch>``) and reports the mean and
    pass@1, pass@epochs of every score key (:func:`sample_epochs`).
    """
    if epochs > 1:
        task_args["epochs"] = sample_epochs(epochs, success_threshold)
    samples = [Sample(id=i + 1, input=f"Play {env}.", metadata={"reset": {"seed": seed + i, **(reset or {})}})
               for i in range(episodes)]
    if replies:
        task_args.setdefault("model", scripted_model(replies))
    return Task(dataset=MemoryDataset(samples, name=env), solver=env_agent(env, env_url, max_turns, trace_dir),
                scorer=rubric_scorer(rubric), **task_args)
