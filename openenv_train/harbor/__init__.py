"""Capture of model calls into TrainingTrace rows, the trace writer, exports, and Harbor task runs.

``datasets`` and ``huggingface_hub`` load only when a function that needs them is called.
"""

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
from ._schema import TRACE_SCHEMA
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
    "ROW_SCHEMA_VERSION",
    "TRACE_SCHEMA",
    "TURN_METADATA_KEYS",
    "CaptureError",
    "CaptureSessionExists",
    "CaptureStore",
    "EnvInfo",
    "EnvStep",
    "EpisodeKey",
    "ErrorInfo",
    "HarborError",
    "HubPushError",
    "PolicyInfo",
    "RunDirLocked",
    "TraceReadError",
    "TraceRow",
    "TraceWriteError",
    "TraceWriter",
    "TrainingTrace",
    "TrainingTurn",
    "UnknownCaptureSession",
    "build_turn",
    "completion_loss_mask",
    "conversation",
    "episode_key",
    "export_atif",
    "iter_traces",
    "load_dataset",
    "openai_logprobs",
    "push_to_hub",
    "read_traces",
    "shard_paths",
    "sft_features",
    "to_atif",
    "to_sft_dataset",
    "traces_glob",
]
