"""The catalog registry: names to lazy ``module:Class`` entry points, with close-match suggestions."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from ..core import EnvLoadError
from ..server import Environment, load_class

__all__ = ["CATALOG", "EnvSpec", "get_spec", "list_envs", "load_env_class", "register"]


@dataclass(frozen=True)
class EnvSpec:
    """A catalog entry: name, lazy entry point and a one-line description."""

    name: str
    entry_point: str
    description: str
    action: str = ""
    """The action's shape, e.g. ``{"message": str}``."""
    reward: str = ""
    """What the reward pays."""
    dependencies: tuple[str, ...] = field(default=())
    """Extra PyPI packages the env needs beyond the core install."""
    tags: tuple[str, ...] = field(default=())

    def load(self) -> type[Environment[Any, Any, Any]]:
        """Import the entry point's class."""
        return load_class(self.entry_point)


CATALOG: dict[str, EnvSpec] = {}


def register(spec: EnvSpec) -> EnvSpec:
    """Add an env to the catalog; a name can be registered once."""
    if spec.name in CATALOG and CATALOG[spec.name] != spec:
        raise ValueError(f"env name {spec.name!r} is already registered to {CATALOG[spec.name].entry_point}")
    CATALOG[spec.name] = spec
    return spec


def list_envs() -> list[EnvSpec]:
    """Every catalog entry, sorted by name."""
    return [CATALOG[name] for name in sorted(CATALOG)]


def get_spec(name: str) -> EnvSpec:
    """The catalog entry of ``name``.

    Raises:
        EnvLoadError: no such env; the message suggests close matches.
    """
    spec = CATALOG.get(name)
    if spec is None:
        close = difflib.get_close_matches(name, CATALOG, n=3)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else "."
        raise EnvLoadError(
            f"no env named {name!r} in the catalog{hint} Known: {', '.join(sorted(CATALOG))}. "
            "Pass 'package.module:ClassName' to serve your own."
        )
    return spec


def load_env_class(name_or_path: str) -> type[Environment[Any, Any, Any]]:
    """A catalog name (``echo``) or a ``module:Class`` path to its Environment class."""
    if ":" in name_or_path:
        return load_class(name_or_path)
    return get_spec(name_or_path).load()


register(EnvSpec(
    "echo", "openenv_train.envs.echo:EchoEnvironment", "MCP tools that echo a message (OpenEnv's echo_env).",
    action='{"type": "call_tool", "tool_name": "echo_message"|"echo_with_length", "arguments": {"message": str}}',
    reward="none (0.0 on reset, null on steps)", tags=("mcp", "test"),
))
register(EnvSpec(
    "counter", "openenv_train.envs.counter:CounterEnvironment",
    "Add to a counter until it reaches a target; a tiny typed env.",
    action='{"delta": int}', reward="1.0 for landing exactly on the target, else 0.0", tags=("test",),
))

# -- wordle ----------------------------------------------------------------------------------------------
# -- coding and repl (sandboxed) -------------------------------------------------------------------------
# -- OpenSpiel-compatible games --------------------------------------------------------------------------
# -- chess and grid worlds -------------------------------------------------------------------------------
# -- reasoning_gym and sql_tools -------------------------------------------------------------------------
