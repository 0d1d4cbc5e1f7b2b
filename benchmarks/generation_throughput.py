"""Generation throughput: PolicyServer + LocalBackend at 1-128 concurrent chat sessions vs one batched
``model.generate`` call over the same prompts, for this code and a baseline commit, side by side in one run.

Each measurement runs in a fresh worker process (``--worker``): the tiny offline model (``build_tiny_model``,
seed 0), a ``PolicyServer`` over a ``LocalBackend`` with a capture store (as the rollout pool uses it), and
``--sessions`` concurrent chat sessions over HTTP, each sending ``--rounds`` requests one after another (T=1,
seeded, ``--max-tokens`` new tokens). The same worker then runs the same prompts through transformers'
``model.generate`` (one left-padded batch per round, T=1, top_k=0), the in-process path TRL uses without vLLM.
The baseline worker imports the package from ``git archive <--baseline>`` (via PYTHONPATH); baseline and
current alternate per concurrency so both see the same machine.

The chat sessions' HTTP client runs in a process of its own (as rollout actors do; ``--same-process`` puts it in
the endpoint's event loop, where its CPU time counts against the endpoint's). Printed: completion tokens per wall
second and per CPU second of the endpoint's process (the latter is what a busy, shared machine distorts least;
the client's CPU seconds are in the JSON lines), the ratios, the batcher's wait (queue_s) p50 at 1 session, and the
machine's limit for this model: FLOPs per token (2 x parameters + attention) over a measured large-matmul FLOP/s.

Run (from the repository root, a git checkout)::

    python benchmarks/generation_throughput.py
    python benchmarks/generation_throughput.py --sessions 1 8 32 128 --max-tokens 24 --baseline 47e1688
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _prompt(session: int, turn: int) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": f"Session {session}, question {turn}: what is the next move in the game?"}]


async def _sessions(base_url: str, sessions: int, rounds: int, max_tokens: int, tag: str,
                    open_session: Any = None) -> int:
    """``sessions`` concurrent chat sessions of ``rounds`` requests each; completion tokens received."""
    import httpx

    limits = httpx.Limits(max_connections=sessions + 4)
    async with httpx.AsyncClient(base_url=base_url, timeout=600, limits=limits) as client:
        async def session(s: int) -> int:
            sid = f"{tag}-{s}"
            if open_session is not None:
                open_session(sid)
            tokens = 0
            for t in range(rounds):
                body = {"model": "tiny", "messages": _prompt(s, t), "temperature": 1.0, "seed": 1000 * s + t,
                        "max_tokens": max_tokens}
                reply = await client.post("/chat/completions", json=body, headers={"Authorization": f"Bearer {sid}"})
                reply.raise_for_status()
                tokens += len(reply.json()["choices"][0]["token_ids"])
            return tokens

        return sum(await asyncio.gather(*(session(s) for s in range(sessions))))


def client(args: argparse.Namespace) -> None:
    """The sessions in their own process, as rollout actors call the endpoint: a warm-up round, then (after a
    line on stdin) the timed rounds; prints tokens, wall and CPU seconds."""
    asyncio.run(_sessions(args.client, args.sessions[0], 1, args.max_tokens, "warm"))
    print("ready", flush=True)
    sys.stdin.readline()
    start, cpu = time.perf_counter(), time.process_time()
    tokens = asyncio.run(_sessions(args.client, args.sessions[0], args.rounds, args.max_tokens, "run"))
    print(json.dumps({"tokens": tokens, "seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}),
          flush=True)


async def _endpoint(model: Any, tokenizer: Any, sessions: int, rounds: int, max_tokens: int,
                    separate: bool) -> dict[str, Any]:
    from openenv_train.policy import LocalBackend, PolicyServer
    from openenv_train.trace import CaptureStore

    store = CaptureStore()
    async with PolicyServer(LocalBackend(model, tokenizer, model_id="tiny"), capture=store) as server:
        for tag in ("warm", "run"):
            for s in range(sessions):
                store.open_session(f"{tag}-{s}")
        if separate:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--client", server.base_url, "--sessions", str(sessions), "--rounds",
                str(rounds), "--max-tokens", str(max_tokens), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE)
            assert proc.stdin is not None and proc.stdout is not None
            assert (await proc.stdout.readline()).strip() == b"ready"
            cpu = time.process_time()
            proc.stdin.write(b"go\n")
            await proc.stdin.drain()
            measured = json.loads(await proc.stdout.readline())
            cpu = time.process_time() - cpu
            await proc.wait()
            result = {**measured, "client_cpu_s": measured["cpu_s"], "cpu_s": cpu}
        else:
            await _sessions(server.base_url, sessions, 1, max_tokens, "warm")
            start, cpu = time.perf_counter(), time.process_time()
            tokens = await _sessions(server.base_url, sessions, rounds, max_tokens, "run")
            result = {"tokens": tokens, "seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}
    queue = [t.metadata["timings"]["queue_s"] for s in range(sessions)
             for t in store.close_session(f"run-{s}").turns]
    return {**result, "queue_p50_ms": 1e3 * statistics.median(queue)}


def _generate(model: Any, tokenizer: Any, sessions: int, rounds: int, max_tokens: int) -> dict[str, Any]:
    import torch

    tokenizer.padding_side = "left"

    def batch(turn: int) -> Any:
        texts = [tokenizer.apply_chat_template(_prompt(s, turn), add_generation_prompt=True, tokenize=False)
                 for s in range(sessions)]
        return tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)

    def run(inputs: Any) -> int:
        with torch.inference_mode():
            out = model.generate(**inputs, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                                 max_new_tokens=max_tokens, pad_token_id=tokenizer.pad_token_id)
        new = out[:, inputs["input_ids"].shape[1]:]
        eos = set(model.generation_config.eos_token_id if isinstance(model.generation_config.eos_token_id, list)
                  else [model.generation_config.eos_token_id])
        total = 0
        for row in new.tolist():  # tokens through the first end token, as the endpoint counts them
            ends = [i for i, t in enumerate(row) if t in eos]
            total += ends[0] + 1 if ends else len(row)
        return total

    torch.manual_seed(0)
    run(batch(0))  # warm-up
    start, cpu = time.perf_counter(), time.process_time()
    tokens = sum(run(batch(t)) for t in range(rounds))
    return {"tokens": tokens, "seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def _limit(model: Any) -> dict[str, float]:
    import torch

    params = sum(p.numel() for name, p in model.named_parameters() if "embed_tokens" not in name)
    if getattr(model.config, "tie_word_embeddings", False):
        params += model.get_output_embeddings().weight.numel()
    cfg = model.config
    attention = 4 * cfg.num_hidden_layers * cfg.hidden_size * 64  # ~64 tokens of context, QK^T and AV
    flops = 2 * params + attention
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    for _ in range(3):
        a @ b
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        a @ b
        runs.append(time.perf_counter() - start)
    peak = 2 * 1024**3 / min(runs)
    return {"flops_per_token": flops, "matmul_flops": peak, "limit_tok_s": peak / flops}


def worker(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import openenv_train

    if args.threads:
        torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.model).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    ours = asyncio.run(_endpoint(model, tokenizer, args.sessions[0], args.rounds, args.max_tokens,
                                 not args.same_process))
    reference = _generate(model, tokenizer, args.sessions[0], args.rounds, args.max_tokens)
    print(json.dumps({"package": str(Path(openenv_train.__file__).parent), "endpoint": ours, "generate": reference,
                      "limit": _limit(model)}))


def _run_worker(impl: str, source: Path, sessions: int, args: argparse.Namespace) -> dict[str, Any]:
    rounds = args.rounds or max(2, 96 // sessions)
    env = {**os.environ, "PYTHONPATH": str(source) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, __file__, "--worker", "--model", args.model, "--sessions", str(sessions),
           "--rounds", str(rounds), "--max-tokens", str(args.max_tokens), "--threads", str(args.threads),
           *(["--same-process"] if args.same_process else [])]
    out = subprocess.run(cmd, env=env, cwd=source, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{impl} worker failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["package"].startswith(str(source)), (impl, result["package"], source)
    return result


def main(args: argparse.Namespace) -> None:
    from openenv_train.policy import build_tiny_model

    with tempfile.TemporaryDirectory(prefix="gen-bench-") as tmp:
        args.model = args.model or str(build_tiny_model(Path(tmp) / "tiny", seed=0))
        base = Path(tmp) / "baseline"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "openenv_train"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        rows = []
        for i, sessions in enumerate(args.sessions):
            order = [("before", base), ("after", ROOT)]
            results = dict((impl, _run_worker(impl, src, sessions, args)) for impl, src in
                           (order if i % 2 == 0 else order[::-1]))
            rows.append((sessions, results))
            print(f"... {sessions} sessions done", file=sys.stderr)
    limit = rows[0][1]["after"]["limit"]
    print(f"tiny model, {args.max_tokens} new tokens, T=1; baseline {args.baseline}; torch threads "
          f"{args.threads or 'default'}; chat client {'in the endpoint process' if args.same_process else 'in its own process'}")
    print(f"machine limit: {limit['flops_per_token'] / 1e6:.2f} MFLOP/token, large matmul "
          f"{limit['matmul_flops'] / 1e9:.1f} GFLOP/s -> {limit['limit_tok_s']:,.0f} tok/s")
    for unit, key in (("tokens per wall second", "seconds"),
                      ("tokens per CPU second of the endpoint's process (generate: its own)", "cpu_s")):
        print(f"{unit}:")
        print(f"{'sessions':>8} {'before':>9} {'after':>9} {'generate':>9} {'after/before':>12} "
              f"{'after/generate':>14} {'before/generate':>15}")
        for sessions, res in rows:
            rate = {k: v["endpoint"]["tokens"] / v["endpoint"][key] for k, v in res.items()}
            gen = statistics.mean(v["generate"]["tokens"] / v["generate"][key] for v in res.values())
            print(f"{sessions:>8} {rate['before']:>9,.0f} {rate['after']:>9,.0f} {gen:>9,.0f} "
                  f"{rate['after'] / rate['before']:>11.2f}x {rate['after'] / gen:>13.2f}x "
                  f"{rate['before'] / gen:>14.2f}x")
    for sessions, res in rows:
        if sessions == 1:
            print(f"batcher wait p50 at 1 session: before {res['before']['endpoint']['queue_p50_ms']:.2f} ms, "
                  f"after {res['after']['endpoint']['queue_p50_ms']:.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 8, 32, 128], help="concurrent chat sessions")
    parser.add_argument("--rounds", type=int, default=0, help="requests per session (0: max(2, 96 // sessions))")
    parser.add_argument("--max-tokens", type=int, default=24, help="new tokens per request")
    parser.add_argument("--baseline", default="47e1688", help="commit whose openenv_train is 'before'")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--model", default="", help="a tiny model folder (default: build one)")
    parser.add_argument("--same-process", action="store_true",
                        help="run the chat sessions' HTTP client in the endpoint's process and event loop (default: "
                             "in a process of their own, as rollout actors are)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--client", default="", help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    client(parsed) if parsed.client else worker(parsed) if parsed.worker else main(parsed)
