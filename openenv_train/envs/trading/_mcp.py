"""TradingMCPEnvironment: the trading simulator as tools (quotes, history, orders, portfolio, advance)."""

from __future__ import annotations

import dataclasses
import random
from importlib import resources
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from ...core import CallToolObservation, ListToolsObservation, Observation, ToolError, ToolErrorType
from ...server import MCPEnvironment, ToolCallFailed, tool
from ._env import observe
from ._market import Market, MarketConfig
from ._models import TradingObservation, TradingState

__all__ = ["TradingMCPEnvironment"]


class TradingMCPEnvironment(MCPEnvironment):
    """The trading simulator for tool-using agents: quote, history, orders, portfolio, and advance the clock.

    Orders fill at once at the current close (plus slippage and fees); ``advance`` moves
    the market on and pays the change in log equity over the bars it moved. After the
    last bar every tool call is refused and ``get_portfolio`` carries the run's summary.
    The reset observation is the typed env's first observation.
    """

    name = "trading_mcp"
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")
    observation_type: ClassVar[Any] = ListToolsObservation | CallToolObservation | TradingObservation
    state_type = TradingState
    _state: TradingState

    def __init__(self) -> None:
        super().__init__()
        self.reset()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              num_assets: int = 1, steps: int = 60, window: int = 10, initial_cash: float = 10_000.0,
              fee_bps: float = 10.0, slippage_bps: float = 5.0, allow_short: bool = False) -> TradingObservation:
        """Start a run on a fresh price path drawn from ``seed`` (options as in ``trading``)."""
        config = MarketConfig(num_assets=num_assets, steps=steps, window=window, initial_cash=initial_cash,
                              fee_bps=fee_bps, slippage_bps=slippage_bps, allow_short=allow_short)
        market = Market(seed if seed is not None else random.SystemRandom().getrandbits(63), config)
        super().reset(seed=seed, episode_id=episode_id)
        self._market = market
        self._state = TradingState(episode_id=self._state.episode_id, symbols=market.symbols,
                                   options=dataclasses.asdict(config), date=market.date,
                                   equity=config.initial_cash)
        return observe(market, 0.0)

    @property
    def state(self) -> TradingState:
        return self._state

    def step(self, action: Any) -> Observation:
        obs = super().step(action)
        assert isinstance(obs, Observation), "trading_mcp has only sync tools"
        obs.done = self._market.done
        market, state = self._market, self._state
        state.date, state.equity = market.date, round(market.equity(), 6)
        state.trades, state.costs_paid = market.account.trades, round(market.account.costs_paid, 6)
        return obs

    def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        if self._market.done and tool_name in self.tools and tool_name != "get_portfolio":
            raise ToolCallFailed(ToolError(error_type=ToolErrorType.EXECUTION_ERROR,
                                           message="the run is over; get_portfolio has the summary, reset to trade again"))
        return super().call_tool(tool_name, arguments)

    def reward_for(self, tool_name: str, arguments: dict[str, Any], value: Any) -> float | None:
        return float(value["reward"]) if tool_name == "advance" else None

    @tool
    def get_quote(self, symbol: str | None = None) -> dict[str, Any]:
        """The current bar (date, open, high, low, close, volume) of a symbol (default the first)."""
        symbol = self._market.symbol(symbol)
        bar = dataclasses.asdict(self._market.history(symbol, 1)[0])
        bar.pop("regime")
        return {"symbol": symbol, **bar}

    @tool
    def get_history(self, symbol: str | None = None,
                    bars: Annotated[int, Field(ge=1, le=500)] = 20) -> list[dict[str, Any]]:
        """The last ``bars`` daily bars of a symbol, oldest first, up to the current one."""
        symbol = self._market.symbol(symbol)
        rows = [dataclasses.asdict(b) for b in self._market.history(symbol, bars)]
        for row in rows:
            row.pop("regime")
        return rows

    @tool
    def place_order(self, side: Literal["buy", "sell"], size: Annotated[float, Field(gt=0)],
                    symbol: str | None = None) -> dict[str, Any]:
        """Buy or sell ``size`` shares at the current close (slippage and fees apply); fills at once.

        A buy beyond cash, or a sell beyond the holding without allow_short, is clipped (see ``note``).
        """
        market = self._market
        symbol = market.symbol(symbol)
        before = len(market.fills)
        note = market.order(symbol, size if side == "buy" else -size)
        fill = dataclasses.asdict(market.fills[-1]) if len(market.fills) > before else None
        return {"filled": fill, "note": note, "cash": round(market.account.cash, 6)}

    @tool
    def get_portfolio(self) -> dict[str, Any]:
        """Cash, positions, equity, date, bars left, and the run's metrics (return vs buy-and-hold, Sharpe, drawdown)."""
        market = self._market
        return {"date": market.date, "cash": round(market.account.cash, 6), "positions": market.account.positions,
                "equity": round(market.equity(), 6), "steps_left": market.end - market.t,
                "summary": market.summary(), "done": market.done}

    @tool
    def advance(self, bars: Annotated[int, Field(ge=1, le=500)] = 1) -> dict[str, Any]:
        """Move the market ``bars`` bars on (stops at the end); reward = change in log equity over them."""
        market = self._market
        reward = 0.0
        for _ in range(bars):
            if market.done:
                break
            reward += market.advance()
        return {"date": market.date, "equity": round(market.equity(), 6), "reward": reward, "done": market.done}
