"""Episodes/s of one mixed pool over catch, tic_tac_toe and blackjack against the same envs in three separate pools.

Both modes play the same episodes (``--episodes`` spread over the three envs by equal weight, seeds from the envs'
train splits) with the same scripted policy (each move the first legal action) and the same actors per env
(``--actors`` x ``--sessions``, a server each); the only difference is the driver:

- ``mixed``: one :class:`~openenv_train.pool.MixedPool`, one ``run`` over the whole batch (the envs play side by
  side, as a GRPO step over a mix does);
- ``separate``: three :class:`~openenv_train.pool.RolloutPool` s, one per env, each running its share in turn (what
  training on the three envs needed before the mix).

Each run is a fresh Python process (its own local Ray); runs alternate mixed, separate, mixed, ... and the report
gives each mode's median and their ratio::

    python benchmarks/mixed_pool.py                        # 3 rounds, 3,000 episodes, 1 actor x 16 sessions per env
    python benchmarks/mixed_pool.py --episodes 300 --rounds 1   # a short check
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENVS = ("catch", "tic_tac_toe", "blackjack")


def first_legal(observation: Any) -> dict[str, int]:
    """The first legal action: a fixed policy, so both modes play the very same games."""
    return {"action_id": observation["legal_actions"][0]}


def one_run(mode: str, episodes: int, actors: int, sessions: int) -> dict[str, Any]:
    """Play the batch in this process with the ``mode`` driver; throughput and rows."""
    from openenv_train.pool import EpisodeSpec, MixedPool, MixEnv, RolloutPool, weighted_schedule

    schedule = weighted_schedule(dict.fromkeys(ENVS, 1.0), episodes)
    specs = [EpisodeSpec(f"ep-{i}", {"env": env}, i) for i, env in enumerate(schedule)]
    warm = [EpisodeSpec(f"warm-{env}-{k}", {"env": env}, k) for env in ENVS for k in range(actors * sessions)]
    options = {"num_actors": actors, "sessions_per_actor": sessions, "max_retries": 0, "show_progress": False}
    if mode == "mixed":
        with MixedPool([MixEnv(env, env) for env in ENVS], first_legal, **options) as pool:
            pool.run(warm)
            start = time.perf_counter()
            rows = pool.run(specs)
            seconds = time.perf_counter() - start
    else:
        pools = {env: RolloutPool(env, first_legal, **options).start() for env in ENVS}
        try:
            for env, pool in pools.items():
                pool.run([s for s in warm if s.task["env"] == env])
            start = time.perf_counter()
            rows = []
            for env, pool in pools.items():
                rows += pool.run([EpisodeSpec(s.episode_id, {}, s.seed) for s in specs if s.task["env"] == env])
            seconds = time.perf_counter() - start
        finally:
            for pool in reversed(list(pools.values())):
                pool.close()
    return {"mode": mode, "episodes": len(rows), "ok": sum(r.ok for r in rows), "seconds": round(seconds, 2),
            "episodes_per_s": round(len(rows) / seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--actors", type=int, default=1, help="actors per env")
    parser.add_argument("--sessions", type=int, default=16, help="sessions per actor")
    parser.add_argument("--json", type=Path, help="also write the runs and medians here")
    parser.add_argument("--one", choices=["mixed", "separate"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one, args.episodes, args.actors, args.sessions)), flush=True)
        return
    runs = []
    for i in range(args.rounds):
        for mode in ("mixed", "separate"):
            cmd = [sys.executable, __file__, "--one", mode, "--episodes", str(args.episodes), "--actors",
                   str(args.actors), "--sessions", str(args.sessions)]
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{mode} run failed:\n{done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            if result["ok"] != args.episodes:
                raise SystemExit(f"{mode} run: {result['ok']} of {args.episodes} episodes ok: {result}")
            runs.append(result)
            print(f"round {i + 1} {mode:>8}: {result['episodes_per_s']:8.1f} episodes/s ({result['seconds']} s)",
                  flush=True)
    median = {mode: statistics.median(r["episodes_per_s"] for r in runs if r["mode"] == mode)
              for mode in ("mixed", "separate")}
    print(f"\n{args.episodes} episodes over {', '.join(ENVS)}, {args.actors} actor(s) x {args.sessions} sessions per "
          f"env, median of {args.rounds}:")
    print("| driver | episodes/s |\n|---|---|")
    print(f"| one mixed pool | {median['mixed']:.1f} |\n| three separate pools, in turn | {median['separate']:.1f} |")
    print(f"mixed / separate: {median['mixed'] / median['separate']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "median": median, "settings": vars(args) | {"json": None}},
                                        indent=2, default=str))


if __name__ == "__main__":
    main()
