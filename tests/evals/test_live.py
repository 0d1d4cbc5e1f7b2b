"""The live task: Inspect plays Wordle through our client (tiny model, mockllm); `inspect eval` in a subprocess;
logs read back agree with the trace rows written for the same episodes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log

import openenv_train
from openenv_train.evals import live_task
from openenv_train.evals._registry import openenv  # noqa: F401  (registers --model openenv/...)
from openenv_train.rubrics import wordle_rubric
from openenv_train.trace import read_traces

TASKS = Path(openenv_train.__file__).parent / "evals" / "tasks.py"


def _agree(log: EvalLog, trace_dir: Path, episodes: int) -> None:
    """Each sample's Score is the rubric's score of the trace row written for its episode."""
    assert log.status == "success", log.error
    rows = {r.trace_id: r for r in read_traces(trace_dir)}
    assert log.samples and len(log.samples) == len(rows) == episodes
    for sample in log.samples:
        assert sample.scores is not None
        score = sample.scores["rubric"]
        assert score.metadata is not None
        row = rows[score.metadata["trace_id"]]
        expected = wordle_rubric()(row)
        assert score.value == {**expected.components, "env_reward": row.reward}
        assert row.env.name == "wordle" and row.rollout_type == "eval" and row.steps
        assert row.task["seed"] == sample.metadata["reset"]["seed"]
        replies = [m for m in sample.messages if m.role == "assistant"]
        assert [t.response["choices"][0]["message"]["content"] for t in row.trace.turns] == [m.text for m in replies]
        assert [s.action["message"] for s in row.steps][: len(replies)] == [m.text.strip() for m in replies][: len(row.steps)]


def test_live_with_scripted_mockllm_and_the_tiny_model(tmp_path: Path) -> None:
    scripted = live_task("wordle", "wordle", episodes=2, replies=["[crane]", "[slate]", "[moist]"],
                         trace_dir=str(tmp_path / "mock"))
    log = inspect_eval(scripted, log_dir=str(tmp_path / "logs"), display="none")[0]
    _agree(log, tmp_path / "mock", 2)
    assert str(log.eval.model) == "mockllm/model"
    tiny = live_task("wordle", "wordle", episodes=1, max_turns=2, trace_dir=str(tmp_path / "tiny"))
    log = inspect_eval(tiny, model="openenv/tiny", log_dir=str(tmp_path / "logs"), display="none")[0]
    _agree(log, tmp_path / "tiny", 1)
    assert log.stats.model_usage["openenv/tiny"].input_tokens > 0


#: The line pyproject.toml declares (``[project.entry-points.inspect_ai]``).
ENTRY_POINT = "openenv_train = openenv_train.evals._registry"


def _entry_point_path(tmp_path: Path) -> str:
    """A folder whose dist-info declares our ``inspect_ai`` entry point, for a PYTHONPATH (as an install does)."""
    info = tmp_path / "ep" / "openenv_train_inspect-0.0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: openenv-train-inspect\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{ENTRY_POINT}\n")
    return str(info.parent)


def _inspect(tmp_path: Path, model: str, *task_args: str) -> EvalLog:
    log_dir = tmp_path / "logs" / model.replace("/", "_")
    path = os.pathsep.join(filter(None, [_entry_point_path(tmp_path), os.environ.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "inspect_ai", "eval", f"{TASKS}@openenv_live", "--model", model, "--log-dir",
           str(log_dir), "--display", "none", "--log-format", "json", *[a for t in task_args for a in ("-T", t)]]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONPATH": path},
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    logs = sorted(log_dir.glob("*.json"))
    assert len(logs) == 1, done.stdout
    return read_eval_log(str(logs[0]))


@pytest.mark.timeout(300)
def test_inspect_eval_cli_subprocess_tiny_and_mockllm(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    log = _inspect(tmp_path, "openenv/tiny", "episodes=2", "max_turns=2", f"trace_dir={traces / 'tiny'}")
    _agree(log, traces / "tiny", 2)
    log = _inspect(tmp_path, "mockllm/model", "episodes=1", f"trace_dir={traces / 'mock'}",
                   f"replies={json.dumps(['[crane]', '[slate]'])}")
    _agree(log, traces / "mock", 1)
    sample = log.samples[0]  # type: ignore[index]
    assert [m.text for m in sample.messages if m.role == "assistant"][:2] == ["[crane]", "[slate]"]


def test_eval_cli_live(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from openenv_train.cli import main

    code = main(["eval", "wordle", "--model", "openenv/tiny", "--episodes", "1", "--max-turns", "2",
                 "--trace-dir", str(tmp_path / "t"), "--log-dir", str(tmp_path / "logs")])
    assert code == 0 and "wordle" in capsys.readouterr().out
    assert len(read_traces(tmp_path / "t")) == 1


def test_live_tool_calls_drive_the_env(tmp_path: Path) -> None:
    """A model that calls the env_step tool: each call is one env step, its observation the tool result."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    outputs = [ModelOutput.for_tool_call("mockllm", "env_step", {"action": guess}) for guess in ("[slate]", "[crane]")]
    for output in outputs:
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    model = get_model("mockllm/model", custom_outputs=outputs)
    task = live_task("wordle", "wordle", episodes=1, reset={"task": "crane"}, trace_dir=str(tmp_path / "t"), model=model)
    log = inspect_eval(task, log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success" and log.samples
    sample = log.samples[0]
    tool_results = [m for m in sample.messages if m.role == "tool"]
    assert len(tool_results) == 2 and "S L A T E" in tool_results[0].text
    row = read_traces(tmp_path / "t")[0]
    assert [s.action for s in row.steps] == [{"message": "[slate]"}, {"message": "[crane]"}]
    assert row.reward == 1.0 and row.done
    assert sample.scores is not None and isinstance(sample.scores["rubric"].value, dict)
    assert sample.scores["rubric"].value["correct"] == 1.0
    assert row.trace.turns[1].request["messages"][-1]["role"] == "tool"
    assert row.trace.turns[0].response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "env_step"


def test_failed_episode_is_a_row_not_a_crash(tmp_path: Path) -> None:
    """An env that refuses the reset options: the sample still scores, the row says ok=False and why."""
    task = live_task("wordle", "wordle", episodes=1, reset={"task": "notaword"}, replies=["[crane]"],
                     trace_dir=str(tmp_path / "t"))
    log = inspect_eval(task, log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success" and log.samples and log.samples[0].scores is not None
    row = read_traces(tmp_path / "t")[0]
    assert not row.ok and row.error is not None and "VALIDATION_ERROR" in row.error.message and row.steps == []
    assert log.samples[0].scores["rubric"].metadata["trace_id"] == row.trace_id  # type: ignore[index]


def test_openenv_model_api_over_an_openai_compatible_url(tmp_path: Path, offline_tiny: Path) -> None:
    """``--model openenv/http://...``: our PolicyServer (any OpenAI-compatible server) as the Inspect model."""
    from openenv_train.policy import LocalBackend, PolicyServer
    from openenv_train.trace import CaptureStore

    capture = CaptureStore()
    with PolicyServer(LocalBackend(offline_tiny, model_id="tiny"), capture=capture).run_in_thread() as server:
        task = live_task("wordle", "wordle", episodes=1, max_turns=2, trace_dir=str(tmp_path / "t"))
        log = inspect_eval(task, model=f"openenv/{server.base_url}", log_dir=str(tmp_path / "logs"), display="none")[0]
    _agree(log, tmp_path / "t", 1)
    assert log.stats.model_usage[f"openenv/{server.base_url}"].output_tokens > 0
