"""Capture overhead and trace-writer throughput.

1. **Capture overhead**: the same batch of chat completions (concurrent requests, greedy, fixed
   max_tokens) through one PolicyServer over the tiny offline model, sent without a capture session
   (``Bearer EMPTY``) and with one (every call recorded as a TrainingTurn), alternating rounds so both
   see the same machine. Prints the median batch time of each and the overhead ratio (target < 5 %).
2. **Writer throughput**: rows of ``--turns`` turns x ``--tokens`` tokens (half prompt, half completion)
   written by TraceWriter to Parquet shards; rows/s and MB/s, and the time to load them back with
   ``datasets``.

Run (from the repository root, after ``pip install -e '.[test]'``)::

    python benchmarks/capture_overhead.py
    python benchmarks/capture_overhead.py --requests 32 --rounds 9 --rows 1000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from openenv_train.policy import LocalBackend, PolicyServer, build_tiny_model
from openenv_train.trace import CaptureStore, EnvInfo, TraceRow, TraceWriter, TrainingTrace, build_turn, load_dataset


async def _batch(client: httpx.AsyncClient, url: str, key: str, requests: int, max_tokens: int) -> float:
    async def one(i: int) -> None:
        body = {"model": "tiny", "messages": [{"role": "user", "content": f"Question {i}: what is {i} + {i}?"}],
                "max_tokens": max_tokens, "temperature": 0}
        reply = await client.post(f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
        reply.raise_for_status()

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(requests)))
    return time.perf_counter() - start


async def capture_overhead(model_dir: Path, *, requests: int, rounds: int, max_tokens: int) -> dict[str, float]:
    capture = CaptureStore()
    times: dict[str, list[float]] = {"plain": [], "captured": []}
    async with PolicyServer(LocalBackend(str(model_dir)), capture=capture) as server:
        async with httpx.AsyncClient(timeout=120) as client:
            await _batch(client, server.url, "EMPTY", requests, max_tokens)  # warm-up
            for round_index in range(rounds):
                session = f"bench-{round_index}"
                capture.open_session(session)
                order = ("plain", "captured") if round_index % 2 == 0 else ("captured", "plain")
                for kind in order:
                    key = session if kind == "captured" else "EMPTY"
                    times[kind].append(await _batch(client, server.url, key, requests, max_tokens))
                recorded = capture.close_session(session)
                assert len(recorded.turns) == requests, "every captured call must be recorded"
    plain, captured = statistics.median(times["plain"]), statistics.median(times["captured"])
    return {"plain_s": plain, "captured_s": captured, "overhead": captured / plain - 1}


def writer_throughput(run_dir: Path, *, rows: int, turns: int, tokens: int) -> dict[str, float]:
    rng = random.Random(0)
    half = tokens // 2

    def row(i: int) -> TraceRow:
        made = [build_turn(messages=[{"role": "user", "content": "x" * 200}],
                           message={"role": "assistant", "content": "y" * 200}, finish_reason="stop",
                           prompt_token_ids=[rng.randrange(150_000) for _ in range(half)],
                           completion_token_ids=[rng.randrange(150_000) for _ in range(half)],
                           logprobs=[-rng.random() for _ in range(half)], node_id=f"t{k}")
                for k in range(turns)]
        return TraceRow(trace_id=uuid.uuid4().hex, run_id="bench", episode_id=f"ep{i}", env=EnvInfo(name="bench"),
                        reward=1.0, trace=TrainingTrace(turns=made))

    data = [row(i) for i in range(rows)]
    start = time.perf_counter()
    with TraceWriter(run_dir, resume=False) as writer:
        for item in data:
            writer.write(item)
    write_s = time.perf_counter() - start
    size = sum(path.stat().st_size for path in writer.shards)
    start = time.perf_counter()
    loaded = load_dataset(run_dir, cache_dir=str(run_dir / "hf-cache"))
    load_s = time.perf_counter() - start
    assert len(loaded) == rows
    return {"rows_per_s": rows / write_s, "mb_per_s": size / 1e6 / write_s, "shard_mb": size / 1e6, "load_s": load_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=16, help="concurrent requests per batch")
    parser.add_argument("--rounds", type=int, default=7, help="batches of each kind (median taken)")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--rows", type=int, default=500, help="rows for the writer benchmark")
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=512, help="tokens per turn (prompt + completion)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_model(Path(tmp) / "tiny")
        cap = asyncio.run(capture_overhead(model_dir, requests=args.requests, rounds=args.rounds,
                                           max_tokens=args.max_tokens))
        print(f"capture: {args.requests} concurrent requests x {args.max_tokens} tokens, median of {args.rounds} rounds")
        print(f"  without capture {cap['plain_s'] * 1000:8.1f} ms   with capture {cap['captured_s'] * 1000:8.1f} ms"
              f"   overhead {cap['overhead'] * 100:+.1f}% (target < 5%)")
        writer = writer_throughput(Path(tmp) / "run", rows=args.rows, turns=args.turns, tokens=args.tokens)
        print(f"writer: {args.rows} rows of {args.turns} turns x {args.tokens} tokens")
        print(f"  {writer['rows_per_s']:.0f} rows/s, {writer['mb_per_s']:.1f} MB/s, {writer['shard_mb']:.1f} MB of shards;"
              f" datasets load {writer['load_s']:.2f} s")


if __name__ == "__main__":
    main()
