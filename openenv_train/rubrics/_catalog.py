"""Rubrics for the catalog envs, read from a row's env steps (actions and observations as the env sent them).

- ``wordle``: correct, greens, yellows, format, repetition, invalid_guesses (a penalty), speed (winning sooner),
  consistent (guesses that fit the marks so far) and their total;
- ``games`` (tic_tac_toe, connect4, kuhn_poker, chess, catch, blackjack): win, draw, loss; total = win - loss;
- ``coding``: tests_passed (the fraction of hidden tests passed on submit);
- ``reasoning_gym``: the dataset's own ``score_answer`` of the answer, re-run from the task spec.

:func:`get_rubric` builds one by name (or from ``module:factory``); unknown names suggest close matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..core import OpenEnvTrainError, did_you_mean
from ..trace import TraceRow
from ._base import FunctionRubric, Rubric
from ._compose import Components

__all__ = ["RUBRICS", "coding_rubric", "game_rubric", "get_rubric", "reasoning_gym_rubric", "wordle_rubric"]

_BRACKETED = re.compile(r"\[[A-Za-z]{5}\]")


def _last_obs(row: TraceRow) -> dict[str, Any] | None:
    return row.steps[-1].observation if row.steps else None


def _messages(row: TraceRow) -> list[str]:
    return [str(step.action.get("message", "")) for step in row.steps]


def wordle_correct(row: TraceRow) -> float | None:
    """1.0 when the game was won (the final step paid 1.0), else 0.0."""
    return None if not row.steps else float(row.steps[-1].reward == 1.0)


def wordle_greens(row: TraceRow) -> float | None:
    """Greens of the latest valid guess / 5."""
    obs = _last_obs(row)
    return None if obs is None else float(obs.get("greens", 0)) / 5


def wordle_yellows(row: TraceRow) -> float | None:
    """Yellows of the latest valid guess / 5."""
    obs = _last_obs(row)
    return None if obs is None else float(obs.get("yellows", 0)) / 5


def wordle_format(row: TraceRow) -> float | None:
    """The fraction of messages with a guess written as ``[xxxxx]``."""
    messages = _messages(row)
    return None if not messages else sum(bool(_BRACKETED.search(m)) for m in messages) / len(messages)


def wordle_repetition(row: TraceRow) -> float | None:
    """1 - the fraction of guesses that repeat an earlier one (guesses read as the env reads them)."""
    from ..envs.wordle import extract_guess

    guesses = [g for g in map(extract_guess, _messages(row)) if g]
    return None if not guesses else len(set(guesses)) / len(guesses)


def wordle_invalid_guesses(row: TraceRow) -> float | None:
    """The fraction of steps the env refused as invalid moves (weigh it negatively)."""
    return None if not row.steps else sum(bool(s.observation.get("invalid_move")) for s in row.steps) / len(row.steps)


def _history(row: TraceRow) -> list[tuple[str, str]] | None:
    obs = _last_obs(row)
    if obs is None or "guesses" not in obs:
        return None
    return list(zip(obs.get("guesses") or [], obs.get("feedback") or [], strict=False))


def wordle_speed(row: TraceRow) -> float | None:
    """Winning sooner: (7 - guesses) / 6 for a won game (1.0 in one guess, 1/6 in six), else 0.0."""
    history = _history(row)
    if history is None:
        return None
    won = bool(row.steps) and row.steps[-1].reward == 1.0
    return (7 - len(history)) / 6 if won and history else 0.0


def wordle_consistent(row: TraceRow) -> float | None:
    """The fraction of valid guesses after the first that could be the secret given every earlier mark (with fewer
    than two valid guesses: 1.0 for a win in one, else 0.0)."""
    from ..envs.wordle import feedback

    history = _history(row)
    if history is None:
        return None
    if len(history) < 2:
        return float(bool(row.steps) and row.steps[-1].reward == 1.0)
    fits = sum(all(feedback(g, history[i][0]) == m for g, m in history[:i]) for i in range(1, len(history)))
    return fits / (len(history) - 1)


def wordle_rubric(weights: dict[str, float] | None = None) -> Components:
    """Wordle's components and their weighted total (default weights favour winning; invalid moves cost)."""
    fns: list[Callable[[TraceRow], float | None]] = [wordle_correct, wordle_greens, wordle_yellows, wordle_format,
                                                     wordle_repetition, wordle_invalid_guesses, wordle_speed,
                                                     wordle_consistent]
    default = {"correct": 1.0, "greens": 0.2, "yellows": 0.1, "format": 0.1, "repetition": 0.1,
               "invalid_guesses": -0.2, "speed": 0.0, "consistent": 0.0}
    default.update(weights or {})
    parts = [FunctionRubric(fn, fn.__name__.removeprefix("wordle_")) for fn in fns]
    return Components(parts, [default[p.name] for p in parts], name="wordle")


def _final(row: TraceRow) -> float | None:
    if row.steps and row.steps[-1].reward is not None:
        return row.steps[-1].reward
    return row.reward


def game_rubric() -> Components:
    """Win, draw and loss of a two-outcome game from its final reward; total = win - loss (draw logged)."""
    def outcome(test: Callable[[float], bool], name: str) -> FunctionRubric:
        def score(row: TraceRow) -> float | None:
            final = _final(row)
            return None if final is None or not row.done else float(test(final))
        return FunctionRubric(score, name)

    parts = [outcome(lambda r: r > 0, "win"), outcome(lambda r: r == 0, "draw"), outcome(lambda r: r < 0, "loss")]
    return Components(parts, [1.0, 0.0, -1.0], name="game")


def coding_tests_passed(row: TraceRow) -> float | None:
    """The fraction of hidden tests passed on submit; None when nothing was submitted."""
    for step in reversed(row.steps):
        passed, total = step.observation.get("tests_passed"), step.observation.get("tests_total")
        if passed is not None and total:
            return float(passed) / float(total)
    return None


def coding_rubric() -> Components:
    """The coding env's component: tests_passed."""
    return Components([FunctionRubric(coding_tests_passed, "tests_passed")], name="coding")


def reasoning_gym_score(row: TraceRow) -> float | None:
    """reasoning_gym's ``score_answer`` of the row's answer, for the question its task spec regenerates."""
    from ..envs.reasoning_gym import DEFAULT_DATASET, make_question, score_answer

    if not row.steps:
        return None
    answer = str(row.steps[-1].action.get("answer", ""))
    task = row.task
    if "seed" not in task:  # the question cannot be regenerated: trust the env's own score
        score = row.steps[-1].observation.get("score")
        return None if score is None else float(score)
    question = make_question(task.get("dataset", DEFAULT_DATASET), dict(task.get("config") or {}),
                             int(task["seed"]), int(task.get("index", 0)))
    return score_answer(question, answer)[0]


def reasoning_gym_rubric() -> Components:
    """The reasoning_gym env's component: its dataset's scorer."""
    return Components([FunctionRubric(reasoning_gym_score, "score_answer")], name="reasoning_gym")


#: Rubric factories by name (catalog env names map to their env's rubric).
RUBRICS: dict[str, Callable[[], Rubric]] = {
    "wordle": wordle_rubric,
    "games": game_rubric,
    **{game: game_rubric for game in ("tic_tac_toe", "connect4", "kuhn_poker", "chess", "catch", "blackjack")},
    "coding": coding_rubric,
    "reasoning_gym": reasoning_gym_rubric,
}


def get_rubric(name: str) -> Rubric:
    """A rubric by catalog name (``wordle``) or ``module:factory``.

    Raises:
        OpenEnvTrainError: unknown name (with close matches).
    """
    if ":" in name:
        import importlib

        module, _, attr = name.partition(":")
        made = getattr(importlib.import_module(module), attr)
        return made() if not isinstance(made, Rubric) else made
    if name not in RUBRICS:
        hint = did_you_mean(name, RUBRICS)
        raise OpenEnvTrainError(f"no rubric named {name!r}{hint} Known: {', '.join(sorted(RUBRICS))}, "
                                "or pass 'package.module:factory'")
    return RUBRICS[name]()
