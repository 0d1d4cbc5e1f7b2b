"""The capture endpoint's other dialects, through their official SDKs: Anthropic Messages (``/v1/messages``) and the
OpenAI Responses API (``/v1/responses``). Each converts to the chat request the chat route answers, so the captured
turns hold the same token ids; streamed answers equal the unstreamed ones; bad bodies get the dialect's 4xx error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from openenv_train.policy import EndpointConfig, LocalBackend, LocalConfig, PolicyServer, ScriptedBackend
from openenv_train.trace import CaptureStore, TrainingTurn

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

ADD_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                              "required": ["a", "b"]}
ANTHROPIC_ADD = {"name": "add", "description": "Add two integers.", "input_schema": ADD_SCHEMA}
RESPONSES_ADD = {"type": "function", "name": "add", "description": "Add two integers.", "parameters": ADD_SCHEMA}
CHAT_ADD = {"type": "function", "function": {"name": "add", "description": "Add two integers.", "parameters": ADD_SCHEMA}}


def call(name: str, **arguments: int) -> str:
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def script(messages: list[dict[str, Any]]) -> str:
    """Two tool calls, then the answer: ``add(2, 3)``, ``add(5, 1)``, ``The answer is 6.``"""
    results = [m for m in messages if m["role"] == "tool"]
    if not results:
        return call("add", a=2, b=3)
    if len(results) == 1:
        return "Adding one more." + "\n" + call("add", a=int(results[0]["content"]), b=1)
    return f"The answer is {results[-1]['content']}."


@pytest.fixture(scope="module")
def store() -> CaptureStore:
    return CaptureStore()


@pytest.fixture(scope="module")
def local(tiny: tuple[Any, Any], store: CaptureStore) -> Iterator[PolicyServer]:
    model, tokenizer = tiny
    with PolicyServer(LocalBackend(model, tokenizer, model_id="tiny", config=LocalConfig(context=256)),
                      capture=store) as server:
        yield server


@pytest.fixture(scope="module")
def scripted(tiny: tuple[Any, Any], store: CaptureStore) -> Iterator[PolicyServer]:
    with PolicyServer(ScriptedBackend(script, tiny[1], model_id="scripted"), capture=store) as server:
        yield server


def session(store: CaptureStore, name: str) -> str:
    store.open_session(name)
    return name


def chat_turn(server: PolicyServer, store: CaptureStore, name: str, body: dict[str, Any]) -> TrainingTurn:
    """What the chat route captures for ``body``."""
    key = session(store, name)
    reply = httpx.post(f"{server.base_url}/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"},
                       timeout=60)
    assert reply.status_code == 200, reply.text
    (turn,) = store.close_session(key).turns
    return turn


def assert_prefixes(turns: list[TrainingTurn]) -> None:
    """Each call's prompt starts with the previous call's prompt and completion (the conversation only grew)."""
    for before, after in zip(turns, turns[1:], strict=False):
        assert before.metadata["rollout_type"] == "train" and before.prompt_token_ids
        head = list(before.prompt_token_ids) + list(before.completion_token_ids)
        assert list(after.prompt_token_ids[:len(head)]) == head


# -- Anthropic Messages ----------------------------------------------------------------------------------------------
def test_anthropic_sdk_answers_streams_and_is_captured(local: PolicyServer, store: CaptureStore) -> None:
    key = session(store, "claude")
    client = anthropic.Anthropic(base_url=local.url, api_key=key, max_retries=0)
    params: dict[str, Any] = {"model": "tiny", "max_tokens": 8, "temperature": 0, "system": "Be brief.",
                              "messages": [{"role": "user", "content": "hi"}]}
    whole = client.messages.create(**params)
    with client.messages.stream(**params) as stream:
        pieces = list(stream.text_stream)
        streamed = stream.get_final_message()
    raw = [event.type for event in client.messages.create(**params, stream=True)]
    counted = client.messages.count_tokens(model="tiny", system="Be brief.", messages=params["messages"])
    turns = store.close_session(key).turns

    assert whole.type == "message" and whole.role == "assistant" and whole.id.startswith("msg_")
    assert whole.stop_reason in ("end_turn", "max_tokens") and whole.usage.output_tokens <= 8
    text = "".join(b.text for b in whole.content if b.type == "text")
    assert "".join(pieces) == text and [b.text for b in streamed.content if b.type == "text"] == [text]
    assert (streamed.stop_reason, streamed.usage.output_tokens) == (whole.stop_reason, whole.usage.output_tokens)
    assert raw[0] == "message_start" and raw[-2:] == ["message_delta", "message_stop"]
    assert [t.node_id for t in turns[:2]] == [whole.id, streamed.id] and len(turns) == 3
    assert counted.input_tokens == whole.usage.input_tokens == len(turns[0].prompt_token_ids)
    # The same conversation through the chat route: the same tokens in, the same tokens out.
    chat = chat_turn(local, store, "claude-chat", {"model": "tiny", "max_tokens": 8, "temperature": 0, "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]})
    for turn in turns:
        assert turn.metadata["rollout_type"] == "train" and turn.prompt_token_ids == chat.prompt_token_ids
        assert turn.completion_token_ids == chat.completion_token_ids and turn.per_token_logps == chat.per_token_logps
    assert turns[1].metadata["stream"] is True and turns[0].metadata["dialect"] == "anthropic_messages"
    assert "dialect" not in chat.metadata


def test_anthropic_sdk_with_tools_on_the_model(local: PolicyServer, store: CaptureStore) -> None:
    key = session(store, "claude-tools")
    client = anthropic.Anthropic(base_url=local.url, api_key=key, max_retries=0,
                                 default_headers={"anthropic-beta": "tools-2024-04-04"})
    reply = client.messages.create(model="tiny", max_tokens=6, temperature=0, tools=[ANTHROPIC_ADD],  # type: ignore[list-item]
                                   tool_choice={"type": "auto"}, messages=[{"role": "user", "content": "2 plus 3?"}])
    (turn,) = store.close_session(key).turns
    assert reply.stop_reason in ("end_turn", "max_tokens", "tool_use")
    assert turn.request["tools"] == [CHAT_ADD] and turn.metadata["rollout_type"] == "train"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tool_loop_grows_one_token_prefix(scripted: PolicyServer, store: CaptureStore, stream: bool) -> None:
    key = session(store, f"claude-loop-{stream}")
    client = anthropic.Anthropic(base_url=scripted.url, api_key=key, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is 2 plus 3 plus 1?"}]
    stops = []
    for _ in range(3):
        params = {"model": "scripted", "max_tokens": 64, "tools": [ANTHROPIC_ADD], "messages": messages}
        if stream:
            with client.messages.stream(**params) as events:  # type: ignore[arg-type]
                reply = events.get_final_message()
        else:
            reply = client.messages.create(**params)  # type: ignore[arg-type]
        stops.append(reply.stop_reason)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        uses = [b for b in reply.content if b.type == "tool_use"]
        if not uses:
            break
        (use,) = uses
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                                      "content": str(use.input["a"] + use.input["b"])}]})
    turns = list(store.close_session(key).turns)
    assert stops == ["tool_use", "tool_use", "end_turn"]
    assert [b.type for b in reply.content] == ["text"] and reply.content[0].text == "The answer is 6."  # type: ignore[union-attr]
    assert len(turns) == 3
    assert_prefixes(turns)
    tool_messages = [m for m in turns[-1].request["messages"] if m["role"] == "tool"]
    assert [(m["name"], m["content"]) for m in tool_messages] == [("add", "5"), ("add", "6")]


ANTHROPIC_BAD: list[tuple[Any, int, str]] = [
    (b"{not json", 400, "invalid_request_error"),
    ([], 400, "invalid_request_error"),
    ({}, 400, "invalid_request_error"),
    ({"messages": [{"role": "user", "content": "hi"}]}, 400, "invalid_request_error"),
    ({"max_tokens": "8", "messages": [{"role": "user", "content": "hi"}]}, 400, "invalid_request_error"),
    ({"max_tokens": 8, "messages": []}, 400, "invalid_request_error"),
    ({"max_tokens": 8, "messages": "hi"}, 400, "invalid_request_error"),
    ({"max_tokens": 8, "messages": [{"role": "tool", "content": "hi"}]}, 400, "invalid_request_error"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": 5}]}, 400, "invalid_request_error"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "image"}]}]}, 400, "invalid_request_error"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}, 400,
     "invalid_request_error"),
    ({"max_tokens": 8, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": 3}]}]}, 400,
     "invalid_request_error"),
    ({"max_tokens": 8, "system": 7, "messages": [{"role": "user", "content": "hi"}]}, 400, "invalid_request_error"),
    ({"max_tokens": 8, "tools": [{"name": "x"}], "messages": [{"role": "user", "content": "hi"}]}, 400,
     "invalid_request_error"),
    ({"max_tokens": 8, "tool_choice": {"type": "maybe"}, "tools": [ANTHROPIC_ADD],
      "messages": [{"role": "user", "content": "hi"}]}, 400, "invalid_request_error"),
    ({"max_tokens": 8, "stream": "yes", "messages": [{"role": "user", "content": "hi"}]}, 400, "invalid_request_error"),
    ({"max_tokens": 8, "temperature": "hot", "messages": [{"role": "user", "content": "hi"}]}, 400,
     "invalid_request_error"),
    ({"max_tokens": 8, "stop_sequences": [""], "messages": [{"role": "user", "content": "hi"}]}, 400,
     "invalid_request_error"),
]


def test_anthropic_bad_bodies_get_anthropic_errors(local: PolicyServer, store: CaptureStore) -> None:
    url = f"{local.url}/v1/messages"
    for body, status, kind in ANTHROPIC_BAD:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        reply = httpx.post(url, content=content, headers={"content-type": "application/json",
                                                          "anthropic-version": "2023-06-01"}, timeout=30)
        assert (reply.status_code, reply.json()["type"], reply.json()["error"]["type"]) == (status, "error", kind), \
            (body, reply.text)
        assert isinstance(reply.json()["error"]["message"], str)
    unknown = httpx.post(url, json={"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
                         headers={"x-api-key": "no-such-session"}, timeout=30)
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "not_found_error"
    wrong_method = httpx.get(url, timeout=30)
    assert wrong_method.status_code == 405 and wrong_method.json()["type"] == "error"
    client = anthropic.Anthropic(base_url=local.url, api_key="EMPTY", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as too_long:
        client.messages.create(model="tiny", max_tokens=8, messages=[{"role": "user", "content": "word " * 400}])
    assert too_long.value.status_code == 400 and "prompt is too long" in too_long.value.message


# -- OpenAI Responses ------------------------------------------------------------------------------------------------
def test_responses_sdk_answers_streams_and_follows_up(local: PolicyServer, store: CaptureStore) -> None:
    key = session(store, "codex")
    client = openai.OpenAI(base_url=local.base_url, api_key=key, max_retries=0)
    params: dict[str, Any] = {"model": "tiny", "instructions": "Be brief.", "input": "hi", "max_output_tokens": 8,
                              "temperature": 0}
    whole = client.responses.create(**params)
    events = list(client.responses.create(**params, stream=True))
    follow = client.responses.create(**{**params, "input": [{"role": "user", "content": "and then?"}]},
                                     previous_response_id=whole.id)
    turns = store.close_session(key).turns

    assert whole.object == "response" and whole.id.startswith("resp_") and whole.status in ("completed", "incomplete")
    assert whole.usage is not None and whole.usage.output_tokens <= 8 and whole.output_text
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] in ("response.completed",
                                                                                         "response.incomplete")
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == whole.output_text
    assert events[-1].response.output_text == whole.output_text  # type: ignore[union-attr]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [t.node_id for t in turns] == [whole.id, events[-1].response.id, follow.id]  # type: ignore[union-attr]
    assert {t.metadata["dialect"] for t in turns} == {"openai_responses"}
    chat = chat_turn(local, store, "codex-chat", {"model": "tiny", "max_tokens": 8, "temperature": 0, "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]})
    for turn in turns[:2]:
        assert turn.metadata["rollout_type"] == "train" and turn.prompt_token_ids == chat.prompt_token_ids
        assert turn.completion_token_ids == chat.completion_token_ids
    # The follow-up holds the first answer's conversation, and its prompt extends the first call's tokens.
    assert [m["role"] for m in turns[2].request["messages"]] == ["system", "user", "assistant", "user"]
    assert turns[2].request["messages"][2]["content"] == whole.output_text
    assert list(turns[2].prompt_token_ids[:len(turns[0].prompt_token_ids)]) == list(turns[0].prompt_token_ids)


@pytest.mark.parametrize(("stream", "chained"), [(False, False), (True, False), (False, True), (True, True)])
def test_responses_tool_loop_grows_one_token_prefix(scripted: PolicyServer, store: CaptureStore, stream: bool,
                                                    chained: bool) -> None:
    """Codex's loop (the whole input each call, ``store=False``) and a chained one (``previous_response_id``)."""
    key = session(store, f"codex-loop-{stream}-{chained}")
    client = openai.OpenAI(base_url=scripted.base_url, api_key=key, max_retries=0)
    items: list[Any] = [{"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": "What is 2 plus 3 plus 1?"}]}]
    new, previous = list(items), None
    for _ in range(3):
        params: dict[str, Any] = {"model": "scripted", "tools": [RESPONSES_ADD],
                                  "input": new if chained else items, "store": chained}
        if chained and previous is not None:
            params["previous_response_id"] = previous
        if stream:
            events = list(client.responses.create(**params, stream=True))
            assert events[-1].type == "response.completed"
            done = [e.item for e in events if e.type == "response.output_item.done"]
            reply = events[-1].response  # type: ignore[union-attr]
            assert [i.model_dump() for i in done] == [i.model_dump() for i in reply.output]
        else:
            reply = client.responses.create(**params)
        previous = reply.id
        output = [{**item.model_dump(exclude_none=True), "status": None} for item in reply.output]
        output = [{k: v for k, v in item.items() if v is not None} for item in output]
        calls = [item for item in reply.output if item.type == "function_call"]
        items += output
        new = []
        for fc in calls:
            arguments = json.loads(fc.arguments)  # type: ignore[union-attr]
            result = {"type": "function_call_output", "call_id": fc.call_id,  # type: ignore[union-attr]
                      "output": str(arguments["a"] + arguments["b"])}
            items.append(result)
            new.append(result)
        if not calls:
            break
    turns = list(store.close_session(key).turns)
    assert reply.output_text == "The answer is 6." and len(turns) == 3
    assert_prefixes(turns)
    assert [(m.get("name"), m["content"]) for m in turns[-1].request["messages"] if m["role"] == "tool"] == \
        [("add", "5"), ("add", "6")]


RESPONSES_BAD: list[tuple[Any, int]] = [
    (b"{not json", 400),
    ([], 400),
    ({}, 400),
    ({"input": []}, 400),
    ({"input": 5}, 400),
    ({"input": [{"role": "wizard", "content": "hi"}]}, 400),
    ({"input": [{"role": "user", "content": 5}]}, 400),
    ({"input": [{"role": "user", "content": [{"type": "input_image"}]}]}, 400),
    ({"input": [{"type": "function_call", "name": "add"}]}, 400),
    ({"input": [{"type": "function_call_output", "output": "5"}]}, 400),
    ({"input": [{"type": "web_search_call"}]}, 400),
    ({"input": "hi", "instructions": 3}, 400),
    ({"input": "hi", "max_output_tokens": 0}, 400),
    ({"input": "hi", "temperature": "hot"}, 400),
    ({"input": "hi", "stream": "yes"}, 400),
    ({"input": "hi", "tools": [{"type": "function", "parameters": {}}]}, 400),
    ({"input": "hi", "tools": [RESPONSES_ADD], "tool_choice": "sometimes"}, 400),
    ({"input": "hi", "previous_response_id": "resp_unknown"}, 404),
    ({"input": "hi", "previous_response_id": 7}, 404),
]


def test_responses_bad_bodies_get_openai_errors(local: PolicyServer) -> None:
    for body, status in RESPONSES_BAD:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        reply = httpx.post(f"{local.base_url}/responses", content=content,
                           headers={"content-type": "application/json"}, timeout=30)
        error = reply.json()["error"]
        assert reply.status_code == status and error["type"] == "invalid_request_error", (body, reply.text)
        assert isinstance(error["message"], str)


# -- Google generateContent -----------------------------------------------------------------------------------------
def gemini(server: PolicyServer, key: str) -> Any:
    genai = pytest.importorskip("google.genai")
    return genai.Client(api_key=key, http_options=genai.types.HttpOptions(base_url=server.url))


def test_google_sdk_answers_streams_and_is_captured(local: PolicyServer, store: CaptureStore) -> None:
    types = pytest.importorskip("google.genai.types")
    key = session(store, "gemini")
    client = gemini(local, key)
    config = types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=8, temperature=0)
    whole = client.models.generate_content(model="tiny", contents="hi", config=config)
    chunks = list(client.models.generate_content_stream(model="tiny", contents="hi", config=config))
    counted = client.models.count_tokens(model="tiny", contents="hi")
    turns = store.close_session(key).turns

    assert whole.text and whole.candidates[0].finish_reason in ("STOP", "MAX_TOKENS")
    assert "".join(c.text or "" for c in chunks) == whole.text
    assert chunks[-1].usage_metadata.candidates_token_count == whole.usage_metadata.candidates_token_count
    assert [t.node_id for t in turns] == [whole.response_id, chunks[-1].response_id]
    assert {t.metadata["dialect"] for t in turns} == {"google_generate_content"}
    chat = chat_turn(local, store, "gemini-chat", {"model": "tiny", "max_tokens": 8, "temperature": 0, "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]})
    for turn in turns:
        assert turn.metadata["rollout_type"] == "train" and turn.prompt_token_ids == chat.prompt_token_ids
        assert turn.completion_token_ids == chat.completion_token_ids
    assert counted.total_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
def test_google_tool_loop_grows_one_token_prefix(scripted: PolicyServer, store: CaptureStore, stream: bool) -> None:
    types = pytest.importorskip("google.genai.types")
    key = session(store, f"gemini-loop-{stream}")
    client = gemini(scripted, key)
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="add", description="Add two integers.", parameters_json_schema=ADD_SCHEMA)])
    config = types.GenerateContentConfig(
        tools=[tool], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="What is 2 plus 3 plus 1?")])]
    for _ in range(3):
        if stream:
            chunks = list(client.models.generate_content_stream(model="scripted", contents=contents, config=config))
            parts = [p for c in chunks for p in c.candidates[0].content.parts or ()]
            content = types.Content(role="model", parts=parts)
        else:
            content = client.models.generate_content(model="scripted", contents=contents, config=config) \
                .candidates[0].content
        contents.append(content)
        calls = [p.function_call for p in content.parts if p.function_call]
        if not calls:
            break
        contents.append(types.Content(role="user", parts=[types.Part.from_function_response(
            name=c.name, response={"result": str(c.args["a"] + c.args["b"])}) for c in calls]))
    turns = list(store.close_session(key).turns)
    assert "".join(p.text or "" for p in content.parts) == "The answer is 6." and len(turns) == 3
    assert_prefixes(turns)
    assert [(m["name"], m["content"]) for m in turns[-1].request["messages"] if m["role"] == "tool"] == \
        [("add", "5"), ("add", "6")]


GOOGLE_BAD: list[tuple[Any, int]] = [
    (b"{not json", 400),
    ([], 400),
    ({}, 400),
    ({"contents": []}, 400),
    ({"contents": [{"role": "system", "parts": [{"text": "hi"}]}]}, 400),
    ({"contents": [{"role": "user", "parts": []}]}, 400),
    ({"contents": [{"role": "user", "parts": [{"inlineData": {"data": ""}}]}]}, 400),
    ({"contents": [{"role": "user", "parts": [{"functionCall": {"name": "add"}}]}]}, 400),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "systemInstruction": "Be brief."}, 400),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": {"temperature": "hot"}}, 400),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": {"candidateCount": 2}}, 400),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{"googleSearch": {}}]}, 400),
]


def test_google_bad_bodies_get_google_errors(local: PolicyServer) -> None:
    for body, status in GOOGLE_BAD:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        reply = httpx.post(f"{local.url}/v1beta/models/tiny:generateContent", content=content,
                           headers={"content-type": "application/json"}, timeout=30)
        error = reply.json()["error"]
        assert (reply.status_code, error["code"], error["status"]) == (status, status, "INVALID_ARGUMENT"), \
            (body, reply.text)
    unknown = httpx.post(f"{local.url}/v1beta/models/tiny:generateContent?key=no-such-session",
                         json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, timeout=30)
    assert unknown.status_code == 404 and unknown.json()["error"]["status"] == "NOT_FOUND"
    wrong_method = httpx.get(f"{local.url}/v1beta/models/tiny:generateContent", timeout=30)
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]["code"] == 405


def test_dialect_keys_carry_the_token_and_session(tiny: tuple[Any, Any]) -> None:
    """With a token, each dialect's key is ``<token>:<session>`` as the bearer key is on the chat route."""
    store = CaptureStore()
    store.open_session("ep")
    with PolicyServer(ScriptedBackend(lambda m: "ok", tiny[1]), capture=store, token="tok") as server:
        claude = anthropic.Anthropic(base_url=server.url, api_key=server.api_key_for("ep"), max_retries=0)
        assert claude.messages.create(model="m", max_tokens=4, messages=[{"role": "user", "content": "hi"}]) \
            .content[0].text == "ok"  # type: ignore[union-attr]
        codex = openai.OpenAI(base_url=server.base_url, api_key=server.api_key_for("ep"), max_retries=0)
        assert codex.responses.create(model="m", input="hi").output_text == "ok"
        assert gemini(server, server.api_key_for("ep")).models.generate_content(model="m", contents="hi").text == "ok"
        refused = httpx.post(f"{server.url}/v1/messages", headers={"x-api-key": "wrong:ep"},
                             json={"max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
    assert refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"
    assert [t.metadata["dialect"] for t in store.close_session("ep").turns] == [
        "anthropic_messages", "openai_responses", "google_generate_content"]


def test_a_spent_session_gets_the_dialects_rate_limit_error(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("ep")
    body = {"max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
    with PolicyServer(ScriptedBackend(lambda m: "ok", tiny[1]), capture=store,
                      config=EndpointConfig(max_tokens_per_session=1)) as server:
        first, second = (httpx.post(f"{server.url}/v1/messages", json=body, headers={"x-api-key": "ep"}, timeout=30)
                         for _ in range(2))
    assert first.status_code == 200 and second.status_code == 429
    assert second.json()["error"]["type"] == "rate_limit_error" and second.headers["x-should-retry"] == "false"


def test_a_stop_sequence_is_the_stop_reason(local: PolicyServer) -> None:
    client = anthropic.Anthropic(base_url=local.url, api_key="EMPTY", max_retries=0)
    params: dict[str, Any] = {"model": "tiny", "max_tokens": 12, "temperature": 0,
                              "messages": [{"role": "user", "content": "tell me"}]}
    free = client.messages.create(**params).content[0].text  # type: ignore[union-attr]
    stop = free.strip()[len(free.strip()) // 2:][:2]
    assert stop, free
    stopped = client.messages.create(**params, stop_sequences=["\u2603never", stop])
    with client.messages.stream(**params, stop_sequences=["\u2603never", stop]) as stream:
        streamed = stream.get_final_message()
    for reply in (stopped, streamed):
        assert (reply.stop_reason, reply.stop_sequence) == ("stop_sequence", stop)
        assert free.startswith("".join(b.text for b in reply.content if b.type == "text"))


def test_a_responses_websocket_handshake_is_refused_so_the_harness_falls_back_to_http(scripted: PolicyServer) -> None:
    # Codex may first try the Responses API over a WebSocket; anything but 101 makes it use HTTP POST instead.
    root = scripted.base_url.rsplit("/v1", 1)[0]
    handshake = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                 "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    refused = httpx.get(f"{root}/v1/responses", headers=handshake)
    assert refused.status_code == 405 and refused.json()["error"]["message"] == "use POST for /v1/responses"
    assert httpx.post(f"{root}/v1/responses", json={"model": "scripted", "input": "hi"}).status_code == 200
