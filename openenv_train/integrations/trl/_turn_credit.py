"""Turn-level credit for multi-turn GRPO: a reward per model turn, and per-token advantages built from it.

GRPO gives every token of an episode the same advantage: its outcome reward against the group's. In a game of
several turns that dilutes the signal of one bad move over the whole episode. With a reward per turn (e.g. "this
guess fits every mark so far"), each turn's tokens also get that turn's reward against the group's rewards at the
same turn, as MT-GRPO does (Zeng et al. 2025, "Reinforcing Multi-Turn Reasoning in LLM Agents via Turn-Level
Credit Assignment"): ``A[token of turn i] = A_outcome + weight * A_turn_i``, each normalised within its group.

Branching groups credit one turn per episode: the group's first episode is a reference (e.g. the greedy policy's
game) and every other one differs from it in one explored turn (the turn with a reward); that turn's tokens get
the episode's advantage minus the reference's, every other token none. This is ReMax's greedy baseline (Li et al.
2023) applied per branch, as VinePPO's Monte-Carlo branches from the states a policy visits (Kazemnejad et al.
2024): it scores the moves the greedy policy would make against the ones sampling found.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ...trace import TraceRow
from .._flatten import flatten_turns

if TYPE_CHECKING:
    import torch

__all__ = ["TurnCredit", "TurnRewards", "branch_advantages", "turn_advantages", "turn_credit"]

#: ``turn_rewards(row)``: one reward per captured model turn of ``row`` (None: that turn has none).
TurnRewards = Callable[[TraceRow], Sequence[float | None]]

#: (first, end) completion positions of one model turn's tokens, and its reward (None: none).
TurnCredit = tuple[int, int, float | None]


def turn_credit(row: TraceRow, rewards: Sequence[float | None], limit: int | None = None) -> list[TurnCredit]:
    """Each flattened model turn of ``row`` as (first, end, reward), positions as
    :func:`~openenv_train.integrations.trl.rollout_fields` lays the episode out, cut at ``limit``.

    ``rewards`` has one entry per captured turn; turns past it (or past the flattened ones) get None.
    """
    flat = flatten_turns(row.trace.turns)
    out = []
    for i, start in enumerate(flat.turn_starts):
        end = start + len(row.trace.turns[i].completion_token_ids)
        if limit is not None:
            start, end = min(start, limit), min(end, limit)
        if end > start:
            out.append((start, end, rewards[i] if i < len(rewards) else None))
    return out


def turn_advantages(outcome: torch.Tensor, turns: Sequence[Sequence[TurnCredit]], group_size: int, length: int,
                    weight: float) -> torch.Tensor:
    """(rows, length) advantages: ``outcome`` (one per row) on every token, plus ``weight`` times the turn's
    reward normalised over the group's rewards at the same turn index (mean 0, std 1; 0 where fewer than two rows
    of the group have a reward there, or all are equal).

    >>> import torch
    >>> adv = turn_advantages(torch.zeros(2), [[(0, 2, 1.0)], [(0, 1, 0.0)]], 2, 3, 1.0)
    >>> [[round(x, 2) for x in row] for row in adv.tolist()]
    [[0.71, 0.71, 0.0], [-0.71, 0.0, 0.0]]
    """
    import torch

    adv = outcome.reshape(-1, 1).repeat(1, length).float()
    for g in range(0, len(turns), group_size):
        group = turns[g:g + group_size]
        for i in range(max((len(t) for t in group), default=0)):
            scored = [(g + b, t[i]) for b, t in enumerate(group) if i < len(t) and t[i][2] is not None]
            if len(scored) < 2:
                continue
            values = torch.tensor([float(c[2]) for _, c in scored])  # type: ignore[arg-type]
            std = values.std()
            if std < 1e-6:
                continue
            for (row, (first, end, _)), a in zip(scored, ((values - values.mean()) / std).tolist(), strict=True):
                adv[row, first:min(end, length)] += weight * a
    return adv.to(outcome.device)


def branch_advantages(outcome: torch.Tensor, turns: Sequence[Sequence[TurnCredit]], group_size: int,
                      length: int) -> torch.Tensor:
    """(rows, length) advantages of branching groups: each group's row 0 is the reference; in every other row the
    turns with a reward (the explored one) get ``outcome[row] - outcome[reference]``; all other tokens 0.

    >>> import torch
    >>> branch_advantages(torch.tensor([0.5, 1.5, -1.0]), [[], [(1, 3, 1.0)], [(0, 1, 1.0)]], 3, 4).tolist()
    [[0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0], [-1.5, 0.0, 0.0, 0.0]]
    """
    import torch

    adv = torch.zeros(len(turns), length)
    for row, credits in enumerate(turns):
        reference = row - row % group_size
        if row == reference:
            continue
        for first, end, reward in credits:
            if reward is not None:
                adv[row, first:min(end, length)] = float(outcome[row] - outcome[reference])
    return adv.to(outcome.device)
