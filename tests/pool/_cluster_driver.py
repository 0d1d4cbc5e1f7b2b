"""A driver for tests/pool/test_pool_cluster.py: one RolloutPool on the loopback cluster, as a user's script.

``python -m tests.pool._cluster_driver '{"gcs": ..., "out": ..., "episodes": N, ...}'`` joins the cluster at
``gcs`` (the test's environment carries the token), runs ``episodes`` Wordle episodes on 2 actors that need
the worker nodes' ``rollout`` resource, spread over them, and writes their rows to ``out``. With ``kill``
(``{node_id: raylet_pid}``) it kills the raylet of actor 0's node, by pid, once ``kill_after`` rows are
written; from then on that node's policy never answers, so the episodes in flight there can only end by the
node's death and a retry elsewhere (without the hold, a busy machine let the dying node's actor finish them).
With ``pause`` it prints the actors once they are up and waits for a line on stdin. Prints one JSON
line after :data:`MARK`: the actors before and after, the rows' episode ids, the pool's metrics.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from typing import Any

import ray

from openenv_train.pool import RolloutPool, make_groups
from openenv_train.trace import TraceWriter
from tests.pool import _support

#: Starts the driver's own stdout lines: Ray forwards worker and raylet log lines to the same stream.
MARK = "@@report "


def main(args: dict[str, Any]) -> dict[str, Any]:
    ray.cloudpickle.register_pickle_by_value(_support)
    held = tempfile.mkdtemp(prefix="held")  # not in ``out``: that folder holds only the run's traces
    policy = _support.held_on_marked_nodes(held) if args.get("kill") else _support.solver
    report: dict[str, Any] = {}
    with TraceWriter(args["out"]) as writer, RolloutPool(
            "wordle", policy, num_actors=2, sessions_per_actor=4, ray_address=args["gcs"], writer=writer,
            actor_resources={"rollout": 1}, actor_scheduling="spread", max_retries=6, retry_backoff_s=0.5,
            run_id="cluster").start(timeout_s=600) as pool:  # a slow machine: actors and servers start late
        report["driver_node"] = ray.get_runtime_context().get_node_id()
        report["before"] = ray.get([a.ready.remote() for a in pool.actors], timeout=600)
        if args.get("pause"):  # the test looks at the running cluster, then says go
            print(MARK + json.dumps({"before": report["before"]}), flush=True)
            sys.stdin.readline()
        rows, killed_at = [], None
        for row in pool.as_completed(make_groups(range(args["episodes"] // 2), num_generations=2)):
            rows.append(row)
            if args.get("kill") and killed_at is None and len(rows) >= args["kill_after"]:
                node = report["before"][0]["node_id"]
                victim = args["kill"][node]
                open(os.path.join(held, node), "w").close()
                os.kill(victim, signal.SIGKILL)
                killed_at = time.monotonic()
                report["killed"] = {"raylet_pid": victim, "after_rows": len(rows)}
        if killed_at is not None:
            report["recovered_s"] = round(time.monotonic() - killed_at, 1)
            report["after"] = [_support.actor_ready(ray, a, timeout_s=600) for a in pool.actors]
        report["metrics"] = pool.metrics.summary()
    report["rows"] = [{"episode_id": r.episode_id, "ok": r.ok, "url": r.env.url,
                       "error": r.error.type if r.error else None} for r in rows]
    return report


if __name__ == "__main__":
    print(MARK + json.dumps(main(json.loads(sys.argv[1]))), flush=True)
