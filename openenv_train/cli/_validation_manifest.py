"""The ``validation:`` block of ``openenv.yaml`` and the runtime plan it names, as OpenEnv 0.10 reads them.

OpenEnv's validator (RFC 008) parses the block into one normalized manifest (reward range and tolerances,
resources, network, capabilities, type tags; with ``execution``, schema 2, a runtime binding whose
``probe_path`` names a JSON runtime plan: a seeded reset and the actions to send). These models accept and
refuse what theirs do, so a folder's ``static.manifest`` outcome is the same under both validators. A parse reads
files only; it never imports the package.
"""

from __future__ import annotations

import json
import math
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..core import OpenEnvTrainError

__all__ = ["ManifestProblem", "RuntimePlan", "RuntimePlanProblem", "load_runtime_plan", "parse_manifest"]

_SCHEMA_HINT = "the normalized manifest schema (OpenEnv's src/openenv/validation/schemas/manifest.schema.json)"
VALIDATION_BLOCK_REMEDIATION = (
    "add a `validation:` block to openenv.yaml declaring reward (range, oracle_tolerance, floor_margin), resources "
    "(cpu, memory_mb, disk_mb, episode_timeout_s), capabilities (verifier, oracle, ...), and types (tags); see "
    + _SCHEMA_HINT)
SCHEMA_REMEDIATION = f"fix the `validation:` block in openenv.yaml so it matches {_SCHEMA_HINT}"


class ManifestProblem(OpenEnvTrainError):
    """The declarations do not make a valid manifest: ``errors`` (one line each) and the ``remediation``."""

    def __init__(self, errors: list[str], remediation: str | None = None) -> None:
        super().__init__("; ".join(errors))
        self.errors, self.remediation = errors, remediation


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Reward(_Strict):
    range: tuple[float, float] = (0.0, 1.0)
    oracle_tolerance: float = Field(default=0.0, ge=0.0)
    floor_margin: float = Field(ge=0.0)
    variance_tolerance: float | None = Field(default=None, ge=0.0)

    @model_validator(mode="after")
    def _increasing(self) -> Reward:
        if not self.range[0] < self.range[1]:
            raise ValueError(f"reward range must be strictly increasing, got {self.range}")
        return self


class JudgePin(_Strict):
    model: str
    version: str
    params: dict[str, Any] = Field(default_factory=dict)


class Oracle(_Strict):
    form: Literal["injected_state", "script"]
    location: str


class Verifier(_Strict):
    kind: Literal["reward_channel", "script"]
    entry: str | None = None

    @model_validator(mode="after")
    def _entry_matches_kind(self) -> Verifier:
        if self.kind == "script" and self.entry is None:
            raise ValueError("verifier.entry is required when verifier.kind is 'script'")
        if self.kind == "reward_channel" and self.entry is not None:
            raise ValueError("verifier.entry is only valid when verifier.kind is 'script'")
        return self


class Resources(_Strict):
    cpu: float = Field(gt=0.0)
    memory_mb: int = Field(gt=0)
    disk_mb: int = Field(gt=0)
    episode_timeout_s: float = Field(gt=0.0)
    gpus: int = Field(default=0, ge=0)
    gpu_types: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _types_need_gpus(self) -> Resources:
        if self.gpu_types and self.gpus == 0:
            raise ValueError("gpu_types is declared but gpus is 0")
        return self


class Network(_Strict):
    mode: Literal["public", "no-network", "allowlist"] = "public"
    allowed_hosts: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _hosts_need_allowlist(self) -> Network:
        if self.mode != "allowlist" and self.allowed_hosts:
            raise ValueError("allowed_hosts is only valid when mode is 'allowlist'")
        if self.mode == "allowlist" and not self.allowed_hosts:
            raise ValueError("mode 'allowlist' requires at least one allowed host")
        return self


class TaskDistribution(_Strict):
    generator_seed: int | None = None
    dataset_version: str | None = None
    generator_model: str | None = None


class Capabilities(_Strict):
    oracle: Oracle | None = None
    verifier: Verifier
    set_state: bool = False
    llm_judged: bool = False
    rubric_tree: bool = False
    task_api: bool = False
    canaries: str | None = None
    declared_tools: list[str] = Field(default_factory=list)
    declared_task_count: dict[str, int] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _injected_state_needs_set_state(self) -> Capabilities:
        if self.oracle is not None and self.oracle.form == "injected_state" and not self.set_state:
            raise ValueError("oracle.form 'injected_state' requires the set_state capability; declare set_state: "
                             "true or use oracle.form 'script'")
        return self


class Types(_Strict):
    tags: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)


class Execution(_Strict):
    """The runtime binding (schema 2): where the runtime plan is; the Dockerfile and context OpenEnv builds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["openenv_ws"] = "openenv_ws"
    probe_path: str = "validation/runtime.json"
    dockerfile: str = "Dockerfile"
    context: str = "."
    agent_boundary: Literal["api"] = "api"
    requires_credentials: bool = Field(default=False, strict=True)

    @field_validator("probe_path", "dockerfile", "context")
    @classmethod
    def _relative(cls, value: str) -> str:
        path = PurePosixPath(value)
        if (not value or "\\" in value or ":" in value or "\x00" in value or path.is_absolute()
                or ".." in path.parts):
            raise ValueError("must be a portable package-relative path without '..'")
        return value

    @field_validator("probe_path", "dockerfile")
    @classmethod
    def _a_file(cls, value: str) -> str:
        if PurePosixPath(value) == PurePosixPath("."):
            raise ValueError("must name a file")
        return value


class Manifest(_Strict):
    """The normalized manifest (schema 1); :class:`ManifestV2` adds ``execution``."""

    manifest_schema_version: Literal["1"]
    name: str
    version: str | None = None
    signature: Literal["openenv.yaml"]
    reward: Reward
    judge: JudgePin | None = None
    resources: Resources
    task_distribution: TaskDistribution | None = None
    network: Network = Field(default_factory=Network)
    capabilities: Capabilities
    types: Types

    @model_validator(mode="after")
    def _judge_iff_llm_judged(self) -> Manifest:
        if self.capabilities.llm_judged:
            if self.judge is None:
                raise ValueError("a judge pin is required when capabilities.llm_judged is true")
            if self.reward.variance_tolerance is None:
                raise ValueError("reward.variance_tolerance is required when capabilities.llm_judged is true")
        elif self.judge is not None:
            raise ValueError("a judge pin is declared but capabilities.llm_judged is false")
        return self


class ManifestV2(Manifest):
    manifest_schema_version: Literal["2"]  # type: ignore[assignment]
    execution: Execution

    @model_validator(mode="after")
    def _finite(self) -> ManifestV2:
        pending: list[Any] = [self.model_dump()]
        while pending:
            value = pending.pop()
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError("schema 2 numeric declarations must be finite")
            if isinstance(value, dict):
                pending.extend(value.values())
            elif isinstance(value, list | tuple):
                pending.extend(value)
        return self


def _errors(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in e['loc']) or 'manifest'}: {e['msg']}" for e in exc.errors()]


def parse_manifest(folder: Path) -> Manifest:
    """The folder's normalized manifest (a :class:`ManifestV2` when ``validation.execution`` is declared).

    Raises:
        ManifestProblem: no ``validation:`` block, bad YAML, or declarations the schema refuses.
    """
    try:
        raw = yaml.safe_load((folder / "openenv.yaml").read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ManifestProblem([f"openenv.yaml is not valid YAML: {exc}"]) from None
    if not isinstance(raw, dict):
        raise ManifestProblem(["openenv.yaml must be a YAML mapping"])
    validation = raw.get("validation")
    if validation is None:
        raise ManifestProblem(["openenv.yaml has no `validation:` block"], VALIDATION_BLOCK_REMEDIATION)
    if not isinstance(validation, dict):
        raise ManifestProblem(["`validation:` must be a mapping"])
    v2 = "execution" in validation
    data: dict[str, Any] = {"manifest_schema_version": "2" if v2 else "1", "signature": "openenv.yaml",
                            "version": raw.get("version"), "judge": validation.get("judge"),
                            "task_distribution": validation.get("task_distribution")}
    for key, value in (("name", raw.get("name")), *((k, validation.get(k)) for k in
                       ("reward", "resources", "capabilities", "types", "network"))):
        if value is not None:
            data[key] = value
    if v2:
        data["execution"] = validation["execution"]
    try:
        return (ManifestV2 if v2 else Manifest).model_validate(data)
    except ValidationError as exc:
        raise ManifestProblem(_errors(exc), SCHEMA_REMEDIATION) from None


# -- the runtime plan --------------------------------------------------------------------------------
MAX_PLAN_BYTES = 65_536


class RuntimePlanProblem(OpenEnvTrainError, ValueError):
    """The runtime plan is missing, outside the package, too big or not what its schema says."""


def _json_data(value: Any, depth: int = 0, budget: list[int] | None = None) -> None:
    """Only JSON data, finite numbers, at most 32 levels and 10,000 nodes (OpenEnv's bounds)."""
    budget = [10_000] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0 or depth > 32:
        raise ValueError("runtime JSON exceeds the node or nesting limit")
    if value is None or type(value) in (bool, int, str):
        return
    if type(value) is float:
        if not math.isfinite(value):
            raise ValueError("runtime JSON numbers must be finite")
        return
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            raise ValueError("runtime JSON object keys must be strings")
        children: Any = value.values()
    elif type(value) is list:
        children = value
    else:
        raise ValueError("runtime inputs must contain only JSON data")
    for child in children:
        _json_data(child, depth + 1, budget)


class PlanReset(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    episode_id: str = Field(min_length=1, max_length=128)
    seed: int = Field(ge=0, le=2**32 - 1)
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("options")
    @classmethod
    def _public(cls, value: dict[str, Any]) -> dict[str, Any]:
        if {"episode_id", "seed"} & value.keys():
            raise ValueError("reset options cannot override episode_id or seed")
        _json_data(value)
        return value


class RuntimePlan(BaseModel):
    """A seeded reset and 1..100 actions, sent on one ``/ws`` session with a ``state`` after each."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    plan_schema_version: Literal["1"]
    reset: PlanReset
    actions: list[dict[str, Any]] = Field(min_length=1, max_length=100)

    @field_validator("actions")
    @classmethod
    def _data(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        _json_data(value)
        return value

    @model_validator(mode="after")
    def _size(self) -> RuntimePlan:
        if len(self.model_dump_json().encode()) > MAX_PLAN_BYTES:
            raise ValueError(f"runtime plan exceeds {MAX_PLAN_BYTES} bytes")
        return self


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError("duplicate runtime JSON key")
        result[key] = value
    return result


def load_runtime_plan(folder: Path, execution: Execution) -> RuntimePlan:
    """The plan at ``execution.probe_path`` (inside the folder; never code).

    Raises:
        RuntimePlanProblem: what is wrong with it (OpenEnv's words).
    """
    try:
        root = folder.resolve(strict=True)
        path = (root / execution.probe_path).resolve(strict=True)
        if not path.is_relative_to(root) or not path.is_file():
            raise ValueError("runtime plan must be a regular file inside the package")
        payload = path.read_bytes()[: MAX_PLAN_BYTES + 1]
        if len(payload) > MAX_PLAN_BYTES:
            raise ValueError(f"runtime plan exceeds {MAX_PLAN_BYTES} bytes")
        raw = json.loads(payload, object_pairs_hook=_unique_keys)
        _json_data(raw)
        return RuntimePlan.model_validate(raw)
    except ValidationError as exc:
        errors = [f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['type']} ({e['msg']})"
                  for e in exc.errors(include_input=False, include_context=False, include_url=False)[:5]]
        raise RuntimePlanProblem("runtime plan schema validation failed: " + "; ".join(errors)) from None
    except json.JSONDecodeError as exc:
        raise RuntimePlanProblem(f"invalid runtime plan JSON at line {exc.lineno}, column {exc.colno}: "
                                 f"{exc.msg}") from None
    except OSError as exc:
        raise RuntimePlanProblem(f"runtime plan could not be read ({type(exc).__name__}); write it at "
                                 f"{execution.probe_path} or change validation.execution.probe_path") from None
    except (ValueError, RecursionError) as exc:
        raise RuntimePlanProblem(f"invalid runtime plan: {exc}") from None
