"""Attempts per minute of each real agent CLI on the ``hello-world`` Harbor task, and the proxy's share of an attempt.

Each pinned agent (``openenv-train agents install all`` first) runs ``--attempts`` attempts of hello-world one after
another in the OS sandbox, its calls going through the capture proxy (a PolicyServer over a ``ScriptedBackend``
that answers with the agent's own shell tool, then ends; the tiny model's tokenizer renders every call, so each is
captured with token ids, but no model runs). Per agent it prints attempts per minute (of the whole attempt:
sandbox, agent, verifier), the median attempt and agent seconds, the calls per attempt, and the proxy's share of
the agent's wall time (the server-side seconds of its calls over the agent phase's seconds). Attempts that do not
score 1 are counted and reported.

Run (from the repository root)::

    python benchmarks/agent_attempts.py                       # every installed agent, 5 attempts each
    python benchmarks/agent_attempts.py --agents codex claude-code --attempts 2
    python benchmarks/agent_attempts.py --env docker      # in containers (.ci/docker-setup.sh start first)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from openenv_train.harbor import (
    AGENT_SPECS,
    HarborError,
    HarborRunConfig,
    InstalledAgent,
    run_task,
    shell_script_reply,
)
from openenv_train.policy import PolicyServer, ScriptedBackend, build_tiny_model
from openenv_train.trace import CaptureStore

HELLO = Path(__file__).resolve().parent.parent / "openenv_train" / "harbor" / "examples" / "hello-world"
WRITE = "echo 'Hello, world!' > hello.txt"


async def measure(agent: str, attempts: int, tokenizer: Any, config: HarborRunConfig) -> dict[str, Any]:
    """Run ``attempts`` attempts of ``agent`` and return its figures."""
    store = CaptureStore()
    totals, agents, shares, calls, failed = [], [], [], [], 0
    async with PolicyServer(ScriptedBackend(shell_script_reply(agent, WRITE), tokenizer), capture=store) as server:
        worker = InstalledAgent(agent, server.url)
        started = time.perf_counter()
        for k in range(attempts):
            row = await run_task(HELLO, worker, attempt=k, capture=store, config=config)
            failed += row.reward != 1.0
            proxy = sum(float(t.metadata.get("timings", {}).get("total_s", 0.0)) for t in row.trace.turns)
            totals.append(row.timings["total"])
            agents.append(row.timings.get("agent", 0.0))
            shares.append(proxy / max(row.timings.get("agent", 0.0), 1e-9))
            calls.append(len(row.trace.turns))
        wall = time.perf_counter() - started
    return {"agent": agent, "per_min": 60.0 * attempts / wall, "attempt_s": statistics.median(totals),
            "agent_s": statistics.median(agents), "calls": statistics.median(calls),
            "proxy_share": statistics.median(shares), "failed": failed}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", nargs="+", default=list(AGENT_SPECS), choices=list(AGENT_SPECS))
    parser.add_argument("--attempts", type=int, default=5, help="Attempts per agent (one at a time).")
    parser.add_argument("--env", choices=["sandbox", "docker"], default="sandbox", help="Where the task runs.")
    parser.add_argument("--docker-base-image", default="openenv-train/base:py3",
                        help="With --env docker: the local image task images build FROM (offline engines).")
    args = parser.parse_args()
    config = HarborRunConfig(backend=args.env, docker_base_image=args.docker_base_image if args.env == "docker" else None)
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory() as folder:
        tokenizer = AutoTokenizer.from_pretrained(build_tiny_model(Path(folder) / "tiny", seed=0))
    print(f"{'agent':<16}{'attempts/min':>13}{'attempt s':>11}{'agent s':>9}{'calls':>7}{'proxy share':>13}"
          f"{'failed':>8}")
    for agent in args.agents:
        try:
            InstalledAgent(agent, "http://127.0.0.1").check()
        except HarborError as exc:
            print(f"{agent:<16}skipped: {exc}")
            continue
        r = await measure(agent, args.attempts, tokenizer, config)
        print(f"{r['agent']:<16}{r['per_min']:>13.1f}{r['attempt_s']:>11.2f}{r['agent_s']:>9.2f}{r['calls']:>7g}"
              f"{r['proxy_share']:>12.1%}{r['failed']:>8d}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
