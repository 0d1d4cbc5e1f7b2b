"""Where one model turn's time goes on our side of the policy endpoint: render, queue, generate, the rest.

``--sessions`` concurrent capture sessions each play ``--turns`` turns of a Wordle-like tool conversation
(the ``wordle_step`` tool schema in every request, a board-sized tool result after each reply) through a
capturing ``PolicyServer`` + ``LocalBackend`` (tiny model) over HTTP, as the pool's actors do. Each captured
turn's own timings split the endpoint's time: ``render_s`` (chat template + tokenization, continuation check),
``queue_s`` (batcher wait), ``generate_s`` (the decode loop) and the rest (HTTP body parsing, continuation
lookup, response JSON, turn capture). ``--profile`` adds a cProfile of the server thread's top functions::

    python benchmarks/policy_turn_cost.py [--sessions 8] [--turns 6] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = [{"type": "function", "function": {
    "name": "wordle_step", "description": "The player's reply; the guess is read from it (see the env's README).",
    "parameters": {"type": "object", "properties": {"message": {"type": "string", "nullable": True, "description":
                                                                "Free text holding the guess: its first [xxxxx]."}}}}}]
BOARD = ("[GAME] Player guessed [{w}]. Feedback:\nC R A N E\nX Y X G X\nYou have {n} guesses left.\n"
         "Legend: G green, Y yellow, X wrong.")
FIRST = ("Play Wordle with the wordle_step tool.\n[GAME] You are Playing Wordle.\nA secret 5-letter word has been "
         "chosen. You have 6 attempts to guess it.\nFor each guess, wrap your word in square brackets.")


async def _session(policy: Any, session: str, turns: int) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": FIRST}]
    for t in range(turns):
        reply = await policy.chat(messages, tools=TOOLS, session=session)
        messages.append({"role": "assistant", **reply.message})
        messages.append({"role": "tool", "name": "wordle_step", "content": BOARD.format(w="crane", n=5 - t)})


def run(sessions: int, turns: int, profile: bool, max_tokens: int) -> dict[str, Any]:
    """Play the sessions; per-turn medians of the captured timings, and the cProfile text when asked."""
    from openenv_train.policy import FixedSampling, LocalBackend, PolicyServer, build_tiny_model
    from openenv_train.pool import ChatPolicy
    from openenv_train.trace import CaptureStore

    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_model(Path(tmp) / "tiny")
        capture = CaptureStore()
        backend = FixedSampling(LocalBackend(str(path)), temperature=1.0, max_tokens=max_tokens)
        server = PolicyServer(backend, capture=capture, token="").run_in_thread()
        profiler = cProfile.Profile() if profile else None
        try:
            async def main() -> float:
                policy = ChatPolicy(server.base_url)
                names = [f"warm-{i}" for i in range(sessions)] + [f"s-{i}" for i in range(sessions)]
                for name in names:
                    capture.open_session(name)
                await asyncio.gather(*(_session(policy, n, 2) for n in names[:sessions]))  # warm up
                if profiler is not None:
                    server_loop_profile(server, profiler)
                start = time.perf_counter()
                await asyncio.gather(*(_session(policy, n, turns) for n in names[sessions:]))
                wall = time.perf_counter() - start
                await policy.aclose()
                return wall

            wall = asyncio.run(main())
            if profiler is not None:
                server_loop_profile(server, None)
            timed = [t.metadata["timings"] for i in range(sessions) for t in capture.get(f"s-{i}").turns]
        finally:
            server.close()
    parts = {k: statistics.median(t[k] for t in timed) * 1e3 for k in ("total_s", "render_s", "queue_s", "generate_s")}
    parts["rest_s"] = statistics.median(t["total_s"] - t["render_s"] - t["queue_s"] - t["generate_s"] for t in timed) * 1e3
    out: dict[str, Any] = {"sessions": sessions, "turns": turns, "turns_per_s": len(timed) / wall,
                           **{f"{k[:-2]}_ms_p50": round(v, 2) for k, v in parts.items()}}
    if profiler is not None:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(35)
        out["profile"] = text.getvalue()
    return out


def server_loop_profile(server: Any, profiler: cProfile.Profile | None) -> None:
    """Start (profiler given) or stop cProfile on the server's event-loop thread and its render thread pool."""
    import threading

    done = threading.Event()
    loop = server._loop  # the thread's loop: the endpoint's handlers and capture run there

    def toggle() -> None:
        if profiler is not None:
            server._profiler = profiler
            profiler.enable()
        else:
            server._profiler.disable()
        done.set()

    loop.call_soon_threadsafe(toggle)
    done.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=12)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    results = []
    for n in args.sessions:
        result = run(n, args.turns, args.profile, args.max_tokens)
        results.append(result)
        profile = result.pop("profile", None)
        print(json.dumps(result), flush=True)
        if profile:
            print(profile)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
