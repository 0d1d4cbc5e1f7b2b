"""Rollout scaling on Wordle with the tiny model: the Ray pool at 1, 2, 4 actors x N sessions per actor vs the
same episodes in one asyncio loop in the driver (no Ray).

Every mode plays the same games (secrets in order, the recipe's agent: compact chat, ``guided_choice`` of the valid
guesses not yet played, greedy, 8 tokens per turn) against our Wordle server, and every model call goes to one
capturing ``PolicyServer`` + ``LocalBackend`` over the tiny character-level model in this process, as in the
recipe. The ``asyncio`` mode runs a :class:`~openenv_train.pool.RolloutActor` in the driver's own event loop with
``actors x sessions`` concurrent episodes and the same capture sessions, so the difference is Ray (actor
processes, one env server each, Ray calls) and nothing else. Reports episodes/s per mode and the ratio to asyncio
at the same concurrency, measured one after another in one run, with the load average::

    python benchmarks/rollout_scaling.py [--actors 1 2 4] [--sessions 8 16 32 64] [--waves 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _model(path: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.policy import build_tiny_model

    if not (path / "config.json").exists():  # the recipe's default tiny model (ModelSection's sizes)
        build_tiny_model(path, seed=0, tokenizer="char", hidden_size=128, layers=4, heads=4, kv_heads=4,
                         intermediate_size=384, init_range=0.02, max_context=512)
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def _agent() -> Any:
    from openenv_train.recipes.grpo_wordle import WordleAgent  # the recipe's own agent loop: the workload measured

    return WordleAgent(constrained=True)


def _specs(words: list[str], prefix: str) -> list[Any]:
    from openenv_train.pool import EpisodeSpec

    return [EpisodeSpec(f"{prefix}-{i:04d}", {"task": w}, i, f"{prefix}-{i:04d}") for i, w in enumerate(words)]


def _pool(server: Any, capture: Any, words: list[str], actors: int, sessions: int, timeout_s: float
          ) -> tuple[float, int]:
    from openenv_train.pool import PoolConfig, RolloutPool

    config = PoolConfig(num_actors=actors, sessions_per_actor=sessions, max_turns=10, max_retries=0,
                        episode_timeout_s=timeout_s, run_id=f"scale-{actors}x{sessions}")
    with RolloutPool("wordle", server.base_url, agent=_agent(), config=config, capture=capture).start() as pool:
        pool.run(_specs(words[: actors], "warm"))
        start = time.perf_counter()
        rows = pool.run(_specs(words, f"p{actors}x{sessions}"), ordered=False)
        seconds = time.perf_counter() - start
    failed = [r.error for r in rows if not r.ok]
    assert not failed, failed[:3]
    return seconds, sum(len(r.trace.turns) for r in rows if r.trace)


async def _asyncio(server: Any, capture: Any, words: list[str], concurrency: int, timeout_s: float
                   ) -> tuple[float, int]:
    from openenv_train.pool import PoolConfig, RolloutActor

    config = PoolConfig(num_actors=1, sessions_per_actor=concurrency, max_turns=10, max_retries=0,
                        episode_timeout_s=timeout_s)
    actor = RolloutActor("wordle", server.base_url, _agent(), config)
    await actor.ready()
    gate = asyncio.Semaphore(concurrency)
    turns = 0

    async def one(spec: Any) -> None:
        nonlocal turns
        async with gate:
            session = f"a{concurrency}-{spec.episode_id}"
            capture.open_session(session)
            outcome = await actor.run(spec, session)
            trace = capture.close_session(session)
            assert outcome["status"] == "ok", outcome.get("error")
            turns += len(trace.turns)

    try:
        await asyncio.gather(*(one(s) for s in _specs(words[:1], "warm")))
        turns = 0
        start = time.perf_counter()
        await asyncio.gather(*(one(s) for s in _specs(words, f"a{concurrency}")))
        return time.perf_counter() - start, turns
    finally:
        await actor.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--sessions", type=int, nargs="+", default=[8, 16, 32, 64], help="sessions per actor")
    parser.add_argument("--waves", type=int, default=2, help="episodes per mode = waves x actors x sessions")
    parser.add_argument("--model", help="tiny model folder (built there if missing; default a temp folder)")
    parser.add_argument("--episode-timeout", type=float, default=1800.0,
                        help="seconds per episode (the pool's 300 s default is too short on a starved machine)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from openenv_train.envs.wordle import answers
    from openenv_train.policy import LocalBackend, PolicyServer
    from openenv_train.trace import CaptureStore

    model, tokenizer = _model(Path(args.model or tempfile.mkdtemp(prefix="scale-tiny-")))
    capture = CaptureStore()
    server = PolicyServer(LocalBackend(model, tokenizer), capture=capture, token="").run_in_thread()
    secrets = sorted(answers())
    results: list[dict[str, Any]] = []
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()}", flush=True)
    try:
        for sessions in args.sessions:
            for actors in args.actors:
                words = [secrets[(i * 7) % len(secrets)] for i in range(args.waves * actors * sessions)]
                load = os.getloadavg()[0]
                base_s, base_turns = asyncio.run(_asyncio(server, capture, words, actors * sessions,
                                                             args.episode_timeout))
                pool_s, pool_turns = _pool(server, capture, words, actors, sessions, args.episode_timeout)
                row = {"actors": actors, "sessions_per_actor": sessions, "episodes": len(words),
                       "asyncio_eps": len(words) / base_s, "pool_eps": len(words) / pool_s,
                       "pool/asyncio": base_s / pool_s, "turns": [base_turns, pool_turns], "load1": load}
                results.append(row)
                print(json.dumps(row), flush=True)
    finally:
        server.close()
    print(f"\n{'actors':>6} {'sess/actor':>10} {'episodes':>8} {'asyncio ep/s':>12} {'pool ep/s':>10} "
          f"{'pool/asyncio':>12} {'load':>5}")
    for r in results:
        print(f"{r['actors']:>6} {r['sessions_per_actor']:>10} {r['episodes']:>8} {r['asyncio_eps']:>12.2f} "
              f"{r['pool_eps']:>10.2f} {r['pool/asyncio']:>12.2f} {r['load1']:>5.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
