"""Pieces the recipes share: model loading, TRL SFT on a ``messages`` dataset, trainer logs into ``metrics.jsonl``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from ._budget import Budget, PhaseLine, budget_callback, cosine_over_budget, shown
from ._report import MetricsLog

__all__ = ["ModelSection", "SFTSection", "cpu_settings", "load_model", "log_callback", "quiet_libraries", "quiet_trainer",
           "train_sft", "train_sft_in_budget"]

logger = logging.getLogger(__name__)


@dataclass
class ModelSection:
    """The policy model: a local path or Hub id, or (``path: null``) the tiny offline model built here."""

    path: str | None = None
    """A checkpoint folder or Hub id (``Qwen/Qwen2.5-0.5B-Instruct``); null builds the tiny model (no download)."""
    tokenizer: str = "char"
    """Tokenizer of the tiny model: ``char`` (one token per character, compact chat) or ``bpe`` (byte-level)."""
    hidden_size: int = 128
    """Width of the tiny model."""
    layers: int = 4
    """Transformer blocks of the tiny model."""
    heads: int = 4
    """Attention heads of the tiny model."""
    kv_heads: int = 4
    """Key/value heads of the tiny model."""
    intermediate_size: int = 384
    """MLP width of the tiny model."""
    init_range: float = 0.02
    """Std of the tiny model's initial weights."""
    max_context: int = 512
    """Context of the tiny model, in tokens."""
    init_seed: int = 0
    """Seed of the tiny model's initial weights."""
    unsloth: bool = False
    """Load through Unsloth (LoRA, 4-bit) when it and a GPU are present; otherwise say why and use transformers."""
    lora_rank: int = 16
    """LoRA rank of the Unsloth path."""
    max_seq_length: int = 2048
    """Context of the Unsloth path."""


@dataclass
class SFTSection:
    """Supervised warm start on conversations (TRL's SFTTrainer, loss on assistant tokens only)."""

    enabled: bool = True
    """Run the phase at all."""
    episodes: int = 60000
    """Teacher games to train on (the Wordle recipe); fewer are used when the budget ends the phase first."""
    epochs: float = 1.0
    """Passes over the games."""
    learning_rate: float = 2e-3
    """Peak AdamW learning rate (cosine decay)."""
    batch_size: int = 32
    """Conversations per optimiser step (small: a 2-core CPU gets more steps into the budget)."""
    warmup_steps: int = 10
    """Linear warm-up steps (without a budget; with one the first 3% of it warms up)."""
    max_length: int = 1024
    """Longest conversation trained on, in tokens."""
    min_reward: float | None = None
    """Keep only episodes scored at least this (sft_from_traces)."""
    budget_s: float | None = None
    """Wall-time limit of the phase: training stops cleanly at it, the cosine schedule runs over it; null: none."""
    distill: bool = True
    """The Wordle recipe with a character tokenizer: train on the teacher's next-letter distribution at every
    letter, not only on the letter it drew (the same objective, far less noise); false: on the drawn words."""

    def __post_init__(self) -> None:
        if self.epochs <= 0 or self.learning_rate <= 0 or self.batch_size < 1:
            raise ValueError("sft.epochs and sft.learning_rate must be > 0 and sft.batch_size >= 1")
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"sft.budget_s must be > 0 seconds or null, got {self.budget_s}")


def load_model(section: ModelSection, build_dir: Path) -> tuple[Any, Any]:
    """The model and tokenizer of ``section``: built offline into ``build_dir`` when no path is given."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = section.path
    if path is None:
        from ..policy import build_tiny_model

        if not (build_dir / "config.json").exists():
            build_tiny_model(build_dir, seed=section.init_seed, hidden_size=section.hidden_size,
                             intermediate_size=section.intermediate_size, layers=section.layers,
                             heads=section.heads, kv_heads=section.kv_heads, max_context=section.max_context,
                             init_range=section.init_range, tokenizer=section.tokenizer)
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


def cpu_settings(gpu: bool) -> dict[str, Any]:
    """TRL's defaults that slow a CPU run down: bf16 autocast (emulated there) and gradient checkpointing (a
    second forward pass to save memory a small model does not need); kept on a GPU."""
    return {} if gpu else {"bf16": False, "gradient_checkpointing": False}


def quiet_libraries(verbose: bool) -> None:
    """One line per phase on the console: no per-save progress bars, no notices about TRL's experimental API or
    renamed arguments (``--verbose`` keeps them)."""
    import os
    import warnings

    if verbose:
        return
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\..*")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def quiet_trainer(trainer: Any, verbose: bool) -> Any:
    """Keep the trainer's per-step dictionaries off the console (they go to ``metrics.jsonl``) unless ``verbose``."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    if not verbose:
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
    return trainer


def train_sft(model: Any, tokenizer: Any, dataset: Any, section: SFTSection, output_dir: Path, *,
              metrics: MetricsLog | None = None, seed: int = 0, show_progress: bool = True,
              callbacks: Sequence[Any] = (), budget: Budget | None = None, verbose: bool = False,
              collator: Any = None, trainer_class: Any = None) -> Any:
    """Fine-tune ``model`` on ``dataset`` and save it to ``output_dir``; returns it.

    ``dataset`` has a ``messages`` column (TRL renders it with the chat template), or rows that ``collator`` turns
    into batches (with ``trainer_class``, an ``SFTTrainer`` subclass with its own loss). With ``budget`` the
    learning rate follows a cosine over the budget's wall time and training stops cleanly when it is spent.
    """
    import torch
    from trl import SFTConfig, SFTTrainer

    if len(dataset) == 0:
        raise ValueError("no conversations to train on: every episode was filtered out (check min_reward / ok)")
    tokenized = collator is not None
    if not tokenized:
        dataset = dataset.select_columns(["messages"])
    gpu = torch.cuda.is_available()
    args = SFTConfig(output_dir=str(output_dir / "trainer"), num_train_epochs=section.epochs,
                     per_device_train_batch_size=section.batch_size, learning_rate=section.learning_rate,
                     lr_scheduler_type="cosine", warmup_steps=section.warmup_steps, logging_steps=1,
                     save_strategy="no", report_to=[], assistant_only_loss=not tokenized,
                     max_length=section.max_length, use_cpu=not gpu, seed=seed, **cpu_settings(gpu),
                     disable_tqdm=not (show_progress and verbose), remove_unused_columns=not tokenized,
                     train_sampling_strategy="sequential" if tokenized else "random",
                     dataset_kwargs={"skip_prepare_dataset": True} if tokenized else None)
    extra = [log_callback(metrics, "sft")] if metrics is not None else []
    optimizers: tuple[Any, Any] = (None, None)
    holder: dict[str, Any] = {}
    if budget is not None:
        optimizer = torch.optim.AdamW(model.parameters(), lr=section.learning_rate, weight_decay=0.01,
                                      betas=(0.9, 0.98), fused=not gpu)
        # the step limit is known once the trainer is built; the schedule follows it or the clock, whichever leads
        schedule = cosine_over_budget(optimizer, budget, step_fraction=lambda: (
            holder["t"].state.global_step / max(1, holder["t"].state.max_steps or 1)) if "t" in holder else 0.0)
        optimizers = (optimizer, schedule)
    trainer = (trainer_class or SFTTrainer)(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                                            data_collator=collator, callbacks=[*extra, *callbacks],
                                            optimizers=optimizers)
    holder["t"] = trainer
    quiet_trainer(trainer, verbose)
    trainer.train()
    trainer.save_model(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    return trainer.model


def train_sft_in_budget(model: Any, tokenizer: Any, dataset: Any, section: SFTSection, output_dir: Path, *,
                        console: Console, metrics: MetricsLog, seed: int, show_progress: bool, verbose: bool,
                        collator: Any = None, trainer_class: Any = None,
                        unit: str = "examples") -> tuple[Any, dict[str, Any]]:
    """:func:`train_sft` within ``section.budget_s``, with its progress line on ``console``.

    Returns:
        The trained model, and the phase's record for the summary (steps, seconds, budget, cut short or not);
        one batch of ``section.batch_size`` is ``section.batch_size`` ``unit`` in the closing line.
    """
    budget = Budget(section.budget_s or 1e9)
    line = PhaseLine(console, "SFT", budget, {"loss": "loss", "learning_rate": "lr"})
    with shown(line, show_progress):
        model = train_sft(model, tokenizer, dataset, section, output_dir, metrics=metrics, seed=seed,
                          show_progress=show_progress, verbose=verbose, callbacks=[budget_callback(budget, line)],
                          budget=budget if section.budget_s else None, collator=collator, trainer_class=trainer_class)
    console.print(f"SFT: {line.step} steps ({line.step * section.batch_size} {unit}) in {budget.elapsed:.0f}s"
                  + (f" [yellow]cut short by sft.budget_s={section.budget_s:g}[/]" if budget.cut_short else ""))
    return model, {"steps": line.step, "seconds": round(budget.elapsed, 1), "budget_s": section.budget_s,
                   "cut_short": budget.cut_short}
