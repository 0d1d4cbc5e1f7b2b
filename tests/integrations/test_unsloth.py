"""load_model: the transformers fallback for real (tiny offline model), the Unsloth path through a fake ``unsloth``.

Unsloth needs a CUDA GPU and older trl/transformers than this project pins, so here its import boundary is a
fake module in ``sys.modules`` that records what it is called with.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from openenv_train.integrations.unsloth import (
    UnslothConfig,
    UnslothUnavailable,
    load_model,
    unsloth_conflicts,
    unsloth_unavailable_reason,
)

torch = pytest.importorskip("torch", reason="torch is not installed")
LOG = "openenv_train.integrations.unsloth"


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from openenv_train.policy import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


class _FakeFastLanguageModel:
    calls: list[tuple[str, dict[str, Any]]] = []

    @classmethod
    def from_pretrained(cls, **kwargs: Any) -> tuple[str, str]:
        cls.calls.append(("from_pretrained", kwargs))
        return "fast-model", "fast-tokenizer"

    @classmethod
    def get_peft_model(cls, model: Any, **kwargs: Any) -> str:
        cls.calls.append(("get_peft_model", {"model": model, **kwargs}))
        return "fast-lora-model"


@pytest.fixture
def fake_gpu_unsloth(monkeypatch: pytest.MonkeyPatch) -> type[_FakeFastLanguageModel]:
    """A CUDA GPU and an importable ``unsloth`` whose FastLanguageModel records its calls."""
    module = types.ModuleType("unsloth")
    module.__spec__ = importlib.util.spec_from_loader("unsloth", loader=None)
    module.FastLanguageModel = _FakeFastLanguageModel  # type: ignore[attr-defined]
    _FakeFastLanguageModel.calls = []
    monkeypatch.setitem(sys.modules, "unsloth", module)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    return _FakeFastLanguageModel


def test_cpu_falls_back_to_transformers_with_lora_and_says_why(tiny_path: Path, caplog: pytest.LogCaptureFixture) -> None:

    caplog.set_level(logging.INFO, LOG)
    model, tokenizer, backend = load_model(str(tiny_path), lora_rank=4, load_in_4bit=True)
    assert backend == "transformers" and tokenizer.chat_template
    assert "no CUDA GPU is available" in caplog.text and "load_in_4bit is ignored" in caplog.text
    if importlib.util.find_spec("peft") is not None:
        from peft import PeftModel

        assert isinstance(model, PeftModel)
        trainable = {n for n, p in model.named_parameters() if p.requires_grad}
        assert trainable and all("lora_" in n for n in trainable)
        assert model.peft_config["default"].r == 4
    ids = tokenizer("hello", return_tensors="pt").input_ids
    assert model(input_ids=ids).logits.shape[:2] == ids.shape  # the LoRA-wrapped model runs


def test_disabled_config_and_no_lora_give_the_plain_model(tiny_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from transformers import PreTrainedModel

    caplog.set_level(logging.INFO, LOG)
    model, _, backend = load_model(str(tiny_path), UnslothConfig(enabled=False, lora_rank=0, dtype="float32"))
    assert backend == "transformers" and isinstance(model, PreTrainedModel)
    assert "not enabled" in caplog.text and model.dtype == torch.float32


def test_missing_peft_is_reported(tiny_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  caplog: pytest.LogCaptureFixture) -> None:
    from transformers import PreTrainedModel

    monkeypatch.setitem(sys.modules, "peft", None)
    model, _, _ = load_model(str(tiny_path), enabled=False, lora_rank=8)
    assert isinstance(model, PreTrainedModel) and "peft is not installed" in caplog.text


def test_missing_unsloth_is_reported(monkeypatch: pytest.MonkeyPatch, tiny_path: Path,
                                     caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setitem(sys.modules, "unsloth", None)  # import unsloth -> ImportError, as when not installed
    reason = unsloth_unavailable_reason(UnslothConfig(enabled=True))
    assert reason is not None and reason.startswith("unsloth is not installed") and "pip install unsloth" in reason
    with pytest.raises(UnslothUnavailable, match="unsloth is not installed"):
        load_model(str(tiny_path), require=True)
    _, _, backend = load_model(str(tiny_path), lora_rank=0)
    assert backend == "transformers" and "unsloth is not installed" in caplog.text


def test_unsloth_outside_its_version_range_is_refused(fake_gpu_unsloth: type[_FakeFastLanguageModel]) -> None:
    reason = unsloth_unavailable_reason(UnslothConfig(enabled=True))
    conflicts = unsloth_conflicts()  # the fake has no metadata: Unsloth's documented requirements
    assert conflicts and any(line.startswith("trl 1.16") for line in conflicts)
    assert reason is not None and "outside Unsloth's requirements" in reason
    assert "trl 1.16.0 is installed" in reason and "<=1.15.0" in reason
    assert fake_gpu_unsloth.calls == []


def test_unsloth_path_calls_fast_language_model(fake_gpu_unsloth: type[_FakeFastLanguageModel]) -> None:
    config = UnslothConfig(enabled=True, check_versions=False, max_seq_length=1024, lora_rank=8, lora_alpha=16,
                           load_in_4bit=True, dtype="bfloat16", target_modules=("q_proj", "v_proj"),
                           extra={"fast_inference": False})
    model, tokenizer, backend = load_model("org/some-model", config)
    assert (model, tokenizer, backend) == ("fast-lora-model", "fast-tokenizer", "unsloth")
    (name, load), (peft_name, peft) = fake_gpu_unsloth.calls
    assert name == "from_pretrained" and load == {"model_name": "org/some-model", "max_seq_length": 1024,
                                                  "load_in_4bit": True, "dtype": torch.bfloat16,
                                                  "fast_inference": False}
    assert peft_name == "get_peft_model" and peft["model"] == "fast-model" and peft["r"] == 8
    assert peft["lora_alpha"] == 16 and peft["target_modules"] == ["q_proj", "v_proj"]
    assert peft["use_gradient_checkpointing"] == "unsloth" and peft["random_state"] == 3407

    fake_gpu_unsloth.calls.clear()
    model, _, backend = load_model("org/some-model", config, lora_rank=0)
    assert backend == "unsloth" and model == "fast-model" and [c[0] for c in fake_gpu_unsloth.calls] == ["from_pretrained"]


def test_conflicts_and_config_checks() -> None:
    assert unsloth_conflicts(["torch<2.15.0,>=2.4.0", "trl<=1.15.0"], {"torch": "2.13.0+cpu", "trl": "1.15.0"}) == []
    assert unsloth_conflicts(['xformers>=0.0.27; "linux" in sys_platform', "trl<=1.15; extra == 'studio'"],
                             {"trl": "1.16.0"}) == []
    for bad in ({"lora_rank": -1}, {"max_seq_length": 0}, {"lora_dropout": 1.0}, {"dtype": "fp8"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            UnslothConfig(**bad)
    with pytest.raises(TypeError):
        load_model("x", lora_rnak=4)
