"""Agents that work on a Harbor task: ``oracle`` (runs solution/solve.sh), ``nop`` (does nothing) and ``model``
(a chat model with a ``bash`` tool, called through an OpenAI-compatible endpoint).

The model agent also offers the tools of the MCP servers a task declares (see ``_mcp.py``).

An agent is any object with a ``name`` and ``async run(ctx)``; :class:`AgentContext` gives it the task, a
time-limited ``bash()`` in the task's environment that records each command as an env step, and the
capture session its model calls belong to.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..policy import ChatClient, ChatTransportError, v1_url
from ..trace import CaptureStore, EnvStep, build_turn
from ._task_env import ExecResult, TaskEnvironment, resolve_env
from ._task_errors import AgentTimeoutError, ModelCallError, TaskFormatError
from ._tasks import HarborTask

if TYPE_CHECKING:
    from ._mcp import McpToolset

__all__ = [
    "BASH_TOOL",
    "AgentContext",
    "HarborAgent",
    "ModelAgent",
    "NopAgent",
    "OracleAgent",
    "format_observation",
]

#: The one tool the model agent offers, in OpenAI's tools format.
BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command in the task's workspace and return its exit code, stdout and stderr. "
                       "Files persist between calls; there is no network.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command (script) to run."}},
            "required": ["command"],
        },
    },
}

MCP_PROMPT = (
    " The task also provides tools from MCP servers, named mcp__<server>__<tool>; call them like bash."
)

SYSTEM_PROMPT = (
    "You are an autonomous agent solving a task in a Linux shell. Use the bash tool to inspect files, run "
    "commands and make changes; your working directory is {workdir}. When the task is done, reply with a short "
    "summary and no tool call."
)


def _clip(text: str, limit: int) -> str:
    """Keep the head and tail of ``text`` within ``limit`` characters."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters omitted ...]\n{text[-half:]}"


def format_observation(result: ExecResult, *, limit: int = 8000) -> str:
    """A command's outcome as the tool message the model reads (bounded to about ``limit`` characters).

    >>> print(format_observation(ExecResult("hi\\n", "", 0, False, False, 0.1)))
    exit code: 0
    stdout:
    hi
    """
    parts = [f"exit code: {result.exit_code}" + (" (timed out)" if result.timed_out else "")]
    if result.stdout:
        parts.append("stdout:\n" + _clip(result.stdout, limit // 2).rstrip("\n"))
    if result.stderr:
        parts.append("stderr:\n" + _clip(result.stderr, limit // 2).rstrip("\n"))
    return "\n".join(parts)


@dataclass
class AgentContext:
    """What an agent gets for one attempt of a task.

    Args:
        task: the task.
        env: its running environment.
        timeout_s: the agent's time budget (``[agent] timeout_sec``); :meth:`bash` never runs past it.
        capture: the capture store of the attempt's model calls, and ``session_id`` its open session.
        step_output_limit: characters of stdout/stderr kept per step in the trace row.
    """

    task: HarborTask
    env: TaskEnvironment
    timeout_s: float
    capture: CaptureStore | None = None
    session_id: str | None = None
    step_output_limit: int = 16384
    steps: list[EnvStep] = field(default_factory=list)
    truncated: bool = False
    """Set by an agent that stopped at its own limit (e.g. max turns) rather than by finishing."""
    model_seconds: float = 0.0
    """Seconds spent waiting for the model."""
    model_id: str | None = None
    """The model that answered (from the replies), for the row's ``policy``."""
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_s

    def remaining(self) -> float:
        """Seconds left of the agent's budget."""
        return self._deadline - time.monotonic()

    def timeout_error(self) -> AgentTimeoutError:
        """The error of an agent that ran out of time."""
        return AgentTimeoutError(f"the agent exceeded the task's agent timeout ([agent] timeout_sec = "
                                 f"{self.timeout_s:g}s) on task {self.task.name}")

    async def bash(self, command: str, *, timeout_s: float | None = None, env: Mapping[str, str] | None = None,
                   phase: str = "agent") -> ExecResult:
        """Run ``command`` in the environment and record it as a step.

        Args:
            timeout_s: this command's own limit; it is always cut to the agent's remaining time.

        Raises:
            AgentTimeoutError: the agent's time ran out (before or during the command).
        """
        remaining = self.remaining()
        if remaining <= 0:
            raise self.timeout_error()
        limit = remaining if timeout_s is None else min(timeout_s, remaining)
        started = time.monotonic()
        result = await self.env.exec(command, timeout_s=limit, env=env)
        self.steps.append(EnvStep(
            action={"phase": phase, "tool": "bash", "command": command},
            observation={"exit_code": result.exit_code, "stdout": _clip(result.stdout, self.step_output_limit),
                         "stderr": _clip(result.stderr, self.step_output_limit), "timed_out": result.timed_out,
                         "truncated": result.truncated},
            seconds=time.monotonic() - started))
        if result.timed_out and limit >= remaining:
            raise self.timeout_error()
        return result


class HarborAgent(Protocol):
    """Anything with a ``name`` and ``async run(ctx)`` can work on a task."""

    name: str

    async def run(self, ctx: AgentContext) -> None:
        """Work on ``ctx.task`` until done; raise a TaskError to fail the attempt."""


class NopAgent:
    """Does nothing: every task should then score 0 (Harbor's ``nop``)."""

    name = "nop"
    model: str | None = None

    async def run(self, ctx: AgentContext) -> None:
        """Nothing to do."""


class OracleAgent:
    """Copies ``solution/`` to /solution and runs ``bash /solution/solve.sh`` in the WORKDIR (Harbor's ``oracle``)."""

    name = "oracle"
    model: str | None = None

    async def run(self, ctx: AgentContext) -> None:
        """Run the reference solution; a failing solve.sh is recorded, and the tests decide the reward."""
        task = ctx.task
        if not task.has_solution:
            raise TaskFormatError(f"task {task.name}: the oracle agent needs solution/solve.sh, which is missing in "
                                  f"{task.path}", task_dir=str(task.path), file="solution/solve.sh")
        await ctx.env.upload_dir(task.solution_dir, "/solution")
        env = resolve_env(task.config.solution.env, where="[solution] env")
        await ctx.bash(f"bash {shlex.quote(ctx.env.path('/solution/solve.sh'))}", env=env)


def _chat_base(base_url: str) -> str:
    """The OpenAI base URL of ``base_url``: given with or without ``/v1``, or as the full completions URL."""
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base[:-len("/chat/completions")]
    return v1_url(base)


@dataclass
class ModelAgent:
    """A chat model that solves the task with a ``bash`` tool, through ``POST <base_url>/v1/chat/completions``.

    Each turn sends the conversation and :data:`BASH_TOOL`; every tool call runs in the task environment and
    its bounded output goes back as a ``tool`` message. The loop ends on a reply without tool calls, or after
    ``max_turns`` replies (the row is then ``truncated``).

    A task's ``[[environment.mcp_servers]]`` are connected for the run (stdio servers start inside the task's
    environment) and their tools offered next to bash as ``mcp__<server>__<tool>`` (see ``_mcp.py``); each call
    is an agent step ``{"tool": "mcp", "server", "name", "function", "arguments"}`` in the row. A server that
    does not start fails the attempt with ``McpServerError``; unknown tools and tool errors go back to the
    model as tool messages.

    The capture session id of the attempt is sent as the API key (``Authorization: Bearer <session id>``) so
    that a capturing endpoint (the policy server) records the call; with ``client_capture=True`` (an upstream
    that records nothing) the agent records each call itself, without token ids.

    Args:
        base_url: the endpoint, e.g. ``http://127.0.0.1:8000`` (``/v1`` optional).
        model: the ``model`` field of each request; None leaves it out (the endpoint's default model).
        api_key: sent when there is no capture session (e.g. an upstream provider's key).
        mcp_connect_timeout_s: how long each MCP server may take to start and list its tools.
    """

    base_url: str
    model: str | None = None
    api_key: str | None = None
    max_turns: int = 20
    temperature: float = 0.7
    max_tokens: int = 1024
    command_timeout_s: float = 120.0
    request_timeout_s: float = 300.0
    observation_limit: int = 8000
    client_capture: bool = False
    mcp_connect_timeout_s: float = 60.0
    name: str = "model"

    async def run(self, ctx: AgentContext) -> None:
        """The agent loop (see the class docstring); with the task's MCP servers connected, if it has any."""
        async with ChatClient(_chat_base(self.base_url), timeout_s=self.request_timeout_s) as chat:
            if not ctx.task.config.environment.mcp_servers:
                await self._loop(ctx, chat, None)
                return
            from ._mcp import McpToolset

            remaining = ctx.remaining()
            if remaining <= 0:
                raise ctx.timeout_error()
            async with McpToolset(ctx.task, ctx.env,
                                  connect_timeout_s=min(self.mcp_connect_timeout_s, remaining)) as mcp:
                await self._loop(ctx, chat, mcp)

    async def _loop(self, ctx: AgentContext, chat: ChatClient, mcp: McpToolset | None) -> None:
        tools = [BASH_TOOL, *(mcp.schemas if mcp is not None else [])]
        system = SYSTEM_PROMPT.format(workdir=ctx.env.workdir)
        if mcp is not None and mcp.tools:
            system += MCP_PROMPT
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": ctx.task.instruction},
        ]
        for _ in range(self.max_turns):
            message = await self._complete(ctx, chat, messages, tools)
            calls = message.get("tool_calls") or []
            assistant: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
            if calls:
                assistant["tool_calls"] = calls
            messages.append(assistant)
            if not calls:
                return
            for call in calls:
                content = await self._tool(ctx, call, mcp)
                messages.append({"role": "tool", "tool_call_id": str(call.get("id") or ""), "content": content})
        ctx.truncated = True

    async def _complete(self, ctx: AgentContext, chat: ChatClient, messages: list[dict[str, Any]],
                        tools: list[dict[str, Any]]) -> dict[str, Any]:
        remaining = ctx.remaining()
        if remaining <= 0:
            raise ctx.timeout_error()
        body: dict[str, Any] = {"messages": messages, "tools": tools, "temperature": self.temperature,
                                "max_tokens": self.max_tokens, **({"model": self.model} if self.model else {})}
        url = chat.chat_url
        key = ctx.session_id if ctx.session_id and not self.client_capture else self.api_key
        started = time.monotonic()
        try:
            answer = await chat.chat(body, api_key=key, timeout_s=min(self.request_timeout_s, remaining))
        except ChatTransportError as exc:
            if ctx.remaining() <= 0:
                raise ctx.timeout_error() from None
            raise ModelCallError(f"POST {url} failed: {exc.kind}: {exc.detail}") from None
        finally:
            ctx.model_seconds += time.monotonic() - started
        status, reply = answer.status, answer.text if answer.data is None else answer.data
        if status != 200 or not isinstance(reply, dict) or not reply.get("choices"):
            raise ModelCallError(f"POST {url} answered HTTP {status}: {str(reply)[:500]}")
        choice = reply["choices"][0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise ModelCallError(f"POST {url}: the reply's first choice has no message: {str(choice)[:300]}")
        ctx.model_id = str(reply.get("model") or self.model or "") or None
        if self.client_capture and ctx.capture is not None and ctx.session_id:
            ctx.capture.record(ctx.session_id, build_turn(
                messages=body["messages"], tools=body["tools"], choices=reply["choices"], model=reply.get("model"),
                sampling_requested={"temperature": self.temperature, "max_tokens": self.max_tokens},
                timings={"started_at": time.time() - (time.monotonic() - started),
                         "seconds": time.monotonic() - started}))
        return message

    async def _tool(self, ctx: AgentContext, call: Any, mcp: McpToolset | None) -> str:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        known = ["bash", *(mcp.tools if mcp is not None else [])]
        if not isinstance(function, dict) or name not in known:
            return f"error: unknown tool {name!r}; the tools are: {', '.join(known)}"
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            return f"error: the tool arguments are not valid JSON; call {name} with a JSON object"
        if name != "bash":
            if not isinstance(arguments, dict):
                return f"error: the arguments of {name} must be a JSON object"
            assert mcp is not None
            return await self._mcp_tool(ctx, mcp, str(name), arguments)
        command = arguments.get("command") if isinstance(arguments, dict) else None
        if not isinstance(command, str) or not command.strip():
            return "error: bash needs a non-empty string argument 'command'"
        result = await ctx.bash(command, timeout_s=self.command_timeout_s)
        return format_observation(result, limit=self.observation_limit)

    async def _mcp_tool(self, ctx: AgentContext, mcp: McpToolset, name: str, arguments: dict[str, Any]) -> str:
        """Call an MCP tool and record it as an agent step (``tool: mcp``), like a bash command."""
        remaining = ctx.remaining()
        if remaining <= 0:
            raise ctx.timeout_error()
        tool = mcp.tools[name]
        started = time.monotonic()
        text, is_error = await mcp.call(name, arguments, timeout_s=min(self.command_timeout_s, remaining))
        ctx.steps.append(EnvStep(
            action={"phase": "agent", "tool": "mcp", "server": tool.server, "name": tool.name, "function": name,
                    "arguments": arguments},
            observation={"content": _clip(text, ctx.step_output_limit), "is_error": is_error},
            seconds=time.monotonic() - started))
        if ctx.remaining() <= 0:
            raise ctx.timeout_error()
        return _clip(text, self.observation_limit)
