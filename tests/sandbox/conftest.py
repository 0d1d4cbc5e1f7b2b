"""Fixtures of the sandbox tests: small limits so that every escape attempt ends within seconds."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from openenv_train.sandbox import Sandbox, SandboxConfig, SandboxLimits, sandbox_available
from tests import _system_parts

MiB = 2**20

SMALL = SandboxLimits(wall_time_s=3.0, cpu_time_s=2, memory_bytes=256 * MiB, max_processes=32,
                      max_open_files=64, max_output_bytes=64 * 1024, scratch_bytes=4 * MiB)
"""Limits of the tests: 64 MiB bombs hit a 256 MiB cap, loops hit 2 s of CPU or 3 s of wall time."""

UNAVAILABLE = sandbox_available(SandboxConfig(limits=SMALL))
SKIP_REASON = None if _system_parts.PARTS["sandbox"].required or UNAVAILABLE is None else (
    f"no sandbox here: {UNAVAILABLE} (to run these tests: {_system_parts.PARTS['sandbox'].install})")


def require_sandbox() -> None:
    """Skip the calling test where sandboxes cannot run (CI's OPENENV_TRAIN_REQUIRE_SANDBOX=1 fails it instead)."""
    if UNAVAILABLE is not None:
        _system_parts.skip_or_fail("sandbox", f"no sandbox here: {UNAVAILABLE}")


@pytest.fixture
def config() -> SandboxConfig:
    return SandboxConfig(limits=SMALL, kill_grace_s=2.0)


@pytest.fixture
def box(config: SandboxConfig) -> Iterator[Sandbox]:
    require_sandbox()
    with Sandbox(config) as sandbox:
        yield sandbox


def sandbox_uid_processes(uid: int) -> list[int]:
    """Host pids that run as ``uid`` (what a sandbox leaves behind)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as f:
                    uids = next(line for line in f if line.startswith("Uid:")).split()[1:]
            except (OSError, StopIteration):
                continue
            if int(uids[0]) == uid:
                pids.append(int(entry))
    return pids
