"""The installed agents: each real CLI's pinned package, its binary, its wire dialect, and how it is told the base
URL, key, model and prompt non-interactively, with telemetry and update checks off (pure data, no I/O).

A spec turns an :class:`AgentCall` (where the proxy is inside the task's environment, the per-episode key, the
model, the HOME to use) into the variables, config files and command line of one non-interactive run.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["AGENT_SPECS", "PROMPT_VAR", "AgentCall", "AgentLaunch", "AgentSpec", "shell_script_reply"]

PROMPT_VAR = "OPENENV_AGENT_PROMPT"
"""The variable that holds the task's instruction in the agent's run; commands read it as ``"$OPENENV_AGENT_PROMPT"``."""


@dataclass(frozen=True)
class AgentCall:
    """What one run of an agent's CLI is told.

    Args:
        origin: the policy endpoint as the CLI inside the environment reaches it, ``http://127.0.0.1:PORT``
            (no ``/v1``: each spec adds the path its dialect's client expects).
        api_key: the per-episode key (the capture session id) that ties every call to the episode.
        model: the model name the CLI sends.
        home: HOME of the run (its config files go there; a fresh folder each run).
    """

    origin: str
    api_key: str
    model: str
    home: str


@dataclass(frozen=True)
class AgentLaunch:
    """One run of a CLI: its variables, the config files written under HOME first, and its command line."""

    env: dict[str, str]
    files: dict[str, str]
    """``{path relative to HOME: text}``."""
    argv: list[str]
    """The command line; ``"$OPENENV_AGENT_PROMPT"`` stands for the instruction (a shell word, expanded)."""

    def shell(self) -> str:
        """The command line as one shell line (the prompt placeholder expanded from its variable)."""
        prompt = f'"${PROMPT_VAR}"'
        return " ".join(prompt if word == prompt else shlex.quote(word) for word in self.argv)


Dialect = Literal["anthropic_messages", "openai_responses", "google_generate_content", "openai_chat"]


@dataclass(frozen=True)
class AgentSpec:
    """An agent CLI that ``openenv-train agents install NAME`` installs and ``harbor run --agent NAME`` runs.

    Args:
        name: the agent's name on the command line.
        installer: ``npm`` (into ``node_modules/`` of the install folder) or ``pip`` (into ``venv/``).
        package: the npm or PyPI package.
        version: the pinned version.
        binary: the executable, relative to the install folder.
        dialect: the wire dialect its calls speak (the proxy answers them all).
        licence: the package's licence, as its registry states it.
        default_model: the model name sent when none is given (the proxy serves its one model whatever the name).
        launch: ``launch(call, binary) -> AgentLaunch``: the run's variables, config files and command line.
        needs_node: whether it runs on Node.js (``node`` must be on the host's PATH).
        root_note: what it needs to run as root (CI's user), for the docs.
        shell_tool: its own shell tool: ``(tool name, the argument that holds the command)``.
        finish_command: a shell command whose call ends its run (mini-swe-agent's submit); None: an answer with no
            tool call ends it.
    """

    name: str
    installer: Literal["npm", "pip"]
    package: str
    version: str
    binary: str
    dialect: Dialect
    licence: str
    default_model: str
    launch: Callable[[AgentCall, str], AgentLaunch] = field(repr=False)
    needs_node: bool = True
    root_note: str = ""
    shell_tool: tuple[str, str] = ("bash", "command")
    finish_command: str | None = None

    @property
    def pinned(self) -> str:
        """``package@version`` (npm) or ``package==version`` (pip)."""
        return f"{self.package}@{self.version}" if self.installer == "npm" else f"{self.package}=={self.version}"


def _prompt() -> str:
    return f'"${PROMPT_VAR}"'


def _claude(call: AgentCall, binary: str) -> AgentLaunch:
    env = {
        "ANTHROPIC_BASE_URL": call.origin, "ANTHROPIC_API_KEY": call.api_key,
        # root (CI) may skip permission prompts only when told the machine is a sandbox
        "IS_SANDBOX": "1",
        "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
    }
    return AgentLaunch(env, {}, [binary, "-p", _prompt(), "--dangerously-skip-permissions", "--model", call.model,
                                 "--output-format", "json"])


def _codex(call: AgentCall, binary: str) -> AgentLaunch:
    provider = (f'{{name="openenv", base_url="{call.origin}/v1", env_key="OPENAI_API_KEY", '
                f'wire_api="responses"}}')
    env = {"OPENAI_API_KEY": call.api_key, "CODEX_HOME": f"{call.home}/.codex", "NO_COLOR": "1"}
    config = 'check_for_update_on_startup = false\n[analytics]\nenabled = false\n'
    return AgentLaunch(env, {".codex/config.toml": config}, [
        binary, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
        "-c", "model_provider=openenv", "-c", f"model_providers.openenv={provider}", "-m", call.model, _prompt()])


def _opencode(call: AgentCall, binary: str) -> AgentLaunch:
    config = {
        "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
        "provider": {"openenv": {"npm": "@ai-sdk/openai-compatible", "name": "openenv",
                                 "options": {"baseURL": f"{call.origin}/v1", "apiKey": call.api_key},
                                 "models": {call.model: {"name": call.model}}}},
    }
    env = {"OPENCODE_DISABLE_AUTOUPDATE": "true", "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
           "OPENCODE_DISABLE_MODELS_FETCH": "true", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "true",
           "XDG_CONFIG_HOME": f"{call.home}/.config", "XDG_DATA_HOME": f"{call.home}/.local/share",
           "XDG_CACHE_HOME": f"{call.home}/.cache", "XDG_STATE_HOME": f"{call.home}/.local/state"}
    return AgentLaunch(env, {".config/opencode/opencode.json": json.dumps(config, indent=1)},
                       [binary, "run", "-m", f"openenv/{call.model}", _prompt()])


def _gemini(call: AgentCall, binary: str) -> AgentLaunch:
    settings = {
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    env = {"GOOGLE_GEMINI_BASE_URL": call.origin, "GEMINI_API_KEY": call.api_key, "GEMINI_CLI_NO_RELAUNCH": "true",
           "GEMINI_CLI_TRUST_WORKSPACE": "true", "NO_COLOR": "1"}
    return AgentLaunch(env, {".gemini/settings.json": json.dumps(settings, indent=1)},
                       [binary, "-p", _prompt(), "--yolo", "-m", call.model, "--output-format", "json"])


def _qwen(call: AgentCall, binary: str) -> AgentLaunch:
    settings = {
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "security": {"auth": {"selectedType": "openai"}},
    }
    env = {"OPENAI_BASE_URL": f"{call.origin}/v1", "OPENAI_API_KEY": call.api_key, "OPENAI_MODEL": call.model,
           "NO_COLOR": "1"}
    return AgentLaunch(env, {".qwen/settings.json": json.dumps(settings, indent=1)},
                       [binary, "--yolo", "-m", call.model, "--output-format", "json", _prompt()])


def _mini(call: AgentCall, binary: str) -> AgentLaunch:
    env = {"OPENAI_API_BASE": f"{call.origin}/v1", "OPENAI_BASE_URL": f"{call.origin}/v1",
           "OPENAI_API_KEY": call.api_key, "MSWEA_CONFIGURED": "true", "MSWEA_COST_TRACKING": "ignore_errors",
           "MSWEA_SILENT_STARTUP": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_COLOR": "1"}
    return AgentLaunch(env, {}, [binary, "-y", "--exit-immediately", "-l", "0", "-m", f"openai/{call.model}",
                                 "-t", _prompt(), "-o", f"{call.home}/trajectory.json"])


AGENT_SPECS: Mapping[str, AgentSpec] = {spec.name: spec for spec in (
    AgentSpec("mini-swe-agent", "pip", "mini-swe-agent", "2.4.6", "venv/bin/mini", "openai_chat", "MIT",
              "served", _mini, needs_node=False, finish_command="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
              root_note="none"),
    AgentSpec("claude-code", "npm", "@anthropic-ai/claude-code", "2.1.332", "node_modules/.bin/claude",
              "anthropic_messages", "proprietary (Anthropic Commercial Terms)", "claude-sonnet-4-5",
              _claude, root_note="IS_SANDBOX=1, or as root it refuses --dangerously-skip-permissions",
              shell_tool=("Bash", "command")),
    AgentSpec("codex", "npm", "@openai/codex", "0.171.0", "node_modules/.bin/codex", "openai_responses",
              "Apache-2.0", "served", _codex,
              root_note="none; its own sandbox is turned off (--dangerously-bypass-approvals-and-sandbox): the "
                        "task's environment is the sandbox", shell_tool=("exec_command", "cmd")),
    AgentSpec("opencode", "npm", "opencode-ai", "1.18.33", "node_modules/.bin/opencode", "openai_chat", "MIT",
              "served", _opencode, root_note="none"),
    AgentSpec("gemini-cli", "npm", "@google/gemini-cli", "0.61.0", "node_modules/.bin/gemini", "google_generate_content",
              "Apache-2.0", "gemini-2.5-pro", _gemini, root_note="none", shell_tool=("run_shell_command", "command")),
    AgentSpec("qwen-code", "npm", "@qwen-code/qwen-code", "0.24.4", "node_modules/.bin/qwen", "openai_chat",
              "Apache-2.0", "served", _qwen, root_note="none", shell_tool=("run_shell_command", "command")),
)}
"""The installed agents by name, each pinned."""


def shell_script_reply(agent: str, command: str) -> Callable[[list[dict[str, Any]]], str]:
    r"""A scripted policy for :class:`~openenv_train.policy.ScriptedBackend` that drives ``agent``'s own shell tool:
    it calls the tool with ``command`` until a tool result is in the conversation, then ends the agent's way (an
    answer, or mini-swe-agent's submit command). Side calls (titles, summaries) offer no tools and read the call
    as text.

    >>> reply = shell_script_reply("codex", "ls")
    >>> reply([{"role": "user", "content": "list"}])
    '<tool_call>\n{"name": "exec_command", "arguments": {"cmd": "ls"}}\n</tool_call>'
    >>> reply([{"role": "user", "content": "list"}, {"role": "tool", "content": "a.txt"}])
    'Done.'
    """
    spec = AGENT_SPECS[agent]
    name, argument = spec.shell_tool

    def call(line: str) -> str:
        return f"<tool_call>\n{json.dumps({'name': name, 'arguments': {argument: line}})}\n</tool_call>"

    def reply(messages: list[dict[str, Any]]) -> str:
        if any(message.get("role") == "tool" for message in messages):
            return "Done." if spec.finish_command is None else call(spec.finish_command)
        return call(command)

    return reply
