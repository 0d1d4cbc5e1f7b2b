"""A user's own ``ray start --head`` for tests: on 127.0.0.1, started and stopped by process group, never ``ray stop``.

``ray stop`` kills every Ray on the machine (other users', other test runs'); this head runs in the foreground
(``--block``) in its own session, so ending its process group ends exactly its processes.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: Ray's loopback-only switch: on Linux it turns 127.0.0.1 into the outward address unless this is "0".
LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
RAY = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def submit_job(job: list[str], env: dict[str, str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """``ray job submit``, again while the head's job agent has not registered yet (Ray's "No available agent to
    submit job, please try again later": nothing was submitted); a busy machine takes a while to start it."""
    deadline = time.monotonic() + timeout_s
    while True:
        done = subprocess.run(job, env=env, capture_output=True, text=True, timeout=max(1.0, deadline - time.monotonic()))
        if "No available agent to submit job" not in done.stdout + done.stderr or time.monotonic() > deadline:
            return done
        time.sleep(1.0)


#: On SIGTERM a ``ray start --block`` node first drains, waiting up to this long (Ray's default: 30 s) for its raylet
#: to leave on its own, which an idle test head never does: the whole wait came on top of every head's stop.
NO_DRAIN = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}


def ray_env(temp_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a Ray user whose temp folder is ``temp_dir``: no RAY_ADDRESS, Ray's defaults but no drain
    wait when stopped (:data:`NO_DRAIN`), ``extra``."""
    env = {**os.environ, "RAY_TMPDIR": str(temp_dir), "RAY_USAGE_STATS_ENABLED": "0", **NO_DRAIN}
    for name in ("RAY_ADDRESS", LOOPBACK):
        env.pop(name, None)
    return {**env, **extra}


@dataclass
class RayHead:
    address: str
    """``127.0.0.1:PORT`` of the head's GCS."""
    process: subprocess.Popen[bytes]
    env: dict[str, str]

    def alive(self) -> bool:
        """The head still runs: its process and its GCS port answer."""
        if self.process.poll() is not None:
            return False
        host, port = self.address.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError:
            return False
        return True

    def stop(self) -> None:
        """End the head's process group (SIGTERM, then SIGKILL) and wait for the group to be gone."""
        if self.process.poll() is None or _group_alive(self.process.pid):
            _signal_group(self.process.pid, signal.SIGTERM)
            deadline = time.monotonic() + 60
            while _group_alive(self.process.pid) and time.monotonic() < deadline:
                self.process.poll()
                time.sleep(0.2)
            _signal_group(self.process.pid, signal.SIGKILL)
        self.process.wait(60)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def ray_head(temp_dir: Path, *, extra_args: tuple[str, ...] = (), env: dict[str, str] | None = None,
             timeout_s: float = 600.0, attempts: int = 3) -> Iterator[RayHead]:
    """``ray start --head --block`` on 127.0.0.1 with ``temp_dir`` as its temp folder; stopped on exit.

    ``extra_args`` replace the default ``--num-cpus=1 --include-dashboard=false``.

    Ray gives its raylet a fixed 30 s to register, which a starved machine can miss: a head that did not come up
    is stopped (its whole process group) and started again, up to ``attempts`` times.
    """
    if RAY is None:
        raise RuntimeError("the ray CLI is not installed")
    env = env or ray_env(temp_dir, **{LOOPBACK: "0"})  # its drivers need the switch too (``head.env``)
    for attempt in range(1, attempts + 1):
        head = _start_head(temp_dir, extra_args, env, timeout_s)
        if head.address or attempt == attempts:
            break
    if not head.address:
        raise RuntimeError(f"ray start --head did not come up: {(temp_dir / 'head.log').read_text()[-3000:]}")
    try:
        yield head
    finally:
        head.stop()


def _start_head(temp_dir: Path, extra_args: tuple[str, ...], env: dict[str, str], timeout_s: float) -> RayHead:
    """A started head (``address`` set), or a stopped one whose start failed (``address`` empty)."""
    with (temp_dir / "head.log").open("wb") as log:
        process = subprocess.Popen([RAY, "start", "--head", "--block", f"--port={free_port()}",
                                    "--node-ip-address=127.0.0.1", "--disable-usage-stats",
                                    *(extra_args or ("--num-cpus=1", "--include-dashboard=false"))],
                                   env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    head = RayHead("", process, env)
    address_file = cluster_file(temp_dir)  # `ray start` writes it once the head is up
    address_file.unlink(missing_ok=True)
    deadline = time.monotonic() + timeout_s
    while not (address_file.exists() and address_file.read_text().strip()):
        if process.poll() is not None or time.monotonic() > deadline:
            head.stop()
            return head
        time.sleep(0.2)
    head.address = address_file.read_text().strip()
    return head


def cluster_file(temp_dir: Path) -> Path:
    """Where Ray records the last cluster ``ray start`` brought up (read by a bare ``ray.init()``)."""
    return temp_dir / "ray" / "ray_current_cluster"


def short_temp_dir() -> Path:
    """A fresh temp folder with a short path (Ray's socket paths must stay under the OS limit)."""
    return Path(tempfile.mkdtemp(prefix="rh"))
