"""Run the test suite (or part of it) on a saturated machine, N times, and print the pass/fail counts of each run.

A CPU hog (one busy-looping process per core, started here and stopped here by pid) keeps every core busy while
pytest runs, as on a user's laptop doing other work or a shared CI runner. A test that fails here and passes on
an idle machine depends on timing: fix the test (limits scaled for it, faults triggered by progress the child
reports, waits on conditions with generous deadlines), never weaken it.

Usage::

    python benchmarks/busy_suite.py                       # the whole suite, 3 times
    python benchmarks/busy_suite.py -n 3 --timing         # the known timing-sensitive tests, 3 times
    python benchmarks/busy_suite.py -n 1 -- tests/harbor  # a subset: everything after -- goes to pytest
    python benchmarks/busy_suite.py --logs out -- --durations=30  # the whole suite; full outputs in out/
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Tests that once failed (or could) on a busy machine: wall/CPU limits, kills at moments, waits on children.
TIMING = [
    "tests/envs/test_coding.py::test_hidden_tests_are_out_of_reach_of_runs_and_of_the_graded_code",
    "tests/harbor/test_writer_kill.py",
    "tests/pool/test_pool_private_ray.py",
]
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")


def start_hog(cores: int) -> list[subprocess.Popen[bytes]]:
    """One process per core, each spinning forever."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]


def stop_hog(hogs: list[subprocess.Popen[bytes]]) -> None:
    """Kill each hog process by its pid and reap it."""
    for hog in hogs:
        if hog.poll() is None:
            os.kill(hog.pid, signal.SIGKILL)
        hog.wait(30)


def counts(summary: str) -> dict[str, int]:
    """``{"passed": N, "failed": N, ...}`` from pytest's last summary line."""
    found: dict[str, int] = {}
    for number, what in _COUNT.findall(summary):
        found["errors" if what.startswith("error") else what] = int(number)
    return found


def run_once(pytest_args: list[str], log: Path | None = None) -> tuple[dict[str, int], float, str]:
    """One pytest run: its counts, its wall time and the tail of its output (all of it written to ``log`` as it
    comes, so a long run can be followed with ``tail -f``)."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        out = log or Path(scratch) / "pytest.txt"
        with out.open("w") as sink:
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *pytest_args], cwd=ROOT,
                           stdout=sink, stderr=subprocess.STDOUT)
        lines = [line for line in out.read_text(errors="replace").splitlines() if line.strip()]
    summary = next((line for line in reversed(lines) if _COUNT.search(line) and " in " in line), "")
    return counts(summary), time.monotonic() - start, "\n".join(lines[-30:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--runs", type=int, default=3, help="how many times to run the tests")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="hog processes (default: one per core)")
    parser.add_argument("--timing", action="store_true", help="run only the known timing-sensitive tests")
    parser.add_argument("--logs", type=Path, help="write each run's whole output to LOGS/run-N.txt")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --); default the whole suite")
    args = parser.parse_args(argv)
    pytest_args = args.pytest_args or (TIMING if args.timing else [])
    # SIGTERM ends the script through its finally: the hog and the running pytest are stopped, not left spinning
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    hogs = start_hog(args.cores)
    print(f"hog: {args.cores} spinning processes, pids {[h.pid for h in hogs]}", flush=True)
    failed_runs = 0
    try:
        for run in range(1, args.runs + 1):
            log = None
            if args.logs is not None:
                args.logs.mkdir(parents=True, exist_ok=True)
                log = args.logs / f"run-{run}.txt"
            found, wall_s, tail = run_once(pytest_args, log)
            bad = found.get("failed", 0) + found.get("errors", 0)
            failed_runs += bad > 0 or not found
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"run {run}/{args.runs}: {found or 'no summary'} in {wall_s:.0f} s (load average at the end: {load})",
                  flush=True)
            if bad or not found:
                print(tail, flush=True)
    finally:
        stop_hog(hogs)
    print(f"{args.runs - failed_runs}/{args.runs} runs without a failure under the hog")
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main())
