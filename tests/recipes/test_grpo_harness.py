"""The harness recipe end to end on two Harbor tasks: every output written, and the rows the trainer receives are the
captured calls (their prompt and completion ids, their sampling logprobs; the trainer's logprobs equal to 1e-5
before the first update), each with its attempt's advantage."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from openenv_train.recipes import grpo_harness
from openenv_train.trace import EnvInfo, TraceRow, TrainingTrace, TrainingTurn, read_traces
from tests import _system_parts
from tests.sandbox.conftest import require_sandbox

pytest.importorskip("trl", reason="trl is not installed")
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "grpo_harness_smoke.yaml"
EXAMPLES = ROOT / "openenv_train" / "harbor" / "examples"
MINI_SUBMIT = ('<tool_call>\n{"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}'
               "\n</tool_call>")


def _recording_trainer(seen: list[dict[str, Any]]) -> Any:
    """``grpo_trainer_class`` whose trainer records, per loss call, the batch and its own logprobs of it."""
    from openenv_train.integrations import trl as ours

    real = ours.grpo_trainer_class

    def trainer_class(base: Any = None) -> type:
        class Recording(real(base)):  # type: ignore[misc]
            def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
                import torch

                ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
                att = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
                self._allowed = inputs.get("allowed_mask")
                with torch.no_grad():
                    logps, _, _ = self._get_per_token_logps_and_entropies(model, ids, att,
                                                                          inputs["completion_ids"].size(1))
                seen.append({"step": self.state.global_step, "logps": logps,
                             **{k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}})
                return super()._compute_loss(model, inputs)

        return Recording

    return trainer_class


@pytest.mark.timeout(600)
@pytest.mark.parametrize("harness", ["mini-swe-agent", "model"])
def test_smoke_run_writes_every_output_and_trains_the_captured_calls(tmp_path: Path, harness: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A real agent CLI (mini-swe-agent), and our own loop."""
    import torch

    from openenv_train.integrations import trl as ours

    require_sandbox()
    if harness != "model":
        _system_parts.require("agents")
    tasks = tmp_path / "tasks"
    for name in ("hello-world", "edit-config"):
        shutil.copytree(EXAMPLES / name, tasks / name)
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(ours, "grpo_trainer_class", _recording_trainer(seen))
    overrides = [f"harness={harness}", f"tasks={tasks}", f"output.dir={tmp_path}"]
    if harness == "mini-swe-agent":  # it ends with its submit command, not a plain reply
        choices = yaml.safe_load(CONFIG.read_text())["attempt"]["choices"][:2] + [MINI_SUBMIT]
        overrides.append(f"attempt.choices={json.dumps(choices)}")
    code = grpo_harness.main(["--config", str(CONFIG), *overrides])
    assert code == 0
    out = tmp_path / f"grpo-harness-{harness}"
    for name in ("summary.json", "summary.md", "metrics.jsonl", "training.png", "config.yaml", "checkpoints/final",
                 "checkpoints/grpo/checkpoint-2"):
        assert (out / name).exists(), name
    summary = json.loads((out / "summary.json").read_text())
    for phase in ("untrained", "grpo"):
        stat = summary["phases"][phase]["pass_rate"]
        assert stat["n"] == 2 and stat["ci_low"] <= stat["mean"] <= stat["ci_high"]
    assert {"mean", "ci_low", "ci_high"} <= set(summary["improvement"]) and summary["budgets"]["grpo"]["steps"] == 2
    assert [t["task"] for t in summary["tasks"]] == ["edit-config", "hello-world"]
    assert all(t["difference"] == t["after"] - t["before"] for t in summary["tasks"])
    assert "| edit-config |" in (out / "summary.md").read_text()
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rollouts = [r for r in records if r["phase"] == "grpo_rollout"]
    assert [r["step"] for r in rollouts] == [1, 2] and all(r["staleness"] <= 1 for r in rollouts)

    rows = read_traces(out)
    assert all(r.ok and r.reward is not None for r in rows), [r.error for r in rows if not r.ok]
    assert len([r for r in rows if r.episode_id.startswith("eval-")]) == 2 * 2  # an attempt per task, twice
    trained = [r for r in rows if r.episode_id.startswith("grpo-")]
    assert len(trained) == 2 * 2 * 2  # 2 steps x 2 tasks x 2 attempts
    # every call's reply was one of the allowed ones, sampled by the model (token ids and logprobs captured)
    assert all(t.metadata.get("constraint") and t.completion_token_ids and len(t.per_token_logps) ==
               len(t.completion_token_ids) for r in rows for t in r.trace.turns)

    # the rows the trainer received are captured main-line calls, token for token, each with its attempt's advantage
    expected = _advantages(trained)
    calls: dict[tuple[tuple[int, ...], tuple[int, ...]], list[tuple[TraceRow, TrainingTurn]]] = defaultdict(list)
    for row in trained:
        main = set(row.trace.call_graph().main.node_ids)  # type: ignore[union-attr]
        for turn in row.trace.turns:
            if turn.node_id in main:
                calls[(tuple(turn.prompt_token_ids), tuple(turn.completion_token_ids))].append((row, turn))
    assert seen, "the trainer computed no loss"
    matched: dict[int, int] = defaultdict(int)
    for batch in seen:
        step = batch["step"]
        for i in range(batch["completion_ids"].size(0)):
            on = batch["completion_mask"][i].bool()
            if not on.any():
                continue  # a masked row padding the batch
            prompt = tuple(batch["prompt_ids"][i][batch["prompt_mask"][i].bool()].tolist())
            completion = tuple(batch["completion_ids"][i][on].tolist())
            # the step trains its own attempts (with overlap, step 0's were played first, step 1's during it)
            found = [(r, t) for r, t in calls.get((prompt, completion), []) if r.episode_id.startswith(f"grpo-s{step}-")]
            assert found, "a trained row is no captured main-line call of its step"
            sampled = batch["sampling_per_token_logps"][i][on]
            value = float(batch["advantages"][i])
            assert any(torch.allclose(sampled, torch.tensor(t.per_token_logps), atol=1e-6)
                       and abs(expected[r.episode_id] - value) < 1e-4 for r, t in found)
            assert torch.equal(batch["old_per_token_logps"][i][on], sampled)  # the importance ratio's old policy
            assert batch["allowed_mask"][i][on].any(-1).all()  # scored under the mask it was sampled with
            if step == 0:  # before the first update the trainer's policy is the sampling one
                gap = (batch["logps"][i][on] - sampled).abs().max()
                assert gap < 1e-5, gap
            matched[step] += 1
    for step in (0, 1):  # every main-line call of every attempt, once
        attempts = [r for r in trained if r.episode_id.startswith(f"grpo-s{step}-")]
        assert matched[step] == sum(len(r.trace.call_graph().main.node_ids) for r in attempts)  # type: ignore[union-attr]


def _advantages(rows: list[TraceRow]) -> dict[str, float]:
    """GRPO's advantage of each attempt: its reward against its group's, over the group's standard deviation."""
    import torch

    groups: dict[str | None, list[TraceRow]] = defaultdict(list)
    for row in rows:
        groups[row.group_id].append(row)
    out = {}
    for group in groups.values():
        rewards = torch.tensor([float(r.reward or 0.0) for r in group])
        for row, reward in zip(group, rewards, strict=True):
            out[row.episode_id] = float((reward - rewards.mean()) / (rewards.std() + 1e-4))
    return out


def _turn(node: str, prompt: list[int], completion: list[int]) -> TrainingTurn:
    return TrainingTurn(node_id=node, prompt_token_ids=prompt, completion_token_ids=completion,
                        per_token_logps=[-0.5] * len(completion))


def test_side_calls_are_masked_or_trained_as_set() -> None:
    from openenv_train.recipes._harbor_attempts import trained_turns

    turns = [_turn("a", [1, 2], [3]), _turn("title", [9, 9], [4]), _turn("b", [1, 2, 3, 5], [6])]
    row = TraceRow(run_id="r", episode_id="e", env=EnvInfo(name="harbor/t"), trace=TrainingTrace(turns=turns))
    masked = trained_turns("masked")
    assert masked is not None and [t.node_id for t in masked(row)] == ["a", "b"]
    assert trained_turns("trained") is None  # every call: the trainer's default


def test_bad_settings_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="harness must be one of model"):
        grpo_harness.GrpoHarnessConfig(harness="clod")
    with pytest.raises(ValueError, match="side_calls must be masked or trained"):
        grpo_harness.AttemptSection(side_calls="kept")
    assert grpo_harness.main([f"tasks={tmp_path / 'none'}", f"output.dir={tmp_path}"]) == 1


def test_attempts_carry_their_specs_ids_and_a_resumed_batch_reads_them_back(tmp_path: Path) -> None:
    from openenv_train.harbor import HarborRunConfig, OracleAgent
    from openenv_train.pool import EpisodeSpec
    from openenv_train.recipes._harbor_attempts import HarborAttempts
    from openenv_train.trace import CaptureStore, TraceWriter

    require_sandbox()
    specs = [EpisodeSpec(f"grpo-s0-g0-{k}", {"task": "hello-world"}, 0, "grpo-s0-g0") for k in range(2)]
    config = HarborRunConfig(run_id="run")
    with TraceWriter(tmp_path) as writer:
        attempts = HarborAttempts({"hello-world": EXAMPLES / "hello-world"}, OracleAgent(), CaptureStore(), config,
                                  writer, concurrency=2)
        attempts.set_policy_version(3)
        rows = attempts.run(specs)
        assert [(r.episode_id, r.group_id, r.rewards["verifier"], r.policy.version) for r in rows] == [
            ("grpo-s0-g0-0", "grpo-s0-g0", 1.0, 3), ("grpo-s0-g0-1", "grpo-s0-g0", 1.0, 3)]
        again = attempts.run(specs)  # a resumed step: written attempts are read back, not run again
        assert [r.trace_id for r in again] == [r.trace_id for r in rows] and writer.rows_written == 2
        with pytest.raises(ValueError, match="no task folder for edit-config"):
            attempts.run([EpisodeSpec("x", {"task": "edit-config"})])
