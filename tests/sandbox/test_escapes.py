"""Escape attempts from inside the sandbox fail, each with a clear result; real processes, no mocks."""

from __future__ import annotations

import dataclasses
import os
import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_train.sandbox import Sandbox, SandboxConfig
from tests.sandbox.conftest import require_sandbox

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1 that accepts connections; yields its port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def test_cannot_connect_to_a_host_port(box: Sandbox, host_listener: int) -> None:
    with socket.create_connection(("127.0.0.1", host_listener), timeout=5):
        pass  # the host itself reaches the listener
    result = box.run_python(textwrap.dedent(f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {host_listener}), timeout=2)
            print("CONNECTED")
        except OSError as exc:
            print("refused", type(exc).__name__)
    """))
    assert result.exit_code == 0, result.stderr
    assert "CONNECTED" not in result.stdout
    assert result.stdout.startswith("refused ConnectionRefusedError")


def test_no_interfaces_but_loopback_and_no_dns(box: Sandbox) -> None:
    result = box.run_python(textwrap.dedent("""
        import socket
        print(sorted(name for _, name in socket.if_nameindex()))
        for host, port in (("example.com", 80), ("1.1.1.1", 53)):
            try:
                socket.create_connection((host, port), timeout=2)
                print("REACHED", host)
            except OSError as exc:
                print("failed", host, type(exc).__name__)
    """))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "['lo']"
    assert lines[1] == "failed example.com gaierror"  # no DNS
    assert lines[2] == "failed 1.1.1.1 OSError"  # no route out (ENETUNREACH)
    assert "REACHED" not in result.stdout


@pytest.mark.parametrize("target", ["/etc/evil", "/usr/evil", "/evil", str(PROJECT_DIR / "evil"),
                                    str(PROJECT_DIR / "openenv_train" / "evil")])
def test_cannot_write_outside_the_scratch_dir(box: Sandbox, target: str) -> None:
    result = box.run_python(f"open({target!r}, 'w').write('pwned')")
    if not target.startswith("/tmp/"):  # under /tmp it lands in the sandbox's own private tmpfs
        assert result.exit_code == 1
        assert any(error in result.stderr for error in ("Read-only file system", "Permission denied",
                                                        "No such file or directory"))
    assert not os.path.exists(target)  # the host never sees it


def test_cannot_read_host_files_outside_the_allowed_paths(box: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    secret.chmod(0o644)
    for path in (str(secret), "/etc/shadow", "/etc/passwd", str(PROJECT_DIR / "pyproject.toml")):
        result = box.run(["cat", path])
        assert result.exit_code == 1, path
        assert "No such file or directory" in result.stderr


def test_parent_environment_is_not_inherited(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_API_KEY", "sk-do-not-leak")
    result = box.run("env; cat /proc/self/environ; cat /proc/1/environ")
    assert "sk-do-not-leak" not in result.stdout + result.stderr
    names = {line.split("=", 1)[0] for line in result.stdout.splitlines() if "=" in line}
    assert names <= {"PATH", "HOME", "TMPDIR", "LANG", "USER", "LOGNAME", "MALLOC_ARENA_MAX",
                     "PYTHONDONTWRITEBYTECODE", "PWD", "SHLVL", "_"}


def test_symlink_to_a_host_file_does_not_escape(box: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    secret.chmod(0o644)
    made = box.run(f"ln -s {secret} link && ln -s /proc/1/root/{secret} link2 && ls -l link")
    assert made.exit_code == 0, made.stderr
    for name in ("link", "link2"):  # the link is kept for the next run, but points at nothing here
        result = box.run(["cat", name])
        assert result.exit_code == 1
        assert "TOP-SECRET" not in result.stdout
    assert secret.read_text() == "TOP-SECRET"


def test_host_processes_are_invisible(box: Sandbox) -> None:
    result = box.run_python(textwrap.dedent(f"""
        import os
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        print(pids)
        print(os.path.exists("/proc/{os.getpid()}/environ"))
        try:
            open("/proc/1/environ", "rb").read()
            print("READ pid 1")
        except OSError as exc:
            print("pid 1:", type(exc).__name__)
        print(open("/proc/1/cmdline", "rb").read().split(b"\\0")[3].decode())
    """))
    assert result.exit_code == 0, result.stderr
    pids, host_pid_visible, environ, pid1 = result.stdout.splitlines()
    assert eval(pids) == [1, 2]  # the supervisor and this process: nothing of the host
    assert host_pid_visible == "False"
    assert environ == "pid 1: PermissionError"  # the supervisor is not dumpable
    assert pid1.endswith("_launcher.py")


def test_signals_reach_only_sandbox_processes(box: Sandbox) -> None:
    test_pid = os.getpid()
    result = box.run_python(textwrap.dedent(f"""
        import os, signal
        for pid in ({test_pid}, os.getppid(), 1, -1):
            try:
                os.kill(pid, signal.SIGKILL if pid != -1 else signal.SIGTERM)
                print(pid, "sent")
            except OSError as exc:
                print(pid, type(exc).__name__)
    """))
    # the host pid does not exist here; PID 1 (the supervisor) ignores signals from inside its namespace;
    # kill(-1) finds nobody else to signal
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [f"{test_pid} ProcessLookupError", "1 sent", "1 sent",
                                          "-1 ProcessLookupError"]
    assert os.getpid() == test_pid  # still here


def test_no_privileges_inside(box: Sandbox) -> None:
    result = box.run_python(textwrap.dedent("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        def attempt(name, rc):
            print(name, "ALLOWED" if rc == 0 else os.strerror(ctypes.get_errno()))
        print(open("/proc/self/status").read().split("CapEff:")[1].split()[0])
        attempt("ptrace-supervisor", libc.ptrace(16, 1, 0, 0))          # PTRACE_ATTACH to PID 1
        attempt("new-user-namespace", libc.unshare(0x10000000))        # CLONE_NEWUSER
        attempt("mount", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
        attempt("setuid-root", libc.setuid(0))
    """))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "0000000000000000"  # no capabilities
    assert "ALLOWED" not in result.stdout
    assert lines[1:] == ["ptrace-supervisor Operation not permitted", "new-user-namespace No space left on device",
                         "mount Operation not permitted", "setuid-root Invalid argument"]


def test_hidden_paths_stay_hidden_under_mounted_parents(tmp_path: Path, config: SandboxConfig) -> None:
    require_sandbox()
    shown = tmp_path / "shown"
    secret_dir = shown / "answers"
    secret_dir.mkdir(parents=True)
    (secret_dir / "key.txt").write_text("the answer is 42")
    (shown / "tests.json").write_text('{"hidden": true}')
    (shown / "public.txt").write_text("public")
    os.chmod(tmp_path, 0o755)
    hidden = dataclasses.replace(config, ro_paths=(str(shown),), hidden_paths=(str(secret_dir), str(shown / "tests.json")))
    with Sandbox(hidden) as box:
        result = box.run_python(
            "import os, sys\n"
            f"base = {str(shown)!r}\n"
            "print(open(os.path.join(base, 'public.txt')).read())\n"
            "print(sorted(os.listdir(os.path.join(base, 'answers'))))\n"
            "try:\n"
            "    print(repr(open(os.path.join(base, 'tests.json')).read()))\n"
            "except OSError as exc:\n"
            "    print(type(exc).__name__)\n"
        )
    assert result.stdout.splitlines()[:2] == ["public", "[]"], result
    assert result.stdout.splitlines()[2] in ("''", "PermissionError"), result  # never the file's content
