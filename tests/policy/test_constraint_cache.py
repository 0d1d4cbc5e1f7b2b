"""A choice list less a few words played already (the Wordle agent's constraint) reuses the cached trie and offers
exactly the words left; a character-level model never plays a dropped word; ``FixedSampling(constrained=False)``
drops the caller's constraint."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from openenv_train.envs.wordle import valid_guesses
from openenv_train.policy import (
    Constraint,
    FixedSampling,
    LocalBackend,
    build_char_tokenizer,
    build_tiny_model,
    parse_chat_request,
)
from openenv_train.policy._engine.guide import ChoiceGuide, ExcludingGuide, Guide, GuideCache

WORDS = sorted(valid_guesses())


def spelled(guide: Guide, tokenizer: Any) -> set[str]:
    """Every string the guide lets through (a walk of its automaton)."""
    out: set[str] = set()
    stack: list[tuple[Any, list[int]]] = [(guide.start(), [])]
    while stack:
        state, prefix = stack.pop()
        for token in guide.allowed(state).tolist():
            if token == guide.end_id:
                out.add(tokenizer.decode(prefix))
            else:
                stack.append((guide.advance(state, token), [*prefix, token]))
    return out


@pytest.mark.parametrize("kind", ["char", "bpe"])
def test_a_list_less_a_few_words_reuses_the_trie_and_offers_exactly_the_rest(kind: str, tiny_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = build_char_tokenizer() if kind == "char" else AutoTokenizer.from_pretrained(tiny_path)
    cache = GuideCache(tokenizer, tokenizer.eos_token_id)
    base = cache.get(Constraint(choices=tuple(WORDS)))
    assert isinstance(base, ChoiceGuide)
    for dropped in ({"crane"}, {"crane", "cramp", "aahed", "zymic", WORDS[5000]}, set(WORDS[:60])):
        guide = cache.get(Constraint(choices=tuple(w for w in WORDS if w not in dropped)))
        assert isinstance(guide, ExcludingGuide) and guide.base is base
        assert spelled(guide, tokenizer) == set(WORDS) - dropped
    assert spelled(base, tokenizer) == set(WORDS)  # the cached list itself is untouched
    far = cache.get(Constraint(choices=tuple(WORDS[:-200])))  # more than a few dropped: a trie of its own
    assert isinstance(far, ChoiceGuide) and spelled(far, tokenizer) == set(WORDS[:-200])


@pytest.fixture(scope="module")
def char_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("char"), tokenizer="char", hidden_size=32, intermediate_size=64,
                            layers=1, heads=2, kv_heads=2, max_context=128, init_range=0.5)


def _ask(dropped: set[str], seed: int, **body: Any) -> Any:
    return parse_chat_request({"model": "m", "messages": [{"role": "user", "content": f"go {seed}"}],
                               "max_tokens": 8, "seed": seed,
                               "guided_choice": [w for w in WORDS if w not in dropped], **body})


async def test_a_char_model_never_plays_a_dropped_word_and_unconstrained_serving_drops_the_constraint(
        char_model: Path) -> None:
    backend = LocalBackend(str(char_model))
    greedy = await backend.chat(_ask(set(), 0, temperature=0))
    first = greedy.choices[0].message["content"]
    assert first in valid_guesses()
    # the same prompt with that word (and others) dropped: greedy moves to another word, sampled rows never repeat
    dropped = {first, "crane", "slate"}
    results = await asyncio.gather(backend.chat(_ask(dropped, 0, temperature=0)),
                                   *(backend.chat(_ask(dropped, s, temperature=1.0)) for s in range(1, 24)))
    for result in results:
        text = result.choices[0].message["content"]
        assert text in valid_guesses() and text not in dropped
    free = FixedSampling(backend, temperature=1.0, constrained=False)
    answers = await asyncio.gather(*(free.chat(_ask(dropped, s)) for s in range(8)))
    assert all("constraint" not in a.info for a in answers)
    # a random character model writes non-words once nothing constrains it
    assert any(a.choices[0].message["content"] not in valid_guesses() for a in answers)
    await backend.aclose()


def test_fixed_sampling_lets_a_caller_set_what_it_allows() -> None:
    from openenv_train.policy import ChatResult, ScriptedBackend

    seen: list[float] = []

    class Recording(ScriptedBackend):
        async def chat(self, request: Any) -> ChatResult:
            seen.append(request.sampling.temperature)
            return await super().chat(request)

    backend = Recording(lambda messages: "crane")
    ask = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
    greedy_turns = FixedSampling(backend, caller_may_set=["temperature"], temperature=1.0, top_p=0.9)
    fixed = FixedSampling(backend, temperature=1.0)

    async def main() -> None:
        for served in (greedy_turns, fixed):
            for body in ({**ask, "temperature": 0.0}, ask):
                await served.chat(parse_chat_request(body))

    asyncio.run(main())
    assert seen == [0.0, 1.0, 1.0, 1.0]
