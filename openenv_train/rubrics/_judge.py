"""LLM judge: a prompt template, any OpenAI-compatible endpoint as the judge, a declared scale rescaled to [0, 1].

The judge's own calls are training data too: pass the :class:`~openenv_train.trace.CaptureStore` of the
:class:`~openenv_train.policy.PolicyServer` it calls, and each judgement becomes a capture session whose trace
is kept as a :class:`~openenv_train.trace.TraceRow` in ``judge.traces`` (and written to ``writer`` if given).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from ..core import OpenEnvTrainError
from ..trace import CaptureStore, EnvInfo, PolicyInfo, TraceRow, TraceWriter, reply_of, text_of
from ._base import Rubric

__all__ = ["DEFAULT_JUDGE_TEMPLATE", "JudgeError", "LLMJudge", "parse_score", "render_prompt"]

DEFAULT_JUDGE_TEMPLATE = (
    "Rate the assistant's answer to the task on a scale from {low} to {high}.\n"
    "Task: {prompt}\nAnswer: {response}\nReply with 'Score: N'."
)
_FIELD = re.compile(r"\{\{|\}\}|\{(\w+)\}")
_SCORE = re.compile(r"score\W{0,3}(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class JudgeError(OpenEnvTrainError):
    """The judge gave no usable score after every retry."""


def render_prompt(template: str, values: Mapping[str, Any]) -> str:
    """Fill ``{name}`` fields that ``values`` has; other braces (JSON, code) stay literal; ``{{``/``}}`` escape.

    >>> render_prompt('Rate {response} as JSON {"score": n} {{x}}', {"response": "hi"})
    'Rate hi as JSON {"score": n} {x}'
    """

    def fill(match: re.Match[str]) -> str:
        token, name = match.group(0), match.group(1)
        if name is None:
            return token[0]
        return str(values[name]) if name in values else token

    return _FIELD.sub(fill, template)


def parse_score(text: str, scale: tuple[float, float]) -> float:
    """The judge's score in ``text`` (``Score: N``, else the last number), rescaled from ``scale`` to [0, 1].

    >>> parse_score("Reasoning... Score: 7", (0, 10))
    0.7

    Raises:
        ValueError: no number, or one outside the scale.
    """
    low, high = scale
    match = _SCORE.search(text)
    numbers = [match.group(1)] if match else _NUMBER.findall(text)
    if not numbers:
        raise ValueError(f"no score in the judge's reply {text[:200]!r}")
    value = float(numbers[-1])
    if not low <= value <= high:
        raise ValueError(f"score {value:g} is outside the declared scale {low:g}..{high:g}")
    return (value - low) / (high - low)


def _row_values(row: TraceRow) -> dict[str, Any]:
    """Template fields from a row: prompt, response, task (JSON), reward, env."""
    turns = row.trace.turns
    messages = turns[0].request.get("messages", []) if turns else []
    prompt = row.task.get("prompt") or next((text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
    reply = reply_of(turns[-1]) if turns else None
    response = text_of(reply.get("content")) if reply else json.dumps(row.steps[-1].action) if row.steps else ""
    return {"prompt": prompt, "response": response, "task": json.dumps(row.task, ensure_ascii=False),
            "reward": row.reward, "env": row.env.name}


class LLMJudge(Rubric):
    """Ask a model to grade a row; the reply's score on ``scale`` is rescaled to [0, 1].

    Args:
        base_url: the judge's OpenAI-compatible ``.../v1`` URL (our PolicyServer's ``base_url`` or any other).
        template: the prompt; fields ``{prompt}``, ``{response}``, ``{task}``, ``{reward}``, ``{env}``, ``{low}``,
            ``{high}`` and any in ``values``; other braces are literal.
        model: model name to ask for (default ``"judge"``).
        scale: the declared scale ``(low, high)``.
        retries: further attempts after an unusable or failed answer.
        api_key: bearer token when no capture session is used.
        capture: the capture store of the PolicyServer at ``base_url``; each judgement is then captured.
        writer: where captured judge traces are also written.
        timeout_s: limit on one judge call.
        max_tokens: limit on the judge's reply.
    """

    def __init__(self, base_url: str, template: str = DEFAULT_JUDGE_TEMPLATE, *, model: str = "judge",
                 scale: tuple[float, float] = (0.0, 10.0), retries: int = 2, api_key: str | None = None,
                 capture: CaptureStore | None = None, writer: TraceWriter | None = None, timeout_s: float = 60.0,
                 max_tokens: int = 64, values: Mapping[str, Any] | None = None, name: str = "judge",
                 **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        if scale[1] <= scale[0] or retries < 0:
            raise ValueError(f"scale must be (low, high) with low < high and retries >= 0, got {scale}, {retries}")
        self.base_url, self.template, self.model = base_url.rstrip("/"), template, model
        self.scale, self.retries, self.api_key = scale, retries, api_key
        self.capture, self.writer, self.timeout_s, self.max_tokens = capture, writer, timeout_s, max_tokens
        self.values = dict(values or {})
        self.traces: list[TraceRow] = []

    def on_reset(self) -> None:
        self.traces.clear()

    async def score(self, row: TraceRow) -> float | None:
        values = {**_row_values(row), "low": f"{self.scale[0]:g}", "high": f"{self.scale[1]:g}", **self.values}
        messages = [{"role": "user", "content": render_prompt(self.template, values)}]
        problems: list[str] = []
        for attempt in range(self.retries + 1):
            session = f"judge-{uuid.uuid4().hex}" if self.capture is not None else None
            if session is not None:
                assert self.capture is not None
                self.capture.open_session(session, metadata={"scored_trace_id": row.trace_id})
            text, score = "", None
            try:
                text = await self._ask(messages, session)
                score = parse_score(text, self.scale)
            except Exception as exc:  # bad reply or failed call: try again
                problems.append(f"attempt {attempt + 1}: {type(exc).__name__}: {exc}")
            finally:
                if session is not None:
                    self._keep_trace(session, row, score, attempt)
            if score is not None:
                return score
            if attempt < self.retries:
                await asyncio.sleep(0.05 * 2**attempt)
        raise JudgeError(f"judge {self.name!r} at {self.base_url} gave no score on {self.scale}: {'; '.join(problems)}")

    async def _ask(self, messages: list[dict[str, Any]], session: str | None) -> str:
        from ..policy import ChatClient  # the policy package (and httpx) only when a judge is asked

        body = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens, "temperature": 0.0}
        async with ChatClient(self.base_url, timeout_s=self.timeout_s) as client:
            reply = await client.chat(body, api_key=session or self.api_key)
        if reply.status >= 400:
            raise JudgeError(f"the judge endpoint answered {reply.status}: {reply.text[:300]}")
        if reply.data is None:
            raise ValueError(f"the judge endpoint answered no JSON: {reply.text[:300]}")
        return text_of(reply.data["choices"][0]["message"].get("content"))

    def _keep_trace(self, session: str, row: TraceRow, score: float | None, attempt: int) -> None:
        assert self.capture is not None
        trace = self.capture.close_session(session)
        judged = TraceRow(
            run_id=row.run_id, episode_id=f"{row.trace_id}-judge-{self.name}-{attempt}", group_id=row.trace_id,
            env=EnvInfo(name=f"judge:{self.name}"), task={"scored_trace_id": row.trace_id, "rubric": self.name},
            policy=PolicyInfo(model=self.model), reward=score, done=True, trace=trace, rollout_type="eval",
        )
        self.traces.append(judged)
        if self.writer is not None:
            self.writer.write(judged)
