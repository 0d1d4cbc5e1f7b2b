"""Turn-level credit (MT-GRPO): each model turn's tokens get the episode's advantage plus the weighted advantage
of that turn's reward within its group; env tokens and unscored turns keep the episode's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openenv_train.integrations.trl import field_reward, grpo_trainer_class, make_rollout_func, turn_advantages
from openenv_train.pool import PoolConfig
from openenv_train.recipes.wordle import WordleAgent, consistency_turn_rewards, game_metrics

pytest.importorskip("trl", reason="trl is not installed")


def test_turn_advantages_normalise_each_turn_within_its_group() -> None:
    import torch

    turns = [[(0, 2, None), (3, 5, 1.0)], [(0, 2, None), (3, 5, 0.0)], [(0, 2, None), (3, 4, 1.0)],
             [(0, 1, 0.0)], [(0, 1, 1.0)]]  # two groups of 2, one of 1 (a turn scored alone has no baseline)
    adv = turn_advantages(torch.tensor([0.5, -0.5, 1.0, 2.0, 3.0]), turns, 2, 6, 2.0)
    a = 2.0 / 2 ** 0.5  # weight * (1 - 0.5) / std([1, 0])
    assert adv[0].tolist() == pytest.approx([0.5, 0.5, 0.5, 0.5 + a, 0.5 + a, 0.5])
    assert adv[1].tolist() == pytest.approx([-0.5, -0.5, -0.5, -0.5 - a, -0.5 - a, -0.5])
    assert adv[2].tolist() == pytest.approx([1.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # its group-mate has no second turn
    assert adv[3].tolist() == pytest.approx([2.0] * 6)  # its group-mate (row 4) has a reward: 1.0 vs 0.0
    assert adv[4].tolist() == pytest.approx([3.0] * 6)


def test_consistency_turn_rewards_score_each_guess_against_the_marks_before_it() -> None:
    from openenv_train.envs.wordle import feedback
    from openenv_train.trace import TraceRow

    made: list[str] = []

    def step(guess: str, refused: bool = False) -> dict[str, Any]:
        if not refused:
            made.append(guess)
        return {"action": {"message": guess}, "reward": 0.0, "done": False,
                "observation": {"guesses": list(made), "feedback": [feedback(g, "fluid") for g in made],
                                "invalid_move": "not a valid word" if refused else None}}

    # stale: XXXYX (an l, not 4th; no s, t, a, e); lurid fits; xxxxx is refused; crane has an a: does not fit
    row = TraceRow(env={"name": "wordle"}, episode_id="e",
                   steps=[step("stale"), step("lurid"), step("xxxxx", refused=True), step("crane")])
    # the first move is a fixed opening of one word: no reward
    assert consistency_turn_rewards(1)(row) == [None, 1.0, 0.0, 0.0]
    assert consistency_turn_rewards(0)(row) == [1.0, 1.0, 0.0, 0.0]
    assert game_metrics(row)["invalid_rate"] == 0.25


def _one_step(tmp_path: Path, agent: Any, turn_rewards: Any, *, seed: int, prefix: str = "",
              **credit: Any) -> tuple[Any, Any, Any]:
    """One GRPO step of the tiny char model on two Wordle secrets (4 games each, 3 moves at most); the rollout
    function, and the advantages and model-token mask the trainer's loss received."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny", tokenizer="char", init_range=0.2)
    rollout = make_rollout_func("wordle", agent=agent, turn_rewards=turn_rewards, per_turn_tokens=8,
                                config=PoolConfig(num_actors=1, max_turns=3, run_id=f"credit-{seed}"),
                                episode_prefix=prefix)
    seen: list[tuple[Any, Any]] = []

    class Recording(grpo_trainer_class()):  # type: ignore[misc]
        def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
            seen.append((inputs["advantages"], inputs["completion_mask"] * inputs["tool_mask"]))
            return super()._compute_loss(model, inputs)

    config = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_generations=4,
                        max_completion_length=48, max_steps=1, bf16=False, report_to=[], logging_steps=1,
                        use_cpu=True, save_strategy="no", disable_tqdm=True, learning_rate=1e-3, seed=seed,
                        temperature=1.0)
    dataset = Dataset.from_list([{"prompt": '{"task": "crane"}'}, {"prompt": '{"task": "moist"}'}])
    trainer = Recording(model=AutoModelForCausalLM.from_pretrained(path), processing_class=AutoTokenizer.from_pretrained(path),
                        reward_funcs=[field_reward("env")], args=config, train_dataset=dataset, rollout_func=rollout,
                        allowed_from=rollout, **credit)
    try:
        trainer.train()
    finally:
        rollout.close()
    (adv, mask), = seen
    return rollout, adv, mask


@pytest.mark.timeout(300)
def test_the_trainer_adds_each_turns_advantage_to_its_tokens(tmp_path: Path) -> None:
    import torch

    def early_letter(row: Any) -> list[float | None]:  # any per-turn score that varies between games
        return [None if i == 0 else float(str(s.action.get("message", "m")) < "m")
                for i, s in enumerate(s for s in row.steps if s.action)]

    def varied(turns: list[list[tuple[int, int, float | None]]]) -> bool:
        """Some group's games (rows 0-3, 4-7) scored one of their turns differently: a batch that can show it."""
        return any(len({turns[g + k][t][2] for k in range(4)}) > 1 for g in (0, 4) for t in (1, 2)
                   if all(len(turns[g + k]) > t for k in range(4)))

    # sampled games can score every turn of a group alike (then no turn reward can move an advantage): the check
    # needs a batch whose scores differ, so the next seed plays until one does
    for seed in (3, 4, 5, 6):
        rollout, adv, mask = _one_step(tmp_path / f"seed-{seed}", WordleAgent(constrained=True), early_letter,
                                       seed=seed, credit="turn", turn_reward_weight=0.5)
        if varied(rollout.last_turns):
            break
    turns = rollout.last_turns
    assert varied(turns), f"four seeds scored every turn of each group alike: {turns}"
    # the char model writes 5 letters and an end token each turn: every game has the same token layout
    assert len(turns) == 8 and all([t[:2] for t in row] == [t[:2] for t in turns[0]] and len(row) == 3 for row in turns)
    assert adv.dim() == 2
    moved = 0
    for b in range(adv.size(0)):  # TRL shuffled the rows: find each one's turns as the runs of its model tokens
        on = torch.nonzero(mask[b]).flatten().tolist()
        runs = [[p for p in on if start <= p < end] for start, end, _ in turns[0]]
        assert sum(map(len, runs)) == len(on) and all(runs), (on, turns[0])
        first = adv[b, runs[0][0]]  # the unscored first turn: the episode's advantage alone
        assert torch.allclose(adv[b, runs[0]], first) and torch.allclose(adv[b, mask[b] == 0], first)
        for run in runs[1:]:
            assert torch.allclose(adv[b, run], adv[b, run[0]])  # one value per turn
            moved += not torch.isclose(adv[b, run[0]], first)
    assert moved > 0, "no turn's reward moved its advantage"


@pytest.mark.timeout(300)
def test_branching_groups_credit_only_the_explored_move_against_the_greedy_game(tmp_path: Path) -> None:
    import torch

    from openenv_train.recipes.wordle import BranchPlan, explored_turns

    plan = BranchPlan(first=1, moves=3)  # game 0 greedy; games 1, 2, 3 sample move 1, 2, 1
    rollout, adv, mask = _one_step(tmp_path, WordleAgent(constrained=True, branch=plan), explored_turns(plan), seed=5,
                                   prefix="grpo-", credit="branch")
    rows = rollout.last_rows
    guesses = [[str(s.action.get("message")) for s in r.steps if s.action] for r in rows]
    for g in (0, 4):
        greedy = guesses[g]
        for k in (1, 2, 3):
            move = plan.explored(rows[g + k].episode_id)
            assert move is not None and guesses[g + k][:move] == greedy[:move]  # greedy until the explored move
    # sampled moves leave the greedy game somewhere (a random model spreads its probability over many words)
    assert any(guesses[g + k] != guesses[g] for g in (0, 4) for k in (1, 2, 3))
    explored = [sum(end - first for first, end, r in t if r is not None) for t in rollout.last_turns]
    assert [n > 0 for n in explored] == [False, True, True, True] * 2
    for b in range(adv.size(0)):
        nonzero = torch.nonzero(adv[b]).flatten().tolist()
        assert len(nonzero) in explored or not nonzero  # the explored move's tokens only (or a tie with greedy)
        assert torch.all(mask[b, nonzero] == 1)
        if nonzero:
            assert torch.allclose(adv[b, nonzero], adv[b, nonzero[0]])
    # each branch's advantage has the sign of its reward minus its group's greedy game's
    rewards = [float(r.reward or 0.0) for r in rows]
    signs = sorted(int(torch.sign(adv[b].sum()).item()) for b in range(adv.size(0)))
    expected = sorted([0] * 2 + [int((rewards[g + k] > rewards[g]) - (rewards[g + k] < rewards[g]))
                                 for g in (0, 4) for k in (1, 2, 3)])
    assert signs == expected
