"""More escape attempts: the supervisor's fds and /proc entries, symlinks through /proc, signals to PID 1,
sparse files that would inflate the saved scratch dir, inode floods, hard links. Real bwrap sandboxes.

``test_escapes.py`` has the basic cases (network, writes outside, host files, plain symlinks, host pids,
kill of the host pid, privileges); ``test_limits.py`` the fork bombs and the scratch fill.
"""

from __future__ import annotations

import logging
import os
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from openenv_train.sandbox import Sandbox

MiB = 2**20


def test_no_fd_of_the_supervisor_reaches_the_command(box: Sandbox) -> None:
    """The result pipe stays with the supervisor: the command cannot forge the report it sends."""
    result = box.run_python(textwrap.dedent("""
        import os
        print(sorted(int(f) for f in os.listdir("/proc/self/fd")))  # 3 is listdir's own
        wrote = []
        for fd in range(3, 256):
            try:
                os.write(fd, b'{"exit_code": 0, "cpu_s": 0, "stop": null, "state": "saved", "state_bytes": 0}\\n')
                wrote.append(fd)
            except OSError:
                pass
        print(wrote)
        raise SystemExit(3)
    """))
    assert result.stdout.splitlines() == ["[0, 1, 2, 3]", "[]"], result
    assert result.exit_code == 3  # the real status, not a forged one


@pytest.mark.parametrize("name", ["fd", "fdinfo", "mem", "maps", "map_files", "environ", "auxv", "root", "cwd", "exe",
                                  "stack", "syscall", "pagemap", "root/etc/shadow", "cwd/.", "fd/0", "fd/3"])
def test_the_supervisors_proc_entries_are_closed(box: Sandbox, name: str) -> None:
    path = f"/proc/1/{name}"
    result = box.run_python(textwrap.dedent(f"""
        import os
        path = {path!r}
        try:
            if os.path.isdir(path):
                print("LISTED", os.listdir(path)[:5])
            else:
                with open(path, "rb") as f:
                    print("READ", f.read(64))
        except OSError as exc:
            print(type(exc).__name__)
        try:
            print("LINK", os.readlink(path))
        except OSError as exc:
            print(type(exc).__name__)
    """))
    assert result.exit_code == 0, result.stderr
    first, link = result.stdout.splitlines()
    assert first == "PermissionError", result.stdout
    assert link in ("PermissionError", "OSError", "FileNotFoundError"), result.stdout


def test_proc_self_root_is_the_sandbox_root(box: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    secret.chmod(0o644)
    os.chmod(tmp_path, 0o755)
    result = box.run_python(textwrap.dedent(f"""
        import os
        for path in ("/proc/self/root{secret}", "/proc/2/root{secret}", "/proc/self/cwd/../../{secret}",
                     "/proc/self/root/etc/shadow", "/proc/thread-self/root{secret}"):
            try:
                print(open(path).read())
            except OSError as exc:
                print(type(exc).__name__)
        print(sorted(os.listdir("/proc/self/root")))
    """))
    assert result.exit_code == 0, result.stderr
    assert "TOP-SECRET" not in result.stdout
    *errors, listing = result.stdout.splitlines()
    assert set(errors) <= {"FileNotFoundError", "PermissionError"}, errors
    assert "home" not in listing and "root" in listing  # the sandbox's own root: no /home, no host tree


def test_symlinks_left_in_the_scratch_dir_lead_nowhere(box: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    secret.chmod(0o644)
    os.chmod(tmp_path, 0o755)
    targets = {"via_proc_self_root": f"/proc/self/root{secret}", "via_pid1_root": f"/proc/1/root{secret}",
               "pid1_fd": "/proc/1/fd/4", "pid1_cwd": "/proc/1/cwd", "host_tmp": str(tmp_path),
               "dotdot": "../" * 12 + str(secret).lstrip("/"), "loop": "loop", "root": "/"}
    made = box.run("; ".join(f"ln -s '{target}' {name}" for name, target in targets.items()) + "; ls | wc -l")
    assert made.exit_code == 0 and made.stdout.strip() == str(len(targets)), made
    state = Path(box._state_path).read_bytes()
    assert b"TOP-SECRET" not in state  # the saved scratch dir holds the links, not what they point at
    again = box.run_python(textwrap.dedent(f"""
        import os
        names = {sorted(targets)!r}
        print(sorted(os.listdir(".")) == names)
        for name in names:
            try:
                with open(name) as f:
                    print(name, f.read(20))
            except OSError as exc:
                print(name, type(exc).__name__)
    """))
    assert again.exit_code == 0, again.stderr
    assert again.stdout.splitlines()[0] == "True"
    assert "TOP-SECRET" not in again.stdout
    assert secret.read_text() == "TOP-SECRET"


def test_caller_files_are_not_written_through_a_symlinked_dir(box: Sandbox) -> None:
    """A link left by an earlier run cannot redirect the next run's ``files`` out of the scratch dir."""
    assert box.run("ln -s /tmp out && ln -s /etc etc").exit_code == 0
    result = box.run("cat /tmp/planted.txt; cat /etc/planted.txt; ls -la", files={"out/planted.txt": "planted",
                                                                                   "etc/planted.txt": "planted"})
    assert "planted\n" not in result.stdout.split("total")[0], result
    assert "/tmp/planted.txt: No such file" in result.stderr and "/etc/planted.txt: No such file" in result.stderr
    assert not os.path.exists("/etc/planted.txt")


def test_hard_links_to_files_outside_cannot_be_made(box: Sandbox) -> None:
    result = box.run_python(textwrap.dedent("""
        import os, sys
        for source in (sys.executable, "/etc/passwd", "/proc/self/status"):
            try:
                os.link(os.path.realpath(source), "hard")
                print("LINKED", source)
                os.remove("hard")
            except OSError as exc:
                print(type(exc).__name__)
    """))
    assert result.exit_code == 0, result.stderr
    assert "LINKED" not in result.stdout, result.stdout


@pytest.mark.parametrize("signal_name", ["INT", "TERM", "HUP", "QUIT", "USR1", "SEGV", "STOP", "CHLD", "PIPE",
                                         "ALRM", "XCPU"])
def test_signals_to_the_supervisor_do_not_end_the_run(box: Sandbox, signal_name: str) -> None:
    result = box.run(f"kill -{signal_name} 1; kill -{signal_name} 1; sleep 0.3; echo alive")
    assert result.stdout == "alive\n" and result.exit_code == 0, result
    assert box.run("echo ok").stdout == "ok\n"


def test_a_signal_storm_at_the_supervisor_is_survived(box: Sandbox) -> None:
    result = box.run_python(textwrap.dedent("""
        import os, signal
        sent = 0
        for _ in range(200):
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGUSR1, signal.SIGSTOP, signal.SIGCONT):
                try:
                    os.kill(1, sig)
                    sent += 1
                except OSError:
                    pass
        print("sent", sent)
    """))
    assert result.exit_code == 0 and result.stdout.startswith("sent "), result
    assert box.run("echo ok").stdout == "ok\n"


@contextmanager
def peak_child_rss() -> Iterator[list[int]]:
    """Sample the summed RSS of this process's new descendants (the sandbox processes) every 10 ms."""
    peak = [0]
    done = threading.Event()
    me = psutil.Process()
    before = {child.pid for child in me.children(recursive=True)}  # e.g. a Ray left by another module

    def watch() -> None:
        while not done.is_set():
            total = 0
            for child in me.children(recursive=True):
                if child.pid in before:
                    continue
                try:  # only the sandbox: bwrap and what runs under it
                    if child.name() != "bwrap" and not any(p.name() == "bwrap" for p in child.parents()):
                        continue
                    total += child.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], total)
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join()


def test_sparse_files_cannot_inflate_the_saved_scratch_dir(box: Sandbox, caplog: pytest.LogCaptureFixture) -> None:
    """Files of holes use no tmpfs room but full size in a tar: 60 x 4 MiB would make the (unlimited) supervisor
    build a 240 MiB archive in memory (10,000 of them, 40 GiB); it refuses to save them instead."""
    assert box.run("echo kept > keep.txt").exit_code == 0
    with peak_child_rss() as peak, caplog.at_level(logging.WARNING):
        result = box.run_python(textwrap.dedent("""
            import os
            for i in range(60):
                fd = os.open(f"sparse{i}", os.O_CREAT | os.O_WRONLY)
                os.ftruncate(fd, 4 * 2**20 - 1)
                os.close(fd)
            print(len(os.listdir(".")))
        """))
    assert result.exit_code == 0 and result.stdout == "61\n", result
    assert peak[0] < 150 * MiB, f"sandbox processes peaked at {peak[0] / MiB:.0f} MiB"
    assert any("sparse files count in full" in r.getMessage() for r in caplog.records), caplog.text
    after = box.run("ls")
    assert after.stdout == "keep.txt\n", after  # the previous saved state, not the inflated one


def test_an_inode_flood_ends_and_the_sandbox_stays_usable(box: Sandbox, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        result = box.run_python(textwrap.dedent("""
            import os
            n = 0
            try:
                while n < 30000:
                    os.mkdir(f"d{n}")
                    n += 1
            except OSError as exc:
                print("stopped", exc.strerror)
            print(n)
        """))
    assert result.exit_code == 0 or result.killed_reason in ("cpu_time", "wall_time"), result
    assert any("more than" in r.getMessage() and "files and directories" in r.getMessage() for r in caplog.records) \
        or result.killed_reason is not None, caplog.text
    assert box.run("echo ok").stdout == "ok\n"
