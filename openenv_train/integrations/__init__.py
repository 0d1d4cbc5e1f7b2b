"""Trainer adapters: TRL, SkyRL, ART, Miles, verifiers, Oumi, Unsloth (guide: docs/guides/training.md).

- :mod:`openenv_train.integrations.trl`: GRPOTrainer ``rollout_func``, reward functions, SFT datasets.
- :mod:`openenv_train.integrations.skyrl`: trace rows -> SkyRL generator output; any env as a SkyRL
  ``BaseTextEnv`` (:func:`~openenv_train.integrations.skyrl.register_skyrl_env`).
- :mod:`openenv_train.integrations.art`: trace rows -> ``art.Trajectory``/``TrajectoryGroup``, and
  :func:`~openenv_train.integrations.art.make_art_rollout` for ART's training loop (ART imported lazily).
- :mod:`openenv_train.integrations.miles`: any env as Miles' custom agent function
  (:func:`~openenv_train.integrations.miles.make_miles_agent_function`) and reward function, captured episodes as
  Miles ``Sample`` objects; a torchforge recipe in its docstring (``miles`` imported lazily).
- :mod:`openenv_train.integrations.verifiers`: any env as a verifiers (v1) taskset and ``Env``, and
  ``openenv-train export verifiers ENV DIR`` as an installable environment package for ``vf-eval``/prime-rl
  (``verifiers`` imported lazily).
- :mod:`openenv_train.integrations.oumi`: any env as an Oumi GRPO rollout function and reward functions in Oumi's
  registry (:func:`~openenv_train.integrations.oumi.register_oumi`; ``oumi`` imported lazily).
- :mod:`openenv_train.integrations.unsloth`: ``load_model`` with Unsloth on a GPU, else plain transformers.
- :mod:`openenv_train.integrations.openenv_traces`: traces both ways with OpenEnv's harness (collect jsonl in,
  TrainingTrace out).
- :class:`LocalRunner`: episodes in this process (no Ray) against a live model served with capture.
- :func:`flatten_turns`: an episode's turns as one prompt + completion with an env mask.
"""

from ._discover import action_schema, mcp_tools
from ._flatten import FlatEpisode, flatten_turns
from ._runner import LocalRunner

__all__ = [
    "FlatEpisode",
    "LocalRunner",
    "action_schema",
    "flatten_turns",
    "mcp_tools",
]
