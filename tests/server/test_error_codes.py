"""Every error code of PROTOCOL.md, produced over a real WebSocket by the input that causes it.

For codes that keep the connection open the same connection must keep working; for
every code a bystander session on the same server must keep working, and the
registry must return to its expected size once the sockets close.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from openenv_train.core import Action, Observation, State
from openenv_train.envs.counter import CounterEnvironment
from openenv_train.envs.echo import EchoEnvironment
from openenv_train.server import Environment, EnvServer
from tests.conftest import serve_inloop
from tests.server._support import (
    assert_counter_session_works,
    expect_closed,
    expect_error,
    masked_frame,
    open_ws,
    raw_exchange,
    recv_json,
    request,
    wait_active,
    ws_handshake,
)

# -- test envs ---------------------------------------------------------------------------------------


class PokeAction(Action):
    fail: bool = False


class PokeObservation(Observation):
    pokes: int = 0


class RaisingStepEnv(Environment[PokeAction, PokeObservation, State]):
    """Sync step raising a RuntimeError when asked to."""

    action_type = PokeAction
    observation_type = PokeObservation

    def __init__(self) -> None:
        self._state = State()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> PokeObservation:  # type: ignore[override]
        self._state = State(episode_id=episode_id)
        return PokeObservation()

    def step(self, action: PokeAction) -> PokeObservation:
        if action.fail:
            raise RuntimeError("the reactor melted at step 3")
        self._state.step_count += 1
        return PokeObservation(pokes=self._state.step_count)

    @property
    def state(self) -> State:
        return self._state


class RaisingAsyncStepEnv(RaisingStepEnv):
    """Async step raising after an await."""

    async def step(self, action: PokeAction) -> PokeObservation:  # type: ignore[override]
        await asyncio.sleep(0.01)
        if action.fail:
            raise KeyError("missing key 'x'")
        self._state.step_count += 1
        return PokeObservation(pokes=self._state.step_count)


class FlakyConstructorEnv(RaisingStepEnv):
    """Constructor raises while the class flag ``fail`` is set."""

    fail = False

    def __init__(self) -> None:
        if type(self).fail:
            raise OSError("database unreachable: connection refused")
        super().__init__()


# -- helpers ---------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def with_bystander(server: EnvServer) -> AsyncIterator[ClientConnection]:
    """A counter session opened before the offending input and checked after it."""
    ws = await open_ws(server)
    try:
        await request(ws, {"type": "reset", "data": {"target": 1000}})
        await request(ws, {"type": "step", "data": {"delta": 5}})
        yield ws
        await assert_counter_session_works(ws, value_before=5)
    finally:
        await ws.close()


# -- INVALID_JSON / UNKNOWN_TYPE ----------------------------------------------------------------------------


@pytest.mark.parametrize("frame", ["not json", "{", "", "{'type': 'state'}", '{"type":"state"}garbage', "NaN-ish"])
async def test_invalid_json_keeps_the_connection(frame: str) -> None:
    async with serve_inloop(CounterEnvironment) as server:
        async with with_bystander(server):
            ws = await open_ws(server)
            await request(ws, {"type": "reset", "data": {"target": 100}})
            data = await expect_error(ws, frame, "INVALID_JSON")
            assert "not valid JSON" in data["message"]
            await assert_counter_session_works(ws, value_before=0)
            await expect_error(ws, frame, "INVALID_JSON")  # and again: nothing got stuck
            assert server.registry.active == 2
            await ws.close()
        await wait_active(server, 0)


DEEP = "[" * 100_000 + "]" * 100_000


async def test_deeply_nested_json_is_refused_and_the_connection_survives() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        ws = await open_ws(server)
        reply = await request(ws, DEEP)
        assert reply["type"] == "error"
        assert reply["data"]["code"] in ("INVALID_JSON", "VALIDATION_ERROR", "EXECUTION_ERROR")
        await assert_counter_session_works(ws)
        await ws.close()
        await wait_active(server, 0)


async def test_deeply_nested_json_is_a_client_error() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        ws = await open_ws(server)
        data = (await request(ws, DEEP))["data"]
        assert data["code"] in ("INVALID_JSON", "VALIDATION_ERROR"), data


@pytest.mark.parametrize("frame", [{"type": "jump"}, {"type": "observation", "data": {}}, {"type": 7},
                                   {"type": "Step", "data": {"delta": 1}}, {"type": ["state"]}])
async def test_unknown_type_keeps_the_connection(frame: dict[str, Any]) -> None:
    async with serve_inloop(CounterEnvironment) as server:
        async with with_bystander(server):
            ws = await open_ws(server)
            await request(ws, {"type": "reset", "data": {"target": 100}})
            data = await expect_error(ws, frame, "UNKNOWN_TYPE")
            assert repr(frame["type"]) in data["message"]
            assert "reset, step, state, mcp, close" in data["message"]
            await assert_counter_session_works(ws, value_before=0)
            assert server.registry.active == 2
            await ws.close()
        await wait_active(server, 0)


# -- VALIDATION_ERROR ----------------------------------------------------------------------------------

ECHO_ACTION = {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}}

VALIDATION_CASES = [
    # (id, frame, words the message must contain, error locations that must be listed)
    ("wrong field type", {"type": "step", "data": {"delta": "three"}}, ["delta"], [["delta"]]),
    ("out of range", {"type": "step", "data": {"delta": 5000}}, ["delta"], [["delta"]]),
    ("float for int", {"type": "step", "data": {"delta": 1.5}}, ["delta"], [["delta"]]),
    ("unknown field", {"type": "step", "data": {"delta": 1, "speed": 9}}, ["speed"], [["speed"]]),
    ("metadata not an object", {"type": "step", "data": {"metadata": [1]}}, ["metadata"], [["metadata"]]),
    ("unknown top-level key", {"type": "step", "data": {"delta": 1}, "request_id": "r1"}, ["request_id"],
     [["request_id"]]),
    ("step without data", {"type": "step"}, ["data"], [["data"]]),
    ("step with null data", {"type": "step", "data": None}, ["data"], [["data"]]),
    ("data not an object", {"type": "step", "data": [1, 2]}, ["data", "list"], [["data"]]),
    ("not an object", [{"type": "step"}], ["JSON object"], [[]]),
    ("no type", {"data": {"delta": 1}}, ["type"], [["type"]]),
    ("reset seed str", {"type": "reset", "data": {"seed": "42"}}, ["seed"], [["seed"]]),
    ("reset seed float", {"type": "reset", "data": {"seed": 4.2}}, ["seed"], [["seed"]]),
    ("reset seed bool", {"type": "reset", "data": {"seed": True}}, ["seed"], [["seed"]]),
    ("reset episode_id int", {"type": "reset", "data": {"episode_id": 7}}, ["episode_id"], [["episode_id"]]),
    ("reset unknown option", {"type": "reset", "data": {"difficulty": "hard"}}, ["difficulty", "target"],
     [["difficulty"]]),
    ("echo action to counter", {"type": "step", "data": ECHO_ACTION}, ["tool_name", "delta"],
     [["type"], ["tool_name"], ["arguments"]]),
    ("mcp without data", {"type": "mcp"}, ["data"], [["data"]]),
]


@pytest.mark.parametrize(("frame", "words", "locs"), [c[1:] for c in VALIDATION_CASES],
                         ids=[c[0] for c in VALIDATION_CASES])
async def test_validation_error_names_the_problem(frame: Any, words: list[str], locs: list[list[Any]]) -> None:
    async with serve_inloop(CounterEnvironment) as server:
        async with with_bystander(server):
            ws = await open_ws(server)
            await request(ws, {"type": "reset", "data": {"target": 100}})
            await request(ws, {"type": "step", "data": {"delta": 2}})
            data = await expect_error(ws, frame, "VALIDATION_ERROR")
            for word in words:
                assert word in data["message"], (word, data["message"])
            errors = data["errors"]
            assert isinstance(errors, list) and errors
            for error in errors:
                assert isinstance(error["loc"], list) and isinstance(error["msg"], str) and error["type"]
            for loc in locs:
                assert loc in [e["loc"] for e in errors], (loc, errors)
            # The invalid request changed nothing and the connection still works.
            await assert_counter_session_works(ws, value_before=2)
            await ws.close()
        await wait_active(server, 0)


@pytest.mark.parametrize("frame", ['{"type":"step","data":{"delta":NaN}}',
                                   '{"type":"step","data":{"delta":Infinity}}',
                                   '{"type":"step","data":{"delta":1e400}}'])
async def test_non_finite_number_in_an_action_leaks_nothing(frame: str) -> None:
    async with serve_inloop(CounterEnvironment) as server:
        async with with_bystander(server):
            ws = await open_ws(server)
            await ws.send(frame)
            with contextlib.suppress(ConnectionClosed, TimeoutError):
                await asyncio.wait_for(ws.recv(), 1)
            await ws.close()
            await wait_active(server, 1)
        await wait_active(server, 0)


@pytest.mark.parametrize("frame", ['{"type":"step","data":{"delta":NaN}}',
                                   '{"type":"step","data":{"delta":-Infinity}}'])
async def test_non_finite_number_in_an_action_is_invalid_json(frame: str) -> None:
    # NaN and Infinity are not JSON (RFC 8259): refused by the strict parser, the session stays open.
    async with serve_inloop(CounterEnvironment) as server:
        ws = await open_ws(server)
        data = await expect_error(ws, frame, "INVALID_JSON")
        assert "not valid JSON" in data["message"] and ("NaN" in data["message"] or "Infinity" in data["message"])
        await assert_counter_session_works(ws)


async def test_counter_action_sent_to_the_echo_env_is_a_validation_error() -> None:
    async with serve_inloop(EchoEnvironment) as server:
        ws = await open_ws(server)
        await request(ws, {"type": "reset"})
        data = await expect_error(ws, {"type": "step", "data": {"delta": 1}}, "VALIDATION_ERROR")
        assert "EchoEnvironment" in data["message"] and "tool_name" in data["message"]
        assert data["errors"] and all("loc" in e for e in data["errors"])
        data = await expect_error(ws, {"type": "step", "data": {**ECHO_ACTION, "arguments": "hi"}}, "VALIDATION_ERROR")
        assert any("arguments" in e["loc"] for e in data["errors"]), data["errors"]
        reply = await request(ws, {"type": "step", "data": ECHO_ACTION})
        assert reply["type"] == "observation"
        assert reply["data"]["observation"]["result"]["data"] == "hi"
        state = await request(ws, {"type": "state"})
        assert state["data"]["step_count"] == 1  # rejected actions are not steps
        await ws.close()
        await wait_active(server, 0)


# -- EXECUTION_ERROR ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("env", "text"), [(RaisingStepEnv, "the reactor melted at step 3"),
                                           (RaisingAsyncStepEnv, "\"missing key 'x'\"")])
async def test_execution_error_carries_the_exception_text(env: type[RaisingStepEnv], text: str) -> None:
    async with serve_inloop(env) as server:
        bystander = await open_ws(server)
        await request(bystander, {"type": "reset"})
        await request(bystander, {"type": "step", "data": {}})
        ws = await open_ws(server)
        await request(ws, {"type": "reset"})
        assert (await request(ws, {"type": "step", "data": {}}))["data"]["observation"]["pokes"] == 1
        data = await expect_error(ws, {"type": "step", "data": {"fail": True}}, "EXECUTION_ERROR")
        assert data["message"] == text
        # The connection stays open and the env keeps its state.
        assert (await request(ws, {"type": "step", "data": {}}))["data"]["observation"]["pokes"] == 2
        await expect_error(ws, {"type": "step", "data": {"fail": True}}, "EXECUTION_ERROR")
        assert (await request(ws, {"type": "state"}))["data"]["step_count"] == 2
        assert (await request(bystander, {"type": "step", "data": {}}))["data"]["observation"]["pokes"] == 2
        assert server.registry.active == 2
        await ws.close()
        await bystander.close()
        await wait_active(server, 0)


# -- CAPACITY_REACHED ------------------------------------------------------------------------------------


async def test_capacity_reached_right_after_accept_then_closed() -> None:
    async with serve_inloop(CounterEnvironment, max_sessions=1) as server:
        first = await open_ws(server)
        await request(first, {"type": "reset", "data": {"target": 50}})
        second = await open_ws(server)  # the handshake succeeds: the error comes as a frame
        reply = await recv_json(second)
        assert reply["type"] == "error"
        data = reply["data"]
        assert data["code"] == "CAPACITY_REACHED"
        assert data["active_sessions"] == 1 and data["max_sessions"] == 1
        assert "1 sessions" in data["message"] or "maximum of 1" in data["message"]
        close = await expect_closed(second)
        assert close is not None and close.code != 1000
        # The refused connection took no slot and the first session is untouched.
        assert server.registry.active == 1
        await assert_counter_session_works(first, value_before=0)
        await first.close()
        await wait_active(server, 0)
        third = await open_ws(server)  # the slot is free again
        await assert_counter_session_works(third)
        await third.close()
        await wait_active(server, 0)


# -- FACTORY_ERROR -----------------------------------------------------------------------------------


async def test_factory_error_names_the_factory_and_closes() -> None:
    FlakyConstructorEnv.fail = False
    try:
        async with serve_inloop(FlakyConstructorEnv) as server:
            bystander = await open_ws(server)
            await request(bystander, {"type": "reset"})
            FlakyConstructorEnv.fail = True
            ws = await open_ws(server)
            reply = await recv_json(ws)
            assert reply["type"] == "error"
            data = reply["data"]
            assert data["code"] == "FACTORY_ERROR"
            assert data["factory_name"] == f"{__name__}:FlakyConstructorEnv"
            assert "database unreachable: connection refused" in data["message"]
            close = await expect_closed(ws)
            assert close is not None and close.code != 1000
            assert server.registry.active == 1  # the failed build left no session behind
            FlakyConstructorEnv.fail = False
            assert (await request(bystander, {"type": "step", "data": {}}))["data"]["observation"]["pokes"] == 1
            again = await open_ws(server)
            assert (await request(again, {"type": "step", "data": {}}))["data"]["observation"]["pokes"] == 1
            await again.close()
            await bystander.close()
            await wait_active(server, 0)
    finally:
        FlakyConstructorEnv.fail = False


# -- SESSION_ERROR ---------------------------------------------------------------------------------------


async def test_binary_frame_is_a_session_error_and_closes() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        async with with_bystander(server):
            ws = await open_ws(server)
            await request(ws, {"type": "reset"})
            data = await expect_error(ws, b'{"type":"state"}', "SESSION_ERROR")
            assert "binary" in data["message"]
            close = await expect_closed(ws)
            assert close is not None and close.code == 1008
            await wait_active(server, 1)  # only the bystander is left
        await wait_active(server, 0)


async def test_oversized_frame_closes_the_session_and_nothing_else() -> None:
    async with serve_inloop(CounterEnvironment, max_message_size=4096) as server:
        async with with_bystander(server):
            ws = await open_ws(server)
            await request(ws, {"type": "reset"})
            # Just under the limit is fine.
            ok = json.dumps({"type": "step", "data": {"metadata": {"pad": "x" * 3900}}})
            assert len(ok) <= 4096
            assert (await request(ws, ok))["type"] == "observation"
            await ws.send(json.dumps({"type": "step", "data": {"metadata": {"pad": "x" * 5000}}}))
            with pytest.raises(ConnectionClosed) as info:
                while True:  # an error frame may come first; the connection must end either way
                    reply = await asyncio.wait_for(ws.recv(), 5)
                    assert json.loads(reply)["data"]["code"] == "SESSION_ERROR"
            assert info.value.rcvd is not None and info.value.rcvd.code == 1009
            await wait_active(server, 1)
        await wait_active(server, 0)


async def test_oversized_frame_gets_a_session_error_frame_naming_the_limit() -> None:
    async with serve_inloop(CounterEnvironment, max_message_size=4096) as server:
        ws = await open_ws(server)
        await ws.send("x" * 10_000)
        reply = await recv_json(ws)
        assert reply["type"] == "error" and reply["data"]["code"] == "SESSION_ERROR"
        assert "4096" in reply["data"]["message"]
        close = await expect_closed(ws)
        assert close is not None and close.code == 1009


async def test_fragmented_oversized_message_is_refused() -> None:
    async with serve_inloop(CounterEnvironment, max_message_size=4096) as server:
        ws = await open_ws(server)
        await ws.send(["x" * 3000, "y" * 3000])  # each fragment fits, the message does not
        with pytest.raises(ConnectionClosed) as info:
            while True:
                await asyncio.wait_for(ws.recv(), 5)
        assert info.value.rcvd is not None and info.value.rcvd.code == 1009
        await wait_active(server, 0)


async def test_fragmented_text_message_is_reassembled() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        ws = await open_ws(server)
        await ws.send(['{"type":"step",', '"data":{"delta":', "7}}"])
        reply = await recv_json(ws)
        assert reply["type"] == "observation" and reply["data"]["observation"]["value"] == 7
        await ws.send([b'{"type":', b'"state"}'])  # fragmented binary: still binary
        data = (await recv_json(ws))["data"]
        assert data["code"] == "SESSION_ERROR"
        await expect_closed(ws)
        await wait_active(server, 0)


async def test_invalid_utf8_text_frame_is_a_session_error() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        async with with_bystander(server):
            # The server waits up to 2 s for the client's close frame (this raw client sends none).
            out, closed = await raw_exchange(server.port, ws_handshake() + masked_frame(b'{"type":"\xff\xfe"}'), wait=4.0)
            assert out.startswith(b"HTTP/1.1 101") and closed
            _, _, frames = out.partition(b"\r\n\r\n")
            # An error text frame, then a close frame with code 1007 (invalid frame payload data).
            assert frames[0] == 0x81, frames
            length = frames[1] if frames[1] < 126 else int.from_bytes(frames[2:4], "big")
            offset = 2 if frames[1] < 126 else 4
            error = json.loads(frames[offset:offset + length])
            assert error["type"] == "error" and error["data"]["code"] == "SESSION_ERROR"
            assert "UTF-8" in error["data"]["message"]
            close = frames[offset + length:]
            assert close[0] == 0x88 and int.from_bytes(close[2:4], "big") == 1007, close
            await wait_active(server, 1)
        await wait_active(server, 0)


# -- malformed handshakes --------------------------------------------------------------------------------


async def test_bad_websocket_handshake_is_a_400() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        bad = ws_handshake().replace(b"Sec-WebSocket-Version: 13", b"Sec-WebSocket-Version: 8")
        out, closed = await raw_exchange(server.port, bad)
        assert out.startswith(b"HTTP/1.1 400") and b"Sec-WebSocket-Version 13" in out and closed
        with pytest.raises(InvalidStatus) as info:
            await connect(f"ws://127.0.0.1:{server.port}/nope", open_timeout=5, proxy=None)
        assert info.value.response.status_code == 404
        assert server.registry.active == 0
