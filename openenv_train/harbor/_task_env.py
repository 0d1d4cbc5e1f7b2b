"""Where a task runs: its workspace in the OS sandbox (:class:`SandboxTaskEnv`) or in a Docker container
(:class:`DockerTaskEnv`), behind one small interface (:class:`TaskEnvironment`).

Harbor's paths inside the environment are ``/logs/{agent,verifier,artifacts}``, ``/tests`` (copied in after the
agent) and ``/solution`` (copied in for the oracle). A container has them as they are. The sandbox can write
only to its scratch dir, so there the workspace (the Dockerfile's first WORKDIR, default ``/app``) is the
scratch dir, at its real path, and Harbor's folders live in it::

    /logs/...     ->  <workspace>/.harbor/logs/...      (reward: <workspace>/.harbor/logs/verifier/reward.txt)
    /tests/...    ->  <workspace>/.harbor/tests/...
    /solution/... ->  <workspace>/.harbor/solution/...

Text files copied from the task's ``tests/`` and ``solution/`` have these absolute prefixes rewritten
(:func:`rewrite_harbor_paths`), so an unmodified ``test.sh`` writing ``/logs/verifier/reward.txt`` works.
Agent commands are not rewritten: the agent sees the workspace at its real path. ``/tmp`` is private to each
command in the sandbox; only the workspace persists from one command to the next.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import re
import shlex
import shutil
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..containers import docker_command_async
from ..sandbox import Sandbox, SandboxConfig, SandboxError, SandboxLimits, python_roots, sandboxed_command
from ._dockerfile import CopyStep, parse_dockerfile, rebase_dockerfile
from ._task_errors import EnvironmentSetupError, UnsupportedTaskFeature
from ._tasks import HarborTask

__all__ = [
    "HARBOR_DIR",
    "DockerTaskEnv",
    "ExecResult",
    "SandboxTaskEnv",
    "TaskEnvironment",
    "resolve_env",
    "rewrite_harbor_paths",
]

MiB = 2**20
HARBOR_DIR = ".harbor"
"""Folder of the sandbox workspace that stands in for Harbor's /logs, /tests and /solution."""
_HARBOR_PATH = re.compile(r"(?<![\w./~}$)-])/(logs|tests|solution)(?![\w.-])")
_TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_STORAGE_CAP = 512 * MiB


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one command in a task environment."""

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    truncated: bool
    duration_s: float


class TaskEnvironment(Protocol):
    """A task's running environment: commands in the workspace, Harbor folders, files back out."""

    backend: str
    workdir: str
    socket_parent: str | None
    """Where a socket folder for :meth:`exec_program` must be made (Docker: a folder mounted when the container
    started); None: anywhere (the sandbox binds it per run)."""

    async def start(self) -> None:
        """Build the workspace (Dockerfile steps); raises EnvironmentSetupError."""

    async def exec(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None) -> ExecResult:
        """Run ``command`` with bash in the workspace."""

    async def exec_program(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None,
                           ro_paths: Sequence[str] = (), socket_dir: str | None = None) -> ExecResult:
        """Run ``command`` like :meth:`exec`, for a whole program such as an agent's CLI: host folders
        ``ro_paths`` (its installation) readable at the same paths, host folder ``socket_dir`` (the Unix socket
        to the policy endpoint) writable at the same path, and no per-process memory cap (JavaScript runtimes
        reserve far more address space than they use)."""

    async def upload_dir(self, source: Path, harbor_dir: str) -> None:
        """Replace Harbor folder ``harbor_dir`` (``/tests`` or ``/solution``) by the files of ``source``."""

    async def reset_dir(self, harbor_dir: str) -> None:
        """Empty Harbor folder ``harbor_dir`` (e.g. ``/logs/verifier`` before the tests run)."""

    async def read_files(self, harbor_paths: list[str]) -> dict[str, bytes | None]:
        """The contents of Harbor paths (None for a missing file)."""

    def path(self, harbor_path: str) -> str:
        """Where Harbor path ``harbor_path`` is inside this environment."""

    async def stdio_command(self, argv: Sequence[str]) -> list[str]:
        """A host command line that runs ``argv`` in the environment with stdin/stdout piped (a stdio MCP server)."""

    async def close(self) -> None:
        """Tear the environment down; safe to call twice."""


def rewrite_harbor_paths(text: str, harbor_root: str) -> str:
    """Point absolute ``/logs``, ``/tests`` and ``/solution`` paths at ``harbor_root`` (the sandbox mapping).

    >>> rewrite_harbor_paths('echo 1 > /logs/verifier/reward.txt; cd /tests; ls /app/tests', '/app/.harbor')
    'echo 1 > /app/.harbor/logs/verifier/reward.txt; cd /app/.harbor/tests; ls /app/tests'
    """
    return _HARBOR_PATH.sub(lambda m: f"{harbor_root}/{m.group(1)}", text)


def resolve_env(env: Mapping[str, str], *, where: str) -> dict[str, str]:
    """Resolve Harbor's ``${VAR}`` and ``${VAR:-default}`` templates in values from this process's environment.

    Raises:
        EnvironmentSetupError: a template names an unset variable with no default.
    """
    resolved = {}
    for name, value in env.items():
        def replace(match: re.Match[str], name: str = name) -> str:
            var, default = match.group(1), match.group(2)
            if var in os.environ:
                return os.environ[var]
            if default is not None:
                return default
            raise EnvironmentSetupError(f"{where} {name} needs ${{{var}}}, which is not set here; set it or give "
                                        f"a default as ${{{var}:-value}}")
        resolved[name] = _TEMPLATE.sub(replace, str(value))
    return resolved


def _text_or_bytes(data: bytes, harbor_root: str | None) -> bytes:
    if harbor_root is None or b"\0" in data:
        return data
    try:
        return rewrite_harbor_paths(data.decode("utf-8"), harbor_root).encode("utf-8")
    except UnicodeDecodeError:
        return data


def _dir_files(source: Path) -> dict[str, tuple[bytes, bool]]:
    return {file.relative_to(source).as_posix(): (file.read_bytes(), bool(file.stat().st_mode & 0o111))
            for file in sorted(source.rglob("*")) if file.is_file() and "__pycache__" not in file.parts}


_READ_FILES = (
    "import base64, json, sys\n"
    "out = {}\n"
    "for p in json.loads(sys.argv[1]):\n"
    "    try:\n"
    "        out[p] = base64.b64encode(open(p, 'rb').read(1 << 20)).decode()\n"
    "    except OSError:\n"
    "        out[p] = None\n"
    "print(json.dumps(out))\n"
)


_UNTAR = ("import sys, tarfile; safe = {'filter': 'tar'} if hasattr(tarfile, 'tar_filter') else {}; "
          "tarfile.open(sys.argv[1]).extractall(sys.argv[2], **safe)")


def _check_workspace(config: SandboxConfig, task: str) -> None:
    """Refuse a workspace inside or around a host folder the sandbox mounts read-only (e.g. /usr/src/app).

    The sandbox cannot create its writable scratch dir there, and a scratch dir above a mount would hide it.
    """
    workspace = config.workdir.rstrip("/") + "/"
    for mounted in (*config.system_paths, *config.ro_paths, *python_roots(config)):
        for path in {os.path.normpath(mounted), os.path.realpath(mounted)}:
            path = path.rstrip("/") + "/"
            if workspace.startswith(path) or path.startswith(workspace):
                raise EnvironmentSetupError(
                    f"task {task}: its WORKDIR {config.workdir} overlaps {path.rstrip('/')}, which the sandbox mounts "
                    "read-only from the host; the sandbox cannot make it the writable workspace. Use --env docker, "
                    "or a WORKDIR such as /app")


class SandboxTaskEnv:
    """The task's workspace in the OS sandbox (see the module docstring for the path mapping).

    Args:
        task: the task; its Dockerfile is read now (raises EnvironmentSetupError when unsupported).
        python: interpreter used inside (default: this one, which is mounted read-only).
    """

    backend = "sandbox"
    socket_parent: str | None = None

    def __init__(self, task: HarborTask, *, python: str | None = None) -> None:
        self.task = task
        self.plan = parse_dockerfile(task.environment_dir)
        self.workspace, self.workdir = self.plan.workspace, self.plan.workdir
        self.harbor_root = f"{self.workspace.rstrip('/')}/{HARBOR_DIR}"
        settings = task.config.environment
        env = {**resolve_env(settings.env, where="[environment] env"), **self.plan.env}
        limits = SandboxLimits(
            wall_time_s=600.0, cpu_time_s=None, memory_bytes=max(settings.memory_mb, 256) * MiB, max_processes=256,
            max_open_files=1024, max_output_bytes=1 * MiB, scratch_bytes=min(settings.storage_mb * MiB, _STORAGE_CAP))
        try:
            self.config = SandboxConfig(workdir=self.workspace, limits=limits, env=env)
            if python:
                self.config = dataclasses.replace(self.config, python=python)
        except ValueError as exc:
            raise EnvironmentSetupError(f"task {task.name}: cannot build its sandbox: {exc}") from None
        _check_workspace(self.config, task.name)
        self._box: Sandbox | None = None
        self._files: dict[str, bytes] = {}
        self._prep: list[str] = []
        self._shared: list[str] = []

    async def start(self) -> None:
        """Create the sandbox, place the Dockerfile's files and run its RUN steps, in order."""
        try:
            self._box = Sandbox(self.config)
        except SandboxError as exc:
            raise EnvironmentSetupError(f"no sandbox for task {self.task.name}: {exc}") from None
        dirs = [self.path(f"/logs/{d}") for d in ("agent", "verifier", "artifacts")] + [self.workdir]
        self._prep.append("mkdir -p " + " ".join(shlex.quote(d) for d in dirs))
        for step in self.plan.steps:
            if isinstance(step, CopyStep):
                self._stage(step.files)
                continue
            cwd = shlex.quote(step.cwd)
            await self._checked(f"mkdir -p {cwd} && cd {cwd} && {step.command}", env=step.env,
                                what=f"Dockerfile step {step.line!r}",
                                timeout_s=self.task.config.environment.build_timeout_sec)
        if self._files or self._prep:
            await self._checked("true", what="placing the environment's files")

    def _stage(self, files: Mapping[str, tuple[bytes, bool]]) -> None:
        """Queue files (paths relative to the workspace) to be placed by the next run."""
        self._files.update({name: content for name, (content, _) in files.items()})
        executables = [shlex.quote(name) for name, (_, executable) in files.items() if executable]
        if executables:
            self._prep.append(f"chmod +x -- {' '.join(executables)}")

    async def _checked(self, command: str, *, what: str, env: Mapping[str, str] | None = None,
                       timeout_s: float = 60.0) -> None:
        result = await self._run(command, timeout_s=timeout_s, env=env, cwd=self.workspace)
        if result.exit_code != 0 or result.timed_out:
            tail = (result.stderr or result.stdout)[-1500:]
            cause = f"timed out after {timeout_s:g}s" if result.timed_out else f"exit code {result.exit_code}"
            raise EnvironmentSetupError(f"task {self.task.name}: {what} failed in the sandbox ({cause}): {tail}")

    async def _run(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None,
                   cwd: str | None = None, config: SandboxConfig | None = None) -> ExecResult:
        """One sandbox run: place queued files, run queued preparation, then ``command`` in ``cwd``."""
        if self._box is None:
            raise EnvironmentSetupError("the sandbox is not started; call start() first")
        files, prep = self._files, self._prep
        self._files, self._prep = {}, []
        script = f"cd {shlex.quote(self.workspace)} || exit 1\n"
        if prep:
            script += f"{' && '.join(prep)} || {{ echo 'harbor: preparing the workspace failed' >&2; exit 97; }}\n"
        script += f"cd {shlex.quote(cwd or self.workdir)} || exit 1\n{command}"
        argv = ["env", *(f"{k}={v}" for k, v in (env or {}).items()), "bash", "-c", script]
        result = await self._box.arun(argv, files=files or None, timeout_s=max(timeout_s, 0.05), config=config)
        return ExecResult(stdout=result.stdout, stderr=result.stderr, exit_code=result.exit_code,
                          timed_out=result.killed_reason == "wall_time", truncated=result.truncated,
                          duration_s=result.duration_s)

    async def exec(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None) -> ExecResult:
        """Run ``command`` with bash in the workspace's WORKDIR; files it writes there persist."""
        return await self._run(command, timeout_s=timeout_s, env=env)

    async def exec_program(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None,
                           ro_paths: Sequence[str] = (), socket_dir: str | None = None) -> ExecResult:
        """:meth:`exec` with ``ro_paths`` mounted read-only, ``socket_dir`` read-write and no memory cap
        (see :meth:`TaskEnvironment.exec_program`); the sandbox still has no network."""
        config = dataclasses.replace(
            self.config, ro_paths=(*self.config.ro_paths, *ro_paths),
            rw_paths=(*self.config.rw_paths, *([socket_dir] if socket_dir else [])),
            limits=dataclasses.replace(self.config.limits, memory_bytes=None))
        return await self._run(command, timeout_s=timeout_s, env=env, config=config)

    async def upload_dir(self, source: Path, harbor_dir: str) -> None:
        """Replace ``harbor_dir`` by a copy of ``source`` (text files get the Harbor path mapping).

        Like :meth:`reset_dir`, this is queued and done at the start of the next run.
        """
        target = self.path(harbor_dir)
        incoming = f"{HARBOR_DIR}/incoming/{uuid.uuid4().hex[:12]}"
        self._stage({f"{incoming}/{name}": (_text_or_bytes(data, self.harbor_root), executable)
                     for name, (data, executable) in _dir_files(source).items()})
        quoted = shlex.quote(target)
        self._prep.append(f"mkdir -p {incoming} && rm -rf {quoted} && mkdir -p {shlex.quote(os.path.dirname(target))} "
                          f"&& mv {incoming} {quoted} && {{ rmdir {HARBOR_DIR}/incoming 2>/dev/null || true; }}")

    async def reset_dir(self, harbor_dir: str) -> None:
        """Empty (and recreate) ``harbor_dir`` at the start of the next run."""
        target = shlex.quote(self.path(harbor_dir))
        self._prep.append(f"rm -rf {target} && mkdir -p {target}")

    async def read_files(self, harbor_paths: list[str]) -> dict[str, bytes | None]:
        """Read files (up to 1 MiB each) through a short Python run in the sandbox."""
        mapped = {self.path(p): p for p in harbor_paths}
        result = await self._run(shlex.join([self.config.python, "-I", "-c", _READ_FILES, json.dumps(list(mapped))]),
                                 timeout_s=30.0)
        try:
            found = json.loads(result.stdout)
        except ValueError:
            raise EnvironmentSetupError(f"could not read {', '.join(harbor_paths)} from the sandbox: "
                                        f"{result.stderr[-500:]}") from None
        return {mapped[p]: (base64.b64decode(v) if v is not None else None) for p, v in found.items()}

    def path(self, harbor_path: str) -> str:
        """``/logs/x`` -> ``<workspace>/.harbor/logs/x`` (likewise /tests, /solution); other paths unchanged."""
        return rewrite_harbor_paths(harbor_path, self.harbor_root)

    async def stdio_command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as a long-lived sandboxed process (same limits, variables and paths as :meth:`exec`) that
        starts from a copy of the workspace as it is now, in the WORKDIR.

        Runs of the sandbox go one at a time and each restores the workspace, so the process gets its own
        copy: it sees the files the agent wrote before it started, and what it writes is not seen by later
        commands (nor are later commands' files seen by it).
        """
        if self._box is None:
            raise EnvironmentSetupError("the sandbox is not started; call start() first")
        if self._files or self._prep:
            await self._checked("true", what="placing the environment's files")
        shared = tempfile.mkdtemp(prefix="openenv-harbor-stdio-")
        self._shared.append(shared)
        snapshot = self._box._state_path  # the workspace as the last run left it
        restore = ""
        if os.path.exists(snapshot):
            copy = os.path.join(shared, "workspace.tar")
            shutil.copyfile(snapshot, copy)
            os.chmod(copy, 0o644)
            restore = (shlex.join([self.config.python, "-I", "-c", _UNTAR, copy, self.workspace])
                       + " || exit 97\n")
        script = f"{restore}mkdir -p {shlex.quote(self.workdir)} && cd {shlex.quote(self.workdir)} || exit 1\n" \
                 f"exec {shlex.join(argv)}"
        server_limits = dataclasses.replace(self.config.limits, cpu_time_s=None)
        config = dataclasses.replace(self.config, limits=server_limits)
        try:
            return sandboxed_command(["bash", "-c", script], config, shared_dir=shared)
        except SandboxError as exc:
            raise EnvironmentSetupError(f"no sandbox for task {self.task.name}: {exc}") from None

    async def close(self) -> None:
        """Delete the sandbox and its scratch dir."""
        if self._box is not None:
            self._box.close()
        for shared in self._shared:
            shutil.rmtree(shared, ignore_errors=True)
        self._shared.clear()


async def _docker_cli(docker: str, *args: str, timeout_s: float, stdin: bytes | None = None) -> ExecResult:
    """``docker <args>`` through :mod:`openenv_train.containers`, as an :class:`ExecResult`."""
    done = await docker_command_async(args, docker=docker, timeout_s=timeout_s, stdin=stdin)
    return ExecResult(**dataclasses.asdict(done))


class DockerTaskEnv:
    """The task in a Docker container built from ``environment/`` (Harbor's own setup; paths unchanged).

    ``/logs`` is a bind mount of a host temp folder; /tests and /solution are copied in with ``docker cp``.
    The image is kept (tagged ``openenv-harbor-<task>:<checksum>``) so that later attempts start fast.

    Args:
        program_paths: host paths mounted read-only at the same place when the container starts: what
            :meth:`exec_program` runs (an agent's installation, the host's Python for the proxy forwarder). A host
            folder for sockets (``socket_parent``) is mounted read-write the same way.
    """

    backend = "docker"

    def __init__(self, task: HarborTask, *, docker: str = "docker", base_image: str | None = None,
                 program_paths: Sequence[str] = ()) -> None:
        self.task, self.docker = task, docker
        self.program_paths = tuple(os.path.realpath(path) for path in program_paths if os.path.exists(path))
        self.socket_parent: str | None = None
        self.base_image = base_image if task.config.environment.docker_image is None else None
        self.workdir = "/"
        # the base is part of the tag: the same task built on another base is another image
        rebased = "" if self.base_image is None else "-" + hashlib.sha256(self.base_image.encode()).hexdigest()[:8]
        self.image = task.config.environment.docker_image or (
            f"openenv-harbor-{re.sub(r'[^a-z0-9_.-]+', '-', task.name.lower())}:{task.checksum}{rebased}")
        self.container: str | None = None
        self._logs = Path(tempfile.mkdtemp(prefix="openenv-harbor-logs-"))

    async def _docker(self, *args: str, timeout_s: float = 120.0, what: str) -> ExecResult:
        result = await _docker_cli(self.docker, *args, timeout_s=timeout_s)
        if result.exit_code != 0 or result.timed_out:
            raise EnvironmentSetupError(f"task {self.task.name}: {what} failed: {(result.stderr or result.stdout)[-1500:]}")
        return result

    async def _build(self, timeout_s: float) -> None:
        """``docker build`` of environment/, its FROM images replaced by ``base_image`` when one is given."""
        context = self.task.environment_dir
        args, stdin = ["build", "-q", "-t", self.image], None
        if self.base_image is not None:
            stdin = rebase_dockerfile((context / "Dockerfile").read_text(encoding="utf-8"), self.base_image).encode()
            args += ["-f", "-"]
        result = await _docker_cli(self.docker, *args, str(context), timeout_s=timeout_s, stdin=stdin)
        if result.exit_code != 0 or result.timed_out:
            cause = f"timed out after {timeout_s:g}s ([environment] build_timeout_sec)" if result.timed_out else \
                f"exit code {result.exit_code}"
            hint = "" if self.base_image is not None else (
                "; if the engine cannot pull the Dockerfile's FROM image (offline), build on a local image with "
                "--docker-base-image IMAGE (HarborRunConfig.docker_base_image)")
            raise EnvironmentSetupError(f"task {self.task.name}: docker build failed ({cause}): "
                                        f"{(result.stderr or result.stdout)[-1500:].strip()}{hint}")

    async def _cpus(self, wanted: int) -> int:
        """``wanted`` capped at the engine's CPU count: ``docker run --cpus`` refuses more than the host has."""
        info = await _docker_cli(self.docker, "info", "--format", "{{.NCPU}}", timeout_s=30)
        try:
            return max(1, min(wanted, int(info.stdout.strip())))
        except ValueError:
            return wanted

    async def start(self) -> None:
        """Build the image (unless ``docker_image`` is given) and start a container that sleeps."""
        settings = self.task.config.environment
        if settings.docker_image is None:
            if not (self.task.environment_dir / "Dockerfile").is_file():
                raise UnsupportedTaskFeature(f"task {self.task.name}: only environment/Dockerfile is supported by the "
                                             "docker backend (docker-compose environments are not, yet)")
            await self._build(settings.build_timeout_sec)
        os.chmod(self._logs, 0o777)  # the container's user may not be ours
        for sub in ("agent", "verifier", "artifacts"):
            (self._logs / sub).mkdir(parents=True, exist_ok=True)
            os.chmod(self._logs / sub, 0o777)
        name = f"openenv-harbor-{uuid.uuid4().hex[:12]}"
        env = resolve_env(settings.env, where="[environment] env")
        mounts = [arg for path in self.program_paths for arg in ("-v", f"{path}:{path}:ro")]
        if self.program_paths:
            self.socket_parent = tempfile.mkdtemp(prefix="openenv-harbor-sockets-", dir="/tmp")
            os.chmod(self.socket_parent, 0o755)
            mounts += ["-v", f"{self.socket_parent}:{self.socket_parent}"]
        args = ["run", "-d", "--name", name, "--init", "-v", f"{self._logs}:/logs", *mounts,
                f"--memory={settings.memory_mb}m", f"--cpus={await self._cpus(settings.cpus)}",
                *(["--network", "none"] if not settings.allow_internet else []),
                *(arg for k, v in env.items() for arg in ("-e", f"{k}={v}")),
                "--entrypoint", "sleep", self.image, "infinity"]
        self.container = (await self._docker(*args, what="docker run")).stdout.strip() or name
        inspect = await self._docker("inspect", "-f", "{{.Config.WorkingDir}}", self.image, what="docker inspect")
        self.workdir = inspect.stdout.strip() or "/"

    async def exec(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None) -> ExecResult:
        """``docker exec`` bash in the WORKDIR; on timeout the host-side exec is killed (processes it started in
        the container may outlive it until the container is removed)."""
        if self.container is None:
            raise EnvironmentSetupError("the container is not started; call start() first")
        env_args = [arg for k, v in (env or {}).items() for arg in ("-e", f"{k}={v}")]
        return await _docker_cli(self.docker, "exec", "-w", self.workdir, *env_args, self.container, "bash", "-c",
                                 command, timeout_s=timeout_s)

    async def exec_program(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None,
                           ro_paths: Sequence[str] = (), socket_dir: str | None = None) -> ExecResult:
        """:meth:`exec`, for a program whose paths were mounted when the container started (``program_paths``);
        ``socket_dir`` must be a folder in ``socket_parent``.

        Raises:
            EnvironmentSetupError: a path was not mounted at the start.
        """
        missing = [path for path in ro_paths if not any(
            os.path.realpath(path) == root or os.path.realpath(path).startswith(root + "/") for root in self.program_paths)]
        outside = socket_dir is not None and (self.socket_parent is None
                                              or os.path.dirname(socket_dir) != self.socket_parent)
        if missing or outside:
            raise EnvironmentSetupError(
                f"task {self.task.name}: {', '.join(missing) or socket_dir} was not mounted when the container "
                "started; give the agent's paths to DockerTaskEnv(program_paths=...) (run_task takes them from the "
                "agent's host_paths)")
        return await self.exec(command, timeout_s=timeout_s, env=env)

    async def upload_dir(self, source: Path, harbor_dir: str) -> None:
        """``docker cp`` a folder's contents to ``harbor_dir``."""
        assert self.container is not None
        await self._docker("exec", self.container, "sh", "-c", f"rm -rf {shlex.quote(harbor_dir)} && mkdir -p "
                           f"{shlex.quote(harbor_dir)}", what=f"creating {harbor_dir}")
        await self._docker("cp", f"{source}/.", f"{self.container}:{harbor_dir}", what=f"docker cp to {harbor_dir}")

    async def reset_dir(self, harbor_dir: str) -> None:
        """Empty ``harbor_dir`` in the container."""
        assert self.container is not None
        quoted = shlex.quote(harbor_dir)
        await self._docker("exec", self.container, "sh", "-c", f"rm -rf {quoted} && mkdir -p {quoted} && "
                           f"chmod 777 {quoted}", what=f"emptying {harbor_dir}")

    async def read_files(self, harbor_paths: list[str]) -> dict[str, bytes | None]:
        """Read /logs files from the bind mount, others with ``docker exec cat``."""
        out: dict[str, bytes | None] = {}
        for path in harbor_paths:
            if path.startswith("/logs/"):
                host = self._logs / path.removeprefix("/logs/")
                out[path] = host.read_bytes() if host.is_file() else None
            else:
                assert self.container is not None
                result = await _docker_cli(self.docker, "exec", self.container, "cat", path, timeout_s=30)
                out[path] = result.stdout.encode() if result.exit_code == 0 else None
        return out

    def path(self, harbor_path: str) -> str:
        """Harbor paths are real in a container."""
        return harbor_path

    async def stdio_command(self, argv: Sequence[str]) -> list[str]:
        """``docker exec -i`` of ``argv`` in the WORKDIR of the running container."""
        if self.container is None:
            raise EnvironmentSetupError("the container is not started; call start() first")
        # The MCP SDK starts stdio servers with a minimal environment: keep the variables that choose the engine
        # (DOCKER_HOST, DOCKER_CONTEXT, ...), or the exec would go to the default engine, not this container's.
        engine = [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("DOCKER_")]
        return [*(["env", *engine] if engine else []), self.docker, "exec", "-i", "-w", self.workdir, self.container,
                *argv]

    async def close(self) -> None:
        """Remove the container (the image stays) and the host logs and sockets folders."""
        if self.container is not None:
            await _docker_cli(self.docker, "rm", "-f", self.container, timeout_s=60)
            self.container = None
        shutil.rmtree(self._logs, ignore_errors=True)
        if self.socket_parent is not None:
            shutil.rmtree(self.socket_parent, ignore_errors=True)
