"""Fine-tune a model on any trace dataset (a run directory or a Parquet folder) with TRL's SFTTrainer.

    python -m openenv_train.recipes.sft_from_traces traces=runs/collect model.path=null sft.epochs=2
    python -m openenv_train.recipes.sft_from_traces traces=runs/grpo-wordle sft.min_reward=1.0 name=winners

Each kept episode becomes one conversation (its chat turns, tool calls included); the loss is on the assistant
tokens. Output: ``<output_dir>/<name>/checkpoints/sft`` (model + tokenizer), ``metrics.jsonl``, ``summary.json``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._config import config_from_argv, config_to_dict
from ._report import MetricsLog
from ._training import ModelSection, SFTSection, load_model, train_sft

__all__ = ["SftFromTracesConfig", "main", "run"]


@dataclass
class SftFromTracesConfig:
    """Options of the SFT recipe."""

    traces: str = ""
    """A run directory (``<run>/traces/*.parquet``) or a folder of trace shards."""
    ok_only: bool = True
    """Drop failed episodes."""
    seed: int = 0
    show_progress: bool = True
    output_dir: str = "runs"
    name: str = "sft"
    model: ModelSection = field(default_factory=ModelSection)
    sft: SFTSection = field(default_factory=SFTSection)

    def __post_init__(self) -> None:
        if not self.traces:
            raise ValueError("traces is required: a run directory or a folder of trace shards (traces=PATH)")


def run(cfg: SftFromTracesConfig) -> dict[str, Any]:
    """Train and save; returns the summary written to ``summary.json``."""
    from ..integrations.trl import traces_to_sft_dataset

    if not Path(cfg.traces).exists():
        raise ValueError(f"traces {cfg.traces!r}: no such folder")
    out = Path(cfg.output_dir) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    dataset = traces_to_sft_dataset(cfg.traces, min_reward=cfg.sft.min_reward, ok_only=cfg.ok_only)
    model, tokenizer = load_model(cfg.model, out / "checkpoints" / "init")
    metrics = MetricsLog(out / "metrics.jsonl")
    train_sft(model, tokenizer, dataset, cfg.sft, out / "checkpoints" / "sft", metrics=metrics, seed=cfg.seed,
              show_progress=cfg.show_progress)
    losses = [r["loss"] for r in metrics.read() if r.get("phase") == "sft" and "loss" in r]
    summary = {"conversations": len(dataset), "first_loss": losses[0] if losses else None,
               "last_loss": losses[-1] if losses else None, "checkpoint": str(out / "checkpoints" / "sft"),
               "config": config_to_dict(cfg)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    cfg = config_from_argv(SftFromTracesConfig, argv, module="openenv_train.recipes.sft_from_traces", doc=__doc__,
                           example="traces=runs/collect sft.epochs=2")
    try:
        summary = run(cfg)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"trained on {summary['conversations']} conversations; loss {summary['first_loss']} -> "
          f"{summary['last_loss']}; saved {summary['checkpoint']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
