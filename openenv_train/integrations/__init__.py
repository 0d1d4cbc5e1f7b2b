"""Trainer adapters: TRL, SkyRL, ART, Unsloth (see DESIGN.md).

- :mod:`openenv_train.integrations.trl`: GRPOTrainer ``rollout_func``, reward functions, SFT datasets.
- :mod:`openenv_train.integrations.skyrl`: trace rows -> SkyRL generator output.
- :mod:`openenv_train.integrations.art`: trace rows -> ``art.Trajectory``/``TrajectoryGroup`` (ART imported lazily).
- :class:`LocalRunner`: episodes in this process (no Ray) against a live model served with capture.
- :func:`flatten_turns`: an episode's turns as one prompt + completion with an env mask.
"""

from ._flatten import FlatEpisode, flatten_turns
from ._runner import LocalRunner

__all__ = ["FlatEpisode", "LocalRunner", "flatten_turns"]
