"""The general GRPO recipe end to end on a catalog game: untrained eval, GRPO steps, eval, summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openenv_train.recipes import eval as eval_recipe
from openenv_train.recipes import grpo
from openenv_train.trace import beam_decoded, read_traces

pytest.importorskip("trl", reason="trl is not installed")
CONFIG = Path(__file__).resolve().parents[2] / "configs" / "grpo_smoke.yaml"


def _calls(row: Any) -> int:
    """Model calls of an episode (a beam-decoded call records a turn per beam)."""
    return sum((beam_decoded(t) or {}).get("rank", 0) == 0 for t in row.trace.turns)


@pytest.mark.timeout(600)
def test_grpo_recipe_trains_and_evaluates_catch(tmp_path: Path) -> None:
    code = grpo.main(["--config", str(CONFIG), "env=catch", f"output.dir={tmp_path}", "episode.sandbox=off",
                      "episode.options={rows: 4, columns: 3}"])
    assert code == 0
    out = tmp_path / "grpo-catch"
    summary = json.loads((out / "summary.json").read_text())
    for phase in ("untrained", "grpo", "untrained_greedy", "grpo_greedy", "untrained_beam", "grpo_beam"):
        reward = summary["phases"][phase]["reward"]
        assert reward["n"] == 4 and reward["ci_low"] <= reward["mean"] <= reward["ci_high"]
    assert set(summary["steps"]) == {"untrained->grpo"} and "greedy_untrained->grpo" in summary
    assert summary["budgets"]["grpo"]["steps"] == summary["budgets"]["grpo"]["planned_steps"] == 2
    assert not summary["budgets"]["grpo"]["cut_short"]
    assert summary["training"].startswith("2 of 2 planned GRPO steps")
    rows = read_traces(out)
    trained = [r for r in rows if r.episode_id.startswith("grpo-")]
    held = [r for r in rows if r.episode_id.startswith("eval-")]
    assert len(trained) == 2 * 2 * 2 and len(held) == 6 * 4
    # training seeds never reach the held-out ones
    assert {r.task["seed"] for r in trained}.isdisjoint({r.task["seed"] for r in held})
    # episode.options reset every episode, trained and held out: a 4-row board is 3 moves
    assert all(r.task["rows"] == 4 and r.task["columns"] == 3 and _calls(r) == 3 for r in rows)
    # every move was one of the legal actions: the constraint restricts replies to them
    assert all(t.metadata.get("constraint") for r in rows for t in r.trace.turns)
    assert all(r.ok for r in rows) and (out / "training.png").exists() and (out / "checkpoints" / "final").exists()
    # recipes.eval reproduces the trained policy's greedy figure from its checkpoint
    assert eval_recipe.main([f"model={out / 'checkpoints' / 'final'}", "env=catch", "agent=action", "episodes=4",
                             "seed=1000000", "options={rows: 4, columns: 3}", "max_turns=30", "per_turn_tokens=4",
                             f"output_dir={tmp_path}", "show_progress=false"]) == 0
    again = json.loads((tmp_path / "eval" / "summary.json").read_text())["phases"]["eval"]["reward"]["mean"]
    assert again == summary["phases"]["grpo_greedy"]["reward"]["mean"]

    def moves(episodes: list[Any]) -> dict[int, list[list[int]]]:
        return {r.task["seed"]: [t.completion_token_ids for t in r.trace.turns] for r in episodes}

    greedy = [r for r in held if r.episode_id.startswith("eval-grpo_greedy")]
    assert len(greedy) == 4 and moves(read_traces(tmp_path / "eval")) == moves(greedy)
    # the beam phases (the smoke config's eval.beam_width=4): beam-decoded moves among the legal actions, the paired
    # figures beside the greedy ones, and recipes.eval's beam_width=4 replays the trained policy's beam figure
    beamed = [r for r in held if "_beam-" in r.episode_id]
    assert len(beamed) == 8 and all(beam_decoded(t) is not None and t.metadata.get("constraint")
                                    for r in beamed for t in r.trace.turns)
    assert {"beam_untrained->grpo", "beam_minus_greedy"} <= set(summary)
    assert summary["phases"]["grpo_beam"]["turns"]["mean"] == 3.0  # moves, not the beams each move returned
    assert "after GRPO, beam" in (out / "summary.md").read_text()
    assert eval_recipe.main([f"model={out / 'checkpoints' / 'final'}", "env=catch", "agent=action", "episodes=4",
                             "seed=1000000", "options={rows: 4, columns: 3}", "max_turns=30", "per_turn_tokens=4",
                             "beam_width=4", f"output_dir={tmp_path}", "name=eval-beam", "show_progress=false"]) == 0
    again = json.loads((tmp_path / "eval-beam" / "summary.json").read_text())["phases"]["eval"]["reward"]["mean"]
    assert again == summary["phases"]["grpo_beam"]["reward"]["mean"]


def test_a_run_the_budget_cut_says_so_and_what_it_cost() -> None:
    cut = {"grpo": {"steps": 61, "planned_steps": 150, "seconds": 420.3, "budget_s": 420.0, "cut_short": True}}
    note = grpo._training_note(cut)
    assert note.startswith("CUT SHORT by grpo.budget_s=420: 61 of 150 planned GRPO steps (89 not trained)")
    assert "not these settings' result" in note
    assert grpo._training_note({}) == "GRPO did not run"
    # the defaults are steps; the budget is a safety net far above a quiet run's time
    defaults = grpo.GrpoConfig().grpo
    assert defaults.steps == 150 and defaults.budget_s is not None and defaults.budget_s >= 3000


def test_bad_settings_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        grpo.main(["episode.sandbx=off"])
    with pytest.raises(ValueError, match="raise eval.seed"):
        grpo.GrpoConfig(eval=grpo.EvalSection(seed=10))
    with pytest.raises(ValueError, match="eval.beam_width must be between 0"):
        grpo.GrpoConfig(eval=grpo.EvalSection(beam_width=17))
    with pytest.raises(ValueError, match="options are not for Wordle"):
        eval_recipe.EvalConfig(model="m", env="wordle", options={"rows": 4})
    with pytest.raises(ValueError, match="history must be one of all, current"):
        eval_recipe.EvalConfig(model="m", env="catch", agent="action", history="last")


@pytest.mark.timeout(900)
def test_grpo_alone_learns_to_catch_on_a_small_board(tmp_path: Path) -> None:
    """RL alone improves the untrained tiny model: the recipe's defaults on a 3x3 catch board at learning rate
    5e-5, bounded by steps so a busy machine only takes longer. The defaults before 5be875d
    (``model.init_range=0.02``, learning rate 1e-3, no KL term) reached 0.23 here, under the 0.8 asked; these
    reached 0.97-1.00 in four runs. At the recipe's 2e-4 two runs of seven here collapsed onto one move (entropy 0)
    before they had learned (0.33 in one), so the test takes the rate that holds on this two-move board."""
    code = grpo.main(["env=catch", f"output.dir={tmp_path}", "episode.sandbox=off", "show_progress=false",
                      "episode.options={rows: 3, columns: 3}", "grpo.steps=80", "grpo.budget_s=null",
                      "grpo.learning_rate=5e-5", "grpo.save_steps=1000", "eval.episodes=60",
                      # the sampled evaluations are the ones asserted; the greedy ones (twice as many games) are
                      # checked by the smoke test above
                      "eval.greedy=false", "eval.bootstrap_resamples=500", "pool.num_actors=1"])
    assert code == 0
    summary = json.loads((tmp_path / "grpo-catch" / "summary.json").read_text())
    gain = summary["steps"]["untrained->grpo"]
    assert gain["ci_low"] > 0, gain
    assert summary["phases"]["grpo"]["reward"]["mean"] >= 0.8, summary["phases"]
