"""The batched decode loop (static KV cache or transformers' forward) gives the completions of the per-row loop it
replaced: the same rows (greedy, seeded samples, top-k/top-p, guided_choice, guided_regex, stop strings, mixed in
one left-padded batch) give the same token ids, and logprobs equal to float rounding.

``data/decoded_rows.json`` was written by :func:`decode` running the loop before the change (commit 041c9ba's
``policy/_generation.py``, ``git archive 041c9ba`` on ``PYTHONPATH``). Regenerate it only for a deliberate change of
what is sampled::

    python -m tests.policy.test_decode_golden
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openenv_train.policy import Constraint, SamplingParams

GOLDEN = Path(__file__).parent / "data" / "decoded_rows.json"
WORDS = ["crane", "slate", "trace", "crate", "stare", "adieu", "audio", "raise", "arise", "tears", "later", "alert"]


def _rows(model: Any, tokenizer: Any) -> list[Any]:
    from openenv_train.policy._engine.generation import Row
    from openenv_train.policy._engine.guide import GuideCache

    guides = GuideCache(tokenizer, int(tokenizer.eos_token_id))
    choice = guides.get(Constraint(choices=tuple(WORDS)))
    fewer = guides.get(Constraint(choices=tuple(WORDS[2:])))  # a cached list less two words (ExcludingGuide)
    regex = guides.get(Constraint(regex=r"[a-e]{2,6}"))
    prompts = ["hi", "Guess the word. Board: C G Y X X", "what is 2 + 3?",
               "Tell me about the chess board and the knight on it", "yes"]
    eos = frozenset({int(tokenizer.eos_token_id)})
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"temperature": 0.0}, None), ({"temperature": 0.0}, choice), ({"temperature": 0.0}, regex),
        ({"temperature": 0.0}, fewer), ({"temperature": 1.0}, None), ({"temperature": 1.0}, choice),
        ({"temperature": 1.0}, fewer), ({"temperature": 0.8, "top_p": 0.9, "top_k": 40}, None),
        ({"temperature": 1.2, "top_k": 5}, regex), ({"temperature": 1.0, "stop": ["e"]}, None),
        ({"temperature": 0.0, "stop": ["a"]}, None), ({"temperature": 0.7, "top_p": 0.5}, choice),
    ]
    rows = []
    for i, (params, guide) in enumerate(cases):
        messages = [{"role": "user", "content": prompts[i % len(prompts)]}]
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
        rows.append(Row(list(prompt), SamplingParams(**params), 10 + i % 3, 1000 + i, eos, guide))
    return rows


def decode(model: Any, tokenizer: Any, **options: Any) -> list[dict[str, Any]]:
    """Every row of :func:`_rows` in one batch: ids, logprobs, text and finish reason."""
    from openenv_train.policy._engine.generation import generate_rows

    outputs = generate_rows(model, tokenizer, _rows(model, tokenizer), pad_id=int(tokenizer.pad_token_id), **options)
    return [{"token_ids": o.token_ids, "logprobs": o.logprobs, "text": o.text, "finish_reason": o.finish_reason,
             "error": None if o.error is None else str(o.error)} for o in outputs]


@pytest.mark.parametrize(("fast", "ahead"), [(True, False), (False, False), (True, True)])
def test_the_same_rows_decode_as_before_the_batched_loop(tiny: tuple[Any, Any], fast: bool, ahead: bool,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if ahead:  # every chunk of draws from the draw-ahead thread (this batch's are too small to go there otherwise)
        monkeypatch.setattr("openenv_train.policy._engine.sampling._AHEAD_FLOATS", 0)
    golden = json.loads(GOLDEN.read_text())
    now = decode(*tiny, fast=fast)
    assert len(now) == len(golden)
    assert any(o["finish_reason"] == "stop" for o in golden) and all(o["error"] is None for o in golden)
    for i, (new, old) in enumerate(zip(now, golden, strict=True)):
        for key in ("token_ids", "text", "finish_reason", "error"):
            assert new[key] == old[key], f"row {i}: {key} differs"
        # the same model, batch and draws; a rewritten decode step, or another CPU's float32 kernels (the file was
        # written on another machine; on an AVX-512 one they differ by up to 1.5e-6 relative), change the last bits only
        assert new["logprobs"] == pytest.approx(old["logprobs"], abs=1e-5, rel=1e-5), f"row {i}: logprobs differ"


def test_a_row_with_non_finite_logits_fails_alone(tiny: tuple[Any, Any]) -> None:
    """Row 0's logits turn nan, row 1's huge but finite (their sum overflows) after their first token: row 0 fails
    with a clear error, the others decode as they would have."""
    import torch

    from openenv_train.policy import BackendFailed

    model, tokenizer = tiny
    clean = decode(model, tokenizer)

    def poison(module: Any, args: Any, out: Any) -> Any:
        if len(out) != len(clean):  # the prefill of the distinct prompts (rows 0, 5 and 10 share one)
            return out
        out = out.clone()
        out[0] = float("nan")
        out[1] = out[1] + 1e37  # the same softmax, a sum past float32's range
        return out

    handle = model.lm_head.register_forward_hook(poison)
    try:
        now = decode(model, tokenizer)
    finally:
        handle.remove()
    assert now[0]["error"] == str(BackendFailed("the model produced non-finite logits for this request"))
    assert now[1]["error"] is None and torch.isfinite(torch.tensor(now[1]["logprobs"])).all()
    assert [o["token_ids"] for o in now[2:]] == [o["token_ids"] for o in clean[2:]]


if __name__ == "__main__":
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(Path("/tmp") / "decode-golden-tiny", seed=0)  # the `tiny` fixture's model
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    GOLDEN.write_text(json.dumps(decode(model, tokenizer), indent=1) + "\n")
    print(f"wrote {GOLDEN}")
