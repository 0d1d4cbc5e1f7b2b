"""Oumi: the functions register_oumi registers, run by TRL's GRPOTrainer as Oumi calls it, and ``oumi train``.

The GRPO step test needs only TRL (it runs in the test venv with TRL 1.16 and in CI's Oumi venv with the TRL 1.6
Oumi pins); the registry and ``oumi train`` tests need Oumi itself, which has a venv of its own (``.ci/run``).
"""

from __future__ import annotations

import inspect
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from openenv_train.core import OpenEnvTrainError
from openenv_train.integrations.oumi import OumiError, OumiNotInstalled, make_oumi_functions, register_oumi
from openenv_train.rubrics import get_rubric
from openenv_train.trace import read_traces
from tests.integrations._oumi import OUMI_MISSING, WORDS, registration_options, write_tasks

ROOT = Path(__file__).resolve().parents[2]
needs_oumi = pytest.mark.skipif(OUMI_MISSING, reason="oumi is not installed (its own venv: see .ci/run)")


@pytest.mark.skipif(not OUMI_MISSING, reason="oumi is installed")
def test_without_oumi_register_oumi_names_the_install_line() -> None:
    with pytest.raises(OumiNotInstalled, match=r"pip install 'oumi==0\.9'.*venv of its own") as info:
        register_oumi("wordle", name="nope")
    assert isinstance(info.value, OpenEnvTrainError) and isinstance(info.value, ImportError)


def test_names_and_signatures_are_the_ones_oumi_calls() -> None:
    reg = make_oumi_functions("wordle", name="wordle", rubrics={"wordle": 1.0, "wordle#greens": 0.5})
    assert reg.rollout_function == "wordle"
    assert reg.reward_functions == ["wordle_env", "wordle_wordle", "wordle_wordle_greens"]
    assert reg.reward_weights == [1.0, 1.0, 0.5]
    # TRL (1.6 under Oumi 0.9, and 1.16) calls rollout_func(prompts, trainer) and reward(prompts, completions, **kw)
    assert list(inspect.signature(reg).parameters) == ["prompts", "trainer"]
    for name in reg.reward_functions:
        func = reg.functions[name]
        assert func.__name__ == name  # TRL logs rewards/<__name__>/mean: the name the YAML lists
        params = inspect.signature(func).parameters
        assert list(params)[:2] == ["prompts", "completions"] and params["kwargs"].kind is inspect.Parameter.VAR_KEYWORD
    assert reg.functions["wordle_env"]([], [], reward_env=[0.5, None]) == [0.5, None]
    with pytest.raises(OumiError, match="non-empty"):
        make_oumi_functions("wordle", name=" ")
    reg.close()


@pytest.mark.timeout(300)
def test_a_grpo_step_as_oumi_builds_it_gets_the_env_rewards_and_writes_traces(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="trl is not installed")
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")
    dataset = load_dataset("json", data_files=str(write_tasks(tmp_path / "tasks.jsonl")), split="train")
    reg = make_oumi_functions("wordle", name="wordle", trace_dir=tmp_path / "traces", rubrics={"wordle#greens": 0.5},
                              **registration_options("step"))
    on_disk: list[int] = []

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        out = reg(prompts, trainer)
        on_disk.append(len(list(read_traces(tmp_path / "traces"))))  # flushed after the batch, before any close
        return out

    config = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=2,
                        max_completion_length=8, max_steps=1, bf16=False, report_to=[], logging_steps=1,
                        use_cpu=True, save_strategy="no", disable_tqdm=True, beta=0.0, learning_rate=1e-3,
                        reward_weights=reg.reward_weights)
    # what Oumi's train() hands TRL: reward_funcs=[registry functions], rollout_func=registry rollout function
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(path),
                          processing_class=AutoTokenizer.from_pretrained(path), args=config, train_dataset=dataset,
                          reward_funcs=[reg.functions[n] for n in reg.reward_functions], rollout_func=rollout)
    try:
        trainer.train()
    finally:
        reg.close()
    rows = reg.rollout.last_rows
    assert len(rows) == 4 and all(r.ok for r in rows) and on_disk == [4]
    rewards = [r.reward for r in rows]
    assert all(r is not None and 0.2 <= r <= 1.0 for r in rewards), rewards  # every guess shares letters
    log = trainer.state.log_history[0]
    assert log["rewards/wordle_env/mean"] == pytest.approx(sum(rewards) / 4)  # type: ignore[arg-type]
    greens = [get_rubric("wordle")(r).components["greens"] for r in rows]
    assert log["rewards/wordle_wordle_greens/mean"] == pytest.approx(sum(greens) / 4)
    weighted = [(r.reward or 0.0) + 0.5 * g for r, g in zip(rows, greens, strict=True)]
    assert log["reward"] == pytest.approx(sum(weighted) / 4)  # the reward weights apply
    assert math.isfinite(log["loss"]) and math.isfinite(log["grad_norm"])
    assert {r.trace.turns[0].response["choices"][0]["message"]["content"] for r in rows} <= set(WORDS)
    assert {r.episode_id for r in read_traces(tmp_path / "traces")} == {r.episode_id for r in rows}


@pytest.mark.timeout(300)
def test_on_a_ray_pool_the_registration_writes_the_pools_rows(ray_local: Any, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.policy import build_tiny_model
    from openenv_train.pool import RolloutPool
    from openenv_train.trace import CaptureStore

    path = build_tiny_model(tmp_path / "tiny")

    def factory(base_url: str, capture: CaptureStore) -> RolloutPool:
        return RolloutPool("wordle", base_url, capture=capture, num_actors=1, max_turns=1, run_id="oumi-ray").start()

    reg = make_oumi_functions(factory, name="wordle", trace_dir=tmp_path / "traces", per_turn_tokens=4)
    args = SimpleNamespace(num_generations=2, temperature=1.0, top_p=1.0, top_k=0, max_completion_length=16)
    trainer = SimpleNamespace(model=AutoModelForCausalLM.from_pretrained(path), num_generations=2, args=args,
                              processing_class=AutoTokenizer.from_pretrained(path), state=SimpleNamespace(global_step=0))
    try:
        out = reg(['{"task": "crane"}'] * 2 + ['{"task": "slate"}'] * 2, trainer)
        written = list(read_traces(tmp_path / "traces"))  # flushed after the batch
    finally:
        reg.close()
    rows = reg.rollout.last_rows
    assert len(rows) == 4 and all(r.ok for r in rows)
    assert [r.episode_id for r in written] == [r.episode_id for r in rows]
    assert reg.functions["wordle_env"]([], [], reward_env=out["reward_env"]) == [r.reward for r in rows]


@needs_oumi
def test_register_oumi_puts_the_functions_where_oumi_looks_them_up() -> None:
    from oumi.builders import build_reward_functions, build_rollout_function
    from oumi.core.configs import TrainingParams
    from oumi.core.configs.params.grpo_params import GrpoParams
    from oumi.core.configs.params.training_params import TrainerType

    reg = register_oumi("wordle", name="Contract_Wordle", rubrics=["wordle#greens"])
    params = TrainingParams(trainer_type=TrainerType.TRL_GRPO, grpo=GrpoParams(rollout_function="contract_wordle"),
                            reward_functions=["contract_wordle_env", "CONTRACT_WORDLE_wordle_greens"])
    assert build_rollout_function(params) is reg
    assert build_reward_functions(params) == [reg.functions[n] for n in reg.reward_functions]
    with pytest.raises(OumiError, match=r"already in Oumi's registry.*another name="):
        register_oumi("wordle", name="contract_wordle")


@needs_oumi
@pytest.mark.timeout(600)
def test_oumi_train_runs_grpo_on_a_wordle_server(tmp_path: Path) -> None:
    from openenv_train.policy import build_tiny_model

    build_tiny_model(tmp_path / "tiny")
    module = tmp_path / "wordle_for_oumi.py"
    module.write_text("from openenv_train.integrations.oumi import register_oumi\n"
                      "from tests.integrations._oumi import registration_options\n"
                      f"register_oumi('wordle', name='openenv_wordle', trace_dir={str(tmp_path / 'traces')!r},\n"
                      "              rubrics={'wordle#greens': 0.5}, **registration_options('oumi'))\n")
    (tmp_path / "deps.txt").write_text(f"{module}\n")
    config = yaml.safe_load((ROOT / "configs" / "oumi" / "grpo_wordle.yaml").read_text())
    config["model"]["model_name"] = str(tmp_path / "tiny")
    config["data"]["train"]["datasets"][0]["dataset_kwargs"]["data_files"] = str(write_tasks(tmp_path / "t.jsonl"))
    # checkpoints keep the step logs; gradient checkpointing on: the trainer's model is sampled in train mode
    config["training"].update(output_dir=str(tmp_path / "out"), save_steps=1, enable_gradient_checkpointing=True)
    config["training"]["grpo"]["max_completion_length"] = 8
    config["training"]["reward_functions"] = ["openenv_wordle_env", "openenv_wordle_wordle_greens"]
    config["training"]["trainer_kwargs"]["reward_weights"] = [1.0, 0.5]
    (tmp_path / "grpo.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "OUMI_EXTRA_DEPS_FILE": str(tmp_path / "deps.txt"), "DO_NOT_TRACK": "1",
           "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", "PYTHONPATH": str(ROOT)}
    oumi = Path(sys.executable).with_name("oumi")
    done = subprocess.run([str(oumi), "train", "-c", str(tmp_path / "grpo.yaml")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    state = json.loads((tmp_path / "out" / "checkpoint-2" / "trainer_state.json").read_text())
    logs = [entry for entry in state["log_history"] if "rewards/openenv_wordle_env/mean" in entry]
    assert [entry["step"] for entry in logs] == [1, 2]
    rows = list(read_traces(tmp_path / "traces"))
    assert len(rows) == 8 and all(r.ok for r in rows)
    for entry in logs:  # each step's logged env reward is the mean of that step's episodes (version = step - 1)
        step_rows = [r for r in rows if r.policy.version == entry["step"] - 1]
        assert len(step_rows) == 4 and all(r.reward is not None and r.reward >= 0.2 for r in step_rows)
        assert entry["rewards/openenv_wordle_env/mean"] == pytest.approx(sum(r.reward or 0.0 for r in step_rows) / 4)
        greens = [get_rubric("wordle")(r).components["greens"] for r in step_rows]
        assert entry["rewards/openenv_wordle_wordle_greens/mean"] == pytest.approx(sum(greens) / 4)
        weighted = [(r.reward or 0.0) + 0.5 * g for r, g in zip(step_rows, greens, strict=True)]
        assert entry["reward"] == pytest.approx(sum(weighted) / 4)  # Oumi passed trainer_kwargs.reward_weights on
