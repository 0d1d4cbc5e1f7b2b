"""Env server fleets on a real local Ray: real server processes, one killed by pid mid-run and started again."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_train.launch import LocalProcessProvider
from openenv_train.pool import Fleet, PoolConfig, RolloutPool, fleet_urls, make_groups, published_capacity
from openenv_train.trace import TraceWriter, read_traces
from tests.pool import _support

TOKEN = "fleet-token-7f3a"


class Server:
    """``openenv-train serve wordle`` as a real process; ``restart()`` brings it back at the same URL."""

    def __init__(self) -> None:
        self.provider = LocalProcessProvider("wordle", token=TOKEN)
        self.url = ""

    def start(self) -> Server:
        self.url = asyncio.run(self.provider.start()).base_url
        return self

    def restart(self) -> None:
        assert asyncio.run(self.provider.restart()).base_url == self.url

    def kill(self) -> None:
        self.provider.kill()

    def stop(self) -> None:
        asyncio.run(self.provider.stop())


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    fleet = [Server().start(), Server().start()]
    try:
        yield fleet
    finally:
        for server in fleet:
            server.stop()


def _wait(condition: Any, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_fleet_survives_a_killed_server_and_uses_it_again_when_back(ray_local: Any, servers: list[Server],
                                                                    tmp_path: Path) -> None:
    a, b = servers
    specs = make_groups(range(20), num_generations=2)
    loads: list[int] = []
    with TraceWriter(tmp_path / "run") as writer, RolloutPool(
            [a.url, b.url], _support.slow_solver, num_actors=2, sessions_per_actor=4, server_capacity=3,
            max_retries=3, env_token=TOKEN, writer=writer) as pool:
        assert pool.fleet is not None
        fleet = pool.fleet
        stream = pool.as_completed(specs)
        rows = [next(stream) for _ in range(3)]
        assert all(s.load + s.episodes >= 1 for s in fleet.servers), fleet.summary()  # balanced over both
        a.kill()  # mid-run: episodes are in flight on it
        while fleet.by_url[a.url].up:
            rows.append(next(stream))
            loads += [s.load for s in fleet.servers]
        on_a = fleet.by_url[a.url].episodes
        a.restart()  # the same URL comes back; the probe puts it in rotation again
        _wait(lambda: fleet.by_url[a.url].up, "the restarted server back in rotation")
        for row in stream:
            rows.append(row)
            loads += [s.load for s in fleet.servers]
        per_server = pool.metrics.servers
    stored = read_traces(tmp_path / "run")
    assert len(rows) == 40 and collections.Counter(r.episode_id for r in stored).most_common(1)[0][1] == 1
    assert len(stored) == 40 and all(r.ok and r.reward == 1.0 for r in rows), [r.error for r in rows if not r.ok]
    assert per_server[a.url]["outages"] >= 1 and per_server[a.url]["failed_attempts"] >= 1
    assert per_server[a.url]["episodes"] > on_a  # used again after it came back
    assert per_server[a.url]["episodes"] + per_server[b.url]["episodes"] == 40
    assert max(loads) <= 3  # per-server capacity
    assert any(r.timings["attempts"] > 1 for r in rows)  # its broken episodes were retried (on b)
    assert {r.env.url for r in rows} == {a.url, b.url} and {r.env.name for r in rows} == {"wordle"}


def test_a_fleet_without_its_token_is_refused_with_the_fix(ray_local: Any, servers: list[Server]) -> None:
    pool = RolloutPool(f"{servers[0].url},{servers[1].url}", _support.solver, env_token="wrong")
    with pytest.raises(PermissionError, match="env_token"):
        pool.start()


def test_fleet_urls_and_capacity_parsing(tmp_path: Path) -> None:
    listing = tmp_path / "fleet.txt"
    listing.write_text("# two servers\nhttp://h1:8000\n\nhttp://h2:8000  # second\n")
    assert fleet_urls(str(listing)) == ["http://h1:8000", "http://h2:8000"]
    assert fleet_urls(["ws://h1:8000/ws"]) == ["ws://h1:8000/ws"]
    assert fleet_urls("wordle") is None and fleet_urls("http://h1:8000") is None
    for bad in ("http://h1:8000,wordle", ["http://h1:8000", "http://h1:8000"], []):
        with pytest.raises(ValueError, match="fleet"):
            fleet_urls(bad)
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(ValueError, match="lists no server URLs"):
        fleet_urls(str(tmp_path / "empty.txt"))
    assert published_capacity({"max_concurrent_envs": 4}) == 4 and published_capacity({"max_sessions": 0}) is None
    with pytest.raises(ValueError, match="server_capacity"):
        PoolConfig(server_capacity=0)


def test_fleet_picks_the_least_filled_server_in_rotation() -> None:
    fleet = Fleet(["http://h1:1", "http://h2:1"], capacity=2)
    one, two = fleet.servers
    picks = []
    for _ in range(4):
        server = fleet.pick()
        assert server is not None
        server.load += 1
        picks.append(server.url)
    assert collections.Counter(picks) == {one.url: 2, two.url: 2} and fleet.pick() is None
    fleet.settle(one.url, {"status": "retry", "error": {"type": "ConnectionLost"}}, final=False)
    assert not one.up and one.outages == 1 and fleet.pick() is None  # out of rotation; two is full
    fleet.settle(two.url, {"status": "ok"}, final=True)
    assert fleet.pick() is two and two.episodes == 1
