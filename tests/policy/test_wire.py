"""The pure parts: request validation, message normalisation, tool-call parsing, batch failure isolation."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from openenv_train.policy import InvalidRequest, parse_chat_request, parse_tool_calls
from openenv_train.policy._engine.batcher import Batcher
from openenv_train.policy._wire.messages import messages_extend, normalise_messages, reply_message

USER = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ([], None),
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages[0].content[0]"),
        ({"messages": USER, "temperature": -1}, "temperature"),
        ({"messages": USER, "temperature": "hot"}, "temperature"),
        ({"messages": USER, "top_p": 0}, "top_p"),
        ({"messages": USER, "max_tokens": 0}, "max_tokens"),
        ({"messages": USER, "n": 99}, "n"),
        ({"messages": USER, "stop": [""]}, "stop"),
        ({"messages": USER, "top_logprobs": 3}, "top_logprobs"),
        ({"messages": USER, "logprobs": "yes"}, "logprobs"),
        ({"messages": USER, "stream": "yes"}, "stream"),
        ({"messages": USER, "stream": True, "stream_options": 3}, "stream_options"),
        ({"messages": USER, "stream": True, "stream_options": {"include_usage": "yes"}}, "stream_options"),
        ({"messages": USER, "stream": True, "stream_options": {"usage": True}}, "stream_options"),
        ({"messages": USER, "stream_options": {"include_usage": True}}, "stream_options"),
        ({"messages": USER, "tools": [{"type": "function"}]}, "tools[0]"),
        ({"messages": USER, "tool_choice": "sometimes"}, "tool_choice"),
    ],
)
def test_malformed_requests_name_the_field(body: Any, param: str | None) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_chat_request(body)
    assert info.value.param == param
    error = info.value.to_json()["error"]
    assert error["type"] == "invalid_request_error" and set(error) == {"message", "type", "param", "code"}


def test_request_fields_are_parsed() -> None:
    request = parse_chat_request({
        "model": "m", "messages": [{"role": "developer", "content": [{"type": "text", "text": "be brief"}]}, *USER],
        "temperature": 0.5, "top_p": 0.9, "max_completion_tokens": 7, "max_tokens": 99, "stop": "\n", "seed": -1,
        "n": 2, "logprobs": True, "top_logprobs": 2, "top_k": -1, "user": "ignored",
    })
    s = request.sampling
    assert (s.temperature, s.top_p, s.top_k, s.max_tokens, s.stop, s.n, s.top_logprobs) == (0.5, 0.9, 0, 7, ("\n",), 2, 2)
    assert s.seed is not None and s.seed >= 0
    assert request.messages[0] == {"role": "system", "content": "be brief"}


def test_tool_calls_parse_and_round_trip() -> None:
    text = 'Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>\n<tool_call>\n' \
           '{"name": "neg", "arguments": {"x": 2}}\n</tool_call>'
    content, calls = parse_tool_calls(text)
    assert content == "Sure." and [c["name"] for c in calls] == ["add", "neg"]
    message = reply_message(text, parse_tools=True)
    assert message["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 1}'}
    assert reply_message(text, parse_tools=False) == {"role": "assistant", "content": text}
    assert parse_tool_calls("<tool_call>{oops}</tool_call>") == ("<tool_call>{oops}</tool_call>", [])
    assert parse_tool_calls('<tool_call>{"arguments": {}}</tool_call>')[1] == []
    # The caller echoes the reply back (string arguments, extra keys): it still counts as the model's reply.
    old = normalise_messages(USER)
    echo = {**message, "refusal": None, "tool_calls": [{**c, "id": "other"} for c in message["tool_calls"]]}
    assert messages_extend(normalise_messages([*USER, echo, {"role": "tool", "content": "1"}]), old, message)
    assert not messages_extend(normalise_messages([*USER, {"role": "assistant", "content": "x"}]), old, message)


async def test_a_failing_row_fails_only_its_job() -> None:
    def run(rows: list[int]) -> list[int]:
        if 13 in rows:
            raise RuntimeError("unlucky row")
        return [r * 2 for r in rows]

    batcher: Batcher[int, int] = Batcher(run, window_s=0.02)
    try:
        together = await asyncio.gather(*(batcher.submit([i, i + 100]) for i in range(20, 26)))
        results = await asyncio.gather(*(batcher.submit([i, i + 100]) for i in range(10, 16)),
                                       return_exceptions=True)
    finally:
        await batcher.aclose()
    assert [out for out, _ in together][0] == [40, 240] and {info.batch_rows for _, info in together} == {12}
    assert isinstance(results[3], RuntimeError)
    ok = [r for i, r in enumerate(results) if i != 3]
    assert all(not isinstance(r, BaseException) for r in ok)
    outputs, info = results[0]  # type: ignore[misc]
    assert outputs == [20, 220] and info.batch_rows == 2  # the batch of 12 failed; each job then ran alone


async def test_jobs_coming_back_from_a_larger_batch_wait_for_each_other() -> None:
    """Multi-turn episodes answered together return a few ms apart; with a slow batch before, the first one to
    return waits for the rest (up to a fraction of that batch's time) instead of running alone."""
    def run(rows: list[int]) -> list[int]:
        time.sleep(1.0)
        return rows

    batcher: Batcher[int, int] = Batcher(run, window_s=0.001, expecting=lambda: 0, wait_fraction=0.5)

    async def later(i: int) -> tuple[list[int], Any]:
        await asyncio.sleep(0.01 * i)
        return await batcher.submit([i])

    try:
        first = await asyncio.gather(*(batcher.submit([i]) for i in range(4)))
        again = await asyncio.gather(*(later(i) for i in range(4)))
    finally:
        await batcher.aclose()
    assert {info.batch_rows for _, info in first} == {4}
    assert {info.batch_rows for _, info in again} == {4}  # one batch, not the first alone and then the rest


def test_what_agent_clis_send_is_read_not_refused() -> None:
    """Claude Code sends system messages mid-conversation; Codex offers hosted tools the model cannot call."""
    from openenv_train.policy._wire import anthropic_messages, openai_responses

    body = anthropic_messages.chat_body({"max_tokens": 8, "messages": [
        {"role": "user", "content": "hi"}, {"role": "system", "content": [{"type": "text", "text": "Be brief."}]}]})
    assert body["messages"] == [{"role": "user", "content": "hi"}, {"role": "system", "content": "Be brief."}]
    chat, _ = openai_responses.chat_body({"input": "hi", "tools": [
        {"type": "web_search"}, {"type": "custom", "name": "apply_patch"},
        {"type": "function", "name": "add", "parameters": {"type": "object"}}]})
    assert [tool["function"]["name"] for tool in chat["tools"]] == ["add"]
