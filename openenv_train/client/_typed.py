"""Typed env clients as OpenEnv users write them, declared by an env package in a few lines.

An env package declares its client with the action, observation and state types as generic arguments and
its catalog name as a class keyword:

    class WordleEnv(TypedEnvClient[WordleAction, WordleObservation, WordleState], env="wordle"):
        '''Client of the Wordle env.'''

    class EchoEnv(TypedMCPClient[State], env="echo"):
        '''Client of the echo env (MCP tools).'''

and exports it next to its models (``from openenv_train.envs.wordle import WordleEnv, WordleAction``). Then
``async with WordleEnv(base_url=URL) as env``, ``await env.step(WordleAction(...))`` gives typed observations
from any OpenEnv-compatible server (ours or OpenEnv's), ``.sync()`` gives the blocking twin, and
``await WordleEnv.from_env()`` starts the catalog env's server locally.
"""

from __future__ import annotations

import typing
from typing import Any, ClassVar, TypeVar

from ..core import State, StepResult
from ._client import EnvClient
from ._mcp_client import MCPToolClient

__all__ = ["TypedEnvClient", "TypedMCPClient"]

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")
C = TypeVar("C", bound="TypedEnvClient[Any, Any, Any]")

_SLOTS = ("action_type", "observation_type", "state_type")


def _declared_types(cls: type, count: int) -> tuple[Any, ...] | None:
    """The concrete generic arguments ``cls`` was declared with (``Base[A, O, S]``), or None."""
    for base in getattr(cls, "__orig_bases__", ()):
        args = typing.get_args(base)
        origin = typing.get_origin(base)
        if isinstance(origin, type) and issubclass(origin, EnvClient) and len(args) == count \
                and not any(isinstance(arg, TypeVar) for arg in args):
            return args
    return None


class TypedEnvClient(EnvClient[ActT, ObsT, StateT]):
    """Base of an env package's typed client: types from the generic arguments, ``env=`` names the catalog env.

    Example:
        >>> from openenv_train.envs.counter import CounterAction, CounterObservation, CounterState
        >>> class CounterEnv(TypedEnvClient[CounterAction, CounterObservation, CounterState], env="counter"):
        ...     '''Client of the counter env.'''
        >>> CounterEnv.observation_type.__name__, CounterEnv.env_name
        ('CounterObservation', 'counter')
    """

    env_name: ClassVar[str | None] = None
    """The catalog name (or ``module:Class``) that :meth:`from_env` serves when given none."""

    def __init_subclass__(cls, *, env: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = _declared_types(cls, 3)
        if declared is not None:
            for slot, value in zip(_SLOTS, declared, strict=True):
                if slot not in cls.__dict__:  # a class attribute of the subclass wins over the generic argument
                    setattr(cls, slot, value)
        if env is not None:
            cls.env_name = env

    @classmethod
    async def from_env(cls: type[C], env: str | None = None, **kwargs: Any) -> C:  # type: ignore[override]
        """Start this client's env (``env_name`` unless ``env`` is given) locally and connect; see EnvClient."""
        name = env or cls.env_name
        if name is None:
            raise ValueError(f"{cls.__name__} names no env (declare it with env='...' or pass env=)")
        return await super().from_env(name, **kwargs)  # type: ignore[misc]


class TypedMCPClient(MCPToolClient, TypedEnvClient[Any, Any, StateT]):
    """Base of an MCP env's typed client: ``list_tools()``/``call_tool()`` plus typed ``state()``.

    Steps take ``CallToolAction``/``ListToolsAction`` (or dicts) and give ``CallToolObservation`` /
    ``ListToolsObservation``, so ``(await env.step(CallToolAction(...))).observation.result["data"]`` works
    as with OpenEnv's clients. Other observations (a reset's) are parsed as ``observation_type`` when set.
    """

    state_type: ClassVar[Any] = State

    def __init_subclass__(cls, *, env: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(env=env, **kwargs)
        declared = _declared_types(cls, 1)
        if declared is not None and "state_type" not in cls.__dict__:
            cls.state_type = declared[0]

    def _result(self, data: dict[str, Any]) -> StepResult[Any]:
        own = data.get("observation") or {}
        if self.observation_type is None or "tools" in own or "tool_name" in own:
            return super()._result(data)
        return EnvClient._result(self, data)  # the env's own observation (e.g. a question on reset)

