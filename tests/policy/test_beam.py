"""Beam search (``use_beam_search``) on a tiny character model: beams equal a brute-force enumeration when the width
covers every candidate, constrained beams never leave their constraint, concurrent beam requests batch in the engine
process and come back as they do alone, bad combinations are 400s, and captured beam turns are never training data."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv_train.integrations import flatten_turns
from openenv_train.integrations.trl import turn_rows
from openenv_train.policy import LocalBackend, LocalConfig, PolicyServer, build_tiny_model, parse_chat_request
from openenv_train.trace import BeamTurnNotTrainable, CaptureStore, TraceRow, TrainingTrace, beam_decoded

WORDS = ["crane", "slate", "plant", "raise", "about", "zebra"]


@pytest.fixture(scope="module")
def char_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch", reason="torch is not installed")
    return build_tiny_model(tmp_path_factory.mktemp("beam"), tokenizer="char", hidden_size=32, intermediate_size=64,
                            layers=1, heads=2, kv_heads=2, max_context=256, init_range=0.5)


@pytest.fixture(scope="module")
def loaded(char_model: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(char_model).eval(), AutoTokenizer.from_pretrained(char_model)


def _body(content: str, **params: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": content}], "use_beam_search": True, **params}


def _logprobs(model: Any, prompt: list[int], sequences: list[list[int]]) -> list[list[float]]:
    """The model's own logprob of each token of each sequence after ``prompt`` (one forward pass per sequence)."""
    import torch

    out = []
    with torch.no_grad():
        for seq in sequences:
            logp = torch.log_softmax(model(torch.tensor([prompt + seq])).logits[0].float(), -1)
            out.append([float(logp[len(prompt) - 1 + k, t]) for k, t in enumerate(seq)])
    return out


def _rows(tokenizer: Any, content: str, **params: Any) -> Any:
    from openenv_train.policy._engine.generation import Row

    request = parse_chat_request(_body(content, **params))
    prompt = list(tokenizer.apply_chat_template(request.messages, add_generation_prompt=True, tokenize=True,
                                                return_dict=False))
    return Row(prompt, request.sampling, request.sampling.max_tokens or 8, 0, frozenset([tokenizer.eos_token_id]))


def test_a_width_covering_every_sequence_equals_a_brute_force_ranking(loaded: tuple[Any, Any]) -> None:
    """Unconstrained, two tokens at most, width the vocabulary: beam search is exhaustive, so its beams are the
    best sequences of the whole enumeration, by total logprob (length_penalty 0) and per token (1). Two requests
    of different prompt lengths decode in one batch."""
    import dataclasses

    import torch

    from openenv_train.policy._engine.beam import beam_rows

    model, tokenizer = loaded
    vocab, end = model.config.vocab_size, tokenizer.eos_token_id
    rows = [_rows(tokenizer, "hello there", max_tokens=2, length_penalty=0.0),
            _rows(tokenizer, "a much longer prompt than that", max_tokens=2, length_penalty=1.0)]
    rows = [dataclasses.replace(r, params=dataclasses.replace(r.params, n=vocab)) for r in rows]
    outputs = beam_rows(model, tokenizer, rows, pad_id=end)
    for row, out in zip(rows, outputs, strict=True):
        with torch.no_grad():
            first = torch.log_softmax(model(torch.tensor([row.prompt])).logits[0, -1].float(), -1)
            second = torch.log_softmax(model(torch.tensor([row.prompt + [a] for a in range(vocab)]))
                                       .logits[:, -1].float(), -1)
        penalty = row.params.length_penalty
        ranked = [((first[end].item()) / 1.0, [end])]
        for a in range(vocab):
            if a == end:
                continue
            for b in range(vocab):
                total = first[a].item() + second[a, b].item()
                ranked.append((total / (1 if b == end else 2) ** penalty, [a, b]))
        ranked.sort(key=lambda t: -t[0])
        score_of = {tuple(seq): score for score, seq in ranked}
        assert out.beams is not None and len(out.beams) == vocab
        # the best `vocab` of the whole enumeration, in its order (up to float32 rounding between near ties)
        assert [b.score for b in out.beams] == pytest.approx([s for s, _ in ranked[:vocab]], abs=1e-4)
        for beam in out.beams:
            assert score_of[tuple(beam.token_ids)] == pytest.approx(beam.score, abs=1e-4)
            assert beam.finish_reason == ("stop" if beam.token_ids[-1] == end else "length")
        assert len({tuple(b.token_ids) for b in out.beams}) == vocab
        assert out.token_ids == out.beams[0].token_ids


async def test_guided_beams_are_every_allowed_choice_ranked_by_the_model(loaded: tuple[Any, Any]) -> None:
    """Width at least the choices: the beams are the choices, ranked by the model's own (unmasked) logprob of the
    whole word and its end token, with those logprobs; a regex's beams all match it."""
    model, tokenizer = loaded
    backend = LocalBackend(model, tokenizer, config=LocalConfig(engine="thread"))
    try:
        request = parse_chat_request(_body("guess", n=8, guided_choice=WORDS, length_penalty=0.0, logprobs=True,
                                           max_tokens=8))
        result = await backend.chat(request)
        texts = [c.message["content"] for c in result.choices]
        assert sorted(texts) == sorted(WORDS)  # every choice, nothing else
        assert result.prompt_token_ids is not None
        ids = [list(tokenizer(w, add_special_tokens=False)["input_ids"]) + [tokenizer.eos_token_id] for w in WORDS]
        brute = {w: sum(lp) for w, lp in zip(WORDS, _logprobs(model, result.prompt_token_ids, ids), strict=True)}
        assert texts == sorted(WORDS, key=lambda w: -brute[w])
        for choice in result.choices:
            assert choice.beam_score == pytest.approx(brute[choice.message["content"]], abs=1e-4)
            assert sum(choice.logprobs or []) == pytest.approx(choice.beam_score, abs=1e-4)
            assert choice.finish_reason == "stop" and choice.openai_logprobs is not None
        assert result.info["decoding"]["method"] == "beam_search"
        narrow = await backend.chat(parse_chat_request(_body("guess", n=2, guided_choice=WORDS, max_tokens=8,
                                                             length_penalty=0.0)))
        assert len(narrow.choices) == 2  # a narrower beam may prune the best word early, never leave the list
        for choice in narrow.choices:
            assert choice.beam_score == pytest.approx(brute[choice.message["content"]], abs=1e-4)
        assert narrow.choices[0].beam_score >= narrow.choices[1].beam_score  # type: ignore[operator]
        regex = await backend.chat(parse_chat_request(_body("digits", n=4, guided_regex="[0-9]{2}x?",
                                                            max_tokens=6)))
        assert len(regex.choices) == 4
        assert all(re.fullmatch("[0-9]{2}x?", c.message["content"]) for c in regex.choices)
        scores = [c.beam_score for c in regex.choices]
        assert scores == sorted(scores, reverse=True)
    finally:
        await backend.aclose()


async def test_concurrent_beam_requests_batch_in_the_engine_process_and_match_alone(char_model: Path) -> None:
    backend = LocalBackend(str(char_model), config=LocalConfig(engine="process", batch_window_s=0.05))
    try:
        requests = [parse_chat_request(_body(f"game {i}" + "!" * i, n=4, guided_choice=WORDS[i % 3:], max_tokens=8))
                    for i in range(6)]
        requests.append(parse_chat_request(_body("free", n=3, max_tokens=4)))
        alone = [await backend.chat(r) for r in requests]
        sampled = parse_chat_request({"model": "m", "messages": [{"role": "user", "content": "sampled"}],
                                      "max_tokens": 4, "temperature": 1.0, "seed": 3})
        together = await asyncio.gather(*(backend.chat(r) for r in [*requests, sampled]))
        assert backend.engine.kind == "process"
        assert max(r.info["batch_rows"] for r in together) > 2  # beam requests shared a batch
        for solo, joint in zip(alone, together[:-1], strict=True):
            assert [c.token_ids for c in joint.choices] == [c.token_ids for c in solo.choices]
            assert [c.beam_score for c in joint.choices] == pytest.approx([c.beam_score for c in solo.choices],
                                                                          abs=1e-4)
        for request, result in zip(requests[:6], together[:6], strict=True):
            assert request.constraint is not None and request.constraint.choices is not None
            assert len(result.choices) == 4
            assert {c.message["content"] for c in result.choices} <= set(request.constraint.choices)
        assert together[-1].choices[0].beam_score is None  # the sampled row sampled
    finally:
        await backend.aclose()


@pytest.mark.parametrize(("extra", "param"), [
    ({"stream": True}, "stream"), ({"top_p": 0.5}, "top_p"), ({"top_k": 5}, "top_k"), ({"stop": ["x"]}, "stop"),
    ({"logprobs": True, "top_logprobs": 2}, "top_logprobs"),
])
async def test_options_that_cannot_go_with_beams_are_a_400_saying_why(loaded: tuple[Any, Any],
                                                                      extra: dict[str, Any], param: str) -> None:
    model, tokenizer = loaded
    backend = LocalBackend(model, tokenizer, config=LocalConfig(engine="thread"))
    async with PolicyServer(backend) as server, httpx.AsyncClient(timeout=60) as client:
        answer = await client.post(f"{server.base_url}/chat/completions", json=_body("hi", n=2, **extra))
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and "use_beam_search" in error["message"]


async def test_a_captured_beam_turn_is_marked_and_no_trainer_takes_it(loaded: tuple[Any, Any]) -> None:
    model, tokenizer = loaded
    store = CaptureStore()
    store.open_session("episode")
    backend = LocalBackend(model, tokenizer, config=LocalConfig(engine="thread"))
    async with PolicyServer(backend, capture=store) as server, httpx.AsyncClient(timeout=60) as client:
        answer = await client.post(f"{server.base_url}/chat/completions",
                                   json=_body("guess", n=3, guided_choice=WORDS, max_tokens=8),
                                   headers={"X-Capture-Session": "episode"})
    assert answer.status_code == 200
    body = answer.json()
    scores = [c["beam_score"] for c in body["choices"]]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True)
    turns = store.close_session("episode").turns
    assert len(turns) == 3
    for rank, turn in enumerate(turns):
        marked = beam_decoded(turn)
        assert marked is not None and marked["rank"] == rank and marked["width"] == 3
        assert [b["score"] for b in marked["beams"]] == scores
        assert [b["text"] for b in marked["beams"]] == [c["message"]["content"] for c in body["choices"]]
        assert marked["beams"][rank]["token_ids"] == body["choices"][rank]["token_ids"]
        assert turn.metadata["rollout_type"] == "eval"
        assert not turn.completion_token_ids and not turn.per_token_logps  # nothing a trainer could take
    with pytest.raises(BeamTurnNotTrainable, match="beam-decoded"):
        flatten_turns(turns)
    row = TraceRow(env={"name": "wordle"}, trace=TrainingTrace(turns=turns))
    with pytest.raises(BeamTurnNotTrainable, match="turn_rows"):
        turn_rows([row])


def test_recipe_settings_refuse_a_width_the_endpoint_cannot_serve() -> None:
    from openenv_train.recipes.eval import EvalConfig
    from openenv_train.recipes.wordle import WordleEvalSection

    assert WordleEvalSection().beam_width == 16
    with pytest.raises(ValueError, match="beam_width"):
        WordleEvalSection(beam_width=17)
    with pytest.raises(ValueError, match="samples=1"):
        EvalConfig(model="m", beam_width=4, samples=2, temperature=1.0)


async def test_beams_in_a_continuous_engine_decode_between_its_steps(char_model: Path) -> None:
    """With continuous batching, beam rows decode at once in a batch of their own while sampled rows join the running
    decode; their beams are those the thread engine finds."""
    requests = [parse_chat_request(_body(f"round {i}", n=3, guided_choice=WORDS, max_tokens=8)) for i in range(3)]
    sampled = [parse_chat_request({"model": "m", "messages": [{"role": "user", "content": f"s{i}"}], "max_tokens": 6,
                                   "temperature": 1.0, "seed": i}) for i in range(3)]
    thread = LocalBackend(str(char_model), config=LocalConfig(engine="thread"))
    joining = LocalBackend(str(char_model), config=LocalConfig(engine="process", continuous=True))
    try:
        expected = [await thread.chat(r) for r in [*requests, *sampled]]
        got = await asyncio.gather(*(joining.chat(r) for r in [*sampled, *requests]))
        assert joining.engine.kind == "process" and joining.config.continuous
        for want, have in zip(expected, [*got[3:], *got[:3]], strict=True):
            assert [c.token_ids for c in have.choices] == [c.token_ids for c in want.choices]
    finally:
        await thread.aclose()
        await joining.aclose()
