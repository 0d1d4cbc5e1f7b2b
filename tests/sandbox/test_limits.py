"""Resource attacks end within their limits, with the limit named in the result, and leave the host as it was."""

from __future__ import annotations

import asyncio
import os
import shutil
import textwrap
import time

from openenv_train.sandbox import Sandbox, SandboxConfig
from tests.sandbox.conftest import SMALL, MiB, require_sandbox, sandbox_uid_processes


def _sandbox_uid(config: SandboxConfig) -> int:
    return config.uid if os.geteuid() == 0 else os.getuid()


def test_fork_bomb_is_bounded_by_the_process_limit(box: Sandbox, config: SandboxConfig) -> None:
    before = set(sandbox_uid_processes(_sandbox_uid(config)))
    result = box.run_python(textwrap.dedent("""
        import os, time
        children = 0
        while True:
            try:
                pid = os.fork()
            except OSError as exc:
                print(children, exc.errno)
                break
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children += 1
    """))
    assert result.exit_code == 0, result.stderr
    children, errno = map(int, result.stdout.split())
    assert errno == 11  # EAGAIN: RLIMIT_NPROC
    assert SMALL.max_processes is not None and children <= SMALL.max_processes - 2  # supervisor + the bomb itself
    assert result.killed_reason is None  # no wait for the sleeping children: they die with the run
    assert set(sandbox_uid_processes(_sandbox_uid(config))) <= before


def test_exponential_fork_bomb_ends_and_leaves_nothing(box: Sandbox, config: SandboxConfig) -> None:
    before = set(sandbox_uid_processes(_sandbox_uid(config)))
    started = time.monotonic()
    result = box.run_python("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
                            timeout_s=2)
    assert result.timed_out and result.killed_reason == "wall_time"
    assert time.monotonic() - started < 2 + config.kill_grace_s + 1
    assert set(sandbox_uid_processes(_sandbox_uid(config))) <= before
    assert box.run("echo alive").stdout == "alive\n"  # the next run is unaffected


def test_memory_bomb_fails_and_is_reported_as_memory(box: Sandbox) -> None:
    result = box.run_python("chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 2**20))")
    assert result.exit_code == 1
    assert "MemoryError" in result.stderr
    assert result.killed_reason == "memory" and not result.timed_out


def test_memory_below_the_cap_is_fine(box: Sandbox) -> None:
    result = box.run_python("b = bytearray(64 * 2**20); print(len(b))")
    assert result.ok, result.stderr
    assert result.stdout.strip() == str(64 * MiB)


def test_busy_loop_hits_the_cpu_limit(box: Sandbox) -> None:
    result = box.run_python("while True: pass", timeout_s=10)
    assert result.killed_reason == "cpu_time" and result.timed_out
    assert result.exit_code == -24  # SIGXCPU at the soft limit
    assert SMALL.cpu_time_s is not None and result.cpu_time_s >= SMALL.cpu_time_s - 0.5
    assert result.duration_s < 10  # ended by CPU time, well before its wall time


def test_sleeping_forever_hits_the_wall_time_limit(box: Sandbox) -> None:
    result = box.run("echo started; sleep 1000")
    assert result.timed_out and result.killed_reason == "wall_time"
    assert result.exit_code == -9
    assert result.stdout == "started\n"
    assert 3 <= result.duration_s < 3 + 2


def test_printing_gigabytes_is_capped_and_stopped(box: Sandbox) -> None:
    result = box.run_python("import sys\nblock = b'x' * 2**20\nwhile True:\n    sys.stdout.buffer.write(block)")
    assert result.truncated and result.killed_reason == "output_limit"
    assert len(result.stdout) == SMALL.max_output_bytes
    assert result.duration_s < SMALL.wall_time_s  # stopped for its output, long before its wall time


def test_output_slightly_over_the_cap_is_truncated_without_a_kill(box: Sandbox) -> None:
    result = box.run(f"head -c {SMALL.max_output_bytes + 1000} /dev/zero | tr '\\0' y; echo done >&2")
    assert result.truncated and result.killed_reason is None and result.exit_code == 0
    assert result.stdout == "y" * SMALL.max_output_bytes
    assert result.stderr == "done\n"


def test_filling_the_scratch_dir_fails_cleanly(box: Sandbox) -> None:
    disk_before = shutil.disk_usage("/tmp").used
    result = box.run_python(textwrap.dedent("""
        import os
        for where in ("/scratch", "/tmp", "/dev/shm"):
            written = 0
            try:
                with open(f"{where}/fill", "wb") as f:
                    while True:
                        written += f.write(b"x" * 65536)
                        f.flush()
            except OSError as exc:
                print(where, written // 2**20, exc.strerror)
            os.remove(f"{where}/fill")
        for n in range(100):  # many files each below the cap cannot add up past it either
            try:
                with open(f"f{n}", "wb") as f:
                    f.write(b"y" * 2**20)
            except OSError as exc:
                print("files", n, exc.strerror)
                break
    """))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    for where, line in zip(("/scratch", "/tmp", "/dev/shm"), lines, strict=False):
        name, mib, *error = line.split(maxsplit=2)
        assert name == where and int(mib) <= 4
        assert error[0] in ("File too large", "No space left on device")
    assert lines[3].startswith("files ") and int(lines[3].split()[1]) <= 4
    assert shutil.disk_usage("/tmp").used - disk_before < 64 * MiB  # only the saved (capped) scratch dir
    assert box.run("echo ok").stdout == "ok\n"


async def test_process_limit_is_counted_per_sandbox(config: SandboxConfig) -> None:
    require_sandbox()
    forks = textwrap.dedent("""
        import os, sys, time
        for n in range({n}):
            if os.fork() == 0:
                time.sleep(2)
                os._exit(0)
        print("forked", {n})
        time.sleep(1.5)
    """)
    limit = SMALL.max_processes
    assert limit is not None
    with Sandbox(config) as first, Sandbox(config) as second:
        results = await asyncio.gather(first.arun_python(forks.format(n=limit - 4)),
                                       second.arun_python(forks.format(n=limit - 4)))
    assert [r.stdout for r in results] == [f"forked {limit - 4}\n"] * 2  # one sandbox's processes don't count
    assert all(r.ok for r in results), results                        # against another's (per user namespace)
