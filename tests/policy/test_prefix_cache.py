"""Reusing earlier turns' keys and values (the prefix cache) changes no sampled token and keeps the model's own
logprobs: later turns match a full prefill of the same prompt, and changed weights drop the cache."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv_train.policy import LocalConfig
from openenv_train.policy._engine.generation import Row, generate_rows
from openenv_train.policy._engine.prefix_cache import PrefixCache
from openenv_train.policy._types import SamplingParams
from tests.policy.test_capture_golden import SESSIONS, TURNS, _comparable, play

PARAMS = [SamplingParams(temperature=0.0, max_tokens=12), SamplingParams(temperature=1.0, max_tokens=12),
          SamplingParams(temperature=0.8, top_k=40, top_p=0.9, max_tokens=12)]


def _rows(prompts: list[list[int]], eos: frozenset[int]) -> list[Row]:
    return [Row(p, PARAMS[i % len(PARAMS)], 12, 7 + i, eos) for i, p in enumerate(prompts)]


def _play_turns(model: Any, tokenizer: Any, cache: PrefixCache | None, turns: int = 3) -> list[list[Any]]:
    """Rows of different lengths over ``turns`` batches; each later prompt extends its row's prompt and completion
    with a few new ids, and every batch adds a row seen for the first time."""
    import torch

    eos = frozenset({int(tokenizer.eos_token_id)})
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(5, 1000, (n,), generator=g).tolist() for n in (30, 50, 41, 64)]
    batches = []
    for _ in range(turns):
        out = generate_rows(model, tokenizer, _rows(prompts, eos), pad_id=0, prefix=cache)
        batches.append([(p, o) for p, o in zip(prompts, out, strict=True)])
        extra = torch.randint(5, 1000, (8,), generator=g).tolist()
        prompts = [p + o.token_ids + extra[: 2 + i] for i, (p, o) in enumerate(zip(prompts, out, strict=True))]
        prompts.append(torch.randint(5, 1000, (20,), generator=g).tolist())
    return batches


def test_later_turns_sample_what_a_full_prefill_samples(tiny: tuple[Any, Any]) -> None:
    import torch

    model, tokenizer = tiny
    cache = PrefixCache(2**28)
    cached, full = _play_turns(model, tokenizer, cache), _play_turns(model, tokenizer, None)
    assert cache.hits == 4 + 5  # every row seen before, in turns 2 and 3
    for with_cache, without in zip(cached, full, strict=True):
        for (prompt, a), (same_prompt, b) in zip(with_cache, without, strict=True):
            assert prompt == same_prompt and a.token_ids == b.token_ids
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5, rel=1e-5)
    # the model's own distribution: a teacher-forced forward over the whole last-turn sequence
    for (prompt, out), params in zip(cached[-1], PARAMS * 2, strict=False):
        ids = torch.tensor([prompt + out.token_ids])
        with torch.inference_mode():
            logits = model(input_ids=ids).logits[0, len(prompt) - 1: -1].float()
        scaled = logits / (params.temperature or 1.0)
        want = scaled.log_softmax(-1).gather(-1, torch.tensor(out.token_ids)[:, None])[:, 0].tolist()
        assert out.logprobs == pytest.approx(want, abs=1e-4)


def _step_fused(model: Any) -> None:
    """One step of fused AdamW (TRL's default ``adamw_torch_fused``), which leaves the version counters alone."""
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=True)
    model(input_ids=torch.tensor([list(range(10, 30))]), labels=torch.tensor([list(range(10, 30))])).loss.backward()
    before = [p._version for p in model.parameters()]
    optimizer.step()
    assert [p._version for p in model.parameters()] == before  # why values are sampled too


@pytest.mark.parametrize("change", ["in place", "fused optimizer", "new version"])
def test_changed_weights_drop_every_cached_prefix(tiny_path: Any, change: str) -> None:
    import torch

    from tests.policy.conftest import _load

    model, tokenizer = _load(tiny_path)  # its own copy: the weights change
    cache = PrefixCache(2**28)
    eos = frozenset({int(tokenizer.eos_token_id)})
    prompt = list(range(10, 40))
    first = generate_rows(model, tokenizer, _rows([prompt], eos), pad_id=0, prefix=cache, version=1)[0]
    second_prompt = prompt + first.token_ids + [60]
    second = generate_rows(model, tokenizer, _rows([second_prompt], eos), pad_id=0, prefix=cache, version=1)[0]
    assert cache.hits == 1  # same weights, same version: reused
    longer = second_prompt + second.token_ids + [50, 51]
    if change == "in place":
        with torch.no_grad():
            model.model.norm.weight.mul_(1.5)
    elif change == "fused optimizer":
        _step_fused(model)
    version = 2 if change == "new version" else 1
    again = generate_rows(model, tokenizer, _rows([longer], eos), pad_id=0, prefix=cache, version=version)[0]
    assert cache.hits == 1
    fresh = generate_rows(model, tokenizer, _rows([longer], eos), pad_id=0)[0]
    assert again.token_ids == fresh.token_ids and again.logprobs == fresh.logprobs


def test_captured_episodes_are_those_of_a_full_prefill(tiny: tuple[Any, Any]) -> None:
    backends: list[Any] = []
    cached = _comparable(asyncio.run(play(tiny, seen=backends)))
    full = _comparable(asyncio.run(play(tiny, LocalConfig(prefix_cache_mb=0), seen=backends)))
    assert backends[0].prefix_cache.hits == SESSIONS * (TURNS - 1) and backends[1].prefix_cache is None
    for a_turns, b_turns in zip(cached, full, strict=True):
        for a, b in zip(a_turns, b_turns, strict=True):
            for key in ("prompt_token_ids", "completion_token_ids", "loss_mask", "request", "response", "metadata"):
                assert a[key] == b[key]
            assert a["per_token_logps"] == pytest.approx(b["per_token_logps"], abs=1e-5, rel=1e-5)


def test_the_cache_keeps_the_longest_prefix_within_its_budget() -> None:
    import torch

    def layers(n: int) -> list[tuple[Any, Any]]:
        return [(torch.zeros(1, n, 2), torch.zeros(1, n, 2))]  # 16 bytes per id

    cache = PrefixCache(16 * 10)
    cache.store([1, 2, 3], layers(3))
    cache.store([1, 2, 3, 4, 5], layers(5))
    assert cache.lookup([1, 2, 3, 4, 5, 6]).ids == (1, 2, 3, 4, 5)  # type: ignore[union-attr]
    assert cache.lookup([1, 2, 3, 4, 5]).ids == (1, 2, 3)  # type: ignore[union-attr]  # one id left to prefill
    assert cache.lookup([1, 2, 9]) is None and cache.lookup([7]) is None
    cache.lookup([1, 2, 3, 9])  # [1, 2, 3] used last
    cache.store([1, 2, 3, 4, 5, 6, 7], layers(7))
    assert len(cache) == 2 and cache.nbytes == 16 * (3 + 7)  # over budget: the least recently used one went
    assert cache.lookup([1, 2, 3, 4, 5, 6]).ids == (1, 2, 3)  # type: ignore[union-attr]
    cache.store(list(range(11)), layers(11))  # larger than the whole budget: not kept
    assert len(cache) == 2
    cache.check_weights(("a", None))
    assert len(cache) == 0


async def test_a_tiny_model_decodes_on_one_thread_and_the_setting_comes_back(tiny: tuple[Any, Any]) -> None:
    import sys

    import torch

    from openenv_train.policy import LocalBackend, parse_chat_request

    model, tokenizer = tiny
    seen: list[tuple[int, float]] = []
    in_process = LocalBackend(model, tokenizer)  # the engine process decodes a tiny model on one thread too
    assert in_process.engine.kind == "process" and in_process.engine.threads == 1
    await in_process.aclose()
    hook = model.register_forward_pre_hook(lambda *_: seen.append((torch.get_num_threads(), sys.getswitchinterval())))
    backend = LocalBackend(model, tokenizer, config=LocalConfig(engine="thread"))  # the hook sees this process
    before = torch.get_num_threads(), sys.getswitchinterval()
    try:
        assert backend.decode_threads == 1
        assert LocalBackend(model, tokenizer, config=LocalConfig(decode_threads=0, engine="thread")).decode_threads == 0
        await backend.chat(parse_chat_request({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}))
    finally:
        hook.remove()
        await backend.aclose()
    assert seen and {threads for threads, _ in seen} == {1}
    assert [switch for _, switch in seen] == pytest.approx([LocalConfig().decode_switch_s] * len(seen))  # kept in µs
    assert (torch.get_num_threads(), sys.getswitchinterval()) == before


def test_backends_decoding_at_once_restore_the_thread_and_switch_settings() -> None:
    """Two backends' batches overlapping (enter A, enter B, leave A, leave B) leave torch's thread setting and
    Python's switch interval as they were."""
    import sys

    import torch

    from openenv_train.policy._engine.core import DECODING

    before = torch.get_num_threads(), sys.getswitchinterval()
    a, b = DECODING.using(1, 0.0005), DECODING.using(1, 0.0005)
    a.__enter__()
    b.__enter__()
    assert (torch.get_num_threads(), sys.getswitchinterval()) == (1, 0.0005)
    a.__exit__(None, None, None)
    assert (torch.get_num_threads(), sys.getswitchinterval()) == (1, 0.0005)  # B still decodes
    b.__exit__(None, None, None)
    assert (torch.get_num_threads(), sys.getswitchinterval()) == before
    with DECODING.using(0, 0.0005):  # a backend that leaves torch's threads alone restores only the interval
        torch.set_num_threads(before[0] + 1)  # the user's own change while it decodes
    try:
        assert (torch.get_num_threads(), sys.getswitchinterval()) == (before[0] + 1, before[1])
    finally:
        torch.set_num_threads(before[0])
