"""A seeded market simulator: typed (``trading``, with FinRL's action shape) and MCP (``trading_mcp``)."""

from ._env import TradingEnvironment
from ._market import Market, MarketConfig
from ._mcp import TradingMCPEnvironment
from ._models import TradingAction, TradingObservation, TradingState
from ._portfolio import Portfolio, performance
from ._prices import synthetic_bars
from .client import TradingEnv, TradingMCPEnv

__all__ = [
    "Market",
    "MarketConfig",
    "Portfolio",
    "TradingAction",
    "TradingEnv",
    "TradingEnvironment",
    "TradingMCPEnv",
    "TradingMCPEnvironment",
    "TradingObservation",
    "TradingState",
    "performance",
    "synthetic_bars",
]
