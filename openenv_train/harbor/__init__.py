"""Harbor-format tasks: task folders, task environments (sandbox or Docker), agents, and task runs.

The trace names (``TraceWriter``, ``CaptureStore``, ``TraceRow``, ``read_traces``, ...) moved to
:mod:`openenv_train.trace`, ``policy_endpoint`` to :mod:`openenv_train.policy` and ``docker_available`` to
:mod:`openenv_train.containers`; they still import from here for one release, with an
:class:`~openenv_train.core.OpenEnvTrainDeprecationWarning` that names the new place.
"""

from ..core import lazy_attributes, moved_names
from ._agent_install import AGENTS_DIR_ENV, agent_binary, agent_spec, agents_dir, install_agent, installed_dir
from ._agent_specs import AGENT_SPECS, AgentCall, AgentLaunch, AgentSpec, shell_script_reply
from ._agents import BASH_TOOL, AgentContext, HarborAgent, ModelAgent, NopAgent, OracleAgent
from ._cli_agents import SANDBOX_PROXY_PORT, CommandAgent, InstalledAgent
from ._folder_env import HarborAction, HarborFolderEnvironment, HarborObservation, HarborState
from ._runner import HarborRunConfig, parse_rewards, run_task, run_tasks
from ._task_env import DockerTaskEnv, ExecResult, SandboxTaskEnv, TaskEnvironment
from ._task_errors import (
    AgentExitError,
    AgentInstallError,
    AgentNotInstalled,
    AgentTimeoutError,
    EnvironmentSetupError,
    HarborError,
    McpServerError,
    ModelCallError,
    RewardFileError,
    TaskError,
    TaskFormatError,
    UnsupportedTaskFeature,
    VerifierTimeoutError,
)
from ._tasks import HarborTask, TaskConfig, find_tasks, load_task, parse_task_config

#: Names that moved out of this package; they import from here for one release, with a deprecation warning.
_MOVED = {
    **moved_names([
        "ATIF_VERSION", "ROW_SCHEMA_VERSION", "TRACE_SCHEMA", "TURN_METADATA_KEYS", "CaptureError",
        "CaptureSessionExists", "CaptureStore", "EnvInfo", "EnvStep", "EpisodeKey", "ErrorInfo", "HubPushError",
        "PolicyInfo", "RunDirLocked", "TraceReadError", "TraceRow", "TraceWriteError", "TraceWriter", "TrainingTrace",
        "TrainingTurn", "UnknownCaptureSession", "build_turn", "completion_loss_mask", "conversation", "episode_key",
        "export_atif", "iter_traces", "load_dataset", "openai_logprobs", "push_to_hub", "read_traces",
        "sft_features", "shard_paths", "to_atif", "to_sft_dataset", "traces_glob",
    ], "openenv_train.trace"),
    "policy_endpoint": "openenv_train.policy",
    "docker_available": "openenv_train.containers",
}

__getattr__, __dir__ = lazy_attributes(__name__, moved=_MOVED)

__all__ = [
    "AGENTS_DIR_ENV",
    "AGENT_SPECS",
    "BASH_TOOL",
    "SANDBOX_PROXY_PORT",
    "AgentCall",
    "AgentContext",
    "AgentExitError",
    "AgentInstallError",
    "AgentLaunch",
    "AgentNotInstalled",
    "AgentSpec",
    "CommandAgent",
    "InstalledAgent",
    "agent_binary",
    "agent_spec",
    "agents_dir",
    "install_agent",
    "installed_dir",
    "AgentTimeoutError",
    "DockerTaskEnv",
    "EnvironmentSetupError",
    "HarborError",
    "ExecResult",
    "HarborAgent",
    "HarborAction",
    "HarborFolderEnvironment",
    "HarborObservation",
    "HarborState",
    "HarborRunConfig",
    "HarborTask",
    "McpServerError",
    "ModelAgent",
    "ModelCallError",
    "NopAgent",
    "OracleAgent",
    "RewardFileError",
    "SandboxTaskEnv",
    "TaskConfig",
    "TaskEnvironment",
    "TaskError",
    "TaskFormatError",
    "UnsupportedTaskFeature",
    "VerifierTimeoutError",
    "find_tasks",
    "load_task",
    "parse_rewards",
    "parse_task_config",
    "run_task",
    "run_tasks",
    "shell_script_reply",
]
