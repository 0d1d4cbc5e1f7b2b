"""The capture path's own cost per model turn, without a model: build, record and look up captured turns.

What the policy endpoint does around every call of a capture session, on its event loop: find the turn the
request continues (``CaptureStore.get``), build the new turn (``build_turn``) and record it (validated again).
``--sessions`` episodes of ``--turns`` turns each, prompts of ``--prompt-tokens`` tokens growing 40 per turn (a
tool schema and a Wordle board per turn, as in the recipe). Prints microseconds per captured turn; compare two
trees with ``farm-bench -- python benchmarks/capture_path.py --vs 'env PYTHONPATH=OLD_TREE python ...'``::

    python benchmarks/capture_path.py [--sessions 32] [--turns 6] [--prompt-tokens 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import time

from openenv_train.trace import CaptureStore, build_turn


def play(sessions: int, turns: int, prompt_tokens: int, rng: random.Random) -> int:
    """Capture every turn of the sessions as the endpoint does; returns the turns recorded."""
    store = CaptureStore()
    tools = [{"type": "function", "function": {"name": "wordle_step", "parameters": {"type": "object"}}}]
    recorded = 0
    for s in range(sessions):
        store.open_session(f"s{s}")
    for t in range(turns):
        for s in range(sessions):
            session = f"s{s}"
            previous = store.get(session).turns  # the continuation lookup reads the session's turns
            prompt = (list(previous[-1].prompt_token_ids) + list(previous[-1].completion_token_ids)
                      if previous else [rng.randrange(1000) for _ in range(prompt_tokens)])
            prompt += [rng.randrange(1000) for _ in range(40)]
            completion = [rng.randrange(1000) for _ in range(12)]
            turn = build_turn(messages=[{"role": "user", "content": "board " * 40}] * (2 * t + 1), tools=tools,
                              message={"role": "assistant", "content": "[crane]"}, finish_reason="stop",
                              prompt_token_ids=prompt, completion_token_ids=completion,
                              logprobs=[-rng.random() for _ in completion], node_id=f"{session}-{t}")
            store.record(session, turn)
            recorded += 1
    return recorded


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(0)
    play(2, 2, args.prompt_tokens, rng)  # warm up (pydantic builds its validators on first use)
    start, n = time.perf_counter(), 0
    for _ in range(args.repeat):
        n += play(args.sessions, args.turns, args.prompt_tokens, rng)
    print(f"{(time.perf_counter() - start) / n * 1e6:.0f} us per captured turn ({n} turns)")


if __name__ == "__main__":
    main()
