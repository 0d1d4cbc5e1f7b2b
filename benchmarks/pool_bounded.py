"""Episodes/s and driver peak RSS for 10,000 counter episodes: the driver writes every row vs actors write shards.

Both modes run the same bounded driver (``max_queued=256``; specs from a generator, rows streamed from
``as_completed`` and dropped), the same counter env (a server per actor), the same greedy scripted policy and a
TraceWriter in a fresh folder; the only difference is ``PoolConfig(write=...)``. Each run is a fresh Python
process (its own local Ray), so the peak RSS (``ru_maxrss``) is that mode's alone; runs alternate
driver, actors, driver, actors... and the report gives the median of each and the ratios::

    python benchmarks/pool_bounded.py                       # 2 rounds, 10,000 episodes, 2 actors x 16 sessions
    python benchmarks/pool_bounded.py --episodes 2000 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def greedy(observation: Any) -> dict[str, int]:
    """Step straight to the target, at most 3 at a time."""
    return {"delta": max(1, min(3, observation["target"] - observation["value"]))}


def one_run(mode: str, episodes: int, actors: int, sessions: int, per_call: int) -> dict[str, Any]:
    """Play ``episodes`` in this process with ``write=mode``; throughput, rows written and peak RSS."""
    from openenv_train.pool import EpisodeSpec, RolloutPool, make_groups
    from openenv_train.trace import TraceWriter

    def specs() -> Iterator[EpisodeSpec]:
        for i in range(episodes):
            yield EpisodeSpec(f"ep-{i}", seed=i)

    with tempfile.TemporaryDirectory(prefix="pool-bounded-") as folder:
        with TraceWriter(folder) as writer, RolloutPool(
                "counter", greedy, num_actors=actors, sessions_per_actor=sessions, episodes_per_call=per_call,
                max_retries=0, max_queued=256, write=mode, writer=writer) as pool:  # type: ignore[arg-type]
            warm = 0
            for _ in pool.as_completed(make_groups(range(actors * sessions), prefix="warm")):
                warm += 1
            start, n, ok = time.perf_counter(), 0, 0
            for row in pool.as_completed(specs()):
                n += 1
                ok += row.ok
            seconds = time.perf_counter() - start
        from openenv_train.trace import read_traces

        written = len(read_traces(folder))
    return {"mode": mode, "episodes": n, "ok": ok, "written": written - warm, "seconds": round(seconds, 2),
            "episodes_per_s": round(n / seconds, 1),
            "driver_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--per-call", type=int, default=8, help="episodes_per_call")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--one", choices=["driver", "actors"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one, args.episodes, args.actors, args.sessions, args.per_call)), flush=True)
        return
    runs = []
    for i in range(args.rounds):
        for mode in ("driver", "actors"):
            cmd = [sys.executable, __file__, "--one", mode, "--episodes", str(args.episodes), "--actors",
                   str(args.actors), "--sessions", str(args.sessions), "--per-call", str(args.per_call)]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=3600)
            if proc.returncode != 0:
                raise SystemExit(f"{mode} run failed ({proc.returncode}): {proc.stderr[-3000:]}")
            run = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"round {i + 1} {mode}: {run}", flush=True)
            runs.append(run)
    med = {m: {k: statistics.median(r[k] for r in runs if r["mode"] == m) for k in ("episodes_per_s", "driver_peak_rss_mib")}
           for m in ("driver", "actors")}
    summary = {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "episodes": args.episodes, "runs": runs,
               "median": med,
               "ratio_actors_vs_driver": {k: round(med["actors"][k] / med["driver"][k], 3) for k in med["driver"]}}
    print(json.dumps(summary["median"]), "ratios actors/driver:", summary["ratio_actors_vs_driver"])
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
