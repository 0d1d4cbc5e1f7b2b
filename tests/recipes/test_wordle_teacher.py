"""The Wordle recipe's teacher (a fixed opening, then random consistent answers) and its distillation targets."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from openenv_train.envs.wordle import answers, feedback, valid_guesses
from openenv_train.recipes.wordle import ConsistentTeacher, DistillCollator, consistent, games_dataset, guess_orders


@pytest.fixture(scope="module")
def teacher() -> ConsistentTeacher:
    return ConsistentTeacher(answers(), opening=["tares", "prion"])  # "tares" is a valid guess, not an answer


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from openenv_train.policy import build_char_tokenizer

    return build_char_tokenizer()


def test_the_feedback_table_agrees_with_the_env(teacher: ConsistentTeacher) -> None:
    rng = random.Random(0)
    words = teacher.words
    pairs = [(rng.choice(words), rng.choice(words)) for _ in range(5000)]
    doubled = [w for w in words if len(set(w)) < 5]  # repeated letters: the subtle part of the marks
    pairs += [(rng.choice(doubled), rng.choice(doubled)) for _ in range(2000)]
    pairs += [("tares", rng.choice(words)) for _ in range(200)]
    for guess, secret in pairs:
        assert teacher.marks(guess, secret) == feedback(guess, secret), (guess, secret)


def test_games_open_with_the_fixed_words_then_only_guess_consistent_answers(teacher: ConsistentTeacher) -> None:
    rng = random.Random(1)
    secrets = [rng.choice(teacher.words) for _ in range(400)] + ["prion"]
    games = [teacher.play(secret, rng) for secret in secrets]
    for secret, game in zip(secrets, games, strict=True):
        assert all(marks == feedback(guess, secret) for guess, marks in game)
        guesses = [guess for guess, _ in game]
        assert guesses[:2] == ["tares", "prion"][:len(guesses)] and len(set(guesses)) == len(guesses) <= 6
        for k in range(2, len(game)):
            assert guesses[k] in teacher.words and consistent(guesses[k], game[:k]), (secret, game)
    assert games[-1] == [("tares", feedback("tares", "prion")), ("prion", "GGGGG")]
    assert sum(game[-1][1] == "GGGGG" for game in games) / len(games) >= 0.95


def test_a_bad_opening_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="distinct 5-letter words"):
        ConsistentTeacher(answers(), opening=["stale", "stale"])
    from openenv_train.recipes.grpo_wordle import TeacherSection

    with pytest.raises(ValueError, match="valid-guess list"):
        TeacherSection(opening=["zzzzz"])
    assert TeacherSection(opening=[]).opening == [] and "stale" in valid_guesses()


def test_targets_are_the_letter_shares_of_the_consistent_answers(teacher: ConsistentTeacher, tokenizer: Any) -> None:
    """Checked against a brute force over the answer list: one-hot on the opening, else among the answers that
    fit every mark and start with the letters already written, the share of each next letter."""
    rng = random.Random(2)
    games = [teacher.play(rng.choice(teacher.words), rng) for _ in range(40)]
    collator = DistillCollator(tokenizer, teacher)
    for game in games:
        targets = collator._game_targets(game)
        k = 0
        for turn, (guess, _) in enumerate(game):
            fits = [w for w in teacher.words if consistent(w, game[:turn])]
            for j, letter in enumerate(guess):
                if turn < 2:
                    expected = np.eye(26)[ord(letter) - 97]
                else:
                    heads = [w for w in fits if w[:j] == guess[:j]]
                    expected = np.bincount([ord(w[j]) - 97 for w in heads], minlength=26) / len(heads)
                np.testing.assert_allclose(targets[k][1], expected, atol=1e-6)
                k += 1
            assert targets[k] is None  # the end of the turn
            k += 1
        assert k == len(targets)


def test_a_players_own_game_gets_targets_for_the_state_it_reached(teacher: ConsistentTeacher,
                                                                   tokenizer: Any) -> None:
    """On-policy distillation: a game whose guesses miss the marks (a model's own) still gets, at every letter, the
    shares among the answers that fit every mark so far and start with the letters written; once the letters
    written begin no such answer, the rest of that guess has no target (zeros, so no loss)."""
    secret = "fresh"
    history = [("tares", feedback("tares", secret)), ("prion", feedback("prion", secret))]
    fits = [w for w in teacher.words if consistent(w, history)]
    guess = next(w for w in teacher.words if w[0] == fits[0][0] and all(w[:2] != f[:2] for f in fits))
    # (an answer, as the teacher must know every word guessed): it starts like one that fits, then leaves them all
    game = [*history, (guess, feedback(guess, secret)), (secret, "GGGGG")]
    targets = DistillCollator(tokenizer, teacher)._game_targets(game)
    third = targets[12:17]  # two opening guesses of 5 letters and an end each, then the third guess's letters
    heads = [w for w in fits if w[0] == guess[0]]
    np.testing.assert_allclose(third[0][1], np.bincount([ord(w[0]) - 97 for w in fits], minlength=26) / len(fits))
    np.testing.assert_allclose(third[1][1], np.bincount([ord(w[1]) - 97 for w in heads], minlength=26) / len(heads))
    assert all(not t[1].any() for t in third[2:])  # no answer that fits starts with the first two letters
    after = [w for w in fits if consistent(w, game[:3])]
    np.testing.assert_allclose(targets[18][1], np.bincount([ord(w[0]) - 97 for w in after], minlength=26) / len(after))
    assert np.isfinite(np.stack([t[1] for t in targets if t is not None])).all()


def test_any_order_targets_are_the_letter_mixture_then_the_position_it_came_from(
        teacher: ConsistentTeacher, tokenizer: Any) -> None:
    """``order: any`` (each letter, then its position): among the answers that fit every mark and agree with every
    letter written so far, each letter's target is the mean over the positions not written yet of their letter
    shares, and each position's is where that letter came from: positions left weighted by its share there
    (brute force; one-hot, left to right, on the opening)."""
    rng = random.Random(5)
    games = [teacher.play(rng.choice(teacher.words), rng) for _ in range(30)]
    orders = guess_orders(games, opening=2, seed=1)
    collator = DistillCollator(tokenizer, teacher)
    vocab = tokenizer.get_vocab()
    seen_orders = set()
    for game, order in zip(games, orders, strict=True):
        targets = collator._game_targets(game, ["".join(map(str, o)) for o in order])
        k = 0
        for turn, (guess, _) in enumerate(game):
            fits = [w for w in teacher.words if consistent(w, game[:turn])]
            assert sorted(order[turn]) == list(range(5))
            if turn < 2:
                assert order[turn] == [0, 1, 2, 3, 4]
            else:
                seen_orders.add(tuple(order[turn]))
            written: list[int] = []
            for j in order[turn]:
                if turn < 2:
                    letter, where = np.eye(26)[ord(guess[j]) - 97], np.eye(5)[j]
                else:
                    left = [p for p in range(5) if p not in written]
                    agree = [w for w in fits if all(w[p] == guess[p] for p in written)]
                    share = {p: np.bincount([ord(w[p]) - 97 for w in agree], minlength=26) / len(agree) for p in left}
                    letter = sum(share.values()) / len(left)
                    where = np.array([share[p][ord(guess[j]) - 97] if p in share else 0.0 for p in range(5)])
                    where = where / where.sum()
                ids, target = targets[k]
                assert list(ids) == [vocab[chr(97 + i)] for i in range(26)]
                np.testing.assert_allclose(target, letter, atol=1e-6)
                ids, target = targets[k + 1]
                assert list(ids) == [vocab[str(p + 1)] for p in range(5)]
                np.testing.assert_allclose(target, where, atol=1e-6)
                written.append(j)
                k += 2
            assert targets[k] is None
            k += 1
        assert k == len(targets)
    assert len(seen_orders) > 10  # the order after the opening is random
    batch = collator(games_dataset(games[:4], batch_size=4, seed=0, orders=orders[:4]).to_list())
    weight = batch["targets"].sum(-1)
    assert int((batch["labels"] != -100).sum()) == int((weight > 0).sum())


def test_batches_hold_games_of_one_length_and_need_no_mask(teacher: ConsistentTeacher, tokenizer: Any) -> None:
    rng = random.Random(3)
    games = [teacher.play(rng.choice(teacher.words), rng) for _ in range(300)]
    dataset = games_dataset(games, batch_size=8, seed=0)
    rows = [dataset[i] for i in range(len(dataset))]
    played = sorted(tuple(zip(g, m, strict=True)) for g, m in ((r["guesses"], r["marks"]) for r in rows))
    assert played == sorted(tuple(game) for game in games)  # every game exactly once
    collator = DistillCollator(tokenizer, teacher)
    counts = [sum(len(g) == size for g in games) for size in {len(g) for g in games}]
    full = sum(n - n % 8 for n in counts)
    for start in range(0, full, 8):
        block = rows[start:start + 8]
        assert len({len(r["guesses"]) for r in block}) == 1
        batch = collator(block)
        assert "attention_mask" not in batch and batch["input_ids"].shape[0] == 8
        weight = batch["targets"].sum(-1)
        assert ((weight == 0) | (abs(weight - 1) < 1e-5)).all()
        assert int((batch["labels"] != -100).sum()) == int((weight > 0).sum())
    mixed = collator([rows[0], next(r for r in rows if len(r["guesses"]) != len(rows[0]["guesses"]))])
    assert "attention_mask" in mixed and int(mixed["attention_mask"].sum()) < mixed["input_ids"].numel()


def test_secrets_that_are_not_answers_get_the_fitting_answers_first_then_the_fitting_valid_words(
        tokenizer: Any) -> None:
    """A non-answer secret: after the opening the teacher guesses an answer while one fits, then a valid word that
    fits (the secret among them); the targets are the letter shares of the same words (brute force)."""
    rng = random.Random(4)
    extra = rng.sample(sorted(valid_guesses() - set(answers())), 400)
    teacher = ConsistentTeacher(answers(), opening=["stale", "prion"], extra=extra)
    assert teacher.answers == len(answers()) and teacher.words[teacher.answers:] == sorted(extra)
    collator = DistillCollator(tokenizer, teacher)
    games = [(secret, teacher.play(secret, rng)) for secret in extra[:60]]
    fell_back = 0
    for secret, game in games:
        assert all(marks == feedback(guess, secret) for guess, marks in game)
        targets = collator._game_targets(game)
        k = 0
        for turn, (guess, _) in enumerate(game):
            fitting_answers = [w for w in answers() if consistent(w, game[:turn])]
            pool = fitting_answers or [w for w in sorted(extra) if consistent(w, game[:turn])]
            if turn >= 2:
                assert guess in pool, (secret, game)
                fell_back += not fitting_answers
            for j in range(len(guess)):
                if turn >= 2:
                    heads = [w for w in pool if w[:j] == guess[:j]]
                    expected = np.bincount([ord(w[j]) - 97 for w in heads], minlength=26) / len(heads)
                    np.testing.assert_allclose(targets[k][1], expected, atol=1e-6)
                k += 1
            k += 1  # the end of the turn
    assert fell_back > 0  # some games ran out of answers and went on with valid words
    assert sum(game[-1][1] == "GGGGG" for _, game in games) / len(games) >= 0.9


def test_the_recipe_draws_a_share_of_sft_secrets_from_non_answers_and_never_a_held_out_word() -> None:
    from openenv_train.recipes.grpo_wordle import GrpoWordleConfig, TeacherSection

    cfg = GrpoWordleConfig()
    held, sft, grpo = cfg.secret_splits()
    others = [s for s in sft if s not in set(answers())]
    assert 0.45 < len(others) / len(sft) < 0.55 and set(others) <= valid_guesses()
    assert not set(held) & set(sft) and not set(held) & set(grpo) and not set(grpo) & set(sft)
    with pytest.raises(ValueError, match="teacher.valid_share"):
        TeacherSection(valid_share=1.5)
