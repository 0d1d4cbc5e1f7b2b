"""verifiers (PyPI ``verifiers==0.4.0``, its v1 API; prime-rl's environments): any env of ours as a taskset.

verifiers loads a taskset by a top-level module name, so an env of ours becomes an installable environment
package::

    openenv-train export verifiers wordle ./wordle-vf      # pyproject.toml + openenv_wordle.py
    pip install ./wordle-vf
    vf-eval openenv-wordle --no-push -n 4 -m default --client.base-url http://127.0.0.1:8001/v1 \\
        --env.player.runtime.type subprocess --env.player.harness.id null

The package's module exports the classes :func:`verifiers_classes` builds. Its ``Env.run`` starts (once per
``vf-eval`` run) a server of the env, or connects to a URL, and plays each task through our client: task ``i``
resets with ``seed + i`` (and ``resets[i]`` when given), the reset observation is the first user turn, each reply
becomes an action and each next observation the next user turn, until the env says done or ``max_turns``. Actions:

- ``message``: the whole reply is ``{"message": reply}`` (Wordle and chat-like envs);
- ``json``: the reply's JSON object is the action (else ``{"message": reply}``), the action's JSON schema is in
  the system prompt;
- ``tool_call``: an MCP env, its tools as native tool calls: the model is offered the env's tools as OpenAI
  ``tools``, each of its ``tool_calls`` is a ``call_tool`` step of the episode's env session and the step's
  observation (JSON) goes back as a ``role: tool`` message, as our own ``ToolAgent`` plays. The reset observation
  is the one user turn; the episode ends when the env says done, the model answers without a tool call, or
  ``max_turns`` model turns were taken. The tools reach the harness as verifiers does it, as a task's MCP tool
  server (``Task.toolsets``), served from the process that holds the env session (see ``_verifiers_tools``): the
  harness must support MCP (the ``null`` harness does);
- ``tool``: an MCP env for harnesses without tools: the first user turn lists its tools and the reply's JSON object
  ``{"tool": NAME, "arguments": {...}}`` is one tool call.

``auto`` picks ``message`` for Wordle, ``tool_call`` for an MCP env (``tool`` where the harness does not support
MCP), else ``json``. The trace's rewards: ``env_reward`` (weight 1: the sum of step rewards, what our own episodes
return) and each rubric component the env reports in its last observation's ``info.reward_signals`` or
``metadata.rubric`` (weight 0, so the trace's reward is the env's); its metrics: ``turns`` (model turns) and
``done``.

Model calls go through verifiers' own client to ``--client.base-url``: our
:class:`~openenv_train.policy.PolicyServer` records them when the API key (``--client.api-key-var``) names an
open capture session.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..core import OpenEnvTrainError, did_you_mean

__all__ = ["ACTION_KINDS", "INSTALL", "OPTIONS", "EpisodeResult", "VerifiersError", "VerifiersNotInstalled",
           "check_options", "export_package", "import_verifiers", "package_name", "parse_action", "play_episode",
           "render", "verifiers_classes"]

INSTALL = "pip install 'verifiers==0.4.0'  (or: pip install 'openenv-train[verifiers]')"
ACTION_KINDS = ("auto", "message", "json", "tool", "tool_call")
OPTIONS = ("env", "seed", "episodes", "resets", "action", "max_turns", "system_prompt")
"""The taskset options (``--env.taskset.<option>``) besides verifiers' own."""


class VerifiersError(OpenEnvTrainError, ValueError):
    """A taskset option or export this integration cannot use; the message names the valid options."""


class VerifiersNotInstalled(OpenEnvTrainError, ImportError):
    """``verifiers`` is not installed; the message gives the install line."""


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


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _json_object(text: str) -> dict[str, Any] | None:
    found = _OBJECT.search(text)
    if not found:
        return None
    try:
        value = json.loads(found.group(0))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_action(reply: str, kind: str) -> dict[str, Any]:
    """The env action of a text reply under action ``kind`` (``message``, ``json`` or ``tool``).

    >>> parse_action("[crane]", "message")
    {'message': '[crane]'}
    >>> parse_action('{"tool": "echo", "arguments": {"text": "hi"}}', "tool")
    {'type': 'call_tool', 'tool_name': 'echo', 'arguments': {'text': 'hi'}}

    A ``tool`` reply without a tool name is a call of the tool named ``""`` (the env answers with its error).
    """
    if kind == "message":
        return {"message": reply}
    value = _json_object(reply)
    if kind == "tool":
        value = value or {}
        arguments = value.get("arguments")
        return {"type": "call_tool", "tool_name": str(value.get("tool") or value.get("name") or ""),
                "arguments": arguments if isinstance(arguments, dict) else {}}
    return value if value is not None else {"message": reply}


@dataclass
class EpisodeResult:
    """One played episode: the env's reward (sum of step rewards), components, turns, done."""

    reward: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    turns: int = 0
    done: bool = False
    steps: list[dict[str, Any]] = field(default_factory=list)


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


def _components(observation: Any) -> dict[str, float]:
    """Rubric components an observation reports: ``info.reward_signals`` (Wordle, TextArena), ``metadata.rubric``."""
    obs = _plain(observation)
    if not isinstance(obs, dict):
        return {}
    found: dict[str, Any] = {}
    info, metadata = obs.get("info"), obs.get("metadata")
    if isinstance(info, dict) and isinstance(info.get("reward_signals"), dict):
        found.update(info["reward_signals"])
    if isinstance(metadata, dict) and isinstance(metadata.get("rubric"), dict):
        found.update(metadata["rubric"])
    return {str(k): float(v) for k, v in found.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def render(observation: Any, kind: str) -> str:
    """The user turn of an observation: its prompt or last message, or (``tool``) the whole observation as JSON."""
    from ..pool import render_observation

    obs = _plain(observation)
    if kind == "tool":
        return json.dumps(obs, default=str)
    return render_observation(obs)


async def play_episode(client: Any, reply: Any, *, kind: str, seed: int | None, reset: dict[str, Any],
                       max_turns: int) -> EpisodeResult:
    """Play one episode on ``client`` (our env client): ``await reply(user_text) -> (reply_text, ended)``.

    The same loop serves verifiers (``reply`` is one turn of its interaction) and a check by hand (a script).
    """
    result = await client.reset(**reset, **({"seed": seed} if seed is not None else {}))
    episode = EpisodeResult(done=bool(result.done))
    while not result.done and episode.turns < max_turns:
        text, ended = await reply(render(result.observation, kind))
        if ended:
            break
        episode.turns += 1
        action = parse_action(text, kind)
        result = await client.step(action)
        record_step(episode, action, result)
    return episode


def record_step(episode: EpisodeResult, action: dict[str, Any], result: Any) -> None:
    """Add one env step (``action`` and its ``StepResult``) to ``episode``: reward, components, done."""
    episode.steps.append({"action": action, "reward": result.reward, "done": result.done})
    episode.reward += float(result.reward or 0.0)
    episode.components = _components(result.observation) or episode.components
    episode.done = bool(result.done)


def _resolve_kind(env: str, kind: str) -> str:
    if kind not in ACTION_KINDS:
        raise VerifiersError(f"action must be one of {', '.join(ACTION_KINDS)}, got {kind!r}")
    if kind != "auto":
        return kind
    from ..pool import is_url

    if is_url(env):
        return "json"
    from ..envs import load_env_class
    from ..server import MCPEnvironment

    cls = load_env_class(env)
    if issubclass(cls, MCPEnvironment):
        return "tool_call"
    return "message" if env == "wordle" or cls.__name__ == "WordleEnvironment" else "json"


def _system_prompt(env: str, kind: str) -> str | None:
    """The system prompt of a task: the action's schema for ``json`` (an MCP env's tools open its first turn)."""
    if kind == "json":
        from ..pool import is_url

        schema: Any = "the env's action"
        if not is_url(env):
            from ..envs import load_env_class

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

    from ._verifiers_run import OpenEnvTrainRunner

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


def package_name(env: str) -> str:
    """The distribution name of an exported env: ``openenv-<env>`` (its module: ``openenv_<env>``).

    >>> package_name("wordle"), package_name("pkg.mod:MyEnv")
    ('openenv-wordle', 'openenv-myenv')
    """
    base = env.rsplit(":", 1)[-1].rstrip("/").rsplit("/", 1)[-1]
    return "openenv-" + re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")


_MODULE = '''\
"""verifiers environment: openenv_train's {env!r} env (made by `openenv-train export verifiers`)."""

from openenv_train.integrations.verifiers import verifiers_classes

_classes = verifiers_classes({env!r})
{prefix}Config = _classes["Config"]
{prefix}Taskset = _classes["Taskset"]
{prefix}EnvConfig = _classes["EnvConfig"]
{prefix}Env = _classes["Env"]

__all__ = ["{prefix}Config", "{prefix}Env", "{prefix}EnvConfig", "{prefix}Taskset"]
'''

_PYPROJECT = '''\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "openenv_train's {env} env as a verifiers taskset"
requires-python = ">=3.11"
dependencies = ["verifiers==0.4.0", "openenv-train"]

[tool.setuptools]
py-modules = ["{module}"]
'''


def export_package(env: str, directory: str | Path, *, name: str | None = None) -> Path:
    """Write an installable verifiers environment package around ``env``: ``pyproject.toml`` and one module.

    Args:
        env: catalog name, ``module:Class``, env folder or server URL.
        directory: where to write (created; existing files of the same names are replaced).
        name: the distribution name (default :func:`package_name`); its module is the name with ``_``.

    Returns:
        The module file written.

    Raises:
        EnvLoadError: ``env`` is not a known env (close matches named).
        VerifiersError: ``name`` is not a valid distribution name.
    """
    from ..pool import is_url

    if not is_url(env):
        from ..envs import load_env_target

        load_env_target(env)
    name = name or package_name(env)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name):
        raise VerifiersError(f"package name {name!r} must be letters, digits, '-' or '_', starting with a letter")
    module = name.replace("-", "_").lower()
    prefix = "".join(part.capitalize() for part in module.split("_"))
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pyproject.toml").write_text(_PYPROJECT.format(name=name, env=env, module=module), encoding="utf-8")
    path = out / f"{module}.py"
    path.write_text(textwrap.dedent(_MODULE.format(env=env, prefix=prefix)), encoding="utf-8")
    return path
