"""How a captured turn was decoded: a beam-decoded turn is the model's most likely sequences, not a sample of the
policy, so no trainer may take it for one.

A beam turn's metadata holds ``beam_decoded``: the search's ``width`` and ``length_penalty``, this turn's ``rank``
among the beams (0 the best) and every beam returned (``text``, ``token_ids``, ``score``, ``cumulative_logprob``,
``finish_reason``), best first. Its row keeps no token data of its own (``rollout_type="eval"``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._errors import TraceError
from ._rows import TrainingTurn

__all__ = ["BEAM_DECODED", "BeamTurnNotTrainable", "beam_decoded", "refuse_beam_turns"]

#: The turn metadata key that marks a beam-decoded turn.
BEAM_DECODED = "beam_decoded"


class BeamTurnNotTrainable(TraceError, ValueError):
    """A trainer was handed a beam-decoded turn as if it were a sample of the policy."""


def beam_decoded(turn: TrainingTurn) -> dict[str, Any] | None:
    """The beam search that decoded ``turn`` (width, length penalty, rank, beams and scores), or None when sampled.

    >>> beam_decoded(TrainingTurn(node_id="a")) is None
    True
    """
    marked = turn.metadata.get(BEAM_DECODED)
    return marked if isinstance(marked, dict) else None


def refuse_beam_turns(turns: Iterable[TrainingTurn], where: str) -> None:
    """Raise :class:`BeamTurnNotTrainable` on the first beam-decoded turn of ``turns`` (``where``: who refuses).

    Raises:
        BeamTurnNotTrainable: a turn was beam-decoded.
    """
    for turn in turns:
        if beam_decoded(turn) is not None:
            raise BeamTurnNotTrainable(
                f"{where}: turn {turn.node_id} was beam-decoded (use_beam_search): its tokens are the model's most "
                "likely sequences, not a sample of the policy, and cannot be trained on as one; keep beam search for "
                "evaluation and sample the rollouts you train on")
