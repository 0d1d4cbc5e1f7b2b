"""The OpenAI-compatible endpoint over the tiny model on CPU: answers, exact tokens, batching, capture, errors."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from openenv_train.policy import EndpointConfig, LocalBackend, LocalConfig, PolicyServer
from openenv_train.trace import CaptureStore
from tests.policy.conftest import ADD_TOOL, TAUGHT, chat_body, serve

PROMPTS = [f"{w} number {i}?" for i, w in enumerate("what why how who when where which whose".split() * 2)]


async def post(server: PolicyServer, body: Any, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as client:
        return await client.post("/chat/completions", json=body, headers=headers)


async def test_answers_an_openai_request(tiny: tuple[Any, Any]) -> None:
    _, tokenizer = tiny
    async with serve(tiny) as server, httpx.AsyncClient(base_url=server.url) as client:
        reply = await client.post("/v1/chat/completions", json=chat_body(temperature=0, max_tokens=6, logprobs=True,
                                                                          top_logprobs=2))
        models = (await client.get("/v1/models")).json()
        health = (await client.get("/health")).json()
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["object"] == "chat.completion" and body["model"] == "tiny" and body["id"].startswith("chatcmpl-")
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str)
    assert choice["finish_reason"] in ("stop", "length") and len(choice["token_ids"]) == len(choice["token_logprobs"])
    expected = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True,
                                             return_dict=False)
    assert body["prompt_token_ids"] == expected
    entries = choice["logprobs"]["content"]
    assert [e["logprob"] for e in entries] == choice["token_logprobs"]
    assert all(len(e["top_logprobs"]) == 2 and e["top_logprobs"][0]["logprob"] >= e["logprob"] for e in entries)
    assert b"".join(bytes(e["bytes"]) for e in entries).decode(errors="replace").startswith(choice["message"]["content"])
    assert body["usage"] == {"prompt_tokens": len(expected), "completion_tokens": len(choice["token_ids"]),
                             "total_tokens": len(expected) + len(choice["token_ids"])}
    assert models["data"][0]["id"] == "tiny" and health["status"] == "ok"


def test_openai_client_in_a_thread_with_capture(tiny: tuple[Any, Any]) -> None:
    openai = pytest.importorskip("openai")
    store = CaptureStore()
    store.open_session("episode-1")
    model, tokenizer = tiny
    with PolicyServer(LocalBackend(model, tokenizer, model_id="tiny"), capture=store) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="episode-1", max_retries=0)
        reply = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hello"}],
                                               max_tokens=5, temperature=0, tools=[ADD_TOOL])  # type: ignore[list-item]
        listed = [m.id for m in client.models.list()]
    trace = store.close_session("episode-1")
    assert listed == ["tiny"]
    (turn,) = trace.turns
    assert turn.node_id == reply.id and turn.metadata["rollout_type"] == "train"
    assert turn.prompt_token_ids == (reply.model_extra or {})["prompt_token_ids"]
    assert turn.completion_token_ids == (reply.choices[0].model_extra or {})["token_ids"]
    assert turn.request["tools"] == [ADD_TOOL] and turn.response["choices"][0]["message"]["content"] == \
        reply.choices[0].message.content


async def test_greedy_is_deterministic_and_seeds_reproduce(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("s")
    async with serve(tiny, capture=store) as server:
        greedy = [(await post(server, chat_body("hi there", temperature=0, max_tokens=12))).json() for _ in range(2)]
        seeded = [(await post(server, chat_body("hi there", temperature=1.0, seed=s, max_tokens=12))).json()
                  for s in (7, 7, 8)]
        many = (await post(server, chat_body("hi there", temperature=1.0, seed=7, max_tokens=12, n=3),
                           Authorization="Bearer s")).json()
    assert greedy[0]["choices"][0]["token_ids"] == greedy[1]["choices"][0]["token_ids"]
    ids = [r["choices"][0]["token_ids"] for r in seeded]
    assert ids[0] == ids[1] != ids[2]
    assert len(many["choices"]) == 3 and many["choices"][0]["token_ids"] == ids[0]  # choice i samples with seed + i
    assert many["choices"][1]["token_ids"] != ids[0]
    turns = store.close_session("s").turns  # one turn per choice
    assert [t.node_id for t in turns] == [f"{many['id']}-{i}" for i in range(3)]
    assert [t.completion_token_ids for t in turns] == [c["token_ids"] for c in many["choices"]]
    assert [t.metadata["choice_index"] for t in turns] == [0, 1, 2]


@pytest.mark.parametrize("params", [{"temperature": 0}, {"temperature": 0.7, "top_p": 0.9, "top_k": 50, "seed": 3}])
async def test_logprobs_match_a_teacher_forced_forward_pass(tiny: tuple[Any, Any], params: dict[str, Any]) -> None:
    import torch

    model, _ = tiny
    async with serve(tiny) as server:
        body = (await post(server, chat_body("Tell me about chess", max_tokens=24, **params))).json()
    prompt, completion = body["prompt_token_ids"], body["choices"][0]["token_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1: -1].float()
    logp = torch.log_softmax(logits / (params["temperature"] or 1.0), dim=-1)
    expected = logp.gather(-1, torch.tensor(completion)[:, None])[:, 0]
    got = torch.tensor(body["choices"][0]["token_logprobs"])
    assert torch.allclose(got, expected, atol=1e-4), (got - expected).abs().max()
    if params["temperature"] == 0:
        assert completion == logits.argmax(-1).tolist()[: len(completion)]


async def test_concurrent_requests_are_batched_and_match_sequential(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("s")
    async with serve(tiny, capture=store, local=LocalConfig(batch_window_s=0.05)) as server:
        sequential = [(await post(server, chat_body(p, temperature=0, max_tokens=10))).json() for p in PROMPTS]
        together = await asyncio.gather(*(post(server, chat_body(p, temperature=0, max_tokens=10),
                                                Authorization="Bearer s") for p in PROMPTS))
    assert [r.status_code for r in together] == [200] * 16
    ids = [r["choices"][0]["token_ids"] for r in sequential]
    assert [r.json()["choices"][0]["token_ids"] for r in together] == ids
    assert len({tuple(i) for i in ids}) > 1  # the prompts do lead to different answers
    assert max(t.metadata["batch_rows"] for t in store.get("s").turns) > 1


async def test_stop_strings_and_max_tokens(taught: tuple[Any, Any]) -> None:
    body = {"messages": TAUGHT[:3], "tools": [ADD_TOOL], "temperature": 0}
    async with serve(taught) as server:
        full = (await post(server, body)).json()["choices"][0]
        stopped = (await post(server, {**body, "stop": [" is", "never"]})).json()["choices"][0]
        short = (await post(server, {**body, "max_tokens": 2})).json()["choices"][0]
    assert full["message"]["content"] == "The answer is 5." and full["finish_reason"] == "stop"
    assert stopped["message"]["content"] == "The answer" and stopped["finish_reason"] == "stop"
    assert stopped["token_ids"] == full["token_ids"][: len(stopped["token_ids"])]
    assert taught[1].decode(stopped["token_ids"]) == "The answer"  # ids end where the text does
    assert len(stopped["token_logprobs"]) == len(stopped["token_ids"])
    assert short["finish_reason"] == "length" and len(short["token_ids"]) == 2


async def test_tool_calls_are_parsed(taught: tuple[Any, Any]) -> None:
    body = {"messages": TAUGHT[:1], "tools": [ADD_TOOL], "temperature": 0}
    async with serve(taught) as server:
        called = (await post(server, body)).json()["choices"][0]
        plain = (await post(server, {**body, "tool_choice": "none"})).json()["choices"][0]
        refused = await post(server, {**body, "tool_choice": "required"})
    assert called["finish_reason"] == "tool_calls" and called["message"]["content"] is None
    (call,) = called["message"]["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'}
    assert plain["finish_reason"] == "stop" and plain["message"]["content"].startswith("<tool_call>")
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "tool_choice"


async def test_capture_by_bearer_and_by_header(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("by-bearer")
    store.open_session("by-header")
    async with serve(tiny, capture=store, api_key="secret") as server:
        assert isinstance(server.backend, LocalBackend)
        server.backend.version = 3  # a trainer's step
        assert (await post(server, chat_body(max_tokens=3), Authorization="Bearer by-bearer")).status_code == 200
        ok = await post(server, chat_body(max_tokens=3, temperature=0.5, seed=1), Authorization="Bearer secret",
                        **{"X-Capture-Session": "by-header"})
        assert (await post(server, chat_body(max_tokens=3), Authorization="Bearer secret")).status_code == 200
    assert ok.status_code == 200
    (header_turn,) = store.close_session("by-header").turns
    assert len(store.close_session("by-bearer").turns) == 1
    meta = header_turn.metadata
    assert meta["sampling_requested"] == {"max_tokens": 3, "temperature": 0.5, "seed": 1}
    assert meta["sampling_used"]["seed"] == 1 and meta["sampling_used"]["max_tokens"] == 3
    assert meta["turn"] == 0 and meta["timings"]["total_s"] > 0 and meta["policy_version"] == 3
    assert meta["finish_reason"] in ("stop", "length")
    assert header_turn.loss_mask == [0] * len(header_turn.prompt_token_ids) + [1] * len(header_turn.completion_token_ids)
    assert header_turn.per_token_logps == ok.json()["choices"][0]["token_logprobs"]


async def test_unknown_sessions_and_bad_keys_are_refused(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    async with serve(tiny, capture=store) as server:
        unknown = await post(server, chat_body(), Authorization="Bearer no-such-episode")
        by_header = await post(server, chat_body(), **{"X-Capture-Session": "no-such-episode"})
        anonymous = await post(server, chat_body(max_tokens=2), Authorization="Bearer EMPTY")
    async with serve(tiny, capture=store, api_key="secret") as server:
        wrong_key = await post(server, chat_body(), Authorization="Bearer guess")
        no_key = await post(server, chat_body())
    assert unknown.status_code == by_header.status_code == 404
    assert unknown.json()["error"]["code"] == "unknown_session" and "open_session" in unknown.json()["error"]["message"]
    assert "no-such-episode" not in unknown.text  # a session id may be a secret
    assert anonymous.status_code == 200
    assert wrong_key.status_code == no_key.status_code == 401
    assert wrong_key.json()["error"]["code"] == "invalid_api_key"


async def test_malformed_requests_get_400(tiny: tuple[Any, Any]) -> None:
    async with serve(tiny) as server, httpx.AsyncClient(base_url=server.url) as client:
        replies = [
            await client.post("/v1/chat/completions", content=b"{not json"),
            await client.post("/v1/chat/completions", json={"model": "tiny"}),
            await client.post("/v1/chat/completions", json=chat_body(temperature="warm")),
            await client.post("/v1/chat/completions", json=chat_body(n=1000)),
            await client.post("/v1/chat/completions", json=chat_body(frequency_penalty=0.5)),
            await client.post("/v1/chat/completions", json={"messages": [7]}),
        ]
        missing = await client.get("/v1/nothing")
        wrong_method = await client.get("/v1/chat/completions")
        head = await client.head("/v1/models")
    for reply in replies:
        assert reply.status_code == 400, reply.text
        error = reply.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and error["type"] == "invalid_request_error"
    assert [r.json()["error"]["param"] for r in replies[1:]] == ["messages", "temperature", "n", "frequency_penalty",
                                                                 "messages[0]"]
    assert missing.status_code == 404 and wrong_method.status_code == 405
    assert head.status_code == 200 and head.content == b""
    async with serve(tiny, config=EndpointConfig(max_body=1024)) as server:
        too_big = await post(server, chat_body("x" * 2000))
    assert too_big.status_code == 413 and "exceeds" in too_big.json()["error"]["message"]


async def test_a_bad_request_in_a_batch_fails_alone(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("s")
    async with serve(tiny, capture=store, local=LocalConfig(context=96, batch_window_s=0.05)) as server:
        alone = [(await post(server, chat_body(p, temperature=0, max_tokens=8))).json() for p in PROMPTS[:15]]
        bodies = [chat_body(p, temperature=0, max_tokens=8) for p in PROMPTS[:15]]
        bodies.insert(7, chat_body("word " * 100, temperature=0, max_tokens=8))
        replies = await asyncio.gather(*(post(server, b, Authorization="Bearer s") for b in bodies))
    bad = replies.pop(7)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "context_length_exceeded"
    assert [r.status_code for r in replies] == [200] * 15
    assert [r.json()["choices"][0]["token_ids"] for r in replies] == [a["choices"][0]["token_ids"] for a in alone]
    assert len(store.get("s").turns) == 15
    assert max(t.metadata["batch_rows"] for t in store.get("s").turns) > 1
