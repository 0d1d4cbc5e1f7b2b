"""Unsloth: load a model with Unsloth's ``FastLanguageModel`` (+ LoRA) on a CUDA GPU, else plain transformers.

:func:`load_model` returns ``(model, tokenizer, backend)`` with ``backend`` ``"unsloth"`` or ``"transformers"``,
and logs why when it falls back. The recipes embed :class:`UnslothConfig` and flip ``enabled``.

Unsloth is used only when all of these hold (checked in this order, before ``import unsloth``, which patches
transformers/trl/peft process-wide and fails without a GPU):

1. ``enabled`` is set;
2. CUDA is available (``torch.cuda.is_available()``; Unsloth has no CPU path);
3. ``unsloth`` is installed;
4. the installed torch, transformers and trl satisfy Unsloth's own declared requirements (read from its
   package metadata; :data:`DOCUMENTED_REQUIREMENTS` when that is missing). Unsloth 2026.10.9 (the newest at
   the time of writing) declares ``torch>=2.4.0,<2.15.0``, ``transformers>=4.52.4,<=5.17.0`` (minus a few
   broken releases) and ``trl>=0.18.2,!=0.19.0,<=1.15.0``; this project pins trl 1.16 and resolves
   transformers 5.24, so in the project's own environment Unsloth is reported as out of range and the
   transformers path is taken. Use Unsloth in an environment built for it (e.g. ``pip install unsloth``
   resolving trl<=1.15 and transformers<=5.17 on a CUDA machine), or set ``check_versions=False`` when you
   know your Unsloth build works with the installed versions.

The fallback is ``AutoModelForCausalLM`` + ``AutoTokenizer``, with LoRA from ``peft`` when it is installed and
``lora_rank > 0`` (4-bit loading is skipped there: it needs bitsandbytes and a GPU).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from ..core import OpenEnvTrainError

__all__ = ["DOCUMENTED_REQUIREMENTS", "LoadedModel", "UnslothConfig", "UnslothUnavailable", "load_model",
           "unsloth_conflicts", "unsloth_unavailable_reason"]

log = logging.getLogger("openenv_train.integrations.unsloth")

#: Unsloth 2026.10.9's declared requirements on the packages we pin (used when its metadata is not readable).
DOCUMENTED_REQUIREMENTS = (
    "torch<2.15.0,>=2.4.0",
    "transformers!=4.53.0,!=4.54.0,!=4.55.0,!=4.55.1,!=4.57.0,!=4.57.4,!=4.57.5,!=5.0.0,!=5.1.0,<=5.17.0,>=4.52.4",
    "trl!=0.19.0,<=1.15.0,>=0.18.2",
)
_CHECKED = ("torch", "transformers", "trl")


class UnslothUnavailable(OpenEnvTrainError, RuntimeError):
    """``require=True`` and Unsloth cannot be used here; the message says why."""


@dataclass
class UnslothConfig:
    """How to load the policy model; ``enabled`` is the one switch a recipe exposes."""

    enabled: bool = False
    """Use Unsloth when it can be used here (else plain transformers, with the reason logged)."""
    max_seq_length: int = 2048
    """Longest sequence Unsloth prepares its kernels and RoPE scaling for."""
    lora_rank: int = 16
    """LoRA rank ``r``; 0 trains the full model (no adapters)."""
    lora_alpha: int | None = None
    """LoRA alpha; None uses ``lora_rank``."""
    lora_dropout: float = 0.0
    """LoRA dropout (Unsloth's fast path wants 0)."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    """Module names that get adapters (those missing from the model are left out on the transformers path)."""
    load_in_4bit: bool = False
    """Load 4-bit quantised weights (QLoRA); Unsloth only."""
    gradient_checkpointing: bool | Literal["unsloth"] = "unsloth"
    """Unsloth's ``use_gradient_checkpointing``."""
    random_state: int = 3407
    """Seed of the LoRA initialisation."""
    dtype: str | None = None
    """``"bfloat16"``, ``"float16"``, ``"float32"`` or None (the checkpoint's / Unsloth's choice)."""
    check_versions: bool = True
    """Refuse Unsloth when torch/transformers/trl are outside its declared requirements."""
    require: bool = False
    """Raise :class:`UnslothUnavailable` instead of falling back."""
    extra: dict[str, Any] = field(default_factory=dict)
    """More keyword arguments for ``FastLanguageModel.from_pretrained``."""

    def __post_init__(self) -> None:
        if self.max_seq_length < 1:
            raise ValueError(f"max_seq_length must be >= 1, got {self.max_seq_length}")
        if self.lora_rank < 0:
            raise ValueError(f"lora_rank must be >= 0 (0 = no LoRA), got {self.lora_rank}")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ValueError(f"lora_dropout must be in [0, 1), got {self.lora_dropout}")
        if self.dtype not in (None, "bfloat16", "float16", "float32"):
            raise ValueError(f"dtype must be 'bfloat16', 'float16', 'float32' or None, got {self.dtype!r}")


class LoadedModel(NamedTuple):
    """What :func:`load_model` returns (unpacks as ``model, tokenizer, backend``)."""

    model: Any
    tokenizer: Any
    backend: Literal["unsloth", "transformers"]


def unsloth_conflicts(requirements: Sequence[str] | None = None,
                      installed: Mapping[str, str] | None = None) -> list[str]:
    """The installed packages outside Unsloth's requirements, as readable lines (empty: compatible).

    Args:
        requirements: requirement strings (default: Unsloth's metadata, else :data:`DOCUMENTED_REQUIREMENTS`).
        installed: package -> version (default: what is installed).

    >>> unsloth_conflicts(["trl<=1.15.0", "torch>=2.4"], {"trl": "1.16.0", "torch": "2.13.0"})
    ['trl 1.16.0 is installed; unsloth needs trl<=1.15.0']
    """
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion, Version

    if requirements is None:
        try:
            requirements = importlib.metadata.requires("unsloth") or DOCUMENTED_REQUIREMENTS
        except importlib.metadata.PackageNotFoundError:
            requirements = DOCUMENTED_REQUIREMENTS
    conflicts = []
    for line in requirements:
        req = Requirement(line)
        name = req.name.lower()
        if name not in _CHECKED or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        version = installed.get(name) if installed is not None else _version(name)
        if version is None:
            continue
        try:
            ok = req.specifier.contains(Version(version).public, prereleases=True)  # 2.13.0+cpu counts as 2.13.0
        except InvalidVersion:
            continue
        if not ok:
            conflicts.append(f"{name} {version} is installed; unsloth needs {name}{req.specifier}")
    return conflicts


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _installed(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None
    return importlib.util.find_spec(module) is not None


def unsloth_unavailable_reason(config: UnslothConfig) -> str | None:
    """Why Unsloth will not be used with ``config`` here, or None when it will be."""
    if not config.enabled:
        return "Unsloth is not enabled (UnslothConfig.enabled=False)"
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install torch)"
    if not torch.cuda.is_available():
        return "no CUDA GPU is available (Unsloth runs only on NVIDIA/AMD/Intel GPUs)"
    if not _installed("unsloth"):
        return "unsloth is not installed (pip install unsloth, in an environment with trl<=1.15 and transformers<=5.17)"
    if config.check_versions:
        conflicts = unsloth_conflicts()
        if conflicts:
            return ("the installed versions are outside Unsloth's requirements: " + "; ".join(conflicts)
                    + " (use an environment built for Unsloth, or check_versions=False to try anyway)")
    return None


def _torch_dtype(name: str | None) -> Any:
    if name is None:
        return None
    import torch

    return getattr(torch, name)


def _load_unsloth(name_or_path: str, config: UnslothConfig) -> LoadedModel:
    if "transformers" in sys.modules or "trl" in sys.modules:
        log.warning("transformers/trl were imported before unsloth; Unsloth patches them best when it is imported "
                    "first (call load_model before importing trl)")
    from unsloth import FastLanguageModel

    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=name_or_path, max_seq_length=config.max_seq_length, load_in_4bit=config.load_in_4bit,
        dtype=_torch_dtype(config.dtype), **config.extra)
    if config.lora_rank > 0:
        model = FastLanguageModel.get_peft_model(
            model, r=config.lora_rank, lora_alpha=config.lora_alpha or config.lora_rank,
            lora_dropout=config.lora_dropout, target_modules=list(config.target_modules), bias="none",
            use_gradient_checkpointing=config.gradient_checkpointing, random_state=config.random_state)
    return LoadedModel(model, tokenizer, "unsloth")


def _load_transformers(name_or_path: str, config: UnslothConfig) -> LoadedModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if config.load_in_4bit:
        log.info("load_in_4bit is ignored on the transformers path (it needs bitsandbytes and a GPU)")
    dtype = _torch_dtype(config.dtype)
    model: Any = AutoModelForCausalLM.from_pretrained(name_or_path, **({"dtype": dtype} if dtype is not None else {}))
    tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    if config.lora_rank > 0:
        if not _installed("peft"):
            log.warning("LoRA (lora_rank=%d) skipped: peft is not installed (pip install peft); training the full "
                        "model", config.lora_rank)
        else:
            from peft import LoraConfig, get_peft_model

            present = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
            targets = [m for m in config.target_modules if m in present] or "all-linear"
            model = get_peft_model(model, LoraConfig(
                r=config.lora_rank, lora_alpha=config.lora_alpha or config.lora_rank,
                lora_dropout=config.lora_dropout, target_modules=targets, task_type="CAUSAL_LM"))
    return LoadedModel(model, tokenizer, "transformers")


def load_model(name_or_path: str, config: UnslothConfig | None = None, **overrides: Any) -> LoadedModel:
    """Load ``name_or_path`` with Unsloth (+ LoRA) when it can be used here, else with transformers (+ peft LoRA).

    Args:
        name_or_path: a Hub id or a local directory.
        config: the options (default :class:`UnslothConfig` with ``enabled=True``: a direct call means "use
            Unsloth if you can").
        overrides: fields of :class:`UnslothConfig` to change (``max_seq_length=4096, lora_rank=8``).

    Returns:
        ``(model, tokenizer, backend)``; ``backend`` is ``"unsloth"`` or ``"transformers"``.

    Raises:
        UnslothUnavailable: ``require=True`` and Unsloth cannot be used (the message says why).
        TypeError: an override that is not a field of UnslothConfig.
    """
    config = dataclasses.replace(config or UnslothConfig(enabled=True), **overrides)
    reason = unsloth_unavailable_reason(config)
    if reason is None:
        log.info("loading %s with Unsloth", name_or_path)
        return _load_unsloth(name_or_path, config)
    if config.require:
        raise UnslothUnavailable(f"Unsloth cannot be used: {reason}")
    log.log(logging.INFO if not config.enabled else logging.WARNING,
            "loading %s with plain transformers: %s", name_or_path, reason)
    return _load_transformers(name_or_path, config)
