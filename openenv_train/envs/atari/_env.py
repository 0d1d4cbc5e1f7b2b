"""AtariEnvironment: an Atari 2600 game through ale-py (ROMs in the wheel), OpenEnv atari_env's shapes."""

from __future__ import annotations

import base64
import html
import uuid
from importlib import resources
from typing import Annotated, Any, Literal

from pydantic import Field

from ...core import did_you_mean
from ...server import Environment
from ..png import encode_png, png_data_url
from ._models import AtariAction, AtariObservation, AtariState

__all__ = ["AtariEnvironment"]

ObsType = Literal["rgb", "grayscale", "ram"]
ScreenFormat = Literal["png", "list"]
FrameSkip = Annotated[int, Field(ge=1, le=16, description="Emulator frames per step (the action repeats).")]
Sticky = Annotated[float, Field(ge=0.0, le=1.0, description="Chance each frame repeats the previous action.")]
MAX_FRAMES = 108_000
"""Frames before an episode is cut (30 minutes of play at 60 Hz, the usual ALE cap)."""


def _ale() -> Any:
    import ale_py

    return ale_py


class AtariEnvironment(Environment[AtariAction, AtariObservation, AtariState]):
    """An Atari 2600 game in the Arcade Learning Environment (``ale-py``, ROMs shipped in its wheel).

    ``reset`` picks the game (``game_name``, default ``pong``), the observation (``obs_type``: rgb, grayscale or
    ram), the frame skip, sticky actions (``repeat_action_probability``, default 0.25 as in Machado et al.) and
    the action set; the seed seeds the emulator's randomness. Frames travel as base64 PNGs (a few KiB) unless
    ``screen_format='list'`` asks for OpenEnv's flat list of ints.

    Args:
        game_name: default game (an ale-py ROM id such as ``pong``, ``breakout``, ``space_invaders``).
    """

    name = "atari"
    action_type = AtariAction
    observation_type = AtariObservation
    state_type = AtariState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")

    def __init__(self, *, game_name: str = "pong") -> None:
        self._game = game_name
        self._ale: Any = None
        self._actions: list[Any] = []
        self._obs_type: ObsType = "rgb"
        self._format: ScreenFormat = "png"
        self._state = AtariState()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              game_name: str | None = None, obs_type: ObsType = "rgb", screen_format: ScreenFormat = "png",
              frameskip: FrameSkip = 4, repeat_action_probability: Sticky = 0.25,
              full_action_space: bool = False) -> AtariObservation:
        """Load a game and start an episode.

        Raises:
            ValueError: an unknown game (close matches suggested).
        """
        ale_py = _ale()
        game = game_name or self._game
        games = ale_py.roms.get_all_rom_ids()
        if game not in games:
            raise ValueError(f"no Atari game {game!r}{did_you_mean(game, games, otherwise='.')} "
                             f"Known: {', '.join(sorted(games))}")
        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
        ale = ale_py.ALEInterface()
        ale.setInt("random_seed", (seed if seed is not None else uuid.uuid4().int) % 2**31)
        ale.setFloat("repeat_action_probability", float(repeat_action_probability))
        ale.setInt("frame_skip", int(frameskip))
        ale.setInt("max_num_frames_per_episode", MAX_FRAMES)
        ale.loadROM(ale_py.roms.get_rom_path(game))
        self._ale = ale
        self._actions = list(ale.getLegalActionSet() if full_action_space else ale.getMinimalActionSet())
        self._obs_type, self._format = obs_type, screen_format
        self._state = AtariState(episode_id=episode_id or uuid.uuid4().hex, game_name=game, obs_type=obs_type,
                                 frameskip=frameskip, repeat_action_probability=repeat_action_probability)
        return self._observation(reward=0.0)

    def step(self, action: AtariAction) -> AtariObservation:  # type: ignore[override]
        """Play ``action.action_id`` for ``frameskip`` frames (sticky actions may repeat the previous one)."""
        ale = self._ale
        if ale is None:
            return AtariObservation(error="no game is running; call reset() first")
        if ale.game_over():
            return self._observation(error="the episode is over; call reset() to start another", reward=0.0)
        if not 0 <= action.action_id < len(self._actions):
            return self._observation(error=f"action_id {action.action_id} is out of range: legal_actions are 0.."
                                           f"{len(self._actions) - 1} ({', '.join(self._meanings())})", reward=0.0)
        reward = float(ale.act(self._actions[action.action_id]))
        self._state.step_count += 1
        self._state.episode_return += reward
        return self._observation(reward=reward)

    @staticmethod
    def render_observation(observation: dict[str, Any]) -> str | None:
        """The screen as an image (scaled up, pixels kept sharp) with the score and lives; None without a PNG."""
        src = png_data_url(observation.get("screen_png"))
        if src is None:
            return None
        frame = int(observation.get("episode_frame_number") or 0)
        lives = observation.get("lives")
        score = html.escape(f"score {observation.get('episode_return', 0)}" + (f" · lives {lives}" if lives else ""))
        return (f'<figure style="margin:0"><img alt="Atari screen" data-frame="{frame}" width="320" height="420" '
                f'style="image-rendering:pixelated;background:#000" src="{src}">'
                f'<figcaption style="font:12px monospace">{score}</figcaption></figure>')

    def _meanings(self) -> list[str]:
        return [a.name for a in self._actions]

    def _observation(self, **fields: Any) -> AtariObservation:
        ale, obs_type = self._ale, self._obs_type
        if obs_type == "ram":
            image, shape = ale.getRAM(), [128]
        else:
            image = ale.getScreenRGB() if obs_type == "rgb" else ale.getScreenGrayscale()
            shape = list(image.shape)
        screen: dict[str, Any] = {"screen": image.reshape(-1).tolist()}
        if obs_type != "ram" and self._format == "png":
            png = encode_png(image.tobytes(), shape[1], shape[0], 3 if obs_type == "rgb" else 1)
            screen = {"screen_png": base64.b64encode(png).decode("ascii")}
        return AtariObservation(
            **screen, screen_shape=shape, legal_actions=list(range(len(self._actions))),
            action_meanings=self._meanings(), lives=ale.lives(), episode_frame_number=ale.getEpisodeFrameNumber(),
            frame_number=ale.getFrameNumber(), episode_return=self._state.episode_return, done=ale.game_over(),
            **fields)

    @property
    def state(self) -> AtariState:
        return self._state
