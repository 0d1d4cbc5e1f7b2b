"""The Sandbox API: persistence, files, stdin, async runs, states, refusal without namespaces, the unsafe opt-in."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from openenv_train.sandbox import (
    Sandbox,
    SandboxConfig,
    SandboxLimits,
    SandboxStateError,
    SandboxUnavailable,
    sandbox_available,
    sandboxed_command,
)
from tests.sandbox.conftest import SMALL, require_sandbox, sandbox_uid_processes


def test_exports_resolve() -> None:
    module = importlib.import_module("openenv_train.sandbox")
    assert all(hasattr(module, name) for name in module.__all__)


def test_scratch_dir_persists_between_runs_until_close(box: Sandbox) -> None:
    first = box.run_python("import os; os.makedirs('pkg'); open('pkg/data.txt', 'w').write('kept'); print(os.getcwd())")
    assert first.ok and first.stdout == "/scratch\n"
    assert box.run("cat pkg/data.txt").stdout == "kept"
    assert box.run("cat /tmp/x 2>&1; echo tmp > /tmp/x").stdout.startswith("cat: /tmp/x")
    assert box.run("cat /tmp/x 2>&1").exit_code == 1  # /tmp is fresh in every run; only the scratch dir persists
    host_dir = box._dir
    assert os.path.isdir(host_dir)
    box.close()
    assert not os.path.exists(host_dir)
    with pytest.raises(SandboxStateError, match="closed"):
        box.run("true")


def test_files_stdin_and_shell_strings(box: Sandbox) -> None:
    result = box.run(["python3", "main.py"], files={"main.py": "import sys, helper\nprint(helper.X, sys.stdin.read())",
                                                     "helper.py": "X = 41 + 1"}, stdin="from stdin")
    assert result.ok, result.stderr
    assert result.stdout == "42 from stdin\n"
    shell = box.run("echo $HOME $USER | tr a-z A-Z; exit 3")
    assert shell.stdout == "/SCRATCH SANDBOX\n" and shell.exit_code == 3 and not shell.ok
    missing = box.run(["no-such-program"])
    assert missing.exit_code == 127 and "cannot run 'no-such-program'" in missing.stderr


def test_files_written_before_a_timeout_are_kept(box: Sandbox) -> None:
    result = box.run("echo partial > progress.txt; sleep 100", timeout_s=1)
    assert result.killed_reason == "wall_time"
    assert box.run("cat progress.txt").stdout == "partial\n"


def test_bad_arguments_are_refused_with_the_fix(box: Sandbox) -> None:
    with pytest.raises(ValueError, match="relative to the scratch dir"):
        box.run("true", files={"../escape.txt": "x"})
    with pytest.raises(ValueError, match="relative to the scratch dir"):
        box.run("true", files={"/etc/passwd": "x"})
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        box.run("true", timeout_s=0)
    with pytest.raises(ValueError, match="command is empty"):
        box.run([])
    assert box.run("true").ok  # and the sandbox is still usable


async def test_many_sandboxes_run_concurrently(config: SandboxConfig) -> None:
    require_sandbox()
    boxes = [Sandbox(config) for _ in range(4)]
    started = time.monotonic()
    results = await asyncio.gather(*(box.arun(f"sleep 1; echo {n}") for n, box in enumerate(boxes)))
    assert [r.stdout for r in results] == ["0\n", "1\n", "2\n", "3\n"]
    assert time.monotonic() - started < 3.5  # in parallel, not one after another
    for box in boxes:
        box.close()


async def test_one_run_at_a_time_and_cancellation_kills_the_run(box: Sandbox, config: SandboxConfig) -> None:
    uid = config.uid if os.geteuid() == 0 else os.getuid()
    before = set(sandbox_uid_processes(uid))
    task = asyncio.ensure_future(box.arun("sleep 100"))
    await asyncio.sleep(0.3)
    with pytest.raises(SandboxStateError, match="one at a time"):
        await box.arun("true")
    with pytest.raises(SandboxStateError, match="await sandbox.arun"):
        box.run("true")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 3  # the kernel tears the PID namespace down right after bwrap is killed
    while set(sandbox_uid_processes(uid)) - before and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert set(sandbox_uid_processes(uid)) <= before
    assert (await box.arun("echo again")).stdout == "again\n"


def test_sandbox_dies_with_its_parent(tmp_path: Path, config: SandboxConfig) -> None:
    require_sandbox()
    import psutil

    uid = config.uid if os.geteuid() == 0 else os.getuid()
    tmp_before = set(Path("/tmp").glob("openenv-sandbox-stage-*"))
    script = textwrap.dedent("""
        from openenv_train.sandbox import Sandbox, SandboxConfig
        Sandbox(SandboxConfig()).run("sleep 30 & sleep 30 & wait", timeout_s=60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                              env={**os.environ, "TMPDIR": str(tmp_path)})

    def sandboxed() -> set[int]:  # this parent's descendants that run as the sandbox uid (others may run too)
        try:
            children = psutil.Process(parent.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return set()
        return {c.pid for c in children if c.pid in set(sandbox_uid_processes(uid))}

    deadline = time.monotonic() + 60  # slow under load: the first run probes bubblewrap
    while len(inside := sandboxed()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(inside) >= 3  # bwrap, the supervisor, sh and its sleeps
    os.kill(parent.pid, signal.SIGKILL)  # not the group: only the parent dies
    parent.wait()
    deadline = time.monotonic() + 10
    while inside & set(sandbox_uid_processes(uid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not inside & set(sandbox_uid_processes(uid))
    for left in set(Path("/tmp").glob("openenv-sandbox-stage-*")) - tmp_before:  # SIGKILL skipped atexit
        left.rmdir()


# -- without namespaces ---------------------------------------------------------------------------------
def test_refuses_to_run_without_bubblewrap() -> None:
    config = SandboxConfig(bwrap="/nonexistent/bwrap")
    reason = sandbox_available(config)
    assert reason is not None and "not installed" in reason and "apt-get install -y bubblewrap" in reason
    with pytest.raises(SandboxUnavailable, match="cannot isolate code: bubblewrap") as caught:
        Sandbox(config)
    assert caught.value.reason == reason
    with pytest.raises(SandboxUnavailable):
        sandboxed_command(["true"], config)


@pytest.mark.parametrize(("script", "expected"), [
    ('echo "bubblewrap 0.8.0"; exit 0', None),
    ('echo "bubblewrap 0.6.1"; exit 0', "install bubblewrap >= 0.8"),
])
def test_refuses_an_old_or_crippled_bubblewrap(script: str, expected: str | None) -> None:
    where = Path(tempfile.mkdtemp())  # not tmp_path: the sandbox uid must be able to run the fake
    where.chmod(0o755)
    fake = where / "bwrap"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then {script}; fi\n'
                    'echo "bwrap: No permissions to create new namespace" >&2; exit 1\n')
    fake.chmod(0o755)
    reason = sandbox_available(SandboxConfig(bwrap=str(fake)))
    assert reason is not None
    if expected is None:
        assert "cannot create namespaces" in reason and "unprivileged user namespaces" in reason
    else:
        assert expected in reason
    shutil.rmtree(where)


def test_allow_unsafe_runs_with_rlimits_only_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    config = SandboxConfig(bwrap="/nonexistent/bwrap", allow_unsafe=True, limits=SMALL)
    with caplog.at_level(logging.WARNING, logger="openenv_train.sandbox"), Sandbox(config) as box:
        assert "UNSAFE" in caplog.text and "WITHOUT isolation" in caplog.text
        assert not box.isolated
        first = box.run("echo kept > note.txt; echo $HOME")
        assert first.ok and not first.isolated
        assert box.run("cat note.txt").stdout == "kept\n"
        bomb = box.run_python("chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 2**20))")
        assert bomb.killed_reason == "memory"
        assert box.run("sleep 100", timeout_s=1).killed_reason == "wall_time"


# -- config ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("change", "message"), [
    ({"uid": 0}, "must not be 0"),
    ({"workdir": "scratch"}, "normalized absolute path"),
    ({"workdir": "/tmp"}, "normalized absolute path"),
    ({"ro_paths": ("data",)}, "must be absolute"),
    ({"ro_paths": ("/",)}, "exposes the whole host"),
    ({"env": {"BAD-NAME": "x"}}, "not a valid variable"),
    ({"kill_grace_s": 0}, "kill_grace_s must be > 0"),
])
def test_config_checks(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SandboxConfig(**change)  # type: ignore[arg-type]


@pytest.mark.parametrize(("change", "message"), [
    ({"wall_time_s": 0}, "finite time limit"),
    ({"memory_bytes": 1024}, "16 MiB"),
    ({"max_processes": 1}, "supervisor"),
    ({"scratch_bytes": None}, "got None"),
])
def test_limit_checks(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SandboxLimits(**change)  # type: ignore[arg-type]


def test_with_limits_and_server_limits() -> None:
    config = SandboxConfig().with_limits(wall_time_s=3)
    assert config.limits.wall_time_s == 3 and config.limits.cpu_time_s == SandboxLimits().cpu_time_s
    server = SandboxLimits.for_server()
    assert server.cpu_time_s is None and dataclasses.replace(server, max_processes=10).max_processes == 10


def test_explicit_env_is_passed(config: SandboxConfig) -> None:
    require_sandbox()
    with Sandbox(dataclasses.replace(config, env={"TASK_ID": "t-1"})) as box:
        assert box.run("echo $TASK_ID").stdout == "t-1\n"


def test_a_run_may_bring_its_own_mounts_and_limits(box: Sandbox) -> None:
    """``arun(config=...)``: a read-write host folder for this run alone (a socket's), a lifted memory cap."""
    shared = tempfile.mkdtemp(prefix="openenv-rw-", dir="/tmp")
    try:
        os.chmod(shared, 0o777)  # the sandbox's unprivileged user writes there
        own = dataclasses.replace(box.config, rw_paths=(shared,), limits=dataclasses.replace(box.config.limits,
                                                                                             memory_bytes=None))
        result = box.run(f"echo hi > {shared}/out.txt && ulimit -v", config=own)
        assert result.exit_code == 0 and result.stdout.strip() == "unlimited", result.stderr
        assert Path(shared, "out.txt").read_text() == "hi\n"
        assert box.run(f"test -e {shared}/out.txt").exit_code != 0  # the next run has the sandbox's own mounts
        with pytest.raises(ValueError, match="workdir"):
            box.run("true", config=dataclasses.replace(own, workdir="/elsewhere"))
    finally:
        shutil.rmtree(shared, ignore_errors=True)
