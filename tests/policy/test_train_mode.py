"""A trainer's live model (train mode, gradient checkpointing on) answers as the same weights in eval mode do, and
is left in train mode: under transformers < 5.17 (Oumi's pin) a train-mode model with checkpointing keeps no KV
cache, which the decode loop needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openenv_train.policy import LocalBackend, parse_chat_request

BODY = {"messages": [{"role": "user", "content": "guess"}], "max_tokens": 8, "seed": 3, "temperature": 1.0,
        "guided_choice": ["crane", "slate", "trace", "grape"]}


async def _answer(model: Any, tokenizer: Any, fast: bool) -> Any:
    from openenv_train.policy import LocalConfig

    backend = LocalBackend(model, tokenizer, config=LocalConfig(fast_decode=fast))
    try:
        return (await backend.chat(parse_chat_request(BODY))).choices[0]
    finally:
        await backend.aclose()


@pytest.mark.parametrize("fast", [True, False])
async def test_a_training_model_answers_like_eval_mode_and_stays_in_train_mode(tiny_path: Path, fast: bool) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    model = AutoModelForCausalLM.from_pretrained(tiny_path).eval()
    expected = await _answer(model, tokenizer, fast)
    model.gradient_checkpointing_enable()
    model.train()
    got = await _answer(model, tokenizer, fast)
    assert model.training and all(m.training for m in model.modules())
    assert got.token_ids == expected.token_ids
    assert got.logprobs == pytest.approx(expected.logprobs, abs=1e-6)
