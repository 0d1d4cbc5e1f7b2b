"""Hypothesis fuzzing of the live server loop over one real WebSocket per example.

Random frame sequences (valid messages, random JSON, random text, unknown types, random
action dicts, and at the end possibly a binary frame or a ``close``) are pipelined to an
in-loop counter server. A model of the counter predicts every reply: exactly one frame per
text frame, of the right type (and, for errors, the right code), in order, until the
connection ends; afterwards the session is gone and a fresh one works.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError
from websockets.exceptions import ConnectionClosed

from openenv_train.core import CLIENT_TYPES, ProtocolError, decode_client_message
from openenv_train.envs.counter import CounterAction, CounterEnvironment
from openenv_train.envs.echo import EchoEnvironment
from openenv_train.server import EnvServer, ServerConfig
from tests.server._support import open_ws, recv_json, request

_OPTIONAL_INT: TypeAdapter[int | None] = TypeAdapter(int | None)

FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- strategies -----------------------------------------------------------------------------------------

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False) | text
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3),
                           max_leaves=8)
json_objects = st.dictionaries(text, json_values, max_size=3)

valid_messages = st.one_of(
    st.just({"type": "state"}),
    st.builds(lambda d: {"type": "step", "data": {"delta": d}}, st.integers(-1000, 1000)),
    st.builds(lambda d, m: {"type": "step", "data": {"delta": d, "metadata": m}}, st.integers(-5, 5), json_objects),
    st.fixed_dictionaries({"type": st.just("reset")}, optional={"data": st.fixed_dictionaries(
        {}, optional={"seed": st.integers(0, 2**32), "target": st.integers(-50, 50), "episode_id": text})}),
    st.builds(lambda method, rid: {"type": "mcp", "data": {"jsonrpc": "2.0", "id": rid, "method": method}},
              st.sampled_from(["tools/list", "tools/call", "openenv/session/create", "nope"]),
              st.integers(0, 9) | text | st.none()),
)
random_actions = st.builds(
    lambda data: {"type": "step", "data": data},
    st.dictionaries(st.sampled_from(["delta", "metadata", "type", "tool_name", "bogus"]) | text, json_values,
                    max_size=3),
)
random_resets = st.builds(
    lambda data: {"type": "reset", "data": data},
    st.dictionaries(st.sampled_from(["seed", "target", "episode_id", "colour"]), json_values, max_size=3),
)
unknown_types = st.builds(lambda kind, data: {"type": kind, "data": data},
                          text.filter(lambda t: t not in CLIENT_TYPES) | scalars, json_values)
envelopes = st.dictionaries(st.sampled_from(["type", "data", "id"]) | text,
                            st.sampled_from(["step", "state", "reset"]) | json_values, max_size=3)

json_frames = st.one_of(valid_messages, valid_messages, random_actions, random_resets, unknown_types, envelopes,
                        json_values).map(json.dumps)


def _not_close(frame: str) -> bool:
    """Frames before the ending must not end the session themselves."""
    try:
        return decode_client_message(frame).type != "close"
    except ProtocolError:
        return True


text_frames = st.one_of(json_frames, json_frames, json_frames,
                        st.text(st.characters(exclude_categories=["Cs"]), max_size=40)).filter(_not_close)
endings = st.one_of(st.none(), st.none(), st.binary(max_size=16), st.just('{"type":"close"}'))


# -- the model ------------------------------------------------------------------------------------------


@dataclass
class CounterModel:
    """What the counter env holds, to predict each reply."""

    value: int = 0
    step_count: int = 0
    target: int = 10
    episode_id: str | None = None
    seen: list[str] = field(default_factory=list)

    def check(self, frame: str, reply: dict[str, Any]) -> None:
        """Check one reply against the frame it answers and advance the model."""
        kind, data = reply["type"], reply["data"]
        try:
            msg = decode_client_message(frame)
        except ProtocolError as exc:
            assert not exc.code.closes_connection
            assert kind == "error" and data["code"] == exc.code.value, (frame, reply)
            return
        if msg.type == "state":
            assert kind == "state", (frame, reply)
            assert (data["value"], data["step_count"], data["target"]) == (self.value, self.step_count, self.target)
            if self.episode_id == "<generated>":  # reset without an id: the env made one up
                assert isinstance(data["episode_id"], str) and data["episode_id"]
                self.episode_id = data["episode_id"]
            assert data["episode_id"] == self.episode_id
        elif msg.type == "mcp":
            assert kind == "mcp", (frame, reply)
            assert data["jsonrpc"] == "2.0" and ("result" in data) != ("error" in data)
        elif msg.type == "step":
            try:
                action = CounterAction.model_validate(msg.data)
            except ValidationError:
                assert kind == "error" and data["code"] == "VALIDATION_ERROR", (frame, reply)
                assert isinstance(data["errors"], list) and data["errors"]
                return
            assert kind == "observation", (frame, reply)
            self.value += action.delta
            self.step_count += 1
            obs = data["observation"]
            assert (obs["value"], obs["target"]) == (self.value, self.target), (frame, reply, self)
            assert data["done"] is (self.value >= self.target)
            assert data["reward"] == (1.0 if self.value == self.target else 0.0)
        else:
            assert msg.type == "reset"
            options = msg.data
            seed, episode_id = options.get("seed"), options.get("episode_id")
            try:  # env options are checked against reset's type hints (pydantic, lax), before the env runs
                target = _OPTIONAL_INT.validate_python(options.get("target"))
            except ValidationError:
                target, bad_target = None, True
            else:
                bad_target = False
            bad = (set(options) - {"seed", "target", "episode_id"} or bad_target
                   or (seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)))
                   or (episode_id is not None and not isinstance(episode_id, str)))
            if bad:
                assert kind == "error" and data["code"] == "VALIDATION_ERROR", (frame, reply)
                return
            assert kind == "observation", (frame, reply)
            obs = data["observation"]
            assert obs["value"] == 0 and data["reward"] == 0.0
            if target is not None:
                assert obs["target"] == target
            self.value, self.step_count, self.target = 0, 0, obs["target"]
            self.episode_id = episode_id or "<generated>"


# -- the live server ------------------------------------------------------------------------------------


@dataclass
class Live:
    loop: asyncio.AbstractEventLoop
    server: EnvServer

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 15))


def _live(env_cls: Any) -> Iterator[Live]:
    loop = asyncio.new_event_loop()
    server = EnvServer(env_cls, ServerConfig(port=0, max_message_size=64 * 1024))
    loop.run_until_complete(server.start())
    try:
        yield Live(loop, server)
    finally:
        loop.run_until_complete(server.stop())
        loop.close()


@pytest.fixture(scope="module")
def live_counter() -> Iterator[Live]:
    yield from _live(CounterEnvironment)


@pytest.fixture(scope="module")
def live_echo() -> Iterator[Live]:
    yield from _live(EchoEnvironment)


async def _wait_idle(server: EnvServer) -> None:
    deadline = time.monotonic() + 5
    while server.registry.active:
        assert time.monotonic() < deadline, f"{server.registry.active} sessions leaked"
        await asyncio.sleep(0.005)


async def _counter_example(server: EnvServer, body: list[str], ending: str | bytes | None, after: list[str],
                           batched: bool) -> None:
    created = server.registry.created
    ws = await open_ws(server)
    try:
        await _counter_exchange(ws, body, ending, after, batched)
    finally:
        await ws.close()
    await _wait_idle(server)
    # A fresh session works and starts from scratch.
    fresh = await open_ws(server)
    try:
        assert (await request(fresh, {"type": "step", "data": {"delta": 2}}))["data"]["observation"]["value"] == 2
        assert (await request(fresh, {"type": "state"}))["data"]["step_count"] == 1
    finally:
        await fresh.close()
    await _wait_idle(server)
    assert server.registry.created == created + 2


def _send_batch(ws: Any, frames: list[str | bytes]) -> None:
    """Write several frames with one write, so the server reads them in one chunk.

    Frames that reach the server after it closed the socket draw a TCP reset, which makes
    the websockets client drop the close frame it has not read yet; sending what follows an
    ending in the same write keeps the close code observable.
    """
    for frame in frames:
        if isinstance(frame, bytes):
            ws.protocol.send_binary(frame)
        else:
            ws.protocol.send_text(frame.encode())
    ws.transport.write(b"".join(ws.protocol.data_to_send()))


async def _counter_exchange(ws: Any, body: list[str], ending: str | bytes | None, after: list[str],
                            batched: bool) -> None:
    model = CounterModel()
    sentinel = '{"type":"state"}'
    if ending is None:  # nothing ends the session: everything is answered, then the sentinel
        body = [*body, *after]
        tail: list[str | bytes] = [sentinel]
    else:
        tail = [ending, *after]
    # Pipeline everything without waiting for replies.
    if batched:
        _send_batch(ws, [*body, *tail])
    else:
        for frame in body:
            await ws.send(frame)
        _send_batch(ws, tail)
    replies = 0
    for frame in body:
        reply = await recv_json(ws)
        model.check(frame, reply)
        replies += 1
    if ending is None:
        final = await recv_json(ws)
        model.check(sentinel, final)
    elif isinstance(ending, bytes):
        reply = await recv_json(ws)
        assert reply["type"] == "error" and reply["data"]["code"] == "SESSION_ERROR", reply
        with pytest.raises(ConnectionClosed) as info:
            await asyncio.wait_for(ws.recv(), 5)
        assert info.value.rcvd is not None and info.value.rcvd.code == 1008
    else:
        with pytest.raises(ConnectionClosed) as info:  # no reply to close or to anything after it
            await asyncio.wait_for(ws.recv(), 5)
        assert info.value.rcvd is not None and info.value.rcvd.code == 1000
    assert replies == len(body)


@given(body=st.lists(text_frames, max_size=20), ending=endings, after=st.lists(json_frames.filter(_not_close), max_size=3),
       batched=st.booleans())
@FUZZ
def test_fuzz_counter_session(live_counter: Live, body: list[str], ending: Any, after: list[str],
                              batched: bool) -> None:
    live_counter.run(_counter_example(live_counter.server, body, ending, after, batched))


# -- echo: MCP env, coarser oracle ------------------------------------------------------------------------

echo_actions = st.builds(
    lambda tool, args: {"type": "step", "data": {"type": "call_tool", "tool_name": tool, "arguments": args}},
    st.sampled_from(["echo_message", "echo_with_length", "nope"]),
    st.dictionaries(st.sampled_from(["message", "extra"]), json_values, max_size=2),
) | st.just({"type": "step", "data": {"type": "list_tools"}})
echo_frames = st.one_of(echo_actions.map(json.dumps), text_frames)


async def _echo_example(server: EnvServer, body: list[str]) -> None:
    ws = await open_ws(server)
    try:
        await _echo_exchange(ws, body)
    finally:
        await ws.close()
    await _wait_idle(server)


async def _echo_exchange(ws: Any, body: list[str]) -> None:
    for frame in body:
        await ws.send(frame)
    await ws.send('{"type":"state"}')
    steps = 0
    for frame in body:
        reply = await recv_json(ws)
        try:
            msg = decode_client_message(frame)
        except ProtocolError as exc:
            assert reply["type"] == "error" and reply["data"]["code"] == exc.code.value
            continue
        allowed = {"reset": {"observation", "error"}, "step": {"observation", "error"}, "state": {"state"},
                   "mcp": {"mcp"}}[msg.type]
        assert reply["type"] in allowed, (frame, reply)
        if reply["type"] == "error":
            assert reply["data"]["code"] == "VALIDATION_ERROR", (frame, reply)
        if msg.type == "reset" and reply["type"] == "observation":
            steps = 0
        if msg.type == "step" and reply["type"] == "observation":
            steps += 1
            obs = reply["data"]["observation"]
            if msg.data.get("type") == "call_tool":
                tool_name, arguments = msg.data["tool_name"], msg.data["arguments"]
                assert obs["tool_name"] == tool_name
                good = tool_name != "nope" and set(arguments) == {"message"} and isinstance(arguments["message"], str)
                assert (obs["error"] is None) is good, (frame, reply)
                if good and tool_name == "echo_message":
                    assert obs["result"]["data"] == arguments["message"]
        if msg.type == "state":
            assert reply["data"]["step_count"] == steps
    final = await recv_json(ws)
    assert final["type"] == "state" and final["data"]["step_count"] == steps


@given(body=st.lists(echo_frames, max_size=15))
@settings(FUZZ, max_examples=50)
def test_fuzz_echo_session(live_echo: Live, body: list[str]) -> None:
    live_echo.run(_echo_example(live_echo.server, body))
