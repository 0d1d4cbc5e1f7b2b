"""Fuzzing each dialect's route over the tiny model: a valid Anthropic Messages, OpenAI Responses or Google
generateContent body with random parts replaced by random JSON (or removed), and random bytes, must each get an
answer (200) or that dialect's own error body with a 4xx status, never a 500, and the server keeps serving.
``test_dialects.py`` has the hand-picked cases; ``tests/security/test_fuzz_chat.py`` fuzzes the chat route."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openenv_train.policy import LocalBackend, LocalConfig, PolicyServer

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture])
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}}
VALID: dict[str, tuple[str, dict[str, Any]]] = {  # dialect: (path, a valid body using most of its fields)
    "anthropic": ("/v1/messages", {
        "model": "tiny", "max_tokens": 2, "system": [{"type": "text", "text": "Be brief."}], "temperature": 0.5,
        "stop_sequences": ["x"], "tools": [{"name": "add", "description": "Add.", "input_schema": SCHEMA}],
        "tool_choice": {"type": "auto"}, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"},
                                              {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1"},
                                         {"type": "text", "text": "and?"}]}]}),
    "responses": ("/v1/responses", {
        "model": "tiny", "max_output_tokens": 2, "instructions": "Be brief.", "temperature": 0.5, "store": False,
        "tools": [{"type": "function", "name": "add", "parameters": SCHEMA}], "tool_choice": "auto", "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1}'},
            {"type": "function_call_output", "call_id": "c1", "output": "1"}]}),
    "google": ("/v1beta/models/tiny:generateContent", {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 2, "temperature": 0.5, "topK": 5, "stopSequences": ["x"]},
        "tools": [{"functionDeclarations": [{"name": "add", "parameters": {"type": "OBJECT"}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}, "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "add", "args": {"a": 1}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "add", "response": {"result": 1}}}]}]}),
}

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
scalars = st.none() | st.booleans() | st.integers(-(2**66), 2**66) | st.floats(allow_nan=False) | text
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3),
                           max_leaves=6)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value, the root included."""
    yield at
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*at, key))


@st.composite
def mutated(draw: st.DrawFn, body: dict[str, Any]) -> Any:
    """``body`` with one to three places replaced by random JSON or removed."""
    body = json.loads(json.dumps(body))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(body))))
        if not path:
            return draw(json_values)
        parent: Any = body
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
        if not isinstance(body, dict):
            break
    if isinstance(body, dict):  # keep a body that turns out valid cheap to answer
        for key in ("max_tokens", "max_output_tokens"):
            if isinstance(body.get(key), int) and body[key] > 2:
                body[key] = 2
        config = body.get("generationConfig")
        if isinstance(config, dict) and isinstance(config.get("maxOutputTokens"), int):
            config["maxOutputTokens"] = min(config["maxOutputTokens"], 2)
    return body


def _anthropic_error(reply: Any) -> bool:
    return set(reply) == {"type", "error"} and reply["type"] == "error" and set(reply["error"]) == {"type", "message"}


def _openai_error(reply: Any) -> bool:
    return set(reply) == {"error"} and {"message", "type", "param", "code"} <= set(reply["error"])


def _google_error(reply: Any) -> bool:
    return set(reply) == {"error"} and set(reply["error"]) == {"code", "message", "status"}


ERRORS: dict[str, Callable[[Any], bool]] = {"anthropic": _anthropic_error, "responses": _openai_error,
                                            "google": _google_error}


@pytest.fixture(scope="module")
def client(tiny: tuple[Any, Any]) -> Iterator[httpx.Client]:
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, model_id="tiny", config=LocalConfig(context=256))
    with PolicyServer(backend) as server, httpx.Client(base_url=server.url, timeout=60, trust_env=False) as http:
        yield http


def check(client: httpx.Client, dialect: str, content: bytes) -> None:
    path = VALID[dialect][0]
    reply = client.post(path, content=content, headers={"content-type": "application/json"})
    assert reply.status_code < 500, (dialect, content[:300], reply.text[:300])
    if reply.status_code == 200:
        return  # a valid body (the SDK tests check the answers' shapes)
    body = reply.json()
    assert ERRORS[dialect](body), (dialect, content[:300], body)
    message = body["error"]["message"]
    assert isinstance(message, str) and message and "Traceback" not in message


@pytest.mark.parametrize("dialect", list(VALID))
def test_fuzz_dialect_bodies(client: httpx.Client, dialect: str) -> None:
    @given(body=mutated(VALID[dialect][1]))
    @FUZZ
    def run(body: Any) -> None:
        check(client, dialect, json.dumps(body).encode())

    run()
    check(client, dialect, json.dumps(VALID[dialect][1]).encode())  # still serving


@pytest.mark.parametrize("dialect", list(VALID))
def test_fuzz_dialect_raw_bytes(client: httpx.Client, dialect: str) -> None:
    whole = json.dumps(VALID[dialect][1]).encode()

    @given(raw=st.binary(max_size=40) | st.integers(0, len(whole) - 1).map(lambda n: whole[:n]))
    @settings(FUZZ, max_examples=15)
    def run(raw: bytes) -> None:
        check(client, dialect, raw)

    run()
