"""Client behaviour beyond OpenEnv: timeouts never mis-pair replies, lost sessions reconnect and say so."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest

from openenv_train.client import ClientState, EnvClient, GenericEnvClient
from openenv_train.core import (
    Action,
    ConnectionLost,
    ConnectTimeout,
    Observation,
    ReplyTimeout,
    ServerError,
    SessionFailed,
    State,
)
from openenv_train.envs.counter import CounterAction, CounterEnvironment, CounterObservation, CounterState
from openenv_train.server import Environment
from tests.conftest import serve_inloop


class SleepAction(Action):
    seconds: float = 0.0
    tag: str = ""


class SleepObservation(Observation):
    tag: str = ""
    episode: str = ""


class SleepyEnvironment(Environment[SleepAction, SleepObservation, State]):
    """Async env that sleeps before echoing the action's tag."""

    action_type = SleepAction
    observation_type = SleepObservation

    def __init__(self) -> None:
        self._state = State()

    async def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> SleepObservation:
        self._state = State(episode_id=episode_id or f"ep-{id(self)}")
        return SleepObservation(episode=self._state.episode_id or "")

    async def step(self, action: SleepAction) -> SleepObservation:
        await asyncio.sleep(action.seconds)
        self._state.step_count += 1
        return SleepObservation(tag=action.tag, episode=self._state.episode_id or "")

    @property
    def state(self) -> State:
        return self._state


async def test_late_reply_is_never_paired_with_the_next_request() -> None:
    async with serve_inloop(SleepyEnvironment) as server:
        # limits long enough for a busy machine's fast replies; the slow step overruns them well
        client = GenericEnvClient(server.url, reply_timeout_s=2.0)
        async with client:
            first = (await client.reset(episode_id="first")).observation["episode"]
            with pytest.raises(ReplyTimeout, match="reply_timeout_s=2"):
                await client.step({"seconds": 5.0, "tag": "slow"})
            assert client.client_state is ClientState.FAILED
            # The slow reply is still due from the old session; the next request must get its own reply.
            result = await client.step({"seconds": 0.0, "tag": "fast"})
            assert result.observation["tag"] == "fast"
            assert result.observation["episode"] != first  # a new session, not the old one
            assert client.reconnects == 1
            await asyncio.sleep(5.0)  # let the old slow step finish on the server
            again = await client.step({"seconds": 0.0, "tag": "after"})
            assert again.observation["tag"] == "after"


async def test_cancelled_call_fails_the_session() -> None:
    async with serve_inloop(SleepyEnvironment) as server:
        async with GenericEnvClient(server.url) as client:
            await client.reset()
            task = asyncio.create_task(client.step({"seconds": 0.5, "tag": "cancelled"}))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert client.client_state is ClientState.FAILED
            assert (await client.step({"tag": "next"})).observation["tag"] == "next"


async def test_without_reconnect_a_failed_session_raises_session_failed() -> None:
    async with serve_inloop(SleepyEnvironment) as server:
        async with GenericEnvClient(server.url, reply_timeout_s=2.0, reconnect=False) as client:
            with pytest.raises(ReplyTimeout):
                await client.step({"seconds": 5.0})
            with pytest.raises(SessionFailed, match="call connect"):
                await client.step({"seconds": 0.0})
            await client.connect()
            assert (await client.step({"tag": "ok"})).observation["tag"] == "ok"


async def test_dropped_connection_reconnects_and_reports(caplog: pytest.LogCaptureFixture) -> None:
    reasons: list[str] = []
    async with serve_inloop(CounterEnvironment) as server:
        async with GenericEnvClient(server.url) as client:
            client.on_reconnect.append(reasons.append)
            await client.reset(target=5)
            await client.step({"delta": 2})
            for conn in list(server.connections):  # the server drops every socket
                conn.transport.abort()
            with pytest.raises(ConnectionLost, match="state is gone"):
                await client.step({"delta": 1})
            with caplog.at_level(logging.WARNING, logger="openenv_train.client"):
                fresh = await client.reset(target=5)
            assert fresh.observation["value"] == 0
            assert client.reconnects == 1 and len(reasons) == 1 and "closed" in reasons[0]
            assert any("reconnected" in r.message for r in caplog.records)
            assert server.registry.active == 1


async def test_a_session_the_server_ended_while_idle_is_reopened_by_reset_only() -> None:
    """Between episodes (e.g. a pool's sessions while the trainer runs SFT for longer than the server's idle
    timeout) the next reset opens a new session; mid-episode the loss is still an error."""
    async with serve_inloop(CounterEnvironment, idle_timeout_s=2.0) as server:
        async with GenericEnvClient(server.url) as client:
            await client.reset(target=5)
            await client.step({"delta": 2})
            await _until(lambda: client._ws is not None and client._ws.state.name != "OPEN")
            fresh = await client.reset(target=5)
            assert fresh.observation["value"] == 0 and client.reconnects == 1
            assert (await client.step({"delta": 1})).observation["value"] == 1
            await _until(lambda: client._ws is not None and client._ws.state.name != "OPEN")
            with pytest.raises((ConnectionLost, ServerError)):
                await client.step({"delta": 1})


async def _until(condition: Any, deadline_s: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while not condition():
        assert loop.time() < end, "condition not met before the deadline"
        await asyncio.sleep(0.02)


async def test_errors_carry_code_and_message_and_keep_the_session() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        async with GenericEnvClient(server.url) as client:
            await client.reset(target=3)
            with pytest.raises(ServerError) as info:
                await client.step({"delta": "many"})
            assert info.value.code == "VALIDATION_ERROR"
            assert "delta" in info.value.message
            assert info.value.details["errors"][0]["loc"] == ["delta"]
            assert client.client_state is ClientState.OPEN
            assert (await client.step({"delta": 3})).done is True


async def test_connect_timeout_against_a_silent_server() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts TCP but never answers the handshake
    port = listener.getsockname()[1]
    try:
        client = GenericEnvClient(f"http://127.0.0.1:{port}", connect_timeout_s=0.3)
        with pytest.raises(ConnectTimeout, match="within 0.3s"):
            await client.connect()
    finally:
        listener.close()


async def test_connection_refused_is_a_clear_error() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(ConnectionLost, match="cannot open a session"):
        await GenericEnvClient(f"http://127.0.0.1:{port}").connect()


async def test_typed_client_parses_models() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        client: EnvClient[Any, Any, Any] = EnvClient(
            server.url, action_type=CounterAction, observation_type=CounterObservation, state_type=CounterState
        )
        async with client:
            first = await client.reset(seed=7)
            assert isinstance(first.observation, CounterObservation)
            result = await client.step(CounterAction(delta=first.observation.target))
            assert result.done and result.reward == 1.0 and result.observation.value == first.observation.target
            state = await client.state()
            assert isinstance(state, CounterState) and state.step_count == 1 and state.value == state.target


async def test_calls_after_close_say_so() -> None:
    async with serve_inloop(CounterEnvironment) as server:
        client = GenericEnvClient(server.url)
        await client.connect()
        await client.close()
        with pytest.raises(SessionFailed, match="closed"):
            await client.reset()
        await asyncio.sleep(0.05)
        assert server.registry.active == 0


def test_sync_wrapper_runs_the_async_client() -> None:
    async def scenario() -> None:
        async with serve_inloop(CounterEnvironment) as server:
            def blocking_use() -> tuple[int, bool]:
                with GenericEnvClient(server.url).sync() as env:
                    env.reset(target=2)
                    result = env.step({"delta": 2})
                    return env.state()["step_count"], result.done

            assert await asyncio.to_thread(blocking_use) == (1, True)

    asyncio.run(scenario())
