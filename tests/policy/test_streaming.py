"""Streaming chat completions (``"stream": true``) over the tiny model, an upstream and a script: the chunks add
up to the unstreamed answer, the captured turn is the unstreamed call's, and a client that leaves cuts the turn and
stops its row."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from openenv_train.policy import LocalBackend, PolicyServer, SamplingParams, ScriptedBackend, UpstreamBackend
from openenv_train.policy._engine.generation import Row, generate_rows
from openenv_train.trace import CaptureStore, TrainingTurn
from tests.policy.conftest import ADD_TOOL, TAUGHT, chat_body, serve

DEADLINE_S = 120.0  # generous: the machine may be busy
#: Tests over the taught model: its session fixture trains it first (170 s measured under a load of 6.6 on 2 cores).
SLOW_FIXTURE = pytest.mark.timeout(600)


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def post(server: PolicyServer, body: Any, session: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {session}"} if session else {}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S) as client:
        return await client.post("/chat/completions", json=body, headers=headers)


async def sse(server: PolicyServer, body: Any, session: str | None = None) -> tuple[httpx.Response, list[Any]]:
    """A streamed call read as raw server-sent events: the response and each event's data (JSON, or "[DONE]")."""
    headers = {"authorization": f"Bearer {session}"} if session else {}
    events: list[Any] = []
    async with httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S) as client, \
            client.stream("POST", "/chat/completions", json={**body, "stream": True}, headers=headers) as reply:
        lines = [line async for line in reply.aiter_lines()]
    for block in "\n".join(lines).strip("\n").split("\n\n"):
        if block:
            assert block.startswith("data: ") and "\n" not in block, block
            events.append(block[6:] if block[6:] == "[DONE]" else json.loads(block[6:]))
    return reply, events


def added_up(chunks: list[dict[str, Any]], index: int = 0) -> dict[str, Any]:
    """One choice of a stream, added up as OpenAI's clients do."""
    content, calls, ids, logprobs, entries, finish = "", {}, [], [], [], None
    for chunk in chunks:
        for choice in chunk["choices"]:
            if choice["index"] != index:
                continue
            delta = choice["delta"]
            content += delta.get("content") or ""
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(call["index"], {"id": None, "name": "", "arguments": ""})
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] += call["function"].get("name") or ""
                slot["arguments"] += call["function"].get("arguments") or ""
            ids += choice.get("token_ids", [])
            logprobs += choice.get("token_logprobs", [])
            entries += (choice["logprobs"] or {}).get("content") or []
            finish = choice["finish_reason"] or finish
    return {"content": content, "tool_calls": [calls[i] for i in sorted(calls)], "token_ids": ids,
            "token_logprobs": logprobs, "entries": entries, "finish_reason": finish}


def same_turn(streamed: TrainingTurn, whole: TrainingTurn) -> None:
    assert streamed.prompt_token_ids == whole.prompt_token_ids
    assert streamed.completion_token_ids == whole.completion_token_ids
    assert streamed.per_token_logps == whole.per_token_logps
    assert streamed.loss_mask == whole.loss_mask
    assert streamed.request == whole.request
    strip = [{**c, "message": {k: v for k, v in c["message"].items() if k != "tool_calls"}}
             for c in whole.response["choices"]]
    assert [{**c, "message": {k: v for k, v in c["message"].items() if k != "tool_calls"}}
            for c in streamed.response["choices"]] == strip
    assert streamed.metadata["rollout_type"] == whole.metadata["rollout_type"]
    assert streamed.metadata["stream"] is True and "cut" not in streamed.metadata


def test_openai_client_streams_what_the_unstreamed_call_answers(tiny: tuple[Any, Any]) -> None:
    openai = pytest.importorskip("openai")
    store = CaptureStore()
    store.open_session("s")
    model, tokenizer = tiny
    params: dict[str, Any] = {"model": "tiny", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 200,
                              "seed": 11, "temperature": 1.0, "logprobs": True, "top_logprobs": 2}
    with PolicyServer(LocalBackend(model, tokenizer, model_id="tiny"), capture=store) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="s", max_retries=0, timeout=DEADLINE_S)
        whole = client.chat.completions.create(**params)
        chunks = list(client.chat.completions.create(**params, stream=True, stream_options={"include_usage": True}))
    trace = store.close_session("s")
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) > 1, "tokens are sent as they are decoded, not in one chunk at the end"
    assert "".join(pieces) == whole.choices[0].message.content
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == [whole.choices[0].finish_reason]
    entries = [e for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content or ()]
    assert [e.model_dump() for e in entries] == [e.model_dump() for e in whole.choices[0].logprobs.content]
    assert [c.usage for c in chunks[:-1]] == [None] * (len(chunks) - 1) and chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.model_dump() == whole.usage.model_dump()
    whole_turn, streamed_turn = trace.turns
    same_turn(streamed_turn, whole_turn)
    assert streamed_turn.node_id == chunks[0].id


async def test_raw_sse_over_httpx(tiny: tuple[Any, Any]) -> None:
    body = chat_body("hi", temperature=0, max_tokens=8, n=2, stream_options={"include_usage": False})
    async with serve(tiny) as server:
        whole = (await post(server, {k: v for k, v in body.items() if k != "stream_options"})).json()
        reply, events = await sse(server, body)
    assert reply.status_code == 200 and reply.headers["content-type"] == "text/event-stream"
    assert reply.headers.get("transfer-encoding") == "chunked" and "content-length" not in reply.headers
    assert events[-1] == "[DONE]" and "[DONE]" not in events[:-1]
    chunks = events[:-1]
    assert all(c["object"] == "chat.completion.chunk" and "usage" not in c for c in chunks)
    assert [c["choices"][0]["delta"] for c in chunks[:2]] == [{"role": "assistant", "content": ""}] * 2
    assert chunks[0]["prompt_token_ids"] == whole["prompt_token_ids"]
    for i in range(2):
        got, want = added_up(chunks, i), whole["choices"][i]
        assert (got["content"], got["token_ids"], got["token_logprobs"], got["finish_reason"]) == \
            (want["message"]["content"], want["token_ids"], want["token_logprobs"], want["finish_reason"])


async def test_a_connection_serves_requests_after_a_stream(tiny: tuple[Any, Any]) -> None:
    body = chat_body("hi", temperature=0, max_tokens=3)
    async with serve(tiny) as server, httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S,
                                                        limits=httpx.Limits(max_connections=1)) as client:
        seen = []
        for stream in (True, True, False):
            async with client.stream("POST", "/chat/completions", json={**body, "stream": stream}) as reply:
                text = (await reply.aread()).decode()
                seen.append((reply.status_code, text.endswith("data: [DONE]\n\n") if stream else '"choices"' in text))
        connections = len(server.http.connections)
    assert seen == [(200, True)] * 3 and connections == 1


async def test_concurrent_streams_match_their_unstreamed_answers(tiny: tuple[Any, Any]) -> None:
    bodies = [chat_body(f"question {i}", temperature=1.0, seed=i, max_tokens=12, logprobs=True) for i in range(4)]
    async with serve(tiny) as server:
        whole = [(await post(server, body)).json()["choices"][0] for body in bodies]
        streamed = await asyncio.gather(*(sse(server, body) for body in bodies), post(server, bodies[0]))
    # Batched with others, a row samples the same tokens; its logprobs differ in the last float bits (padding
    # changes the matmul shapes), as for unstreamed calls (test_endpoint).
    for (_, events), want in zip(streamed[:4], whole, strict=True):
        got = added_up(events[:-1])
        assert (got["content"], got["token_ids"]) == (want["message"]["content"], want["token_ids"])
        assert got["token_logprobs"] == pytest.approx(want["token_logprobs"], abs=1e-4)
        assert [e["logprob"] for e in got["entries"]] == got["token_logprobs"]
    assert streamed[4].json()["choices"][0]["token_ids"] == whole[0]["token_ids"]


@SLOW_FIXTURE
async def test_tool_calls_stream_as_tool_call_deltas(taught: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("s")
    body = {"model": "tiny", "messages": TAUGHT[:1], "tools": [ADD_TOOL], "temperature": 0}
    async with serve(taught, capture=store) as server:
        whole = (await post(server, body, "s")).json()["choices"][0]
        _, events = await sse(server, body, "s")
    got = added_up(events[:-1])
    assert whole["finish_reason"] == "tool_calls" and got["finish_reason"] == "tool_calls"
    (call,) = whole["message"]["tool_calls"]
    (streamed,) = got["tool_calls"]
    assert got["content"] == "" and streamed["id"].startswith("call_")
    assert (streamed["name"], streamed["arguments"]) == (call["function"]["name"], call["function"]["arguments"])
    assert streamed["name"] == "add" and json.loads(streamed["arguments"]) == {"a": 2, "b": 3}
    assert got["token_ids"] == whole["token_ids"]
    whole_turn, streamed_turn = store.close_session("s").turns
    same_turn(streamed_turn, whole_turn)
    (recorded,) = streamed_turn.response["choices"][0]["message"]["tool_calls"]
    assert recorded["id"] == streamed["id"] and recorded["function"] == call["function"]


@SLOW_FIXTURE
@pytest.mark.parametrize("extra", [{"stop": [" is", "never"]}, {"tool_choice": "none"}])
async def test_held_back_text_never_reaches_the_client(taught: tuple[Any, Any], extra: dict[str, Any]) -> None:
    body = {"model": "tiny", "messages": TAUGHT[:3 if "stop" in extra else 1], "tools": [ADD_TOOL],
            "temperature": 0, **extra}
    async with serve(taught) as server:
        whole = (await post(server, body)).json()["choices"][0]
        _, events = await sse(server, body)
    got = added_up(events[:-1])
    assert got["content"] == whole["message"]["content"] and got["token_ids"] == whole["token_ids"]
    assert got["finish_reason"] == whole["finish_reason"]
    if "stop" in extra:
        assert got["content"] == "The answer"
        assert all(" is" not in (c["choices"][0]["delta"].get("content") or "") for c in events[:-1] if c["choices"])


async def test_constrained_streams_match(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("s")
    body = chat_body("pick", temperature=1.0, seed=5, max_tokens=30, logprobs=True,
                     guided_choice=["alpha", "beta", "gamma delta"])
    async with serve(tiny, capture=store) as server:
        whole = (await post(server, body, "s")).json()["choices"][0]
        _, events = await sse(server, body, "s")
    got = added_up(events[:-1])
    assert got["content"] == whole["message"]["content"] in ("alpha", "beta", "gamma delta")
    assert got["entries"] == whole["logprobs"]["content"]
    whole_turn, streamed_turn = store.close_session("s").turns
    same_turn(streamed_turn, whole_turn)
    assert streamed_turn.metadata["constraint"] == whole_turn.metadata["constraint"]


async def test_a_client_that_leaves_cuts_its_turn_and_frees_its_row(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("s")
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, model_id="tiny")
    body = chat_body("tell me everything", temperature=1.0, seed=2, max_tokens=3000, stream=True)
    async with PolicyServer(backend, capture=store) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S) as client, \
                client.stream("POST", "/chat/completions", json=body, headers={"authorization": "Bearer s"}) as reply:
            assert reply.status_code == 200
            contents = 0
            async for line in reply.aiter_lines():
                if line.startswith("data: {") and json.loads(line[6:])["choices"][0]["delta"].get("content"):
                    contents += 1
                    if contents == 3:
                        break  # leave: closing the response closes the connection
        await _until(lambda: backend.rows_cut == 1, "the row to stop")
        await _until(lambda: len(store.get("s").turns) == 1, "the cut turn")
        (cut,) = store.get("s").turns
        assert cut.metadata["cut"] and cut.metadata["stream"] is True and cut.metadata["rollout_type"] == "train"
        assert cut.response["choices"][0]["finish_reason"] == "abort"
        sent = len(cut.completion_token_ids)
        assert 3 <= sent < 3000 and len(cut.per_token_logps) == sent
        # What the client was sent is the start of the same seeded call (asked for fewer tokens, so its cache has
        # another size: logprobs may differ in the last float bits).
        again = (await post(server, {**body, "stream": False, "max_tokens": sent})).json()["choices"][0]
    assert again["token_ids"] == cut.completion_token_ids
    assert again["token_logprobs"] == pytest.approx(cut.per_token_logps, abs=1e-4)
    assert again["message"]["content"] == cut.response["choices"][0]["message"]["content"]


class _CancelAfter:
    def __init__(self, pushes: int) -> None:
        self.pushes, self.seen = pushes, []

    @property
    def cancelled(self) -> bool:
        return len(self.seen) >= self.pushes

    def push(self, token: int, logprob: float, top: list[tuple[int, float]]) -> None:
        self.seen.append((token, logprob))


def test_a_cancelled_row_stops_at_the_next_step_and_others_are_unchanged(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "go"}], add_generation_prompt=True,
                                           return_dict=False)
    params = SamplingParams(temperature=1.0, max_tokens=40)

    def rows(stream: Any = None) -> list[Row]:
        return [Row(list(prompt), params, 40, seed, frozenset({-1}), stream=s) for seed, s in ((1, stream), (2, None))]

    full = generate_rows(model, tokenizer, rows(), pad_id=0)
    stream = _CancelAfter(5)
    cut = generate_rows(model, tokenizer, rows(stream), pad_id=0)
    assert len(full[0].token_ids) == 40 and not full[0].cut
    assert cut[0].cut and cut[0].token_ids == full[0].token_ids[:5] and cut[0].logprobs == full[0].logprobs[:5]
    assert stream.seen == list(zip(full[0].token_ids[:5], full[0].logprobs[:5], strict=True))
    assert cut[1].token_ids == full[1].token_ids and cut[1].logprobs == full[1].logprobs and not cut[1].cut


async def test_upstream_streams_are_forwarded(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("s")
    body = chat_body("hello", temperature=1.0, seed=4, max_tokens=16)
    async with serve(tiny) as inner, PolicyServer(UpstreamBackend(inner.base_url), capture=store) as server:
        whole = (await post(server, body, "s")).json()["choices"][0]
        reply, events = await sse(server, {**body, "stream_options": {"include_usage": True}}, "s")
    got = added_up(events[:-2])
    assert len([c for c in events[:-2] if c["choices"] and c["choices"][0]["delta"].get("content")]) > 1
    assert (got["content"], got["token_ids"], got["finish_reason"]) == \
        (whole["message"]["content"], whole["token_ids"], whole["finish_reason"])
    assert events[-2]["usage"]["completion_tokens"] == len(whole["token_ids"])
    whole_turn, streamed_turn = store.close_session("s").turns
    same_turn(streamed_turn, whole_turn)
    assert streamed_turn.metadata["rollout_type"] == "train"


async def test_leaving_an_upstream_stream_stops_the_upstream_generation(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("s")
    model, tokenizer = tiny
    local = LocalBackend(model, tokenizer, model_id="tiny")
    body = chat_body("tell me everything", temperature=1.0, seed=2, max_tokens=3000, stream=True)
    async with PolicyServer(local) as inner, PolicyServer(UpstreamBackend(inner.base_url), capture=store) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S) as client, \
                client.stream("POST", "/chat/completions", json=body, headers={"authorization": "Bearer s"}) as reply:
            async for line in reply.aiter_lines():
                if line.startswith("data: {") and json.loads(line[6:])["choices"][0]["delta"].get("content"):
                    break
        await _until(lambda: local.rows_cut == 1, "the upstream's row to stop")
        await _until(lambda: len(store.get("s").turns) == 1, "the cut turn")
    (cut,) = store.get("s").turns
    assert cut.metadata["cut"] and cut.response["choices"][0]["finish_reason"] == "abort"
    assert 1 <= len(cut.completion_token_ids) < 3000


def test_scripted_backend_streams_with_the_openai_client() -> None:
    openai = pytest.importorskip("openai")
    store = CaptureStore()
    store.open_session("s")
    with PolicyServer(ScriptedBackend(lambda m: f"echo: {m[-1]['content']}"), capture=store) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="s", max_retries=0, timeout=DEADLINE_S)
        messages = [{"role": "user", "content": "ping"}]
        whole = client.chat.completions.create(model="x", messages=messages)  # type: ignore[arg-type]
        with client.chat.completions.stream(model="x", messages=messages) as stream:  # type: ignore[arg-type]
            final = stream.get_final_completion()
    assert final.choices[0].message.content == whole.choices[0].message.content == "echo: ping"
    assert final.choices[0].finish_reason == "stop"
    whole_turn, streamed_turn = store.close_session("s").turns
    same_turn(streamed_turn, whole_turn)


def test_scripted_backend_calls_offered_tools() -> None:
    """A script's ``<tool_call>`` blocks are tool calls when the request offers tools (whole and streamed, as the
    openai client reads them, and in the captured turn); without tools they stay text."""
    openai = pytest.importorskip("openai")
    store = CaptureStore()
    store.open_session("s")
    script = 'Adding.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
    with PolicyServer(ScriptedBackend(lambda m: script), capture=store) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="s", max_retries=0, timeout=DEADLINE_S)
        messages = [{"role": "user", "content": "2 + 3?"}]
        whole = client.chat.completions.create(model="x", messages=messages, tools=[ADD_TOOL])  # type: ignore[arg-type,list-item]
        with client.chat.completions.stream(model="x", messages=messages, tools=[ADD_TOOL]) as stream:  # type: ignore[arg-type,list-item]
            final = stream.get_final_completion()
        plain = client.chat.completions.create(model="x", messages=messages)  # type: ignore[arg-type]
    for choice in (whole.choices[0], final.choices[0]):
        assert choice.finish_reason == "tool_calls" and choice.message.content == "Adding."
        (call,) = choice.message.tool_calls or []
        assert call.function.name == "add" and json.loads(call.function.arguments) == {"a": 2, "b": 3}
    assert plain.choices[0].finish_reason == "stop" and plain.choices[0].message.content == script
    turn = store.close_session("s").turns[0]
    assert turn.request["tools"] == [ADD_TOOL]
    assert turn.response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "add"


async def test_stream_errors(tiny: tuple[Any, Any]) -> None:
    async with serve(tiny) as server:
        bad_options = await post(server, chat_body(stream=True, stream_options={"include_usage": "yes"}))
        no_stream = await post(server, chat_body(stream_options={"include_usage": True}))
        too_long = await post(server, chat_body("word " * 5000, stream=True))
    for reply in (bad_options, no_stream):
        assert reply.status_code == 400 and reply.json()["error"]["param"] == "stream_options", reply.text
    assert "include_usage" in bad_options.json()["error"]["message"]
    assert "'stream': true" in no_stream.json()["error"]["message"]
    assert too_long.status_code == 400 and too_long.json()["error"]["code"] == "context_length_exceeded"
    async with PolicyServer(ScriptedBackend(lambda m: "x")) as server:
        refused = await post(server, chat_body(stream=True, guided_choice=["a"]))
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "guided_choice"


def _row_text(**options: Any) -> Any:
    from openenv_train.policy._backends.token_feed import RowText

    pieces = {1: "The", 2: " answer", 3: " is", 4: " 5", 5: "\n", 6: "<tool", 7: "_call>", 8: "\xe2", 9: "\x82\xac",
              0: ""}

    def decode(ids: list[int]) -> str:  # a byte-level tokenizer: half a character decodes to U+FFFD
        return "".join(pieces[i] for i in ids).encode("latin-1").decode("utf-8", errors="replace")

    return RowText(0, decode, None, **options)


@pytest.mark.parametrize(("options", "tokens", "sent"), [
    ({}, [1, 2, 3], ["The", " answer", " is"]),
    ({"stop": (" is 5",)}, [1, 2, 3, 4], ["The", " answer", None, None]),  # " is" may start the stop string
    ({"stop": (" is",)}, [1, 2, 3, 4], ["The", " answer", None, None]),  # the stop string came: the end decides
    ({"tools": True}, [1, 5, 6, 7, 2], ["The", None, None, None, None]),  # whitespace, then a tool call
    ({"tools": True}, [1, 5, 2], ["The", None, "\n answer"]),  # the whitespace was text after all
    ({}, [1, 8, 9], ["The", None, "€"]),  # half a character waits for the other half
    ({"stop_ids": frozenset({0})}, [1, 0], ["The", ""]),  # an end token has no text
])
def test_row_text_sends_only_what_cannot_change(options: dict[str, Any], tokens: list[int],
                                                sent: list[str | None]) -> None:
    text = _row_text(**options)
    got = []
    for token in tokens:
        delta = text.add([(token, -0.5, [])])
        got.append(None if delta is None else delta.content)
        if delta is not None:  # tokens go with their text
            assert text.sent_tokens == tokens.index(token) + 1 and delta.logprobs == [-0.5] * len(delta.token_ids)
    assert got == sent


def test_row_text_decodes_long_replies_from_an_anchor() -> None:
    text = _row_text()
    decoded: list[str] = []
    text.decode = lambda ids, plain=text.decode: decoded.append(ids) or plain(ids)  # type: ignore[method-assign]
    tokens = [1, 2, 3, 4, 8, 9, 2, 3] * 10
    pieces = [d.content for t in tokens if (d := text.add([(t, -1.0, [])])) is not None]
    assert "".join(pieces) == "The answer is 5€ answer is" * 10
    assert max(len(ids) for ids in decoded[-4:]) < 10  # late tokens decode a window, not the whole reply
