"""The lean decode loop (static KV cache, batched sampling) gives the model's own tokens and logprobs: the same
ids and logprobs as transformers' forward step by step on the same seeds, and a teacher-forced forward pass (for
constrained rows, of the masked distribution the constraint leaves)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv_train.policy import LocalBackend, LocalConfig, parse_chat_request

WORDS = ["crane", "slate", "trace", "crate", "stare", "adieu", "audio", "raise", "arise", "tears", "later", "alert"]
PROMPTS = ["hi", "Tell me about the chess board and the knight", "what is 2 + 3?", "yes", "Play a word game with me"]


async def _answers(tiny: tuple[Any, Any], fast: bool, params: dict[str, Any]) -> list[Any]:
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, config=LocalConfig(fast_decode=fast, batch_window_s=0.05))
    bodies = [{"messages": [{"role": "user", "content": p}], "max_tokens": 12, "seed": i, **params}
              for i, p in enumerate(PROMPTS)]
    results = await asyncio.gather(*(backend.chat(parse_chat_request(b)) for b in bodies))
    await backend.aclose()
    assert max(r.info["batch_rows"] for r in results) > 1  # left-padded rows of different lengths together
    return results


def _allowed(tokenizer: Any, params: dict[str, Any], completion: list[int]) -> list[Any]:
    """The ids a constraint allowed at each step of ``completion`` (None: unconstrained)."""
    if "guided_choice" not in params and "guided_regex" not in params:
        return [None] * len(completion)
    from openenv_train.policy import Constraint
    from openenv_train.policy._engine.guide import GuideCache

    constraint = (Constraint(choices=tuple(params["guided_choice"])) if "guided_choice" in params
                  else Constraint(regex=params["guided_regex"], field="guided_regex"))
    guide = GuideCache(tokenizer, int(tokenizer.eos_token_id)).get(constraint)
    state, allowed = guide.start(), []
    for token in completion:
        allowed.append(guide.allowed(state))
        state = guide.advance(state, token)
    return allowed


@pytest.mark.parametrize("params", [{"temperature": 0}, {"temperature": 0.8, "top_p": 0.9, "top_k": 40},
                                    {"temperature": 0, "guided_choice": WORDS},
                                    {"temperature": 1.0, "guided_choice": WORDS},
                                    {"temperature": 0.9, "top_k": 20, "guided_regex": "[a-e]{2,6}"}])
async def test_fast_decode_matches_transformers_forward(tiny: tuple[Any, Any], params: dict[str, Any]) -> None:
    import torch

    model, tokenizer = tiny
    fast, plain = await _answers(tiny, True, params), await _answers(tiny, False, params)
    for a, b in zip(fast, plain, strict=True):
        assert a.choices[0].token_ids == b.choices[0].token_ids
        assert a.choices[0].logprobs == pytest.approx(b.choices[0].logprobs, abs=1e-5)
    temperature = params["temperature"] or 1.0
    for result in fast:
        prompt, completion = result.prompt_token_ids, result.choices[0].token_ids
        with torch.inference_mode():
            logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1: -1].float()
        logits = logits.clone()  # a normal tensor: the mask below writes to it
        for step, ids in enumerate(_allowed(tokenizer, params, completion)):
            if ids is not None:
                keep = logits[step, ids]
                logits[step] = -torch.inf
                logits[step, ids] = keep
        expected = torch.log_softmax(logits / temperature, dim=-1).gather(-1, torch.tensor(completion)[:, None])[:, 0]
        assert result.choices[0].logprobs == pytest.approx(expected.tolist(), abs=1e-4)
        if params["temperature"] == 0:
            assert completion == logits.argmax(-1).tolist()


def test_rows_sharing_a_prompt_are_prefilled_once_and_decode_as_if_each_had_its_own(
        tiny: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A GRPO group's first turn: eight games with one prompt (and two other prompts) in one batch, sampled with
    their own seeds. The prefill runs once per distinct prompt, and every row's ids and logprobs are those of the
    batch prefilled row by row."""
    from openenv_train.policy import SamplingParams
    from openenv_train.policy._engine import generation as _generation
    from openenv_train.policy._engine.generation import Row, generate_rows

    model, tokenizer = tiny
    prompts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True,
                                             tokenize=True, return_dict=False) for p in PROMPTS[:3]]
    eos = frozenset({int(tokenizer.eos_token_id)})
    rows = [Row(list(prompts[0 if i < 8 else i - 7]), SamplingParams(temperature=1.0), 12, 100 + i, eos)
            for i in range(10)]
    prefilled: list[int] = []
    hook = model.register_forward_pre_hook(lambda _, args, kwargs: prefilled.append(kwargs["input_ids"].shape[0]),
                                           with_kwargs=True)
    try:
        shared = generate_rows(model, tokenizer, rows, pad_id=int(tokenizer.pad_token_id))
        assert prefilled == [3]
        monkeypatch.setattr(_generation, "_same_prompts", lambda rows: None)
        alone = generate_rows(model, tokenizer, rows, pad_id=int(tokenizer.pad_token_id))
        assert prefilled == [3, 10]
    finally:
        hook.remove()
    assert [o.token_ids for o in shared] == [o.token_ids for o in alone]
    assert len({tuple(o.token_ids) for o in shared[:8]}) > 1  # the group's games sampled apart
    for a, b in zip(shared, alone, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, rel=1e-6, abs=1e-6)
