"""MCPToolClient: list and call the tools of an MCP environment through its session."""

from __future__ import annotations

from typing import Any

from ..core import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Observation,
    OpenEnvTrainError,
    StepResult,
    Tool,
)
from ._client import EnvClient

__all__ = ["MCPToolClient", "ToolCallError"]


class ToolCallError(OpenEnvTrainError):
    """A tool call came back with an error (``error_type`` as in MCP: tool_not_found, invalid_args, ...)."""

    def __init__(self, tool_name: str, error_type: str, message: str) -> None:
        super().__init__(f"tool {tool_name!r} failed ({error_type}): {message}")
        self.tool_name = tool_name
        self.error_type = error_type


class MCPToolClient(EnvClient[Any, Observation, Any]):
    """Client of an MCP env: ``list_tools()`` and ``call_tool(name, **arguments)``.

    Calls go through ``step`` (so they count as env steps and can carry rewards), exactly
    as OpenEnv's MCPToolClient does by default.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tools: list[Tool] | None = None

    def _result(self, data: dict[str, Any]) -> StepResult[Any]:
        own = dict(data.get("observation") or {})
        reward, done, metadata = data.get("reward"), bool(data.get("done", False)), data.get("metadata") or {}
        metadata = own.pop("metadata", None) or metadata  # openenv >= 0.10 repeats it inside the observation
        common = {"reward": reward, "done": done, "metadata": metadata}
        if "tools" in own:
            obs: Observation = ListToolsObservation.model_validate({**own, **common})
        elif "tool_name" in own:
            obs = CallToolObservation.model_validate({**own, **common})
        else:
            obs = Observation.model_validate(common)
        return StepResult(observation=obs, reward=reward, done=done, metadata=metadata)

    async def list_tools(self, *, use_cache: bool = True) -> list[Tool]:
        """The env's tools (cached after the first call)."""
        if use_cache and self._tools is not None:
            return self._tools
        obs = (await self.step(ListToolsAction())).observation
        assert isinstance(obs, ListToolsObservation)
        self._tools = obs.tools
        return self._tools

    async def call_tool(self, name: str, **arguments: Any) -> Any:
        """Call a tool and return its value (the MCP result's ``data``).

        Raises:
            ToolCallError: the env reported an error for the call.
        """
        obs = (await self.step(CallToolAction(tool_name=name, arguments=arguments))).observation
        if not isinstance(obs, CallToolObservation):
            raise ToolCallError(name, "transport_error", f"expected a call_tool observation, got {obs!r}")
        if obs.error is not None:
            raise ToolCallError(name, obs.error.error_type.value, obs.error.message)
        result = obs.result
        if isinstance(result, dict) and "data" in result:
            return result["data"]
        return result
