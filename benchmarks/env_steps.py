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

from openenv_train.client import GenericEnvClient
from openenv_train.envs import list_envs, load_env_class
from openenv_train.launch import LocalProcessProvider

WORDS = ["crane", "slate", "pious", "dough", "brick", "lymph"]
DIRECTIONS = ["up", "down", "left", "right"]
#: A move in each TextArena game's format (often not a good one: the game answers either way).
TEXTARENA_MOVES = {
    "sudoku": lambda r: f"[{r.randint(1, 9)} {r.randint(1, 9)} {r.randint(1, 9)}]",
    "minesweeper": lambda r: f"[reveal {r.randint(0, 7)} {r.randint(0, 7)}]",
    "mastermind": lambda r: "[" + " ".join(str(r.randint(1, 6)) for _ in range(4)) + "]",
    "tower_of_hanoi": lambda r: "[" + " ".join(r.sample("ABC", 2)) + "]",
    "lights_out": lambda r: f"[{r.randint(0, 4)} {r.randint(0, 4)}]",
    "countdown": lambda r: f"[0 1 {r.choice('+-*')}]",
    "peg_jump": lambda r: f"[{r.randint(1, 15)} {r.randint(1, 15)}]",
    "cryptarithm": lambda r: f"[{r.choice('SENDMORY')} {r.randint(0, 9)}]",
    "three_card_monte": lambda r: f"[{r.randint(0, 2)}]",
}
SEARCHES = ["integer square root", "heap push then pop", "close matches cutoff", "leap years", "shell escape"]
MOCK_CALLS = [("get_weather", {"city": "paris", "date": "2026-05-05"}),
              ("convert_currency", {"amount": 10, "from_currency": "USD", "to_currency": "EUR"}),
              ("get_stock_price", {"symbol": "ACME"})]


def _tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": name, "arguments": arguments}

#: Of the per-task browser/<task> entries, the default run measures these two (each drives a real Chromium).
BROWSER_TASKS = ("browser/click-button", "browser/login-user")


def next_action(env: str, obs: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A valid action for ``env`` given its last observation (a cheap scripted policy)."""
    if obs.get("legal_actions"):
        return {"action_id": rng.choice(obs["legal_actions"])}
    if env == "traffic":  # a random green phase of the intersection's
        return {"phase_id": rng.choice(obs["action_mask"])}
    if env == "chess":
        return {"move": rng.choice(obs["legal_moves"])}
    if env == "wordle":
        return {"message": f"[{rng.choice(WORDS)}]"}
    if env in ("maze", "grid_world", "snake"):
        return {"direction": rng.choice(DIRECTIONS)}
    if env in ("coding", "repl", "jupyter"):
        return {"code": "x = sum(range(100))\nprint(x)"}
    if env == "terminal":
        return {"keystrokes": "echo hi\n", "wait_s": 2.0}
    if env == "git":
        return {"command": "git status --short && git log --oneline -3"}
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
        return _tool("list_tables", {})
    if env == "doc_search":
        return _tool("search", {"query": rng.choice(SEARCHES)})
    if env.startswith("textarena/"):
        game = env.removeprefix("textarena/")
        move = TEXTARENA_MOVES.get(game)
        return {"message": move(rng) if move else f"[{rng.choice(DIRECTIONS)}]"}
    if env == "trading":
        return {"target_position": rng.choice([0.0, 0.5, 1.0])}
    if env == "dm_control":  # the default task, cartpole/balance: one actuator in [-1, 1]
        return {"values": [rng.uniform(-1.0, 1.0)]}
    if env == "trading_mcp":
        if rng.random() < 0.5:
            return _tool("place_order", {"side": rng.choice(["buy", "sell"]), "size": 1})
        return _tool("advance", {})
    if env == "calendar":
        return _tool("list_events", {"day": "2026-03-03"})
    if env == "mock_apis":
        return _tool(*rng.choice(MOCK_CALLS))
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
    """Steps/s with ``sessions`` concurrent clients of a running server.

    The clock starts once every session has connected and reset: on a loaded machine connecting 16
    sessions can take longer than a short measurement, which would otherwise read as zero steps.
    """
    counts = [0] * sessions
    ready = asyncio.Event()
    connected = 0
    window: dict[str, float] = {}

    async def session(index: int) -> None:
        nonlocal connected
        rng = random.Random(index)
        async with GenericEnvClient(url, reply_timeout_s=60) as client:
            seed = index * 1000
            obs = (await client.reset(seed=seed)).observation
            connected += 1
            if connected == sessions:
                window["start"] = time.perf_counter()
                window["deadline"] = window["start"] + duration
                ready.set()
            await ready.wait()
            while time.perf_counter() < window["deadline"]:
                result = await client.step(next_action(env, obs, rng))
                counts[index] += 1
                obs = result.observation
                if result.done:
                    seed += 1
                    obs = (await client.reset(seed=seed)).observation

    await asyncio.gather(*(session(i) for i in range(sessions)))
    return sum(counts) / (time.perf_counter() - window["start"])


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
    print(f"{'env':<28}{'direct':>12}{'ws-1':>10}{'ws-16':>10}{'ws-16/direct':>14}")
    for name in names:
        row = asyncio.run(measure(name, args.duration))
        results[name] = row
        ratio = row["ws-16"] / row["direct"] if row["direct"] else float("nan")
        print(f"{name:<28}{row['direct']:>12.0f}{row['ws-1']:>10.0f}{row['ws-16']:>10.0f}{ratio:>14.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
