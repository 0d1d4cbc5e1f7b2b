"""SFT on teacher games with the teacher's whole next-letter distribution as the target (distillation).

A teacher game shows one consistent word per turn, a sample from "any answer that fits the marks". Training on the
sample alone (hard labels) makes a small model learn that distribution slowly, one draw at a time; here every
letter position is trained on the exact distribution the teacher drew from: among the words it draws from (the
answers that fit every mark so far, else the valid words that do) that start with the letters already written,
the share that continues with each letter. That is the same objective in expectation, with far less noise per
token. With guesses written in any order (the recipe's ``order: any``: each letter followed by its position) the
teacher writes a uniformly random position not written yet, then its letter, among the words that agree with the
letters already written; so each letter is trained on the mixture over the positions left of their letter
shares, and each position marker on which of those positions the written letter came from (the opening's fixed
words: left to right, one-hot). It needs a character-level tokenizer (a letter is a token); other tokenizers train on the sampled
conversations instead.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from .chat import teacher_conversation
from .teacher import ConsistentTeacher

__all__ = ["DistillCollator", "distill_loss", "distill_trainer", "games_dataset", "guess_orders", "teacher_dataset"]


def guess_orders(games: Sequence[Sequence[tuple[str, str]]], opening: int, seed: int) -> list[list[list[int]]]:
    """For every guess of every game the order its letters are written in (0-based positions): left to right for
    the ``opening`` fixed guesses, a uniformly random order for each later one."""
    rng = random.Random(seed)
    return [[list(range(len(g))) if k < opening else rng.sample(range(len(g)), len(g)) for k, (g, _) in enumerate(game)]
            for game in games]


def games_dataset(games: Sequence[Sequence[tuple[str, str]]], batch_size: int, seed: int = 0,
                  orders: Sequence[Sequence[Sequence[int]]] | None = None) -> Any:
    """Teacher games as a ``datasets.Dataset`` (columns ``guesses`` and ``marks``, and ``orders`` when given: each
    guess's written order as a string of positions) for :class:`DistillCollator`,
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
    columns = {"guesses": [[g for g, _ in games[i]] for i in order], "marks": [[m for _, m in games[i]] for i in order]}
    if orders is not None:
        columns["orders"] = [["".join(map(str, o)) for o in orders[i]] for i in order]
    return datasets.Dataset.from_dict(columns)


class DistillCollator:
    """Turns teacher games (rows of :func:`games_dataset`) into a batch: ``input_ids``, ``attention_mask`` (only when
    the rows differ in length), ``labels`` (the sampled tokens, -100 off the assistant turns) and ``targets`` (the
    teacher's next-token distribution at every position that predicts an assistant token; zero elsewhere). A
    model's own games in the given order work too (on-policy distillation): where its guess's letters so far begin
    no word the teacher draws from, those letters have no target."""

    def __init__(self, tokenizer: Any, teacher: ConsistentTeacher, system_prompt: str | None = None) -> None:
        import numpy as np

        from ...policy import encode_char_chat

        self.tokenizer, self.teacher, self.system_prompt = tokenizer, teacher, system_prompt
        self._encode = encode_char_chat
        vocab = tokenizer.get_vocab()
        self.vocab_size = len(tokenizer)
        self.letter_ids = np.array([vocab[chr(97 + i)] for i in range(26)])
        self.marker_ids = np.array([vocab[str(p + 1)] for p in range(5)])
        self.end_id = vocab[tokenizer.eos_token]
        self.pad_id = tokenizer.pad_token_id
        self.letters = np.array([[ord(c) - 97 for c in w] for w in teacher.words], dtype=np.int8)

    def _game_targets(self, history: Sequence[tuple[str, str]], orders: Sequence[str] | None = None) -> list[Any]:
        """Per assistant token of the game, in order: (token ids, the teacher's distribution over them) — the 26
        letters (one-hot on the opening's fixed words) or, with ``orders``, the 5 position markers after each
        letter — or None for the end-of-turn token (always the end)."""
        import numpy as np

        teacher = self.teacher
        candidates = np.arange(len(teacher.words))
        out: list[Any] = []
        for turn, (guess, marks) in enumerate(history):
            written = [int(p) for p in orders[turn]] if orders is not None else range(len(guess))
            if turn < len(teacher.opening):
                for j in written:
                    out.append((self.letter_ids, np.eye(26, dtype=np.float32)[ord(guess[j]) - 97]))
                    if orders is not None:
                        out.append((self.marker_ids, np.eye(5, dtype=np.float32)[j]))
            else:
                rows = self.letters[teacher.choices(candidates)]
                alive = np.ones(len(rows), dtype=bool)
                left = list(range(len(guess)))
                for j in written:
                    letter = ord(guess[j]) - 97
                    if orders is None:  # a player's own guess may leave no word to draw from: no target then
                        counts = np.bincount(rows[alive, j], minlength=26).astype(np.float32)
                        out.append((self.letter_ids, counts / max(counts.sum(), 1.0)))
                    else:  # a position drawn uniformly among those left, then its letter: a mixture, then the posterior
                        shares = np.stack([np.bincount(rows[alive, p], minlength=26) for p in left]).astype(np.float32)
                        shares /= shares.sum(1, keepdims=True)
                        out.append((self.letter_ids, shares.mean(0)))
                        where = np.zeros(5, dtype=np.float32)
                        where[left] = shares[:, letter]
                        out.append((self.marker_ids, where / where.sum()))
                        left.remove(j)
                    alive &= rows[:, j] == letter
            out.append(None)
            candidates = candidates[teacher.row(guess)[candidates] == teacher.code(marks)]
        return out

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        import numpy as np
        import torch

        games = [list(zip(row["guesses"], row["marks"], strict=True)) for row in rows]
        orders = [row.get("orders") for row in rows]
        encoded = [self._encode(self.tokenizer, teacher_conversation(
            g, self.system_prompt, None if o is None else [[int(p) for p in w] for w in o]))
            for g, o in zip(games, orders, strict=True)]
        width = max(len(ids) for ids, _ in encoded)
        ids = np.full((len(games), width), self.pad_id, dtype=np.int64)
        attention = np.zeros((len(games), width), dtype=np.int64)
        labels = np.full((len(games), width), -100, dtype=np.int64)
        targets = np.zeros((len(games), width, self.vocab_size), dtype=np.float32)
        for b, ((row, mask), game, order) in enumerate(zip(encoded, games, orders, strict=True)):
            ids[b, :len(row)] = row
            attention[b, :len(row)] = 1
            positions = [k for k, m in enumerate(mask) if m]
            dists = self._game_targets(game, order)
            if len(positions) != len(dists):
                raise AssertionError(f"{len(positions)} assistant tokens for {len(dists)} targets in game {game}")
            for k, dist in zip(positions, dists, strict=True):
                labels[b, k] = row[k]
                if dist is None:
                    targets[b, k - 1, self.end_id] = 1.0  # logits at k-1 predict token k
                else:
                    targets[b, k - 1, dist[0]] = dist[1]
        batch = {"input_ids": torch.from_numpy(ids), "labels": torch.from_numpy(labels),
                 "targets": torch.from_numpy(targets)}
        if not attention.all():  # a mask costs ~15% of a CPU step; rows of one length need none
            batch["attention_mask"] = torch.from_numpy(attention)
        return batch


def distill_loss(logits: Any, targets: Any) -> Any:
    """The cross-entropy of ``logits`` to the collator's ``targets``, averaged over the positions that have one."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    weight = targets.sum(-1)  # 1 where an assistant token is predicted, 0 elsewhere
    return -(targets * logp).sum(-1).sum() / weight.sum().clamp(min=1.0)


def distill_trainer() -> type:
    """``SFTTrainer`` whose loss is :func:`distill_loss` (the cross-entropy to the teacher's distribution)."""
    from trl import SFTTrainer

    class DistillSFTTrainer(SFTTrainer):  # type: ignore[misc]
        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            targets = inputs.pop("targets")
            inputs.pop("labels", None)
            outputs = model(**inputs)
            loss = distill_loss(outputs.logits, targets)
            return (loss, outputs) if return_outputs else loss

    return DistillSFTTrainer


def teacher_dataset(tokenizer: Any, secrets: Sequence[str], *, opening: Sequence[str], system_prompt: str | None,
                    distill: bool, batch_size: int, seed: int, order: str = "given") -> tuple[Any, Any, Any]:
    """Teacher games on ``secrets`` (never a held-out word; answers or other valid guesses) as (dataset, collator,
    trainer class): the teacher's next-letter distributions when ``distill`` and the tokenizer is a character one,
    else the sampled conversations (TRL renders them; collator and trainer class are None). With ``order`` ``any``
    each guess after the opening is written in a random order (:func:`guess_orders`)."""
    import datasets

    from ...envs.wordle import answers
    from ...policy import is_char_tokenizer

    known = answers()
    # held-out words may be guessed and be targets, never secrets
    teacher = ConsistentTeacher(known, opening, extra=sorted(set(secrets) - set(known)))
    rng = random.Random(seed)
    games = [teacher.play(secret, rng) for secret in secrets]
    orders = guess_orders(games, len(opening), seed + 3) if order == "any" else None
    if distill and is_char_tokenizer(tokenizer):
        collator = DistillCollator(tokenizer, teacher, system_prompt)
        return games_dataset(games, batch_size, seed, orders), collator, distill_trainer()
    chats = [teacher_conversation(game, system_prompt, None if orders is None else orders[i])
             for i, game in enumerate(games)]
    return datasets.Dataset.from_dict({"messages": chats}), None, None
