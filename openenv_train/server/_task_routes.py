"""OpenEnv 0.10's Task API routes: ``GET /list_environments``, ``GET /{env}/splits``, ``POST /{env}/tasks``,
``/num_tasks``, ``/task``, ``/task_range``, with its request shapes and answers (501 where an env has no tasks).

A catalog name with a ``/`` (``openspiel/chess``) is its own route prefix, slash and all
(``GET /openspiel/chess/splits``), or percent-encoded in one segment (``/openspiel%2Fchess/splits``); the name
matches case-insensitively, like OpenEnv's.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core import ProtocolError, validation_errors
from ._tasks import UnknownSplit

__all__ = ["TASK_ROUTES", "TaskRoutes"]

Response = tuple[int, Any]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")  # as OpenEnv's BaseMessage
    split: str


class _GetTask(_Request):
    index: int


class _GetTaskRange(_Request):
    start: int | None = Field(default=None)
    stop: int | None = Field(default=None)


#: route suffix -> (HTTP method, request model, env method)
TASK_ROUTES: dict[str, tuple[str, type[BaseModel] | None, str]] = {
    "splits": ("GET", None, "list_splits"),
    "tasks": ("POST", _Request, "list_tasks"),
    "num_tasks": ("POST", _Request, "num_tasks"),
    "task": ("POST", _GetTask, "get_task"),
    "task_range": ("POST", _GetTaskRange, "get_task_range"),
}


class TaskRoutes:
    """Answers the Task API for the env called ``name``; ``with_env`` runs a call on a fresh, then closed, env."""

    def __init__(self, name: str, with_env: Callable[[Callable[[Any], Any]], Awaitable[Any]]) -> None:
        self.name = name
        self._with_env = with_env

    def match(self, path: str) -> tuple[str, str] | None:
        """``(env name, route)`` when ``path`` is a Task API route (``/list_environments`` has no env)."""
        if path == "/list_environments":
            return "", "list_environments"
        head, _, route = path.rpartition("/")
        if route not in TASK_ROUTES or not head.startswith("/") or len(head) < 2:
            return None
        return unquote(head[1:]), route

    def handle(self, method: str, env: str, route: str, body: dict[str, Any]) -> Response | Awaitable[Response]:
        """Answer one matched route (``body`` parsed; empty for a GET)."""
        if route == "list_environments":
            return (200, [self.name]) if method in ("GET", "HEAD") else (405, {"detail": "Method Not Allowed"})
        wanted, model, what = TASK_ROUTES[route]
        if method != wanted and not (method == "HEAD" and wanted == "GET"):
            return 405, {"detail": "Method Not Allowed"}
        if env.lower() != self.name.lower():
            return 404, {"detail": f"unknown environment {env!r}; this server serves {self.name!r} "
                                   "(GET /list_environments)"}
        args: list[Any] = []
        if model is not None:
            try:
                request = model.model_validate(body)
            except ValidationError as exc:
                return 422, {"detail": [{**e, "loc": ["body", *e["loc"]]} for e in validation_errors(exc)]}
            args = [getattr(request, name) for name in type(request).model_fields]
        return self._call(route, what, args)

    async def _call(self, route: str, what: str, args: list[Any]) -> Response:
        async def call(env: Any) -> Any:
            result = getattr(env, what)(*args)
            return (await result) if inspect.isawaitable(result) else result

        try:
            result = await self._with_env(call)
        except ProtocolError as exc:  # the env could not be built (FACTORY_ERROR)
            return 500, {"detail": exc.message}
        except NotImplementedError:
            return 501, {"detail": f"{what} is not supported for this environment"}
        except UnknownSplit as exc:
            return 400, {"detail": str(exc)}
        except IndexError as exc:
            return 400, {"detail": f"Invalid task index: {exc}"}
        if route == "splits":
            return 200, [_split(s) for s in result]
        if route == "tasks":
            return 200, {"tasks": result, "env_name": self.name}
        if route == "num_tasks":
            return 200, {"num_tasks": result}
        if route == "task":
            return 200, {"task": result}
        return 200, {"tasks": result}


def _split(split: Any) -> dict[str, Any]:
    """A split descriptor as OpenEnv normalises one: a dict as it is, a name as ``{"name", "type"}``."""
    if isinstance(split, dict):
        return split
    name = str(split)
    return {"name": name, "type": name if name in ("train", "validation", "test") else "validation"}
