"""WordleEnvironment: OpenEnv's TextArena ``Wordle-v0`` rules, observation and rewards, without TextArena."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from importlib import resources
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, Field

from ...server import Environment, TaskSplit, listed_split
from . import _text as text
from ._models import (
    DEFAULT_MAX_GUESSES,
    WordleAction,
    WordleMessage,
    WordleObservation,
    WordleRewardSignals,
    WordleState,
)
from ._rules import GREEN, WORD_LENGTH, YELLOW, extract_guess, feedback, format_action, partial_score, strict_guess
from ._view import board_html
from ._words import answer_splits, answers, is_valid_guess

__all__ = ["WordleEnvironment"]

_PACKAGE = __name__.rpartition(".")[0]
MAX_GUESSES_LIMIT = 20
GAME_OVER = "The game is over; no more guesses are taken. Call reset to start a new game."


def normal_secret(word: str) -> str:
    """A requested secret in lowercase; it must be a 5-letter word of the valid-guess list.

    Raises:
        ValueError: not a 5-letter word of the valid-guess list.
    """
    normal = word.strip().lower()
    if len(normal) != WORD_LENGTH or not is_valid_guess(normal):
        raise ValueError(
            f"{word!r} is not a valid secret: give a {WORD_LENGTH}-letter English word from the "
            "valid-guess list, e.g. 'crane', or pass seed=N to draw one from the answer list"
        )
    return normal


def check_secret(word: str | None) -> str | None:
    """:func:`normal_secret` for a reset option that may be absent."""
    return None if word is None else normal_secret(word)


def check_max_guesses(value: int) -> int:
    """Raises ValueError unless 1 <= value <= MAX_GUESSES_LIMIT."""
    if not 1 <= value <= MAX_GUESSES_LIMIT:
        raise ValueError(f"max_guesses must be between 1 and {MAX_GUESSES_LIMIT}, got {value}")
    return value


SecretWord = Annotated[str | None, AfterValidator(check_secret)]
MaxGuesses = Annotated[int, Field(ge=1, le=MAX_GUESSES_LIMIT)]


class WordleEnvironment(Environment[WordleAction, WordleObservation, WordleState]):
    """Wordle as OpenEnv's TextArena server plays it: guess a secret 5-letter word in six tries.

    Each valid guess gets per-letter feedback (G right place, Y elsewhere in the word, X absent).
    A win pays 1.0; running out of guesses pays (greens + 0.5 * yellows) / 5 of the last guess;
    every other step pays 0.0. A first invalid move only warns; a second in a row ends the game
    with the partial score of the last valid guess.

    Example:
        >>> env = WordleEnvironment()
        >>> obs = env.reset(task="crane")
        >>> obs = env.step(WordleAction(message="I'll open with [slate]"))
        >>> obs.feedback, obs.remaining_guesses, obs.reward, obs.done
        (['XXGXG'], 5, 0.0, False)
        >>> env.step(WordleAction(message="[crane]")).reward
        1.0
    """

    name = "wordle"
    action_type = WordleAction
    observation_type = WordleObservation
    state_type = WordleState
    hidden_state_fields = frozenset({"secret"})
    readme: ClassVar[str | None] = (resources.files(_PACKAGE) / "README.md").read_text(encoding="utf-8")

    @staticmethod
    def render_observation(observation: dict[str, Any]) -> str | None:
        """The board: a row of green/yellow/grey tiles per guess, empty rows for the guesses left."""
        return board_html(observation)

    def __init__(self) -> None:
        self._state = WordleState()
        self._transcript: list[str] = []
        self._seen: Counter[str] = Counter()
        self._last: WordleObservation = WordleObservation()
        self.reset()  # OpenEnv's server takes a step before any reset, so start a game now

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              task: SecretWord = None, secret: SecretWord = None, word: SecretWord = None,
              max_guesses: MaxGuesses = DEFAULT_MAX_GUESSES, strict_format: bool = False) -> WordleObservation:
        """Start a game.

        Args:
            seed: draws the secret from the answer list deterministically.
            episode_id: the id reported by ``state``; a fresh one if omitted.
            task: the secret word itself (any valid guess); ``secret`` and ``word`` are aliases.
            max_guesses: guesses allowed (TextArena: 6).
            strict_format: read guesses exactly as TextArena does (a bracketed word of any length,
                or the whole message when it has no bracket) instead of leniently.

        Raises:
            ValueError: a bad secret or ``max_guesses``, or different secrets under two aliases.
        """
        requested = {normal_secret(w) for w in (task, secret, word) if w is not None}
        if len(requested) > 1:
            raise ValueError(f"task, secret and word name the same option; got different words {sorted(requested)}")
        chosen = requested.pop() if requested else random.Random(seed).choice(answers())
        self._state = WordleState(
            episode_id=episode_id or uuid.uuid4().hex, secret=chosen,
            max_guesses=check_max_guesses(max_guesses), strict_format=strict_format,
        )
        self._transcript = [text.transcript_line(text.instructions(WORD_LENGTH, max_guesses))]
        self._seen = Counter()
        return self._observe(reward=0.0, signals=None)

    def task_splits(self) -> list[TaskSplit]:
        """The secret words as the Wordle recipe splits them for the server's seed (``$OPENENV_TRAIN_WORDLE_SEED``,
        default 0): ``held_out`` (test), ``grpo`` and ``sft`` (train); a task resets with ``task=<word>``."""
        kinds = {"held_out": "test", "grpo": "train", "sft": "train"}
        return [listed_split(name, kinds[name], words, "task")  # type: ignore[arg-type]
                for name, words in answer_splits().items()]

    def step(self, action: WordleAction) -> WordleObservation:  # type: ignore[override]
        state = self._state
        if state.done:
            return self._after_end()
        state.step_count += 1
        message = action.message
        self._transcript.append(text.transcript_line(format_action(message).replace("[Player]", "")))
        repetitions = self._count_repetition(extract_guess(message))
        guess, problem = self._read_guess(message)
        if problem is not None:
            return self._invalid(problem, repetitions)
        state.invalid_streak = 0
        marks = feedback(guess, state.secret)
        state.guesses.append(guess)
        state.feedback.append(marks)
        state.turn += 1
        if marks == GREEN * WORD_LENGTH:
            return self._finish(1.0, text.WIN_REASON, repetitions, won=True)
        left = state.max_guesses - len(state.guesses)
        self._transcript.append(text.transcript_line(text.submitted(guess, marks, left)))
        if left == 0:
            score = partial_score(marks)
            return self._finish(score, text.out_of_guesses_reason(score, state.secret), repetitions)
        return self._observe(reward=0.0, signals=self._signals(repetitions, 0.0))

    @property
    def state(self) -> WordleState:
        return self._state

    def _read_guess(self, message: str) -> tuple[str, str | None]:
        """The guess in ``message`` and, if the move is invalid, why (TextArena's order of checks)."""
        state = self._state
        word = strict_guess(message) if state.strict_format else extract_guess(message)
        if word is None:
            reason = text.wrong_format() if state.strict_format else text.wrong_length(WORD_LENGTH)
            return "", reason
        if len(word) != WORD_LENGTH:
            return word, text.wrong_length(WORD_LENGTH)
        if word in state.guesses:
            return word, text.repeated(word)
        if not is_valid_guess(word):
            return word, text.not_a_word(word)
        return word, None

    def _count_repetition(self, guess: str | None) -> float:
        """OpenEnv's repetition signal: 1 minus how often this guess was sent before (any validity)."""
        if guess is None:
            return 1.0
        before = self._seen[guess]
        self._seen[guess] += 1
        return 1.0 - before

    def _invalid(self, reason: str, repetitions: float) -> WordleObservation:
        state = self._state
        if state.invalid_streak == 0:
            state.invalid_streak = 1
            self._transcript.append(text.transcript_line(text.invalid_move_warning(reason)))
            return self._observe(reward=0.0, signals=self._signals(repetitions, 0.0), invalid=reason)
        state.invalid_streak += 1
        state.turn += 1  # TextArena counts the game-ending invalid move as a turn
        last = state.feedback[-1] if state.feedback else None
        return self._finish(partial_score(last), f"Invalid Move: {reason}", repetitions, invalid=reason)

    def _finish(self, reward: float, reason: str, repetitions: float, *, won: bool = False,
                invalid: str | None = None) -> WordleObservation:
        state = self._state
        state.done, state.won, state.reason = True, won, reason
        return self._observe(reward=reward, signals=self._signals(repetitions, reward), invalid=invalid)

    def _signals(self, repetitions: float, reward: float) -> WordleRewardSignals:
        marks = self._state.feedback[-1] if self._state.feedback else ""
        return WordleRewardSignals(
            greens=marks.count(GREEN) / WORD_LENGTH, yellows=marks.count(YELLOW) / WORD_LENGTH,
            repetitions=repetitions, correct=reward,
        )

    def _after_end(self) -> WordleObservation:
        """The final observation again, paying nothing: the game takes no more moves."""
        last = self._last
        signals = last.reward_signals.model_copy(update={"correct": 0.0})
        info = {"reward_signals": signals.as_openenv()}
        return last.model_copy(update={
            "reward": 0.0, "invalid_move": GAME_OVER, "reward_signals": signals, "info": info,
            "metadata": {**last.metadata, **info},
        })

    def _observe(self, *, reward: float, signals: WordleRewardSignals | None,
                 invalid: str | None = None) -> WordleObservation:
        state = self._state
        transcript = "".join(self._transcript)
        info = {} if signals is None else {"reward_signals": signals.as_openenv()}
        metadata = {"env_id": text.ENV_ID, "turn": state.turn, **info}
        marks = state.feedback[-1] if state.feedback else ""
        obs = WordleObservation(
            prompt=transcript.strip() if state.turn == 0 else text.ENV_ID,
            messages=[WordleMessage(sender_id=-1, content=transcript, category="MESSAGE")],
            info=info,
            guesses=list(state.guesses),
            feedback=list(state.feedback),
            remaining_guesses=state.max_guesses - len(state.guesses),
            greens=marks.count(GREEN),
            yellows=marks.count(YELLOW),
            reward_signals=signals or WordleRewardSignals(),
            invalid_move=invalid,
            reason=state.reason,
            reward=reward,
            done=state.done,
            metadata=metadata,
        )
        state.last_reward, state.last_info = reward, dict(info)
        self._last = obs
        return obs
