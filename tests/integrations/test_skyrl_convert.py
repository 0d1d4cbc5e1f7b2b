"""Trace rows -> SkyRL generator output (pure data)."""

from __future__ import annotations

from openenv_train.integrations.skyrl import to_skyrl_generator_output
from openenv_train.trace import EnvInfo, TraceRow, TrainingTrace, TrainingTurn


def _row(group: str, reward: float | None, *, turns: bool = True) -> TraceRow:
    t = [TrainingTurn(node_id="a", prompt_token_ids=[1, 2], completion_token_ids=[3, 4], per_token_logps=[-0.1, -0.2]),
         TrainingTurn(node_id="b", prompt_token_ids=[1, 2, 3, 4, 8], completion_token_ids=[5], per_token_logps=[-0.3],
                      response={"choices": [{"finish_reason": "length"}]})] if turns else []
    return TraceRow(env=EnvInfo(name="t"), group_id=group, reward=reward, rewards={"env": reward},
                    trace=TrainingTrace(turns=t))


def test_rows_become_generator_output() -> None:
    out = to_skyrl_generator_output([_row("g0", 1.0), _row("g0", None), _row("g1", 0.5, turns=False)])
    assert out["prompt_token_ids"] == [[1, 2], [1, 2]]
    assert out["response_ids"] == [[3, 4, 8, 5]] * 2 and out["loss_masks"] == [[1, 1, 0, 1]] * 2
    assert out["rollout_logprobs"][0] == [-0.1, -0.2, 0.0, -0.3]
    assert out["rewards"] == [[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]
    assert out["stop_reasons"] == ["length", "length"]
    assert out["trajectory_ids"] == [{"instance_id": "g0", "repetition_id": 0}, {"instance_id": "g0", "repetition_id": 1}]
    assert to_skyrl_generator_output([_row("g0", 0.25)], rewards="trajectory", reward_key="env")["rewards"] == [0.25]
