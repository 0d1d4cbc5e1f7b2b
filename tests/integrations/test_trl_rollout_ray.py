"""make_rollout_func over a Ray RolloutPool (PoolFactory): the live model is served to the pool's actors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from openenv_train.harbor import CaptureStore
from openenv_train.integrations import flatten_turns
from openenv_train.integrations.trl import make_rollout_func
from openenv_train.pool import RolloutPool


@pytest.fixture(scope="module")
def ray_local() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[default]==2.60.0')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.mark.timeout(300)
def test_rollout_func_on_a_ray_pool(ray_local: Any, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")

    def factory(base_url: str, capture: CaptureStore) -> RolloutPool:
        return RolloutPool("wordle", base_url, capture=capture, num_actors=1, max_turns=2, run_id="ray",
                           sampling={"max_tokens": 4}).start()

    rollout = make_rollout_func(factory)
    trainer = SimpleNamespace(model=AutoModelForCausalLM.from_pretrained(path),
                              processing_class=AutoTokenizer.from_pretrained(path), num_generations=2,
                              state=SimpleNamespace(global_step=5), args=SimpleNamespace(num_generations=2))
    try:
        out = rollout(['{"task": "crane"}'] * 2 + ['{"task": "moist"}'] * 2, trainer)
    finally:
        rollout.close()
    rows = rollout.last_rows
    assert len(rows) == 4 and all(r.ok and r.policy.version == 5 and len(r.trace.turns) == 2 for r in rows)
    assert [r.task["task"] for r in rows] == ["crane", "crane", "moist", "moist"]
    for i, row in enumerate(rows):
        flat = flatten_turns(row.trace.turns)
        assert out["completion_ids"][i] == flat.completion_ids and out["env_mask"][i] == flat.env_mask
        assert 0 in flat.env_mask and len(flat.logprobs) == len(flat.completion_ids)
    assert out["reward_env"] == [r.reward for r in rows]
