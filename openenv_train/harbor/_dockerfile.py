"""The part of a task's ``environment/Dockerfile`` that the OS sandbox can honour, as a build plan.

The sandbox has no image: the host's programs and Python are mounted read-only, and the only writable place
is the task's workspace (the first ``WORKDIR``, default ``/app``). So:

- ``FROM`` is recorded but not pulled; ``WORKDIR`` sets the workspace (later ones must lie inside the first);
- ``COPY``/``ADD`` of files from ``environment/`` to a path inside the workspace are placed there;
- ``ENV`` (and ``ARG`` defaults) become variables of every command; ``RUN`` runs in the sandbox, offline;
- ``CMD``, ``ENTRYPOINT``, ``USER``, ``EXPOSE``, ``LABEL``, ``VOLUME``, ``HEALTHCHECK``, ``SHELL``,
  ``STOPSIGNAL`` are ignored; ``COPY --from`` (multi-stage builds) and targets outside the workspace are
  refused with :class:`EnvironmentSetupError` (run such tasks with the Docker backend).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from ._task_errors import EnvironmentSetupError

__all__ = ["DEFAULT_WORKDIR", "BuildPlan", "CopyStep", "RunStep", "parse_dockerfile", "rebase_dockerfile"]

DEFAULT_WORKDIR = "/app"
_IGNORED = {"CMD", "ENTRYPOINT", "USER", "EXPOSE", "LABEL", "VOLUME", "HEALTHCHECK", "SHELL", "STOPSIGNAL",
            "ONBUILD", "MAINTAINER"}
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class CopyStep:
    """Files to place: ``{path relative to the workspace: (content, executable)}``."""

    files: dict[str, tuple[bytes, bool]]
    line: str


@dataclass(frozen=True)
class RunStep:
    """A shell command to run in ``cwd`` (absolute, inside the workspace) with ``env``."""

    command: str
    cwd: str
    env: dict[str, str]
    line: str


@dataclass
class BuildPlan:
    """What building the environment means in the sandbox."""

    workspace: str = DEFAULT_WORKDIR
    """The writable root (the sandbox's scratch dir): the first WORKDIR."""
    workdir: str = DEFAULT_WORKDIR
    """Where commands start: the last WORKDIR."""
    base_image: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    steps: list[CopyStep | RunStep] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def _logical_lines(text: str) -> list[str]:
    lines, current = [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append((current + stripped).strip())
        current = ""
    if current.strip():
        lines.append(current.strip())
    return lines


def _substitute(value: str, variables: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        return variables.get(name, match.group(2) or "")

    return _VAR.sub(replace, value)


def _args(rest: str) -> list[str]:
    """The operands of COPY/ADD: JSON array form or whitespace separated; ``--flag`` options removed."""
    if rest.startswith("["):
        try:
            parts = json.loads(rest)
        except ValueError:
            parts = None
        if isinstance(parts, list) and all(isinstance(p, str) for p in parts):
            return parts
    return rest.split()


def parse_dockerfile(environment_dir: Path) -> BuildPlan:
    """Read ``environment_dir/Dockerfile`` into a :class:`BuildPlan` (files are read from the build context).

    Raises:
        EnvironmentSetupError: no Dockerfile (e.g. a docker-compose task), or an instruction the sandbox
            cannot honour; the message names the line and suggests the Docker backend.
    """
    dockerfile = environment_dir / "Dockerfile"
    if not dockerfile.is_file():
        found = sorted(p.name for p in environment_dir.iterdir()) if environment_dir.is_dir() else []
        raise EnvironmentSetupError(
            f"environment/Dockerfile is missing in {environment_dir.parent} (found: {', '.join(found) or 'nothing'}); "
            "the sandbox backend builds from a Dockerfile only; docker-compose tasks need --env docker")
    plan = BuildPlan()
    variables: dict[str, str] = {}
    workdir_seen = False
    for line in _logical_lines(dockerfile.read_text(encoding="utf-8")):
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            plan.base_image = rest.split()[0] if rest else None
        elif keyword == "ARG":
            name, eq, default = rest.partition("=")
            if eq:
                variables.setdefault(name.strip(), _substitute(default.strip().strip('"'), variables))
        elif keyword == "ENV":
            for name, value in _env_pairs(rest):
                value = _substitute(value, variables)
                variables[name] = plan.env[name] = value
        elif keyword == "WORKDIR":
            target = posixpath.normpath(posixpath.join(plan.workdir, _substitute(rest.strip('"'), variables)))
            if not workdir_seen:
                plan.workspace = target
                workdir_seen = True
            elif not _inside(target, plan.workspace):
                raise EnvironmentSetupError(
                    f"Dockerfile: {line!r} leaves the workspace {plan.workspace} (the first WORKDIR); the sandbox "
                    "can only write there; use --env docker for this task")
            plan.workdir = target
        elif keyword in ("COPY", "ADD"):
            plan.steps.append(_copy(line, rest, environment_dir, plan, variables))
        elif keyword == "RUN":
            command = rest
            if rest.startswith("["):
                try:
                    command = " ".join(json.loads(rest))
                except (ValueError, TypeError):
                    command = rest
            plan.steps.append(RunStep(command=command, cwd=plan.workdir, env=dict(plan.env), line=line))
        elif keyword in _IGNORED:
            plan.ignored.append(line)
        else:
            raise EnvironmentSetupError(f"Dockerfile: unknown instruction {keyword!r} in {line!r}")
    if plan.workspace in ("/", "/tmp", "/proc", "/dev", "/dev/shm"):
        raise EnvironmentSetupError(f"Dockerfile: WORKDIR {plan.workspace} cannot be the sandbox workspace; "
                                    "use a folder such as /app, or --env docker")
    return plan


_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)


def rebase_dockerfile(text: str, base_image: str) -> str:
    """``text`` with the image of every ``FROM`` replaced by ``base_image`` (stages named by an earlier ``AS``
    stay), for engines that cannot pull the task's base image.

    >>> rebase_dockerfile("FROM python:3.12-slim AS build\\nRUN true\\nFROM build\\n", "local/py:3")
    'FROM local/py:3 AS build\\nRUN true\\nFROM build\\n'
    """
    stages: set[str] = set()
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        match = _FROM.match(body)
        if match is not None:
            head, flags, image, rest = match.groups()
            if image.lower() not in stages:
                line = f"{head}{flags}{base_image}{rest}{line[len(body):]}"
            alias = re.search(r"\bAS\s+(\S+)", rest, re.IGNORECASE)
            if alias:
                stages.add(alias.group(1).lower())
        lines.append(line)
    return "".join(lines)


def _env_pairs(rest: str) -> list[tuple[str, str]]:
    if "=" not in rest.split(" ", 1)[0]:  # legacy form: ENV NAME value with spaces
        name, _, value = rest.partition(" ")
        return [(name, value.strip())]
    pairs = []
    for token in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)', rest):
        name, value = token
        if value.startswith('"') and value.endswith('"'):
            value = value[1:-1].replace('\\"', '"')
        pairs.append((name, value))
    return pairs


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _copy(line: str, rest: str, context: Path, plan: BuildPlan, variables: dict[str, str]) -> CopyStep:
    operands = [_substitute(arg, variables) for arg in _args(rest)]
    flags = [arg for arg in operands if arg.startswith("--")]
    operands = [arg for arg in operands if not arg.startswith("--")]
    if any(flag.startswith("--from") for flag in flags):
        raise EnvironmentSetupError(f"Dockerfile: {line!r} copies from another build stage; use --env docker")
    if len(operands) < 2:
        raise EnvironmentSetupError(f"Dockerfile: {line!r} needs a source and a destination")
    *sources, dest = operands
    target = posixpath.normpath(posixpath.join(plan.workdir, dest))
    if not _inside(target, plan.workspace):
        raise EnvironmentSetupError(
            f"Dockerfile: {line!r} copies to {target}, outside the workspace {plan.workspace}; the sandbox can only "
            "place files in the workspace; use --env docker for this task")
    files: dict[str, tuple[bytes, bool]] = {}
    root = context.resolve()
    for source in sources:
        if "://" in source:
            raise EnvironmentSetupError(f"Dockerfile: {line!r} fetches a URL; the sandbox is offline")
        matches = sorted(root.glob(source.lstrip("/"))) if any(c in source for c in "*?[") else [root / source.lstrip("/")]
        for match in matches:
            match = match.resolve()
            if not _inside(str(match), str(root)) or not match.exists():
                raise EnvironmentSetupError(f"Dockerfile: {line!r}: {source} is not in environment/")
            into_dir = (dest.endswith("/") or len(sources) > 1 or len(matches) > 1 or match.is_dir()
                        or target in (plan.workspace, plan.workdir))
            if match.is_dir():
                for file in sorted(p for p in match.rglob("*") if p.is_file()):
                    _add(files, posixpath.join(target, file.relative_to(match).as_posix()), file, plan.workspace)
            else:
                _add(files, posixpath.join(target, match.name) if into_dir else target, match, plan.workspace)
    return CopyStep(files=files, line=line)


def _add(files: dict[str, tuple[bytes, bool]], absolute: str, source: Path, workspace: str) -> None:
    relative = posixpath.relpath(absolute, workspace)
    files[relative] = (source.read_bytes(), bool(source.stat().st_mode & 0o111))
