"""A multi-node Ray cluster on one machine for tests: a head and worker nodes, all on 127.0.0.1, token auth on.

Every node is a ``ray start --block`` process in its own session whose pid this module keeps, run as
``python -m tests.pool._ray_start`` (Ray's CLI, kept on loopback and given more time to start: see that
module). Nothing here calls ``ray stop`` (it stops every Ray on the machine): :meth:`stop` kills the nodes'
processes by pid. The cluster lives in a private temp folder and has its own token, in a
0600 file named by ``RAY_AUTH_TOKEN_PATH``; :attr:`LoopbackCluster.env` is the environment of its clients
(drivers, ``ray job submit``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.pool._ray_head import LOOPBACK, RAY, free_port

ROOT = Path(__file__).resolve().parents[2]

#: Ray settings for a slow, shared machine (2 CPUs under other test suites): a raylet or worker that is late is
#: not given up on, a killed raylet is still seen dead within seconds (its health checks are refused at once).
#: The raylet's own registration window (30 s, not a setting) is widened in tests/pool/_ray_start.py.
SLOW_MACHINE = {
    "RAY_DASHBOARD_STARTUP_TIMEOUT_S": "600",  # `ray start --head` waits this long for its dashboard (default 60)
    # the head waits this long for its GCS to bind its port, and every node and driver makes this many 1 s
    # attempts to reach the GCS (defaults 30 and 20)
    "RAY_gcs_server_port_wait_time_s": "300",
    "RAY_gcs_rpc_server_connect_timeout_s": "60",  # a raylet's first connection to the GCS (default 5)
    "RAY_agent_register_timeout_ms": "600000",  # a raylet waiting for its dashboard and runtime-env agents
    # no idle workers started ahead of need (one per CPU per node at the first driver): each imports Ray
    "RAY_prestart_worker_first_driver": "0",
    "RAY_enable_worker_prestart": "0",
    "RAY_worker_register_timeout_seconds": "180",  # a worker process registering with its raylet (default 60)
    "RAY_gcs_rpc_server_reconnect_timeout_s": "300",  # raylets waiting for a busy GCS (default 60)
    "RAY_gcs_server_request_timeout_seconds": "120",  # requests to the GCS, e.g. the node-info poll (default 60)
    "RAY_raylet_client_connect_timeout_milliseconds": "60000",
    "RAY_health_check_timeout_ms": "20000",  # a starved raylet that answers late is not counted dead
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_failure_threshold": "5",  # a killed raylet: 5 refused checks, about 5 s
}


@dataclass
class Node:
    """One ``ray start --block`` process and what it started."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    node_id: str = ""
    raylet_pid: int = 0

    def processes(self) -> list[psutil.Process]:
        """This node's live processes: the ``ray start`` process and its descendants."""
        try:
            root = psutil.Process(self.process.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []


@dataclass
class LoopbackCluster:
    """A head node (with its dashboard and job API) and ``workers`` worker nodes on 127.0.0.1.

    Worker node i offers ``worker_resources`` (e.g. ``{"rollout": 2}``: actors that ask for it run there and
    never on the head) and a resource ``worker<i>`` of 1.
    """

    workers: int = 2
    worker_resources: dict[str, float] = field(default_factory=dict)
    cpus: int = 1
    temp_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rc")))  # short: socket paths
    head: Node | None = None
    nodes: list[Node] = field(default_factory=list)
    gcs_address: str = ""
    dashboard_url: str = ""
    token: str = ""
    env: dict[str, str] = field(default_factory=dict)
    _seen: dict[int, psutil.Process] = field(default_factory=dict)

    def start(self, *, timeout_s: float = 900.0, attempts: int = 3) -> LoopbackCluster:
        """Start the head, then the worker nodes one by one; a node whose ``ray start`` exited is started again.

        Each node's ``ray start`` is given ``timeout_s`` to come up, and restarted (after its processes are
        killed by pid) up to ``attempts`` times in all; its log is ``<name>.<attempt>.log`` in the temp folder.
        """
        if RAY is None:
            raise RuntimeError("the ray CLI is not installed")
        self.token = secrets.token_hex(32)
        token_file = self.temp_dir / "token"
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.token)
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN")}
        self.env = {**env, **SLOW_MACHINE, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_file),
                    "RAY_TMPDIR": str(self.temp_dir), "RAY_USAGE_STATS_ENABLED": "0", LOOPBACK: "0",
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        port, dashboard = free_port(), free_port()
        self.gcs_address, self.dashboard_url = f"127.0.0.1:{port}", f"http://127.0.0.1:{dashboard}"
        # no autoscaler monitor: a fixed cluster has nothing to scale, and its process costs CPU all along
        head_args = [sys.executable, "-m", "tests.pool._ray_start", "start", "--head", f"--port={port}",
                     "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
                     "--no-monitor", f"--temp-dir={self.temp_dir / 'ray'}"]
        self.head = self._launch("head", head_args)
        self.nodes = [self.head]  # stopped by stop() even if it never comes up
        self._up(0, head_args, timeout_s, attempts)
        # One after another: nodes on one machine share the session folder, and two starting at once can pick the
        # same socket and log names (Ray numbers them by what exists), so one raylet's bind fails ("Address
        # already in use").
        for i in range(self.workers):
            args = self._worker_args(i)
            self.nodes.append(self._launch(f"worker{i}", args))
            self._up(i + 1, args, timeout_s, attempts)
        for node in self.nodes:
            self._identify(node)
        return self

    @property
    def worker_nodes(self) -> list[Node]:
        return self.nodes[1:]

    def add_worker(self, *, timeout_s: float = 900.0, attempts: int = 3) -> Node:
        """Start one more worker node (in place of one whose raylet was killed, say), with the same resources."""
        args = self._worker_args(len(self.nodes) - 1)
        self.nodes.append(self._launch(f"worker{len(self.nodes) - 1}", args))
        self._up(len(self.nodes) - 1, args, timeout_s, attempts)
        self._identify(self.nodes[-1])
        return self.nodes[-1]

    def _worker_args(self, i: int) -> list[str]:
        resources = {**self.worker_resources, f"worker{i}": 1}
        # one log monitor per machine (Ray's advice): the head's reads the logs every node writes on it
        return [sys.executable, "-m", "tests.pool._ray_start", "start", f"--address={self.gcs_address}",
                f"--resources={json.dumps(resources)}", "--include-log-monitor=false"]

    def _up(self, i: int, args: list[str], timeout_s: float, attempts: int) -> None:
        """Wait for node ``i``, launched with ``args``; start it again while it fails, up to ``attempts``."""
        for attempt in range(2, attempts + 2):
            node = self.nodes[i]
            if self._wait_up(node, timeout_s):
                return
            self._remember(node)
            self._kill(node.processes())
            if attempt > attempts:
                raise RuntimeError(f"ray start of {node.name} did not come up {attempts} times; the last one:\n"
                                   f"{node.log.read_text()[-3000:]}\n{self._errors()}")
            self.nodes[i] = self._launch(node.name, args, attempt)
            if i == 0:
                self.head = self.nodes[0]

    def _launch(self, name: str, args: list[str], attempt: int = 1) -> Node:
        log = self.temp_dir / f"{name}.{attempt}.log"
        # Every port the node's agents open is chosen here. Ray's defaults (10001, 52365, ...) would clash between
        # nodes and with other Rays on the machine, and a port left to the agent (0) makes the raylet wait for the
        # agent to write it to a file, a fixed 15 s (not a setting in Ray 2.60: RAY_agent_register_timeout_ms
        # covers the agent's registration, not this wait) after which the raylet aborts (raylet.err: "Check
        # failed" in NodeManager::WaitForDashboardAgentPorts). A busy 2-core machine misses it.
        agent_port = free_port()
        common = ["--block", "--node-ip-address=127.0.0.1", f"--num-cpus={self.cpus}", "--disable-usage-stats",
                  f"--dashboard-agent-listen-port={agent_port}", f"--dashboard-agent-grpc-port={free_port()}",
                  f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}"]
        with log.open("wb") as out:
            process = subprocess.Popen([*args, *common], cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        return Node(name, process, log)

    def _errors(self) -> str:
        """The non-empty ``*.err`` logs of the cluster's Ray processes (their tails), for a failed start."""
        tails = []
        for err in sorted(self.temp_dir.glob("ray/session_*/logs/*.err")):
            text = err.read_text(errors="replace")
            if text.strip():
                tails.append(f"--- {err.name}:\n{text[-1500:]}")
        return "\n".join(tails)

    def _wait_up(self, node: Node, timeout_s: float) -> bool:
        """Whether the node's ``ray start`` reached its block (its raylet registered with the GCS).

        Raises:
            RuntimeError: The head's ``ray start`` exited while a worker node was starting.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if b"Ray runtime started" in node.log.read_bytes():
                return True
            if node.process.poll() is not None:
                return False
            if self.head is not None and node is not self.head and self.head.process.poll() is not None:
                raise RuntimeError(f"the head exited while {node.name} started: {self.head.log.read_text()[-3000:]}"
                                   f"\n{self._errors()}")
            time.sleep(0.25)
        return False

    def _identify(self, node: Node) -> None:
        """The node's raylet pid and node id (from the raylet's command line)."""
        for process in node.processes():
            try:
                if process.name() == "raylet":
                    node.raylet_pid = process.pid
                    node.node_id = next(a.split("=", 1)[1] for a in process.cmdline() if a.startswith("--node_id="))
            except psutil.NoSuchProcess:
                continue
        if not node.raylet_pid:
            raise RuntimeError(f"no raylet under {node.name} (pid {node.process.pid}): {node.log.read_text()[-2000:]}")
        self._remember(node)

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

    def kill_raylet(self, node: Node) -> None:
        """SIGKILL the node's raylet, by its pid."""
        self._remember(node)
        os.kill(node.raylet_pid, signal.SIGKILL)

    def processes(self) -> list[psutil.Process]:
        """Every live process of the cluster: the nodes' trees, and any other process started with its temp folder
        (a worker whose raylet was killed is no longer in its node's tree)."""
        found = {p.pid: p for node in self.nodes for p in node.processes()}
        marker = str(self.temp_dir)
        for process in psutil.process_iter(["cmdline"]):
            try:
                if any(marker in arg for arg in process.info["cmdline"] or ()):
                    found.setdefault(process.pid, process)
            except psutil.Error:
                continue
        return list(found.values())

    def listening(self) -> list[tuple[int, str, str, int]]:
        """``(pid, name, ip, port)`` of every TCP socket the cluster's processes listen on."""
        sockets = []
        for process in self.processes():
            try:
                name = process.name()
                for conn in process.net_connections(kind="inet"):
                    if conn.status == psutil.CONN_LISTEN:
                        sockets.append((process.pid, name, conn.laddr.ip, conn.laddr.port))
            except psutil.Error:
                continue
        return sockets

    def _remember(self, node: Node) -> None:
        for process in node.processes():
            self._seen.setdefault(process.pid, process)

    def stop(self) -> None:
        """Kill every process of the cluster by pid (SIGKILL: nothing of a test cluster needs to drain)."""
        for node in self.nodes:
            self._remember(node)
        self._kill([*self.processes(), *self._seen.values()])
        for node in self.nodes:
            try:
                node.process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    @staticmethod
    def _kill(processes: list[psutil.Process]) -> None:
        alive = []
        for process in processes:
            try:
                process.send_signal(signal.SIGKILL)  # psutil checks the pid still names the same process
                alive.append(process)
            except psutil.Error:
                continue
        psutil.wait_procs(alive, timeout=30)


def get_json(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """``GET url``: the status and the JSON body (None when it has none)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, None
