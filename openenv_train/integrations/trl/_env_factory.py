"""``make_environment_factory``: a class for ``GRPOTrainer(environment_factory=...)`` from any env.

TRL 1.16 makes one instance per rollout (pooled and reused), calls ``reset(**row)`` (a returned string is
appended to the last user message), exposes every public method as a tool (from its name, type hints and
docstring), and calls ``get_reward()`` once per finished rollout.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from ...client import Endpoint, GenericEnvClient, MCPToolClient
from ...core import CallToolAction, CallToolObservation
from ...launch import LocalProcessProvider
from ...loops import run_on_loop
from ...pool import is_url, render_observation
from .._discover import action_schema, mcp_tools
from ._tools import make_tool_method

__all__ = ["EnvTools", "make_environment_factory"]

_NOT_TASK = {"prompt", "completion", "environment", "trace_row"}


def _on_loop(coro: Any, timeout_s: float = 120.0) -> Any:
    return run_on_loop(coro, timeout_s)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


class EnvTools:
    """Base of the generated classes: one env session per instance; tools are added per env.

    Attributes:
        rewards: rewards of this episode's steps so far; ``done``: whether it ended.
    """

    endpoint: ClassVar[Endpoint]
    kind: ClassVar[Literal["mcp", "generic"]]
    reward_mode: ClassVar[Literal["sum", "last"]]
    _render: ClassVar[Callable[[Any], str]]

    def __init__(self) -> None:
        client_type = MCPToolClient if self.kind == "mcp" else GenericEnvClient
        self.client = client_type(self.endpoint.base_url, uds=self.endpoint.uds).sync().connect()
        self.rewards: list[float] = []
        self.done = False

    def reset(self, **row: Any) -> str | None:
        """Start an episode with the dataset row's columns (other than prompt/completion) as reset options."""
        options = {k: v for k, v in row.items() if k not in _NOT_TASK and v is not None}
        result = self.client.reset(**options)
        self.rewards, self.done = [], bool(result.done)
        text = type(self)._render(result.observation)
        return text if self.kind == "generic" else None

    def get_reward(self) -> float:
        """The episode's reward: the sum (or last) of its step rewards; 0.0 before any."""
        if not self.rewards:
            return 0.0
        return float(sum(self.rewards) if self.reward_mode == "sum" else self.rewards[-1])

    def _record(self, result: Any) -> None:
        if result.reward is not None:
            self.rewards.append(float(result.reward))
        self.done = bool(result.done)

    def _check_live(self) -> None:
        if self.done:
            raise RuntimeError("the episode is over; no more tool calls")

    def _act(self, arguments: dict[str, Any]) -> str:
        self._check_live()
        result = self.client.step(arguments)
        self._record(result)
        return type(self)._render(result.observation)

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        self._check_live()
        result = self.client.step(CallToolAction(tool_name=name, arguments=arguments))
        self._record(result)
        obs = result.observation
        if isinstance(obs, CallToolObservation):
            if obs.error is not None:
                raise RuntimeError(f"{name}: {obs.error.message}")
            data = obs.result.get("data", obs.result) if isinstance(obs.result, dict) else obs.result
            return _text(data)
        return type(self)._render(obs)

    def __del__(self) -> None:
        client = getattr(self, "client", None)
        # At interpreter exit the shared loop's thread no longer runs, and waiting on it hung the process for good;
        # the socket closes with the process and the server ends the session then.
        if client is None or sys.is_finalizing():
            return
        try:
            client.run(client.client.close(), 10.0)
        except Exception:  # the server is gone, or the close did not finish in time
            pass


def _mcp_call(self: EnvTools, arguments: dict[str, Any], *, name: str) -> str:
    return self._call_tool(name, arguments)


def _act_call(self: EnvTools, arguments: dict[str, Any]) -> str:
    return self._act(arguments)


def _start(env: str, max_sessions: int) -> tuple[Endpoint, LocalProcessProvider | None]:
    if is_url(env):
        return Endpoint(env), None
    provider = LocalProcessProvider(env, max_sessions=max_sessions)
    return _on_loop(provider.start()), provider


def _discover(endpoint: Endpoint, mode: Literal["auto", "mcp", "generic"]) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    if mode in ("auto", "mcp"):
        tools = mcp_tools(endpoint, required=mode == "mcp")
        if tools:
            return "mcp", [(t.name, t.description, t.input_schema) for t in tools]
    action = action_schema(endpoint)
    return "generic", [("", str(action.get("description") or ""), action)]


def _class_name(env: str) -> str:
    base = re.sub(r"[^0-9a-zA-Z]+", " ", env.rsplit(":", 1)[-1].rsplit("/", 1)[-1]).title().replace(" ", "")
    return (base or "Env") + "Tools"


def make_environment_factory(env: str, *, mode: Literal["auto", "mcp", "generic"] = "auto",
                             action_tool: str | None = None, reward: Literal["sum", "last"] = "sum",
                             max_sessions: int = 64,
                             render: Callable[[Any], str] = render_observation) -> type[EnvTools]:
    """A class for ``GRPOTrainer(environment_factory=cls)``: one env session per instance, tools from the env.

    An MCP env's tools become methods of the same names (typed from their input schemas, described by their
    descriptions). Any other env gets one method, ``action_tool`` (default ``<env>_step``), whose arguments
    are the fields of its action schema. ``reset(**row)`` passes the dataset row's columns (``prompt`` aside)
    to the env's ``reset`` and, for a non-MCP env, returns the first observation's text; ``get_reward``
    sums (or takes the last of) the episode's step rewards.

    Args:
        env: catalog name or ``module:Class`` (one server subprocess is started for the class), or a URL.
        mode: ``"auto"`` tries MCP first.
        action_tool: the method name of a non-MCP env's action.
        reward: ``"sum"`` or ``"last"`` step reward.
        max_sessions: sessions the started server allows (TRL keeps one instance per concurrent rollout).
        render: observation -> text for the model.

    The class has ``shutdown()`` (stop the server this call started).

    Raises:
        ToolSchemaError: a tool or action field without a usable type, or a name that is not an identifier.
    """
    endpoint, provider = _start(env, max_sessions)
    try:
        kind, tools = _discover(endpoint, mode)
        name = _class_name(env)
        methods: dict[str, Any] = {}
        for tool_name, description, schema in tools:
            call: Callable[[Any, dict[str, Any]], str]
            if kind == "mcp":
                call = functools.partial(_mcp_call, name=tool_name)
            else:
                tool_name = action_tool or re.sub(r"(?<!^)(?=[A-Z])", "_", name[:-5]).lower() + "_step"
                description = description or f"Take one action in the {env} environment."
                call = _act_call
            methods[tool_name] = make_tool_method(tool_name, description, schema, call)
    except BaseException:
        if provider is not None:
            _on_loop(provider.stop())
        raise

    def shutdown(cls: type[EnvTools]) -> None:
        if provider is not None:
            _on_loop(provider.stop())

    namespace = {**methods, "endpoint": endpoint, "kind": kind, "reward_mode": reward, "_render": staticmethod(render),
                 "shutdown": classmethod(shutdown), "__doc__": f"Tools of the {env!r} env (generated)."}
    return type(name, (EnvTools,), namespace)


