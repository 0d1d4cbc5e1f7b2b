"""Limits of the env server (sessions, message rate, message size) and of the policy endpoint (tokens per
capture session): each hit is reported with the limit's name and value, counted, and leaves others alone."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest
from websockets.asyncio.client import connect

from openenv_train.client import GenericEnvClient
from openenv_train.core import CapacityError, ServerError
from openenv_train.envs import load_env_class
from openenv_train.policy import EndpointConfig, PolicyServer
from openenv_train.server import ServerConfig
from openenv_train.trace import CaptureStore
from tests.conftest import serve_inloop, serve_process
from tests.security._support import ByteBackend, chat_body


# -- env server -------------------------------------------------------------------------------------------
async def test_message_rate_cap_from_serve_options_spares_other_sessions() -> None:
    async with serve_process("counter", "--max-messages-per-s", "1", "--message-burst", "3") as (endpoint, _):
        async with GenericEnvClient(endpoint.base_url) as fast, GenericEnvClient(endpoint.base_url) as calm:
            for _ in range(3):  # the burst
                await fast.step({"delta": 1})
            with pytest.raises(ServerError) as limited:
                await fast.step({"delta": 1})
            error = limited.value
            assert error.code == "EXECUTION_ERROR"  # not a closing code: the session and its episode stay
            assert error.details["limit"] == "max_messages_per_s" and error.details["value"] == 1
            assert error.details["burst"] == 3 and 0 < error.details["retry_after_s"] <= 1.0
            assert "max_messages_per_s=1" in error.message and "--max-messages-per-s" in error.message
            # Another session has its own budget, and the limited one recovers after retry_after_s.
            assert (await calm.step({"delta": 5})).observation["value"] == 5
            await asyncio.sleep(error.details["retry_after_s"] + 0.05)
            assert (await fast.step({"delta": 1})).observation["value"] == 4  # the refused step never ran


async def test_rate_cap_counts_hits_and_replies_stay_in_order() -> None:
    async with serve_inloop(load_env_class("counter"), max_messages_per_s=1, message_burst=2) as server:
        async with connect(f"ws://127.0.0.1:{server.port}/ws", proxy=None) as ws:
            for delta in (1, 2, 3, 4):  # pipelined: replies come back in order, the last two refused
                await ws.send(json.dumps({"type": "step", "data": {"delta": delta}}))
            replies = [json.loads(await ws.recv()) for _ in range(4)]
        assert [r["type"] for r in replies] == ["observation", "observation", "error", "error"]
        assert replies[1]["data"]["observation"]["value"] == 3
        assert server.limit_hits["max_messages_per_s"] == 2
    with pytest.raises(ValueError, match="max_messages_per_s"):
        ServerConfig(max_messages_per_s=0)


async def test_session_cap_names_the_limit_and_value() -> None:
    async with serve_inloop(load_env_class("counter"), max_sessions=1) as server:
        async with GenericEnvClient(server.url) as first:
            with pytest.raises(CapacityError) as full:
                await GenericEnvClient(server.url, reconnect=False).step({"delta": 1})
            # The frame names it as {"max_sessions": 1} (the shape OpenEnv-style clients already read).
            assert full.value.details == {"active_sessions": 1, "max_sessions": 1}
            assert "maximum of 1 sessions" in full.value.message and "--max-sessions" in str(full.value)
            assert (await first.step({"delta": 2})).observation["value"] == 2  # the holder is unaffected
        assert server.limit_hits["max_sessions"] == 1


async def test_message_size_cap_names_the_limit_and_value() -> None:
    async with serve_inloop(load_env_class("counter"), max_message_size=1024) as server:
        url = f"ws://127.0.0.1:{server.port}/ws"
        async with connect(url, proxy=None) as big, GenericEnvClient(server.url) as other:
            await big.send(json.dumps({"type": "step", "data": {"delta": 1, "pad": "x" * 2000}}))
            error = json.loads(await big.recv())["data"]
            assert error["limit"] == "max_message_size" and error["value"] == 1024
            assert "--max-message-size" in error["message"]
            assert (await other.step({"delta": 1})).observation["value"] == 1
        assert server.limit_hits["max_message_size"] == 1


# -- policy endpoint ----------------------------------------------------------------------------------------
async def test_tokens_per_capture_session_cap_is_an_openai_429() -> None:
    store = CaptureStore()
    for name in ("greedy", "modest"):
        store.open_session(name)
    backend = ByteBackend()  # "hi" + "ok": 4 tokens a call
    async with PolicyServer(backend, capture=store, config=EndpointConfig(max_tokens_per_session=10)) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            for _ in range(3):  # 4, 8, 12 tokens: the call that crosses the cap still completes
                ok = await http.post("/v1/chat/completions", json=chat_body(), headers={"Authorization": "Bearer greedy"})
                assert ok.status_code == 200
            refused = await http.post("/v1/chat/completions", json=chat_body(), headers={"Authorization": "Bearer greedy"})
            other = await http.post("/v1/chat/completions", json=chat_body(), headers={"Authorization": "Bearer modest"})
            uncaptured = await http.post("/v1/chat/completions", json=chat_body())
        # OpenAI's client raises RateLimitError and does not retry (x-should-retry: false), even with retries on.
        calls = backend.calls
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="greedy", max_retries=3)
        with pytest.raises(openai.RateLimitError) as limited:
            await client.chat.completions.create(model="bytes", messages=[{"role": "user", "content": "hi"}])
        assert backend.calls == calls
        # A capture session closed and opened again under the same id starts afresh.
        store.close_session("greedy")
        store.open_session("greedy")
        async with httpx.AsyncClient(base_url=server.url) as http:
            again = await http.post("/v1/chat/completions", json=chat_body(), headers={"Authorization": "Bearer greedy"})
    assert refused.status_code == 429 and refused.headers["x-should-retry"] == "false"
    error = refused.json()["error"]
    assert error["code"] == "max_tokens_per_session" and error["type"] == "rate_limit_error"
    assert error["limit"] == "max_tokens_per_session" and error["value"] == 10 and error["used"] == 12
    assert "max_tokens_per_session=10" in error["message"] and "greedy" not in error["message"]  # ids stay masked
    assert limited.value.status_code == 429
    assert other.status_code == uncaptured.status_code == again.status_code == 200
    assert server.limit_hits["max_tokens_per_session"] == 2
    assert len(store.close_session("modest").turns) == 1
    with pytest.raises(ValueError, match="max_tokens_per_session"):
        EndpointConfig(max_tokens_per_session=0)
