"""The scripted Wordle expert: wins nearly always, plays only valid moves, reads observations."""

from __future__ import annotations

import functools

import pytest

from openenv_train.envs.wordle import WordleAction, WordleEnvironment, WordleSolver, valid_guesses
from openenv_train.envs.wordle.solver import history_from_transcript


@functools.cache
def solver() -> WordleSolver:
    return WordleSolver()  # shared: its memo makes the 200 games below cheap


def test_solver_wins_at_least_95_percent_of_200_seeded_games_within_six() -> None:
    wins, lengths = 0, []
    for seed in range(200):
        env = WordleEnvironment()
        obs = env.reset(seed=seed)
        while not obs.done:
            obs = env.step(WordleAction(**solver().act(obs)))
            assert obs.invalid_move is None, obs.invalid_move
        wins += obs.reward == 1.0
        lengths.append(len(obs.guesses))
    assert wins >= 190, f"won {wins}/200"
    assert sum(lengths) / len(lengths) < 4.0


def test_solver_is_deterministic_and_opens_with_raise() -> None:
    fresh = WordleSolver()
    assert fresh.next_guess([]) == "raise"
    assert fresh.solve("pizza") == solver().solve("pizza")
    assert fresh.solve("pizza")[-1] == ("pizza", "GGGGG")


def test_solver_handles_secrets_outside_the_answer_list() -> None:
    env = WordleEnvironment()
    obs = env.reset(task="cakes")  # a valid guess that is not an answer
    while not obs.done:
        obs = env.step(WordleAction(**solver().act(obs)))
        assert obs.invalid_move is None
    assert all(g in valid_guesses() for g in obs.guesses)


def test_solver_reads_wire_dicts_and_filters_candidates() -> None:
    action = solver().act({"guesses": ["raise"], "feedback": ["XXXXG"], "prompt": "Wordle-v0"})
    guess = action["message"].strip("[]")
    assert action["message"] == f"[{guess}]" and guess in valid_guesses()
    assert all(c.endswith("e") and not set("rais") & set(c) for c in solver().candidates([("raise", "XXXXG")]))


def test_solver_reads_an_openenv_transcript_without_typed_fields() -> None:
    env = WordleEnvironment()
    obs = env.reset(task="pizza")
    while not obs.done:
        wire = obs.model_dump(include={"prompt", "messages", "current_player_id", "legal_players", "info"})
        obs = env.step(WordleAction(**solver().act(wire)))
        assert obs.invalid_move is None
    assert obs.reward == 1.0
    assert history_from_transcript(obs.messages[0].content) == list(zip(obs.guesses, obs.feedback, strict=True))[:-1]


def test_solver_refuses_impossible_feedback() -> None:
    with pytest.raises(ValueError, match="no word fits"):
        WordleSolver().next_guess([("raise", "GGGGX"), ("arise", "GGGGX")])


def test_solver_custom_word_lists() -> None:
    small = WordleSolver(answers=["crane", "crate", "trace"], guesses=["crane", "crate", "trace", "slate"], opener="slate")
    assert small.solve("trace")[-1] == ("trace", "GGGGG")
    with pytest.raises(ValueError, match="opener"):
        WordleSolver(answers=["crane"], guesses=["crane"], opener="zzzzz")
