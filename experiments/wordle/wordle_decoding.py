"""What a Wordle checkpoint knows against what letter-greedy decoding gets out of it: the GRPO recipe's held-out
games played offline, each guess after the fixed opening decoded by a width-W beam over the valid words not yet
guessed, scored by the model's own (unconstrained) log-probability of the whole word and its end token.

Width 1 is the recipe's greedy decoding exactly (each letter the most probable one that still begins a valid word
not guessed before: the ``guided_choice`` constraint), so its win rate is the recipe's held-out figure for that
checkpoint. For every width it counts the guesses after the opening that fit the marks: the first, those after a
guess that fit or missed, and those with one answer left (the secret) or more. For width 1 it also looks at every
guess that does not fit the marks while some answer does: how often the model scores a fitting answer above the
word it wrote, and by how many nats.

    python experiments/wordle/wordle_decoding.py runs/grpo-wordle/checkpoints/sft --widths 1 4 16

Offline (no servers); each width of 100 games takes under a minute on one core for the tiny model.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: runs from a clone

LETTERS = "abcdefghijklmnopqrstuvwxyz"


class Player:
    """A checkpoint deciding guesses after the opening (``beam``) and scoring whole words (``scores``)."""

    def __init__(self, path: str) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(1)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForCausalLM.from_pretrained(path).eval()
        self.vocab = self.tokenizer.get_vocab()
        self.end = self.vocab["<|end|>"]

    def prompt(self, history: list[tuple[str, str]]) -> list[int]:
        """The token ids the recipe's agent sends for the next guess (``recipes.wordle.prompt_ids``)."""
        from openenv_train.recipes.wordle import prompt_ids

        return prompt_ids(self.tokenizer, history)

    def _next(self, prompt: list[int], prefixes: list[str]) -> Any:
        import torch

        batch = torch.tensor([prompt + [self.vocab[c] for c in p] for p in prefixes])
        with torch.no_grad():
            return torch.log_softmax(self.model(batch).logits[:, -1].float(), -1)

    def beam(self, history: list[tuple[str, str]], words: frozenset[str], width: int) -> str:
        """The best-scoring word a width-``width`` beam finds among ``words`` minus those guessed."""
        allowed = {w[:i] for w in words - {g for g, _ in history} for i in range(6)}
        prompt, beams = self.prompt(history), [("", 0.0)]
        for _ in range(5):
            logp = self._next(prompt, [b for b, _ in beams])
            grown = [(b + c, s + float(row[self.vocab[c]])) for (b, s), row in zip(beams, logp, strict=True)
                     for c in LETTERS if b + c in allowed]
            beams = sorted(grown, key=lambda t: -t[1])[:width]
        if width == 1:  # greedy: the end token is forced after a whole word, so the word is decided
            return beams[0][0]
        logp = self._next(prompt, [b for b, _ in beams])
        return max(((b, s + float(row[self.end])) for (b, s), row in zip(beams, logp, strict=True)),
                   key=lambda t: t[1])[0]

    def scores(self, history: list[tuple[str, str]], words: list[str]) -> list[float]:
        """The model's log-probability of each whole word (and its end token) as the next guess."""
        import torch

        prompt = self.prompt(history)
        batch = torch.tensor([prompt + [self.vocab[c] for c in w] + [self.end] for w in words])
        with torch.no_grad():
            logp = torch.log_softmax(self.model(batch).logits.float(), -1)
        target = batch[:, len(prompt):]
        return logp[:, len(prompt) - 1:-1].gather(2, target[..., None])[..., 0].sum(1).tolist()  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a checkpoint folder of the GRPO Wordle recipe")
    parser.add_argument("--widths", type=int, nargs="+", default=[1, 4, 16], help="beam widths (1: greedy)")
    parser.add_argument("--seed", type=int, default=0, help="the recipe's seed (its held-out split)")
    args = parser.parse_args()

    from openenv_train.envs.wordle import answers, feedback, valid_guesses
    from openenv_train.recipes.wordle import GrpoWordleConfig, consistent

    config = GrpoWordleConfig(seed=args.seed)
    held, opening = config.secret_splits()[0], [w.lower() for w in config.teacher.opening]
    player, words, answer_set = Player(args.checkpoint), frozenset(valid_guesses()), set(answers())
    for width in args.widths:
        wins, gaps, misses = 0, [], 0
        fit = Counter[tuple[str, bool]]()  # (what came before, whether the guess fits the marks)
        for secret in held:
            history: list[tuple[str, str]] = []
            before = "first"
            for turn in range(6):
                guess = opening[turn] if turn < len(opening) else player.beam(history, words, width)
                fits = [w for w in answer_set - {g for g, _ in history} if consistent(w, history)]
                if turn >= len(opening):
                    fitted = consistent(guess, history)
                    fit[before, fitted] += 1
                    fit["one answer left" if len(fits) == 1 else "more", fitted] += 1
                    before = "after a fit" if fitted else "after a miss"
                    if width == 1 and fits and not fitted:
                        misses += 1
                        mine, *theirs = player.scores(history, [guess, *fits])
                        gaps.append(max(theirs) - mine)
                history.append((guess, feedback(guess, secret)))
                if guess == secret:
                    wins += 1
                    break
        print(f"width {width}: {wins} of {len(held)} held-out games won")
        print("  guesses after the opening that fit the marks: " + "; ".join(
            f"{when} {fit[when, True]} of {fit[when, True] + fit[when, False]}"
            for when in ("first", "after a fit", "after a miss", "one answer left", "more")))
        if gaps:
            better = sum(g > 0 for g in gaps)
            print(f"  {misses} guesses after the opening did not fit the marks while an answer did; in {better} "
                  f"({better / misses:.0%}) the model scores a fitting answer above its guess (median "
                  f"{statistics.median(gaps):+.1f} nats)")


if __name__ == "__main__":
    main()
