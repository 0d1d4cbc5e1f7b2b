"""The traffic env: a signalised intersection in SUMO through libsumo (OpenEnv sumo_rl_env's shapes, sumo-rl's
observation and rewards); needs ``[traffic]``."""

from ._env import TrafficEnvironment, bundled_network
from ._models import SumoAction, SumoObservation, SumoState
from ._process import SimulationDied, sumo_home
from .client import SumoRLEnv

__all__ = ["SimulationDied", "SumoAction", "SumoObservation", "SumoRLEnv", "SumoState", "TrafficEnvironment",
           "bundled_network", "sumo_home"]
