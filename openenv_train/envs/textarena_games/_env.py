"""TextArenaEnvironment: a single-player TextArena game, seeded, behind the typed protocol."""

from __future__ import annotations

import contextlib
import io
import random
import re
import threading
import uuid
from collections.abc import Iterator
from importlib import resources
from typing import Any, ClassVar

from ...server import Environment
from .._textarena_table import TEXTARENA_GAMES, TextArenaGame
from ._models import TextArenaAction, TextArenaObservation, TextArenaState

__all__ = ["TextArenaEnvironment", "textarena_env"]

_README = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")


try:
    # Imported with the env class, so a server pays the seconds it takes at start, not in its first reset.
    import textarena as _TA
except ImportError:  # the catalog names the extra before importing; direct use gets the same line from reset
    _TA = None


def _textarena() -> Any:
    if _TA is None:
        raise ImportError("the textarena/<game> envs need textarena: pip install 'openenv-train[textarena]'")
    return _TA


#: Held while a game runs on its own random streams: the server runs these envs in worker threads.
_GLOBAL_RANDOM = threading.Lock()


class _RandomStreams:
    """The game's own copy of the global ``random`` and ``numpy.random`` states.

    TextArena games draw from the process-wide generators; swapping a per-episode copy in
    around each call (under one lock) keeps one session's episode independent of every other's.
    """

    def __init__(self) -> None:
        self._py: Any = None
        self._np: Any = None

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Run the block on the game's streams; some games also print progress, which is dropped."""
        import numpy as np

        with _GLOBAL_RANDOM:
            outer_py, outer_np = random.getstate(), np.random.get_state()
            if self._py is not None:
                random.setstate(self._py)
                np.random.set_state(self._np)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    yield
            finally:
                self._py, self._np = random.getstate(), np.random.get_state()
                random.setstate(outer_py)
                np.random.set_state(outer_np)


class TextArenaEnvironment(Environment[TextArenaAction, TextArenaObservation, TextArenaState]):
    """A TextArena puzzle played by text moves; the reward is TextArena's at the end.

    ``reset(seed=...)`` seeds the game (the same seed and moves give the same text). Each
    step sends ``message`` to TextArena; the observation carries what the game answered.
    Invalid moves are TextArena's to judge (most games end after a few in a row).
    """

    action_type = TextArenaAction
    observation_type = TextArenaObservation
    state_type = TextArenaState
    game: ClassVar[TextArenaGame]
    # The first reset imports textarena (seconds) and Sokoban builds rooms by search: off the event loop.
    blocking = True

    def __init__(self) -> None:
        self._env: Any = None
        self._state = TextArenaState(env_id=self.game.env_id)
        self._prompt = ""
        self._done = True

    def reset(self, *, seed: int | None = None,  # type: ignore[override]
              episode_id: str | None = None) -> TextArenaObservation:
        """Start a game drawn from ``seed`` (a random one when None)."""
        ta = _textarena()
        seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
        self._streams = _RandomStreams()
        with self._streams.active():
            random.seed(seed)
            __import__("numpy").random.seed(seed)
            self._env = ta.make(env_id=self.game.env_id)
            self._env.reset(num_players=1, seed=seed)
            _, text = self._env.get_observation()
        self._prompt, self._done = str(text), False
        self._state = TextArenaState(episode_id=episode_id or uuid.uuid4().hex, env_id=self.game.env_id, seed=seed)
        return TextArenaObservation(prompt=self._prompt, text=self._prompt, reward=0.0)

    def step(self, action: TextArenaAction) -> TextArenaObservation:
        self._state.step_count += 1
        if self._env is None:
            self.reset()
        if self._done:
            return TextArenaObservation(prompt=self._prompt, text="the game is over; call reset to play again",
                                        done=True, reward=0.0)
        with self._streams.active():
            done, _ = self._env.step(action=action.message)
            _, text = self._env.get_observation()
            rewards, info = self._env.close() if done else ({}, {})
        info = info.get(0, {}) if isinstance(info, dict) else {}
        self._done = bool(done)
        if done:
            self._state.game_info = {k: v for k, v in info.items() if isinstance(v, str | int | float | bool)}
        return TextArenaObservation(
            prompt=self._prompt, text=str(text), invalid_move=bool(info.get("invalid_move", False)) or
            "invalid" in str(text).lower()[-400:], reason=str(info.get("reason", "")),
            done=self._done, reward=_reward(rewards.get(0), info) if done else 0.0,
        )

    @property
    def state(self) -> TextArenaState:
        return self._state

    def close(self) -> None:
        self._env = None


def _reward(value: Any, info: dict[str, Any]) -> float:
    """TextArena's reward; some games put a message there after an invalid move, with the score in the reason."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    found = re.search(r"(-?\d+(?:\.\d+)?)\s*$", str(info.get("reason", "")))
    return float(found.group(1)) if found else 0.0


def textarena_env(key: str, class_name: str, module: str) -> type[TextArenaEnvironment]:
    """The Environment class of catalog game ``textarena/<key>``, to be bound as ``module.class_name``."""
    game = TEXTARENA_GAMES[key]
    readme = f"# textarena/{key}\n\n{game.blurb}\n\nTextArena's `{game.env_id}`.\n\n{_README}"
    return type(class_name, (TextArenaEnvironment,), {
        "__doc__": f"{game.blurb}\n\nTextArena's ``{game.env_id}``; see TextArenaEnvironment.",
        "__module__": module, "__qualname__": class_name, "name": f"textarena/{key}", "readme": readme,
        "game": game,
    })
