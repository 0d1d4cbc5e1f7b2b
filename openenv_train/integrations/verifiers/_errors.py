"""The errors of the verifiers integration."""

from __future__ import annotations

from ...core import OpenEnvTrainError

__all__ = ["VerifiersError", "VerifiersNotInstalled"]


class VerifiersError(OpenEnvTrainError, ValueError):
    """A taskset option or export this integration cannot use; the message names the valid options."""


class VerifiersNotInstalled(OpenEnvTrainError, ImportError):
    """``verifiers`` is not installed; the message gives the install line."""
