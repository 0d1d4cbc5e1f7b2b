"""Harbor task folders: their layout, ``task.toml`` (Harbor's schema) and how to find them.

A task is a folder::

    my-task/
    ├── task.toml          # [metadata], [verifier] timeout_sec/env, [agent] timeout_sec, [environment] ...
    ├── instruction.md     # what the agent is asked to do
    ├── environment/       # Dockerfile (or docker-compose.yaml) and the files it copies in
    ├── tests/test.sh      # run after the agent; writes /logs/verifier/reward.txt or reward.json
    └── solution/solve.sh  # optional: the reference solution the ``oracle`` agent runs

Fields follow Harbor's ``TaskConfig`` (laude-institute/harbor, ``models/task/config.py``). Unknown keys are
accepted (Harbor adds fields often) and reported as warnings with the closest known name.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ._task_errors import TaskFormatError

__all__ = [
    "REQUIRED_FILES",
    "AgentSettings",
    "EnvironmentSettings",
    "HarborTask",
    "McpServerSettings",
    "TaskConfig",
    "TaskInfo",
    "VerifierSettings",
    "find_tasks",
    "load_task",
    "parse_task_config",
]

#: What every task folder must hold (``solution/solve.sh`` is needed only by the ``oracle`` agent).
REQUIRED_FILES = ("task.toml", "instruction.md", "environment", "tests/test.sh")

_CANARY = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([GMK])B?\s*$", re.IGNORECASE)


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class TaskInfo(_Section):
    """``[task]``: the task's package name in the registry (``org/name``) and its description."""

    name: str
    description: str = ""
    authors: list[dict[str, Any]] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _org_name(cls, value: str) -> str:
        if not _NAME.match(value) or ".." in value:
            raise ValueError(f"must be 'org/name' (letters, digits, '.', '_', '-'), got {value!r}")
        return value


class VerifierSettings(_Section):
    """``[verifier]``: how long tests/test.sh may run, and the variables it gets."""

    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)


class AgentSettings(_Section):
    """``[agent]``: how long the agent may work (None: the runner's default)."""

    timeout_sec: float | None = Field(default=None, gt=0)


class McpServerSettings(_Section):
    """One ``[[environment.mcp_servers]]`` entry (parsed; not yet given to agents)."""

    name: str
    transport: Literal["sse", "streamable-http", "stdio"] = "sse"
    url: str | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServerSettings:
        if self.transport != "stdio" and not self.url:
            raise ValueError(f"url is required for transport {self.transport!r}")
        if self.transport == "stdio" and not self.command:
            raise ValueError("command is required for transport 'stdio'")
        return self


class EnvironmentSettings(_Section):
    """``[environment]``: resources and network of the task's container (the sandbox maps what it can)."""

    build_timeout_sec: float = Field(default=600.0, gt=0)
    docker_image: str | None = None
    cpus: int = Field(default=1, ge=1)
    memory_mb: int = Field(default=2048, ge=16)
    storage_mb: int = Field(default=10240, ge=1)
    gpus: int = Field(default=0, ge=0)
    allow_internet: bool = True
    mcp_servers: list[McpServerSettings] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _deprecated_sizes(cls, data: Any) -> Any:
        """Harbor's old ``memory = "2G"`` / ``storage = "10G"`` become ``memory_mb`` / ``storage_mb``."""
        if isinstance(data, dict):
            data = dict(data)
            for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
                if old in data:
                    data.setdefault(new, _size_mb(old, data.pop(old)))
        return data


class SolutionSettings(_Section):
    """``[solution]``: variables the oracle's solve.sh gets."""

    env: dict[str, str] = Field(default_factory=dict)


class TaskConfig(_Section):
    """The whole ``task.toml`` (Harbor's ``TaskConfig``); ``version`` is Harbor's schema version."""

    version: str = "1.0"
    task: TaskInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierSettings = Field(default_factory=VerifierSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    environment: EnvironmentSettings = Field(default_factory=EnvironmentSettings)
    solution: SolutionSettings = Field(default_factory=SolutionSettings)
    source: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _schema_version(cls, data: Any) -> Any:
        if isinstance(data, dict) and "schema_version" in data:
            data = dict(data)
            data.setdefault("version", data.pop("schema_version"))
        return data


def _size_mb(field: str, value: Any) -> Any:
    match = _SIZE.match(str(value))
    if match is None:
        raise ValueError(f"{field} must be a size such as '2G' or '512M', got {value!r}; or give {field}_mb")
    number, unit = float(match.group(1)), match.group(2).upper()
    return int(number * {"G": 1024, "M": 1, "K": 1 / 1024}[unit])


def parse_task_config(text: str, *, task_dir: str = ".") -> tuple[TaskConfig, list[str]]:
    """Parse task.toml text; returns the config and warnings about unknown keys.

    Raises:
        TaskFormatError: the TOML does not parse, or a field has a bad type or value (the field is named).

    Example:
        >>> config, warnings = parse_task_config('[verifier]\\ntimeout_sec = 30\\n[agent]\\ntimeout_secs = 9')
        >>> config.verifier.timeout_sec, warnings
        (30.0, ["task.toml: unknown key [agent] timeout_secs (did you mean 'timeout_sec'?)"])
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(f"task.toml in {task_dir} is not valid TOML: {exc}", task_dir=task_dir,
                              file="task.toml") from None
    try:
        config = TaskConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        problems = "; ".join(_describe(error) for error in exc.errors())
        raise TaskFormatError(f"task.toml in {task_dir}: {problems}", task_dir=task_dir, file="task.toml",
                              field=field) from None
    return config, list(_unknown_keys(config, ""))


def _describe(error: Mapping[str, Any]) -> str:
    loc = [str(part) for part in error["loc"]]
    if len(loc) > 1:
        where = f"[{loc[0]}] {'.'.join(loc[1:])}"
    elif loc and loc[0] in TaskConfig.model_fields and loc[0] not in ("version", "source"):
        where = f"[{loc[0]}]"
    else:
        where = loc[0] if loc else "(top level)"
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"{where} is required"
    value = error.get("input")
    return f"{where}: {message}" + ("" if isinstance(value, dict) else f" (got {value!r})")


def _unknown_keys(model: BaseModel, where: str) -> Iterable[str]:
    known = list(type(model).model_fields)
    for key in model.model_extra or {}:
        hint = difflib.get_close_matches(key, known, n=1)
        name = f"[{where}] {key}" if where else key
        yield f"task.toml: unknown key {name}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
    for name in known:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _unknown_keys(value, f"{where}.{name}" if where else name)


def _strip_canary(text: str) -> str:
    """Drop leading canary comment lines (data-provenance markers not meant for agents), as Harbor does."""
    lines = text.split("\n")
    index = 0
    while index < len(lines) and _CANARY.match(lines[index].strip()):
        index += 1
    while index < len(lines) and not lines[index].strip():
        index += 1
    return "\n".join(lines[index:])


@dataclass(frozen=True)
class HarborTask:
    """A parsed task folder."""

    name: str
    """``[task] name`` when given, else the folder's name."""
    path: Path
    """The task folder (absolute)."""
    instruction: str
    """instruction.md, leading canary lines removed."""
    config: TaskConfig
    """task.toml."""
    warnings: tuple[str, ...] = ()
    """Unknown task.toml keys and similar non-fatal findings."""
    checksum: str = ""
    """A short sha256 over every file of the folder (names and contents): which variant of the task ran."""

    @property
    def environment_dir(self) -> Path:
        """``environment/``: the Docker build context."""
        return self.path / "environment"

    @property
    def tests_dir(self) -> Path:
        """``tests/``: copied to /tests after the agent finishes."""
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path:
        """``solution/``: copied to /solution for the oracle only."""
        return self.path / "solution"

    @property
    def has_solution(self) -> bool:
        """Whether ``solution/solve.sh`` exists."""
        return (self.solution_dir / "solve.sh").is_file()

    def spec(self) -> dict[str, Any]:
        """The task as plain data for a trace row's ``task`` column."""
        return {
            "name": self.name,
            "path": str(self.path),
            "instruction": self.instruction,
            "config": self.config.model_dump(mode="json", exclude_none=True),
            "checksum": self.checksum,
        }


def load_task(path: str | os.PathLike[str]) -> HarborTask:
    """Read and check one task folder.

    Raises:
        TaskFormatError: the folder is missing a required file (named in the message and in ``.file``) or
            its task.toml is invalid.
    """
    task_dir = Path(path).resolve()
    if not task_dir.is_dir():
        raise TaskFormatError(f"{task_dir} is not a folder; give a task folder (with task.toml) or a folder of them",
                              task_dir=str(task_dir), file=".")
    for required in REQUIRED_FILES:
        target = task_dir / required
        exists = target.is_dir() if required == "environment" else target.is_file()
        if not exists:
            kind = "folder" if required == "environment" else "file"
            raise TaskFormatError(
                f"task {task_dir.name}: required {kind} {required} is missing in {task_dir} "
                f"(a Harbor task needs {', '.join(REQUIRED_FILES)})", task_dir=str(task_dir), file=required)
    config, warnings = parse_task_config((task_dir / "task.toml").read_text(encoding="utf-8"), task_dir=str(task_dir))
    instruction = _strip_canary((task_dir / "instruction.md").read_text(encoding="utf-8"))
    if not instruction.strip():
        raise TaskFormatError(f"task {task_dir.name}: instruction.md is empty", task_dir=str(task_dir),
                              file="instruction.md")
    name = config.task.name if config.task is not None else task_dir.name
    return HarborTask(name=name, path=task_dir, instruction=instruction, config=config, warnings=tuple(warnings),
                      checksum=_checksum(task_dir))


def _checksum(folder: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(file.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _looks_like_task(folder: Path) -> bool:
    return any((folder / part).exists() for part in ("task.toml", "instruction.md", "tests", "environment"))


def find_tasks(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Task folders named by ``paths``: each is a task folder (it has task.toml) or a dataset folder whose
    subfolders are tasks. Subfolders that look like broken tasks (instruction.md or tests/ but no task.toml)
    are included so that running them reports what is missing.

    Raises:
        FileNotFoundError: a path does not exist, or holds no task folders.
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw).resolve()
        if not path.exists():
            raise FileNotFoundError(f"{raw}: no such file or folder")
        if path.is_file() and path.name == "task.toml":
            path = path.parent
        if (path / "task.toml").is_file() or (path.is_dir() and _looks_like_task(path) and not _has_subtasks(path)):
            found.append(path)
            continue
        children = sorted(child for child in path.iterdir() if child.is_dir() and _looks_like_task(child))
        if not children:
            raise FileNotFoundError(f"{raw} is neither a task folder (no task.toml) nor a folder of task folders")
        found.extend(children)
    return list(dict.fromkeys(found))


def _has_subtasks(path: Path) -> bool:
    return any(child.is_dir() and (child / "task.toml").is_file() for child in path.iterdir())
