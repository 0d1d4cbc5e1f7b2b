"""MCPEnvironment: an environment whose actions are calls of tools declared with ``@tool``.

Tools are reachable three ways, all answered by the same code: ``list_tools`` and
``call_tool`` steps (rewardable, counted in ``step_count``), and JSON-RPC
``tools/list``/``tools/call`` over ``POST /mcp`` or the ``mcp`` WebSocket message.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..core import (
    RESERVED_TOOL_NAMES,
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Observation,
    OpenEnvTrainError,
    State,
    Tool,
    ToolError,
    ToolErrorType,
)
from ._environment import Environment

__all__ = ["MCPEnvironment", "ToolCallFailed", "ToolSpec", "result_payload", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
_TOOL_ATTR = "__openenv_tool__"


def tool(fn: F | None = None, *, name: str | None = None, description: str | None = None) -> Any:
    """Declare a method of an :class:`MCPEnvironment` as a tool.

    The argument schema comes from the signature's type hints, the description from
    the docstring. Use bare (``@tool``) or with options (``@tool(name="x")``).
    """

    def mark(f: F) -> F:
        setattr(f, _TOOL_ATTR, {"name": name or f.__name__, "description": description})
        return f

    return mark(fn) if fn is not None else mark


@dataclass(frozen=True)
class ToolSpec:
    """A declared tool: its listing and the model that checks its arguments."""

    tool: Tool
    method_name: str
    args_model: type[BaseModel]


class ToolCallFailed(OpenEnvTrainError):
    """A tool call could not produce a result; ``error`` says why in MCP terms."""

    def __init__(self, error: ToolError) -> None:
        super().__init__(error.message)
        self.error = error


def _tool_spec(attr: str, fn: Callable[..., Any], options: dict[str, Any]) -> ToolSpec:
    tool_name = options["name"]
    if tool_name in RESERVED_TOOL_NAMES:
        raise TypeError(f"tool name {tool_name!r} is reserved ({', '.join(sorted(RESERVED_TOOL_NAMES))}); rename it")
    hints = inspect.get_annotations(fn, eval_str=True)
    fields: dict[str, Any] = {}
    for pname, param in list(inspect.signature(fn).parameters.items())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args/**kwargs cannot be described to agents; name each argument")
        default = ... if param.default is param.empty else param.default
        fields[pname] = (hints.get(pname, Any), default)
    model = create_model(  # type: ignore[call-overload]
        f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    schema = model.model_json_schema()
    schema.pop("title", None)
    doc = options["description"] or inspect.getdoc(fn) or ""
    return ToolSpec(Tool(name=tool_name, description=doc, input_schema=schema), attr, model)


def result_payload(value: Any) -> dict[str, Any]:
    """The MCP ``result`` object for a tool's value (content blocks, structured content, ``data``)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    structured = value if isinstance(value, dict) else {"result": value}
    return {
        "content": [{"type": "text", "text": text}],
        "structured_content": structured,
        "data": value,
        "is_error": False,
    }


class MCPEnvironment(Environment[Any, Observation, State]):
    """Base of tool-exposing environments.

    Subclasses declare tools with ``@tool``; ``reset`` starts a fresh episode and every
    step (tool call or tool listing) increments ``step_count``. Override
    :meth:`on_reset` for episode set-up and :meth:`reward_for` to pay rewards.

    Example:
        >>> class Calc(MCPEnvironment):
        ...     '''Adds numbers.'''
        ...     @tool
        ...     def add(self, a: int, b: int) -> int:
        ...         '''Return a + b.'''
        ...         return a + b
        >>> env = Calc()
        >>> _ = env.reset()
        >>> env.step(CallToolAction(tool_name="add", arguments={"a": 2, "b": 3})).result["data"]
        5
    """

    action_type: ClassVar[Any] = Annotated[ListToolsAction | CallToolAction, Field(discriminator="type")]
    observation_type: ClassVar[Any] = ListToolsObservation | CallToolObservation
    tools: ClassVar[dict[str, ToolSpec]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tools = dict(cls.tools)
        for attr, value in cls.__dict__.items():
            options = getattr(value, _TOOL_ATTR, None)
            if options is not None:
                spec = _tool_spec(attr, value, options)
                tools[spec.tool.name] = spec
        cls.tools = tools

    def __init__(self) -> None:
        self._state = State()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None, **options: Any) -> Observation:
        """Start a new episode; the first observation is empty with reward 0.0."""
        self._state = State(episode_id=episode_id or uuid.uuid4().hex, step_count=0)
        self.on_reset(seed=seed, **options)
        return Observation(done=False, reward=0.0)

    def on_reset(self, *, seed: int | None = None, **options: Any) -> None:
        """Hook for episode set-up; the default keeps nothing."""

    @property
    def state(self) -> State:
        return self._state

    def list_tools(self) -> list[Tool]:
        """The declared tools."""
        return [spec.tool for spec in self.tools.values()]

    def reward_for(self, tool_name: str, arguments: dict[str, Any], value: Any) -> float | None:
        """Reward of a successful tool call; None by default."""
        return None

    def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any | Awaitable[Any]:
        """Check arguments and run a tool; returns its value (or an awaitable of it).

        Raises:
            ToolCallFailed: unknown tool, invalid arguments, or the tool raised.
        """
        spec = self.tools.get(tool_name)
        if spec is None:
            known = ", ".join(self.tools) or "none"
            raise ToolCallFailed(
                ToolError(error_type=ToolErrorType.TOOL_NOT_FOUND, message=f"no tool {tool_name!r}; tools: {known}")
            )
        try:
            args = spec.args_model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolCallFailed(
                ToolError(error_type=ToolErrorType.INVALID_ARGS, message=f"invalid arguments for {tool_name!r}: {exc}")
            ) from None
        kwargs = {name: getattr(args, name) for name in spec.args_model.model_fields}
        try:
            value = getattr(self, spec.method_name)(**kwargs)
        except ToolCallFailed:
            raise
        except Exception as exc:  # a tool's failure is the agent's observation, not a server error
            raise ToolCallFailed(_execution_error(tool_name, exc)) from exc
        if inspect.isawaitable(value):
            return _await_tool(tool_name, value)
        return value

    def step(self, action: Any) -> Observation | Awaitable[Observation]:
        """Run a ``list_tools`` or ``call_tool`` action."""
        self._state.step_count += 1
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=self.list_tools())
        if not isinstance(action, CallToolAction):
            raise TypeError(f"{type(self).__name__} takes list_tools or call_tool actions, got {type(action).__name__}")
        try:
            value = self.call_tool(action.tool_name, action.arguments)
        except ToolCallFailed as exc:
            return CallToolObservation(tool_name=action.tool_name, error=exc.error)
        if inspect.isawaitable(value):
            return self._finish_async_call(action, value)
        return self._tool_observation(action, value)

    async def _finish_async_call(self, action: CallToolAction, value: Awaitable[Any]) -> Observation:
        try:
            result = await value
        except ToolCallFailed as exc:
            return CallToolObservation(tool_name=action.tool_name, error=exc.error)
        return self._tool_observation(action, result)

    def _tool_observation(self, action: CallToolAction, value: Any) -> CallToolObservation:
        return CallToolObservation(
            tool_name=action.tool_name,
            result=result_payload(value),
            reward=self.reward_for(action.tool_name, action.arguments, value),
        )


def _execution_error(tool_name: str, exc: BaseException) -> ToolError:
    return ToolError(
        error_type=ToolErrorType.EXECUTION_ERROR, message=f"tool {tool_name!r} raised {type(exc).__name__}: {exc}"
    )


async def _await_tool(tool_name: str, value: Awaitable[Any]) -> Any:
    try:
        return await value
    except ToolCallFailed:
        raise
    except Exception as exc:
        raise ToolCallFailed(_execution_error(tool_name, exc)) from exc
