"""Flatten an episode's captured turns into one prompt and one completion with an env mask (multi-turn GRPO).

Turn ``i+1``'s prompt starts with turn ``i``'s prompt and completion (the policy endpoint reuses the exact
ids of earlier turns); what follows them is what the env (or the agent loop) added between the two model
turns. So an episode is ``prompt = P0`` and ``completion = C0 + E0 + C1 + E1 + ... + Cn`` with ``env_mask``
1 on model tokens and 0 on env tokens, and ``logprobs`` the sampled logprobs (0.0 on env tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..trace import TrainingTurn, refuse_beam_turns

__all__ = ["FlatEpisode", "flatten_turns"]


@dataclass
class FlatEpisode:
    """One episode as a trainer sees it; the four lists of the completion have equal lengths."""

    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    turns_used: int = 0
    """Turns flattened; fewer than captured when a later prompt does not extend the earlier ones."""
    turn_starts: list[int] = field(default_factory=list)
    """Where each flattened turn's completion tokens begin in ``completion_ids``."""


def flatten_turns(turns: Sequence[TrainingTurn]) -> FlatEpisode:
    """The prompt, completion, logprobs and env mask of an episode's turns (in order).

    A turn whose prompt does not start with everything before it (a chat template that rewrites history)
    ends the flattening there: what was kept is still exactly what the model saw and sampled.

    Raises:
        BeamTurnNotTrainable: a turn was beam-decoded (``use_beam_search``): not a sample of the policy.

    >>> from openenv_train.trace import TrainingTurn
    >>> t0 = TrainingTurn(node_id="a", prompt_token_ids=[1, 2], completion_token_ids=[3], per_token_logps=[-0.5])
    >>> t1 = TrainingTurn(node_id="b", prompt_token_ids=[1, 2, 3, 9], completion_token_ids=[4], per_token_logps=[-1.0])
    >>> flat = flatten_turns([t0, t1])
    >>> flat.prompt_ids, flat.completion_ids, flat.env_mask, flat.logprobs, flat.turn_starts
    ([1, 2], [3, 9, 4], [1, 0, 1], [-0.5, 0.0, -1.0], [0, 2])
    """
    refuse_beam_turns(turns, "flatten_turns")
    flat = FlatEpisode()
    if not turns:
        return flat
    flat.prompt_ids = list(turns[0].prompt_token_ids)
    seen = list(flat.prompt_ids)
    for i, turn in enumerate(turns):
        prompt = list(turn.prompt_token_ids)
        if i > 0:
            if prompt[: len(seen)] != seen:
                break
            between = prompt[len(seen):]
            flat.completion_ids += between
            flat.logprobs += [0.0] * len(between)
            flat.env_mask += [0] * len(between)
        completion = list(turn.completion_token_ids)
        logps = [float(x) for x in turn.per_token_logps]
        if len(logps) != len(completion):
            logps = (logps + [0.0] * len(completion))[: len(completion)]
        flat.turn_starts.append(len(flat.completion_ids))
        flat.completion_ids += completion
        flat.logprobs += logps
        flat.env_mask += [1] * len(completion)
        seen = prompt + completion
        flat.turns_used = i + 1
    return flat
