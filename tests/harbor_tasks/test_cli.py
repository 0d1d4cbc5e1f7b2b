"""``openenv-train harbor run``: the trace dataset it writes (loaded with ``datasets``), its table, its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_train.cli import main
from openenv_train.trace import read_traces
from tests.harbor_tasks._support import EXAMPLE_NAMES, EXAMPLES, write_task
from tests.sandbox.conftest import require_sandbox


def test_oracle_run_writes_a_parquet_dataset_and_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_sandbox()
    datasets = pytest.importorskip("datasets")
    run = tmp_path / "oracle-run"
    assert main(["harbor", "run", str(EXAMPLES), "--agent", "oracle", "-o", str(run), "-n", "6"]) == 0
    out = capsys.readouterr().out
    for name in EXAMPLE_NAMES:
        assert name in out
    assert f"{len(EXAMPLE_NAMES)} attempt(s), mean reward 1.000, 0 failed" in out
    dataset = datasets.load_dataset("parquet", data_files=str(run / "traces" / "*.parquet"), split="train")
    assert dataset.num_rows == len(EXAMPLE_NAMES)
    assert sorted(env["name"] for env in dataset["env"]) == [f"harbor/{name}" for name in EXAMPLE_NAMES]
    assert {env["url"] for env in dataset["env"]} == {"sandbox"}
    assert {json.loads(task)["agent"] for task in dataset["task"]} == {"oracle"}
    assert set(dataset["reward"]) == {1.0} and all(dataset["ok"]) and set(dataset["run_id"]) == {"oracle-run"}
    assert all(len(steps) == 2 for steps in dataset["steps"])
    rows = read_traces(run)
    assert {row.episode_id for row in rows} == {f"{n}#0" for n in EXAMPLE_NAMES}

    # a second run resumes: every attempt is already written
    assert main(["harbor", "run", str(EXAMPLES), "-o", str(run)]) == 0
    assert f"skipped {len(EXAMPLE_NAMES)} attempt(s)" in capsys.readouterr().out
    assert len(read_traces(run)) == len(EXAMPLE_NAMES)


def test_nop_run_with_attempts_and_a_broken_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_sandbox()
    write_task(tmp_path / "set", "good")
    (write_task(tmp_path / "set", "no-tests") / "tests" / "test.sh").unlink()
    run = tmp_path / "run"
    assert main(["harbor", "run", str(tmp_path / "set"), "--agent", "nop", "-k", "2", "-o", str(run)]) == 1
    out = capsys.readouterr().out
    assert "TaskFormatError" in out and "4 attempt(s), mean reward 0.000, 2 failed" in out
    rows = read_traces(run)
    assert sorted((r.episode_id, r.ok, r.group_id) for r in rows) == [
        ("good#0", True, "good"), ("good#1", True, "good"), ("no-tests#0", False, "no-tests"),
        ("no-tests#1", False, "no-tests")]
    assert all("tests/test.sh" in (r.error.message if r.error else "") for r in rows if not r.ok)


@pytest.mark.parametrize(("args", "words"), [
    (["--agent", "model"], "--model is required"),
    (["--model", "x"], "--model is required with --agent model"),
    (["--agent", "claude"], "--agent must be oracle, nop, model, command or an agent CLI (mini-swe-agent, claude-code"),
    (["--env", "vm"], "--env must be sandbox, docker or auto"),
    (["-k", "0"], "attempts and concurrency must be >= 1"),
])
def test_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str) -> None:
    assert main(["harbor", "run", str(EXAMPLES / "hello-world"), "-o", str(tmp_path / "r"), *args]) == 2
    assert words in capsys.readouterr().err


def test_missing_paths_and_models_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["harbor", "run", str(tmp_path / "nowhere"), "-o", str(tmp_path / "r")]) == 1
    assert "nowhere: no such file or folder" in capsys.readouterr().err
    code = main(["harbor", "run", str(EXAMPLES / "hello-world"), "--agent", "model", "--model",
                 str(tmp_path / "no-model"), "-o", str(tmp_path / "r2")])
    assert code == 1 and "not an http(s):// URL nor a model folder" in capsys.readouterr().err
