"""A driver for tests/pool/test_pool_private_ray.py: episodes through RolloutPools, one per line it reads.

Each stdin line is a ``ray_address`` (empty: none); for each, one Wordle episode runs through a pool with that
address and a JSON line tells the Ray it ran on: ``{"gcs", "ok", "connected_after_close"}``.
"""

from __future__ import annotations

import json
import sys

import ray

from openenv_train.envs.wordle.solver import WordleSolver
from openenv_train.pool import RolloutPool, make_groups


def run(address: str | None) -> dict[str, object]:
    pool = RolloutPool(env="wordle", policy=WordleSolver().act, num_actors=1, ray_address=address, ray_num_cpus=1)
    with pool:
        rows = pool.run(make_groups(range(1), num_generations=1))
        gcs = ray.get_runtime_context().gcs_address
    connected = ray.is_initialized()
    if connected:  # the driver leaves a joined cluster as a user would: disconnecting stops nothing of it
        ray.shutdown()
    return {"gcs": gcs, "ok": [r.ok for r in rows], "connected_after_close": connected}


def main() -> None:
    for line in sys.stdin:
        print(json.dumps(run(line.strip() or None)), flush=True)


if __name__ == "__main__":
    main()
