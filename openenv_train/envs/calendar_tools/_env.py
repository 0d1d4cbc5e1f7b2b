"""CalendarEnvironment: carry out a calendar or todo request with tools over a SQLite store."""

from __future__ import annotations

import random
from importlib import resources
from typing import Annotated, Any, ClassVar

from pydantic import Field

from ...core import CallToolObservation, ListToolsObservation, Observation, State, ToolError, ToolErrorType
from ...server import MCPEnvironment, ToolCallFailed, tool
from ._store import DAYS, CalendarStore
from ._tasks import KINDS, CalendarTask, make_task

__all__ = ["CalendarEnvironment", "CalendarState", "CalendarTaskObservation"]


class CalendarTaskObservation(Observation):
    """The reset observation: the request to carry out."""

    task: str = Field(default="", description="The request, in words.")
    kind: str = Field(default="", description=f"Task kind: one of {', '.join(KINDS)}.")
    days: list[str] = Field(default_factory=list, description="The days the calendar holds (YYYY-MM-DD).")


class CalendarState(State):
    """Episode state: the task and its result once submitted."""

    kind: str = ""
    submitted: bool = False
    success: bool | None = None


class CalendarEnvironment(MCPEnvironment):
    """A week's calendar and todo list in SQLite; carry out the request with tools, then submit.

    Tools read and change events (``list_events``, ``find_free_slots``, ``create_event``,
    ``move_event``, ``delete_event``) and todos (``list_todos``, ``add_todo``,
    ``complete_todo``); ``submit`` checks the final store against the request, pays 1.0
    or 0.0 and ends the episode. ``reset(seed=..., kind=...)`` draws the week and the task.
    """

    name = "calendar"
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")
    observation_type: ClassVar[Any] = ListToolsObservation | CallToolObservation | CalendarTaskObservation
    state_type = CalendarState
    _state: CalendarState

    def __init__(self) -> None:
        super().__init__()
        self._store: CalendarStore | None = None
        self.reset()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              kind: str | None = None) -> CalendarTaskObservation:
        """Start an episode: a fresh week drawn from ``seed`` and a task (of ``kind`` when given)."""
        root = seed if seed is not None else random.SystemRandom().getrandbits(63)
        store = CalendarStore(root)
        task = make_task(store, root, kind)  # raises before the episode changes
        super().reset(seed=seed, episode_id=episode_id)
        if self._store is not None:
            self._store.close()
        self._store, self._task = store, task
        self._state = CalendarState(episode_id=self._state.episode_id, kind=task.kind)
        return CalendarTaskObservation(task=task.text, kind=task.kind, days=DAYS, reward=0.0)

    @property
    def state(self) -> CalendarState:
        return self._state

    def step(self, action: Any) -> Observation:
        obs = super().step(action)
        assert isinstance(obs, Observation), "calendar has only sync tools"
        obs.done = self._state.submitted
        return obs

    def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        if self._state.submitted and tool_name in self.tools:
            raise ToolCallFailed(ToolError(error_type=ToolErrorType.EXECUTION_ERROR,
                                           message="the task was submitted; call reset for a new one"))
        return super().call_tool(tool_name, arguments)

    def reward_for(self, tool_name: str, arguments: dict[str, Any], value: Any) -> float | None:
        return float(value["reward"]) if tool_name == "submit" else None

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    @property
    def store(self) -> CalendarStore:
        """The episode's store."""
        assert self._store is not None
        return self._store

    @property
    def task(self) -> CalendarTask:
        return self._task

    @tool
    def get_task(self) -> dict[str, Any]:
        """The request to carry out, and the days of the calendar."""
        return {"task": self._task.text, "kind": self._task.kind, "days": DAYS}

    @tool
    def list_events(self, day: str | None = None, attendee: str | None = None) -> list[dict[str, Any]]:
        """Events (id, title, day, start, end, attendees), earliest first; filter by day (YYYY-MM-DD) or attendee."""
        return self.store.events(day, attendee)

    @tool
    def find_free_slots(self, day: str, minutes: Annotated[int, Field(ge=5, le=480)] = 30) -> list[str]:
        """Start times (HH:MM, on the half hour between 09:00 and 17:00) where ``minutes`` fit on ``day``."""
        return self.store.free_slots(day, minutes)

    @tool
    def create_event(self, title: Annotated[str, Field(min_length=1, max_length=200)], day: str, start: str,
                     end: str, attendees: list[str] | None = None) -> dict[str, Any]:
        """Add an event from ``start`` to ``end`` (HH:MM) on ``day``; refused if it overlaps another."""
        return self.store.create_event(title.strip().lower(), day, start, end, attendees or [])

    @tool
    def move_event(self, event_id: int, day: str, start: str) -> dict[str, Any]:
        """Move an event to ``day`` at ``start``, keeping its length; refused if it would overlap another."""
        return self.store.move_event(event_id, day, start)

    @tool
    def delete_event(self, event_id: int) -> dict[str, Any]:
        """Delete an event; returns what was deleted."""
        return self.store.delete_event(event_id)

    @tool
    def list_todos(self, tag: str | None = None, done: bool | None = None) -> list[dict[str, Any]]:
        """Todos (id, title, due, tag, done), optionally of one tag or done state."""
        return self.store.todos(tag, done)

    @tool
    def add_todo(self, title: Annotated[str, Field(min_length=1, max_length=200)], tag: str,
                 due: str | None = None) -> dict[str, Any]:
        """Add a todo with a tag and an optional due day (YYYY-MM-DD)."""
        return self.store.add_todo(title.strip().lower(), tag.strip().lower(), due)

    @tool
    def complete_todo(self, todo_id: int) -> dict[str, Any]:
        """Mark a todo as done."""
        return self.store.complete_todo(todo_id)

    @tool
    def submit(self) -> dict[str, Any]:
        """Say the request is done: the store is checked, reward 1.0 if it meets the request, else 0.0; ends it."""
        success, detail = self._task.check(self.store)
        self._state.submitted, self._state.success = True, success
        return {"success": success, "reward": 1.0 if success else 0.0, "detail": detail}
