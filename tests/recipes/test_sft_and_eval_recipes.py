"""``recipes.sft_from_traces`` on a written trace dataset, then ``recipes.eval`` of its checkpoint on two envs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_train.recipes import eval as eval_recipe
from openenv_train.trace import TraceWriter, read_traces
from tests.trace._rows import make_row


def _recipe(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", f"openenv_train.recipes.{name}", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=400, env={"RAY_USAGE_STATS_ENABLED": "0",
                                                                **__import__("os").environ})


@pytest.mark.timeout(600)
def test_sft_from_traces_then_eval_the_checkpoint(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    with TraceWriter(tmp_path / "traces") as writer:
        for i in range(6):
            writer.write(make_row(i, reward=1.0 if i % 2 else 0.0))
        writer.write(make_row(6, ok=False))  # failed episodes are dropped
    done = _recipe("sft_from_traces", f"traces={tmp_path / 'traces'}", f"output_dir={tmp_path}", "name=sft",
                   "sft.epochs=2", "sft.batch_size=2", "sft.warmup_steps=0", "sft.min_reward=1.0",
                   "show_progress=false", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((tmp_path / "sft" / "summary.json").read_text())
    # episodes 1, 3, 5 (reward 1.0 and ok); each of their two calls prompts afresh (no shared prefix): a row each
    assert summary["conversations"] == 6
    checkpoint = tmp_path / "sft" / "checkpoints" / "sft"
    trained = AutoModelForCausalLM.from_pretrained(checkpoint)
    init = AutoModelForCausalLM.from_pretrained(tmp_path / "sft" / "checkpoints" / "init")
    assert any(not a.equal(b) for a, b in zip(trained.parameters(), init.parameters(), strict=True))
    assert summary["first_loss"] is not None and summary["last_loss"] < summary["first_loss"]

    # the checkpoint on Wordle (the recipe's chat and held-out secrets) and on a typed env (JSON actions), in this
    # process (the module's command line is the test below's)
    assert eval_recipe.main([f"model={checkpoint}", "env=wordle", "episodes=3", f"output_dir={tmp_path}",
                             "name=eval-wordle", "show_progress=false"]) == 0
    summary = json.loads((tmp_path / "eval-wordle" / "summary.json").read_text())
    metrics = summary["phases"]["eval"]
    assert summary["agent"] == "wordle" and metrics["reward"]["n"] == 3 and "invalid_rate" in metrics
    rows = read_traces(tmp_path / "eval-wordle")
    assert len(rows) == 3 and all(r.trace.turns for r in rows)
    assert all(t.metadata["sampling_used"]["temperature"] == 0.0 for r in rows for t in r.trace.turns)

    assert eval_recipe.main([f"model={checkpoint}", "env=counter", "episodes=2", "max_turns=2",
                             f"output_dir={tmp_path}", "name=eval-counter", "show_progress=false"]) in (0, 1)
    summary = json.loads((tmp_path / "eval-counter" / "summary.json").read_text())
    assert summary["agent"] == "text" and summary["phases"]["eval"]["reward"]["n"] == 2


def test_bad_options_name_the_fix(tmp_path: Path) -> None:
    done = _recipe("eval", "env=wordle", cwd=tmp_path)
    assert done.returncode == 2 and "model is required" in done.stderr
    done = _recipe("eval", f"model={tmp_path / 'missing'}", "show_progress=false", f"output_dir={tmp_path}",
                   cwd=tmp_path)
    assert done.returncode == 1 and "no such checkpoint folder" in done.stderr
    done = _recipe("sft_from_traces", f"traces={tmp_path / 'nothing'}", cwd=tmp_path)
    assert done.returncode == 1 and "no such folder" in done.stderr
