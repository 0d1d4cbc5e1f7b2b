"""Fault points: named places where a failure test kills the process on purpose, to prove what survives a crash.

A fault point costs one environment lookup and does nothing unless ``OPENENV_TRAIN_FAULTS`` names a folder.
There, a file named ``<point>.<anything>`` is a one-shot token: the first process to reach ``<point>`` removes it
(an atomic unlink, so each token kills one process) and sends itself SIGKILL, as the OOM killer or a lost node
would, with no cleanup. Tests and soak scripts lay tokens with :func:`arm_fault`; a kill is thus tied to a place
in the code (a row buffered, a shard half written, a manifest not yet replaced), never to the clock.
"""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

__all__ = ["FAULTS_ENV", "arm_fault", "fault_point"]

FAULTS_ENV = "OPENENV_TRAIN_FAULTS"


def fault_point(name: str) -> None:
    """Kill this process with SIGKILL if a token for ``name`` lies in the ``OPENENV_TRAIN_FAULTS`` folder."""
    folder = os.environ.get(FAULTS_ENV)
    if not folder:
        return
    try:
        tokens = [f for f in os.listdir(folder) if f.startswith(name + ".")]
    except OSError:
        return
    for token in tokens:
        try:
            os.unlink(os.path.join(folder, token))
        except FileNotFoundError:  # another process took it first
            continue
        os.kill(os.getpid(), signal.SIGKILL)


def arm_fault(folder: str | os.PathLike[str], name: str, count: int = 1) -> None:
    """Lay ``count`` tokens for fault point ``name`` in ``folder`` (each kills the next process reaching it)."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    for _ in range(count):
        (path / f"{name}.{uuid.uuid4().hex[:8]}").touch()
