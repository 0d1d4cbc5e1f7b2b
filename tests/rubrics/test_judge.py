"""LLM judge: templates, score parsing on a scale, retries, capture of the judge's calls, failures recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_train.policy import ChatChoice, ChatRequest, ChatResult, PolicyServer
from openenv_train.rubrics import Components, JudgeError, LLMJudge, parse_score, render_prompt, wordle_rubric
from openenv_train.trace import CaptureStore, TraceWriter, read_traces

from ._rows import wordle_row


class Scripted:
    """A policy backend answering the given texts in turn (the last one repeats)."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.requests = replies, []  # type: ignore[var-annotated]

    @property
    def model_id(self) -> str:
        return "scripted-judge"

    async def chat(self, request: ChatRequest) -> ChatResult:
        self.requests.append(request)
        text = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]
        return ChatResult(self.model_id, [ChatChoice({"role": "assistant", "content": text}, "stop", [1, 2], [-0.1, -0.2])],
                          prompt_token_ids=[5, 6, 7], exact=True)

    async def aclose(self) -> None:
        pass


def test_render_prompt_keeps_literal_braces() -> None:
    template = 'Task {prompt}. Answer as JSON {"score": <n>} with {{braces}} and {unknown}.'
    assert render_prompt(template, {"prompt": "P"}) == 'Task P. Answer as JSON {"score": <n>} with {braces} and {unknown}.'


@pytest.mark.parametrize(("text", "scale", "expected"), [
    ("Score: 7", (0, 10), 0.7), ("I'd say 4 out of 5. Score = 4", (1, 5), 0.75), ("3", (1, 5), 0.5),
    ('{"score": 10}', (0, 10), 1.0),
])
def test_parse_score_rescales(text: str, scale: tuple[float, float], expected: float) -> None:
    assert parse_score(text, scale) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["no number here", "Score: 11"])
def test_parse_score_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_score(text, (0, 10))


async def test_judge_over_policy_server_with_retries_and_captured_traces(tmp_path: Path) -> None:
    backend, capture = Scripted(["hmm, no idea", "Score: 7"]), CaptureStore()
    async with PolicyServer(backend, capture=capture) as server:
        with TraceWriter(tmp_path / "judge", flush_rows=1) as writer:
            judge = LLMJudge(server.base_url, "Grade {response} for {env}; JSON like {\"score\": n}.", capture=capture,
                             writer=writer, retries=2)
            row = wordle_row("crane")
            result = await judge.ascore(row)
    assert result.total == pytest.approx(0.7) and result.errors == {}
    prompt = backend.requests[0].messages[0]["content"]
    assert row.trace.turns[-1].response["choices"][0]["message"]["content"] in prompt and '{"score": n}' in prompt
    assert len(judge.traces) == 2 and [t.reward for t in judge.traces] == [None, pytest.approx(0.7)]
    written = read_traces(tmp_path / "judge")
    assert [len(t.trace.turns) for t in written] == [1, 1]
    assert written[1].trace.turns[0].completion_token_ids == [1, 2] and written[1].task["scored_trace_id"] == row.trace_id
    assert len(capture) == 0  # every judge session closed
    judge.reset()
    assert judge.traces == []


async def test_failing_judge_is_recorded_not_fatal() -> None:
    async with PolicyServer(Scripted(["I refuse to grade"])) as server:
        judge = LLMJudge(server.base_url, retries=1)
        with pytest.raises(JudgeError, match="gave no score"):
            await judge.score(wordle_row("crane"))
        rubric = Components([wordle_rubric(), judge])
        result = await rubric.ascore(wordle_row("crane"))
    assert result.components["judge"] == 0.0 and "JudgeError" in result.errors["judge"]
    assert result.components["wordle"] == result.total and result.total is not None and result.total > 1.0
    dead = await LLMJudge("http://127.0.0.1:9/v1", retries=0, timeout_s=2).ascore(wordle_row("crane"))
    assert dead.total == 0.0 and "judge" in dead.errors
