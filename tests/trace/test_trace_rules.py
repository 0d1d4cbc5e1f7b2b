"""Every validation rule of TrainingTurn / TrainingTrace / TraceRow, each with a failing example."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from openenv_train.trace import EnvInfo, TraceRow, TrainingTrace, TrainingTurn

GOOD: dict[str, Any] = {
    "node_id": "n0",
    "prompt_token_ids": [1, 2],
    "completion_token_ids": [3, 4],
    "per_token_logps": [-0.5, 0.0],
    "loss_mask": [0, 0, 1, 1],
}


def test_a_good_turn_passes() -> None:
    assert TrainingTurn(**GOOD).loss_mask == [0, 0, 1, 1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"node_id": ""}, "at least 1 character"),
        ({"prompt_token_ids": [-1, 2]}, "token ids must be >= 0"),
        ({"completion_token_ids": [3, -4]}, "token ids must be >= 0"),
        ({"per_token_logps": [-0.5]}, "1 logprobs for 2 completion tokens"),
        ({"per_token_logps": [-0.5, 0.1]}, "finite and <= 0"),
        ({"per_token_logps": [-0.5, math.nan]}, "finite and <= 0"),
        ({"per_token_logps": [-math.inf, -0.1]}, "finite and <= 0"),
        ({"loss_mask": [0, 0, 1]}, "expected 4"),
        ({"loss_mask": [0, 0, 1, 2]}, "values must be 0 or 1"),
        ({"loss_mask": [0, 1, 1, 1]}, "0 over prompt positions"),
        ({"extra_field": 1}, "Extra inputs are not permitted"),
    ],
)
def test_each_turn_rule_rejects(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TrainingTurn(**{**GOOD, **change})


def test_trace_rules() -> None:
    turn = TrainingTurn(**GOOD)
    with pytest.raises(ValidationError, match="node_id must be unique"):
        TrainingTrace(turns=[turn, turn])
    with pytest.raises(ValidationError, match="schema_version"):
        TrainingTrace(schema_version=2, turns=[turn])  # type: ignore[arg-type]


def test_row_rules() -> None:
    with pytest.raises(ValidationError, match="needs an error"):
        TraceRow(env=EnvInfo(name="x"), ok=False)
    with pytest.raises(ValidationError, match="rollout_type"):
        TraceRow(env=EnvInfo(name="x"), rollout_type="sft")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="Extra inputs"):
        TraceRow(env=EnvInfo(name="x"), score=1.0)  # type: ignore[call-arg]
    assert TraceRow(env=EnvInfo(name="x")).reward is None  # never scored is not 0.0
