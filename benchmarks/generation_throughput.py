"""Generation throughput: PolicyServer + LocalBackend at 1-128 concurrent chat sessions vs one batched
``model.generate`` call over the same prompts: the engine process, the in-thread engine (and optionally a baseline
commit), side by side in one run.

Each measurement runs in a fresh worker process (``--worker``): the tiny offline model (``build_tiny_model``,
seed 0), a ``PolicyServer`` over a ``LocalBackend`` with a capture store (as the rollout pool uses it), and
``--sessions`` concurrent chat sessions over HTTP, each sending ``--rounds`` requests one after another (T=1,
seeded, ``--max-tokens`` new tokens). The same worker then runs the same prompts through transformers'
``model.generate`` (one left-padded batch per round, T=1, top_k=0), the in-process path TRL uses without vLLM.
``--engines`` names the ``LocalConfig.engine`` settings measured (default: ``process`` and ``thread``, the decode
in this process as it was before the engine process; ``process:N``: N engine processes, ``LocalConfig.engines``;
``joining``: the engine process with continuous batching, ``LocalConfig(continuous=True)``);
``--baseline <commit>`` adds that commit's code (imported from ``git archive`` via PYTHONPATH, its default engine).
The workers of one concurrency run one after another, their order rotating per concurrency, so all see the same
machine.

The chat sessions' HTTP client runs in a process of its own (as rollout actors do; ``--same-process`` puts it in
the endpoint's event loop, where its CPU time counts against the endpoint's). Printed: completion tokens per wall
second and per CPU second of the endpoint's process plus its engine process (the latter is what a busy, shared
machine distorts least; the client's CPU seconds are in the JSON lines), the ratios, the batcher's wait (queue_s)
p50 at 1 session, and the machine's limit for this model: FLOPs per token (2 x parameters + attention) over a
measured large-matmul FLOP/s.

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


class _LeanClient:
    """One keep-alive HTTP/1.1 connection, requests written and answers read by hand: a few hundred microseconds
    of CPU a call, so the sessions' process does not become what is measured (httpx costs several milliseconds a
    call on this machine, and 128 sessions of it took more CPU than the endpoint they load)."""

    def __init__(self, base_url: str) -> None:
        from urllib.parse import urlsplit

        url = urlsplit(base_url)
        self.host, self.port, self.path = url.hostname or "127.0.0.1", url.port or 80, url.path.rstrip("/")
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict[str, Any], session: str) -> dict[str, Any]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        data = json.dumps(body).encode()
        self.writer.write(f"POST {self.path}{path} HTTP/1.1\r\nhost: {self.host}\r\ncontent-type: application/json\r\n"
                          f"authorization: Bearer {session}\r\ncontent-length: {len(data)}\r\n\r\n".encode() + data)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        length = next(int(h.split(":", 1)[1]) for h in head[1:] if h.lower().startswith("content-length:"))
        reply = json.loads(await self.reader.readexactly(length))
        if status != 200:
            raise RuntimeError(f"{status}: {reply}")
        return reply  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _sessions(base_url: str, sessions: int, rounds: int, max_tokens: int, tag: str,
                    open_session: Any = None, lean: bool = True) -> int:
    """``sessions`` concurrent chat sessions of ``rounds`` requests each; completion tokens received."""
    import httpx

    limits = httpx.Limits(max_connections=sessions + 4)
    async with httpx.AsyncClient(base_url=base_url, timeout=600, limits=limits) as client:
        async def session(s: int) -> int:
            sid = f"{tag}-{s}"
            if open_session is not None:
                open_session(sid)
            tokens = 0
            lean_client = _LeanClient(base_url) if lean else None
            for t in range(rounds):
                body = {"model": "tiny", "messages": _prompt(s, t), "temperature": 1.0, "seed": 1000 * s + t,
                        "max_tokens": max_tokens}
                if lean_client is not None:
                    reply = await lean_client.post("/chat/completions", body, sid)
                else:
                    answer = await client.post("/chat/completions", json=body, headers={"Authorization": f"Bearer {sid}"})
                    answer.raise_for_status()
                    reply = answer.json()
                tokens += len(reply["choices"][0]["token_ids"])
            if lean_client is not None:
                await lean_client.aclose()
            return tokens

        return sum(await asyncio.gather(*(session(s) for s in range(sessions))))


def client(args: argparse.Namespace) -> None:
    """The sessions in their own process, as rollout actors call the endpoint: a warm-up round, then (after a
    line on stdin) the timed rounds; prints tokens, wall and CPU seconds."""
    lean = args.http_client == "lean"
    asyncio.run(_sessions(args.client, args.sessions[0], 1, args.max_tokens, "warm", lean=lean))
    print("ready", flush=True)
    sys.stdin.readline()
    start, cpu = time.perf_counter(), time.process_time()
    tokens = asyncio.run(_sessions(args.client, args.sessions[0], args.rounds, args.max_tokens, "run", lean=lean))
    print(json.dumps({"tokens": tokens, "seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}),
          flush=True)


def _engine_cpu(backend: Any) -> float:
    """CPU seconds of the backend's engine processes so far (0 when it decodes in this process)."""
    import psutil

    engine = getattr(backend, "engine", None)
    pids = getattr(engine, "pids", [getattr(engine, "pid", None)])
    return float(sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in pids if pid is not None))


async def _endpoint(model: Any, tokenizer: Any, sessions: int, rounds: int, max_tokens: int,
                    separate: bool, engine: str, decode_threads: int | None = None,
                    http_client: str = "lean") -> dict[str, Any]:
    from openenv_train.policy import LocalBackend, LocalConfig, PolicyServer
    from openenv_train.trace import CaptureStore

    store = CaptureStore()
    kind, _, count = engine.partition(":")  # "process:2": two engine processes (LocalConfig.engines)
    joining = kind == "joining"  # the engine process with continuous batching
    config = LocalConfig(engine="process" if joining else kind, decode_threads=decode_threads,  # type: ignore[arg-type]
                         engines=int(count or 1), continuous=joining) if engine != "default" else None
    start = time.perf_counter()
    backend = LocalBackend(model, tokenizer, model_id="tiny", config=config)
    started_s = time.perf_counter() - start
    async with PolicyServer(backend, capture=store) as server:
        for tag in ("warm", "run"):
            for s in range(sessions):
                store.open_session(f"{tag}-{s}")
        if separate:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--client", server.base_url, "--sessions", str(sessions), "--rounds",
                str(rounds), "--max-tokens", str(max_tokens), "--http-client", http_client, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE)
            assert proc.stdin is not None and proc.stdout is not None
            assert (await proc.stdout.readline()).strip() == b"ready"
            cpu, engine_cpu = time.process_time(), _engine_cpu(backend)
            proc.stdin.write(b"go\n")
            await proc.stdin.drain()
            measured = json.loads(await proc.stdout.readline())
            cpu, engine_cpu = time.process_time() - cpu, _engine_cpu(backend) - engine_cpu
            await proc.wait()
            result = {**measured, "client_cpu_s": measured["cpu_s"], "cpu_s": cpu + engine_cpu,
                      "engine_cpu_s": engine_cpu}
        else:
            lean = http_client == "lean"
            await _sessions(server.base_url, sessions, 1, max_tokens, "warm", lean=lean)
            start, cpu, engine_cpu = time.perf_counter(), time.process_time(), _engine_cpu(backend)
            tokens = await _sessions(server.base_url, sessions, rounds, max_tokens, "run", lean=lean)
            engine_cpu = _engine_cpu(backend) - engine_cpu
            result = {"tokens": tokens, "seconds": time.perf_counter() - start,
                      "cpu_s": time.process_time() - cpu + engine_cpu, "engine_cpu_s": engine_cpu}
    turns = [t for s in range(sessions) for t in store.close_session(f"run-{s}").turns]
    queue = [t.metadata["timings"]["queue_s"] for t in turns]
    batches = {(t.metadata["timings"]["generate_s"], t.metadata["batch_rows"]) for t in turns}
    return {**result, "queue_p50_ms": 1e3 * statistics.median(queue), "backend_start_s": started_s,
            "batches": len(batches), "batch_rows_mean": statistics.mean(rows for _, rows in batches),
            "generate_s": sum(seconds for seconds, _ in batches),
            "engine": getattr(getattr(backend, "engine", None), "kind", "thread")}


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
                                 not args.same_process, args.engine, args.decode_threads, args.http_client))
    reference = _generate(model, tokenizer, args.sessions[0], args.rounds, args.max_tokens)
    print(json.dumps({"package": str(Path(openenv_train.__file__).parent), "endpoint": ours, "generate": reference,
                      "limit": _limit(model)}))


def _run_worker(impl: str, source: Path, sessions: int, args: argparse.Namespace) -> dict[str, Any]:
    rounds = args.rounds or max(2, 96 // sessions)
    env = {**os.environ, "PYTHONPATH": str(source) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    engine = "default" if impl == "baseline" else impl
    cmd = [sys.executable, __file__, "--worker", "--model", args.model, "--sessions", str(sessions),
           "--rounds", str(rounds), "--max-tokens", str(args.max_tokens), "--threads", str(args.threads),
           "--engine", engine, "--http-client", args.http_client, *(["--same-process"] if args.same_process else []),
           *(["--decode-threads", str(args.decode_threads)] if args.decode_threads is not None else [])]
    out = subprocess.run(cmd, env=env, cwd=source, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{impl} worker failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["package"].startswith(str(source)), (impl, result["package"], source)
    return result


def main(args: argparse.Namespace) -> None:
    from openenv_train.policy import build_tiny_model

    impls = list(args.engines) + (["baseline"] if args.baseline else [])
    with tempfile.TemporaryDirectory(prefix="gen-bench-") as tmp:
        args.model = args.model or str(build_tiny_model(Path(tmp) / "tiny", seed=0))
        sources = {impl: ROOT for impl in args.engines}
        if args.baseline:
            base = sources["baseline"] = Path(tmp) / "baseline"
            base.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "openenv_train"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        rows = []
        for i, sessions in enumerate(args.sessions):
            order = impls[i % len(impls):] + impls[: i % len(impls)]
            results = {impl: _run_worker(impl, sources[impl], sessions, args) for impl in order}
            rows.append((sessions, results))
            print(f"... {sessions} sessions done", file=sys.stderr)
            if args.json:
                with open(args.json, "a") as out:
                    out.write(json.dumps({"sessions": sessions, "results": results}) + "\n")
    limit = rows[0][1][impls[0]]["limit"]
    print(f"tiny model, {args.max_tokens} new tokens, T=1; torch threads {args.threads or 'default'}; chat client "
          f"({args.http_client}) {'in the endpoint process' if args.same_process else 'in its own process'}"
          f"{f'; baseline {args.baseline}' if args.baseline else ''}")
    print(f"machine limit: {limit['flops_per_token'] / 1e6:.2f} MFLOP/token, large matmul "
          f"{limit['matmul_flops'] / 1e9:.1f} GFLOP/s -> {limit['limit_tok_s']:,.0f} tok/s")
    first = impls[0]
    for unit, key in (("tokens per wall second", "seconds"),
                      ("tokens per CPU second of the endpoint's and its engine's processes (generate: its own)",
                       "cpu_s")):
        print(f"{unit}:")
        print(f"{'sessions':>8} " + " ".join(f"{impl:>9}" for impl in impls) + f" {'generate':>9} "
              + " ".join(f"{impl + '/gen':>12}" for impl in impls)
              + "".join(f" {first + '/' + impl:>16}" for impl in impls[1:]))
        for sessions, res in rows:
            rate = {k: v["endpoint"]["tokens"] / v["endpoint"][key] for k, v in res.items()}
            gen = statistics.mean(v["generate"]["tokens"] / v["generate"][key] for v in res.values())
            print(f"{sessions:>8} " + " ".join(f"{rate[impl]:>9,.0f}" for impl in impls) + f" {gen:>9,.0f} "
                  + " ".join(f"{rate[impl] / gen:>11.2f}x" for impl in impls)
                  + "".join(f" {rate[first] / rate[impl]:>15.2f}x" for impl in impls[1:]))
    for sessions, res in rows:
        if sessions == 1:
            print("batcher wait p50 at 1 session: " + ", ".join(
                f"{impl} {res[impl]['endpoint']['queue_p50_ms']:.2f} ms" for impl in impls))
    print("backend start (LocalBackend(...), first in its process): " + ", ".join(
        f"{impl} {statistics.median(r[impl]['endpoint'].get('backend_start_s', 0) for _, r in rows):.3f} s"
        for impl in impls))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 8, 32, 128], help="concurrent chat sessions")
    parser.add_argument("--rounds", type=int, default=0, help="requests per session (0: max(2, 96 // sessions))")
    parser.add_argument("--max-tokens", type=int, default=24, help="new tokens per request")
    parser.add_argument("--engines", nargs="+", default=["process", "thread"],
                        help="LocalConfig.engine settings to measure, side by side")
    parser.add_argument("--baseline", default="", help="also measure this commit's openenv_train (its default engine)")
    parser.add_argument("--json", default="", help="append each concurrency's raw results to this JSON-lines file")
    parser.add_argument("--http-client", choices=["lean", "httpx"], default="lean",
                        help="the sessions' HTTP client: a hand-written keep-alive one (default; cheap enough not to be "
                             "what is measured) or httpx (as before 2026-12-04)")
    parser.add_argument("--decode-threads", type=int, default=None,
                        help="LocalConfig.decode_threads of the engines measured (default: the backend's choice)")
    parser.add_argument("--engine", default="process", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--model", default="", help="a tiny model folder (default: build one)")
    parser.add_argument("--same-process", action="store_true",
                        help="run the chat sessions' HTTP client in the endpoint's process and event loop (default: "
                             "in a process of their own, as rollout actors are)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--client", default="", help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    client(parsed) if parsed.client else worker(parsed) if parsed.worker else main(parsed)
