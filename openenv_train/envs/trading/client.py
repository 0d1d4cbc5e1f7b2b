"""Typed clients of the trading simulator: ``TradingEnv`` (typed actions) and ``TradingMCPEnv`` (MCP tools)."""

from __future__ import annotations

from typing import ClassVar

from ...client import TypedEnvClient, TypedMCPClient
from ._models import TradingAction, TradingObservation, TradingState

__all__ = ["TradingEnv", "TradingMCPEnv"]


class TradingEnv(TypedEnvClient[TradingAction, TradingObservation, TradingState], env="trading"):
    """Client of the trading env: ``await env.step(TradingAction(target_position=0.5))``."""


class TradingMCPEnv(TypedMCPClient[TradingState], env="trading_mcp"):
    """Client of trading_mcp (MCP tools): reset gives a ``TradingObservation``, tools trade."""

    observation_type: ClassVar[type] = TradingObservation
