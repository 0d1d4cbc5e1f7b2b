"""A calendar and todo service on SQLite, served as MCP tools with seeded requests to carry out."""

from ._env import CalendarEnvironment, CalendarState, CalendarTaskObservation
from ._store import CalendarStore
from ._tasks import KINDS, CalendarTask, make_task
from .client import CalendarEnv

__all__ = ["KINDS", "CalendarEnv", "CalendarEnvironment", "CalendarState", "CalendarStore", "CalendarTask",
           "CalendarTaskObservation", "make_task"]
