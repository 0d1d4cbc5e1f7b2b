"""The calendar env's typed client (MCP tools)."""

from __future__ import annotations

from typing import ClassVar

from ...client import TypedMCPClient
from ._env import CalendarState, CalendarTaskObservation

__all__ = ["CalendarEnv"]


class CalendarEnv(TypedMCPClient[CalendarState], env="calendar"):
    """Client of the calendar env (MCP): reset gives a ``CalendarTaskObservation``, tools carry it out."""

    observation_type: ClassVar[type] = CalendarTaskObservation
