"""How far training after SFT can move the Wordle recipe's held-out win rate: the teacher's own win rate, then
on-policy distillation (DAgger) from a checkpoint.

The recipe's SFT imitates a teacher (its fixed opening, then a random answer that fits every mark) on the
teacher's games. This script first plays that teacher on every answer: what it leaves to win is what a better
strategy could add. Then, from the checkpoint, rounds of: the model plays ``--games`` games on training secrets
(never the held-out words of ``--seed``; a ``--valid-share`` of them valid guesses that are not answers), each guess
after the opening decoded as the recipe decodes it (letter by letter under the valid-guess constraint, greedy or at
``--temperature``); every letter of those games gets the teacher's exact next-letter distribution for the state
the model reached (:class:`~openenv_train.recipes.wordle.DistillCollator`: the model's own mistakes included);
``--steps`` AdamW steps on that cross-entropy. After each round the held-out games are played greedily and compared,
paired by secret, with the checkpoint's. That is a denser signal than any reward (a target for every letter of
every game, not one number per game), on the states the model itself reaches, as DAgger's.

    python experiments/wordle/wordle_on_policy.py runs/grpo-wordle/checkpoints/sft --rounds 3
    python experiments/wordle/wordle_on_policy.py runs/grpo-wordle/checkpoints/sft --rounds 4 --valid-share 1.0

Offline, one process; a round of 8,000 games and 500 steps takes about 1.5 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: runs from a clone


class Player:
    """A checkpoint playing many games at once, each guess after the opening decoded letter by letter: the most
    probable letter (or one sampled at ``temperature``) that still begins a valid word not guessed before, as the
    recipe's ``guided_choice`` constraint allows."""

    def __init__(self, model: Any, tokenizer: Any, words: list[str], opening: list[str]) -> None:
        vocab = tokenizer.get_vocab()
        self.model, self.tokenizer, self.opening = model, tokenizer, opening
        self.letter_ids = [vocab[chr(97 + i)] for i in range(26)]
        self.words_with = Counter(w[:k] for w in words for k in range(6))  # valid words starting with a prefix

    def _allowed(self, prefix: str, guessed: set[str]) -> list[int]:
        allowed = []
        for c in range(26):
            word = prefix + chr(97 + c)
            if self.words_with[word] > sum(g.startswith(word) for g in guessed):
                allowed.append(c)
        return allowed

    def play(self, secrets: list[str], temperature: float = 0.0, batch: int = 256) -> list[list[tuple[str, str]]]:
        """One game per secret: its (guess, marks) pairs until the secret is found or six guesses are spent."""
        import torch

        from openenv_train.envs.wordle import feedback
        from openenv_train.recipes.wordle import prompt_ids

        games: list[list[tuple[str, str]]] = []
        with torch.inference_mode():
            for start in range(0, len(secrets), batch):
                chunk = secrets[start:start + batch]
                history: list[list[tuple[str, str]]] = [[] for _ in chunk]
                live = list(range(len(chunk)))
                for turn in range(6):
                    if turn < len(self.opening):
                        words = [self.opening[turn]] * len(live)
                    else:  # every live game's prompt has the same length at a turn: no padding
                        out = self.model(torch.tensor([prompt_ids(self.tokenizer, history[i]) for i in live]),
                                         use_cache=True)
                        words = [""] * len(live)
                        for _ in range(5):
                            logits = out.logits[:, -1].float()[:, self.letter_ids]
                            mask = torch.full_like(logits, float("-inf"))
                            for r, i in enumerate(live):
                                mask[r, self._allowed(words[r], {g for g, _ in history[i]})] = 0.0
                            logits = logits + mask
                            letters = (torch.multinomial(torch.softmax(logits / temperature, -1), 1)[:, 0]
                                       if temperature > 0 else logits.argmax(-1))
                            words = [w + chr(97 + int(c)) for w, c in zip(words, letters, strict=True)]
                            step = torch.tensor([[self.letter_ids[int(c)]] for c in letters])
                            out = self.model(step, past_key_values=out.past_key_values, use_cache=True)
                    for r, i in enumerate(live):
                        history[i].append((words[r], feedback(words[r], chunk[i])))
                    live = [i for i in live if history[i][-1][1] != "GGGGG"]
                    if not live:
                        break
                games += history
        return games


def teacher_win_rate(opening: list[str], answers: list[str], seed: int = 0, plays: int = 3) -> tuple[float, float]:
    """The recipe's teacher on every answer, ``plays`` games each: its win rate and mean guesses on won games."""
    from openenv_train.recipes.wordle import ConsistentTeacher

    teacher, rng = ConsistentTeacher(answers, opening), random.Random(seed)
    games = [teacher.play(secret, rng) for secret in answers for _ in range(plays)]
    won = [len(g) for g in games if g[-1][1] == "GGGGG"]
    return len(won) / len(games), sum(won) / max(1, len(won))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a checkpoint folder of the GRPO Wordle recipe (e.g. its sft one)")
    parser.add_argument("--seed", type=int, default=0, help="the recipe's seed (its held-out split)")
    parser.add_argument("--rounds", type=int, default=3, help="play, then train, this many times")
    parser.add_argument("--games", type=int, default=8000, help="games the model plays per round")
    parser.add_argument("--valid-share", type=float, default=0.5,
                        help="share of those games' secrets that are valid guesses, not answers")
    parser.add_argument("--temperature", type=float, default=0.0, help="the model's letters: 0 greedy, else sampled")
    parser.add_argument("--steps", type=int, default=500, help="optimizer steps per round")
    parser.add_argument("--batch-size", type=int, default=32, help="games per step")
    parser.add_argument("--learning-rate", type=float, default=1e-4, help="AdamW learning rate (constant)")
    parser.add_argument("--save", default="", help="save the final model to this folder")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.envs.wordle import answers, valid_guesses
    from openenv_train.recipes import paired_difference
    from openenv_train.recipes.wordle import ConsistentTeacher, DistillCollator, GrpoWordleConfig, distill_loss

    config = GrpoWordleConfig(seed=args.seed)
    held = config.secret_splits()[0]
    opening = [w.lower() for w in config.teacher.opening]
    every, valid = sorted(answers()), sorted(valid_guesses())
    rate, guesses = teacher_win_rate(opening, every)
    print(f"teacher (opening {', '.join(opening)}, then a random answer that fits): wins {rate:.4f} of "
          f"{3 * len(every):,} games on the answers, {guesses:.2f} guesses a win")

    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint).eval()
    others = sorted(set(valid) - set(every))
    train_answers = sorted(set(every) - set(held))
    # the model may guess any valid word: the teacher knows them all, and draws from the answers that fit first
    collator = DistillCollator(tokenizer, ConsistentTeacher(every, opening, extra=others))
    player = Player(model, tokenizer, valid, opening)

    def held_out() -> list[float]:
        model.eval()
        return [float(g[-1][1] == "GGGGG") for g in player.play(held)]

    before = held_out()
    print(f"held-out greedy (seed {args.seed}, {len(held)} secrets): {sum(before):.0f} won")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.01, betas=(0.9, 0.98))
    rng = random.Random(args.seed)
    for round_ in range(args.rounds):
        secrets = [rng.choice(others) if rng.random() < args.valid_share else rng.choice(train_answers)
                   for _ in range(args.games)]
        start = time.perf_counter()
        model.eval()
        games = player.play(secrets, args.temperature)
        won = sum(g[-1][1] == "GGGGG" for g in games) / len(games)
        played = time.perf_counter() - start
        model.train()
        for _ in range(args.steps):
            batch = collator([{"guesses": [g for g, _ in game], "marks": [m for _, m in game]}
                              for game in rng.choices(games, k=args.batch_size)])
            targets = batch.pop("targets")
            batch.pop("labels")
            loss = distill_loss(model(**batch).logits, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        after = held_out()
        d = paired_difference(after, before)
        print(f"round {round_ + 1}: its {len(games):,} games won {won:.3f} ({played:.0f} s); {args.steps} steps "
              f"({time.perf_counter() - start - played:.0f} s), last loss {loss.item():.4f}; held-out greedy "
              f"{sum(after):.0f} won, paired {d['mean']:+.2f} [{d['ci_low']:+.2f}, {d['ci_high']:+.2f}]", flush=True)
    if args.save:
        model.save_pretrained(args.save)
        tokenizer.save_pretrained(args.save)


if __name__ == "__main__":
    main()
