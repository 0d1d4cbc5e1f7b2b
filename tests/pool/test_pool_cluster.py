"""The pool on a real multi-node Ray: a head and two worker nodes on 127.0.0.1 (token auth on), started once.

The nodes are ``ray start`` processes kept by pid (tests/pool/loopback_cluster.py); the drivers are separate
processes, as a user's script or ``ray job submit`` would be. Checked here: every listening socket of the
cluster is on loopback, a client without the token is refused, actors spread over the worker nodes with their
env servers on their own node, the job path with a runtime env, and a worker node's raylet killed mid-run
(by pid, once rows are being written) with every episode still written exactly once.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from openenv_train.trace import read_traces
from tests.pool._cluster_driver import MARK
from tests.pool._ray_head import RAY, submit_job
from tests.pool.loopback_cluster import ROOT, LoopbackCluster, get_json

pytest.importorskip("ray.dashboard.modules.job", reason="the job API needs ray[default]")
# three nodes on a 2-core CI machine: the idle shared local Ray (tests/conftest.py) is stopped while they run
pytestmark = pytest.mark.usefixtures("no_shared_ray")
LOOPBACK_IPS = {"127.0.0.1", "::ffff:127.0.0.1"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[LoopbackCluster]:
    if RAY is None:
        pytest.skip("the ray CLI is not installed")
    cluster = LoopbackCluster(workers=2, worker_resources={"rollout": 2})
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _driver(cluster: LoopbackCluster, out: Path, **args: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.pool._cluster_driver",
                             json.dumps({"gcs": cluster.gcs_address, "out": str(out), **args})],
                            cwd=ROOT, env=cluster.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _report(driver: subprocess.Popen[str], timeout_s: float = 900) -> dict[str, Any]:
    out, _ = driver.communicate(timeout=timeout_s)
    assert driver.returncode == 0, f"the driver failed ({driver.returncode}); its stderr is above"
    return _marked(out.splitlines())


def _marked(lines: Any) -> dict[str, Any]:
    """The driver's JSON line among the Ray log lines that share its stdout."""
    for line in lines:
        if line.startswith(MARK):
            return dict(json.loads(line[len(MARK):]))
    raise AssertionError("the driver printed no report (its stderr is above)")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _written_once(folder: Path, expected: int) -> None:
    counts = collections.Counter(r.episode_id for r in read_traces(folder))
    assert len(counts) == expected and set(counts.values()) == {1}, counts


@pytest.fixture(scope="module")
def spread_run(cluster: LoopbackCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A pool run on the cluster; while its actors and env servers are up: every listening socket, and each
    env server's process ancestry."""
    out = tmp_path_factory.mktemp("spread")
    driver = _driver(cluster, out, episodes=16, pause=True)
    try:
        assert driver.stdout is not None and driver.stdin is not None
        actors = _marked(iter(driver.stdout.readline, ""))["before"]
        ancestry = {a["server_pid"]: [p.pid for p in psutil.Process(a["server_pid"]).parents()] for a in actors}
        sockets = cluster.listening()
        driver.stdin.write("go\n")
        driver.stdin.flush()
        report = _report(driver)
    finally:
        driver.kill()
    return {"report": report, "ancestry": ancestry, "sockets": sockets, "out": out}


@pytest.mark.timeout(1800)  # the module's cluster starts here: 3 nodes on a machine that may be busy
def test_every_listening_socket_of_the_cluster_is_on_loopback(cluster: LoopbackCluster,
                                                               spread_run: dict[str, Any]) -> None:
    sockets = spread_run["sockets"]
    names = {name for _, name, _, _ in sockets}
    assert {"gcs_server", "raylet"} <= names, sockets  # the head's and the nodes' own services were seen
    raylets = {pid for pid, name, _, _ in sockets if name == "raylet"}
    assert raylets == {n.raylet_pid for n in cluster.nodes}, (raylets, [n.raylet_pid for n in cluster.nodes])
    workers = {pid for pid, _, _, _ in sockets} & {a["pid"] for a in spread_run["report"]["before"]}
    assert len(workers) == 2, "the actors' worker processes (their Ray ports) were not among the listeners"
    interface = {a.address.split("%")[0] for addrs in psutil.net_if_addrs().values() for a in addrs}
    outside = [s for s in sockets if s[2] not in LOOPBACK_IPS]
    assert not outside, f"listening beyond 127.0.0.1 (interfaces {sorted(interface)}): {outside}"


@pytest.mark.timeout(900)
def test_a_client_without_the_token_is_refused(cluster: LoopbackCluster) -> None:
    status, _ = get_json(f"{cluster.dashboard_url}/api/jobs/")
    assert status == 401
    status, jobs = get_json(f"{cluster.dashboard_url}/api/jobs/", {"Authorization": f"Bearer {cluster.token}"})
    assert status == 200 and isinstance(jobs, list)
    wrong = subprocess.run([RAY, "job", "list", "--address", cluster.dashboard_url], capture_output=True, text=True,
                           env={**{k: v for k, v in cluster.env.items() if k != "RAY_AUTH_TOKEN_PATH"},
                                "RAY_AUTH_TOKEN": "0" * 64}, timeout=600)
    assert wrong.returncode != 0


@pytest.mark.timeout(1200)
def test_actors_spread_over_the_worker_nodes_with_their_env_servers(cluster: LoopbackCluster,
                                                                    spread_run: dict[str, Any]) -> None:
    report = spread_run["report"]
    workers = {n.node_id for n in cluster.worker_nodes}
    assert report["driver_node"] == cluster.nodes[0].node_id  # the driver is on the head, the actors are not
    assert {a["node_id"] for a in report["before"]} == workers
    for actor in report["before"]:  # each env server runs under its actor, under that node's raylet
        parents = spread_run["ancestry"][actor["server_pid"]]
        assert actor["pid"] in parents and cluster.node(actor["node_id"]).raylet_pid in parents, (actor, parents)
    rows = report["rows"]
    assert len(rows) == 16 and all(r["ok"] for r in rows)
    assert {r["url"] for r in rows} == {a["url"] for a in report["before"]}  # both actors' servers played
    _written_once(spread_run["out"], 16)


@pytest.mark.timeout(1200)
def test_ray_job_submit_with_a_runtime_env_runs_on_the_worker_nodes(cluster: LoopbackCluster, tmp_path: Path) -> None:
    """``ray job submit --runtime-env-json``: the working_dir (a config file) reaches the job, whose actors can only
    run on the worker nodes (they need their ``rollout`` resource)."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "collect.yaml").write_text("name: job\ntasks: 4\nnum_generations: 2\nnum_actors: 2\n"
                                          "show_progress: false\npool:\n  actor_resources: {rollout: 1}\n"
                                          "  actor_scheduling: spread\n")
    runtime_env = {"working_dir": str(job_dir)}  # uploaded to the cluster, unpacked on every node the job uses
    job = [RAY, "job", "submit", "--address", cluster.dashboard_url, "--runtime-env-json", json.dumps(runtime_env),
           "--", sys.executable, "-m", "openenv_train.recipes.collect", "--config", "collect.yaml",
           f"output_dir={tmp_path}"]
    done = submit_job(job, cluster.env, timeout_s=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "succeeded" in done.stdout + done.stderr
    rows = read_traces(tmp_path / "job")
    assert sorted(r.episode_id for r in rows) == [f"g{i}-{k}" for i in range(4) for k in range(2)]
    assert all(r.ok and r.run_id == "job" for r in rows)
    assert json.loads((tmp_path / "job" / "summary.json").read_text())["metrics"]["failed"] == 0


@pytest.mark.timeout(1200)
def test_a_worker_raylet_killed_mid_run_loses_no_episode(cluster: LoopbackCluster, tmp_path: Path) -> None:
    """Last in the module: it leaves the cluster one worker node short."""
    raylets = {n.node_id: n.raylet_pid for n in cluster.worker_nodes}
    report = _report(_driver(cluster, tmp_path, episodes=40, kill=raylets, kill_after=8))
    assert len({a["node_id"] for a in report["before"]}) == 2  # one actor per worker node
    killed = report["killed"]
    assert killed["after_rows"] == 8 and killed["raylet_pid"] == raylets[report["before"][0]["node_id"]]
    assert _gone(killed["raylet_pid"])
    rows = report["rows"]
    assert sorted(r["episode_id"] for r in rows) == sorted(f"g{i}-{k}" for i in range(20) for k in range(2))
    assert all(r["ok"] for r in rows), [r for r in rows if not r["ok"]]
    _written_once(tmp_path, 40)
    metrics = report["metrics"]
    assert metrics["actor_failures"] >= 1 and metrics["retries"] >= 1 and metrics["failed"] == 0
    survivor = report["before"][1]["node_id"]
    assert report["after"][0]["node_id"] == survivor, "actor 0 was not restarted on the surviving worker node"
    assert report["after"][0]["pid"] != report["before"][0]["pid"]
