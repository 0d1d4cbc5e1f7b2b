"""Every shipped example task passes with the oracle (reward 1.0) and fails with the do-nothing agent (0)."""

from __future__ import annotations

import asyncio

import pytest

from openenv_train.harbor._agents import NopAgent, OracleAgent
from openenv_train.harbor._runner import HarborRunConfig, run_tasks
from openenv_train.harbor._tasks import load_task
from openenv_train.trace import TraceRow
from tests.harbor_tasks._support import EXAMPLE_NAMES, EXAMPLES
from tests.sandbox.conftest import require_sandbox


@pytest.fixture(scope="module")
def rows() -> dict[tuple[str, str], TraceRow]:
    """One oracle and one nop attempt of every example, all run at once."""
    require_sandbox()
    config = HarborRunConfig(concurrency=len(EXAMPLE_NAMES), run_id="examples")

    async def both() -> list[TraceRow]:
        oracle, nop = await asyncio.gather(run_tasks([EXAMPLES], OracleAgent(), config=config),
                                           run_tasks([EXAMPLES], NopAgent(), config=config))
        return oracle + nop

    return {(row.task["agent"], row.task["name"]): row for row in asyncio.run(both())}


def test_at_least_five_examples_ship_and_parse() -> None:
    assert len(EXAMPLE_NAMES) >= 5
    for name in EXAMPLE_NAMES:
        task = load_task(EXAMPLES / name)
        assert task.has_solution and not task.warnings, name
        assert task.config.agent.timeout_sec and task.config.verifier.timeout_sec


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_oracle_scores_one(rows: dict[tuple[str, str], TraceRow], name: str) -> None:
    row = rows[("oracle", name)]
    assert row.ok and row.error is None, row.error
    assert row.reward == 1.0 and row.done and not row.truncated
    assert row.env.name == f"harbor/{name}" and row.env.url == "sandbox"
    assert row.task["instruction"] and row.task["config"]["verifier"]["timeout_sec"] > 0
    agent_step, verifier_step = row.steps
    assert agent_step.action["phase"] == "agent" and "solve.sh" in agent_step.action["command"]
    assert agent_step.observation["exit_code"] == 0, agent_step.observation
    assert verifier_step.action == {"phase": "verifier", "command": "bash /tests/test.sh"}
    assert verifier_step.reward == 1.0 and verifier_step.done
    assert set(row.timings) >= {"env_setup", "agent", "verifier", "total"}
    assert row.trace.turns == [] and row.rollout_type == "eval"


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_nop_scores_zero(rows: dict[tuple[str, str], TraceRow], name: str) -> None:
    row = rows[("nop", name)]
    assert row.ok and row.reward == 0.0 and row.done
    assert [step.action["phase"] for step in row.steps] == ["verifier"]


def test_reward_json_components_land_in_rewards(rows: dict[tuple[str, str], TraceRow]) -> None:
    fixed, unfixed = rows[("oracle", "fix-stats-bug")], rows[("nop", "fix-stats-bug")]
    assert fixed.rewards == {"reward": 1.0, "pass_rate": 1.0}
    assert unfixed.rewards["reward"] == 0.0 and 0 < (unfixed.rewards["pass_rate"] or 0) < 1
    summary = rows[("oracle", "csv-sales-summary")].rewards
    assert summary == {"valid_json": 1.0, "rows": 1.0, "total_revenue": 1.0, "by_region": 1.0, "top_product": 1.0,
                       "reward": 1.0}
    assert rows[("oracle", "hello-world")].rewards == {}  # reward.txt: one number, no components
