"""Typed clients of the grid worlds."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._grid_world import GridWorldAction, GridWorldObservation, GridWorldState
from ._maze import MazeAction, MazeObservation, MazeState
from ._snake import SnakeAction, SnakeObservation, SnakeState

__all__ = ["GridWorldEnv", "MazeEnv", "SnakeEnv"]


class MazeEnv(TypedEnvClient[MazeAction, MazeObservation, MazeState], env="maze"):
    """Client of the maze env."""


class GridWorldEnv(TypedEnvClient[GridWorldAction, GridWorldObservation, GridWorldState], env="grid_world"):
    """Client of the grid_world env."""


class SnakeEnv(TypedEnvClient[SnakeAction, SnakeObservation, SnakeState], env="snake"):
    """Client of the snake env."""
