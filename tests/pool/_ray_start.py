"""``ray start`` for a node that stays on 127.0.0.1 and may start slowly: Ray's own CLI, with some of its rules lifted.

Run as ``python -m tests.pool._ray_start start [--head | --address=127.0.0.1:PORT] --node-ip-address=127.0.0.1 ...``
(the arguments of ``ray start``). Ray 2.60 on Linux cannot start a loopback worker node with the plain CLI:

- in its loopback mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, what keeps a head node on 127.0.0.1) ``ray
  start`` refuses worker nodes ("Multi-node Ray clusters are not supported on Windows and OSX");
- in its cluster mode it rewrites ``127.0.0.1`` (node IP and ``--address``) into the machine's interface address,
  and a node whose IP is not a loopback name binds its raylet and agents to every interface (``0.0.0.0``/``::``).

So this process keeps the loopback mode for everything the node starts (the raylet, its agents and workers
inherit ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` and bind to the node IP, 127.0.0.1), and in this process only
lets a worker node start and keeps ``127.0.0.1`` as given (not for ``--head``: the plain loopback mode suffices).

Third, for every node: ``ray start`` waits a fixed 30 s for its raylet to register with the GCS
(``raylet_start_wait_time_s = 30``, a local in ``ray._private.node.Node.__init__``; no setting, environment
variable or ``_system_config`` changes it), then fails with "The current node timed out during startup". On a
2-core machine shared with other test suites a raylet and the agents it waits for take longer than that, so
the node's ``services.get_node`` (the lookup that loop repeats) is wrapped here to keep looking, every half
second, for :data:`REGISTER_WINDOW_S`. It gives up at once if the raylet exited, so a broken start still fails
fast. The raylet is told every port of its agents, so it does not wait a fixed 15 s for them to write one
to a file, and a head starts no Ray Client server and a dashboard with its job and node modules only (below). Everything
else is ``ray start`` itself (``ray.scripts.scripts.main``); on a real cluster the plain ``ray start --address
HEAD:PORT`` is what runs.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import psutil

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before Ray is imported: the node's processes inherit it

from ray._private import ray_constants, services  # noqa: E402
from ray.scripts import scripts  # noqa: E402

#: How long a starting node waits for its raylet to register with the GCS (Ray's own window: 30 s).
REGISTER_WINDOW_S = 600.0
_get_node = services.get_node
_start_process = services.start_ray_process


def _as_given(host: str) -> str:
    """Ray's ``resolve_ip_for_localhost`` without its rewrite: it only ever changes loopback names."""
    return host


def _raylet_alive() -> bool:
    try:
        return any(child.name() == "raylet" and child.status() != psutil.STATUS_ZOMBIE
                   for child in psutil.Process().children())
    except psutil.Error:
        return False


def _get_node_waiting(gcs_address: str, node_id: str) -> Any:
    """``services.get_node``, retried while the node's raylet runs but has not registered, up to the window."""
    deadline = time.monotonic() + REGISTER_WINDOW_S
    while True:
        try:
            return _get_node(gcs_address, node_id)
        except RuntimeError:  # not registered (yet): what Ray's own loop catches
            if time.monotonic() > deadline:
                raise
            if not _raylet_alive():  # not a RuntimeError: Ray's loop lets it through and `ray start` fails now
                raise Exception(f"the raylet of node {node_id} exited before it registered") from None
            time.sleep(0.5)


def _no_ray_client() -> str:
    return "the test cluster runs no Ray Client server"


def _start_ray_process(command: list[str], process_type: str, *args: Any, **kwargs: Any) -> Any:
    """``services.start_ray_process``, with two changes to the commands it runs.

    The raylet is told its dashboard agent's HTTP port (``ray start --dashboard-agent-listen-port``): Ray 2.60
    passes it to the agent but not to the raylet, which then waits for the agent to write it to a file, a fixed
    15 s, and aborts ("Timed out waiting for file .../dashboard_agent_listen_port_..." in raylet.err) when a busy
    machine has not run the agent's imports by then. The agents' other ports come from ``ray start`` options
    and are passed on, so the raylet waits for none. A head's dashboard loads only its job module (the job API
    the tests use) and its node module (which records the head node's id in the GCS: without it the job module
    never finds the head's agent, "No available agent to submit job"): its other modules are a process each,
    importing and polling the GCS.
    """
    if process_type == ray_constants.PROCESS_TYPE_RAYLET and _LISTEN_PORT:
        command = [*command, f"--dashboard_agent_listen_port={_LISTEN_PORT}"]
    if process_type == ray_constants.PROCESS_TYPE_DASHBOARD:
        command = [*command, "--modules-to-load=JobHead,NodeHead"]
    return _start_process(command, process_type, *args, **kwargs)


_LISTEN_PORT = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--dashboard-agent-listen-port=")), "")
services.get_node = _get_node_waiting  # Node.__init__ calls it as ray._private.services.get_node
services.start_ray_process = _start_ray_process  # services' own calls look it up in the module at call time
if "--head" in sys.argv:
    # No Ray Client server (the tests connect by GCS address and the job API): it is a process of its own that
    # waits a fixed 30 s for the head to register, and `ray start --block` ends the node when it gives up.
    scripts.get_ray_client_dependency_error = _no_ray_client
else:
    ray_constants.ENABLE_RAY_CLUSTER = True  # this process only: `ray start --address` may start a worker node
    services.resolve_ip_for_localhost = _as_given  # ... and 127.0.0.1 stays 127.0.0.1

if __name__ == "__main__":
    sys.argv[0] = "ray"
    sys.exit(scripts.main())
