"""Hypothesis fuzzing of the policy server's ``POST /v1/chat/completions`` over the tiny offline model.

Random malformed OpenAI requests (a valid body with fields replaced by random JSON, random message
lists, tool definitions and tool calls, raw and cut-off bodies) must each get either a completion
(200) or an OpenAI-style error body with a 4xx status, never a 500 or a dropped connection, and the
server keeps serving. ``tests/policy/test_wire.py`` has the hand-picked cases; this adds random ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=50, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "n", "stop", "seed", "logprobs",
                 "top_logprobs", "top_k", "stop_token_ids", "stream", "tools", "tool_choice", "chat_template_kwargs",
                 "return_tokens_as_token_ids", "model", "frequency_penalty", "user", "response_format", "stream_options")

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
scalars = (st.none() | st.booleans() | st.integers(-(2**66), 2**66)
           | st.floats(allow_nan=False, allow_infinity=False) | text)
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3),
                           max_leaves=8)
# Unhashable roles ([] or {}) are hand-written cases below.
roles = st.sampled_from(["user", "assistant", "system", "developer", "tool", "function", "robot", ""]) | scalars
contents = (text | st.none() | json_values
            | st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "input_audio"]) | text},
                                             optional={"text": text | json_values, "image_url": json_values}),
                       max_size=2))
tool_calls = st.lists(st.fixed_dictionaries(
    {}, optional={"id": text | json_values, "type": st.just("function") | json_values,
                  "function": st.fixed_dictionaries({}, optional={
                      "name": st.just("add") | text | json_values,
                      "arguments": st.just('{"a": 1}') | text | json_values})}),
    max_size=2) | json_values
messages = st.fixed_dictionaries(
    {"role": roles}, optional={"content": contents, "name": text | json_values, "tool_calls": tool_calls,
                               "tool_call_id": text | json_values, "reasoning_content": text | json_values},
) | json_values
tools = st.lists(st.fixed_dictionaries({}, optional={
    "type": st.just("function") | json_values,
    "function": st.fixed_dictionaries({}, optional={"name": st.just("add") | text | json_values,
                                                    "parameters": json_values, "description": text | json_values}),
}), max_size=2) | json_values
small_ints = st.integers(-3, 4) | st.sampled_from([2**63, -(2**63) - 1, 10**30])
field_values = {
    "temperature": st.floats(-1, 3) | json_values, "top_p": st.floats(-0.5, 1.5) | json_values,
    "max_tokens": small_ints | json_values, "max_completion_tokens": small_ints | json_values,
    "n": small_ints | json_values, "stop": st.lists(text, max_size=3) | json_values,
    "seed": st.integers() | json_values, "top_logprobs": small_ints | json_values,
    "stop_token_ids": st.lists(st.integers(-5, 10**12), max_size=3) | json_values,
    "tools": tools, "tool_choice": st.sampled_from(["none", "auto", "required"]) | json_values,
    "stream": st.booleans() | json_values,
    "stream_options": st.fixed_dictionaries({}, optional={"include_usage": st.booleans() | json_values}) | json_values,
}


@st.composite
def bodies(draw: st.DrawFn) -> Any:
    body: dict[str, Any] = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    if draw(st.booleans()):
        body["messages"] = draw(st.lists(messages, max_size=4) | json_values)
    for key in draw(st.lists(st.sampled_from(SAMPLING_KEYS), max_size=4, unique=True)):
        body[key] = draw(field_values.get(key, json_values))
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)  # not even an object
    return body


def _bounded(body: Any) -> Any:
    """Keep a body that turns out valid cheap to answer: at most 4 tokens per choice."""
    if isinstance(body, dict):
        for key in ("max_tokens", "max_completion_tokens"):
            value = body.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 4:
                body[key] = 4
    return body


def check_reply(status: int, reply: Any, sent: Any) -> None:
    assert status != 500 and status < 500, (status, reply, sent)
    if status == 200 and isinstance(reply, list):  # a stream: chunks, then [DONE]
        assert reply and reply[-1] == "[DONE]" and reply[0]["object"] == "chat.completion.chunk", reply
        assert all(set(c) == {"error"} or c["object"] == "chat.completion.chunk" for c in reply[:-1]), reply
        return
    if status == 200:
        assert reply["object"] == "chat.completion" and reply["choices"], reply
        return
    assert 400 <= status < 500, (status, reply)
    assert isinstance(reply, dict) and set(reply) == {"error"}, reply
    error = reply["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert isinstance(error["message"], str) and error["message"] and isinstance(error["type"], str), error


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    for module in ("torch", "transformers", "tokenizers"):
        pytest.importorskip(module)
    import httpx
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.policy import LocalBackend, PolicyServer, build_tiny_model

    path: Path = build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    server = PolicyServer(LocalBackend(model, tokenizer, model_id="tiny"), token="").run_in_thread()
    try:
        with httpx.Client(base_url=server.url, timeout=60, trust_env=False) as client:
            yield client
    finally:
        server.close()


def _post(client: Any, content: bytes) -> tuple[int, Any]:
    reply = client.post("/v1/chat/completions", content=content, headers={"content-type": "application/json"})
    if reply.headers.get("content-type") == "text/event-stream":
        events = [e.removeprefix("data: ") for e in reply.text.split("\n\n") if e]
        return reply.status_code, [e if e == "[DONE]" else json.loads(e) for e in events]
    try:
        return reply.status_code, reply.json()
    except ValueError:
        return reply.status_code, reply.text


def _still_serving(client: Any) -> None:
    status, reply = _post(client, json.dumps({"messages": [{"role": "user", "content": "ok"}], "max_tokens": 1}).encode())
    assert status == 200 and reply["choices"][0]["message"]["role"] == "assistant", reply


@given(body=bodies())
@FUZZ
def test_fuzz_chat_completions(policy: Any, body: Any) -> None:
    body = _bounded(body)
    status, reply = _post(policy, json.dumps(body).encode())
    check_reply(status, reply, body)


@given(raw=st.binary(max_size=80) | bodies().map(lambda b: json.dumps(b).encode()[: len(json.dumps(b)) // 2]))
@settings(FUZZ, max_examples=30)
def test_fuzz_chat_raw_bodies(policy: Any, raw: bytes) -> None:
    status, reply = _post(policy, raw)
    check_reply(status, reply, raw)


@pytest.mark.parametrize("raw", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"messages":[{"role":"user","content":' + b"[" * 50_000 + b"]" * 50_000 + b"}]}",
    b'{"messages":[{"role":"user","content":"hi"}],"temperature":1e400}',
    b'{"messages":[{"role":"user","content":"hi"}],"temperature":NaN}',
    b'{"messages":[{"role":"user","content":"hi"}],"max_tokens":' + b"9" * 5000 + b"}",
    b'{"messages":[{"role":"user","content":"\xff\xfe"}]}',
    b'{"messages":[{"role":"user","content":"hi"}],"n":16,"max_tokens":1,"logprobs":true,"top_logprobs":20}',
    b'{"messages":[{"role":[]}]}',  # unhashable roles: refused as 400, not a TypeError
    b'{"messages":[{"role":{"a":1},"content":"x"}]}',
    # found by the fuzzer: 0 in float32, so the logits overflowed and the reply's logprobs could not be JSON
    b'{"messages":[{"role":"user","content":"hi"}],"temperature":1.418043102685024e-84,"max_tokens":2,'
    b'"logprobs":true,"top_logprobs":3}',
], ids=["deep-array", "deep-content", "1e400", "NaN", "5000-digits", "bad-utf8", "max-n", "list-role", "dict-role",
        "tiny-temperature"])
def test_hostile_chat_bodies(policy: Any, raw: bytes) -> None:
    status, reply = _post(policy, raw)
    check_reply(status, reply, raw[:100])
    _still_serving(policy)


def test_the_server_is_still_serving(policy: Any) -> None:
    _still_serving(policy)
