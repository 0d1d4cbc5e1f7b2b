"""Import ``art`` (openpipe-art) on demand: offline, and without its transformers patch where it breaks models."""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
from typing import Any

__all__ = ["import_art"]

INSTALL = "pip install 'openpipe-art==0.5.18' (the base package, not its [backend] extra)"
log = logging.getLogger("openenv_train.integrations.art")


def _undo_mask_patch() -> None:
    """ART 0.5.18 replaces ``transformers.masking_utils._preprocess_mask_arguments`` at import with a wrapper
    of the 4.x signature; under transformers 5.x every forward pass of a causal LM in this process then fails
    (``missing ... 'layer_idx'``). Put the original back when the signatures differ."""
    with contextlib.suppress(ImportError):
        from art.transformers import patches
        from transformers import masking_utils

        original = patches._preprocess_mask_arguments
        if masking_utils._preprocess_mask_arguments is patches._patched_preprocess_mask_arguments and (
                inspect.signature(original).parameters.keys()
                != inspect.signature(patches._patched_preprocess_mask_arguments).parameters.keys()):
            masking_utils._preprocess_mask_arguments = original
            log.info("undid ART's transformers mask patch (written for another transformers signature)")


def import_art() -> Any:
    """The ``art`` module. ART's LiteLLM would fetch a price map from GitHub at import, so it reads its bundled
    copy instead (set ``LITELLM_LOCAL_MODEL_COST_MAP=False`` to let it fetch); ART's transformers patch is
    undone when it does not fit the installed transformers.

    Raises:
        ImportError: openpipe-art is not installed (the message gives the install line).
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("WANDB_ERROR_REPORTING", "false")  # weave (an ART dependency) reports to Sentry otherwise
    try:
        import art
    except ImportError as exc:
        raise ImportError(f"this needs ART: {INSTALL}") from exc
    _undo_mask_patch()
    return art
