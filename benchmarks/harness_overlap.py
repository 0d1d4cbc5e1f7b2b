"""Steps per hour of the harness recipe's GRPO phase with and without overlapped attempts, side by side.

Both modes run ``recipes.grpo_harness`` with the same settings (``configs/grpo_harness_smoke.yaml``'s tiny model
and replies, on copies of the ``hello-world`` and ``edit-config`` example tasks) except ``grpo.overlap``:

- ``sync``: each step runs its attempts, then the optimizer steps (nothing runs meanwhile);
- ``overlap``: the next step's attempts run while the optimizer steps (one step off-policy).

Steps per hour count the steps after the first (its attempts run before any training in both modes), from the
times the trainer logged each step in ``metrics.jsonl``; ``staleness`` is the mean policy lag of the trained
attempts (0 in ``sync``, at most 1 in ``overlap``). Modes alternate when ``--repeats`` > 1::

    python benchmarks/harness_overlap.py [--steps 8] [--repeats 1] [--harness model|mini-swe-agent]
                                         [--attempts 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "grpo_harness_smoke.yaml"
TASKS = ("hello-world", "edit-config")
MINI_END = ('<tool_call>\n{"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}\n'
            "</tool_call>")


def one_run(mode: str, args: argparse.Namespace, work: Path, index: int) -> dict[str, Any]:
    """One recipe run in ``mode``; its GRPO steps per hour and more."""
    import yaml

    from openenv_train.recipes import grpo_harness

    tasks = work / "tasks"
    if not tasks.exists():
        for name in TASKS:
            shutil.copytree(ROOT / "openenv_train" / "harbor" / "examples" / name, tasks / name)
    overrides = [f"harness={args.harness}", f"tasks={tasks}", f"output.dir={work}", f"output.name={mode}-{index}",
                 f"grpo.steps={args.steps}", f"grpo.num_generations={args.attempts}", "grpo.save_steps=1000",
                 f"grpo.overlap={'true' if mode == 'overlap' else 'false'}", "eval.attempts=1"]
    if args.harness == "mini-swe-agent":  # its end is a submit command, not a plain reply
        choices = yaml.safe_load(CONFIG.read_text())["attempt"]["choices"][:2] + [MINI_END]
        overrides.append(f"attempt.choices={json.dumps(choices)}")
    code = grpo_harness.main(["--config", str(CONFIG), *overrides])
    if code != 0:
        raise SystemExit(f"the {mode} run failed (exit {code}); see its output above")
    records = [json.loads(line) for line in (work / f"{mode}-{index}" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if r.get("phase") == "grpo" and "loss" in r]
    rollouts = [r for r in records if r.get("phase") == "grpo_rollout"]
    span = steps[-1]["time"] - steps[0]["time"]
    return {"mode": mode, "steps": len(steps), "steps_per_hour": 3600 * (len(steps) - 1) / span,
            "seconds_per_step": span / (len(steps) - 1),
            "staleness": statistics.mean(r.get("staleness", 0.0) for r in rollouts[1:]),
            "calls_per_attempt": statistics.mean(r["calls"] for r in rollouts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="GRPO steps per run (the first is not timed)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each mode, alternating")
    parser.add_argument("--harness", default="model", help="model, or an installed agent CLI (mini-swe-agent)")
    parser.add_argument("--attempts", type=int, default=2, help="attempts per task (the group size)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.steps < 3:
        raise SystemExit("--steps must be >= 3: the first step is not timed, and a rate needs two more")
    results = []
    with tempfile.TemporaryDirectory(prefix="harness-overlap-") as tmp:
        for i in range(args.repeats):
            for mode in ("sync", "overlap"):
                results.append(one_run(mode, args, Path(tmp), i))
    print(f"\n{args.harness}: {args.steps} steps of 2 tasks x {args.attempts} attempts\n")
    print("| mode | steps/hour | s/step | staleness | calls/attempt |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['mode']} | {r['steps_per_hour']:.0f} | {r['seconds_per_step']:.2f} | {r['staleness']:.2f} | "
              f"{r['calls_per_attempt']:.2f} |")
    sync = statistics.median(r["steps_per_hour"] for r in results if r["mode"] == "sync")
    overlap = statistics.median(r["steps_per_hour"] for r in results if r["mode"] == "overlap")
    print(f"\noverlap / sync (median steps per hour): {overlap / sync:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"harness": args.harness, "steps": args.steps, "runs": results,
                                         "speedup": overlap / sync}, indent=2))


if __name__ == "__main__":
    main()
