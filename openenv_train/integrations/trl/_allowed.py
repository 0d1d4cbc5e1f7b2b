"""Which tokens a constrained turn allowed at each completion position, and those positions as a dense mask.

Both layouts of a GRPO batch need them: one row per episode (:mod:`._constrained`) and one row per model turn
(:mod:`._turn_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ...trace import TraceRow
from .._flatten import flatten_turns

if TYPE_CHECKING:
    import torch

__all__ = ["AllowedTokens", "allowed_mask", "constrained_positions"]

#: ``allowed_tokens(prompt_ids, completion_ids)``: the allowed ids at each completion token of a turn, or None.
AllowedTokens = Callable[[Sequence[int], Sequence[int]], "list[torch.Tensor] | None"]


def constrained_positions(row: TraceRow, allowed_tokens: AllowedTokens,
                          limit: int | None = None) -> list[tuple[int, torch.Tensor]]:
    """(position in the flattened completion, allowed ids) for every constrained model token of ``row``'s turns,
    as :func:`~openenv_train.integrations.trl.rollout_fields` lays the episode out; positions past ``limit`` are
    left out (a completion cut to the trainer's length)."""
    flat = flatten_turns(row.trace.turns)
    found = []
    for turn, start in zip(row.trace.turns[: flat.turns_used], flat.turn_starts, strict=True):
        allowed = allowed_tokens(turn.prompt_token_ids, turn.completion_token_ids)
        for k, ids in enumerate(allowed or ()):
            if limit is None or start + k < limit:
                found.append((start + k, ids))
    return found


def allowed_mask(positions: Sequence[Sequence[tuple[int, torch.Tensor]]], length: int, vocab: int,
                 device: torch.device) -> torch.Tensor:
    """A (rows, length, vocab) bool mask: True where a token is allowed (everywhere at unconstrained positions)."""
    import torch

    mask = torch.ones(len(positions), length, vocab, dtype=torch.bool)
    for b, row in enumerate(positions):
        for pos, ids in row:
            if pos < length:
                mask[b, pos] = False
                mask[b, pos, ids] = True
    return mask.to(device)
