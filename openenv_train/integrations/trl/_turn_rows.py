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

__all__ = ["TrainedTurns", "TurnRow", "merge_turns", "turn_batch", "turn_rows"]


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


def merge_turns(turns: Sequence[TurnRow], advantages: torch.Tensor) -> tuple[list[TurnRow], torch.Tensor, list[int]]:
    """``turns`` (``advantages``: one per turn) with the identical ones (the same prompt, completion, decoding
    constraint and, to 1e-4, sampling logprobs) merged into one row: the merged rows, each one's advantage (the mean
    of its members') and its weight (how many turns it stands for).

    A loss that sums per-token terms over the batch (TRL's ``dapo`` and ``bnpo``) gets the same value and gradient
    from a merged row weighted ``k`` as from its ``k`` turns while the importance ratio is inside the clip range (on
    policy it is 1): the policy term is linear in the advantage, and the KL and entropy terms are the same for each
    member. Games of one seed repeat their states (catch's first board is every game's), so a batch trains on far
    fewer rows.

    >>> import torch
    >>> rows = [TurnRow(0, [1, 2], [3], [-0.5]), TurnRow(1, [1, 2], [3], [-0.5]), TurnRow(1, [1, 2], [4], [-0.9])]
    >>> merged, adv, weights = merge_turns(rows, torch.tensor([1.0, -0.5, -0.5]))
    >>> [(t.completion_ids, w) for t, w in zip(merged, weights)], adv.tolist()
    ([([3], 2), ([4], 1)], [0.25, -0.5])
    """
    import torch

    groups: dict[Any, int] = {}
    first: list[TurnRow] = []
    members: list[int] = []
    for t in turns:
        key = (tuple(t.prompt_ids), tuple(t.completion_ids), tuple(round(x, 4) for x in t.logprobs),
               tuple((k, tuple(ids.tolist())) for k, ids in t.allowed))
        if key not in groups:
            groups[key] = len(first)
            first.append(t)
        members.append(groups[key])
    index = torch.tensor(members, device=advantages.device, dtype=torch.long)
    counts = torch.bincount(index, minlength=len(first))
    summed = advantages.new_zeros((len(first), *advantages.shape[1:])).index_add_(0, index, advantages)
    shape = (-1, *([1] * (advantages.dim() - 1)))
    return first, summed / counts.to(advantages.dtype).view(shape), counts.tolist()


def turn_batch(turns: Sequence[TurnRow], advantages: torch.Tensor, *, pad_id: int, vocab: int,
               multiple: int = 1, merge: bool = False) -> dict[str, Any]:
    """The trainer's batch tensors for ``turns``: prompts left-padded, completions right-padded, each row with its
    episode's advantage, ``sampling_per_token_logps`` and, where a turn was constrained, ``allowed_mask``. Masked
    empty rows pad the row count to a multiple of ``multiple`` (the trainer splits a batch into that many).

    ``merge``: identical turns become one row (:func:`merge_turns`) whose weight rides on the loss mask TRL
    multiplies in (``tool_mask``; the attention mask stays 0/1), and ``num_items_in_batch`` still counts every
    turn's tokens: for a loss that sums per-token terms over the batch (``dapo``, ``bnpo``) only."""
    import torch

    device = advantages.device
    adv = advantages.index_select(0, torch.tensor([t.episode for t in turns], device=device, dtype=torch.long))
    weights: list[int] | None = None
    if merge:
        turns, adv, weights = merge_turns(turns, adv)
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
    adv = torch.cat([adv, adv.new_zeros((extra, *adv.shape[1:]))])
    out: dict[str, Any] = {"prompt_ids": prompt_ids.to(device), "prompt_mask": prompt_mask.to(device),
                           "completion_ids": completion_ids.to(device), "completion_mask": completion_mask.to(device),
                           "advantages": adv, "num_items_in_batch": completion_mask.sum().to(device),
                           "sampling_per_token_logps": logps.to(device)}
    if weights is not None:
        weight = torch.tensor(weights + [0] * extra, dtype=torch.float32).view(-1, 1) * completion_mask
        out["tool_mask"] = weight.to(device)
        out["num_items_in_batch"] = weight.sum().to(device)
    positions = [t.allowed for t in turns] + [[] for _ in range(extra)]
    if any(positions):
        out["allowed_mask"] = allowed_mask(positions, length, vocab, device)
    return out
