"""Beam search throughput: tokens per second of beam widths 1, 4 and 16 at 8 and 32 concurrent requests through the
policy endpoint, side by side with transformers' ``model.generate(num_beams=W)`` on the same model and prompts, in
one run.

The endpoint: a ``PolicyServer`` over a ``LocalBackend`` whose batches decode in its engine process
(``LocalConfig(engine="process")``), answering ``--concurrency`` chat requests at once over HTTP, each
``use_beam_search`` with ``n`` = the width (``length_penalty`` 1.0, vLLM's default; ``--max-tokens`` new tokens at
most), so concurrent requests share a batch as the engine batches them. transformers: one ``model.generate`` call
over the same prompts (left-padded, ``num_beams=W, num_return_sequences=W``, the same ``length_penalty`` and limit,
``early_stopping=False``, its default) in this process; width 1 is its greedy search (``num_beams=1``).

The unit is the completion tokens of every returned beam (W per request, each through its end token) per wall
second; requests per second are printed too. Each width's rounds alternate which of the two goes first, so both
see the same machine; the endpoint's engine and ``generate`` run on the same number of torch threads
(``--threads``, the engine's ``decode_threads``). ``same best`` counts the requests whose best beam is
transformers' best sequence (the two searches finish end tokens differently, so a few may differ: see
``tests/policy/test_beam_transformers.py``). The tiny offline model (``build_tiny_model``, seed 0) unless
``--model`` names a folder; a random model rarely ends early, so the beams mostly run to ``--max-tokens``.

Run (from the repository root)::

    python benchmarks/beam_throughput.py
    python benchmarks/beam_throughput.py --widths 1 4 16 --concurrency 8 32 --max-tokens 16 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _messages(request: int, round_: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"Request {request}, round {round_}: which move comes next in the game?"}]


async def _endpoint_round(client: Any, url: str, concurrency: int, width: int, round_: int,
                          args: argparse.Namespace) -> dict[str, Any]:
    """``concurrency`` beam requests at once; their beams' tokens, the wall seconds and the best beams."""
    async def one(i: int) -> dict[str, Any]:
        body = {"model": "tiny", "messages": _messages(i, round_), "use_beam_search": True, "n": width,
                "length_penalty": args.length_penalty, "max_tokens": args.max_tokens}
        answer = await client.post(f"{url}/chat/completions", json=body)
        answer.raise_for_status()
        return answer.json()  # type: ignore[no-any-return]

    start = time.perf_counter()
    replies = await asyncio.gather(*(one(i) for i in range(concurrency)))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "tokens": sum(len(c["token_ids"]) for r in replies for c in r["choices"]),
            "best": [r["choices"][0]["token_ids"] for r in replies]}


def _generate_round(model: Any, tokenizer: Any, concurrency: int, width: int, round_: int,
                    args: argparse.Namespace) -> dict[str, Any]:
    """The same prompts in one ``generate`` call; the returned sequences' tokens through their end token."""
    import torch

    texts = [tokenizer.apply_chat_template(_messages(i, round_), add_generation_prompt=True, tokenize=False)
             for i in range(concurrency)]
    inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    eos = model.generation_config.eos_token_id
    stops = set(eos if isinstance(eos, list) else [eos])
    beams = {"num_beams": width, "num_return_sequences": width, "length_penalty": args.length_penalty,
             "early_stopping": False} if width > 1 else {}
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(**inputs, do_sample=False, max_new_tokens=args.max_tokens,
                             pad_token_id=tokenizer.pad_token_id, **beams)
    seconds = time.perf_counter() - start
    rows, total = [], 0
    for row in out[:, inputs["input_ids"].shape[1]:].tolist():
        ends = [i for i, t in enumerate(row) if t in stops]
        rows.append(row[:ends[0] + 1] if ends else row)
        total += len(rows[-1])
    return {"seconds": seconds, "tokens": total, "best": rows[::width]}


async def _measure(path: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    import httpx
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.policy import LocalBackend, LocalConfig, PolicyServer

    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    backend = LocalBackend(str(path), model_id="tiny", config=LocalConfig(engine="process",
                                                                          decode_threads=args.threads))
    results = []
    async with PolicyServer(backend) as server, httpx.AsyncClient(timeout=600) as client:
        for concurrency in args.concurrency:
            for width in args.widths:
                await _endpoint_round(client, server.base_url, concurrency, width, -1, args)  # warm-up
                _generate_round(model, tokenizer, concurrency, width, -1, args)
                assert backend.engine.kind == "process"
                runs: dict[str, list[dict[str, Any]]] = {"endpoint": [], "generate": []}
                for r in range(args.rounds):
                    for side in (("endpoint", "generate") if r % 2 == 0 else ("generate", "endpoint")):
                        runs[side].append(await _endpoint_round(client, server.base_url, concurrency, width, r, args)
                                          if side == "endpoint" else
                                          _generate_round(model, tokenizer, concurrency, width, r, args))
                same = sum(a == b for e, g in zip(runs["endpoint"], runs["generate"], strict=True)
                           for a, b in zip(e["best"], g["best"], strict=True))
                row = {"concurrency": concurrency, "width": width, "same_best": same,
                       "requests": concurrency * args.rounds,
                       **{side: {"tokens": sum(x["tokens"] for x in rs), "seconds": sum(x["seconds"] for x in rs),
                                 "round_s": [round(x["seconds"], 4) for x in rs]} for side, rs in runs.items()}}
                results.append(row)
                print(f"... {concurrency} requests, width {width} done", file=sys.stderr)
    return results


def main(args: argparse.Namespace) -> None:
    from openenv_train.policy import build_tiny_model

    with tempfile.TemporaryDirectory(prefix="beam-bench-") as tmp:
        path = Path(args.model) if args.model else build_tiny_model(Path(tmp) / "tiny", seed=0)
        results = asyncio.run(_measure(path, args))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    print(f"beam search, {args.max_tokens} new tokens at most, length_penalty {args.length_penalty:g}, "
          f"{args.rounds} rounds, torch threads {args.threads}; {'model ' + args.model if args.model else 'tiny model'}")
    print("completion tokens of the returned beams per wall second (requests per second)")
    print(f"{'requests':>8} {'width':>5} {'endpoint':>18} {'generate':>18} {'endpoint/generate':>18} "
          f"{'same best':>10}")
    for row in results:
        rate = {side: row[side]["tokens"] / row[side]["seconds"] for side in ("endpoint", "generate")}
        per_s = {side: row["requests"] / row[side]["seconds"] for side in ("endpoint", "generate")}
        print(f"{row['concurrency']:>8} {row['width']:>5} "
              + " ".join(f"{rate[s]:>9,.0f} ({per_s[s]:>5.1f}/s)" for s in ("endpoint", "generate"))
              + f" {rate['endpoint'] / rate['generate']:>17.2f}x {row['same_best']:>5}/{row['requests']:<4}")
    spread = [max(r[s]["round_s"]) / min(r[s]["round_s"]) for r in results for s in ("endpoint", "generate")]
    print(f"round-to-round spread (slowest / fastest round): median {statistics.median(spread):.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", type=int, nargs="+", default=[1, 4, 16], help="beam widths (the requests' n)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32], help="requests at once")
    parser.add_argument("--max-tokens", type=int, default=16, help="new tokens per beam at most")
    parser.add_argument("--length-penalty", type=float, default=1.0, help="both searches' length_penalty")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per width and concurrency (after a warm-up)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads of generate and of the endpoint's engine (its decode_threads)")
    parser.add_argument("--model", default="", help="a model folder (default: build the tiny model)")
    parser.add_argument("--json", default="", help="also write the raw results to this JSON file")
    main(parser.parse_args())
