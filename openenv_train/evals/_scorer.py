"""Rubrics as Inspect scorers: every component is a key of the Score's value, with its own mean and stderr.

The scored row is the sample's trace row (``state.metadata["trace_row"]``, JSON), which the replay solver
copies from the dataset and the live solver writes after its episode. A component that is None (not
applicable) is NaN in the Score, which Inspect counts as unscored; ``env_reward`` is the row's own reward.
"""

from __future__ import annotations

import math

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from ..rubrics import Rubric, RubricResult, get_rubric
from ..trace import TraceRow

__all__ = ["ROW_KEY", "rubric_scorer", "score_value"]

#: The sample/state metadata key that holds the trace row (JSON).
ROW_KEY = "trace_row"


def score_value(row: TraceRow, result: RubricResult) -> dict[str, float]:
    """The Score value of a scored row: each component (None as NaN) and ``env_reward``."""
    value = {name: math.nan if v is None else float(v) for name, v in result.components.items()}
    value["env_reward"] = math.nan if row.reward is None else float(row.reward)
    return value


@scorer(metrics={"*": [mean(), stderr()]}, name="rubric")
def rubric_scorer(rubric: str | Rubric = "wordle") -> Scorer:
    """Score each sample's trace row with ``rubric`` (a catalog name, ``module:factory``, or a Rubric)."""
    scoring = get_rubric(rubric) if isinstance(rubric, str) else rubric

    async def score(state: TaskState, target: Target) -> Score:
        raw = state.metadata.get(ROW_KEY)
        if raw is None:
            raise ValueError(f"sample {state.sample_id} has no {ROW_KEY!r} in its metadata: use the replay or live "
                             "solver of openenv_train.evals")
        row = TraceRow.model_validate_json(raw)
        result = await scoring.ascore(row)
        return Score(value=score_value(row, result), answer=state.output.completion if state.output else None,
                     explanation="; ".join(f"{k}: {v}" for k, v in result.errors.items()) or None,
                     metadata={"trace_id": row.trace_id, "errors": result.errors, "total": result.total,
                               "step_rewards": result.step_rewards})

    return score
