"""How many GRPO steps does catch's 10x5 board need before the tiny model catches every ball, at each learning
rate and from each initial weights?

An in-process replica of ``recipes.grpo``'s training on catch, fast enough to compare settings: the recipe's tiny
model (``init_range`` 0.1, 4 layers), its prompt (the current board alone, in the chat template), 8 seeds x 8
games a step, one row per move with its game's advantage against its group's (TRL's group-normalised GRPO
advantage), the choice restricted to the three moves, and TRL's ``dapo`` loss on policy (ratio 1) with the KL term
to the starting model (k3, ``--beta``), the entropy bonus (``--ent``) and the warmup. Each distinct board is one
forward pass (its rows share its logits). No env server, pool or endpoint: the recipe's own figures come from
running it. Every ``--eval-every`` steps it prints the rollouts' mean reward, the greedy policy's catch rate over
the five ball columns (it is deterministic per column) and the sampled policy's mean reward on 100 games.

    python experiments/catch/catch_steps.py --lr 4e-4
    python experiments/catch/catch_steps.py --lr 2e-4 --init-seed 2 --seed 2
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from openenv_train.policy import build_tiny_model


def board(rows: int, cols: int, ball_row: int, ball_col: int, paddle: int) -> str:
    """OpenSpiel's catch observation string."""
    return "".join("".join("x" if (r == rows - 1 and c == paddle) else "o" if (r, c) == (ball_row, ball_col) else "."
                           for c in range(cols)) + "\n" for r in range(rows))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=10, help="board rows")
    p.add_argument("--cols", type=int, default=5, help="board columns")
    p.add_argument("--steps", type=int, default=160, help="GRPO steps")
    p.add_argument("--prompts", type=int, default=8, help="seeds a step")
    p.add_argument("--gens", type=int, default=8, help="games a seed")
    p.add_argument("--lr", type=float, default=4e-4, help="AdamW learning rate")
    p.add_argument("--warmup", type=int, default=10, help="warmup steps")
    p.add_argument("--beta", type=float, default=0.1, help="KL weight")
    p.add_argument("--ent", type=float, default=0.05, help="entropy bonus weight")
    p.add_argument("--init-seed", type=int, default=0, help="seed of the initial weights")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampling")
    p.add_argument("--eval-every", type=int, default=20, help="steps between evaluations")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    path = build_tiny_model(Path(tempfile.mkdtemp()) / "tiny", seed=a.init_seed, hidden_size=128,
                            intermediate_size=384, layers=4, heads=4, kv_heads=4, max_context=1024, init_range=0.1,
                            tokenizer="char")
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    ref = copy.deepcopy(model).eval()
    moves = [tokenizer.convert_tokens_to_ids(c) for c in "012"]
    ids: dict[str, list[int]] = {}

    def logits(m: torch.nn.Module, texts: list[str]) -> torch.Tensor:
        """The three moves' logits for each board, one forward pass per distinct board."""
        distinct = list(dict.fromkeys(texts))
        for t in distinct:
            if t not in ids:
                encoded: Any = tokenizer.apply_chat_template([{"role": "user", "content": t}],
                                                             add_generation_prompt=True, tokenize=True,
                                                             return_dict=False)
                ids[t] = list(encoded)
        out = m(torch.tensor([ids[t] for t in distinct])).logits[:, -1, moves]
        where = {t: i for i, t in enumerate(distinct)}
        return out[torch.tensor([where[t] for t in texts])]

    def play(columns: list[int], greedy: bool = False) -> tuple[list[list[tuple[str, int]]], list[float]]:
        paddles = [a.cols // 2] * len(columns)
        played: list[list[tuple[str, int]]] = [[] for _ in columns]
        for r in range(a.rows - 1):
            texts = [board(a.rows, a.cols, r, c, pc) for c, pc in zip(columns, paddles, strict=True)]
            with torch.no_grad():
                lg = logits(model, texts)
            chosen = lg.argmax(-1) if greedy else torch.distributions.Categorical(logits=lg).sample()
            for i, move in enumerate(chosen.tolist()):
                played[i].append((texts[i], move))
                paddles[i] = min(max(paddles[i] + move - 1, 0), a.cols - 1)
        return played, [1.0 if pc == c else -1.0 for pc, c in zip(paddles, columns, strict=True)]

    def evaluate() -> tuple[float, float]:
        model.eval()
        _, greedy = play(list(range(a.cols)), greedy=True)
        _, sampled = play([random.Random(1000 + i).randrange(a.cols) for i in range(100)])
        model.train()
        return sum(x > 0 for x in greedy) / a.cols, sum(sampled) / len(sampled)

    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (a.warmup + 1)))
    start, rollouts = time.time(), []
    caught, sampled = evaluate()
    print(json.dumps({"step": 0, "greedy_caught": caught, "sampled_reward": sampled}), flush=True)
    for step in range(1, a.steps + 1):
        columns = [c for c in (rng.randrange(a.cols) for _ in range(a.prompts)) for _ in range(a.gens)]
        model.eval()
        played, rewards = play(columns)
        model.train()
        grouped = torch.tensor(rewards).view(a.prompts, a.gens)
        std = grouped.std(1, keepdim=True)
        advantage = ((grouped - grouped.mean(1, keepdim=True)) / (std + 1e-4)).flatten()
        texts = [t for game in played for t, _ in game]
        chosen = torch.tensor([m for game in played for _, m in game])
        adv = torch.cat([advantage[i].repeat(len(game)) for i, game in enumerate(played)])
        logp_all = logits(model, texts).log_softmax(-1)
        logp = logp_all.gather(1, chosen[:, None])[:, 0]
        with torch.no_grad():
            ref_logp = logits(ref, texts).log_softmax(-1).gather(1, chosen[:, None])[:, 0]
        tokens = 2 * len(texts)  # each move and the end token the constraint forces (logprob 0, entropy 0)
        kl = torch.exp(ref_logp - logp) - (ref_logp - logp) - 1
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        loss = (-(adv * torch.exp(logp - logp.detach())).sum() + a.beta * kl.sum() - a.ent * entropy.sum()) / tokens
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        rollouts.append(sum(rewards) / len(rewards))
        if step % a.eval_every == 0 or step == a.steps:
            caught, sampled = evaluate()
            print(json.dumps({"step": step, "rollout_reward": round(sum(rollouts[-a.eval_every:]) / a.eval_every, 3),
                              "greedy_caught": caught, "sampled_reward": round(sampled, 2),
                              "entropy": round(float(entropy.detach().mean()), 3),
                              "flat_groups": float((std.flatten() == 0).float().mean()),
                              "seconds": round(time.time() - start)}), flush=True)


if __name__ == "__main__":
    main()
