"""verifiers' v1 classes over an env of ours: the taskset options, the tasks, and the ``Env`` that plays them."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from ...core import OpenEnvTrainError, did_you_mean
from ._errors import VerifiersError, VerifiersNotInstalled

__all__ = ["ACTION_KINDS", "INSTALL", "OPTIONS", "check_options", "import_verifiers", "verifiers_classes"]

INSTALL = "pip install 'verifiers==0.4.0'  (or: pip install 'openenv-train[verifiers]')"
ACTION_KINDS = ("auto", "message", "json", "tool", "tool_call")
OPTIONS = ("env", "seed", "episodes", "resets", "action", "max_turns", "system_prompt")
"""The taskset options (``--env.taskset.<option>``) besides verifiers' own."""


def import_verifiers() -> Any:
    """verifiers' v1 API (``verifiers.v1``).

    Raises:
        VerifiersNotInstalled: verifiers is not installed (the message gives the install line).
    """
    try:
        import verifiers.v1 as vf
    except ImportError as exc:
        raise VerifiersNotInstalled(f"this needs verifiers' v1 API: {INSTALL} ({type(exc).__name__}: {exc})") from exc
    return vf


def _resolve_kind(env: str, kind: str) -> str:
    if kind not in ACTION_KINDS:
        raise VerifiersError(f"action must be one of {', '.join(ACTION_KINDS)}, got {kind!r}")
    if kind != "auto":
        return kind
    from ...pool import is_url

    if is_url(env):
        return "json"
    from ...envs import load_env_class
    from ...server import MCPEnvironment

    cls = load_env_class(env)
    if issubclass(cls, MCPEnvironment):
        return "tool_call"
    return "message" if env == "wordle" or cls.__name__ == "WordleEnvironment" else "json"


def _system_prompt(env: str, kind: str) -> str | None:
    """The system prompt of a task: the action's schema for ``json`` (an MCP env's tools open its first turn)."""
    if kind == "json":
        from ...pool import is_url

        schema: Any = "the env's action"
        if not is_url(env):
            from ...envs import load_env_class

            action_type = getattr(load_env_class(env), "action_type", None)
            schema_of = getattr(action_type, "model_json_schema", None)
            schema = schema_of() if callable(schema_of) else schema
        return f"Reply with the action as one JSON object. Its schema: {json.dumps(schema, default=str)}"
    return None


def check_options(data: dict[str, Any]) -> None:
    """Refuse taskset options that do not exist (before verifiers' own check, with the valid ones named).

    Raises:
        VerifiersError: an unknown option (close matches and every valid option named).
    """
    allowed = set(OPTIONS) | {"id", "task", "system_prompt"}
    for key in data:
        if key not in allowed:
            raise VerifiersError(f"taskset option {key!r} does not exist{did_you_mean(key, sorted(allowed))}; "
                                 f"the options: {', '.join(sorted(allowed))}")


@cache
def verifiers_classes(default_env: str = "wordle") -> dict[str, type]:
    """verifiers v1 classes over ``default_env``: ``Config`` (taskset options), ``Taskset``, ``EnvConfig``, ``Env``.

    ``default_env`` is a catalog name, ``module:Class``, env folder or URL (``--env.taskset.env`` overrides it).

    Raises:
        VerifiersNotInstalled: verifiers is not installed.
        EnvLoadError: ``default_env`` is not a known env (close matches named).
    """
    vf: Any = import_verifiers()
    from pydantic import model_validator

    from ._run import OpenEnvTrainRunner

    _resolve_kind(default_env, "auto")  # an unknown env fails here, with close matches

    class TaskConfig(vf.TaskConfig):  # type: ignore[misc, valid-type]
        tools_url: str | None = None
        """The MCP URL of the rollout's env tools (action tool_call): Env.run fills it per rollout; leave unset."""

    class Config(vf.TasksetConfig):  # type: ignore[misc, valid-type]
        env: str = default_env
        """Catalog name, module:Class, env folder or server URL."""
        seed: int = 0
        """Task i resets with seed + i."""
        episodes: int = 8
        """How many tasks (len(resets) when resets is given)."""
        resets: list[dict[str, Any]] = []
        """Reset options per task, e.g. [{"task": "crane"}]."""
        action: str = "auto"
        """How a reply becomes an action: auto, message, json, tool (JSON text) or tool_call (native)."""
        max_turns: int = 10
        task: TaskConfig = TaskConfig()

        @model_validator(mode="before")
        @classmethod
        def _known(cls, data: Any) -> Any:
            if isinstance(data, dict):
                check_options(data)
            return data

        @model_validator(mode="after")
        def _resolvable(self) -> Any:
            try:
                _resolve_kind(self.env, self.action)
            except OpenEnvTrainError as exc:  # pydantic shows ValueErrors as the option's error
                raise VerifiersError(f"--env.taskset.env/--env.taskset.action: {exc}") from None
            return self

    class Tools(vf.Toolset[vf.ToolsetConfig, vf.State]):  # type: ignore[misc, valid-type]
        """The env session's tools, served by Env.run's process (a config url: verifiers launches nothing)."""

        TOOL_PREFIX = None  # the env's own tool names, as our ToolAgent offers them

    class Data(vf.TaskData):  # type: ignore[misc, valid-type]
        env: str
        seed: int
        reset: dict[str, Any]
        action: str
        max_turns: int
        fallback: str | None = None
        """The action where the harness cannot take native tools (auto picked tool_call: tool), else refused."""

    class OpenEnvTask(vf.Task[Data, vf.State, TaskConfig]):  # type: ignore[misc, valid-type]
        live: Any = None
        """The rollout's ToolSession (action tool_call), set on the task Env.run hands the harness."""

        @classmethod
        def toolsets(cls, config: Any) -> list[Any]:
            url = getattr(config, "tools_url", None)
            return [Tools(vf.ToolsetConfig(url=url))] if url else []

        def with_tools(self, url: str, live: Any) -> OpenEnvTask:
            """This task for one rollout whose env tools are served at ``url`` by ``live`` (a ToolSession)."""
            task = OpenEnvTask(self.data, self.config.model_copy(update={"tools_url": url}))
            task.live = live
            return task

        @vf.stop
        def env_done(self, trace: Any) -> bool:
            """Refuse the next model turn once the env said done or max_turns were taken (native tool calls)."""
            return self.live is not None and bool(self.live.over(trace.num_turns))

    # verifiers picks a hook's boundary from its resolved annotations; this module's are strings it cannot resolve
    OpenEnvTask.env_done.__annotations__ = {"trace": vf.Trace, "return": bool}

    class Taskset(vf.Taskset[OpenEnvTask, Config]):  # type: ignore[misc, valid-type]
        def load(self) -> Any:
            config = self.config
            kind = _resolve_kind(config.env, config.action)
            fallback = "tool" if kind == "tool_call" and config.action == "auto" else None
            resets = config.resets or [{} for _ in range(config.episodes)]
            for i, reset in enumerate(resets):
                yield OpenEnvTask(Data(name=f"{config.env}#{i}", prompt=None, env=config.env, seed=config.seed + i,
                                       reset=dict(reset), action=kind, max_turns=config.max_turns,
                                       fallback=fallback, system_prompt=_system_prompt(config.env, kind)),
                                  config.task)

    class EnvConfig(vf.EnvConfig):  # type: ignore[misc, valid-type]
        player: vf.AgentConfig = vf.AgentConfig()

    class Env(vf.Env[EnvConfig]):  # type: ignore[misc, valid-type]
        async def start(self) -> None:
            self.runner = OpenEnvTrainRunner()

        async def stop(self) -> None:
            runner = getattr(self, "runner", None)
            if runner is not None:
                await runner.aclose()

        async def run(self, task: Any, agents: Any) -> None:
            runner = getattr(self, "runner", None) or OpenEnvTrainRunner()
            self.runner = runner
            await runner.run(task, agents)

    return {"Config": Config, "Taskset": Taskset, "EnvConfig": EnvConfig, "Env": Env, "Task": OpenEnvTask}
