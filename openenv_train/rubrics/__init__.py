"""Composable reward rubrics that score trace rows (guide: docs/guides/rubrics.md).

A :class:`Rubric` scores a :class:`~openenv_train.trace.TraceRow` (sync or async) into a
:class:`RubricResult`: the total, every named component, errors and optional per-step rewards. Compose them
(:class:`WeightedSum`, :class:`Components`, :class:`Sequential`, :class:`Gate`, :class:`Max`, :class:`Min`),
assign credit to steps (:class:`TrajectoryRubric`), grade with a model (:class:`LLMJudge`), use them as TRL
reward functions (:func:`reward_function`) or add their components to a dataset (:func:`score_dataset`).
Step rubrics (:class:`StepRubric`, :class:`RubricList`, :class:`RubricDict`) are OpenEnv's: attached to an
environment, they score each ``(action, observation)`` as it steps.
"""

from ._base import FunctionRubric, Hook, Rubric, RubricResult, run_sync
from ._catalog import (
    RUBRICS,
    coding_rubric,
    game_rubric,
    get_rubric,
    reasoning_gym_rubric,
    wordle_rubric,
)
from ._compose import Components, Gate, Max, Min, Sequential, WeightedSum
from ._dataset import read_table, score_dataset, score_rows, table_rows
from ._judge import DEFAULT_JUDGE_TEMPLATE, JudgeError, LLMJudge, parse_score, render_prompt
from ._step import RubricDict, RubricList, StepRubric
from ._trajectory import Credit, TrajectoryRubric, credit_steps
from ._trl import as_trace_row, reward_function

__all__ = [
    "DEFAULT_JUDGE_TEMPLATE",
    "RUBRICS",
    "Components",
    "Credit",
    "FunctionRubric",
    "Gate",
    "Hook",
    "JudgeError",
    "LLMJudge",
    "Max",
    "Min",
    "Rubric",
    "RubricDict",
    "RubricList",
    "RubricResult",
    "Sequential",
    "StepRubric",
    "TrajectoryRubric",
    "WeightedSum",
    "as_trace_row",
    "coding_rubric",
    "credit_steps",
    "game_rubric",
    "get_rubric",
    "parse_score",
    "read_table",
    "reasoning_gym_rubric",
    "render_prompt",
    "reward_function",
    "run_sync",
    "score_dataset",
    "score_rows",
    "table_rows",
    "wordle_rubric",
]
