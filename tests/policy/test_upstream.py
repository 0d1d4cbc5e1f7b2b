"""The upstream backend: exact ids through another of our endpoints; "eval" turns from a server that gives none."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from openenv_train.policy import PolicyServer, UpstreamBackend
from openenv_train.trace import CaptureStore
from tests.policy.conftest import ADD_TOOL, chat_body, serve

#: Keys the stub accepts, like a hosted API that refuses vLLM's extras.
_STANDARD = {"model", "messages", "tools", "tool_choice", "temperature", "top_p", "max_tokens", "n", "stop", "seed",
             "logprobs", "top_logprobs", "max_completion_tokens"}


@contextlib.contextmanager
def stub_openai() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A minimal OpenAI-style server: text logprobs, no token ids, 400 for keys it does not know."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            seen.append(body)
            unknown = sorted(set(body) - _STANDARD)
            reply: dict[str, Any]
            if unknown:
                status, reply = 400, {"error": {"message": f"Unrecognized request argument supplied: {unknown[0]}",
                                                "type": "invalid_request_error", "param": None, "code": None}}
            else:
                logprobs = {"content": [{"token": "hel", "logprob": -0.5, "bytes": None, "top_logprobs": []},
                                        {"token": "lo", "logprob": -0.25, "bytes": None, "top_logprobs": []}]}
                status, reply = 200, {
                    "id": "stub-1", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"},
                                 "finish_reason": "stop", "logprobs": logprobs if body.get("logprobs") else None}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                }
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


async def test_through_our_own_endpoint_the_ids_are_exact(tiny: tuple[Any, Any]) -> None:
    inner_store, outer_store = CaptureStore(), CaptureStore()
    inner_store.open_session("inner")
    outer_store.open_session("outer")
    async with serve(tiny, capture=inner_store) as inner:
        backend = UpstreamBackend(inner.base_url, api_key="inner", model="tiny")
        async with PolicyServer(backend, capture=outer_store) as outer, httpx.AsyncClient() as client:
            reply = await client.post(f"{outer.base_url}/chat/completions", headers={"authorization": "Bearer outer"},
                                      json=chat_body(temperature=0.8, seed=5, max_tokens=8, tools=[ADD_TOOL]))
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["logprobs"] is None  # asked upstream for our records, not shown to the caller
    (inner_turn,) = inner_store.close_session("inner").turns
    (outer_turn,) = outer_store.close_session("outer").turns
    assert outer_turn.metadata["rollout_type"] == "train" and outer_turn.metadata["backend"] == "upstream"
    assert outer_turn.prompt_token_ids == inner_turn.prompt_token_ids
    assert outer_turn.completion_token_ids == inner_turn.completion_token_ids
    assert outer_turn.per_token_logps == inner_turn.per_token_logps
    assert outer_turn.response["choices"][0]["message"] == inner_turn.response["choices"][0]["message"]
    assert outer_turn.metadata["sampling_used"]["seed"] == 5


async def test_a_server_without_token_ids_gives_eval_turns() -> None:
    store = CaptureStore()
    store.open_session("episode")
    with stub_openai() as (url, seen):
        backend = UpstreamBackend(url, model="stub-model")
        async with PolicyServer(backend, capture=store) as server, httpx.AsyncClient() as client:
            first = await client.post(f"{server.base_url}/chat/completions", headers={"authorization": "Bearer episode"},
                                      json=chat_body(max_tokens=4))
            second = await client.post(f"{server.base_url}/chat/completions", headers={"authorization": "Bearer episode"},
                                       json=chat_body(max_tokens=4, logprobs=True))
    assert first.status_code == second.status_code == 200, first.text
    assert first.json()["choices"][0]["message"]["content"] == "hello"
    assert "prompt_token_ids" not in first.json() and "token_ids" not in first.json()["choices"][0]
    assert second.json()["choices"][0]["logprobs"]["content"][0]["token"] == "hel"
    assert "return_token_ids" in seen[0] and "return_token_ids" not in seen[1]  # refused once, then asked plainly
    assert len(seen) == 3 and not backend.extras_ok
    turns = store.close_session("episode").turns
    assert [t.metadata["rollout_type"] for t in turns] == ["eval", "eval"]
    assert all(not t.prompt_token_ids and not t.completion_token_ids and not t.loss_mask for t in turns)
    assert turns[0].response["choices"][0]["message"]["content"] == "hello"
    assert turns[0].metadata["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


async def test_an_unreachable_or_refusing_upstream_is_a_clear_error() -> None:
    with stub_openai() as (url, _):
        pass  # the port is closed again
    async with PolicyServer(UpstreamBackend(url, model="m")) as server, httpx.AsyncClient() as client:
        down = await client.post(f"{server.base_url}/chat/completions", json=chat_body())
    assert down.status_code == 502 and "cannot reach" in down.json()["error"]["message"]
    with stub_openai() as (url, _):
        async with PolicyServer(UpstreamBackend(url, model="m")) as server, httpx.AsyncClient() as client:
            refused = await client.post(f"{server.base_url}/chat/completions", json=chat_body(user_tag="x"))
    assert refused.status_code == 400 and "user_tag" in refused.json()["error"]["message"]
