"""A harness session in the dialects, end to end: its calls form a graph (main line, side calls), it round-trips
through OpenEnv's TrainingTrace document and exports as ATIF with its tool calls; a client that leaves mid-stream
loses nothing already sent, and the server keeps serving."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv_train.integrations.openenv_traces import from_openenv_training_trace, to_openenv_training_trace
from openenv_train.policy import FixedSampling, LocalBackend, PolicyServer, ScriptedBackend
from openenv_train.trace import CaptureStore, EnvInfo, TraceRow, TraceWriter, read_traces, to_atif

anthropic = pytest.importorskip("anthropic")

ADD = {"name": "add", "description": "Add two integers.",
       "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}


def script(messages: list[dict[str, Any]]) -> str:
    """The main agent calls ``add(2, 3)`` then answers; a side call (its own system prompt) names the chat."""
    if messages[0]["role"] == "system" and messages[0]["content"] == "Name this chat.":
        return "Adding numbers"
    results = [m for m in messages if m["role"] == "tool"]
    if not results:
        return '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
    return f"The answer is {results[-1]['content']}."


@pytest.fixture(scope="module")
def scripted(tiny: tuple[Any, Any]) -> Iterator[tuple[PolicyServer, CaptureStore]]:
    store = CaptureStore()
    with PolicyServer(ScriptedBackend(script, tiny[1], model_id="scripted"), capture=store) as server:
        yield server, store


def claude_session(server: PolicyServer, store: CaptureStore, key: str) -> TraceRow:
    """A Claude-Code-like session: a tool loop of two calls with a title call between them."""
    store.open_session(key)
    client = anthropic.Anthropic(base_url=server.url, api_key=key, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is 2 plus 3?"}]
    first = client.messages.create(model="m", max_tokens=64, system="Use the tools.", tools=[ADD],  # type: ignore[list-item]
                                   messages=messages)  # type: ignore[arg-type]
    client.messages.create(model="m", max_tokens=16, system="Name this chat.", messages=messages)  # type: ignore[arg-type]
    (use,) = [b for b in first.content if b.type == "tool_use"]
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "5"}]}]
    client.messages.create(model="m", max_tokens=64, system="Use the tools.", tools=[ADD], messages=messages)  # type: ignore[arg-type, list-item]
    return TraceRow(env=EnvInfo(name="claude"), episode_id=key, trace=store.close_session(key))


def test_a_session_graph_round_trips_through_openenv_and_atif(scripted: tuple[PolicyServer, CaptureStore],
                                                              tmp_path: Path) -> None:
    row = claude_session(*scripted, "graph")
    first, title, second = row.trace.turns
    graph = row.trace.call_graph()
    assert graph.main is not None and graph.main.node_ids == (first.node_id, second.node_id)
    assert [line.node_ids for line in graph.branches] == [(title.node_id,)]
    assert graph.node(second.node_id).parent == first.node_id
    (side,) = graph.breaks  # the title call shares only the template's opening tokens
    assert side.node_id == title.node_id and side.kind == "rewritten" and side.common < len(title.prompt_token_ids)

    with TraceWriter(tmp_path) as writer:
        writer.write(row)
    (back,) = read_traces(tmp_path)
    document = json.loads(json.dumps(to_openenv_training_trace(back)))
    assert [(t["metadata"]["parent_id"], t["metadata"]["line"], t["metadata"]["main_line"])
            for t in document["turns"]] == [(None, 0, True), (None, 1, False), (first.node_id, 0, True)]
    again = from_openenv_training_trace(document)
    assert again.call_graph() == graph
    for ours, theirs in zip(row.trace.turns, again.turns, strict=True):
        assert theirs.model_dump(exclude={"metadata"}) == ours.model_dump(exclude={"metadata"})
        assert theirs.metadata["dialect"] == "anthropic_messages"

    atif = to_atif(back)
    agents = [s for s in atif["steps"] if s["source"] == "agent"]
    assert [s["extra"]["node_id"] for s in agents] == [first.node_id, title.node_id, second.node_id]
    (call,) = agents[0]["tool_calls"]
    assert (call["function_name"], call["arguments"]) == ("add", {"a": 2, "b": 3})
    assert agents[0]["observation"]["results"] == [{"content": "5", "source_call_id": call["tool_call_id"]}]
    assert agents[0]["metrics"]["completion_token_ids"] == first.completion_token_ids
    assert agents[2]["message"] == "The answer is 5." and agents[1]["extra"]["main_line"] is False
    assert [line["node_ids"] for line in atif["extra"]["call_lines"]] == [[first.node_id, second.node_id],
                                                                          [title.node_id]]


# -- a client that leaves mid-stream -----------------------------------------------------------------------------
PROMPT = "tell me everything"
STREAMS: dict[str, tuple[str, dict[str, Any], str]] = {  # dialect: (path, body, what a text delta event holds)
    "anthropic_messages": ("/v1/messages", {"model": "tiny", "max_tokens": 3000, "stream": True,
                                            "messages": [{"role": "user", "content": PROMPT}]}, "text_delta"),
    "openai_responses": ("/v1/responses", {"model": "tiny", "max_output_tokens": 3000, "stream": True,
                                           "input": PROMPT}, "response.output_text.delta"),
    "google_generate_content": ("/v1beta/models/tiny:streamGenerateContent?alt=sse",
                                {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
                                 "generationConfig": {"maxOutputTokens": 3000}}, '"text"'),
}


@pytest.fixture(scope="module")
def local(tiny: tuple[Any, Any]) -> Iterator[tuple[PolicyServer, CaptureStore]]:
    store = CaptureStore()
    # Seeded: the random tiny model writes many tokens for this prompt before it ends.
    backend = FixedSampling(LocalBackend(tiny[0], tiny[1], model_id="tiny"), temperature=1.0, seed=2)
    with PolicyServer(backend, capture=store) as server:
        yield server, store


def until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize("dialect", list(STREAMS))
def test_a_client_that_leaves_mid_stream_keeps_its_turn(local: tuple[PolicyServer, CaptureStore],
                                                        dialect: str) -> None:
    server, store = local
    path, body, marker = STREAMS[dialect]
    key = f"leave-{dialect}"
    store.open_session(key)
    headers = {"authorization": f"Bearer {key}"}
    deltas = 0
    with httpx.Client(base_url=server.url, timeout=60) as client, \
            client.stream("POST", path, json=body, headers=headers) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            if line.startswith("data: ") and marker in line:
                deltas += 1
                if deltas == 3:
                    break  # leave: closing the response closes the connection
    until(lambda: len(store.get(key).turns) == 1, "the cut turn")
    (cut,) = store.get(key).turns
    assert cut.metadata["cut"] and cut.metadata["dialect"] == dialect and cut.metadata["rollout_type"] == "train"
    assert cut.response["choices"][0]["finish_reason"] == "abort"
    assert 3 <= len(cut.completion_token_ids) < 3000 and len(cut.per_token_logps) == len(cut.completion_token_ids)
    # The server keeps serving, on the same session.
    path_once = path.replace("streamGenerateContent?alt=sse", "generateContent")
    once = httpx.post(f"{server.url}{path_once}", json={**body, "stream": False, **(
        {"max_tokens": 4} if "max_tokens" in body else {"max_output_tokens": 4} if "input" in body else
        {"generationConfig": {"maxOutputTokens": 4}})}, headers=headers, timeout=60)
    assert once.status_code == 200, once.text
    assert len(store.close_session(key).turns) == 2
