"""One training row per model turn, under the exact prompt the turn was sampled from.

The usual layout joins an episode's turns into one completion, which needs each turn's prompt to extend everything
before it. An agent that shows the model only the current state (a board game's position, not the moves that led
there) breaks that: each prompt starts afresh. Such episodes are trained turn by turn instead, as verl's and SkyRL's
step-wise multi-turn training does: each model turn is a row of its own (its prompt, its completion, its sampling
logprobs and decoding masks) with its episode's advantage, so every token is scored under what the model saw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...trace import TraceRow, refuse_beam_turns
from ._allowed import AllowedTokens, allowed_mask

if TYPE_CHECKING:
    import torch

__all__ = ["TrainedTurns", "TurnRow", "turn_batch", "turn_rows"]


@dataclass
class TurnRow:
    """One model turn as a training row."""

    episode: int
    """Index of its episode in the batch (whose advantage it takes)."""
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    """Sampling logprobs of the completion tokens."""
    allowed: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    """(completion position, allowed ids) of each token sampled under a decoding constraint."""


#: ``trained(row) -> turns``: the model turns of a row that are trained (e.g. an agent's main line of calls).
TrainedTurns = Callable[[TraceRow], Sequence[Any]]


def turn_rows(rows: Sequence[TraceRow], allowed_tokens: AllowedTokens | None = None,
              limit: int | None = None, trained: TrainedTurns | None = None) -> list[TurnRow]:
    """Every model turn of ``rows`` (or the ones ``trained`` picks) as a :class:`TurnRow`, in order; completions cut
    to ``limit`` tokens.

    >>> from types import SimpleNamespace
    >>> from openenv_train.trace import TrainingTurn
    >>> turns = [TrainingTurn(node_id="a", prompt_token_ids=[1, 2], completion_token_ids=[3], per_token_logps=[-0.5]),
    ...          TrainingTurn(node_id="b", prompt_token_ids=[1, 5], completion_token_ids=[4], per_token_logps=[-1.0])]
    >>> row = SimpleNamespace(trace=SimpleNamespace(turns=turns))
    >>> [(t.episode, t.prompt_ids, t.completion_ids) for t in turn_rows([row])]
    [(0, [1, 2], [3]), (0, [1, 5], [4])]

    Raises:
        BeamTurnNotTrainable: a turn was beam-decoded (``use_beam_search``): not a sample of the policy.
    """
    out = []
    for i, row in enumerate(rows):
        refuse_beam_turns(row.trace.turns, "turn_rows")
        for turn in (row.trace.turns if trained is None else trained(row)):
            completion = list(turn.completion_token_ids)[:limit]
            if not completion:
                continue
            logps = [float(x) for x in turn.per_token_logps]
            logps = (logps + [0.0] * len(completion))[: len(completion)]
            allowed = allowed_tokens(turn.prompt_token_ids, turn.completion_token_ids) if allowed_tokens else None
            out.append(TurnRow(i, list(turn.prompt_token_ids), completion, logps,
                               [(k, ids) for k, ids in enumerate(allowed or ()) if k < len(completion)]))
    return out


def turn_batch(turns: Sequence[TurnRow], advantages: torch.Tensor, *, pad_id: int, vocab: int,
               multiple: int = 1) -> dict[str, Any]:
    """The trainer's batch tensors for ``turns``: prompts left-padded, completions right-padded, each row with its
    episode's advantage, ``sampling_per_token_logps`` and, where a turn was constrained, ``allowed_mask``. Masked
    empty rows pad the row count to a multiple of ``multiple`` (the trainer splits a batch into that many)."""
    import torch

    device = advantages.device
    extra = (-len(turns)) % multiple
    prompt_len = max(len(t.prompt_ids) for t in turns)
    length = max(len(t.completion_ids) for t in turns)
    n = len(turns) + extra
    prompt_ids = torch.full((n, prompt_len), pad_id, dtype=torch.long)
    prompt_mask = torch.zeros((n, prompt_len), dtype=torch.long)
    completion_ids = torch.full((n, length), pad_id, dtype=torch.long)
    completion_mask = torch.zeros((n, length), dtype=torch.long)
    logps = torch.zeros((n, length))
    for r, t in enumerate(turns):
        p, c = len(t.prompt_ids), len(t.completion_ids)
        prompt_ids[r, prompt_len - p:] = torch.tensor(t.prompt_ids)
        prompt_mask[r, prompt_len - p:] = 1
        completion_ids[r, :c] = torch.tensor(t.completion_ids)
        completion_mask[r, :c] = 1
        logps[r, :c] = torch.tensor(t.logprobs)
    index = torch.tensor([t.episode for t in turns], device=device, dtype=torch.long)
    adv = advantages.index_select(0, index)
    adv = torch.cat([adv, adv.new_zeros((extra, *adv.shape[1:]))])
    out: dict[str, Any] = {"prompt_ids": prompt_ids.to(device), "prompt_mask": prompt_mask.to(device),
                           "completion_ids": completion_ids.to(device), "completion_mask": completion_mask.to(device),
                           "advantages": adv, "num_items_in_batch": completion_mask.sum().to(device),
                           "sampling_per_token_logps": logps.to(device)}
    positions = [t.allowed for t in turns] + [[] for _ in range(extra)]
    if any(positions):
        out["allowed_mask"] = allowed_mask(positions, length, vocab, device)
    return out
