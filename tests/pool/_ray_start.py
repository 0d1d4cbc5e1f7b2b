"""``ray start`` for a worker node that stays on 127.0.0.1: Ray's own CLI, with Ray's two loopback rules lifted.

Run as ``python -m tests.pool._ray_start start --address=127.0.0.1:PORT --node-ip-address=127.0.0.1 ...`` (the
arguments of ``ray start``). Ray 2.60 on Linux cannot start such a node with the plain CLI:

- in its loopback mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, what keeps a head node on 127.0.0.1) ``ray
  start`` refuses worker nodes ("Multi-node Ray clusters are not supported on Windows and OSX");
- in its cluster mode it rewrites ``127.0.0.1`` (node IP and ``--address``) into the machine's interface address,
  and a node whose IP is not a loopback name binds its raylet and agents to every interface (``0.0.0.0``/``::``).

So this process keeps the loopback mode for everything the node starts (the raylet, its agents and workers
inherit ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` and bind to the node IP, 127.0.0.1), and in this process only
lets a worker node start and keeps ``127.0.0.1`` as given. Everything else is ``ray start`` itself
(``ray.scripts.scripts.main``); on a real cluster the plain ``ray start --address HEAD:PORT`` is what runs.
"""

from __future__ import annotations

import os
import sys

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before Ray is imported: the node's processes inherit it

from ray._private import ray_constants, services  # noqa: E402
from ray.scripts.scripts import main  # noqa: E402


def _as_given(host: str) -> str:
    """Ray's ``resolve_ip_for_localhost`` without its rewrite: it only ever changes loopback names."""
    return host


ray_constants.ENABLE_RAY_CLUSTER = True  # this process only: `ray start --address` may start a worker node
services.resolve_ip_for_localhost = _as_given  # ... and 127.0.0.1 stays 127.0.0.1

if __name__ == "__main__":
    sys.argv[0] = "ray"
    sys.exit(main())
