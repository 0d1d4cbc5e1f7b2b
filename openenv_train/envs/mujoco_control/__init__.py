"""The dm_control env: MuJoCo continuous control through dm_control's suite (OpenEnv dm_control_env's shapes);
needs ``[mujoco]``."""

from ._env import DMControlEnvironment
from ._gl import RenderingUnavailable, gl_backend
from ._models import DMControlAction, DMControlObservation, DMControlState
from .client import DMControlEnv

__all__ = ["DMControlAction", "DMControlEnv", "DMControlEnvironment", "DMControlObservation", "DMControlState",
           "RenderingUnavailable", "gl_backend"]
