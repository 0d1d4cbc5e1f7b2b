"""The Rubric base and composition: weights, fail-fast, gate, max/min, errors, hooks/reset, sync/async mixing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv_train.rubrics import (
    Components,
    FunctionRubric,
    Gate,
    Max,
    Min,
    Rubric,
    RubricResult,
    Sequential,
    TrajectoryRubric,
    WeightedSum,
    credit_steps,
)
from openenv_train.trace import EnvInfo, EnvStep, TraceRow

ROW = TraceRow(env=EnvInfo(name="x"), reward=1.0, done=True,
               steps=[EnvStep(reward=0.0), EnvStep(reward=0.25), EnvStep(reward=1.0, done=True)])


def const(name: str, value: float | None) -> FunctionRubric:
    return FunctionRubric(lambda row: value, name)


class AsyncConst(Rubric):
    def __init__(self, name: str, value: float) -> None:
        super().__init__(name)
        self.value = value

    async def score(self, row: TraceRow) -> float:
        await asyncio.sleep(0.01)
        return self.value


class Counting(Rubric):
    """Counts calls; reset zeroes the count."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.calls = 0

    def score(self, row: TraceRow) -> float:
        self.calls += 1
        return float(self.calls)

    def on_reset(self) -> None:
        self.calls = 0


def boom(row: TraceRow) -> float:
    raise RuntimeError("broken rubric")


def test_weighted_sum_with_logged_and_none_components() -> None:
    rubric = WeightedSum([const("a", 0.5), const("b", 1.0), const("logged", 7.0), const("na", None)],
                         weights=[2.0, 0.5, 0.0, 1.0], name="sum")
    result = rubric(ROW)
    assert result.total == pytest.approx(1.5)
    assert result.components == {"a": 0.5, "b": 1.0, "logged": 7.0, "na": None, "sum": pytest.approx(1.5)}
    assert WeightedSum([const("na", None)], name="s")(ROW).total is None
    with pytest.raises(ValueError, match="one weight per rubric"):
        WeightedSum([const("a", 1)], weights=[1, 2])
    with pytest.raises(ValueError, match="unique"):
        WeightedSum([const("a", 1), const("a", 2)])


def test_components_container_reports_every_name_and_total() -> None:
    result = Components([const("x", 1.0), AsyncConst("y", 0.5)], weights=[1.0, 2.0])(ROW)
    assert result.components == {"x": 1.0, "y": 0.5, "total": 2.0}
    assert result.total == 2.0 and result.errors == {}


def test_sequential_fails_fast() -> None:
    rubric = Sequential([const("format", 1.0), const("valid", 0.0), Counting("never")], threshold=0.5, name="seq")
    result = rubric(ROW)
    assert result.total == 0.0
    assert result.components["never"] is None and rubric.rubrics[2].calls == 0  # type: ignore[attr-defined]
    errs = Sequential([FunctionRubric(boom, "bad"), const("later", 1.0)], name="seq2")(ROW)
    assert errs.total == 0.0 and "bad" in errs.errors and errs.components["later"] is None
    passed = Sequential([const("a", 1.0), const("b", 0.75)], name="ok")(ROW)
    assert passed.total == 0.75


def test_gate_max_min() -> None:
    assert Gate(const("fmt", 1.0), const("score", 0.8), threshold=1.0, name="g")(ROW).total == 0.8
    closed = Gate(const("fmt", 0.0), const("score", 0.8), name="g")(ROW)
    assert closed.total == 0.0 and closed.components["score"] == 0.8
    assert Max([const("a", 0.2), const("b", 0.9), const("c", None)], name="m")(ROW).total == 0.9
    assert Min([const("a", 0.2), const("b", 0.9)], name="m")(ROW).total == 0.2


def test_exception_is_recorded_as_component_error_or_raised() -> None:
    result = Components([FunctionRubric(boom, "bad"), const("good", 1.0)])(ROW)
    assert result.components["bad"] == 0.0 and result.total == 1.0
    assert result.errors == {"bad": "RuntimeError: broken rubric"}
    with pytest.raises(RuntimeError, match="broken rubric"):
        Components([FunctionRubric(boom, "bad", on_error="raise")])(ROW)
    typed = FunctionRubric(lambda row: "high", "typed")(ROW)
    assert typed.total == 0.0 and "TypeError" in typed.errors["typed"]


async def test_sync_call_inside_running_loop_mixes_async_and_sync_children() -> None:
    rubric = Components([AsyncConst("slow", 0.25), const("plain", 0.5),
                         Max([AsyncConst("m1", 0.1), const("m2", 0.3)], name="best")])
    result = rubric(ROW)  # a sync call while this test's event loop runs
    assert result.total == pytest.approx(0.25 + 0.5 + 0.3)
    assert (await rubric.ascore(ROW)).components == result.components


def test_hooks_and_reset_reach_nested_rubrics() -> None:
    leaves = [Counting("c1"), Counting("c2"), Counting("c3")]
    rubric = Sequential([Components([leaves[0], Max([leaves[1]], name="inner")], name="group"),
                         TrajectoryRubric(leaves[2], credit="final", name="traj")], name="root")
    seen: list[str] = []

    def hook(r: Rubric, row: TraceRow, result: RubricResult) -> None:
        seen.append(r.name)

    rubric.add_hook(hook)
    rubric(ROW)
    rubric(ROW)
    assert {"c1", "c2", "c3", "inner", "group", "traj", "root"} <= set(seen)
    assert [leaf.calls for leaf in leaves] == [2, 2, 2]
    assert {r.name for r in rubric.walk()} == {"root", "group", "c1", "inner", "c2", "traj", "c3"}
    rubric.reset()
    assert [leaf.calls for leaf in leaves] == [0, 0, 0]


@pytest.mark.parametrize(("credit", "expected"), [
    ("final", [0.0, 0.0, 2.0]),
    ("discounted", [0.5, 1.0, 2.0]),
    ("env", [0.0, 0.25, 1.0]),
])
def test_trajectory_credit_assignment(credit: Any, expected: list[float]) -> None:
    rubric = TrajectoryRubric(const("episode_score", 2.0), credit=credit, gamma=0.5)
    result = rubric(ROW)
    assert result.step_rewards == pytest.approx(expected)
    assert result.total == 2.0 and result.components["episode_score"] == 2.0
    assert credit_steps(ROW, None, "final") == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="gamma"):
        TrajectoryRubric(credit="final", gamma=0.0)


def test_trajectory_without_rubric_uses_env_rewards() -> None:
    result = TrajectoryRubric(credit="env")(ROW)
    assert result.total == 1.25 and result.step_rewards == [0.0, 0.25, 1.0]
