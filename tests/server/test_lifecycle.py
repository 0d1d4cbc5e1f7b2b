"""Server lifecycle: many sessions, the cap, idle reaping, graceful shutdown, reply order, blocking envs."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection

from openenv_train.envs.counter import CounterEnvironment
from openenv_train.server import EnvServer, ServerConfig
from tests.conftest import serve_inloop
from tests.server._support import (
    BlockingEnv,
    SlowAsyncEnv,
    expect_closed,
    open_ws,
    recv_json,
    request,
    wait_active,
)


def reset_counts(*classes: Any) -> None:
    for cls in classes:
        cls.closes.clear()
        cls.built.clear()
        cls.slow_steps.clear()


async def rpc(server: EnvServer, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=server.url, timeout=5, trust_env=False) as http:
        response = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}})
        return response.json()  # type: ignore[no-any-return]


# -- many sessions ------------------------------------------------------------------------------------


async def test_200_concurrent_sessions_each_keep_their_own_state() -> None:
    n = 200
    async with serve_inloop(CounterEnvironment) as server:
        sockets: list[ClientConnection] = list(await asyncio.gather(*(open_ws(server) for _ in range(n))))
        assert server.registry.active == n

        async def episode(i: int, ws: ClientConnection) -> None:
            await request(ws, {"type": "reset", "data": {"target": 10_000, "episode_id": f"ep-{i}"}})
            for _ in range(3):
                await request(ws, {"type": "step", "data": {"delta": i}})

        await asyncio.gather(*(episode(i, ws) for i, ws in enumerate(sockets)))
        states = await asyncio.gather(*(request(ws, {"type": "state"}) for ws in sockets))
        for i, state in enumerate(states):
            assert state["data"]["episode_id"] == f"ep-{i}"
            assert state["data"]["value"] == 3 * i
            assert state["data"]["step_count"] == 3
        await asyncio.gather(*(ws.close() for ws in sockets))
        await wait_active(server, 0)
        assert server.registry.created == n


async def test_session_cap_refuses_extra_sessions_and_frees_slots() -> None:
    async with serve_inloop(CounterEnvironment, max_sessions=3) as server:
        held = [await open_ws(server) for _ in range(3)]
        for ws in held:
            assert (await request(ws, {"type": "state"}))["type"] == "state"
        for _ in range(2):  # refusals take no slot: every extra attempt gets the same answer
            extra = await open_ws(server)
            data = (await recv_json(extra))["data"]
            assert data["code"] == "CAPACITY_REACHED"
            assert (data["active_sessions"], data["max_sessions"]) == (3, 3)
            await expect_closed(extra)
        assert server.registry.active == 3
        await held.pop().close()
        await wait_active(server, 2)
        newcomer = await open_ws(server)
        assert (await request(newcomer, {"type": "step", "data": {"delta": 2}}))["data"]["observation"]["value"] == 2
        for ws in [*held, newcomer]:
            await ws.close()
        await wait_active(server, 0)


# -- idle reaping -------------------------------------------------------------------------------------


async def test_idle_sessions_are_reaped_and_busy_ones_are_not() -> None:
    reset_counts(SlowAsyncEnv)
    async with serve_inloop(SlowAsyncEnv, idle_timeout_s=0.3) as server:
        idle, busy, chatty = await open_ws(server), await open_ws(server), await open_ws(server)
        await request(idle, {"type": "reset"})
        idle_since = time.monotonic()
        mcp_session = (await rpc(server, "openenv/session/create"))["result"]["session_id"]
        assert server.registry.active == 4

        async def keep_busy() -> dict[str, Any]:
            # One step that takes longer than the idle timeout: in flight, so never idle.
            return await request(busy, {"type": "step", "data": {"delay": 0.9, "tag": 7}})

        async def keep_chatting() -> int:
            count = 0
            deadline = time.monotonic() + 0.9
            while time.monotonic() < deadline:
                assert (await request(chatty, {"type": "state"}))["type"] == "state"
                count += 1
                await asyncio.sleep(0.1)
            return count

        async def watch_idle() -> tuple[dict[str, Any], float]:
            reply = await recv_json(idle, timeout=3)
            return reply, time.monotonic() - idle_since

        (reply, waited), busy_reply, chats = await asyncio.gather(watch_idle(), keep_busy(), keep_chatting())
        assert reply["type"] == "error" and reply["data"]["code"] == "SESSION_ERROR"
        assert "idle" in reply["data"]["message"]
        assert 0.3 <= waited < 1.5
        close = await expect_closed(idle)
        assert close is not None and close.code == 1001
        assert busy_reply["type"] == "observation" and busy_reply["data"]["observation"]["tag"] == 7
        assert chats >= 5
        # The busy and chatty sessions still work; the HTTP-MCP session idled out too.
        assert (await request(busy, {"type": "state"}))["data"]["step_count"] == 1
        assert (await request(chatty, {"type": "state"}))["type"] == "state"
        await wait_active(server, 2)
        assert server.registry.get(mcp_session) is None
        assert server.registry.reaped == 2
        assert sorted(SlowAsyncEnv.closes.values()) == [1, 1]  # the two reaped envs, closed once each
        await busy.close()
        await chatty.close()
        await wait_active(server, 0)
    assert sorted(SlowAsyncEnv.closes.values()) == [1, 1, 1, 1]


# -- graceful shutdown ------------------------------------------------------------------------------


@pytest.mark.parametrize("env_cls", [SlowAsyncEnv, BlockingEnv])
async def test_stop_finishes_in_flight_steps_then_closes_every_session_once(env_cls: Any) -> None:
    reset_counts(env_cls)
    server = EnvServer(env_cls, ServerConfig(port=0, shutdown_grace_s=120.0))  # long: a busy machine is slow
    await server.start()
    try:
        sockets = [await open_ws(server) for _ in range(3)]
        for ws in sockets:
            await request(ws, {"type": "reset"})
        mcp_session = await rpc(server, "openenv/session/create")
        assert "result" in mcp_session
        assert server.registry.active == 4
        slow = sockets[0]
        await slow.send(json.dumps({"type": "step", "data": {"delay": 0.4, "tag": 42}}))
        deadline = time.monotonic() + 60
        while not env_cls.slow_steps and time.monotonic() < deadline:  # the step is in flight
            await asyncio.sleep(0.01)
        assert env_cls.slow_steps, "the slow step never started"
        started = time.monotonic()
        await server.stop()
        stopped = time.monotonic()
        # it waited for the step (which ended before stop returned), not for the grace period
        assert len(env_cls.slow_steps[0]) == 2 and env_cls.slow_steps[0][1] <= stopped, env_cls.slow_steps
        assert stopped - started < 60.0, stopped - started
        reply = await recv_json(slow)
        assert reply["type"] == "observation" and reply["data"]["observation"]["tag"] == 42
        for ws in sockets:
            close = await expect_closed(ws)
            assert close is not None and close.code == 1001
        assert server.registry.active == 0
        assert len(env_cls.built) == 4
        assert env_cls.closes == {instance: 1 for instance in env_cls.built}
        with pytest.raises(OSError):
            await open_ws(server)
        await server.stop()  # a second stop is harmless and closes nothing twice
        assert set(env_cls.closes.values()) == {1}
    finally:
        await server.stop()


# -- reply order ----------------------------------------------------------------------------------


async def test_pipelined_requests_get_replies_in_order() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        ws = await open_ws(server)
        frames = [json.dumps({"type": "reset", "data": {"target": 10_000}})]
        for i in range(1, 201):
            frames.append(json.dumps({"type": "step", "data": {"delta": 1}}))
            if i % 25 == 0:
                frames.append(json.dumps({"type": "state"}))
        for frame in frames:
            await ws.send(frame)
        value = None
        for frame in frames:
            reply = await recv_json(ws)
            kind = json.loads(frame)["type"]
            if kind == "reset":
                assert reply["type"] == "observation" and reply["data"]["observation"]["value"] == 0
                value = 0
            elif kind == "step":
                assert value is not None
                value += 1
                assert reply["type"] == "observation" and reply["data"]["observation"]["value"] == value
            else:
                assert reply["type"] == "state" and reply["data"]["step_count"] == value == reply["data"]["value"]
        await ws.close()


def _step(tag: int, delay: float = 0.0) -> str:
    return json.dumps({"type": "step", "data": {"tag": tag, "delay": delay}})


@pytest.mark.parametrize("env_cls", [SlowAsyncEnv, BlockingEnv])
async def test_pipelined_slow_steps_mixed_with_quick_replies_stay_in_order(env_cls: Any) -> None:
    async with serve_inloop(env_cls) as server:
        ws = await open_ws(server)
        script: list[tuple[str, Any]] = [
            (_step(0, 0.15), ("observation", 0)),
            ('{"type":"state"}', ("state", 1)),
            ("garbage", ("error", "INVALID_JSON")),
            (_step(1), ("observation", 1)),
            ('{"type":"nope"}', ("error", "UNKNOWN_TYPE")),
            (_step(2, 0.05), ("observation", 2)),
            ('{"type":"step","data":{"tag":"x"}}', ("error", "VALIDATION_ERROR")),
            (_step(3), ("observation", 3)),
            ('{"type":"state"}', ("state", 4)),
            (_step(4, 0.1), ("observation", 4)),
            ('{"type":"reset"}', ("observation", 0)),
            ('{"type":"state"}', ("state", 0)),
        ]
        for frame, _ in script:
            await ws.send(frame)
        for frame, (kind, value) in script:
            reply = await recv_json(ws)
            assert reply["type"] == kind, (frame, reply)
            if kind == "observation":
                assert reply["data"]["observation"]["tag"] == value, (frame, reply)
            elif kind == "state":
                assert reply["data"]["step_count"] == value, (frame, reply)
            else:
                assert reply["data"]["code"] == value, (frame, reply)
        await ws.close()
        await wait_active(server, 0)


async def test_a_long_pipeline_of_async_steps_is_answered_in_order() -> None:
    # More requests than the server's backlog limit: reading pauses and resumes, nothing is lost.
    async with serve_inloop(SlowAsyncEnv) as server:
        ws = await open_ws(server)
        n = 300
        await asyncio.gather(*(ws.send(_step(i, 0.001 if i % 7 == 0 else 0.0)) for i in range(n)))
        tags = [(await recv_json(ws))["data"]["observation"]["tag"] for _ in range(n)]
        assert tags == list(range(n))
        assert (await request(ws, {"type": "state"}))["data"]["step_count"] == n
        await ws.close()
        await wait_active(server, 0)


async def test_binary_frame_after_a_slow_step_is_answered_after_the_step() -> None:
    async with serve_inloop(SlowAsyncEnv) as server:
        ws = await open_ws(server)
        await ws.send(_step(5, 0.2))
        await ws.send(b"\x00")
        first = await recv_json(ws)
        assert first["type"] == "observation" and first["data"]["observation"]["tag"] == 5
        second = await recv_json(ws)
        assert second["data"]["code"] == "SESSION_ERROR"
        await expect_closed(ws)
        await wait_active(server, 0)


async def test_invalid_utf8_after_a_slow_step_is_answered_after_the_step() -> None:
    async with serve_inloop(SlowAsyncEnv) as server:
        ws = await open_ws(server)
        await ws.send(_step(5, 0.2))
        await ws.send(b'{"type":"\xff"}', text=True)
        first = await recv_json(ws)
        assert first["type"] == "observation" and first["data"]["observation"]["tag"] == 5
        second = await recv_json(ws)
        assert second["data"]["code"] == "SESSION_ERROR"


# -- blocking envs ------------------------------------------------------------------------------------


async def test_blocking_env_steps_run_in_threads_without_stalling_other_sessions() -> None:
    reset_counts(BlockingEnv)
    async with serve_inloop(BlockingEnv) as server:
        a, b = await open_ws(server), await open_ws(server)
        reset = await request(a, {"type": "reset"})
        assert reset["data"]["observation"]["thread"].startswith("env")  # a worker thread, not the loop's
        # The server runs on this test's event loop: a step run on the loop would stall this coroutine too,
        # so measure from before the slow step was sent, not per request.
        started = time.monotonic()
        await a.send(_step(1, 0.5))
        await asyncio.sleep(0.05)
        for tag in range(3):
            reply = await request(b, _step(10 + tag))
            assert reply["data"]["observation"]["tag"] == 10 + tag
            assert reply["data"]["observation"]["thread"].startswith("env")
        assert time.monotonic() - started < 0.25
        slow = await recv_json(a)
        assert slow["data"]["observation"]["tag"] == 1
        assert time.monotonic() - started >= 0.45
        # The loop's own HTTP routes were not stalled either.
        assert (await rpc(server, "tools/list"))["error"]["code"] == -32603
        await a.close()
        await b.close()
        await wait_active(server, 0)
    assert set(BlockingEnv.closes.values()) == {1}


async def test_blocking_env_constructor_does_not_stall_other_sessions() -> None:
    reset_counts(BlockingEnv)
    BlockingEnv.init_delay = 0.0
    try:
        async with serve_inloop(BlockingEnv) as server:
            a = await open_ws(server)
            BlockingEnv.init_delay = 0.5
            started = time.monotonic()  # the server shares this loop: a stall delays this coroutine too
            opening = asyncio.ensure_future(open_ws(server))
            await asyncio.sleep(0.05)
            await request(a, _step(1))
            latency = time.monotonic() - started
            b = await opening
            await b.close()
            await a.close()
            assert latency < 0.2, latency
    finally:
        BlockingEnv.init_delay = 0.0
