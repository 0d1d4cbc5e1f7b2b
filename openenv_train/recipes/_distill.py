"""SFT on teacher games with the teacher's whole next-letter distribution as the target (distillation).

A teacher game shows one consistent word per turn, a sample from "any answer that fits the marks". Training on the
sample alone (hard labels) makes a small model learn that distribution slowly, one draw at a time; here every
letter position is trained on the exact distribution the teacher drew from: among the words it draws from (the
answers that fit every mark so far, else the valid words that do) that start with the letters already written,
the share that continues with each letter. That is the same objective in expectation, with far less noise per
token. It needs a character-level tokenizer (a letter is a token); other tokenizers train on the sampled
conversations instead.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from ._teacher import ConsistentTeacher
from ._wordle import teacher_conversation

__all__ = ["DistillCollator", "distill_trainer", "games_dataset", "teacher_dataset"]


def games_dataset(games: Sequence[Sequence[tuple[str, str]]], batch_size: int, seed: int = 0) -> Any:
    """Teacher games as a ``datasets.Dataset`` (columns ``guesses`` and ``marks``) for :class:`DistillCollator`,
    ordered so that every run of ``batch_size`` rows holds games of one length (a game's token count follows from
    its number of guesses): read sequentially, no batch wastes compute on padding or needs an attention mask. The
    batches are shuffled; the few games left over per length close the dataset."""
    import datasets

    rng = random.Random(seed)
    by_length: dict[int, list[int]] = {}
    for i, game in enumerate(games):
        by_length.setdefault(len(game), []).append(i)
    batches: list[list[int]] = []
    rest: list[int] = []
    for rows in by_length.values():
        rng.shuffle(rows)
        full = len(rows) - len(rows) % batch_size
        batches += [rows[k:k + batch_size] for k in range(0, full, batch_size)]
        rest += rows[full:]
    rng.shuffle(batches)
    order = [i for batch in batches for i in batch] + rest
    return datasets.Dataset.from_dict({"guesses": [[g for g, _ in games[i]] for i in order],
                                       "marks": [[m for _, m in games[i]] for i in order]})


class DistillCollator:
    """Turns teacher games (rows of :func:`games_dataset`) into a batch: ``input_ids``, ``attention_mask`` (only when
    the rows differ in length), ``labels`` (the sampled tokens, -100 off the assistant turns) and ``targets`` (the
    teacher's next-token distribution at every position that predicts an assistant token; zero elsewhere)."""

    def __init__(self, tokenizer: Any, teacher: ConsistentTeacher, system_prompt: str | None = None) -> None:
        import numpy as np

        from ..policy import encode_char_chat

        self.tokenizer, self.teacher, self.system_prompt = tokenizer, teacher, system_prompt
        self._encode = encode_char_chat
        vocab = tokenizer.get_vocab()
        self.vocab_size = len(tokenizer)
        self.letter_ids = np.array([vocab[chr(97 + i)] for i in range(26)])
        self.end_id = vocab[tokenizer.eos_token]
        self.pad_id = tokenizer.pad_token_id
        self.letters = np.array([[ord(c) - 97 for c in w] for w in teacher.words], dtype=np.int8)

    def _game_targets(self, history: Sequence[tuple[str, str]]) -> list[Any]:
        """Per assistant token of the game, in order: the teacher's distribution over the 26 letters (a numpy
        vector; one-hot on the opening's fixed words), or None for the end-of-turn token (always the end)."""
        import numpy as np

        teacher = self.teacher
        candidates = np.arange(len(teacher.words))
        out: list[Any] = []
        for turn, (guess, marks) in enumerate(history):
            if turn < len(teacher.opening):
                out += [np.eye(26, dtype=np.float32)[ord(letter) - 97] for letter in guess]
            else:
                rows = self.letters[teacher.choices(candidates)]
                alive = np.ones(len(rows), dtype=bool)
                for j, letter in enumerate(guess):
                    counts = np.bincount(rows[alive, j], minlength=26).astype(np.float32)
                    out.append(counts / counts.sum())
                    alive &= rows[:, j] == ord(letter) - 97
            out.append(None)
            candidates = candidates[teacher.row(guess)[candidates] == teacher.code(marks)]
        return out

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        import numpy as np
        import torch

        games = [list(zip(row["guesses"], row["marks"], strict=True)) for row in rows]
        encoded = [self._encode(self.tokenizer, teacher_conversation(g, self.system_prompt)) for g in games]
        width = max(len(ids) for ids, _ in encoded)
        ids = np.full((len(games), width), self.pad_id, dtype=np.int64)
        attention = np.zeros((len(games), width), dtype=np.int64)
        labels = np.full((len(games), width), -100, dtype=np.int64)
        targets = np.zeros((len(games), width, self.vocab_size), dtype=np.float32)
        for b, ((row, mask), game) in enumerate(zip(encoded, games, strict=True)):
            ids[b, :len(row)] = row
            attention[b, :len(row)] = 1
            positions = [k for k, m in enumerate(mask) if m]
            dists = self._game_targets(game)
            if len(positions) != len(dists):
                raise AssertionError(f"{len(positions)} assistant tokens for {len(dists)} targets in game {game}")
            for k, dist in zip(positions, dists, strict=True):
                labels[b, k] = row[k]
                if dist is None:
                    targets[b, k - 1, self.end_id] = 1.0  # logits at k-1 predict token k
                else:
                    targets[b, k - 1, self.letter_ids] = dist
        batch = {"input_ids": torch.from_numpy(ids), "labels": torch.from_numpy(labels),
                 "targets": torch.from_numpy(targets)}
        if not attention.all():  # a mask costs ~15% of a CPU step; rows of one length need none
            batch["attention_mask"] = torch.from_numpy(attention)
        return batch


def distill_trainer() -> type:
    """``SFTTrainer`` whose loss is the cross-entropy to the collator's ``targets`` (the teacher's distribution)."""
    from trl import SFTTrainer

    class DistillSFTTrainer(SFTTrainer):  # type: ignore[misc]
        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            import torch

            targets = inputs.pop("targets")
            inputs.pop("labels", None)
            outputs = model(**inputs)
            logp = torch.log_softmax(outputs.logits.float(), dim=-1)
            weight = targets.sum(-1)  # 1 where an assistant token is predicted, 0 elsewhere
            loss = -(targets * logp).sum(-1).sum() / weight.sum().clamp(min=1.0)
            return (loss, outputs) if return_outputs else loss

    return DistillSFTTrainer


def teacher_dataset(tokenizer: Any, secrets: Sequence[str], *, opening: Sequence[str], system_prompt: str | None,
                    distill: bool, batch_size: int, seed: int) -> tuple[Any, Any, Any]:
    """Teacher games on ``secrets`` (never a held-out word; answers or other valid guesses) as (dataset, collator,
    trainer class): the teacher's next-letter distributions when ``distill`` and the tokenizer is a character one,
    else the sampled conversations (TRL renders them; collator and trainer class are None)."""
    import datasets

    from ..envs.wordle import answers
    from ..policy import is_char_tokenizer

    known = answers()
    # held-out words may be guessed and be targets, never secrets
    teacher = ConsistentTeacher(known, opening, extra=sorted(set(secrets) - set(known)))
    rng = random.Random(seed)
    games = [teacher.play(secret, rng) for secret in secrets]
    if distill and is_char_tokenizer(tokenizer):
        collator = DistillCollator(tokenizer, teacher, system_prompt)
        return games_dataset(games, batch_size, seed), collator, distill_trainer()
    chats = [teacher_conversation(game, system_prompt) for game in games]
    return datasets.Dataset.from_dict({"messages": chats}), None, None
