"""Wire types of the OpenEnv protocol: Action, Observation, State, StepResult.

These are pydantic models with the exact semantics OpenEnv peers expect
(as OpenEnv's own types): actions and observations reject unknown fields, states
accept extra keys, and an observation travels split on the wire as
``{"observation": {own fields}, "reward": r, "done": d, "metadata": {...}}``.
"""

from __future__ import annotations

import enum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Action",
    "EnvMetadata",
    "Observation",
    "ServerMode",
    "State",
    "StepResult",
    "observation_to_wire",
]

class ServerMode(enum.StrEnum):
    """What an env server serves, as OpenEnv's ``ServerMode``: ``simulation`` serves the stateless HTTP control
    routes (``/reset``, ``/step``, ``/state``) too; ``production`` leaves them out (``/ws``, ``/mcp``,
    ``/health``, ``/schema``, ``/metadata`` stay), so only sessions drive an env."""

    SIMULATION = "simulation"
    PRODUCTION = "production"

    @classmethod
    def parse(cls, value: ServerMode | str) -> ServerMode:
        """``value`` as a mode (any case); a clear ValueError names the valid ones."""
        if isinstance(value, ServerMode):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise ValueError(f"unknown server mode {value!r}: use one of {[m.value for m in cls]}") from None


#: Keys that the wire carries beside the observation's own fields.
OBSERVATION_ENVELOPE_KEYS = {"done", "reward", "metadata"}


class Action(BaseModel):
    """Base class of every action: the env's own fields plus ``metadata``."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)

    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form data attached to the action.")


class Observation(BaseModel):
    """Base class of every observation: the env's own fields plus done/reward/metadata."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)

    done: bool = Field(default=False, description="Whether the episode has ended.")
    reward: float | None = Field(default=None, description="Reward of the last step, or null.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form data from the env.")


class State(BaseModel):
    """Episode state: always ``episode_id`` and ``step_count``; extra keys allowed."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)

    episode_id: str | None = Field(default=None, description="Id of the current episode.")
    step_count: int = Field(default=0, ge=0, description="Steps taken in the current episode.")


class EnvMetadata(BaseModel):
    """What ``GET /metadata`` reports about an environment."""

    name: str
    description: str = ""
    readme_content: str | None = None
    version: str = "0.1.0"
    author: str | None = None
    documentation_url: str | None = None


ObsT = TypeVar("ObsT")


class StepResult(BaseModel, Generic[ObsT]):
    """What a client returns from ``reset``/``step``: the observation, its reward and done flag."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    observation: ObsT
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


def observation_to_wire(obs: Observation) -> dict[str, Any]:
    """Split an observation into the wire payload ``{observation, reward, done, metadata}``."""
    own = obs.model_dump(exclude=OBSERVATION_ENVELOPE_KEYS, mode="json")
    return {"observation": own, "reward": obs.reward, "done": obs.done, "metadata": obs.metadata}
