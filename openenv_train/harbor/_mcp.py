"""The MCP servers a task declares (``[[environment.mcp_servers]]``), as tools of the model agent.

Like Harbor, which hands a task's MCP servers to its agents (Claude Code and others register them as their own
MCP servers), the model agent connects to each server for the length of its run:

- ``stdio``: ``command`` and ``args`` run *inside* the task's environment (the sandbox for the local backend,
  ``docker exec -i`` in the container for the Docker backend; see ``TaskEnvironment.stdio_command``);
- ``sse`` / ``streamable-http``: the agent connects to ``url`` from this machine.

Tool names: each MCP tool is offered to the model as ``mcp__<server>__<tool>`` (the naming Claude Code uses for
MCP tools), with characters outside ``[A-Za-z0-9_-]`` replaced by ``_`` and the name cut to OpenAI's 64
characters. The ``mcp__`` prefix keeps them apart from ``bash``; two tools that end up with one name are an
error. The ``mcp`` package (the official SDK) is imported only when a task declares servers.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

from ._task_env import TaskEnvironment
from ._task_errors import McpServerError, TaskError, UnsupportedTaskFeature
from ._tasks import HarborTask, McpServerSettings

if TYPE_CHECKING:
    from mcp import ClientSession

__all__ = ["TOOL_PREFIX", "McpTool", "McpToolset", "tool_function_name"]

TOOL_PREFIX = "mcp__"
"""Every MCP tool the model sees is named ``mcp__<server>__<tool>``."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_NAME_LIMIT = 64


def tool_function_name(server: str, tool: str) -> str:
    """The name the model calls an MCP tool by.

    >>> tool_function_name("kv", "lookup"), tool_function_name("web search", "fetch.page")
    ('mcp__kv__lookup', 'mcp__web_search__fetch_page')
    """
    return _UNSAFE.sub("_", f"{TOOL_PREFIX}{server}__{tool}")[:_NAME_LIMIT]


@dataclass(frozen=True)
class McpTool:
    """One tool of one server, and how the model sees it."""

    server: str
    """The server's ``name`` in task.toml."""
    name: str
    """The tool's name on the server."""
    function: str
    """The name offered to the model (:func:`tool_function_name`)."""
    schema: dict[str, Any]
    """Its entry in the request's ``tools`` (OpenAI format; parameters = the tool's inputSchema)."""


def _openai_tool(server: str, tool: Any, function: str) -> dict[str, Any]:
    parameters = dict(tool.input_schema or {})
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    description = tool.description or tool.title or tool.name
    return {"type": "function", "function": {"name": function, "description": f"[MCP server {server}] {description}",
                                             "parameters": parameters}}


def _result_text(result: Any) -> str:
    """A CallToolResult as the text of a tool message: text parts as they are, other parts as JSON."""
    parts = []
    for item in result.content or []:
        if getattr(item, "type", None) == "text":
            parts.append(item.text)
        else:
            parts.append(json.dumps(item.model_dump(mode="json", exclude_none=True, by_alias=True)))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


def _describe(server: McpServerSettings) -> str:
    if server.transport == "stdio":
        return f"MCP server {server.name!r} (stdio: {' '.join([server.command or '', *server.args])})"
    return f"MCP server {server.name!r} ({server.transport}: {server.url})"


def _innermost(exc: BaseException) -> BaseException:
    """The first leaf of exception groups (anyio wraps transport failures in them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _cause(exc: BaseException) -> str:
    """The innermost useful message of an exception."""
    exc = _innermost(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _list_tools(session: ClientSession) -> list[Any]:
    listed: list[Any] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=_page(cursor))
        listed.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return listed


class McpToolset:
    """Open connections to a task's MCP servers and the tools they offer.

    Use as ``async with McpToolset(task, env) as tools:``; entering connects to every server, runs the
    MCP handshake and lists its tools; leaving closes the sessions (stdio servers then exit).

    Args:
        task: the task (its ``[[environment.mcp_servers]]``).
        env: its running environment, where stdio servers run.
        connect_timeout_s: how long one server may take to start, initialize and list its tools.

    Raises:
        McpServerError: (on entering) a server did not start, initialize or list its tools; the message
            names the server, the task, and ends with what the server wrote on stderr.
        UnsupportedTaskFeature: the environment cannot run stdio servers.
    """

    def __init__(self, task: HarborTask, env: TaskEnvironment, *, connect_timeout_s: float = 60.0) -> None:
        self.task, self.env, self.connect_timeout_s = task, env, connect_timeout_s
        self.tools: dict[str, McpTool] = {}
        self._sessions: dict[str, ClientSession] = {}
        self._stack = AsyncExitStack()
        self._errlogs: list[IO[str]] = []

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The tools in OpenAI's format, in server then listing order."""
        return [tool.schema for tool in self.tools.values()]

    async def __aenter__(self) -> McpToolset:
        try:
            for server in self.task.config.environment.mcp_servers:
                await self._connect(server)
        except BaseException as exc:
            await self._stack.__aexit__(type(exc), exc, exc.__traceback__)  # a no-op after a failed _connect
            self._drop_logs()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool:
        # The exception goes to the transports: their task groups must see it to unwind.
        try:
            return bool(await self._stack.__aexit__(exc_type, exc, tb))
        except Exception as error:
            inner = _innermost(error)
            if error is exc or isinstance(inner, TaskError):
                raise inner from None
            raise McpServerError(f"task {self.task.name}: a connection to its MCP servers failed during the run: "
                                 f"{_cause(error)}", server="") from None
        finally:
            self._drop_logs()

    def _drop_logs(self) -> None:
        for errlog in self._errlogs:
            errlog.close()
        self._errlogs.clear()

    async def _connect(self, server: McpServerSettings) -> None:
        from mcp import ClientSession  # lazy: only tasks with MCP servers need the SDK

        errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed in _drop_logs)
        self._errlogs.append(errlog)
        what = f"{_describe(server)} of task {self.task.name}"
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                try:
                    read, write = await self._stack.enter_async_context(await self._transport(server, errlog))
                    session = await self._stack.enter_async_context(ClientSession(read, write))
                    await session.initialize()
                    listed = await _list_tools(session)
                except BaseException as exc:
                    # Close every transport with the failure in hand, so that their task groups unwind (a
                    # transport's background failure reaches this task as a cancellation of its scope).
                    await self._stack.__aexit__(type(exc), exc, exc.__traceback__)
                    raise
        except (McpServerError, UnsupportedTaskFeature):
            self._drop_logs()
            raise
        except TimeoutError:
            stderr = _stderr(errlog)
            self._drop_logs()
            raise McpServerError(f"{what} did not start and list its tools within {self.connect_timeout_s:g}s"
                                 f"{stderr}", server=server.name) from None
        except Exception as exc:
            stderr = _stderr(errlog)
            self._drop_logs()
            raise McpServerError(f"{what} failed to start or list its tools: {_cause(exc)}{stderr}",
                                 server=server.name) from None
        self._sessions[server.name] = session
        for tool in listed:
            function = tool_function_name(server.name, tool.name)
            if function in self.tools:
                other = self.tools[function]
                raise McpServerError(f"task {self.task.name}: tool {tool.name!r} of MCP server {server.name!r} and "
                                     f"tool {other.name!r} of {other.server!r} are both named {function!r} for the "
                                     "model; rename a server in task.toml", server=server.name)
            self.tools[function] = McpTool(server.name, tool.name, function, _openai_tool(server.name, tool, function))

    async def _transport(self, server: McpServerSettings, errlog: IO[str]) -> Any:
        if server.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command = getattr(self.env, "stdio_command", None)
            if command is None:
                raise UnsupportedTaskFeature(f"task {self.task.name}: the {self.env.backend} environment cannot run "
                                             f"stdio MCP servers ({server.name})")
            argv = await command([server.command or "", *server.args])
            return stdio_client(StdioServerParameters(command=argv[0], args=argv[1:]), errlog=cast(TextIO, errlog))
        if server.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(server.url or "")
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(server.url or "")

    async def call(self, function: str, arguments: dict[str, Any], *, timeout_s: float) -> tuple[str, bool]:
        """Call the tool the model knows as ``function``; returns (text for the model, whether it is an error).

        A tool's own error (``isError``), a JSON-RPC error and a timeout all come back as error text: the
        model reads them and may try again.

        Raises:
            KeyError: no tool has that name (check :attr:`tools` first).
        """
        tool = self.tools[function]
        session = self._sessions[tool.server]
        try:
            result = await asyncio.wait_for(session.call_tool(tool.name, arguments), timeout_s)
        except TimeoutError:
            return f"error: {function} did not answer within {timeout_s:g}s", True
        except Exception as exc:
            return f"error: {function} failed: {_cause(exc)}", True
        text = _result_text(result)
        return (f"error: {text}" if result.is_error else text), bool(result.is_error)


def _page(cursor: str | None) -> Any:
    if cursor is None:
        return None
    from mcp import types

    return types.PaginatedRequestParams(cursor=cursor)


def _stderr(errlog: IO[str], limit: int = 1500) -> str:
    try:
        errlog.seek(0)
        text = errlog.read()
    except (OSError, ValueError):
        return ""
    text = text.strip()
    return f"; its stderr ends: {text[-limit:]}" if text else ""
