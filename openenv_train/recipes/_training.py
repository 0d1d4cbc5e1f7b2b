"""Pieces the recipes share: model loading, TRL SFT on a ``messages`` dataset, trainer logs into ``metrics.jsonl``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._report import MetricsLog

__all__ = ["ModelSection", "SFTSection", "load_model", "log_callback", "train_sft"]

logger = logging.getLogger(__name__)


@dataclass
class ModelSection:
    """The policy model: a local path or Hub id, or (``path: null``) the tiny offline model built here."""

    path: str | None = None
    """A checkpoint folder or Hub id (``Qwen/Qwen2.5-0.5B-Instruct``); null builds the tiny model (no download)."""
    hidden_size: int = 128
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    intermediate_size: int = 256
    init_seed: int = 0
    unsloth: bool = False
    """Load through Unsloth (LoRA, 4-bit) when it and a GPU are present; otherwise say why and use transformers."""
    lora_rank: int = 16
    """LoRA rank of the Unsloth path."""
    max_seq_length: int = 2048
    """Context of the Unsloth path."""


@dataclass
class SFTSection:
    """Supervised warm start on trace conversations (TRL's SFTTrainer, loss on assistant tokens only)."""

    enabled: bool = True
    episodes: int = 600
    """Expert episodes collected for it (the Wordle recipe)."""
    epochs: float = 3.0
    learning_rate: float = 3e-3
    batch_size: int = 16
    warmup_steps: int = 10
    max_length: int = 1024
    min_reward: float | None = None
    """Keep only episodes scored at least this (sft_from_traces)."""

    def __post_init__(self) -> None:
        if self.epochs <= 0 or self.learning_rate <= 0 or self.batch_size < 1:
            raise ValueError("sft.epochs and sft.learning_rate must be > 0 and sft.batch_size >= 1")


def load_model(section: ModelSection, build_dir: Path) -> tuple[Any, Any]:
    """The model and tokenizer of ``section``: built offline into ``build_dir`` when no path is given."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = section.path
    if path is None:
        from ..policy import build_tiny_model

        if not (build_dir / "config.json").exists():
            build_tiny_model(build_dir, seed=section.init_seed, hidden_size=section.hidden_size,
                             intermediate_size=section.intermediate_size, layers=section.layers,
                             heads=section.heads, kv_heads=section.kv_heads, max_context=2048)
        path = str(build_dir)
    if section.unsloth:
        from ..integrations.unsloth import UnslothConfig
        from ..integrations.unsloth import load_model as unsloth_load

        model, tokenizer, backend = unsloth_load(path, UnslothConfig(enabled=True, max_seq_length=section.max_seq_length,
                                                                     lora_rank=section.lora_rank))
        logger.info("model loaded with %s", backend)
        return model, tokenizer
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def log_callback(metrics: MetricsLog, phase: str) -> Any:
    """A transformers ``TrainerCallback`` that appends the trainer's logs to ``metrics`` with ``phase``."""
    from transformers import TrainerCallback

    class _Log(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            numbers = {k: v for k, v in (logs or {}).items() if isinstance(v, int | float)}
            metrics.write({"phase": phase, "step": state.global_step, **numbers})

    return _Log()


def train_sft(model: Any, tokenizer: Any, dataset: Any, section: SFTSection, output_dir: Path, *,
              metrics: MetricsLog | None = None, seed: int = 0, show_progress: bool = True) -> Any:
    """Fine-tune ``model`` on ``dataset`` (a ``messages`` column); saves it to ``output_dir``; returns it."""
    import torch
    from trl import SFTConfig, SFTTrainer

    if len(dataset) == 0:
        raise ValueError("no conversations to train on: every episode was filtered out (check min_reward / ok)")
    dataset = dataset.select_columns(["messages"])
    args = SFTConfig(output_dir=str(output_dir / "trainer"), num_train_epochs=section.epochs,
                     per_device_train_batch_size=section.batch_size, learning_rate=section.learning_rate,
                     lr_scheduler_type="cosine", warmup_steps=section.warmup_steps, logging_steps=1,
                     save_strategy="no", report_to=[], assistant_only_loss=True, max_length=section.max_length,
                     use_cpu=not torch.cuda.is_available(), seed=seed, disable_tqdm=not show_progress)
    callbacks = [log_callback(metrics, "sft")] if metrics is not None else []
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         callbacks=callbacks)
    trainer.train()
    trainer.save_model(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    return trainer.model
