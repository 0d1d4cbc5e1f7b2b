"""Capture of model calls into TrainingTrace rows, the trace writer, exports, and Harbor task runs."""

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

__all__ = [
    "ROW_SCHEMA_VERSION",
    "EnvInfo",
    "EnvStep",
    "ErrorInfo",
    "PolicyInfo",
    "TraceRow",
    "TrainingTrace",
    "TrainingTurn",
]
