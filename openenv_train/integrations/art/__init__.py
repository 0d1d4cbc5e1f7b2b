"""ART (openpipe-art) adapters: trace rows as ``art.Trajectory`` / ``TrajectoryGroup``, and a rollout function.

- :func:`to_art_trajectory_fields`: the keyword arguments of ``art.Trajectory`` for a row (pure data).
- :func:`to_art_trajectory`, :func:`to_art_groups`: the ART objects; captured turns become trainable
  ``Choice`` objects carrying the exact sampled token ids and logprobs.
- :func:`make_art_rollout`: ``await rollout(model, scenario) -> art.Trajectory`` playing one episode of any env
  with the ART model's OpenAI client, captured by our policy endpoint when it serves the model.

``art`` is imported only when an object is built (``pip install 'openpipe-art==0.5.18'``, not its
``[backend]`` extra, which pins older trl/transformers than this project).
"""

from ._convert import to_art_choice, to_art_groups, to_art_trajectory, to_art_trajectory_fields
from ._import import import_art
from ._rollout import ArtRollout, ArtRolloutError, make_art_rollout

__all__ = ["ArtRollout", "ArtRolloutError", "import_art", "make_art_rollout", "to_art_choice", "to_art_groups",
           "to_art_trajectory", "to_art_trajectory_fields"]
