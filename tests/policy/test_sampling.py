"""The batched sampler draws, for every seed, exactly the tokens of the per-row loop it replaced
(``torch.multinomial`` with one ``torch.Generator`` per row), so seeded requests keep their completions."""

from __future__ import annotations

import random
from typing import Any

import pytest

from openenv_train.policy import SamplingParams

torch = pytest.importorskip("torch")


def _old_sample(scores: Any, params: SamplingParams, generator: Any) -> int:
    """The per-row draw of the decode loop before the batched sampler (commit f5ab89d), verbatim."""
    scores = scores.clone()
    if 0 < params.top_k < scores.numel():
        kth = torch.topk(scores, params.top_k).values[-1]
        scores[scores < kth] = -torch.inf
    if params.top_p < 1.0:
        ordered, order = torch.sort(scores, descending=True)
        probs = torch.softmax(ordered, dim=-1)
        drop = (torch.cumsum(probs, dim=-1) - probs) >= params.top_p
        drop[0] = False
        scores[order[drop]] = -torch.inf
    return int(torch.multinomial(torch.softmax(scores, dim=-1), 1, generator=generator).item())


def _old_run(logits: list[Any], params: list[SamplingParams], seeds: list[int], ends: list[int]) -> list[list[int]]:
    """The old loop's tokens per row: logits per step ``[rows, vocab]``; row ``i`` stops after ``ends[i]`` steps."""
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    out: list[list[int]] = [[] for _ in params]
    for step, step_logits in enumerate(logits):
        temps = torch.tensor([p.temperature or 1.0 for p in params])
        logp = torch.log_softmax(step_logits / temps[:, None], dim=-1)
        greedy = step_logits.argmax(dim=-1).tolist()
        for i, p in enumerate(params):
            if step < ends[i]:
                out[i].append(greedy[i] if p.temperature == 0 else _old_sample(logp[i], p, gens[i]))
    return out


def _new_run(logits: list[Any], params: list[SamplingParams], seeds: list[int], ends: list[int],
             vocab: int | None = None) -> list[list[int]]:
    from openenv_train.policy._engine.sampling import BatchSampler

    sampler = BatchSampler(params, seeds, len(logits), torch.device("cpu"), vocab)
    out: list[list[int]] = [[] for _ in params]
    for step, step_logits in enumerate(logits):
        active = [step < end for end in ends]
        tokens, chosen, _ = sampler.choose(step_logits, step, active)
        temps = torch.tensor([p.temperature or 1.0 for p in params])
        expected = torch.log_softmax(step_logits / temps[:, None], dim=-1).gather(1, tokens[:, None])[:, 0]
        assert torch.equal(chosen, expected)
        for i, token in enumerate(tokens.tolist()):
            if active[i]:
                out[i].append(token)
    return out


@pytest.mark.parametrize("hint", ["none", "right", "wrong"])
@pytest.mark.parametrize("greedy_rows", [True, False])
@pytest.mark.parametrize("vocab", [102, 1024])
def test_batched_sampler_draws_the_old_loops_tokens_for_every_seed(vocab: int, greedy_rows: bool, hint: str) -> None:
    """At 1024 the chunks of draws (24 rows x 4 steps first) are large enough to be drawn ahead in a thread; a
    vocabulary hint draws step 0's before the first step (a wrong one must start again from the seeds)."""
    rng = random.Random(vocab)
    kinds = [dict(temperature=1.0), dict(temperature=0.0 if greedy_rows else 0.5), dict(temperature=0.7, top_p=0.9),
             dict(temperature=1.3, top_k=5), dict(temperature=0.8, top_k=40, top_p=0.95), dict(temperature=1.0, top_p=0.5),
             dict(temperature=1.0, top_k=vocab + 3), dict(temperature=2.0, top_k=1)]
    params = [SamplingParams(**kinds[i % len(kinds)]) for i in range(24)]  # type: ignore[arg-type]
    seeds = [rng.randrange(2**63) for _ in params]
    steps = 40  # past the first draw chunks (4, 8, then 16 steps), so chunked draws must equal one call per step
    ends = [rng.randint(1, steps) for _ in params]
    generator = torch.Generator().manual_seed(vocab)
    logits = []
    for _ in range(steps):
        step_logits = torch.randn((len(params), vocab), generator=generator) * 3
        step_logits[::3, : vocab // 2] = -torch.inf  # constrained rows: the mask sets forbidden logits to -inf
        step_logits[1::5, :10] = 4.0  # exact ties, at the top
        logits.append(step_logits)
    given = {"none": None, "right": vocab, "wrong": vocab + 7}[hint]
    assert _new_run(logits, params, seeds, ends, given) == _old_run(logits, params, seeds, ends)


def test_a_tiny_temperature_decodes_greedily_with_finite_logprobs() -> None:
    """1e-84 (found by the chat fuzzer) is 0 in float32: dividing by it gave inf logits and a 500 at JSON time."""
    from openenv_train.policy._engine.sampling import GREEDY_BELOW, BatchSampler

    logits = torch.randn((3, 50), generator=torch.Generator().manual_seed(0)) * 3
    temps = [1.418043102685024e-84, GREEDY_BELOW / 2, 0.0]
    sampler = BatchSampler([SamplingParams(temperature=t) for t in temps], [1, 2, 3], steps=1, device=torch.device("cpu"))
    tokens, chosen, _ = sampler.choose(logits, 0)
    assert tokens.tolist() == logits.argmax(dim=-1).tolist()
    assert torch.isfinite(chosen).all()
    assert torch.equal(chosen, torch.log_softmax(logits, dim=-1).gather(1, tokens[:, None])[:, 0])
    # at the threshold a row samples, with its own temperature
    assert BatchSampler([SamplingParams(temperature=GREEDY_BELOW)], [1], 1, torch.device("cpu")).sampled == [0]
