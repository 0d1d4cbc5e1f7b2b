"""Steps/s of ``openenv-train serve counter --workers 2`` against one worker, under the same load, one run.

Each round starts a fresh server (``--workers 1`` is the plain single-process server), runs the load generator
of ``ws_throughput.py`` (a separate process: asyncio + uvloop, raw WebSocket client) with ``--sessions``
concurrent sessions stepping for ``--duration`` seconds, then stops the server. Rounds alternate 1, 2, 1, 2...
so slow drifts of a shared machine hit both; the report gives the median steps/s of each and their ratio.
The generator is one process: on a machine with few cores it competes with the workers for them (say so
with the figures).

Run (from the repository root)::

    python benchmarks/serve_workers.py                   # 3 rounds each, 64 sessions, 5 s
    python benchmarks/serve_workers.py --rounds 5 --sessions 128 --generators 2
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ws_throughput as wt  # noqa: E402  (the shared load generator)


def _serve(workers: int, folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    ready = folder / f"ready-{workers}-{time.monotonic_ns()}"
    command = [sys.executable, "-m", "openenv_train.cli", "serve", "counter", "--port", "0", "--workers", str(workers),
               "--max-sessions", str(wt.MAX_SESSIONS), "--idle-timeout", "0", "--ready-file", str(ready)]
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL, cwd=wt.REPO)
    deadline = time.monotonic() + 120
    while not (ready.exists() and ready.read_text()):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"serve --workers {workers} did not start ({process.returncode})")
        time.sleep(0.05)
    return process, int(ready.read_text().rsplit(":", 1)[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def one_round(workers: int, sessions: int, generators: int, plan: wt.Plan, folder: Path) -> dict[str, Any]:
    """Start a server with ``workers`` workers, load it from ``generators`` processes, stop it."""
    process, port = _serve(workers, folder)
    try:
        spec = {"host": "127.0.0.1", "port": port, "pid": process.pid, "env": "counter", "phase": "throughput",
                "plan": asdict(plan)}
        with concurrent.futures.ThreadPoolExecutor(generators) as pool:
            results = list(pool.map(lambda _: wt.run_generator(spec, timeout_s=plan.duration_s + 120), range(generators)))
    finally:
        _stop(process)
    runs = [r["throughput"][0] for r in results]
    return {"workers": workers, "steps_per_s": round(sum(r["steps_per_s"] for r in runs), 1),
            "failed_sessions": sum(r["failed_sessions"] for r in runs),
            "p50_ms": statistics.median(r["p50_ms"] for r in runs if r["p50_ms"] is not None),
            "p99_ms": max(r["p99_ms"] for r in runs if r["p99_ms"] is not None)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="Rounds of each (alternating).")
    parser.add_argument("--sessions", type=int, default=64, help="Concurrent sessions per generator process.")
    parser.add_argument("--generators", type=int, default=1, help="Load generator processes.")
    parser.add_argument("--duration", type=float, default=5.0, help="Seconds of stepping per round.")
    parser.add_argument("--json", type=Path, help="Also write the results here.")
    args = parser.parse_args()
    plan = wt.Plan(duration_s=args.duration, concurrency=(args.sessions,))
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="serve-workers-") as folder:
        for i in range(args.rounds):
            for workers in (1, 2):
                result = one_round(workers, args.sessions, args.generators, plan, Path(folder))
                print(f"round {i + 1} workers={workers}: {result['steps_per_s']:.0f} steps/s "
                      f"(p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, failed {result['failed_sessions']})",
                      flush=True)
                rounds.append(result)
    median = {w: statistics.median(r["steps_per_s"] for r in rounds if r["workers"] == w) for w in (1, 2)}
    summary = {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "sessions": args.sessions,
               "generators": args.generators, "duration_s": args.duration, "rounds": rounds,
               "median_steps_per_s": median, "ratio_2_vs_1": round(median[2] / median[1], 3)}
    print(f"median steps/s: 1 worker {median[1]:.0f}, 2 workers {median[2]:.0f}: ratio {summary['ratio_2_vs_1']}x "
          f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
