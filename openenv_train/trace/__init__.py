"""TrainingTrace rows, capture of model calls, the trace writer and reader, the Parquet schema, and exports.

Every part of the toolkit that learns from rollouts (policy capture, pool, rubrics, evals, trainers) reads and
writes these records; the package sits just above ``openenv_train.core`` and imports nothing else of the
toolkit. ``datasets`` and ``huggingface_hub`` load only when a function that needs them is called.
"""

from ._atif import ATIF_VERSION, export_atif, to_atif
from ._call_graph import CallGraph, CallLine, CallNode, PrefixBreak, call_graph
from ._capture import TURN_METADATA_KEYS, CaptureStore, build_turn, completion_loss_mask, openai_logprobs
from ._conversation import Segment, conversation, reply_of, segments, text_of
from ._decoding import BEAM_DECODED, BeamTurnNotTrainable, beam_decoded, refuse_beam_turns
from ._errors import (
    CaptureError,
    CaptureSessionExists,
    HubPushError,
    RunDirLocked,
    TraceError,
    TraceReadError,
    TraceWriteError,
    UnknownCaptureSession,
    mask_secret,
)
from ._export import push_to_hub, sft_features, to_sft_dataset
from ._reader import iter_traces, load_dataset, read_traces, shard_paths, traces_glob
from ._rows import (
    ROW_SCHEMA_VERSION,
    EnvInfo,
    EnvStep,
    ErrorInfo,
    PolicyInfo,
    TraceRow,
    TrainingTrace,
    TrainingTurn,
)
from ._schema import MIGRATIONS, TRACE_SCHEMA, from_record, migrate_record, to_record
from ._writer import MANIFEST_NAME, TRACES_DIR, EpisodeKey, TraceWriter, episode_key

__all__ = [
    "ATIF_VERSION",
    "BEAM_DECODED",
    "MANIFEST_NAME",
    "MIGRATIONS",
    "ROW_SCHEMA_VERSION",
    "TRACES_DIR",
    "TRACE_SCHEMA",
    "TURN_METADATA_KEYS",
    "BeamTurnNotTrainable",
    "CallGraph",
    "CallLine",
    "CallNode",
    "CaptureError",
    "CaptureSessionExists",
    "CaptureStore",
    "EnvInfo",
    "EnvStep",
    "EpisodeKey",
    "ErrorInfo",
    "HubPushError",
    "PolicyInfo",
    "PrefixBreak",
    "RunDirLocked",
    "Segment",
    "TraceError",
    "TraceReadError",
    "TraceRow",
    "TraceWriteError",
    "TraceWriter",
    "TrainingTrace",
    "TrainingTurn",
    "UnknownCaptureSession",
    "beam_decoded",
    "build_turn",
    "call_graph",
    "completion_loss_mask",
    "conversation",
    "episode_key",
    "export_atif",
    "from_record",
    "iter_traces",
    "load_dataset",
    "mask_secret",
    "migrate_record",
    "openai_logprobs",
    "refuse_beam_turns",
    "push_to_hub",
    "read_traces",
    "reply_of",
    "segments",
    "shard_paths",
    "sft_features",
    "text_of",
    "to_atif",
    "to_record",
    "to_sft_dataset",
    "traces_glob",
]
