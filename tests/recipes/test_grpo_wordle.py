"""The GRPO Wordle recipe end to end with the smoke config: killed (-9) during GRPO, resumed, every output checked,
and the decoding constraint never lets an illegal guess through.

The kill comes at a known place: the recipe plays on a Wordle server of the test's whose GRPO games after the
second step's wait at a gate (``_gated_wordle.py``), so the recipe has saved GRPO's checkpoint-2 and cannot finish
before it is killed (its smoke GRPO steps take a fraction of a second each)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from openenv_train.envs.wordle import valid_guesses
from openenv_train.launch import LocalProcessProvider
from openenv_train.recipes import eval as eval_recipe
from openenv_train.recipes.wordle import GrpoWordleConfig, WordleEvalSection, WordleGRPOSection
from openenv_train.trace import beam_decoded, read_traces

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs" / "grpo_wordle_smoke.yaml"
RECIPE = [sys.executable, "-m", "openenv_train.recipes.grpo_wordle"]


def _env() -> dict[str, str]:
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "TOKENIZERS_PARALLELISM": "false"}


def _wait_at_the_gate(run: Path, gate: Path, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Until GRPO's checkpoint-2 is saved and a game of step 3 waits at the gate (both reported by the child)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, "the recipe ended before its GRPO games reached the gate"
        if (gate / "waiting").exists() and list((run / "checkpoints" / "grpo").glob("checkpoint-2/trainer_state.json")):
            return
        time.sleep(0.2)
    raise AssertionError("no GRPO checkpoint-2 with a game waiting at the gate within the time limit")


@pytest.fixture
def gated_wordle(tmp_path: Path) -> Any:
    """A Wordle server whose GRPO games after the first 8 (2 steps x 2 prompts x 2 generations) wait at a gate."""
    gate = tmp_path / "gate"
    gate.mkdir()
    held = GrpoWordleConfig(eval=WordleEvalSection(words=8)).secret_splits()[0]
    (gate / "held.json").write_text(json.dumps(held))
    (gate / "limit").write_text("8")
    provider = LocalProcessProvider("tests.recipes._gated_wordle:GatedWordle",
                                    env_vars={"WORDLE_GATE": str(gate), "PYTHONPATH": str(ROOT)})
    endpoint = asyncio.run(provider.start())
    try:
        yield endpoint.base_url, gate
    finally:
        (gate / "open").touch()
        asyncio.run(provider.stop(grace_s=5.0))


@pytest.mark.timeout(600)
def test_recipe_killed_during_grpo_resumes_and_writes_every_output(tmp_path: Path, gated_wordle: Any) -> None:
    url, gate = gated_wordle
    run = tmp_path / "grpo-wordle-smoke"
    log = (tmp_path / "first.log").open("wb")
    # SFT bounded by its work (256 teacher games, 8 steps), not by the smoke config's 2,000 games under a 40 s budget:
    # nothing here depends on how well the model plays, only on every phase running and writing its outputs
    first = subprocess.Popen([*RECIPE, "--config", str(SMOKE), f"output.dir={tmp_path}", f"env.url={url}",
                              "sft.episodes=256"],
                             stdout=log, stderr=subprocess.STDOUT, env=_env(), cwd=tmp_path, start_new_session=True)
    try:
        _wait_at_the_gate(run, gate, first, 420)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the trainer and everything it started, mid-run
        first.wait()
    state = json.loads((run / "state.json").read_text())
    assert "sft" in state["done"] and "grpo" not in state["done"]

    (gate / "open").touch()  # the resumed run plays through
    resumed = subprocess.run([*RECIPE, "--resume", str(run)], capture_output=True, text=True, env=_env(),
                             cwd=tmp_path, timeout=420)
    assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-4000:]
    assert "resuming GRPO from" in resumed.stdout

    # traces: one row per episode, none lost or doubled across the kill; GRPO rows carry exact tokens
    rows = read_traces(run)
    ids = [r.episode_id for r in rows]
    assert len(ids) == len(set(ids))
    for phase in ("untrained", "sft", "grpo", "grpo_unconstrained", "sft_beam", "grpo_beam"):
        assert sum(r.episode_id.startswith(f"eval-{phase}-") for r in rows) == 8
    for row in rows:  # the beam games' turns are marked beam-decoded, one per beam, and carry no token data
        beam = row.episode_id.startswith(("eval-sft_beam-", "eval-grpo_beam-"))
        assert all((beam_decoded(t) is not None) == beam for t in row.trace.turns), row.episode_id
        if beam:
            assert row.rollout_type == "eval" and all(not t.completion_token_ids for t in row.trace.turns)
            assert {beam_decoded(t)["width"] for t in row.trace.turns} == {16}  # type: ignore[index]
    grpo = [r for r in rows if r.episode_id.startswith("grpo-")]
    assert {r.episode_id.split("-")[1] for r in grpo} == {"s0", "s1", "s2", "s3"}  # 4 steps x 2 groups x 2 games
    assert len(grpo) == 16 and all(r.ok and r.trace.turns for r in grpo)
    assert all(t.completion_token_ids and len(t.per_token_logps) == len(t.completion_token_ids)
               for r in grpo for t in r.trace.turns)
    assert sorted({r.policy.version for r in grpo}) == [0, 1, 2, 3]
    held = set(GrpoWordleConfig(eval=WordleEvalSection(words=8)).secret_splits()[0])
    assert {r.task.get("task") for r in grpo}.isdisjoint(held)  # a held-out word is never a training secret
    # every constrained reply (every phase but the unconstrained evaluation) is a valid guess not made before
    for row in rows:
        if row.episode_id.startswith("eval-grpo_unconstrained-"):
            continue
        guesses = [str(s.action["message"]) for s in row.steps]
        assert all(g in valid_guesses() for g in guesses), (row.episode_id, guesses)
        assert len(set(guesses)) == len(guesses)
        assert all(t.metadata.get("constraint", {}).get("kind") == "choice" for t in row.trace.turns)
    # the folder loads with datasets in one line
    import datasets

    loaded = datasets.load_dataset("parquet", data_files=str(run / "traces" / "*.parquet"), split="train")
    assert loaded.num_rows == len(rows)

    # checkpoints
    for name in ("sft", "final"):
        assert (run / "checkpoints" / name / "config.json").exists()
        assert (run / "checkpoints" / name / "tokenizer.json").exists()
    assert (run / "checkpoints" / "grpo" / "checkpoint-4").exists()

    # metrics.jsonl: SFT logs, one rollout line per GRPO step, trainer logs, three evaluations
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    phases = {line["phase"] for line in lines}
    assert {"sft", "grpo", "grpo_rollout", "eval_untrained", "eval_sft", "eval_grpo"} <= phases
    assert {line["step"] for line in lines if line["phase"] == "grpo_rollout"} >= {3, 4}
    assert all("reward" in line and "win" in line for line in lines if line["phase"] == "grpo_rollout")

    # the plot and the summaries
    assert (run / "training.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary["phases"]) == {"untrained", "sft", "grpo", "grpo_unconstrained", "sft_beam", "grpo_beam"}
    beam = summary["beam"]
    assert beam["width"] == 16 and set(beam["beam_minus_greedy"]) == {"sft", "grpo"}
    assert beam["beam_minus_greedy"]["grpo"]["mean"] == pytest.approx(
        summary["phases"]["grpo_beam"]["win"]["mean"] - summary["phases"]["grpo"]["win"]["mean"])
    assert set(beam["grpo_effect"]) == {"greedy", "beam"}
    for phase in summary["phases"].values():
        assert {"reward", "win", "guesses", "greens", "yellows", "invalid_rate", "consistent"} <= set(phase)
        assert all(m["ci_low"] <= m["mean"] <= m["ci_high"] and m["n"] == 8 for m in phase.values())
    imp = summary["improvement"]
    assert imp["from"] == "untrained" and imp["to"] == "grpo"
    assert imp["mean"] == pytest.approx(summary["phases"]["grpo"]["win"]["mean"]
                                        - summary["phases"]["untrained"]["win"]["mean"])
    assert imp["ci_low"] <= imp["mean"] <= imp["ci_high"]
    # the constraint: no illegal guess in any constrained phase, the random model included; without it the
    # untrained-sized model writes some
    for phase in ("untrained", "sft", "grpo", "sft_beam", "grpo_beam"):
        assert summary["phases"][phase]["invalid_rate"]["mean"] == 0.0
    assert set(summary["guesses_when_won"]) >= {"untrained", "sft", "grpo", "grpo_unconstrained"}
    assert summary["budgets"]["sft"]["steps"] >= 1 and summary["budgets"]["sft"]["budget_s"] == 40
    assert "grpo" in summary["budgets"]
    md = (run / "summary.md").read_text()
    assert "| win |" in md and "Improvement in win" in md and "after GRPO, unconstrained" in md
    assert "after GRPO, beam" in md
    config = (run / "config.yaml").read_text()
    assert "num_generations: 2" in config

    # recipes.eval (in this process) on the final checkpoint replays the summary's final evaluation: same secrets,
    # same decoding
    common = [f"model={run / 'checkpoints' / 'final'}", "env=wordle", "episodes=8", f"output_dir={tmp_path}",
              "show_progress=false", "num_actors=1"]
    assert eval_recipe.main([*common, "name=replay"]) == 0
    replay = json.loads((tmp_path / "replay" / "summary.json").read_text())["phases"]["eval"]
    for name in ("win", "reward", "guesses", "invalid_rate"):
        assert replay[name]["mean"] == pytest.approx(summary["phases"]["grpo"][name]["mean"]), name
    # and with beam_width=16, the beam evaluation's
    assert eval_recipe.main([*common, "name=beam", "beam_width=16"]) == 0
    replay = json.loads((tmp_path / "beam" / "summary.json").read_text())["phases"]["eval"]
    for name in ("win", "reward", "guesses", "invalid_rate"):
        assert replay[name]["mean"] == pytest.approx(summary["phases"]["grpo_beam"][name]["mean"]), name


def test_unknown_settings_are_refused_with_the_valid_ones(tmp_path: Path) -> None:
    done = subprocess.run([*RECIPE, "grpo.stepz=3"], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 2
    assert "unknown option 'grpo.stepz'" in done.stderr and "steps" in done.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("grpo:\n  num_generations: 1\n")
    done = subprocess.run([*RECIPE, "--config", str(bad)], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 2 and "num_generations must be >= 2" in done.stderr
    done = subprocess.run([*RECIPE, "--resume", str(tmp_path / "nothing")], capture_output=True, text=True,
                          env=_env(), cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and "no config.yaml" in done.stderr
    with pytest.raises(ValueError, match="grpo.per_turn_tokens=11 or more"):
        GrpoWordleConfig(order="any")
    with pytest.raises(ValueError, match="vLLM does not enforce it"):
        GrpoWordleConfig(order="any", grpo=WordleGRPOSection(per_turn_tokens=12, use_vllm=True))
    with pytest.raises(ValueError, match="order must be one of given, any"):
        GrpoWordleConfig(order="random")


def test_the_config_file_holds_the_embedded_defaults() -> None:
    from openenv_train.recipes._config import config_to_dict, load_config

    assert config_to_dict(load_config(GrpoWordleConfig, str(ROOT / "configs" / "grpo_wordle.yaml"), [])) == \
        config_to_dict(GrpoWordleConfig())
    # and lists every option (the pool section: the recipe's own values; PoolConfig's other fields are its defaults)
    written = yaml.safe_load((ROOT / "configs" / "grpo_wordle.yaml").read_text())
    defaults = config_to_dict(GrpoWordleConfig())
    assert written.keys() == defaults.keys()
    for name, section in defaults.items():
        if isinstance(section, dict) and name != "pool":
            assert written[name].keys() == section.keys(), name
