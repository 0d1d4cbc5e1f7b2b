"""Constrained decoding (guided_choice / guided_regex / structured_outputs) on the tiny model: nothing outside the
constraint gets through, logprobs are those of the masked distribution, and every bad request is a 400."""

from __future__ import annotations

import asyncio
import math
import re
from typing import Any

import httpx
import pytest

from openenv_train.policy import (
    LocalBackend,
    PolicyServer,
    ScriptedBackend,
    UpstreamBackend,
    parse_chat_request,
)
from openenv_train.trace import CaptureStore
from tests.policy.conftest import chat_body, serve

WORDS = ["crane", "slate", "plant", "raise", "about", "zebra", "query", "fjord", "nymph", "xylyl", "cart", "car"]


def request(content: str = "guess a word", **body: Any) -> Any:
    return parse_chat_request(chat_body(content, **body))


def canonical(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) + [tokenizer.eos_token_id]


async def test_choices_only_greedy_and_sampled_batched_with_free_rows(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, model_id="tiny")
    free = [request(f"free {i}", temperature=1.0, seed=i, max_tokens=8) for i in range(3)]
    alone = [await backend.chat(r) for r in free]  # the same unconstrained rows, each in its own batch
    allowed = WORDS[:-3]  # the caller excluded "xylyl", "cart" and "car" (e.g. guessed before)
    guided = [request(f"prompt {i % 4}", temperature=1.0, seed=i, max_tokens=8, guided_choice=allowed)
              for i in range(12)]
    guided.append(request("prompt 0", temperature=0, max_tokens=8, structured_outputs={"choice": allowed}))
    results = await asyncio.gather(*(backend.chat(r) for r in [*free, *guided]))
    await backend.aclose()
    assert max(r.info["batch_rows"] for r in results) > 4  # rows shared batches with others
    for result, solo in zip(results[:3], alone, strict=True):  # unconstrained rows are untouched by the others
        assert result.choices[0].token_ids == solo.choices[0].token_ids
        # float32 matmuls of another batch shape round differently (seen: 4e-6 relative on an AVX-512 machine)
        assert result.choices[0].logprobs == pytest.approx(solo.choices[0].logprobs, abs=1e-5, rel=1e-5)
    produced = set()
    for result in results[3:]:
        (choice,) = result.choices
        text = choice.message["content"]
        assert text in allowed and choice.finish_reason == "stop"
        assert choice.token_ids == canonical(tokenizer, text)  # canonical tokens, then the end of the turn
        assert result.info["constraint"]["logprobs"] == "masked"
        produced.add(text)
    assert len(produced) > 1  # sampling explores the list


async def test_logprobs_are_the_masked_distribution(tiny: tuple[Any, Any]) -> None:
    """Per step, the allowed set's probabilities sum to 1 and the sampled token's logprob is the renormalised
    log-probability a plain forward pass gives (what a trainer recomputes with the same mask)."""
    import torch

    model, tokenizer = tiny
    choices = ["car", "cart", "crane", "zebra", "about"]
    seqs = [canonical(tokenizer, c) for c in choices]
    async with serve(tiny) as server, httpx.AsyncClient(base_url=server.base_url, timeout=60) as client:
        for seed in range(6):
            body = chat_body("pick", temperature=1.0, seed=seed, max_tokens=8, guided_choice=choices,
                             logprobs=True, top_logprobs=20, return_tokens_as_token_ids=True)
            data = (await client.post("/chat/completions", json=body)).json()
            (choice,) = data["choices"]
            ids, logprobs = choice["token_ids"], choice["token_logprobs"]
            assert choice["message"]["content"] in choices
            with torch.inference_mode():
                logits = model(torch.tensor([data["prompt_token_ids"] + ids])).logits[0].float()
            start = len(data["prompt_token_ids"]) - 1
            for step, entry in enumerate(choice["logprobs"]["content"]):
                # a step's top logprobs list every allowed token (fewer than 20 here): their mass is 1
                assert math.fsum(math.exp(t["logprob"]) for t in entry["top_logprobs"]) == pytest.approx(1, abs=1e-4)
                allowed = sorted({s[step] for s in seqs if s[:step] == ids[:step]})
                assert sorted(int(t["token"].removeprefix("token_id:")) for t in entry["top_logprobs"]) == allowed
                expected = torch.log_softmax(logits[start + step, allowed], dim=-1)[allowed.index(ids[step])]
                assert logprobs[step] == pytest.approx(float(expected), abs=1e-4)


async def test_regex_fullmatches_greedy_and_sampled(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, model_id="tiny")
    patterns = [r"[a-z]{5}", r"(yes|no) [0-9]{2}", r"move [a-h][1-8][a-h][1-8]"]
    reqs = [request(f"p{seed}", temperature=1.0 if seed else 0, seed=seed, max_tokens=16,
                    **({"guided_regex": p} if seed % 2 else {"structured_outputs": {"regex": p}}))
            for p in patterns for seed in range(6)]
    results = await asyncio.gather(*(backend.chat(r) for r in reqs))
    await backend.aclose()
    for req, result in zip(reqs, results, strict=True):
        (choice,) = result.choices
        assert choice.finish_reason == "stop" and choice.token_ids[-1] == tokenizer.eos_token_id
        assert re.fullmatch(req.constraint.regex, choice.message["content"]), (req.constraint, choice.message)
        assert tokenizer.decode(choice.token_ids[:-1]) == choice.message["content"]


async def test_captured_turn_holds_the_masked_logprobs(tiny: tuple[Any, Any]) -> None:
    store = CaptureStore()
    store.open_session("ep")
    async with serve(tiny, capture=store) as server, httpx.AsyncClient(base_url=server.base_url, timeout=60) as client:
        body = chat_body("pick", temperature=1.0, seed=1, max_tokens=8, guided_choice=WORDS)
        data = (await client.post("/chat/completions", json=body, headers={"Authorization": "Bearer ep"})).json()
    (turn,) = store.close_session("ep").turns
    assert turn.completion_token_ids == data["choices"][0]["token_ids"]
    assert list(turn.per_token_logps) == data["choices"][0]["token_logprobs"]
    assert turn.metadata["constraint"] == {"kind": "choice", "field": "guided_choice", "choices": len(WORDS),
                                           "logprobs": "masked"}
    assert turn.metadata["rollout_type"] == "train"


@pytest.mark.parametrize(("extra", "needle"), [
    ({"guided_choice": []}, "non-empty list"),
    ({"guided_choice": "crane"}, "non-empty list"),
    ({"guided_choice": ["crane", 3]}, "'guided_choice[1]' must be a string"),
    ({"guided_choice": ["crane", ""]}, "empty string"),
    ({"guided_choice": ["crane", "e\u0301clair"]}, "cannot be produced by this model's tokenizer"),
    ({"guided_choice": ["crane", "<|im_end|>"]}, "special/unknown tokens"),
    ({"structured_outputs": {"choice": ["a"], "regex": "a"}}, "give one constraint"),
    ({"guided_choice": ["a"], "guided_regex": "a"}, "give one constraint"),
    ({"structured_outputs": "choice"}, "'structured_outputs' must be an object"),
    ({"guided_regex": "[a-"}, "does not compile"),
    ({"guided_regex": r"(?!x)x"}, "matches no text"),
    ({"guided_regex": 5}, "non-empty regular expression"),
    ({"guided_json": {"type": "object"}}, "'guided_json' is not supported by the local backend"),
    ({"structured_outputs": {"grammar": "root ::= 'a'"}}, "'structured_outputs.grammar' is not supported"),
    ({"guided_choice_order": "any"}, "come with a choice list"),
    ({"guided_choice": ["crane"], "guided_choice_order": "random"}, "must be \"given\" or \"any\""),
    ({"guided_choice": ["crane", "cart"], "guided_choice_order": "any"}, "choices of one length"),
])
async def test_bad_constraints_are_400s(tiny: tuple[Any, Any], extra: dict[str, Any], needle: str) -> None:
    async with serve(tiny) as server, httpx.AsyncClient(base_url=server.base_url, timeout=60) as client:
        reply = await client.post("/chat/completions", json=chat_body(max_tokens=4, **extra))
    assert reply.status_code == 400, reply.text
    assert needle in reply.json()["error"]["message"]


async def test_scripted_backend_refuses_and_upstream_forwards(tiny: tuple[Any, Any]) -> None:
    body = chat_body("pick", temperature=1.0, max_tokens=8, guided_choice=WORDS)
    async with PolicyServer(ScriptedBackend(lambda m: "crane")) as scripted, \
            httpx.AsyncClient(timeout=60) as client:
        refused = await client.post(f"{scripted.base_url}/chat/completions", json=body)
    assert refused.status_code == 400 and "scripted backend cannot enforce" in refused.json()["error"]["message"]
    async with serve(tiny) as local:
        async with PolicyServer(UpstreamBackend(local.base_url)) as proxy, httpx.AsyncClient(timeout=60) as client:
            answers = [(await client.post(f"{proxy.base_url}/chat/completions", json={**body, "seed": s})).json()
                       for s in range(4)]
            regex = (await client.post(f"{proxy.base_url}/chat/completions",
                                       json=chat_body(max_tokens=8, guided_regex="[0-9]{3}"))).json()
    assert all(a["choices"][0]["message"]["content"] in WORDS for a in answers)
    assert re.fullmatch("[0-9]{3}", regex["choices"][0]["message"]["content"])


def test_character_level_tokenizer_spells_choices_letter_by_letter() -> None:
    pytest.importorskip("tokenizers")
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from openenv_train.policy import Constraint
    from openenv_train.policy._engine.guide import GuideCache

    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = {c: i for i, c in enumerate(["<pad>", "<eos>", "<bos>", " ", "\n", *letters])}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    raw.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    raw.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>", pad_token="<pad>",
                                        bos_token="<bos>", clean_up_tokenization_spaces=False)
    cache = GuideCache(tokenizer, end_id=1)
    guide = cache.get(Constraint(choices=("crane", "crate", "slate")))
    state = guide.start()
    assert sorted(guide.allowed(state).tolist()) == [vocab["c"], vocab["s"]]
    for letter in "crate":
        state = guide.advance(state, vocab[letter])
    assert guide.allowed(state).tolist() == [1]
    assert cache.get(Constraint(choices=("crane", "crate", "slate"))) is guide  # cached by content
    with pytest.raises(Exception, match="cannot be produced"):
        cache.get(Constraint(choices=("Crane",)))
    regex = cache.get(Constraint(regex="[a-c]{2}", field="guided_regex"))
    assert sorted(regex.allowed(regex.start()).tolist()) == [vocab[c] for c in "abc"]
