"""One GRPO step on Wordle, three ways, side by side: our pool path vs TRL's own generation.

- ``ours``: ``make_rollout_func(pool, policy_server=...)`` (the recipe's path): a Ray rollout pool plays the
  episodes concurrently against our Wordle server; the trainer's live model answers through a capturing
  ``PolicyServer`` (``LocalBackend``) in this process.
- ``ours_thread``: the same with the model decoding in this process (``LocalConfig(engine="thread")``), as before
  the engine process.
- ``ours_joining``: ``ours`` with continuous batching (``LocalConfig(continuous=True)``): a game's next turn joins
  the turns decoding instead of waiting for them to end.
- ``ours_overlap``: ``ours`` with ``make_rollout_func(overlap=True)`` under ``grpo_trainer_class()``'s trainer: the
  next step's games play while this step trains (one step off-policy).
- ``ours_nocache``: the same with ``LocalBackend``'s prefix cache off (every turn prefills the whole
  conversation again); ``ours_before``: also with torch's thread setting while decoding and the batcher's plain
  5 ms window, i.e. the serving path before those three changes (``LocalConfig(prefix_cache_mb=0,
  decode_threads=0, batch_wait_fraction=0)``).
- ``trl_env``: ``GRPOTrainer(environment_factory=make_environment_factory("wordle"))``: TRL generates in-process
  (batched ``model.generate`` per tool round) and calls the env's tool once per rollout, one after another.
- ``trl_single``: TRL with a plain single-turn reward (no env), for scale.

All three use the same tiny model (``build_tiny_model``, taught in a few seconds to answer every turn with a
``wordle_step`` tool call, so both multi-turn paths play full six-guess games), the same prompt, tools and chat
template, ``num_generations``, games per step, ``max_completion_length`` and sampling (temperature 1.0).
Our episodes use :class:`ToolGame`, which mirrors TRL's tool loop (the reset text appended to the prompt, each
tool result rendered as TRL renders it, the rollout ended where TRL's token budget ends it), so both paths send the
model the same conversations.

Seconds per step (after one warm-up step) are split into generation, env, reward and optimizer. TRL's parts come
from its own ``profiling_context`` timers (``transformers.generate``, the reward functions) plus timers around the
env class's methods; on our path generation and env steps overlap (episodes run concurrently), so they are one
figure, ``rollout``. ``optimizer`` is the rest of the step (loss, backward, optimizer step). ``turns`` (model turns
a game) and ``tokens`` (completion tokens a game, TRL's ``completions/mean_length``) say whether the paths played
the same games: a gap in them is a gap in work, not in speed. ``cores`` is how many of the machine's cores were busy
during a step on average (all processes, from ``/proc/stat``): a step that keeps every core busy cannot be made
faster by running its parts at the same time, only by less work. Under ``ours_overlap`` the ``rollout`` column is
the wait for the games played during the step before::

    python benchmarks/grpo_step.py [--games 8 32] [--steps 3] [--json out.json]
                                   [--modes ours ours_overlap ours_thread ours_joining ours_nocache ours_before trl_env
                                            trl_single]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Play Wordle with the wordle_step tool."
GUESSES = ("[crane]", "[slate]", "[moist]", "[pious]", "[lucky]", "[dwarf]")
TIMES: dict[str, float] = defaultdict(float)


def _tools() -> list[dict[str, Any]]:
    from transformers.utils import get_json_schema

    from openenv_train.integrations.trl import make_environment_factory

    cls = make_environment_factory("wordle", max_sessions=2)
    try:
        schema = get_json_schema(cls.wordle_step)
        env = cls()
        first = env.reset(task="tiger")
        replies = [env.wordle_step(message=g) for g in GUESSES]
        del env  # its session closes before the server stops
    finally:
        cls.shutdown()
    # The schema as TRL renders the env's method (``return`` included): both paths must show the model the same
    # system prompt, or the tiny model, taught on one conversation, answers TRL's prompt with noise.
    return [schema], [str(first), *replies]  # type: ignore[return-value]


def _progress(what: str) -> None:
    """Setup and mode lines on stderr with wall and CPU seconds so far: on a starved machine (a process at nice 19
    beside busy ones gets ~1% of a core) the setup alone takes many minutes, and this shows where it is."""
    print(f"[{time.perf_counter() - _START:7.1f} s wall, {time.process_time():6.1f} s cpu] {what}", file=sys.stderr,
          flush=True)


_START = time.perf_counter()


def build_model(out: Path, teach_steps: int = 150) -> tuple[Path, list[dict[str, Any]]]:
    """The tiny model, taught to call ``wordle_step`` on every turn (one real game as the lesson)."""
    from openenv_train.policy import build_tiny_model, teach_tiny_model

    tools, texts = _tools()
    path = build_tiny_model(out / "tiny")
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT + texts[0]}]
    for guess, reply in zip(GUESSES, texts[1:], strict=True):
        call = {"type": "function", "function": {"name": "wordle_step", "arguments": {"message": guess}}}
        messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                     {"role": "tool", "name": "wordle_step", "content": reply}]
    messages.append({"role": "assistant", "content": "Game over."})  # the model stops calling: the episode ends
    teach_tiny_model(path, [messages], tools=tools, steps=teach_steps, lr=3e-3)
    return path, tools


class ToolGame:
    """TRL's tool loop as an agent: reset text appended to the prompt, each result as a ``tool`` message, and TRL's
    stop rule: no next turn once prompt growth (model and tool tokens) would pass ``budget`` tokens
    (``max_completion_length``), the tool results' tokens counted as TRL counts them (``tool_suffix_tokens``)."""

    def __init__(self, tools: list[dict[str, Any]], budget: int, tokenizer: Any) -> None:
        self.tools, self.budget, self.tokenizer = tools, budget, tokenizer

    def tool_suffix_tokens(self, tool_messages: list[dict[str, Any]]) -> int:
        """TRL's ``_get_tool_suffix_ids`` length: the template's tokens for the tool messages after a tool call."""
        call = [{"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}]
        dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "", "tool_calls": call}]
        apply = functools.partial(self.tokenizer.apply_chat_template, tokenize=True, return_dict=False)
        return len(apply(dummy + tool_messages, add_generation_prompt=True)) - len(apply(dummy))

    async def __call__(self, ctx: Any) -> None:
        from openenv_train.pool import render_observation

        result = await ctx.reset()
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT + render_observation(result.observation)}]
        first_prompt: int | None = None
        while True:  # like TRL: until the model answers without a tool call (the env's "done" does not stop it)
            reply = await ctx.chat(messages, self.tools)
            first_prompt = reply.prompt_tokens if first_prompt is None else first_prompt
            messages.append({"role": "assistant", **reply.message})
            calls = reply.message.get("tool_calls") or []
            if not calls:
                return
            results = []
            for call in calls:
                args = call["function"].get("arguments") or {}
                args = json.loads(args) if isinstance(args, str) else dict(args)
                if result.done or set(args) - {"message"}:
                    content = str({"error": "the episode is over; no more tool calls" if result.done else
                                   f"unexpected arguments {sorted(args)}"})
                else:
                    result = await ctx.step({"message": args.get("message")})
                    content = render_observation(result.observation)
                results.append({"role": "tool", "name": call["function"]["name"], "content": content})
            grown = reply.prompt_tokens + reply.completion_tokens - first_prompt + self.tool_suffix_tokens(results)
            if grown > self.budget:
                return  # TRL drops the results and ends the rollout with the completion as it is
            messages += results


def _patch_profiling() -> None:
    from trl.extras import profiling

    def log(self: Any, duration: float) -> None:
        TIMES[self.name.split(".", 1)[-1]] += duration

    profiling.ProfilingContext._log_metrics = log


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)  # TRL builds each tool's JSON schema from its signature and docstring
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[name] += time.perf_counter() - start
            TIMES[name + "#"] += 1

    return wrapper


def _machine_cpu() -> tuple[int, int] | None:
    """(busy, all) jiffies of the whole machine so far (Linux), to tell how many cores a step kept busy."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _step_timer(steps: list[dict[str, float]]) -> Any:
    from transformers import TrainerCallback

    class Timer(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            TIMES.clear()
            self.start, self.cpu = time.perf_counter(), _machine_cpu()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            now, cpu = time.perf_counter(), _machine_cpu()
            busy = {"cores_busy": (cpu[0] - self.cpu[0]) / (cpu[1] - self.cpu[1]) * (os.cpu_count() or 1)} \
                if cpu and self.cpu and cpu[1] > self.cpu[1] else {}
            steps.append({"step": now - self.start, **TIMES, **busy})

    return Timer()


def _env_class() -> Any:
    from openenv_train.integrations.trl import make_environment_factory

    cls = make_environment_factory("wordle", max_sessions=80)
    cls.wordle_step = _timed("env", cls.wordle_step)
    cls.reset = _timed("env", cls.reset)
    return cls


def run_mode(mode: str, games: int, steps: int, model_path: Path, tools: list[dict[str, Any]], work: Path,
             args: argparse.Namespace) -> dict[str, Any]:
    """``steps`` measured GRPO steps (after one warm-up) of ``games`` games; per-part seconds per step."""
    import datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    _patch_profiling()
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path)
    n = args.num_generations
    config = GRPOConfig(output_dir=str(work / f"{mode}-{games}"), max_steps=steps + 1, per_device_train_batch_size=games,
                        num_generations=n, max_completion_length=args.max_completion_length, temperature=1.0,
                        learning_rate=1e-4, beta=0.0, logging_steps=1, save_strategy="no", report_to=[], use_cpu=True,
                        bf16=False, seed=0, disable_tqdm=True)
    words = ["crane", "moist", "tiger", "pious", "lucky", "dwarf", "slate", "bread"]
    measured: list[dict[str, float]] = []
    cleanup: list[Callable[[], None]] = []
    kwargs: dict[str, Any] = {}
    trainer_class: type = GRPOTrainer
    if mode.startswith("ours"):
        from openenv_train.integrations.trl import field_reward, make_rollout_func
        from openenv_train.policy import LocalConfig, PolicyServer, ScriptedBackend
        from openenv_train.pool import PoolConfig, RolloutPool
        from openenv_train.trace import CaptureStore

        capture = CaptureStore()
        server = PolicyServer(ScriptedBackend(lambda m: "[crane]"), capture=capture, token="").run_in_thread()
        game = ToolGame(tools, args.max_completion_length, tokenizer)
        pool = RolloutPool("wordle", server.base_url, agent=game, capture=capture,
                           config=PoolConfig(num_actors=args.actors, sessions_per_actor=args.sessions, max_turns=10,
                                             ray_num_cpus=2, run_id="bench")).start()
        cleanup += [pool.close, server.close]
        local = {"ours": LocalConfig(), "ours_overlap": LocalConfig(), "ours_thread": LocalConfig(engine="thread"),
                 "ours_joining": LocalConfig(continuous=True),
                 "ours_nocache": LocalConfig(prefix_cache_mb=0),
                 "ours_before": LocalConfig(prefix_cache_mb=0, decode_threads=0, batch_wait_fraction=0)}[mode]
        rollout = make_rollout_func(pool, policy_server=server, per_turn_tokens=args.per_turn_tokens, local=local,
                                    overlap=mode == "ours_overlap")
        cleanup.insert(0, rollout.close)

        def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
            cache = getattr(rollout.runner, "backend", None) and rollout.runner.backend.prefix_cache
            reused = cache.reused_tokens if cache else 0
            out = rollout(prompts, trainer)
            TIMES["turns"] += sum(len(r.trace.turns) for r in rollout.last_rows) / len(prompts)
            cache = rollout.runner.backend.prefix_cache
            TIMES["reused"] += ((cache.reused_tokens if cache else 0) - reused) / len(prompts)
            turns = [t.metadata for r in rollout.last_rows for t in r.trace.turns]
            TIMES["batches"] += len({(m["timings"]["generate_s"], m["batch_rows"])
                                     for m in turns})  # calls of one batch started generating together
            for key in ("render_s", "queue_s", "generate_s", "total_s"):
                TIMES[f"call_{key}"] += statistics.mean(m["timings"][key] for m in turns)
            return out

        kwargs = {"rollout_func": _timed("rollout", rollout_func), "reward_funcs": [field_reward("env")]}
        if mode == "ours_overlap":
            from openenv_train.integrations.trl import grpo_trainer_class

            trainer_class, kwargs["allowed_from"] = grpo_trainer_class(), rollout
        dataset = datasets.Dataset.from_dict({"prompt": [json.dumps({"task": w}) for w in words * 64]})
    elif mode == "trl_env":
        cls = _env_class()
        cleanup.append(cls.shutdown)
        kwargs = {"environment_factory": cls, "reward_funcs": []}
        dataset = datasets.Dataset.from_list([{"prompt": [{"role": "user", "content": PROMPT}], "task": w}
                                              for w in words * 64])
    else:
        def guessed(completions: list[Any], **_: Any) -> list[float]:
            return [float("crane" in json.dumps(c)) for c in completions]

        kwargs = {"reward_funcs": [guessed]}
        dataset = datasets.Dataset.from_list([{"prompt": [{"role": "user", "content": PROMPT}]} for _ in words * 64])
    try:
        trainer = trainer_class(model=model, processing_class=tokenizer, args=config, train_dataset=dataset,
                                callbacks=[_step_timer(measured)], **kwargs)
        trainer._generate_and_score_completions = _timed("generate_and_score", trainer._generate_and_score_completions)
        trainer._calculate_rewards = _timed("reward", trainer._calculate_rewards)
        generate_turn = trainer._generate_single_turn

        def counted_turn(prompt_ids: list[Any], *args: Any, **kwargs: Any) -> Any:
            TIMES["turn_rows"] += len(prompt_ids)  # TRL's own generation: one row per rollout and model turn
            return generate_turn(prompt_ids, *args, **kwargs)

        trainer._generate_single_turn = counted_turn
        trainer.train()
    finally:
        for fn in cleanup:
            fn()
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h][1:]  # after the warm-up
    return {**_summary(measured[1:], games),
            "completion_tokens": statistics.median(float(h["completions/mean_length"]) for h in logs),
            "tool_calls_per_turn": statistics.median(float(h["tools/call_frequency"]) for h in logs)
            if all("tools/call_frequency" in h for h in logs) else None}


def _summary(steps: list[dict[str, float]], games: int) -> dict[str, Any]:
    def med(key: str) -> float:
        return statistics.median(s.get(key, 0.0) for s in steps)

    step, gas = med("step"), med("generate_and_score")
    generate = med("transformers.generate") + med("transformers.generate_batch")
    rollout = med("rollout") or (generate + med("env"))
    return {"games": games, "step_s": step, "rollout_s": rollout, "generation_s": generate or None,
            "env_s": med("env") or None, "reward_s": med("reward"), "other_rollout_s": gas - rollout - med("reward"),
            "optimizer_s": step - gas, "steps": len(steps), "cores_busy": med("cores_busy") or None,
            "model_turns_per_game": med("turns") or (med("turn_rows") / games) or None,
            "reused_prompt_tokens_per_game": med("reused") or None, "batches": med("batches") or None,
            **{f"call_{k}": med(f"call_{k}") or None for k in ("render_s", "queue_s", "generate_s", "total_s")}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--games", type=int, nargs="+", default=[8, 32], help="games (rollouts) per step")
    parser.add_argument("--steps", type=int, default=3, help="measured steps per run (after one warm-up step)")
    modes = ["ours", "ours_overlap", "ours_thread", "ours_joining", "ours_nocache", "ours_before", "trl_env",
             "trl_single"]
    parser.add_argument("--modes", nargs="+", default=modes, choices=modes)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--max-completion-length", type=int, default=1024)
    parser.add_argument("--per-turn-tokens", type=int, default=48)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--teach-steps", type=int, default=150, help="steps teaching the model the tool call")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray-"))
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        _progress("setup: building and teaching the tiny model")
        model_path, tools = build_model(Path(tmp), args.teach_steps)
        _progress("setup: done")
        for games in args.games:
            for mode in args.modes:
                _progress(f"{mode}, {games} games per step: {args.steps} steps after a warm-up")
                result = {"mode": mode, **run_mode(mode, games, args.steps, model_path, tools, Path(tmp), args)}
                results.append(result)
                print(json.dumps(result), flush=True)
    print(f"\n{'games':>5} {'mode':<11} {'step s':>7} {'rollout':>8} {'gen':>6} {'env':>6} {'reward':>7} "
          f"{'other':>6} {'optim':>6} {'turns':>6} {'tokens':>7} {'cores':>6} {'vs trl_env':>10}")
    for r in results:
        ref = next((x for x in results if x["mode"] == "trl_env" and x["games"] == r["games"]), None)
        ratio = f"{ref['step_s'] / r['step_s']:.2f}x" if ref else "-"
        cell = lambda v: f"{v:.3f}" if v is not None else "-"  # noqa: E731
        print(f"{r['games']:>5} {r['mode']:<11} {r['step_s']:>7.3f} {r['rollout_s']:>8.3f} {cell(r['generation_s']):>6} "
              f"{cell(r['env_s']):>6} {r['reward_s']:>7.3f} {r['other_rollout_s']:>6.3f} {r['optimizer_s']:>6.3f} "
              f"{cell(r['model_turns_per_game']):>6} {r['completion_tokens']:>7.1f} {cell(r['cores_busy']):>6} "
              f"{ratio:>10}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
