"""A client of OpenEnv 0.10's Task API over HTTP, for any server that serves it (ours or OpenEnv's).

``GET /list_environments`` names the env; its splits and tasks are under ``/{env}/...``; a name with ``/``
(``openspiel/chess``) is sent as it is, ``/openspiel/chess/splits``, the form our server documents.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from ..core import OpenEnvTrainError
from ..launch import Endpoint

__all__ = ["TaskApiError", "TaskClient", "TasksNotSupported"]


class TaskApiError(OpenEnvTrainError):
    """The server refused a Task API request (an unknown split, an index outside it, a bad body)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class TasksNotSupported(TaskApiError):
    """The server or its env has no Task API (HTTP 501, or 404 on ``/list_environments``: an older server)."""


class TaskClient:
    """The Task API of the server at ``endpoint``; each call is one HTTP request.

    Args:
        endpoint: the server (``base_url``, or a Unix socket).
        env_name: the env's name in the routes; None asks ``GET /list_environments`` once (its first entry).
        headers: sent with every request (e.g. ``Authorization``).
        timeout_s: limit of each request.

    Example:
        >>> import asyncio
        >>> import openenv_train.envs  # the catalog: in-process servers find "catch" through it
        >>> from openenv_train.launch import InProcessProvider
        >>> async def main():
        ...     provider = InProcessProvider("catch")
        ...     tasks = TaskClient(await provider.start())
        ...     try:
        ...         return await tasks.num_tasks("test"), await tasks.get_task("test", 0)
        ...     finally:
        ...         await provider.stop()
        >>> asyncio.run(main())
        (1000000, {'id': 'test-0', 'index': 0, 'seed': 1000000})
    """

    def __init__(self, endpoint: Endpoint, *, env_name: str | None = None, headers: dict[str, str] | None = None,
                 timeout_s: float = 30.0) -> None:
        self.endpoint = endpoint
        self.env_name = env_name
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s

    async def list_environments(self) -> list[str]:
        """The env names the server serves (one for a single-env server)."""
        return list(await self._request("GET", "/list_environments"))

    async def list_splits(self) -> list[dict[str, Any]]:
        """Split descriptors, ``{"name", "type", ...}`` each."""
        return list(await self._request("GET", await self._path("splits")))

    async def list_tasks(self, split: str) -> list[Any]:
        """A split's task specs (a large split may answer a bounded preview; page with :meth:`get_task_range`)."""
        return list((await self._request("POST", await self._path("tasks"), {"split": split}))["tasks"])

    async def num_tasks(self, split: str) -> int:
        """How many tasks ``split`` holds."""
        return int((await self._request("POST", await self._path("num_tasks"), {"split": split}))["num_tasks"])

    async def get_task(self, split: str, index: int) -> Any:
        """The task spec at ``index`` of ``split``."""
        return (await self._request("POST", await self._path("task"), {"split": split, "index": index}))["task"]

    async def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]:
        """Task specs ``[start, stop)`` of ``split`` (Python slice bounds)."""
        body = {"split": split, "start": start, "stop": stop}
        return list((await self._request("POST", await self._path("task_range"), body))["tasks"])

    async def _path(self, route: str) -> str:
        if self.env_name is None:
            names = await self.list_environments()
            if not names:
                raise TasksNotSupported("the server lists no environment at GET /list_environments", 404)
            self.env_name = names[0]
        return f"/{quote(self.env_name, safe='/')}/{route}"

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        transport = httpx.AsyncHTTPTransport(uds=self.endpoint.uds) if self.endpoint.uds else None
        base = self.endpoint.base_url.rstrip("/")
        async with httpx.AsyncClient(transport=transport, timeout=self.timeout_s, headers=self.headers) as http:
            try:
                response = await http.request(method, base + path, json=body)
            except httpx.HTTPError as exc:
                raise TaskApiError(f"{method} {path} on {self.endpoint.uds or base} failed: {exc}", 0) from None
        if response.status_code == 200:
            return response.json()
        detail = _detail(response)
        if response.status_code == 501 or (response.status_code == 404 and path == "/list_environments"):
            raise TasksNotSupported(f"the env server at {base} has no Task API ({method} {path}: "
                                    f"{response.status_code} {detail}); pick tasks with its own reset options",
                                    response.status_code)
        raise TaskApiError(f"{method} {path}: {response.status_code} {detail}", response.status_code)


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", response.text))
    except (ValueError, AttributeError):
        return response.text[:200]
