"""make_environment_factory: tools generated from an env's MCP tools or action schema; a real GRPO step."""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from openenv_train.integrations.trl import ToolSchemaError, make_environment_factory
from openenv_train.integrations.trl._tools import make_tool_method


def _tools(cls: type) -> list[str]:
    return [n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
            if not n.startswith("_") and n not in ("reset", "get_reward")]


def test_mcp_env_tools_become_typed_methods() -> None:
    from transformers.utils import get_json_schema

    cls = make_environment_factory("echo")
    try:
        assert cls.kind == "mcp" and _tools(cls) == ["echo_message", "echo_with_length"]
        env = cls()
        assert env.reset() is None
        schema = get_json_schema(env.echo_with_length)["function"]
        assert schema["parameters"]["properties"]["message"]["type"] == "string"
        assert schema["parameters"]["required"] == ["message"] and schema["description"]
        assert env.echo_message("hi") == "hi" and '"length": 2' in env.echo_with_length(message="hi")
        assert env.get_reward() == 0.0
    finally:
        cls.shutdown()


def test_a_script_that_leaves_its_envs_alive_still_exits() -> None:
    # A training script ends with TRL's env instances alive; their __del__ runs at interpreter exit, when the
    # shared client loop no longer runs (it used to wait on that loop forever).
    script = textwrap.dedent("""
        from openenv_train.integrations.trl import make_environment_factory
        cls = make_environment_factory("counter", max_sessions=2)
        env = cls()
        env.reset()
        print("played", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "played" in done.stdout, done.stderr[-2000:]


def test_action_schema_env_gets_a_step_tool_and_reward() -> None:
    cls = make_environment_factory("wordle")
    try:
        assert cls.kind == "generic" and _tools(cls) == ["wordle_step"]
        env = cls()
        assert "Wordle" in (env.reset(task="crane", prompt=[{"role": "user", "content": "x"}]) or "")
        env.wordle_step(message="[slate]")
        assert not env.done
        env.wordle_step(message="[crane]")
        assert env.done and env.get_reward() == pytest.approx(sum(env.rewards)) and env.rewards[-1] == 1.0
        with pytest.raises(RuntimeError, match="episode is over"):
            env.wordle_step(message="[crane]")
    finally:
        cls.shutdown()


def test_untyped_tool_arguments_say_what_to_change() -> None:
    with pytest.raises(ToolSchemaError, match="argument 'word' has no usable JSON type"):
        make_tool_method("guess", "", {"properties": {"word": {}}}, lambda self, a: "")
    with pytest.raises(ToolSchemaError, match="cannot be a method name"):
        make_tool_method("get_reward", "", {}, lambda self, a: "")


@pytest.mark.timeout(300)
def test_grpo_step_with_environment_factory(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="trl is not installed")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")
    cls = make_environment_factory("wordle")
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": "Play."}], "task": w} for w in ("crane", "moist")])

    def varied(prompts: list, completions: list, completion_ids: list, **kwargs: Any) -> list[float]:
        return [float(sum(ids) % 1009) / 1009 for ids in completion_ids]  # differs within groups: non-zero advantages

    config = GRPOConfig(output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=4, num_generations=2,
                        max_completion_length=8, max_steps=1, bf16=False, report_to=[], logging_steps=1,
                        use_cpu=True, save_strategy="no", disable_tqdm=True, beta=0.0)
    model = AutoModelForCausalLM.from_pretrained(path)
    try:
        trainer = GRPOTrainer(model=model, processing_class=AutoTokenizer.from_pretrained(path), reward_funcs=[varied],
                              args=config, train_dataset=dataset, environment_factory=cls)
        assert [t.__name__ for t in trainer.tools] == ["wordle_step"]
        trainer.train()
    finally:
        cls.shutdown()
    log = trainer.state.log_history[0]
    assert math.isfinite(log["loss"]) and log["grad_norm"] > 0 and math.isfinite(log["grad_norm"])
    assert log["rewards/WordleTools/mean"] == 0.0  # the env's reward reached the logs (a random model never wins)
