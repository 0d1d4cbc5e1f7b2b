"""Small grid worlds with text and array observations: maze, grid_world and snake."""

from ._common import DIRECTIONS, Direction, GridAction, GridObservation, shortest_path
from ._grid_world import GridWorldAction, GridWorldEnvironment, GridWorldObservation, GridWorldState, parse_layout
from ._maze import MazeAction, MazeEnvironment, MazeObservation, MazeState, generate_maze
from ._render import Cell, render_text
from ._snake import SnakeAction, SnakeEnvironment, SnakeObservation, SnakeState
from .client import GridWorldEnv, MazeEnv, SnakeEnv

__all__ = [
    "DIRECTIONS",
    "Cell",
    "Direction",
    "GridAction",
    "GridObservation",
    "GridWorldAction",
    "GridWorldEnv",
    "GridWorldEnvironment",
    "GridWorldObservation",
    "GridWorldState",
    "MazeAction",
    "MazeEnv",
    "MazeEnvironment",
    "MazeObservation",
    "MazeState",
    "SnakeAction",
    "SnakeEnv",
    "SnakeEnvironment",
    "SnakeObservation",
    "SnakeState",
    "generate_maze",
    "parse_layout",
    "render_text",
    "shortest_path",
]
