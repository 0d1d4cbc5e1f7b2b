"""Agent loops: how an episode turns policy output into env actions. Any ``async (ctx) -> None`` is one.

- :class:`ScriptedAgent`: a callable policy maps each observation to an action.
- :class:`TextAgent`: a model replies in text; a parser turns the text into an action.
- :class:`ToolAgent`: a model calls tools; each call becomes an MCP tool call or an action's fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, Protocol

from ._context import EpisodeContext

__all__ = ["AgentLoop", "ScriptedAgent", "TextAgent", "ToolAgent", "message_action", "render_observation"]


class AgentLoop(Protocol):
    """Plays one episode on ``ctx``: reset, then policy turns and steps until done or a limit."""

    async def __call__(self, ctx: EpisodeContext) -> None: ...


def render_observation(observation: Any) -> str:
    """Default text of an observation for a model: its ``prompt``, else the last message, else JSON.

    >>> render_observation({"prompt": "Guess a word", "messages": []})
    'Guess a word'
    """
    obs = observation if isinstance(observation, dict) else getattr(observation, "__dict__", {})
    messages = obs.get("messages") or []
    if messages and isinstance(messages[-1], dict) and messages[-1].get("content"):
        return str(messages[-1]["content"])
    if obs.get("prompt"):
        return str(obs["prompt"])
    return json.dumps(obs, default=str)


def message_action(text: str) -> dict[str, Any]:
    """Default parser: the whole reply as ``{"message": text}`` (Wordle, chat-like envs).

    >>> message_action("[crane]")
    {'message': '[crane]'}
    """
    return {"message": text}


class ScriptedAgent:
    """Ask a callable policy for each action: ``policy(observation) -> action``."""

    async def __call__(self, ctx: EpisodeContext) -> None:
        result = await ctx.reset()
        while not result.done:
            result = await ctx.step(await ctx.act(result.observation))


class TextAgent:
    """A chat model plays: observations become user messages, replies are parsed into actions.

    Args:
        parser: reply text -> action (default :func:`message_action`).
        render: observation -> user message text (default :func:`render_observation`).
        system_prompt: optional first message.
    """

    def __init__(self, parser: Callable[[str], Any] = message_action,
                 render: Callable[[Any], str] = render_observation, system_prompt: str | None = None) -> None:
        self.parser, self.render, self.system_prompt = parser, render, system_prompt

    async def __call__(self, ctx: EpisodeContext) -> None:
        result = await ctx.reset()
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        while not result.done:
            messages.append({"role": "user", "content": self.render(result.observation)})
            reply = await ctx.chat(messages)
            text = str(reply.message.get("content") or "")
            messages.append({"role": "assistant", "content": text})
            result = await ctx.step(self.parser(text))


class ToolAgent:
    """A chat model calls tools; each call is run on the env and its result goes back as a tool message.

    Args:
        tools: OpenAI ``tools``; None lists the MCP env's tools (``mode="mcp"``).
        mode: ``"mcp"`` calls the env's tool of that name; ``"fields"`` sends the arguments as the action
            (the tool name goes in ``action_field`` when set).
        action_field: with ``mode="fields"``, the action key that receives the tool name.
        render: observation -> first user message text.

    The episode ends when the env says done, or when the model answers without a tool call.
    """

    def __init__(self, tools: list[dict[str, Any]] | None = None, *, mode: Literal["mcp", "fields"] = "mcp",
                 action_field: str | None = None, render: Callable[[Any], str] = render_observation) -> None:
        self.tools, self.mode, self.action_field, self.render = tools, mode, action_field, render

    async def _tools(self, ctx: EpisodeContext) -> list[dict[str, Any]]:
        if self.tools is not None:
            return self.tools
        listed = await ctx.env.list_tools()
        return [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                  "parameters": t.input_schema or {"type": "object"}}} for t in listed]

    async def __call__(self, ctx: EpisodeContext) -> None:
        result = await ctx.reset()
        tools = await self._tools(ctx)
        messages: list[dict[str, Any]] = [{"role": "user", "content": self.render(result.observation)}]
        while not result.done:
            reply = await ctx.chat(messages, tools)
            messages.append({"role": "assistant", **reply.message})
            calls = reply.message.get("tool_calls") or []
            if not calls:
                return
            for call in calls:
                name, args = call["function"]["name"], call["function"].get("arguments") or {}
                args = json.loads(args) if isinstance(args, str) else dict(args)
                result = await ctx.step(self._action(name, args))
                content = json.dumps(ctx.steps[-1]["observation"], default=str)
                messages.append({"role": "tool", "tool_call_id": call.get("id", name), "name": name, "content": content})
                if result.done:
                    return

    def _action(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if self.mode == "mcp":
            return {"type": "call_tool", "tool_name": name, "arguments": args}
        return {**args, self.action_field: name} if self.action_field else args
