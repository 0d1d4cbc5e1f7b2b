"""The jupyter env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import JupyterAction, JupyterObservation, JupyterState

__all__ = ["JupyterEnv"]


class JupyterEnv(TypedEnvClient[JupyterAction, JupyterObservation, JupyterState], env="jupyter"):
    """Client of the jupyter env: ``await env.step(JupyterAction(code="2 ** 10"))``."""
