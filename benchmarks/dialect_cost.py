"""Cost per call of each harness dialect against the plain chat-completions route.

The same call (a system prompt, a user message, one tool; the same scripted reply) is sent as a chat completion,
an Anthropic Messages request, an OpenAI Responses request and a Google generateContent request to one
PolicyServer over a ``ScriptedBackend`` (the tiny model's tokenizer renders the prompt and reply, so every call is
captured with token ids, but no model runs: the route's own cost is not hidden behind decoding). Each of
``--clients`` clients (1 and 32 by default) sends ``--calls`` calls in its own capture session; the dialects take
turns within each round (the order rotating) and the median round is kept. Every dialect must render the same prompt
and completion token ids as the chat route (checked). Each round starts from a full garbage collection: at 32 clients
the captured turns bring a full collection (about 0.25 s, mostly the imported libraries' objects: some 5% of a
round) every round or two, and without the reset it fell in whichever dialect's rounds the allocation count reached
it. Prints ms per call (wall clock; ``--cpu``: the process's CPU time, steadier on a shared machine) and each
dialect's ratio to the chat route, whole answers and streamed ones (target: within 5%).

Run (from the repository root)::

    python benchmarks/dialect_cost.py
    python benchmarks/dialect_cost.py --clients 1 32 --calls 50 --rounds 5
    python benchmarks/dialect_cost.py --clients 32 --rounds 9 --cpu
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from openenv_train.policy import PolicyServer, ScriptedBackend, build_tiny_model
from openenv_train.trace import CaptureStore

SYSTEM, QUESTION = "You are a careful calculator.", "What is 2 plus 2?"
PARAMS = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}


def requests(stream: bool) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each dialect's (path, body) for the same call."""
    google = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return {
        "chat": ("/v1/chat/completions", {
            "model": "m", "max_tokens": 64, "stream": stream,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
            "tools": [{"type": "function", "function": {"name": "add", "parameters": PARAMS}}]}),
        "anthropic": ("/v1/messages", {
            "model": "m", "max_tokens": 64, "stream": stream, "system": SYSTEM,
            "messages": [{"role": "user", "content": QUESTION}], "tools": [{"name": "add", "input_schema": PARAMS}]}),
        "responses": ("/v1/responses", {
            "model": "m", "max_output_tokens": 64, "stream": stream, "instructions": SYSTEM, "input": QUESTION,
            "store": False, "tools": [{"type": "function", "name": "add", "parameters": PARAMS}]}),
        "google": (f"/v1beta/models/m:{google}", {
            "systemInstruction": {"parts": [{"text": SYSTEM}]}, "contents": [{"role": "user", "parts": [{"text": QUESTION}]}],
            "generationConfig": {"maxOutputTokens": 64},
            "tools": [{"functionDeclarations": [{"name": "add", "parameters": PARAMS}]}]}),
    }


async def _round(client: httpx.AsyncClient, store: CaptureStore, path: str, body: dict[str, Any], *, clients: int,
                 calls: int, tag: str, cpu: bool = False) -> tuple[float, tuple[int, ...]]:
    """Seconds per call of ``clients`` clients sending ``calls`` calls each, every call captured (``cpu``: the
    process's CPU seconds), and the token ids the first call captured (prompt, then completion)."""
    sessions = [f"{tag}-{i}" for i in range(clients)]
    for session in sessions:
        store.open_session(session)
    gc.collect()  # each round starts from the same collector state: see the module's docstring
    clock = time.process_time if cpu else time.perf_counter

    async def one_client(session: str) -> None:
        for _ in range(calls):
            reply = await client.post(path, json=body, headers={"authorization": f"Bearer {session}"})
            reply.raise_for_status()

    start = clock()
    await asyncio.gather(*(one_client(s) for s in sessions))
    elapsed = clock() - start
    tokens: tuple[int, ...] = ()
    for session in sessions:
        turns = store.close_session(session).turns
        assert len(turns) == calls, "every call must be captured"
        tokens = tuple(turns[0].prompt_token_ids) + tuple(turns[0].completion_token_ids)
    return elapsed / (clients * calls), tokens


async def measure(tokenizer: Any, *, clients: list[int], calls: int, rounds: int,
                  cpu: bool = False) -> dict[tuple[str, bool, int], float]:
    """Median seconds per call by (dialect, streamed, clients)."""
    store = CaptureStore()
    backend = ScriptedBackend(lambda messages: "The answer is 4.", tokenizer)
    times: dict[tuple[str, bool, int], list[float]] = {}
    rendered: dict[str, tuple[int, ...]] = {}
    async with PolicyServer(backend, capture=store) as server:
        limits = httpx.Limits(max_connections=max(clients) + 4)
        async with httpx.AsyncClient(base_url=server.url, timeout=120, limits=limits) as client:
            for stream in (False, True):
                dialects = list(requests(stream).items())
                for n in clients:
                    for k, (_, (path, body)) in enumerate(dialects):  # warm-up
                        await _round(client, store, path, body, clients=n, calls=2, tag=f"warm-{stream}-{n}-{k}")
                    for r in range(rounds):
                        order = dialects[r % len(dialects):] + dialects[:r % len(dialects)]
                        for name, (path, body) in order:
                            seconds, tokens = await _round(client, store, path, body, clients=n, calls=calls,
                                                           tag=f"{name}-{stream}-{n}-{r}", cpu=cpu)
                            times.setdefault((name, stream, n), []).append(seconds)
                            assert tokens and rendered.setdefault("chat", tokens) == tokens, \
                                f"{name} rendered other token ids than the chat route: the comparison is not fair"
    return {key: statistics.median(values) for key, values in times.items()}


def table(result: dict[tuple[str, bool, int], float], clients: list[int]) -> str:
    head = "| dialect | answer | " + " | ".join(f"{n} client{'s' * (n > 1)}: ms/call | ratio" for n in clients) + " |"
    rows = [head, "|---|---|" + "---:|---:|" * len(clients)]
    for stream in (False, True):
        for name in ("chat", "anthropic", "responses", "google"):
            cells = []
            for n in clients:
                ms, base = result[(name, stream, n)] * 1000, result[("chat", stream, n)] * 1000
                cells.append(f"{ms:.2f} | {ms / base:.3f}")
            rows.append(f"| {name} | {'streamed' if stream else 'whole'} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 32], help="concurrent clients")
    parser.add_argument("--calls", type=int, default=50, help="calls per client per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each dialect (median taken)")
    parser.add_argument("--cpu", action="store_true", help="time the process's CPU seconds instead of the wall clock")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = AutoTokenizer.from_pretrained(build_tiny_model(Path(tmp) / "tiny"))
    result = asyncio.run(measure(tokenizer, clients=args.clients, calls=args.calls, rounds=args.rounds, cpu=args.cpu))
    clock = "CPU ms" if args.cpu else "ms"
    print(f"ScriptedBackend, every call captured; {args.calls} calls per client, median of {args.rounds} rounds; "
          f"{clock}/call")
    print(table(result, args.clients))


if __name__ == "__main__":
    main()
