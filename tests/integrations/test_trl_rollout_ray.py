"""make_rollout_func over a Ray RolloutPool (PoolFactory): the live model is served to the pool's actors."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from openenv_train.integrations import flatten_turns
from openenv_train.integrations.trl import make_rollout_func
from openenv_train.pool import EpisodeSpec, RolloutPool
from openenv_train.trace import CaptureStore


@pytest.mark.timeout(300)
def test_rollout_func_on_a_ray_pool(ray_local: Any, tmp_path: Path) -> None:

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")

    def factory(base_url: str, capture: CaptureStore) -> RolloutPool:
        # the actors ask for other sampling: the trainer's settings must win on the pool path
        return RolloutPool("wordle", base_url, capture=capture, num_actors=1, max_turns=2, run_id="ray",
                           sampling={"max_tokens": 50, "temperature": 2.0}).start()

    rollout = make_rollout_func(factory, per_turn_tokens=4)
    trainer = _trainer(path, step=5)
    try:
        out = rollout(['{"task": "crane"}'] * 2 + ['{"task": "moist"}'] * 2, trainer)
    finally:
        rollout.close()
    rows = rollout.last_rows
    assert len(rows) == 4 and all(r.ok and r.policy.version == 5 and len(r.trace.turns) == 2 for r in rows)
    assert [r.task["task"] for r in rows] == ["crane", "crane", "moist", "moist"]
    for i, row in enumerate(rows):
        flat = flatten_turns(row.trace.turns)
        # cut to the trainer's max_completion_length (64): the env text between turns is long
        assert out["completion_ids"][i] == flat.completion_ids[:64] and out["env_mask"][i] == flat.env_mask[:64]
        assert 0 in flat.env_mask and len(flat.logprobs) == len(flat.completion_ids)
    assert out["reward_env"] == [r.reward for r in rows]
    _check_trainer_sampling(rows)


def _trainer(path: Path, step: int) -> SimpleNamespace:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    args = SimpleNamespace(num_generations=2, temperature=0.5, top_p=0.9, top_k=7, max_completion_length=64)
    return SimpleNamespace(model=AutoModelForCausalLM.from_pretrained(path), num_generations=2, args=args,
                           processing_class=AutoTokenizer.from_pretrained(path), state=SimpleNamespace(global_step=step))


def _check_trainer_sampling(rows: list) -> None:
    used = [t.metadata["sampling_used"] for r in rows for t in r.trace.turns]
    assert used and all((u["temperature"], u["top_p"], u["top_k"], u["max_tokens"]) == (0.5, 0.9, 7, 4) for u in used)
    assert all(len(t.completion_token_ids) <= 4 for r in rows for t in r.trace.turns)


@pytest.mark.timeout(300)
def test_rollout_func_on_a_started_pool_and_its_policy_server(ray_local: Any, tmp_path: Path) -> None:
    from openenv_train.policy import LocalConfig, PolicyServer, ScriptedBackend, build_tiny_model
    from openenv_train.trace import TraceWriter, read_traces

    path = build_tiny_model(tmp_path / "tiny")
    capture = CaptureStore()
    server = PolicyServer(ScriptedBackend(lambda messages: "[slate]"), capture=capture).run_in_thread()
    writer = TraceWriter(tmp_path / "run")
    pool = RolloutPool("wordle", server.base_url, capture=capture, writer=writer, num_actors=1, max_turns=2,
                       run_id="hosted").start()
    try:
        rollout = make_rollout_func(pool, policy_server=server, per_turn_tokens=4, episode_prefix="grpo-",
                                    local=LocalConfig(prefix_cache_mb=0))
        out = rollout(['{"task": "crane"}'] * 2 + ['{"task": "moist"}'] * 2, _trainer(path, step=3))
        assert rollout.runner.backend.prefix_cache is None  # the options given serve the trainer's model
        rollout.close()  # leaves the caller's pool and server running
        assert pool.run([EpisodeSpec("after", {"task": "crane"}, 0)])[0].ok
    finally:
        pool.close()
        server.close()
        writer.close()
    rows = rollout.last_rows
    # the trainer's model answered (not the scripted backend the server started with), with its sampling
    assert all(r.policy.version == 3 and r.trace.turns[0].response["choices"][0]["message"]["content"] != "[slate]"
               for r in rows)
    _check_trainer_sampling(rows)
    assert [r.episode_id for r in rows] == ["grpo-s3-c0-g0-0", "grpo-s3-c0-g0-1", "grpo-s3-c0-g1-0", "grpo-s3-c0-g1-1"]
    assert {r.episode_id for r in read_traces(tmp_path / "run")} == {r.episode_id for r in rows} | {"after"}
    assert len(out["completion_ids"]) == 4


def test_a_started_pool_without_its_policy_server_is_refused() -> None:
    with pytest.raises(ValueError, match="policy_server"):
        make_rollout_func(object())


@pytest.mark.timeout(300)
def test_rollout_func_through_an_upstream_policy_server(ray_local: Any, tmp_path: Path) -> None:
    """``policy_url``: a vLLM-style server answers (here another PolicyServer over the tiny model)."""
    from openenv_train.policy import LocalBackend, PolicyServer, build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")
    upstream = PolicyServer(LocalBackend(str(path))).run_in_thread()

    def factory(base_url: str, capture: CaptureStore) -> RolloutPool:
        return RolloutPool("wordle", base_url, capture=capture, num_actors=1, max_turns=2, run_id="up").start()

    rollout = make_rollout_func(factory, per_turn_tokens=4, policy_url=upstream.base_url)
    try:
        out = rollout(['{"task": "crane"}'] * 2, _trainer(path, step=1))
    finally:
        rollout.close()
        upstream.close()
    rows = rollout.last_rows
    assert len(rows) == 2 and all(r.ok and r.trace.turns for r in rows)
    assert all(t.completion_token_ids and t.per_token_logps for r in rows for t in r.trace.turns)
    used = [t.metadata["sampling_requested"] for r in rows for t in r.trace.turns]
    assert all(u.get("temperature") in (None, 1.0) for u in used)  # the actors asked nothing special...
    assert all(len(t.completion_token_ids) <= 4 for r in rows for t in r.trace.turns)  # ...the trainer's cap held
    assert len(out["completion_ids"]) == 2 and all(out["completion_ids"])
