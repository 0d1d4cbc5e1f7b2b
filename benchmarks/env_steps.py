"""Steps per second of every catalog env over the WebSocket (1 and 16 sessions), beside direct calls.

For each env the same scripted policy (first or random legal move, a fixed guess, a tool call...)
plays episodes back to back, resetting when one ends. ``direct`` calls the Environment object in this
process (no server, no wire): the reference that shows what serving costs. ``ws-1`` and ``ws-16`` drive
a real ``openenv-train serve ENV`` subprocess with 1 and 16 concurrent ``GenericEnvClient`` sessions.
The ratio column is ws-16 / direct.

Run (from the repository root)::

    python benchmarks/env_steps.py                 # every env, 3 s per measurement (~3 min on 2 cores)
    python benchmarks/env_steps.py --env wordle --env chess --duration 5
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import random
import re
import time
from typing import Any

from pydantic import TypeAdapter

from openenv_train.client import GenericEnvClient, LocalProcessProvider
from openenv_train.envs import list_envs, load_env_class

WORDS = ["crane", "slate", "pious", "dough", "brick", "lymph"]
DIRECTIONS = ["up", "down", "left", "right"]
#: Of the per-task browser/<task> entries, the default run measures these two (each drives a real Chromium).
BROWSER_TASKS = ("browser/click-button", "browser/login-user")


def next_action(env: str, obs: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A valid action for ``env`` given its last observation (a cheap scripted policy)."""
    if obs.get("legal_actions"):
        return {"action_id": rng.choice(obs["legal_actions"])}
    if env == "chess":
        return {"move": rng.choice(obs["legal_moves"])}
    if env == "wordle":
        return {"message": f"[{rng.choice(WORDS)}]"}
    if env in ("maze", "grid_world", "snake"):
        return {"direction": rng.choice(DIRECTIONS)}
    if env in ("coding", "repl"):
        return {"code": "x = sum(range(100))\nprint(x)"}
    if env == "reasoning_gym":
        return {"answer": "1"}
    if env == "counter":
        return {"delta": 1}
    if env == "echo":
        return {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}}
    if env.startswith("browser"):  # click a random element of the page, or type into it
        bids = re.findall(r"\[(\d+)\] (\w+)", obs.get("axtree_txt", ""))
        if not bids:
            return {"action_str": "noop()"}
        bid, role = rng.choice(bids)
        return {"action_str": f"fill('{bid}', 'abc')" if role == "textbox" else f"click('{bid}')"}
    if env == "sql_tools":
        return {"type": "call_tool", "tool_name": "list_tables", "arguments": {}}
    return {}


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def direct(env: str, duration: float) -> float:
    """Steps/s calling the env object in this process."""
    env_cls = load_env_class(env)
    adapter = TypeAdapter(env_cls.action_type)
    instance, rng, steps, seed = env_cls(), random.Random(0), 0, 0
    obs = (await _maybe(instance.reset(seed=seed))).model_dump()
    deadline = time.perf_counter() + duration
    start = time.perf_counter()
    while time.perf_counter() < deadline:
        result = await _maybe(instance.step(adapter.validate_python(next_action(env, obs, rng))))
        steps += 1
        obs = result.model_dump()
        if result.done:
            seed += 1
            obs = (await _maybe(instance.reset(seed=seed))).model_dump()
    await _maybe(instance.close())
    return steps / (time.perf_counter() - start)


async def over_ws(env: str, url: str, sessions: int, duration: float) -> float:
    """Steps/s with ``sessions`` concurrent clients of a running server."""
    counts = [0] * sessions

    async def session(index: int) -> None:
        rng = random.Random(index)
        async with GenericEnvClient(url, reply_timeout_s=60) as client:
            seed = index * 1000
            obs = (await client.reset(seed=seed)).observation
            while time.perf_counter() < deadline:
                result = await client.step(next_action(env, obs, rng))
                counts[index] += 1
                obs = result.observation
                if result.done:
                    seed += 1
                    obs = (await client.reset(seed=seed)).observation

    start = time.perf_counter()
    deadline = start + duration
    await asyncio.gather(*(session(i) for i in range(sessions)))
    return sum(counts) / (time.perf_counter() - start)


async def measure(env: str, duration: float) -> dict[str, float]:
    row = {"direct": await direct(env, duration)}
    provider = LocalProcessProvider(env, max_sessions=64)
    endpoint = await provider.start()
    try:
        async with GenericEnvClient(endpoint.base_url, reply_timeout_s=120) as warm:
            await warm.reset(seed=0)  # untimed: a first reset may start heavy parts (the browser env's Chromium)
        for sessions in (1, 16):
            row[f"ws-{sessions}"] = await over_ws(env, endpoint.base_url, sessions, duration)
    finally:
        await provider.stop()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", help="env name (repeatable); default: every catalog env")
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per measurement")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    names = args.env or [spec.name for spec in list_envs()
                         if not spec.name.startswith("browser/") or spec.name in BROWSER_TASKS]
    results: dict[str, dict[str, float]] = {}
    print(f"{'env':<14}{'direct':>12}{'ws-1':>10}{'ws-16':>10}{'ws-16/direct':>14}")
    for name in names:
        row = asyncio.run(measure(name, args.duration))
        results[name] = row
        ratio = row["ws-16"] / row["direct"] if row["direct"] else float("nan")
        print(f"{name:<14}{row['direct']:>12.0f}{row['ws-1']:>10.0f}{row['ws-16']:>10.0f}{ratio:>14.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
