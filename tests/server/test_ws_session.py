"""The env server's /ws protocol decisions without sockets: WsSession takes messages and returns actions."""

from __future__ import annotations

import json
from typing import Any

from websockets.frames import Frame, Opcode

from openenv_train.core import ErrorCode, ProtocolError
from openenv_train.envs.counter import CounterEnvironment
from openenv_train.server import EnvServer, ServerConfig
from openenv_train.server._ws_session import CLOSE_FRAME, Close, Phase, Stop, WsSession


def _rules(**options: Any) -> tuple[WsSession, list[str]]:
    hits: list[str] = []
    settings = {"max_messages_per_s": None, "message_burst": None, "max_message_size": 2048, **options}
    return WsSession(**settings, count=hits.append), hits


def _server_session() -> tuple[EnvServer, Any]:
    server = EnvServer(CounterEnvironment, ServerConfig(port=0, token=""))
    return server, server.registry.create("ws")


def _frame(actions: list[Any]) -> dict[str, Any]:
    assert len(actions) == 1 and isinstance(actions[0], str), actions
    return json.loads(actions[0])  # type: ignore[no-any-return]


def test_a_message_gets_its_reply_and_close_closes_normally() -> None:
    rules, hits = _rules()
    server, session = _server_session()
    reply = _frame(rules.message(b'{"type": "reset"}', Opcode.TEXT, session, server.mcp))
    assert reply["type"] == "observation"
    assert rules.message(b'{"type": "close"}', Opcode.TEXT, session, server.mcp) == [Close(1000, "")]
    assert hits == []


def test_bad_utf8_closes_with_1007_and_bad_json_keeps_the_session() -> None:
    rules, _ = _rules()
    server, session = _server_session()
    error, close = rules.message(b"\xff\xfe", Opcode.TEXT, session, server.mcp)
    assert json.loads(error)["type"] == "error" and close == Close(1007, ErrorCode.SESSION_ERROR.value)
    kept = _frame(rules.message(b"{not json", Opcode.TEXT, session, server.mcp))
    assert kept["type"] == "error"


def test_the_rate_limit_answers_an_error_and_counts_without_closing() -> None:
    rules, hits = _rules(max_messages_per_s=0.001, message_burst=1)
    server, session = _server_session()
    assert _frame(rules.message(b'{"type": "reset"}', Opcode.TEXT, session, server.mcp))["type"] == "observation"
    limited = _frame(rules.message(b'{"type": "reset"}', Opcode.TEXT, session, server.mcp))
    assert limited["type"] == "error" and "rate limit" in json.dumps(limited)
    assert hits == ["max_messages_per_s"]
    # close is never rate-limited
    assert rules.message(b'{"type": "close"}', Opcode.TEXT, session, server.mcp) == [Close(1000, "")]


def test_closing_errors_close_with_their_code_and_others_do_not() -> None:
    rules, _ = _rules()
    error, close = rules.error(ProtocolError(ErrorCode.CAPACITY_REACHED, "full"))
    assert json.loads(error)["type"] == "error" and close == Close(1013, ErrorCode.CAPACITY_REACHED.value)
    assert len(rules.error(ProtocolError(ErrorCode.EXECUTION_ERROR, "bad step"))) == 1
    _, reaped = rules.fail(ProtocolError(ErrorCode.SESSION_ERROR, "idle"), 1001)
    assert reaped == Close(1001, ErrorCode.SESSION_ERROR.value)


def test_message_too_big_sends_an_error_then_stops() -> None:
    rules, hits = _rules(max_message_size=4096)
    error, stop = rules.too_big(ValueError("over size limit (5000 > 4096 bytes)"))
    assert "max_message_size is 4096 bytes" in error and stop == Stop()
    assert hits == ["max_message_size"]


def test_an_async_reply_that_raises_becomes_an_execution_error() -> None:
    rules, _ = _rules()
    _, session = _server_session()
    assert rules.finished('{"type": "observation"}', session) == ['{"type": "observation"}']
    error = _frame(rules.finished(RuntimeError("boom"), session))
    assert error["type"] == "error" and "boom" in json.dumps(error)


def test_fragments_are_reassembled_and_a_close_frame_is_reported() -> None:
    rules, _ = _rules()
    assert rules.frame(Frame(Opcode.TEXT, b'{"type": ', fin=False)) is None
    assert rules.frame(Frame(Opcode.CONT, b'"reset"}', fin=True)) == (b'{"type": "reset"}', Opcode.TEXT)
    assert rules.frame(Frame(Opcode.BINARY, b"\x81\xa4", fin=True)) == (b"\x81\xa4", Opcode.BINARY)
    assert rules.frame(Frame(Opcode.PING, b"")) is None
    assert rules.frame(Frame(Opcode.CLOSE, b"\x03\xe8")) is CLOSE_FRAME
    assert {p.value for p in Phase} == {"http", "creating", "open", "closing", "closed"}
