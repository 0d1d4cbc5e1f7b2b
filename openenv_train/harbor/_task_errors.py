"""Errors of Harbor task runs. Each failed attempt becomes a row with ``ok=False`` and ``error.type`` set to the
class name, so these names are part of the trace data.

::

    OpenEnvTrainError
    └── HarborError                     root of the errors of ``openenv_train.harbor``
        ├── AgentNotInstalled           an installed agent's pinned CLI is not in the agent cache (or Node.js is missing)
        ├── AgentInstallError           ``openenv-train agents install`` failed (npm or pip said why)
        └── TaskError                   a Harbor task could not be run to a reward
            ├── TaskFormatError         a task folder is malformed: a required file is missing, task.toml is bad
            ├── EnvironmentSetupError   the task's workspace could not be built (Dockerfile step, no sandbox)
            │   └── McpServerError      an MCP server the task declares did not start or list its tools
            ├── AgentTimeoutError       the agent ran past ``[agent] timeout_sec``
            ├── VerifierTimeoutError    tests/test.sh ran past ``[verifier] timeout_sec``
            ├── RewardFileError         the verifier wrote no reward file, or one that does not parse
            ├── ModelCallError          the policy endpoint failed or answered something that is not a completion
            ├── AgentExitError          an installed agent's CLI exited with an error (its output says why)
            └── UnsupportedTaskFeature  the task needs something this runner does not do yet (e.g. docker-compose)
"""

from __future__ import annotations

from ..core import OpenEnvTrainError

__all__ = [
    "AgentExitError",
    "AgentInstallError",
    "AgentNotInstalled",
    "AgentTimeoutError",
    "HarborError",
    "EnvironmentSetupError",
    "McpServerError",
    "ModelCallError",
    "RewardFileError",
    "TaskError",
    "TaskFormatError",
    "UnsupportedTaskFeature",
    "VerifierTimeoutError",
]


class HarborError(OpenEnvTrainError):
    """Root of the errors of ``openenv_train.harbor``."""


class TaskError(HarborError):
    """A Harbor task attempt failed before it produced a reward."""


class TaskFormatError(TaskError):
    """A task folder does not follow Harbor's layout, or its task.toml is invalid.

    Attributes:
        task_dir: the task folder.
        file: the file at fault, relative to the task folder (e.g. ``tests/test.sh``).
        field: the task.toml field at fault (``verifier.timeout_sec``), when there is one.
    """

    def __init__(self, message: str, *, task_dir: str, file: str, field: str | None = None) -> None:
        super().__init__(message)
        self.task_dir, self.file, self.field = task_dir, file, field


class EnvironmentSetupError(TaskError):
    """The task's workspace could not be prepared (a Dockerfile step failed, no sandbox or engine here)."""


class McpServerError(EnvironmentSetupError):
    """An ``[[environment.mcp_servers]]`` server could not be started, connected to, or asked for its tools.

    Attributes:
        server: the server's ``name`` in task.toml.
    """

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class AgentTimeoutError(TaskError):
    """The agent was still running when ``[agent] timeout_sec`` ran out."""


class VerifierTimeoutError(TaskError):
    """``tests/test.sh`` was still running when ``[verifier] timeout_sec`` ran out."""


class RewardFileError(TaskError):
    """The verifier finished without a usable ``/logs/verifier/reward.txt`` or ``reward.json``."""


class ModelCallError(TaskError):
    """A chat-completion call failed (HTTP error, timeout, or a reply without ``choices``)."""


class UnsupportedTaskFeature(TaskError):
    """The task declares a feature this runner does not support yet (named in the message)."""


class AgentNotInstalled(HarborError):
    """An installed agent's pinned CLI is missing from the agent cache; the message names the install command."""


class AgentInstallError(HarborError):
    """Installing an agent's pinned package failed."""


class AgentExitError(TaskError):
    """An installed agent's CLI exited with a non-zero status (the tests still run on what it left)."""
