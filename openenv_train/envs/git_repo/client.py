"""The git env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import GitAction, GitObservation, GitState

__all__ = ["GitEnv"]


class GitEnv(TypedEnvClient[GitAction, GitObservation, GitState], env="git"):
    """Client of the git env: ``await env.step(GitAction(command="git commit -qam fix", submit=True))``."""
