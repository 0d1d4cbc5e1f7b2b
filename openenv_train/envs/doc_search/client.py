"""The doc_search env's typed client (MCP tools)."""

from __future__ import annotations

from typing import ClassVar

from ...client import TypedMCPClient
from ._models import DocSearchQuestionObservation, DocSearchState

__all__ = ["DocSearchEnv"]


class DocSearchEnv(TypedMCPClient[DocSearchState], env="doc_search"):
    """Client of the doc_search env (MCP): reset gives a ``DocSearchQuestionObservation``; ``search``, ``fetch``
    and ``submit_answer`` answer it."""

    observation_type: ClassVar[type] = DocSearchQuestionObservation
