"""A user's own Ray does not break the pool: with no address it runs on a private cluster, and joins one only when told.

A real ``ray start --head`` (on 127.0.0.1, started and stopped by this test by process group, never ``ray stop``)
writes ``ray_current_cluster`` in its temp folder, which a bare ``ray.init()`` would join; once the head is gone the
file is stale. The pools run in driver processes with that temp folder and no RAY_ADDRESS, as a user's job would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pool._ray_head import RAY, cluster_file, ray_env, ray_head, short_temp_dir

pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[default]==2.60.0')")
pytestmark = pytest.mark.usefixtures("no_shared_ray")  # its `ray start` head owns the machine's Ray alone
DRIVER = Path(__file__).with_name("_ray_driver.py")
ROOT = Path(__file__).resolve().parents[2]


class Driver:
    """A driver process running one pool episode per address it is sent (see _ray_driver.py)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([sys.executable, str(DRIVER)], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, address: str = "") -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(address + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the driver died running a pool with ray_address={address!r} (its stderr is above)"
        return dict(json.loads(line))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(120)
        finally:
            self.process.kill()


@pytest.fixture
def temp_dir() -> Iterator[Path]:
    import shutil

    path = short_temp_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.timeout(1500)  # a head, two private clusters and a join, each slow to start on a busy machine
def test_pool_runs_on_a_private_ray_beside_a_users_cluster_and_after_it_died(temp_dir: Path) -> None:
    if RAY is None:
        pytest.skip("the ray CLI is not installed")
    private = Driver(ray_env(temp_dir))  # no loopback switch of its own: the pool keeps its cluster on 127.0.0.1
    try:
        with ray_head(temp_dir) as head:
            mine = private.run()
            assert mine["ok"] == [True] and mine["gcs"] != head.address
            assert mine["gcs"].startswith("127.0.0.1:") and not mine["connected_after_close"]
            assert head.alive(), "the pool stopped the user's cluster"
            # Joined only when told; closing the pool leaves the user's cluster running.
            joiner = Driver(head.env)
            try:
                joined = joiner.run("auto")
            finally:
                joiner.close()
            assert joined["ok"] == [True] and joined["gcs"] == head.address and joined["connected_after_close"]
            assert head.alive(), "leaving a joined cluster stopped it"
        assert cluster_file(temp_dir).read_text().strip() == head.address  # stale now: its head is gone
        again = private.run()
        assert again["ok"] == [True] and again["gcs"] not in (head.address, mine["gcs"])
    finally:
        private.close()
