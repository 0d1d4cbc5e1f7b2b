"""The /ws message codec and the protocol's error codes: unit tests and hypothesis properties."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, ValidationError

from openenv_train.core import (
    CLIENT_TYPES,
    SERVER_TYPES,
    CapacityError,
    ClientMessage,
    ErrorCode,
    FactoryError,
    ProtocolError,
    ServerError,
    ServerMessage,
    decode_client_message,
    decode_server_message,
    dumps,
    encode_client_message,
    encode_error,
    encode_server_message,
    validation_errors,
)

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- strategies ---------------------------------------------------------------------------------------

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
json_scalars = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | finite_floats | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
# Objects that look like messages more often than arbitrary values do.
envelope_keys = st.sampled_from(["type", "data", "id", "action", "metadata"]) | st.text(max_size=6)
type_values = st.sampled_from(CLIENT_TYPES + SERVER_TYPES + ("", "Reset", "STEP", "close ")) | json_values
message_like = st.dictionaries(
    envelope_keys, st.one_of(type_values, json_objects, json_values), max_size=4
) | st.fixed_dictionaries({"type": type_values}, optional={"data": json_values | json_objects})


def expected_client_outcome(obj: Any) -> ClientMessage | ErrorCode:
    """An independent statement of PROTOCOL.md's rules for a decoded JSON value."""
    if not isinstance(obj, dict):
        return ErrorCode.VALIDATION_ERROR
    kind = obj.get("type")
    if kind is None:
        return ErrorCode.VALIDATION_ERROR
    if not isinstance(kind, str) or kind not in CLIENT_TYPES:
        return ErrorCode.UNKNOWN_TYPE
    if set(obj) - {"type", "data"}:
        return ErrorCode.VALIDATION_ERROR
    data = obj.get("data")
    if data is None:
        return ErrorCode.VALIDATION_ERROR if kind in ("step", "mcp") else ClientMessage(kind, {})
    if not isinstance(data, dict):
        return ErrorCode.VALIDATION_ERROR
    return ClientMessage(kind, data)


def decode_outcome(frame: str | bytes) -> ClientMessage | ErrorCode:
    try:
        return decode_client_message(frame)
    except ProtocolError as exc:
        assert isinstance(exc.code, ErrorCode)
        assert exc.message and str(exc) == exc.message
        return exc.code


# -- decode_client_message: examples ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ('{"type":"reset"}', ClientMessage("reset", {})),
        ('{"type":"reset","data":null}', ClientMessage("reset", {})),
        ('{"type":"reset","data":{"seed":3,"episode_id":"e"}}', ClientMessage("reset", {"seed": 3, "episode_id": "e"})),
        ('{"type":"step","data":{}}', ClientMessage("step", {})),
        ('{"type":"step","data":{"delta":2}}', ClientMessage("step", {"delta": 2})),
        ('{"type":"state"}', ClientMessage("state", {})),
        ('{"type":"close"}', ClientMessage("close", {})),
        ('{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}',
         ClientMessage("mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
        (' \n{"data":{"a":[1,2.5,null]},"type":"step"}\t', ClientMessage("step", {"a": [1, 2.5, None]})),
    ],
)
def test_decode_valid_messages(frame: str, expected: ClientMessage) -> None:
    assert decode_client_message(frame) == expected


@pytest.mark.parametrize(
    ("frame", "code", "needle"),
    [
        ("not json", ErrorCode.INVALID_JSON, "not valid JSON"),
        ("", ErrorCode.INVALID_JSON, "not valid JSON"),
        ("{'type': 'state'}", ErrorCode.INVALID_JSON, "not valid JSON"),
        ('{"type":"state"', ErrorCode.INVALID_JSON, "not valid JSON"),
        ('{"type":"state"} {"type":"state"}', ErrorCode.INVALID_JSON, "one JSON object per text frame"),
        ('{"type":"jump"}', ErrorCode.UNKNOWN_TYPE, "'jump'"),
        ('{"type":"observation","data":{}}', ErrorCode.UNKNOWN_TYPE, "'observation'"),
        ('{"type":5}', ErrorCode.UNKNOWN_TYPE, "5"),
        ('{"type":["step"]}', ErrorCode.UNKNOWN_TYPE, "expected one of reset, step, state, mcp, close"),
        ('{"type":"STEP","data":{}}', ErrorCode.UNKNOWN_TYPE, "'STEP'"),
        ("[1,2]", ErrorCode.VALIDATION_ERROR, "must be a JSON object"),
        ('"step"', ErrorCode.VALIDATION_ERROR, "got str"),
        ("null", ErrorCode.VALIDATION_ERROR, "got NoneType"),
        ('{"data":{}}', ErrorCode.VALIDATION_ERROR, "no 'type'"),
        ('{"type":null}', ErrorCode.VALIDATION_ERROR, "no 'type'"),
        ('{"type":"step"}', ErrorCode.VALIDATION_ERROR, "needs a 'data' object"),
        ('{"type":"mcp","data":null}', ErrorCode.VALIDATION_ERROR, "needs a 'data' object"),
        ('{"type":"step","data":[1]}', ErrorCode.VALIDATION_ERROR, "must be an object, got list"),
        ('{"type":"reset","data":"seed=1"}', ErrorCode.VALIDATION_ERROR, "must be an object, got str"),
        ('{"type":"step","data":{},"delta":1}', ErrorCode.VALIDATION_ERROR, "'delta'"),
        ('{"type":"state","id":7}', ErrorCode.VALIDATION_ERROR, "unknown top-level key(s) 'id'"),
    ],
)
def test_decode_rejects_with_the_protocol_code(frame: str, code: ErrorCode, needle: str) -> None:
    with pytest.raises(ProtocolError) as info:
        decode_client_message(frame)
    assert info.value.code is code
    assert needle in info.value.message


def test_validation_errors_of_the_envelope_are_field_errors() -> None:
    with pytest.raises(ProtocolError) as info:
        decode_client_message('{"type":"step","data":{},"zeta":1,"alpha":2}')
    errors = info.value.details["errors"]
    assert [e["loc"] for e in errors] == [["alpha"], ["zeta"]]
    assert all(e["type"] == "extra_forbidden" and e["msg"] for e in errors)
    with pytest.raises(ProtocolError) as info:
        decode_client_message('{"type":"step"}')
    assert info.value.details["errors"] == [{"loc": ["data"], "msg": "Field required", "type": "missing"}]


@pytest.mark.parametrize("frame", [b'{"type":"state"}', bytearray(b'{"type":"state"}'), memoryview(b"{}"), b""])
def test_binary_frames_are_a_session_error(frame: Any) -> None:
    with pytest.raises(ProtocolError) as info:
        decode_client_message(frame)
    assert info.value.code is ErrorCode.SESSION_ERROR
    assert info.value.code.closes_connection
    assert "binary" in info.value.message and "text frame" in info.value.message


# -- encode ---------------------------------------------------------------------------------------------


def test_encode_client_message() -> None:
    assert encode_client_message("state") == '{"type":"state"}'
    assert encode_client_message("step", {"delta": 1}) == '{"type":"step","data":{"delta":1}}'
    assert encode_client_message("reset", {}) == '{"type":"reset","data":{}}'
    assert json.loads(encode_client_message("step", {"msg": "héllo ✓"}))["data"]["msg"] == "héllo ✓"
    assert "héllo" in encode_client_message("step", {"msg": "héllo"})  # not \u-escaped
    with pytest.raises(ValueError, match="unknown client message type 'observation'"):
        encode_client_message("observation", {})


def test_encode_server_message_and_error() -> None:
    assert encode_server_message("state", {"step_count": 0}) == '{"type":"state","data":{"step_count":0}}'
    error = ProtocolError(ErrorCode.CAPACITY_REACHED, "full", active_sessions=2, max_sessions=2)
    assert json.loads(encode_error(error)) == {
        "type": "error",
        "data": {"message": "full", "code": "CAPACITY_REACHED", "active_sessions": 2, "max_sessions": 2},
    }


def test_dumps_is_compact_and_strict() -> None:
    assert dumps({"a": [1, 2], "b": None}) == '{"a":[1,2],"b":null}'
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            dumps({"x": bad})
        with pytest.raises(ValueError):
            encode_client_message("step", {"x": [bad]})
        with pytest.raises(ValueError):
            encode_server_message("observation", {"reward": bad})


@given(base=json_values, bad=st.sampled_from([math.nan, math.inf, -math.inf]), where=st.integers(0, 2))
@PROPS
def test_dumps_refuses_nan_and_infinity_anywhere(base: Any, bad: float, where: int) -> None:
    value = [{"k": bad}, base] if where == 0 else {"a": base, "b": [base, bad]} if where == 1 else bad
    with pytest.raises(ValueError):
        dumps(value)


# -- ProtocolError / ErrorCode / ServerError -----------------------------------------------------------


def test_closing_codes_are_exactly_those_of_the_protocol() -> None:
    closing = {code for code in ErrorCode if code.closes_connection}
    assert closing == {ErrorCode.CAPACITY_REACHED, ErrorCode.FACTORY_ERROR, ErrorCode.SESSION_ERROR}
    assert {code.value for code in ErrorCode} == {
        "INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR", "EXECUTION_ERROR",
        "CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR",
    }
    assert str(ErrorCode.INVALID_JSON) == "INVALID_JSON"
    assert ErrorCode("SESSION_ERROR") is ErrorCode.SESSION_ERROR


def test_protocol_error_to_wire() -> None:
    plain = ProtocolError(ErrorCode.INVALID_JSON, "bad frame")
    assert plain.to_wire() == {"message": "bad frame", "code": "INVALID_JSON"}
    assert str(plain) == "bad frame"
    detailed = ProtocolError(ErrorCode.FACTORY_ERROR, "boom", factory_name="m:C")
    wire = detailed.to_wire()
    assert wire == {"message": "boom", "code": "FACTORY_ERROR", "factory_name": "m:C"}
    assert json.loads(dumps(wire)) == wire  # plain JSON: the code is a string, not an enum repr


def test_server_error_from_wire_picks_the_class() -> None:
    cap = ServerError.from_wire({"code": "CAPACITY_REACHED", "message": "full", "active_sessions": 3, "max_sessions": 3})
    assert isinstance(cap, CapacityError) and cap.details == {"active_sessions": 3, "max_sessions": 3}
    assert "3/3" in str(cap)
    factory = ServerError.from_wire({"code": "FACTORY_ERROR", "message": "no", "factory_name": "x:Y"})
    assert isinstance(factory, FactoryError) and factory.details["factory_name"] == "x:Y"
    other = ServerError.from_wire({"code": "EXECUTION_ERROR", "message": "kaboom"})
    assert type(other) is ServerError and other.code == "EXECUTION_ERROR" and "kaboom" in str(other)
    odd = ServerError.from_wire({})
    assert odd.code == "UNKNOWN" and odd.message == "no message"


def test_validation_errors_are_plain_json() -> None:
    class Model(BaseModel):
        model_config = ConfigDict(extra="forbid")
        n: int

    with pytest.raises(ValidationError) as info:
        Model.model_validate({"n": "x", "extra": 1})
    errors = validation_errors(info.value)
    assert isinstance(errors, list) and len(errors) == 2
    assert {tuple(e["loc"]) for e in errors} == {("n",), ("extra",)}
    assert {e["type"] for e in errors} == {"int_parsing", "extra_forbidden"}
    assert all(isinstance(e["msg"], str) and "url" not in e for e in errors)
    assert json.loads(dumps(errors)) == errors


# -- decode_server_message ------------------------------------------------------------------------------


def test_decode_server_message() -> None:
    frame = '{"type":"observation","data":{"observation":{},"reward":null,"done":false}}'
    assert decode_server_message(frame) == ServerMessage("observation", {"observation": {}, "reward": None, "done": False})
    # Later protocol versions may add keys: a client ignores them.
    assert decode_server_message('{"type":"state","data":{"step_count":1},"v":2}') == ServerMessage(
        "state", {"step_count": 1}
    )
    assert decode_server_message('{"type":"error","data":{"code":"X","message":"m"}}').type == "error"
    cases: list[tuple[str | bytes, ErrorCode]] = [
        (b'{"type":"state","data":{}}', ErrorCode.SESSION_ERROR),
        ("nope", ErrorCode.INVALID_JSON),
        ('{"type":"reset","data":{}}', ErrorCode.UNKNOWN_TYPE),  # a client type is not a server type
        ('{"type":"state","data":[]}', ErrorCode.VALIDATION_ERROR),
        ('{"data":{}}', ErrorCode.VALIDATION_ERROR),
        ("[]", ErrorCode.VALIDATION_ERROR),
    ]
    for bad, code in cases:
        with pytest.raises(ProtocolError) as info:
            decode_server_message(bad)
        assert info.value.code is code, bad


@given(kind=st.sampled_from(SERVER_TYPES), data=json_objects)
@PROPS
def test_server_messages_round_trip(kind: str, data: dict[str, Any]) -> None:
    assert decode_server_message(encode_server_message(kind, data)) == ServerMessage(kind, data)


# -- properties -----------------------------------------------------------------------------------------


@given(kind=st.sampled_from(CLIENT_TYPES), data=json_objects)
@PROPS
def test_client_messages_round_trip(kind: str, data: dict[str, Any]) -> None:
    decoded = decode_client_message(encode_client_message(kind, data))
    assert decoded == ClientMessage(kind, data)
    assert json.loads(dumps(decoded.data)) == data


@given(kind=st.sampled_from(CLIENT_TYPES))
def test_client_messages_without_data(kind: str) -> None:
    frame = encode_client_message(kind)
    if kind in ("step", "mcp"):
        with pytest.raises(ProtocolError) as info:
            decode_client_message(frame)
        assert info.value.code is ErrorCode.VALIDATION_ERROR
    else:
        assert decode_client_message(frame) == ClientMessage(kind, {})


@given(value=json_values | message_like)
@example(value={"type": "step", "data": {"delta": 1}, "extra": None})
@example(value={"type": "state", "data": []})
@example(value={"type": "close", "data": 0})
@example(value={"type": ""})
@PROPS
def test_decode_of_any_json_value_follows_the_rules(value: Any) -> None:
    frame = json.dumps(value)
    assert decode_outcome(frame) == expected_client_outcome(value)


def _not_json(name: str) -> Any:
    raise ValueError(name)


def _finite(text: str) -> float:
    if math.isinf(value := float(text)):
        raise ValueError(text)
    return value


@given(text=st.text() | st.text(alphabet='{}[]":,typeresdaunl0123 \\'))
@example(text='{"type": "state"')
@example(text="Infinity")  # Python's json reads it; the codec refuses it as invalid JSON
@example(text="\ufeff{}")
@example(text="1" * 5000)  # int digit limit: a ValueError inside json, still INVALID_JSON
@PROPS
def test_decode_of_any_text_never_raises_anything_but_protocol_error(text: str) -> None:
    outcome = decode_outcome(text)  # any other exception fails the test
    try:  # RFC 8259 JSON: Python's json also reads NaN/Infinity (Hypothesis found 'Infinity') and 1e400 as inf
        value = json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except ValueError:
        assert outcome is ErrorCode.INVALID_JSON
    else:
        assert outcome == expected_client_outcome(value)


@given(data=st.binary())
@PROPS
def test_decode_of_any_bytes_is_a_session_error(data: bytes) -> None:
    assert decode_outcome(data) is ErrorCode.SESSION_ERROR


@given(value=message_like)
@PROPS
def test_protocol_errors_serialise_to_valid_error_frames(value: Any) -> None:
    try:
        decode_client_message(json.dumps(value))
    except ProtocolError as exc:
        frame = json.loads(encode_error(exc))
        assert frame["type"] == "error"
        assert frame["data"]["code"] == exc.code.value and frame["data"]["message"] == exc.message
        if exc.code is ErrorCode.VALIDATION_ERROR:
            assert isinstance(frame["data"]["errors"], list) and frame["data"]["errors"]
            assert all({"loc", "msg", "type"} <= set(e) for e in frame["data"]["errors"])
    else:
        assume(False)


def test_deeply_nested_json_is_a_protocol_error() -> None:
    frame = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ProtocolError) as info:
        decode_client_message(frame)
    assert info.value.code in (ErrorCode.INVALID_JSON, ErrorCode.VALIDATION_ERROR)
