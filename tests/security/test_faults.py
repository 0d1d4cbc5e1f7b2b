"""Faults around a run: a full or read-only output dir under the TraceWriter, and repeated kills in one pool run.

The disk faults are real where the machine allows it: a size-capped tmpfs (ENOSPC) or a read-only mount in a
private mount namespace (``unshare -rm``, no root needed), written to by a subprocess; the same contract is also
checked in-process with ``OSError(ENOSPC)`` raised at the file boundary. The contract: a clear TraceWriteError
naming the folder and the fix, before any work is lost (rows stay buffered and a retry writes them once).

``tests/pool/test_pool_faults.py`` kills env servers once, or one actor once; here env servers and an actor are
killed several times during the same run, with a writer that flushes often, and every requested episode must be
written exactly once.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from openenv_train.trace import EnvInfo, TraceRow, TraceWriteError, TraceWriter, read_traces

REPO = Path(__file__).resolve().parents[2]


def _row(i: int, size: int = 0) -> TraceRow:
    return TraceRow(run_id="run", episode_id=f"ep{i}", env=EnvInfo(name="echo"), reward=1.0, done=True,
                    task={"prompt": "x" * size, "i": i})


# -- in-process: OSError at the file boundary -----------------------------------------------------------


def test_enospc_on_flush_keeps_the_rows_and_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    real = pq.write_table
    failures = [2]

    def full_disk(table: Any, where: Any, **kw: Any) -> None:
        if failures[0]:
            failures[0] -= 1
            Path(where).write_bytes(b"partial")  # a half-written file, as a full disk leaves
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(where))
        real(table, where, **kw)

    monkeypatch.setattr(pq, "write_table", full_disk)
    writer = TraceWriter(tmp_path, flush_rows=1000)
    writer.write_many(_row(i) for i in range(5))
    with pytest.raises(TraceWriteError) as info:
        writer.flush()
    message = str(info.value)
    assert "No space left on device" in message and str(writer.dir) in message and "kept" in message, message
    assert writer.pending == 5 and writer.rows_written == 0
    assert not list(writer.dir.glob("*.tmp")) and not list(writer.dir.glob("*.parquet"))
    writer.write(_row(5))
    with pytest.raises(TraceWriteError):  # the final flush fails too: the writer stays open, nothing is lost
        writer.close()
    assert not writer.closed and writer.pending == 6
    assert not writer.write(_row(3))  # still exactly-once while the rows wait
    writer.close()  # room again: the retry writes them
    assert writer.closed
    rows = read_traces(tmp_path)
    assert sorted(r.episode_id for r in rows) == [f"ep{i}" for i in range(6)]
    with TraceWriter(tmp_path) as again:  # the lock was released
        assert again.rows_written == 6


def test_an_unwritable_run_dir_is_refused_at_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(Path, "mkdir", denied)
    with pytest.raises(TraceWriteError) as info:
        TraceWriter(tmp_path / "run")
    message = str(info.value)
    assert "cannot write traces to" in message and "Permission denied" in message and "run_dir" in message


# -- real filesystems in a private mount namespace ------------------------------------------------------


def _unshare_ok() -> str | None:
    unshare = shutil.which("unshare")
    if unshare is None:
        return "unshare is not installed"
    probe = subprocess.run([unshare, "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt 2>/dev/null || "
                            "mount -t tmpfs -o size=64k tmpfs /tmp"], capture_output=True, timeout=20)
    return None if probe.returncode == 0 else f"no private mount namespace here: {probe.stderr.decode()[-200:]}"


@pytest.fixture(scope="module")
def mount_ns() -> str:
    reason = _unshare_ok()
    if reason is not None:
        pytest.skip(reason)
    return str(shutil.which("unshare"))


def _in_mount_ns(unshare: str, mount: str, script: str, where: Path) -> dict[str, Any]:
    """Run ``script`` (Python, argv[1] = ``where``) after ``mount`` (sh) in a private user+mount namespace."""
    code = textwrap.dedent(script)
    command = f"{mount} && exec {sys.executable} -c \"$0\" {where}"
    proc = subprocess.run([unshare, "-rm", "sh", "-c", command, code], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_a_read_only_filesystem_is_refused_at_open(mount_ns: str, tmp_path: Path) -> None:
    where = tmp_path / "ro"
    where.mkdir()
    result = _in_mount_ns(mount_ns, f"mount -t tmpfs -o size=1m tmpfs {where} && mount -o remount,ro {where}", """
        import json, sys
        from openenv_train.harbor import TraceWriter, TraceWriteError
        try:
            TraceWriter(sys.argv[1] + "/run")
            print(json.dumps({"opened": True}))
        except TraceWriteError as exc:
            print(json.dumps({"error": str(exc)}))
    """, where)
    assert "error" in result, result
    assert "Read-only file system" in result["error"] and f"{where}/run/traces" in result["error"], result


def test_a_full_filesystem_fails_the_flush_and_keeps_the_rows(mount_ns: str, tmp_path: Path) -> None:
    where = tmp_path / "full"
    where.mkdir()
    result = _in_mount_ns(mount_ns, f"mount -t tmpfs -o size=512k tmpfs {where}", """
        import json, os, sys, random
        from openenv_train.harbor import EnvInfo, TraceRow, TraceWriter, TraceWriteError, read_traces
        base = sys.argv[1]
        ballast = os.path.join(base, "ballast")
        with open(ballast, "wb") as f:
            f.write(os.urandom(400 * 1024))  # incompressible: most of the 512 KiB
        rng = random.Random(0)
        noise = lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(30_000))
        writer = TraceWriter(os.path.join(base, "run"), flush_rows=10**6)
        rows = [TraceRow(run_id="r", episode_id=f"ep{i}", env=EnvInfo(name="echo"), task={"t": noise()})
                for i in range(12)]
        writer.write_many(rows)
        out = {}
        try:
            writer.flush()
            out["flushed"] = True
        except TraceWriteError as exc:
            out["error"] = str(exc)
        out["pending"] = writer.pending
        out["leftovers"] = sorted(os.listdir(writer.dir))
        os.remove(ballast)  # room again
        writer.close()
        got = [r.episode_id for r in read_traces(os.path.join(base, "run"))]
        out["read"] = sorted(got)
        print(json.dumps(out))
    """, where)
    assert "error" in result, result
    assert "No space left on device" in result["error"] and "kept" in result["error"], result
    assert result["pending"] == 12
    assert not [f for f in result["leftovers"] if f.endswith(".parquet") or f.endswith(".tmp")], result
    assert result["read"] == sorted(f"ep{i}" for i in range(12))


# -- repeated kills in one pool run ----------------------------------------------------------------------


def test_env_servers_and_an_actor_killed_repeatedly_lose_and_double_nothing(ray_local: Any, tmp_path: Path) -> None:
    from openenv_train.pool import RolloutPool, make_groups
    from tests.pool import _support

    def server_pids(pool: RolloutPool) -> list[int]:
        return [_support.actor_ready(ray_local, actor)["server_pid"] for actor in pool.actors]

    specs = make_groups(range(8), num_generations=2)
    with TraceWriter(tmp_path, flush_rows=3) as writer, RolloutPool(
            "wordle", _support.slow_solver, num_actors=2, sessions_per_actor=3, max_retries=5, writer=writer) as pool:
        stream = pool.as_completed(specs)
        rows = [next(stream) for _ in range(2)]
        killed = server_pids(pool)
        for pid in killed:  # every env server, mid-batch
            os.killpg(pid, signal.SIGKILL)
        rows += [next(stream) for _ in range(2)]
        # Each actor has replaced its server (ready() replaces a dead one) before the next faults, so both
        # replacements happen whatever the machine's speed, and at least 10 episodes are left for the rest.
        deadline = time.monotonic() + 300  # ready() replaces a server once its killed process is seen dead
        while not set(pids := server_pids(pool)).isdisjoint(killed) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert set(pids).isdisjoint(killed), (pids, killed)
        os.killpg(pids[0], signal.SIGKILL)  # actor 0's server again
        ray_local.kill(pool.actors[1], no_restart=False)  # an actor, with its sessions in flight
        rows += list(stream)
        metrics = pool.metrics.summary()
    assert len(rows) == 16 and len({r.episode_id for r in rows}) == 16
    assert all(r.ok for r in rows), [(r.episode_id, r.error) for r in rows if not r.ok]
    stored = Counter(r.episode_id for r in read_traces(tmp_path))
    assert len(stored) == 16 and set(stored.values()) == {1}, stored  # none lost, none doubled
    assert metrics["server_restarts"] >= 2 and metrics["actor_failures"] >= 1 and metrics["retries"] >= 2, metrics
