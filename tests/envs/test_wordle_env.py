"""WordleEnvironment in process: rules, rewards and signals, observation shape, reset options, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openenv_train.core import observation_to_wire
from openenv_train.envs.wordle import WordleAction, WordleEnvironment, WordleObservation, answers
from openenv_train.envs.wordle._text import ENV_ID, WIN_REASON


def play(env: WordleEnvironment, *messages: str) -> WordleObservation:
    obs = None
    for message in messages:
        obs = env.step(WordleAction(message=message))
    assert obs is not None
    return obs


def game(secret: str = "crane", **options: object) -> WordleEnvironment:
    env = WordleEnvironment()
    env.reset(task=secret, episode_id="ep", **options)
    return env


# -- reading guesses -----------------------------------------------------------------------------------
def test_bracketed_guess_wins_over_surrounding_text_else_first_five_letters() -> None:
    env = game()
    obs = play(env, "Thinking... I'll go with [slate] now")
    assert obs.guesses == ["slate"] and obs.feedback == ["XXGXG"]
    obs = play(env, "trace!!")
    assert obs.guesses == ["slate", "trace"] and obs.feedback[-1] == "XGGYG"
    assert obs.invalid_move is None and obs.remaining_guesses == 4


def test_strict_format_reads_like_textarena() -> None:
    env = game(strict_format=True)
    obs = play(env, "I guess crane")
    assert "wrong format" in (obs.invalid_move or "") and not obs.done
    obs = play(env, "slate")  # no bracket at all: the whole message is the word
    assert obs.guesses == ["slate"]
    obs = play(env, "[cranes]")
    assert obs.invalid_move == "Your word must be exactly 5 letters."
    assert play(env, "[CRANE]").reward == 1.0


# -- invalid moves -------------------------------------------------------------------------------------
def test_first_invalid_move_warns_without_using_a_guess() -> None:
    env = game()
    obs = play(env, "[zzzzz]")
    assert obs.invalid_move == "'zzzzz' is not an English word."
    assert (obs.done, obs.reward, obs.guesses, obs.remaining_guesses) == (False, 0.0, [], 6)
    assert "[GAME] You attempted an invalid move. Reason: 'zzzzz' is not an English word." in obs.messages[0].content
    assert env.state.step_count == 1 and env.state.invalid_streak == 1


def test_second_invalid_move_in_a_row_ends_the_game_with_zero_without_a_valid_guess() -> None:
    env = game()
    obs = play(env, "[zzzzz]", "hi")
    assert obs.done and obs.reward == 0.0
    assert obs.invalid_move == "Your word must be exactly 5 letters."
    assert obs.reason == "Invalid Move: Your word must be exactly 5 letters."
    assert env.state.step_count == 2 and not env.state.won


def test_second_invalid_move_pays_the_partial_score_of_the_last_valid_guess() -> None:
    env = game("apple")
    obs = play(env, "[pappy]")
    assert obs.feedback == ["YYGXX"]
    obs = play(env, "[qqqqq]", "")
    assert obs.done and obs.reward == pytest.approx((1 + 0.5 * 2) / 5)


def test_a_valid_move_resets_the_invalid_streak() -> None:
    env = game()
    obs = play(env, "[zzzzz]", "[slate]", "[qqqqq]")
    assert not obs.done and obs.invalid_move and obs.guesses == ["slate"]
    assert play(env, "[xxxxx]").done


def test_repeated_guess_is_an_invalid_move_and_lowers_the_repetition_signal() -> None:
    env = game()
    assert play(env, "[slate]").reward_signals.repetitions == 1.0
    obs = play(env, "[slate]")
    assert obs.invalid_move == "You have already guessed 'slate' before. Please try a different word."
    assert obs.reward_signals.repetitions == 0.0 and obs.guesses == ["slate"] and not obs.done
    obs = play(env, "slate")
    assert obs.done and obs.reward_signals.repetitions == -1.0
    assert obs.reward == pytest.approx(0.4)  # slate vs crane: XXGXG


# -- ends and rewards ----------------------------------------------------------------------------------
def test_win_pays_one_and_reports_full_greens() -> None:
    env = game()
    play(env, "[slate]")
    obs = play(env, "[crane]")
    assert (obs.done, obs.reward, obs.reason) == (True, 1.0, WIN_REASON)
    assert obs.feedback == ["XXGXG", "GGGGG"] and (obs.greens, obs.yellows) == (5, 0)
    assert obs.reward_signals.model_dump() == {"greens": 1.0, "yellows": 0.0, "repetitions": 1.0, "correct": 1.0}
    assert obs.info == {"reward_signals": {"wordle.greens": 1.0, "wordle.yellows": 0.0,
                                           "wordle.repetitions": 1.0, "wordle.correct": 1.0}}
    assert obs.metadata["reward_signals"] == obs.info["reward_signals"]
    assert "You submitted [crane]" not in obs.messages[0].content  # TextArena prints no feedback for a win
    assert env.state.won


def test_running_out_of_guesses_pays_the_partial_score_of_the_last_guess() -> None:
    env = game()
    words = ["slate", "pious", "dumpy", "lofty", "bilge", "trace"]
    rewards = [play(env, f"[{w}]").reward for w in words]
    obs = env.step(WordleAction(message="[crane]"))  # too late
    assert rewards == [0.0] * 5 + [pytest.approx(0.7)]  # trace vs crane: XGGYG = (3 + 0.5) / 5
    assert obs.done and obs.reward == 0.0 and obs.invalid_move and obs.guesses == words
    last = env.state
    assert last.reason and "**crane**" in last.reason and "70%" in last.reason
    assert "You have 0 guesses left." in obs.messages[0].content


def test_max_guesses_option_shortens_the_game() -> None:
    env = game(max_guesses=2)
    assert play(env, "[slate]").remaining_guesses == 1
    obs = play(env, "[pious]")
    assert obs.done and obs.reward == 0.0 and obs.remaining_guesses == 0


def test_steps_pay_zero_before_the_end_and_signals_track_the_latest_guess() -> None:
    env = game()
    obs = play(env, "[trace]")
    assert obs.reward == 0.0 and not obs.done
    assert (obs.greens, obs.yellows) == (3, 1)
    assert obs.reward_signals.greens == pytest.approx(0.6) and obs.reward_signals.yellows == pytest.approx(0.2)
    obs = play(env, "[zzzzz]")  # an invalid move keeps reporting the last valid guess
    assert (obs.greens, obs.yellows, obs.reward_signals.greens) == (3, 1, pytest.approx(0.6))


def test_step_after_the_end_changes_nothing() -> None:
    env = game()
    play(env, "[crane]")
    before = env.state.model_dump()
    obs = play(env, "[slate]")
    assert obs.done and obs.reward == 0.0 and "game is over" in (obs.invalid_move or "")
    assert obs.reward_signals.correct == 0.0
    assert env.state.model_dump() == before


# -- observation shape ---------------------------------------------------------------------------------
def test_observation_has_openenv_textarena_shape_and_wording() -> None:
    env = WordleEnvironment()
    first = env.reset(task="crane")
    assert first.prompt.startswith("[GAME] You are Playing Wordle.\nA secret 5-letter word has been chosen.")
    assert first.prompt.endswith("Enter your guess to begin.")
    assert [m.model_dump() for m in first.messages] == [
        {"sender_id": -1, "content": "\n" + first.prompt + "\n", "category": "MESSAGE"}]
    assert (first.current_player_id, first.legal_players, first.info, first.reward, first.done) == (0, [0], {}, 0.0, False)
    assert first.metadata == {"env_id": ENV_ID, "turn": 0}
    assert play(env, "[zzzzz]").prompt.startswith("[GAME] You are Playing Wordle.")  # still turn 0
    obs = play(env, "slate")
    assert obs.prompt == ENV_ID and obs.metadata["turn"] == 1
    assert obs.messages[0].content.endswith(
        "\n[GAME] [slate]\n[GAME] You submitted [slate].\nFeedback:\nS L A T E\nX X G X G\nYou have 5 guesses left.")


def test_the_secret_stays_out_of_observations_until_the_game_is_lost() -> None:
    env = WordleEnvironment()
    observations = [env.reset(task="crane")]
    observations += [env.step(WordleAction(message=m)) for m in ("[slate]", "[zzzzz]", "pious")]
    for obs in observations:
        assert "crane" not in json.dumps(obs.model_dump())
    assert env.state.secret == "crane"


# -- reset options and determinism ---------------------------------------------------------------------
def test_same_seed_same_episode_and_seeds_draw_from_the_answers() -> None:
    def run(seed: int) -> list[dict[str, object]]:
        env = WordleEnvironment()
        out = [env.reset(seed=seed, episode_id="ep").model_dump()]
        out += [env.step(WordleAction(message=m)).model_dump() for m in ("[slate]", "[pious]")]
        return out + [env.state.model_dump()]

    assert run(11) == run(11)
    secrets = set()
    for seed in range(20):
        env = WordleEnvironment()
        env.reset(seed=seed)
        secrets.add(env.state.secret)
    assert len(secrets) > 10 and secrets <= set(answers())


@pytest.mark.parametrize("option", ["task", "secret", "word"])
def test_task_fixes_the_secret_in_any_case(option: str) -> None:
    env = WordleEnvironment()
    env.reset(seed=3, **{option: "CAKES"})  # any valid guess, not only answers; beats the seed
    assert env.state.secret == "cakes"


@pytest.mark.parametrize(("options", "match"), [
    ({"task": "zzzzz"}, "not a valid secret"),
    ({"task": "cranes"}, "5-letter"),
    ({"secret": ""}, "not a valid secret"),
    ({"task": "crane", "word": "slate"}, "different words"),
    ({"max_guesses": 0}, "between 1 and 20"),
])
def test_bad_reset_options_raise_clear_errors(options: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        WordleEnvironment().reset(**options)  # type: ignore[arg-type]


def test_schema_and_metadata() -> None:
    schema = WordleEnvironment.spec_info().schema()
    # required, as OpenEnv's TextArenaAction: a plain-text reply fills the one required field (verifiers'
    # openenv taskset), and an action without it is refused rather than played as an empty guess
    assert schema["action"]["required"] == ["message"] and "default" not in schema["action"]["properties"]["message"]
    with pytest.raises(ValueError, match="message"):
        WordleAction.model_validate({})
    assert {"prompt", "messages", "current_player_id", "legal_players", "info", "guesses", "feedback",
            "remaining_guesses", "greens", "yellows", "reward_signals"} <= set(schema["observation"]["properties"])
    meta = WordleEnvironment.metadata_info()
    assert meta.name == "wordle" and meta.readme_content and "## Reward" in meta.readme_content


# -- parity with OpenEnv's TextArena server ------------------------------------------------------------
GOLDEN = Path(__file__).with_name("wordle_textarena_golden.json")


@pytest.mark.parametrize("game", json.loads(GOLDEN.read_text())["games"], ids=lambda g: g["secret"])
def test_strict_format_replays_games_recorded_from_openenv_textarena(game: dict[str, Any]) -> None:
    """Games recorded from OpenEnv's TextArenaEnvironment over textarena 0.7.4 come out identical."""
    env = WordleEnvironment()
    ours = [env.reset(task=game["secret"], strict_format=True)]
    ours += [env.step(WordleAction(message=m)) for m in game["messages"]]
    for theirs, obs in zip(game["results"], ours, strict=True):
        wire = observation_to_wire(obs)
        mine = {key: wire["observation"][key] for key in theirs["observation"]}
        expected = json.loads(json.dumps(theirs["observation"]))
        if obs.done and obs.reward == 1.0:  # OpenEnv reports the previous guess's greens/yellows on a win
            for signals in (mine["info"]["reward_signals"], expected["info"]["reward_signals"]):
                del signals["wordle.greens"], signals["wordle.yellows"]
        assert mine == expected
        assert (wire["reward"], wire["done"]) == (theirs["reward"], theirs["done"])
