"""The Atari env: Atari 2600 games through ale-py (OpenEnv atari_env's shapes); needs ``[atari]``."""

from ..png import encode_png
from ._env import AtariEnvironment
from ._models import AtariAction, AtariObservation, AtariState
from .client import AtariEnv

__all__ = ["AtariAction", "AtariEnv", "AtariEnvironment", "AtariObservation", "AtariState", "encode_png"]
