"""Beam search (``use_beam_search``) against transformers' own beam search on the same tiny model, at widths below
the number of sequences the constraint allows: ``generate(num_beams=W, num_return_sequences=W,
prefix_allowed_tokens_fn=..., length_penalty=..., output_scores=True, return_dict_in_generate=True)`` with the
constraint written as the tokens allowed after each prefix.

The searches agree on the live beams (each step, the W best extensions that do not end: the same in vLLM) and
differ in three places:

- **Which end-token extensions finish.** Ours: every one a live beam has. vLLM: those among each live beam's 2W
  most likely next tokens (its ``logprobs=2W`` request), all of ours in practice. transformers: only those among
  the step's W best candidates over all beams; an end a step ranks lower is dropped, however good it is.
- **The length a length penalty divides by.** Ours: the completion's tokens, end token excluded. vLLM: the same
  plus the prompt's tokens (no effect on the order when ``length_penalty`` is 0). transformers since its beam search
  rewrite (read in 5.25): the completion's tokens with the end token; before it, without.
- **When a search stops.** Ours: once no live beam can beat the W-th finished one, at the longest length it may
  reach when the penalty is positive (transformers' ``early_stopping="never"``); transformers' default
  (``early_stopping=False``) bounds a positive penalty at the current length; vLLM runs to ``max_tokens``.

So where every allowed sequence ends at one length (five-letter words, character tokens) no end can rank below a
live beam's extension and the test asks for transformers' sequences in its order, with the same summed logprobs
(each score times its length to the penalty: ours one token shorter). Where lengths differ, at length penalty 0
(no length, and both stopping rules exact), it asks for transformers' search finished by our rule: the W best of
every end-token extension of the live beams transformers had at each step (recorded by a logits processor), and
of the W best extensions that do not end at ``max_tokens``, and checks that transformers' own answer dropped ends
that ours keeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv_train.policy import LocalBackend, LocalConfig, build_tiny_model, parse_chat_request

#: Choices of different lengths that share prefixes: ends compete with longer words at every step.
NESTED = ["a", "an", "and", "ant", "ants", "be", "bee", "bees", "beet", "beets", "ca", "cat", "cats", "car", "cart",
          "carts", "do", "dot", "dots", "dote", "doted"]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    pytest.importorskip("torch", reason="torch is not installed")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_tiny_model(tmp_path_factory.mktemp("beam-ref"), tokenizer="char", hidden_size=32,
                            intermediate_size=64, layers=1, heads=2, kv_heads=2, max_context=256, init_range=0.5)
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def _body(content: str, width: int, max_tokens: int, penalty: float, choices: list[str] | None) -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": content}], "use_beam_search": True, "n": width,
            "max_tokens": max_tokens, "length_penalty": penalty}
    return {**body, "guided_choice": choices} if choices is not None else body


async def _ours(model: Any, tokenizer: Any, bodies: list[dict[str, Any]]) -> list[Any]:
    """The endpoint's answers, all requests at once (they share the engine's batches)."""
    backend = LocalBackend(model, tokenizer, config=LocalConfig(engine="thread"))
    try:
        return list(await asyncio.gather(*(backend.chat(parse_chat_request(b)) for b in bodies)))
    finally:
        await backend.aclose()


def _allowed(tokenizer: Any, choices: list[str], prompt_len: int) -> Any:
    """``prefix_allowed_tokens_fn`` for a choice list: the tokens that continue some choice (canonical ids, then the
    end token) after the completion so far; off the list (transformers' filler beams), the end token."""
    end = tokenizer.eos_token_id
    spelled = [[*tokenizer(c, add_special_tokens=False)["input_ids"], end] for c in choices]

    def allowed(_: int, ids: Any) -> list[int]:
        done = ids[prompt_len:].tolist()
        nxt = {s[len(done)] for s in spelled if len(s) > len(done) and s[:len(done)] == done}
        return sorted(nxt) or [end]

    return allowed


class _Trail:
    """A logits processor that records each step's live beams and their next-token logprobs (after the
    constraint's mask) as transformers' beam search hands them over, and changes nothing."""

    def __init__(self) -> None:
        self.steps: list[tuple[list[list[int]], Any]] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self.steps.append((input_ids.tolist(), scores.clone()))
        return scores


def _reference(model: Any, prompt: list[int], body: dict[str, Any], stops: list[int],
               tokenizer: Any) -> tuple[list[list[int]], list[float], _Trail]:
    """transformers' beams (completion ids through the first end token), their scores, and its search's trail."""
    import torch
    from transformers import LogitsProcessorList

    trail, choices = _Trail(), body.get("guided_choice")
    with torch.no_grad():
        out = model.generate(
            input_ids=torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            num_beams=body["n"], num_return_sequences=body["n"], do_sample=False, max_new_tokens=body["max_tokens"],
            length_penalty=body["length_penalty"], eos_token_id=stops, pad_token_id=tokenizer.pad_token_id,
            prefix_allowed_tokens_fn=_allowed(tokenizer, choices, len(prompt)) if choices is not None else None,
            logits_processor=LogitsProcessorList([trail]), output_scores=True, return_dict_in_generate=True)
    beams = []
    for row in out.sequences[:, len(prompt):].tolist():
        ends = [i for i, t in enumerate(row) if t in stops]
        beams.append(row[:ends[0] + 1] if ends else row)
    return beams, out.sequences_scores.tolist(), trail


def _length(ids: list[int], stops: list[int]) -> int:
    return len(ids) - (ids[-1] in stops)


def test_one_length_choices_give_transformers_beams_in_its_order(loaded: tuple[Any, Any]) -> None:
    """Sixty five-letter words, widths 2-8, length penalties 0, 1 (vLLM's default) and -0.5, four prompts batched:
    transformers' W sequences in its order, the same summed logprob each (scores differ by the length only)."""
    from openenv_train.envs.wordle import valid_guesses

    model, tokenizer = loaded
    words = sorted(valid_guesses())[:60]  # alphabetical: many share their first letters, so beams prune
    bodies = [_body(f"guess {i}" + "?" * i, width, 8, penalty, words)
              for i, (width, penalty) in enumerate([(2, 0.0), (4, 1.0), (8, 1.0), (4, -0.5), (8, 0.0)])]
    results = asyncio.run(_ours(model, tokenizer, bodies))
    for body, result in zip(bodies, results, strict=True):
        stops = result.sampling_used["stop_token_ids"]
        beams, scores, _ = _reference(model, result.prompt_token_ids, body, stops, tokenizer)
        assert [list(c.token_ids) for c in result.choices] == beams, body
        penalty = body["length_penalty"]
        for choice, ids, score in zip(result.choices, beams, scores, strict=True):
            assert choice.message["content"] in words and ids[-1] == tokenizer.eos_token_id
            # the same sum of logprobs: ours divides by 5 tokens to the penalty, transformers by 6 (the end token)
            assert choice.beam_score * _length(ids, stops) ** penalty == pytest.approx(score * len(ids) ** penalty,
                                                                                        abs=1e-4)


def _finished_by_our_rule(trail: _Trail, prompt_len: int, stops: list[int], width: int,
                          max_new: int) -> list[tuple[tuple[int, ...], float]]:
    """Our finishing rule over transformers' recorded search (length penalty 0): every end-token extension of a
    live beam at any step, and at ``max_new`` the W best extensions that do not end; the W best of them."""
    import math

    summed: dict[tuple[int, ...], float] = {(): 0.0}
    finished: dict[tuple[int, ...], float] = {}
    for step, (rows, logp) in enumerate(trail.steps):
        grown: dict[tuple[int, ...], float] = {}
        for ids, row in zip(rows, logp.tolist(), strict=True):
            done = tuple(ids[prompt_len:])
            if done not in summed:  # a filler beam of transformers' (a disallowed token): no sequence of ours
                continue
            for token, value in enumerate(row):
                if math.isfinite(value):
                    (finished if token in stops else grown)[(*done, token)] = summed[done] + value
        if step + 1 == max_new:
            finished.update(sorted(grown.items(), key=lambda kv: -kv[1])[:width])
        summed.update(grown)
    return sorted(finished.items(), key=lambda kv: -kv[1])[:width]


def test_ends_a_step_ranks_below_its_width_still_finish(loaded: tuple[Any, Any]) -> None:
    """Nested choices of one to five letters and one unconstrained request, widths 2-4, length penalty 0: our beams
    are transformers' own search finished by our rule, and on some prompts that keeps an end transformers dropped."""
    model, tokenizer = loaded
    bodies = [_body(f"word {i}" + "!" * (3 * i), width, 8, 0.0, NESTED) for i, width in enumerate([2, 2, 3, 3, 4, 2])]
    bodies.append(_body("free text", 4, 5, 0.0, None))
    results = asyncio.run(_ours(model, tokenizer, bodies))
    kept_more = 0
    for body, result in zip(bodies, results, strict=True):
        stops, prompt = result.sampling_used["stop_token_ids"], result.prompt_token_ids
        beams, scores, trail = _reference(model, prompt, body, stops, tokenizer)
        expected = _finished_by_our_rule(trail, len(prompt), stops, body["n"], body["max_tokens"])
        assert [tuple(c.token_ids) for c in result.choices] == [ids for ids, _ in expected], body
        assert [c.beam_score for c in result.choices] == pytest.approx([s for _, s in expected], abs=1e-4)
        if body.get("guided_choice"):
            assert {c.message["content"] for c in result.choices} <= set(NESTED)
        # transformers' own beams are among the sequences ours considered, with the same scores; ours score at least
        # as well at every rank (a superset of finished sequences)
        ours = dict(expected)
        for ids, score in zip(beams, scores, strict=True):
            if score > expected[-1][1] + 1e-4:
                assert ours.get(tuple(ids)) == pytest.approx(score, abs=1e-4), (ids, score)
        assert all(a >= b - 1e-4 for (_, a), b in zip(expected, scores, strict=True))
        kept_more += [list(ids) for ids, _ in expected] != beams
    assert kept_more, "no prompt showed the difference: every end the search met ranked within the width"
