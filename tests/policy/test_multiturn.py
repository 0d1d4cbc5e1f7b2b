"""Multi-turn token alignment: every recorded prompt is rebuilt from the previous turns and must match exactly."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from openenv_train.policy import Continuation, EndpointConfig, LocalBackend, LocalConfig, parse_chat_request
from openenv_train.trace import CaptureStore, TrainingTurn
from tests.policy.conftest import ADD_TOOL, serve

openai = pytest.importorskip("openai")


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI messages as the chat template wants them (tool-call arguments as objects, no None content)."""
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if v is not None}
        m.setdefault("content", "")
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                               for c in m["tool_calls"]]
        out.append(m)
    return out


def render(tokenizer: Any, messages: list[dict[str, Any]], *, generation: bool = True, tokenize: bool = True) -> Any:
    return tokenizer.apply_chat_template(template_messages(messages), tools=[ADD_TOOL], tokenize=tokenize,
                                         add_generation_prompt=generation, return_dict=False)


def rebuild(tokenizer: Any, previous: TrainingTurn | None, messages: list[dict[str, Any]]) -> list[int]:
    """What the model must have seen: the earlier turn's exact ids, then the template's rendering of what follows
    its end-of-turn token (TRL's multi-turn rule)."""
    full = render(tokenizer, messages)
    if previous is None:
        return list(full)
    head = render(tokenizer, messages[: len(previous.request["messages"]) + 1], generation=False)
    end = max(i for i, t in enumerate(head) if t == tokenizer.eos_token_id)
    seen = previous.prompt_token_ids + previous.completion_token_ids
    return seen + list(full[end + 1 if seen[-1] == tokenizer.eos_token_id else end:])


async def converse(server: Any, session: str) -> list[list[dict[str, Any]]]:
    """A tool-using episode as an agent harness runs it: OpenAI client, replies echoed back as returned."""
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key=session, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is 2 plus 3?"}]
    sent = []
    follow_ups = [None, None, "Thanks! And 4 plus 4?", "ok"]
    for turn, follow_up in enumerate(follow_ups):
        sent.append([dict(m) for m in messages])
        reply = await client.chat.completions.create(
            model="tiny", messages=messages, tools=[ADD_TOOL], temperature=0 if turn < 2 else 1.0, seed=turn,
            max_tokens=40 if turn < 2 else 12,
        )
        message = reply.choices[0].message.model_dump(exclude_none=True, exclude={"refusal", "annotations", "audio"})
        messages.append(message)
        if message.get("tool_calls"):
            messages.append({"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "5"})
        if follow_up:
            messages.append({"role": "user", "content": follow_up})
    await client.close()
    return sent


async def test_every_prompt_is_rebuilt_exactly_from_the_previous_turns(taught: tuple[Any, Any]) -> None:
    _, tokenizer = taught
    store = CaptureStore()
    store.open_session("episode")
    async with serve(taught, capture=store) as server:
        sent = await converse(server, "episode")
    turns = store.close_session("episode").turns
    assert len(turns) == 4
    assert turns[0].response["choices"][0]["finish_reason"] == "tool_calls"
    assert turns[1].response["choices"][0]["message"]["content"] == "The answer is 5."
    previous = None
    for turn, messages in zip(turns, sent, strict=True):
        assert turn.request["messages"] == messages
        assert turn.prompt_token_ids == rebuild(tokenizer, previous, messages)
        assert tokenizer.decode(turn.prompt_token_ids) == render(tokenizer, messages, tokenize=False)
        if previous is not None:
            seen = previous.prompt_token_ids + previous.completion_token_ids
            assert turn.prompt_token_ids[: len(seen)] == seen
            assert turn.metadata["continued_from"] == previous.node_id
        previous = turn
    # After the taught (canonically tokenised) replies, re-rendering the text gives the same ids...
    assert [t.prompt_token_ids == render(tokenizer, m) for t, m in zip(turns, sent, strict=True)][:3] == [True] * 3
    # ...but the sampled reply of turn 3 does not tokenise back to the sampled ids (it was cut mid-character):
    # only reusing its ids keeps turn 4 exact.
    sampled = turns[2].completion_token_ids
    assert turns[2].metadata["finish_reason"] == "length"
    assert tokenizer.encode(tokenizer.decode(sampled)) != sampled
    assert turns[3].prompt_token_ids != render(tokenizer, sent[3])


async def test_without_continuity_every_prompt_is_the_rendered_conversation(taught: tuple[Any, Any]) -> None:
    _, tokenizer = taught
    store = CaptureStore()
    store.open_session("episode")
    async with serve(taught, capture=store, config=EndpointConfig(token_continuity=False)) as server:
        sent = await converse(server, "episode")
    turns = store.close_session("episode").turns
    for turn, messages in zip(turns, sent, strict=True):
        assert turn.prompt_token_ids == render(tokenizer, messages)
        assert turn.metadata["continued_from"] is None


async def test_an_edited_history_is_rendered_afresh(taught: tuple[Any, Any]) -> None:
    _, tokenizer = taught
    store = CaptureStore()
    store.open_session("episode")
    async with serve(taught, capture=store) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="episode", max_retries=0)
        first = [{"role": "user", "content": "hi"}]
        await client.chat.completions.create(model="tiny", messages=first, max_tokens=4, temperature=0)  # type: ignore[arg-type]
        edited = [*first, {"role": "assistant", "content": "something else"}, {"role": "user", "content": "go on"}]
        await client.chat.completions.create(model="tiny", messages=edited, max_tokens=4, temperature=0)  # type: ignore[arg-type]
        await client.close()
    second = store.close_session("episode").turns[1]
    assert second.metadata["continued_from"] is None
    assert second.prompt_token_ids == tokenizer.apply_chat_template(edited, add_generation_prompt=True, return_dict=False)


@pytest.mark.parametrize("rewrites", [False, True])
def test_a_continued_prompt_tokenises_only_what_follows_the_earlier_turn(tiny: tuple[Any, Any],
                                                                         rewrites: bool) -> None:
    """The ids after the earlier turn are those of the whole rendered prompt; a template that rewrites earlier
    turns (here: it opens with the message count) gets the whole prompt rendered, with no continuation."""
    model, tokenizer = tiny
    tokenizer = copy.deepcopy(tokenizer)
    if rewrites:
        tokenizer.chat_template = "{{ messages | length }}" + tokenizer.chat_template
    backend = LocalBackend(model, tokenizer, config=LocalConfig(engine="thread"))
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "crane"},
                {"role": "user", "content": "XYXXG"}]
    full = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=False)
    head = tokenizer.apply_chat_template(messages[:2], return_dict=False)
    end = max(i for i, t in enumerate(head) if t == tokenizer.eos_token_id)
    for earlier in (head[:end + 1], head[:end]):  # the earlier reply with and without its end token
        request = parse_chat_request({"model": "tiny", "messages": messages})
        request.continuation = Continuation(tuple(earlier), 2, "n")
        ids, node = backend.render(request)
        if rewrites:
            assert (ids, node) == (full, None)
        else:
            assert (ids, node) == (earlier + full[end + 1 if earlier[-1] == tokenizer.eos_token_id else end:], "n")
