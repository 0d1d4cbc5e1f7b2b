"""The trace record: TrainingTurn (one model call), TrainingTrace (one episode's calls, OpenEnv's schema)
and TraceRow (one dataset row: the trace plus identity, outcome, env steps and timings; every column is listed in
docs/guides/traces.md, Schema)."""

from __future__ import annotations

import math
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._call_graph import CallGraph, call_graph

__all__ = [
    "ROW_SCHEMA_VERSION",
    "EnvInfo",
    "ErrorInfo",
    "EnvStep",
    "PolicyInfo",
    "TraceRow",
    "TrainingTrace",
    "TrainingTurn",
]

#: Version of :class:`TraceRow`'s layout; readers migrate older rows.
ROW_SCHEMA_VERSION = 1


class TrainingTurn(BaseModel):
    """One model call: what the model saw and produced, token by token (OpenEnv's TrainingTurn)."""

    model_config = ConfigDict(extra="forbid")

    node_id: str = Field(min_length=1, description="Unique id of the turn within its trace.")
    prompt_token_ids: list[int] = Field(default_factory=list)
    completion_token_ids: list[int] = Field(default_factory=list)
    per_token_logps: list[float] = Field(default_factory=list, description="One logprob per completion token.")
    loss_mask: list[int] = Field(default_factory=list, description="0 for prompt positions, 0/1 for completion.")
    request: dict[str, Any] = Field(default_factory=dict, description="`messages` and `tools` sent to the model.")
    response: dict[str, Any] = Field(default_factory=dict, description="`choices` (message, finish_reason).")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Turn index, sampling asked/used, timings.")

    @model_validator(mode="after")
    def _check(self) -> TrainingTurn:
        # builtins over whole lists, not generators: this runs for every captured turn (thousands of ids each)
        if min(self.prompt_token_ids, default=0) < 0 or min(self.completion_token_ids, default=0) < 0:
            raise ValueError(f"turn {self.node_id}: token ids must be >= 0")
        if self.per_token_logps:
            if len(self.per_token_logps) != len(self.completion_token_ids):
                raise ValueError(
                    f"turn {self.node_id}: {len(self.per_token_logps)} logprobs for "
                    f"{len(self.completion_token_ids)} completion tokens; give one per completion token"
                )
            if not all(map(math.isfinite, self.per_token_logps)) or max(self.per_token_logps) > 0:
                raise ValueError(f"turn {self.node_id}: logprobs must be finite and <= 0")
        if self.loss_mask:
            expected = len(self.prompt_token_ids) + len(self.completion_token_ids)
            if len(self.loss_mask) != expected:
                raise ValueError(
                    f"turn {self.node_id}: loss_mask has {len(self.loss_mask)} entries, expected {expected} "
                    "(prompt + completion tokens)"
                )
            if not set(self.loss_mask) <= {0, 1}:
                raise ValueError(f"turn {self.node_id}: loss_mask values must be 0 or 1")
            if any(self.loss_mask[: len(self.prompt_token_ids)]):
                raise ValueError(f"turn {self.node_id}: loss_mask must be 0 over prompt positions")
        return self


class TrainingTrace(BaseModel):
    """The model side of one episode: its turns in order (OpenEnv's TrainingTrace, schema_version 1)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    turns: list[TrainingTurn] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> TrainingTrace:
        ids = [t.node_id for t in self.turns]
        if len(ids) != len(set(ids)):
            raise ValueError("node_id must be unique within a trace")
        return self

    def call_graph(self) -> CallGraph:
        """The turns linked by exact token prefix: parents, lines (main and branches) and prefix breaks."""
        return call_graph(self)


class EnvInfo(BaseModel):
    """Which environment produced the episode."""

    name: str
    version: str | None = None
    url: str | None = None


class PolicyInfo(BaseModel):
    """Which policy produced the turns: model id and version (training step) of its weights."""

    model: str | None = None
    version: int | None = None


class ErrorInfo(BaseModel):
    """Why a rollout failed."""

    type: str
    message: str


class EnvStep(BaseModel):
    """One env step of the episode: the action sent, what came back, and how long it took."""

    action: dict[str, Any] = Field(default_factory=dict)
    observation: dict[str, Any] = Field(default_factory=dict)
    reward: float | None = None
    done: bool = False
    seconds: float | None = None


class TraceRow(BaseModel):
    """One episode as one dataset row: identity, outcome, env steps, model turns and timings."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = ROW_SCHEMA_VERSION
    trace_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    run_id: str = ""
    episode_id: str = ""
    group_id: str | None = None
    env: EnvInfo
    task: dict[str, Any] = Field(default_factory=dict, description="The task/prompt spec of the episode.")
    policy: PolicyInfo = Field(default_factory=PolicyInfo)
    reward: float | None = Field(default=None, description="None = never scored (not the same as 0.0).")
    rewards: dict[str, float | None] = Field(default_factory=dict, description="Named reward components.")
    done: bool = False
    truncated: bool = False
    ok: bool = True
    error: ErrorInfo | None = None
    steps: list[EnvStep] = Field(default_factory=list)
    trace: TrainingTrace = Field(default_factory=TrainingTrace)
    rollout_type: Literal["train", "eval"] = "train"
    timings: dict[str, float] = Field(default_factory=dict, description="Seconds per phase.")

    @model_validator(mode="after")
    def _consistent(self) -> TraceRow:
        if not self.ok and self.error is None:
            raise ValueError("a failed row (ok=False) needs an error (type and message)")
        return self
