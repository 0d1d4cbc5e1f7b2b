"""``guided_choice_order: "any"``: a choice's characters written in an order the model picks, each followed
by its position. The guide lets through exactly every order of every choice (and no dropped choice), a char model served
through its engine process only ever writes such replies, the trainer's masks replay them, and an upstream server
refuses the field rather than ignore it."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv_train.envs.wordle import valid_guesses
from openenv_train.policy import (
    Constraint,
    LocalBackend,
    PolicyServer,
    UpstreamBackend,
    build_char_tokenizer,
    build_tiny_model,
    parse_chat_request,
    read_in_order,
    spell_in_order,
)
from openenv_train.policy._engine.guide import GuideCache, SlotGuide
from tests.policy.test_constraint_cache import spelled

WORDS = sorted(valid_guesses())[:40:3]


def every_order(words: list[str]) -> set[str]:
    return {spell_in_order(w, order) for w in words for order in itertools.permutations(range(5))}


def test_the_guide_spells_every_order_of_every_choice_and_nothing_else() -> None:
    tokenizer = build_char_tokenizer()
    cache = GuideCache(tokenizer, tokenizer.eos_token_id)
    guide = cache.get(Constraint(choices=tuple(WORDS), order="any"))
    assert isinstance(guide, SlotGuide)
    assert spelled(guide, tokenizer) == every_order(WORDS)
    assert cache.get(Constraint(choices=tuple(WORDS), order="any")) is guide  # cached by content
    assert cache.get(Constraint(choices=tuple(WORDS))) is not guide  # the same list in its own order: a trie
    dropped = {WORDS[0], WORDS[5]}
    less = cache.get(Constraint(choices=tuple(w for w in WORDS if w not in dropped), order="any"))
    assert isinstance(less, SlotGuide) and less.base is guide
    assert spelled(less, tokenizer) == every_order([w for w in WORDS if w not in dropped])
    assert spelled(guide, tokenizer) == every_order(WORDS)  # the cached guide itself is untouched
    # what the written letters determine is forced: "?resh" leaves only "f" among these, and "f" only position 1
    small = cache.get(Constraint(choices=("fresh", "wrest", "crest"), order="any"))
    vocab = tokenizer.get_vocab()
    state = small.start()
    assert sorted(small.allowed(state).tolist()) == sorted(vocab[c] for c in "cefhrstw")
    state = small.advance(state, vocab["e"])
    assert sorted(small.allowed(state).tolist()) == [vocab["3"]]
    for char in "3r2s4h5":
        state = small.advance(state, vocab[char])
    assert small.allowed(state).tolist() == [vocab["f"]]
    state = small.advance(state, vocab["f"])
    assert small.allowed(state).tolist() == [vocab["1"]]


@pytest.fixture(scope="module")
def char_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("char"), tokenizer="char", hidden_size=32, intermediate_size=64,
                            layers=1, heads=2, kv_heads=2, max_context=128, init_range=0.5)


def _ask(seed: int, words: list[str], **body: Any) -> Any:
    return parse_chat_request({"model": "m", "messages": [{"role": "user", "content": f"go {seed}"}],
                               "max_tokens": 12, "seed": seed, "logprobs": True, "guided_choice": words,
                               "guided_choice_order": "any", **body})


async def test_a_served_char_model_writes_only_choices_in_some_order_and_the_masks_replay(char_model: Path) -> None:
    backend = LocalBackend(str(char_model))
    words = sorted(valid_guesses())
    dropped = {"crane", "slate", words[100]}
    rest = [w for w in words if w not in dropped]
    results = await asyncio.gather(backend.chat(_ask(0, words, temperature=0)),
                                   *(backend.chat(_ask(s, rest, temperature=1.0)) for s in range(1, 25)))
    orders = set()
    for k, result in enumerate(results):
        choice = result.choices[0]
        text = choice.message["content"]
        word = read_in_order(text, 5)
        assert word in valid_guesses() and (k == 0 or word not in dropped), text
        orders.add(text[1::2])
        assert choice.token_ids is not None and len(choice.token_ids) == 11  # 5 positions, 5 letters, the end
        allowed = backend.allowed_tokens(result.prompt_token_ids, choice.token_ids)
        assert allowed is not None and len(allowed) == 11
        assert all(int(t) in a.tolist() for t, a in zip(choice.token_ids, allowed, strict=True))
        assert allowed[-1].tolist() == [backend.tokenizer.eos_token_id]
    assert len(orders) > 3  # a random model picks different orders
    await backend.aclose()


async def test_an_upstream_server_refuses_the_order_rather_than_ignore_it(char_model: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}], "max_tokens": 12,
            "guided_choice": ["crane", "slate"], "guided_choice_order": "any"}
    async with PolicyServer(LocalBackend(str(char_model))) as local, \
            PolicyServer(UpstreamBackend(local.base_url)) as proxy, httpx.AsyncClient(timeout=60) as client:
        direct = await client.post(f"{local.base_url}/chat/completions", json=body)
        forwarded = await client.post(f"{proxy.base_url}/chat/completions", json=body)
    assert direct.status_code == 200 and read_in_order(direct.json()["choices"][0]["message"]["content"], 5) in (
        "crane", "slate")
    assert forwarded.status_code == 400
    assert "enforced only by a local model" in forwarded.json()["error"]["message"]
