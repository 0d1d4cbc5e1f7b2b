"""Cost of constrained decoding: tokens/s with and without a 10,000-word choice list, same prompts, side by side.

The tiny offline model behind a ``LocalBackend`` (the batched decode path every endpoint call takes) answers
``--requests`` concurrent chat requests per round, sampled at T=1 with a fixed seed per request, in three
variants that alternate round by round so all see the same machine:

- **free**: no constraint;
- **choice (cached)**: ``guided_choice`` = the Wordle valid-guess list (10,091 words), the same list every round
  (its trie is cached by content);
- **choice (new list)**: the list minus a different word each round (what a Wordle episode sends after
  excluding its earlier guesses): the trie is rebuilt each round, from cached per-word token ids.

It prints median tokens/s and ms per completion token of each, the ratio to free, and the one-off cost of the
first trie (tokenizing 10,091 words). Completion lengths differ (a word is 2-5 tokens plus the end token; a free
completion runs to ``--max-tokens``), so tokens/s is the fair unit.

Run (from the repository root, after ``pip install -e '.[test]'``)::

    python benchmarks/constrained_decoding.py
    python benchmarks/constrained_decoding.py --requests 32 --rounds 7 --max-tokens 8
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from typing import Any

from openenv_train.envs.wordle import valid_guesses
from openenv_train.policy import LocalBackend, build_tiny_model, parse_chat_request


def _body(i: int, max_tokens: int, choices: list[str] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": f"Guess {i}: a five-letter word?"}],
                            "temperature": 1.0, "seed": i, "max_tokens": max_tokens}
    if choices is not None:
        body["guided_choice"] = choices
    return body


async def _round(backend: LocalBackend, requests: int, max_tokens: int, choices: list[str] | None) -> tuple[float, int]:
    bodies = [_body(i, max_tokens, choices) for i in range(requests)]
    start = time.perf_counter()
    results = await asyncio.gather(*(backend.chat(parse_chat_request(b)) for b in bodies))
    seconds = time.perf_counter() - start
    allowed = set(choices or ())
    for result in results:
        if choices is not None:
            assert result.choices[0].message["content"] in allowed, result.choices[0].message
    return seconds, sum(len(r.choices[0].token_ids or ()) for r in results)


async def main(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(args.threads)
    path = build_tiny_model(tempfile.mkdtemp(prefix="constrained-bench-"), seed=0)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    backend = LocalBackend(model, AutoTokenizer.from_pretrained(path), model_id="tiny")
    words = sorted(valid_guesses())
    await _round(backend, args.requests, args.max_tokens, None)  # warm-up (threads, allocator)
    first_start = time.perf_counter()
    await _round(backend, 1, args.max_tokens, words)
    first_build = time.perf_counter() - first_start
    rates: dict[str, list[float]] = {"free": [], "choice (cached)": [], "choice (new list)": []}
    for r in range(args.rounds):
        variants = {"free": None, "choice (cached)": words,
                    "choice (new list)": [w for i, w in enumerate(words) if i != r + 1]}
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            seconds, tokens = await _round(backend, args.requests, args.max_tokens, variants[name])
            rates[name].append(tokens / seconds)
    await backend.aclose()
    print(f"{args.requests} concurrent requests, T=1, max_tokens={args.max_tokens}, {args.rounds} rounds, "
          f"torch threads={args.threads}, choice list: {len(words):,} Wordle valid guesses")
    print(f"first request with the list (tokenize {len(words):,} words + trie + decode): {first_build * 1e3:.0f} ms")
    free = statistics.median(rates["free"])
    print(f"{'variant':<20} {'tokens/s':>10} {'ms/token':>9} {'vs free':>8}")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name:<20} {rate:>10,.0f} {1e3 / rate:>9.2f} {rate / free:>7.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=32, help="concurrent requests per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per variant (alternating)")
    parser.add_argument("--max-tokens", type=int, default=8, help="completion limit")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    asyncio.run(main(parser.parse_args()))
