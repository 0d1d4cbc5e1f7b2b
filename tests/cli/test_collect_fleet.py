"""``openenv-train collect URL1,URL2`` and ``collect fleet.txt``: a fleet of two real servers, each episode once."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from .conftest import ROOT, cli, stop, wait_healthy, wait_ready


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[list[str]]:
    """Two ``openenv-train serve counter`` processes on free loopback ports: their URLs."""
    servers: list[subprocess.Popen[bytes]] = []
    urls = []
    try:
        for name in ("a", "b"):
            ready = tmp_path / f"{name}.ready"
            servers.append(subprocess.Popen(
                [sys.executable, "-m", "openenv_train.cli", "serve", "counter", "--port", "0", "--ready-file",
                 str(ready), "--parent-pid", str(os.getpid())], env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for name, server in zip(("a", "b"), servers, strict=True):
            url = wait_ready(tmp_path / f"{name}.ready", server, timeout_s=120).strip()
            wait_healthy(url, timeout_s=60)
            urls.append(url)
        yield urls
    finally:
        for server in servers:
            stop(server)


def _rows(run: Path) -> list[dict[str, object]]:
    return pq.read_table(sorted((run / "traces").glob("*.parquet"))).to_pylist()


@pytest.mark.timeout(600)
def test_collect_over_a_fleet_given_inline_or_as_a_file(fleet: list[str], tmp_path: Path) -> None:
    listing = tmp_path / "fleet.txt"
    listing.write_text(f"# the fleet\n{fleet[0]}\n\n{fleet[1]}  # second\n")
    for name, env in (("inline", ",".join(fleet)), ("file", str(listing))):
        done = cli("collect", env, "--policy", "random", "-n", "8", "--num-generations", "2", "-o", name,
                   "--num-actors", "2", "--sessions-per-actor", "2", "--max-turns", "3", cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "wrote 16 rows" in done.stdout
        rows = _rows(tmp_path / name)
        ids = collections.Counter(str(row["episode_id"]) for row in rows)
        assert sorted(ids) == sorted(f"g{i}-{k}" for i in range(8) for k in range(2)) and set(ids.values()) == {1}
        assert all(row["ok"] for row in rows)
        by_server = collections.Counter(str(row["env"]["url"]) for row in rows)  # type: ignore[index]
        assert set(by_server) == set(fleet), by_server  # sessions went to both servers
        servers = json.loads((tmp_path / name / "summary.json").read_text())["metrics"]["servers"]
        assert {url: s["episodes"] for url, s in servers.items()} == dict(by_server)
        assert all(s["up"] and s["outages"] == 0 for s in servers.values())
