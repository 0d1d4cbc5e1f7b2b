"""Requests of different lengths at once: the engine process a batch at a time against continuous batching
(``LocalConfig.continuous``), side by side in one run.

Agents ask for short and long completions at once (a tool call beside a long answer). A batch decodes until its
longest row ends, so a short request that arrives while a long batch decodes waits for all of it; with continuous
batching it joins the running decode at the next step and is answered when its own tokens are done.

Each measurement runs in a fresh worker process: the tiny offline model (``build_tiny_model``, seed 0), a
``PolicyServer`` over a ``LocalBackend`` with a capture store, and ``--sessions`` concurrent chat sessions in a
client process of their own, each sending ``--rounds`` requests one after another (T=1, seeded); request ``t`` of
session ``s`` asks for ``lengths[(s + t) % len(lengths)]`` new tokens (the random model rarely ends earlier).
Printed per setting: completion tokens per wall second, and the latency of the requests of each length (p50 and
p95, from the client's send to its last byte); the ratios are continuous over one batch at a time. The settings
run one after another, their order alternating per repeat, so both see the same machine.

Run (from the repository root)::

    python benchmarks/mixed_lengths.py
    python benchmarks/mixed_lengths.py --sessions 8 32 --lengths 8 64 256 --repeats 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generation_throughput import _LeanClient, _prompt  # noqa: E402

SETTINGS = {"batch": False, "continuous": True}


async def _client(base_url: str, sessions: int, rounds: int, lengths: list[int], tag: str) -> dict[str, Any]:
    """The sessions' requests; tokens received and each request's (length asked, seconds)."""
    latencies: list[tuple[int, float]] = []

    async def session(s: int) -> int:
        client, tokens = _LeanClient(base_url), 0
        for t in range(rounds):
            length = lengths[(s + t) % len(lengths)]
            body = {"model": "tiny", "messages": _prompt(s, t), "temperature": 1.0, "seed": 1000 * s + t,
                    "max_tokens": length}
            start = time.perf_counter()
            reply = await client.post("/chat/completions", body, f"{tag}-{s}")
            latencies.append((length, time.perf_counter() - start))
            tokens += len(reply["choices"][0]["token_ids"])
        await client.aclose()
        return tokens

    start = time.perf_counter()
    tokens = sum(await asyncio.gather(*(session(s) for s in range(sessions))))
    return {"tokens": tokens, "seconds": time.perf_counter() - start, "latencies": latencies}


def client(args: argparse.Namespace) -> None:
    """The client process: a warm-up round, then (after a line on stdin) the timed rounds as one JSON line."""
    asyncio.run(_client(args.client, args.sessions[0], 1, args.lengths, "warm"))
    print("ready", flush=True)
    sys.stdin.readline()
    print(json.dumps(asyncio.run(_client(args.client, args.sessions[0], args.rounds, args.lengths, "run"))),
          flush=True)


async def _serve(args: argparse.Namespace) -> dict[str, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.policy import LocalBackend, LocalConfig, PolicyServer
    from openenv_train.trace import CaptureStore

    model = AutoModelForCausalLM.from_pretrained(args.model).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    store = CaptureStore()
    backend = LocalBackend(model, tokenizer, model_id="tiny",
                           config=LocalConfig(engine="process", continuous=SETTINGS[args.setting]))
    async with PolicyServer(backend, capture=store) as server:
        for tag in ("warm", "run"):
            for s in range(args.sessions[0]):
                store.open_session(f"{tag}-{s}")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--client", server.base_url, "--sessions", str(args.sessions[0]), "--rounds",
            str(args.rounds), "--lengths", *map(str, args.lengths), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        assert (await proc.stdout.readline()).strip() == b"ready"
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
        result = json.loads(await proc.stdout.readline())
        await proc.wait()
    return result  # type: ignore[no-any-return]


def _run(setting: str, sessions: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", "--setting", setting, "--model", args.model, "--sessions",
           str(sessions), "--rounds", str(args.rounds), "--lengths", *map(str, args.lengths)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{setting} worker failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(args: argparse.Namespace) -> None:
    from openenv_train.policy import build_tiny_model

    with tempfile.TemporaryDirectory(prefix="mixed-bench-") as tmp:
        args.model = str(build_tiny_model(Path(tmp) / "tiny", seed=0))
        print(f"tiny model, T=1, lengths {args.lengths}, {args.rounds} requests per session; continuous / batch")
        print(f"{'sessions':>8} {'repeat':>6} {'setting':>10} {'tok/s':>7} "
              + " ".join(f"{f'{n} tok p50/p95 s':>18}" for n in args.lengths))
        for sessions in args.sessions:
            for repeat in range(args.repeats):
                order = list(SETTINGS) if repeat % 2 == 0 else list(reversed(SETTINGS))
                results = {setting: _run(setting, sessions, args) for setting in order}
                rates = {}
                for setting in SETTINGS:
                    res = results[setting]
                    rates[setting] = res["tokens"] / res["seconds"]
                    cells = []
                    for n in args.lengths:
                        seconds = [s for length, s in res["latencies"] if length == n]
                        cells.append(f"{_quantile(seconds, 0.5):.3f}/{_quantile(seconds, 0.95):.3f}")
                    print(f"{sessions:>8} {repeat:>6} {setting:>10} {rates[setting]:>7,.0f} "
                          + " ".join(f"{c:>18}" for c in cells))
                short = {setting: statistics.median(s for length, s in results[setting]["latencies"]
                                                    if length == min(args.lengths)) for setting in SETTINGS}
                print(f"{'':>8} {'':>6} {'ratio':>10} {rates['continuous'] / rates['batch']:>6.2f}x   shortest "
                      f"requests' p50 latency {short['batch'] / short['continuous']:.2f}x lower")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, nargs="+", default=[8, 32], help="concurrent chat sessions")
    parser.add_argument("--rounds", type=int, default=6, help="requests per session")
    parser.add_argument("--lengths", type=int, nargs="+", default=[8, 64, 256], help="new tokens the requests ask for")
    parser.add_argument("--repeats", type=int, default=2, help="measurements per concurrency")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--setting", choices=list(SETTINGS), help=argparse.SUPPRESS)
    parser.add_argument("--model", default="", help=argparse.SUPPRESS)
    parser.add_argument("--client", default="", help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.client:
        client(parsed)
    elif parsed.worker:
        print(json.dumps(asyncio.run(_serve(parsed))))
    else:
        main(parsed)
