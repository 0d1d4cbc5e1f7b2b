"""Capture of model calls into TrainingTrace rows, the trace writer, exports, and Harbor task runs.

``datasets`` and ``huggingface_hub`` load only when a function that needs them is called.
"""

from ._agents import BASH_TOOL, AgentContext, HarborAgent, ModelAgent, NopAgent, OracleAgent
from ._atif import ATIF_VERSION, export_atif, to_atif
from ._capture import TURN_METADATA_KEYS, CaptureStore, build_turn, completion_loss_mask, openai_logprobs
from ._conversation import conversation
from ._errors import (
    CaptureError,
    CaptureSessionExists,
    HarborError,
    HubPushError,
    RunDirLocked,
    TraceReadError,
    TraceWriteError,
    UnknownCaptureSession,
)
from ._export import push_to_hub, sft_features, to_sft_dataset
from ._reader import iter_traces, load_dataset, read_traces, shard_paths, traces_glob
from ._runner import HarborRunConfig, parse_rewards, policy_endpoint, run_task, run_tasks
from ._schema import TRACE_SCHEMA
from ._task_env import DockerTaskEnv, ExecResult, SandboxTaskEnv, TaskEnvironment, docker_available
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
from ._trace import (
    ROW_SCHEMA_VERSION,
    EnvInfo,
    EnvStep,
    ErrorInfo,
    PolicyInfo,
    TraceRow,
    TrainingTrace,
    TrainingTurn,
)
from ._writer import EpisodeKey, TraceWriter, episode_key

__all__ = [
    "ATIF_VERSION",
    "BASH_TOOL",
    "ROW_SCHEMA_VERSION",
    "TRACE_SCHEMA",
    "TURN_METADATA_KEYS",
    "AgentContext",
    "AgentTimeoutError",
    "CaptureError",
    "CaptureSessionExists",
    "CaptureStore",
    "DockerTaskEnv",
    "EnvInfo",
    "EnvStep",
    "EnvironmentSetupError",
    "EpisodeKey",
    "ErrorInfo",
    "ExecResult",
    "HarborAgent",
    "HarborError",
    "HarborRunConfig",
    "HarborTask",
    "HubPushError",
    "McpServerError",
    "ModelAgent",
    "ModelCallError",
    "NopAgent",
    "OracleAgent",
    "PolicyInfo",
    "RewardFileError",
    "RunDirLocked",
    "SandboxTaskEnv",
    "TaskConfig",
    "TaskEnvironment",
    "TaskError",
    "TaskFormatError",
    "TraceReadError",
    "TraceRow",
    "TraceWriteError",
    "TraceWriter",
    "TrainingTrace",
    "TrainingTurn",
    "UnknownCaptureSession",
    "UnsupportedTaskFeature",
    "VerifierTimeoutError",
    "build_turn",
    "completion_loss_mask",
    "conversation",
    "docker_available",
    "episode_key",
    "export_atif",
    "find_tasks",
    "iter_traces",
    "load_dataset",
    "load_task",
    "openai_logprobs",
    "parse_rewards",
    "parse_task_config",
    "policy_endpoint",
    "push_to_hub",
    "read_traces",
    "run_task",
    "run_tasks",
    "sft_features",
    "shard_paths",
    "to_atif",
    "to_sft_dataset",
    "traces_glob",
]
