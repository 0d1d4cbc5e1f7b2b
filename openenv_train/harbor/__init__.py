"""Harbor-format tasks: task folders, task environments (sandbox or Docker), agents, and task runs.

The trace names re-exported here (``TraceWriter``, ``CaptureStore``, ``TraceRow``, ``read_traces``, ...) moved to
:mod:`openenv_train.trace`; they stay importable from ``openenv_train.harbor`` for one release (deprecated:
import them from ``openenv_train.trace``). ``policy_endpoint`` moved to :mod:`openenv_train.policy`.
"""

# The trace names are re-exported through _MOVED_TO_TRACE, which ruff does not read as __all__.
# ruff: noqa: F401

from ..containers import docker_available
from ..policy import policy_endpoint
from ..trace import (
    ATIF_VERSION,
    ROW_SCHEMA_VERSION,
    TRACE_SCHEMA,
    TURN_METADATA_KEYS,
    CaptureError,
    CaptureSessionExists,
    CaptureStore,
    EnvInfo,
    EnvStep,
    EpisodeKey,
    ErrorInfo,
    HarborError,
    HubPushError,
    PolicyInfo,
    RunDirLocked,
    TraceReadError,
    TraceRow,
    TraceWriteError,
    TraceWriter,
    TrainingTrace,
    TrainingTurn,
    UnknownCaptureSession,
    build_turn,
    completion_loss_mask,
    conversation,
    episode_key,
    export_atif,
    iter_traces,
    load_dataset,
    openai_logprobs,
    push_to_hub,
    read_traces,
    sft_features,
    shard_paths,
    to_atif,
    to_sft_dataset,
    traces_glob,
)
from ._agents import BASH_TOOL, AgentContext, HarborAgent, ModelAgent, NopAgent, OracleAgent
from ._runner import HarborRunConfig, parse_rewards, run_task, run_tasks
from ._task_env import DockerTaskEnv, ExecResult, SandboxTaskEnv, TaskEnvironment
from ._task_errors import (
    AgentTimeoutError,
    EnvironmentSetupError,
    McpServerError,
    ModelCallError,
    RewardFileError,
    TaskError,
    TaskFormatError,
    UnsupportedTaskFeature,
    VerifierTimeoutError,
)
from ._tasks import HarborTask, TaskConfig, find_tasks, load_task, parse_task_config

#: Trace names re-exported from openenv_train.trace for one release (deprecated here: import them from there).
_MOVED_TO_TRACE = [
    "ATIF_VERSION", "ROW_SCHEMA_VERSION", "TRACE_SCHEMA", "TURN_METADATA_KEYS", "CaptureError",
    "CaptureSessionExists", "CaptureStore", "EnvInfo", "EnvStep", "EpisodeKey", "ErrorInfo", "HarborError",
    "HubPushError", "PolicyInfo", "RunDirLocked", "TraceReadError", "TraceRow", "TraceWriteError", "TraceWriter",
    "TrainingTrace", "TrainingTurn", "UnknownCaptureSession", "build_turn", "completion_loss_mask", "conversation",
    "episode_key", "export_atif", "iter_traces", "load_dataset", "openai_logprobs", "push_to_hub", "read_traces",
    "sft_features", "shard_paths", "to_atif", "to_sft_dataset", "traces_glob",
]

__all__ = [
    "BASH_TOOL",
    "AgentContext",
    "AgentTimeoutError",
    "DockerTaskEnv",
    "EnvironmentSetupError",
    "ExecResult",
    "HarborAgent",
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
    "docker_available",
    "find_tasks",
    "load_task",
    "parse_rewards",
    "parse_task_config",
    "policy_endpoint",
    "run_task",
    "run_tasks",
    *_MOVED_TO_TRACE,
]
